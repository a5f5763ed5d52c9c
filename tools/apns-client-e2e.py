#!/usr/bin/env python3
"""A real APNs client library (aioapns, from PyPI, pinned in tools/setup) against LiveBus's APNs endpoint.

Run by Tests/LiveBusE2ETests/APNsClientLibraryE2ETests.swift, which starts `livebusd --apns 127.0.0.1:0
--apns-key …` and two backgrounded phones (`livebus attach --json --app-state background --channel …` is not
used: the activities subscribe with input-push-channel) and passes their JSON logs here.

The steps (each phone's JSON log is checked after each one):
 1. each phone's pushToken line (kind pushToStart) gives its push-to-start token;
 2. a channel is created with the channel management API (POST /1/apps/<bundle>/channels);
 3. aioapns sends a start push (push-to-start) to each backgrounded phone, with input-push-token 1 and
    input-push-channel: each phone starts the activity and logs its activity token;
 4. aioapns updates phone A's activity through its token;
 5. a broadcast on the channel reaches both phones with identical state;
 6. aioapns ends phone A's activity;
 7. aioapns receives APNs's errors: 413 PayloadTooLarge, 400 BadPriority, 410 Unregistered (phone A's ended
    activity), and the broadcast API 400 BadChannelId / MissingChannelId.

aioapns has no broadcast or channel management API: those requests are sent with h2 (aioapns's own HTTP/2
dependency) over the same CA, with the provider token aioapns made (so APNs sees one token, as the 20-minute
refresh rule wants).

Pointing aioapns at LiveBus is its protocol class's APNS_SERVER and APNS_PORT plus an SSL context that trusts
LiveBus's CA: the three lines README "Point your backend at LiveBus" shows.

Exit status 0 when every check held; 1 with the failed check on stderr.
"""

import argparse
import asyncio
import json
import socket
import ssl
import sys
import time
import uuid

import h2.connection
import h2.events
from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsDevelopmentClientProtocol

BUNDLE = "com.example.delivery"
TOPIC = BUNDLE + ".push-type.liveactivity"
REFERENCE_DATE = 978_307_200  # Unix seconds of 2001-01-01: ActivityKit's Date encoding (deferredToDate)


def fail(message):
    print("apns-client-e2e: FAILED: " + message, file=sys.stderr)
    sys.exit(1)


def log_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            out = []
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
            return out
    except FileNotFoundError:
        return []


async def wait_for(path, what, predicate, seconds=20.0):
    """The first line of the phone's JSON log that satisfies `predicate`, waiting up to `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for line in log_lines(path):
            if predicate(line):
                return line
        await asyncio.sleep(0.05)
    fail(f"{path}: no line {what} within {seconds} s; log: {log_lines(path)[-8:]}")


def content(status, eta_minutes=20):
    return {"status": status, "etaEnd": int(time.time()) - REFERENCE_DATE + eta_minutes * 60}


class H2Request:
    """One HTTP/2 request over TLS with LiveBus's CA (for what aioapns cannot send)."""

    def __init__(self, host, port, ca):
        self.host, self.port = host, port
        self.context = ssl.create_default_context(cafile=ca)
        self.context.set_alpn_protocols(["h2"])

    def send(self, method, path, headers, body=b""):
        with socket.create_connection((self.host, self.port), timeout=10) as raw:
            with self.context.wrap_socket(raw, server_hostname=self.host) as s:
                if s.selected_alpn_protocol() != "h2":
                    fail("the endpoint did not select ALPN h2")
                conn = h2.connection.H2Connection()
                conn.initiate_connection()
                sid = conn.get_next_available_stream_id()
                fields = [(":method", method), (":path", path), (":scheme", "https"), (":authority", self.host)]
                conn.send_headers(sid, fields + list(headers.items()), end_stream=not body)
                if body:
                    conn.send_data(sid, body, end_stream=True)
                s.sendall(conn.data_to_send())
                status, answer, data = 0, {}, b""
                done = False
                while not done:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    for e in conn.receive_data(chunk):
                        if isinstance(e, h2.events.ResponseReceived):
                            answer = {k.decode(): v.decode() for k, v in e.headers}
                            status = int(answer.get(":status", "0"))
                        elif isinstance(e, h2.events.DataReceived):
                            data += e.data
                            conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                        elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                            done = True
                    s.sendall(conn.data_to_send())
                return status, answer, data


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--key-id", required=True)
    ap.add_argument("--team-id", required=True)
    ap.add_argument("--phone-a", required=True, help="phone A's JSON log")
    ap.add_argument("--phone-b", required=True, help="phone B's JSON log")
    args = ap.parse_args()

    # The three lines a backend changes to talk to LiveBus instead of api.sandbox.push.apple.com:
    APNsDevelopmentClientProtocol.APNS_SERVER = "localhost"  # 1. the host
    APNsDevelopmentClientProtocol.APNS_PORT = args.port  # 2. the port, and the CA below
    # aioapns closes a connection idle for 10 s and signs a new provider token for the next one; with --apns-key a
    # new token within 20 minutes is 429 TooManyProviderTokenUpdates (Apple's rule, kept daemon-wide by LiveBus), so
    # keep the one connection open for the whole run (a loaded machine can be slow between steps).
    APNsDevelopmentClientProtocol.INACTIVITY_TIME = 600
    context = ssl.create_default_context(cafile=args.ca)
    with open(args.key, encoding="utf-8") as f:
        key = f.read()  # 3. the team's .p8 key (livebusd --apns-key verifies its tokens)
    client = APNs(
        key=key,
        key_id=args.key_id,
        team_id=args.team_id,
        topic=TOPIC,
        use_sandbox=True,
        ssl_context=context,
        max_connections=1,
    )

    async def send(token, aps, priority=10, **kw):
        request = NotificationRequest(
            device_token=token,
            message={"aps": aps},
            priority=priority,
            push_type=PushType.LIVEACTIVITY,
            apns_topic=TOPIC,
            **kw,
        )
        return await client.send_notification(request)

    # 1. push-to-start tokens from the phones' logs.
    def pts(line):
        return line.get("type") == "pushToken" and line.get("kind") == "pushToStart"

    start_a = (await wait_for(args.phone_a, "pushToken pushToStart", pts))["token"]
    start_b = (await wait_for(args.phone_b, "pushToken pushToStart", pts))["token"]
    if start_a == start_b or len(start_a) != 64:
        fail(f"push-to-start tokens {start_a} {start_b}")

    # A first push, to have aioapns make its provider token (reused for what it cannot send). An update to a
    # push-to-start token starts nothing: APNs answers 200 and the phone's verdict says why.
    r = await send(start_a, {"timestamp": int(time.time()), "event": "update", "content-state": content("cooking")})
    if not r.is_successful:
        fail(f"update to a push-to-start token: {r.status} {r.description}")
    bearer = client.pool.connections[0].auth_provider.get_header()
    raw = H2Request("localhost", args.port, args.ca)

    # 2. a channel (most recent message stored).
    status, headers, body = raw.send(
        "POST",
        f"/1/apps/{BUNDLE}/channels",
        {"authorization": bearer, "apns-request-id": str(uuid.uuid4()), "content-type": "application/json"},
        json.dumps({"message-storage-policy": 1, "push-type": "LiveActivity"}).encode(),
    )
    channel = headers.get("apns-channel-id")
    if status != 201 or not channel:
        fail(f"channel create: {status} {headers} {body!r}")
    status, headers, body = raw.send("GET", f"/1/apps/{BUNDLE}/all-channels", {"authorization": bearer})
    if status != 200 or channel not in json.loads(body).get("channels", []):
        fail(f"all-channels: {status} {body!r}")

    # 3. push-to-start on both backgrounded phones.
    def start_aps(status_text):
        return {
            "timestamp": int(time.time()),
            "event": "start",
            "content-state": content(status_text),
            "attributes-type": "OrderAttributes",
            "attributes": {"orderID": "M2001"},
            "alert": {"title": "Your order", "body": "The kitchen is cooking it"},
            "input-push-token": 1,
            "input-push-channel": channel,
        }

    for token, log in ((start_a, args.phone_a), (start_b, args.phone_b)):
        r = await send(token, start_aps("cooking"))
        if not r.is_successful:
            fail(f"start push: {r.status} {r.description}")
        await wait_for(
            log,
            "push M2001 cooking applied",
            lambda l: l.get("type") == "push" and l.get("order") == "M2001" and l.get("applied") is True
            and l.get("status") == "cooking",
        )
    activity_a = (
        await wait_for(
            args.phone_a,
            "pushToken activity M2001",
            lambda l: l.get("type") == "pushToken" and l.get("kind") == "activity" and l.get("order") == "M2001",
        )
    )["token"]
    token_line_b = await wait_for(
        args.phone_b,
        "pushToken activity M2001",
        lambda l: l.get("type") == "pushToken" and l.get("kind") == "activity" and l.get("order") == "M2001",
    )
    if token_line_b.get("channel") != channel:
        fail(f"phone B's activity does not listen on {channel}: {token_line_b}")

    # 4. an update through phone A's activity token.
    r = await send(activity_a, {"timestamp": int(time.time()) + 1, "event": "update", "content-state": content("pickedUp")})
    if not r.is_successful:
        fail(f"update: {r.status} {r.description}")
    await wait_for(
        args.phone_a,
        "push M2001 pickedUp applied",
        lambda l: l.get("type") == "push" and l.get("status") == "pickedUp" and l.get("applied") is True,
    )

    # 5. a broadcast on the channel: both phones, identical state.
    broadcast = {"aps": {"timestamp": int(time.time()) + 2, "event": "update", "content-state": content("delivering", 5)}}
    status, headers, body = raw.send(
        "POST",
        f"/4/broadcasts/apps/{BUNDLE}",
        {
            "authorization": bearer,
            "apns-channel-id": channel,
            "apns-push-type": "liveactivity",
            "apns-priority": "10",
            "apns-request-id": str(uuid.uuid4()),
        },
        json.dumps(broadcast).encode(),
    )
    if status != 200:
        fail(f"broadcast: {status} {body!r}")
    seen = []
    for log in (args.phone_a, args.phone_b):
        seen.append(
            await wait_for(
                log,
                "push M2001 delivering applied (broadcast)",
                lambda l: l.get("type") == "push" and l.get("status") == "delivering" and l.get("applied") is True,
            )
        )
    if seen[0]["etaTarget"] // 1000 != seen[1]["etaTarget"] // 1000 and abs(seen[0]["etaTarget"] - seen[1]["etaTarget"]) > 2000:
        fail(f"the broadcast's state differs between phones: {seen}")

    # Broadcast errors, as APNs answers them.
    status, _, body = raw.send(
        "POST",
        f"/4/broadcasts/apps/{BUNDLE}",
        {"authorization": bearer, "apns-channel-id": "bm90LWEtY2hhbm5lbA==", "apns-push-type": "liveactivity"},
        json.dumps(broadcast).encode(),
    )
    if status != 400 or json.loads(body).get("reason") != "BadChannelId":
        fail(f"unknown channel: {status} {body!r}")
    status, _, body = raw.send(
        "POST",
        f"/4/broadcasts/apps/{BUNDLE}",
        {"authorization": bearer, "apns-push-type": "liveactivity"},
        json.dumps(broadcast).encode(),
    )
    if status != 400 or json.loads(body).get("reason") != "MissingChannelId":
        fail(f"no channel: {status} {body!r}")

    # 6. end phone A's activity, dismissed at once.
    now = int(time.time())
    r = await send(
        activity_a,
        {"timestamp": now + 3, "event": "end", "content-state": content("delivered", 0), "dismissal-date": now - 1},
    )
    if not r.is_successful:
        fail(f"end: {r.status} {r.description}")
    await wait_for(
        args.phone_a,
        "push M2001 delivered applied",
        lambda l: l.get("type") == "push" and l.get("status") == "delivered" and l.get("applied") is True,
    )

    # 7. APNs's errors through the library.
    big = {"timestamp": now, "event": "update", "content-state": content("cooking"), "pad": "x" * 4200}
    r = await send(activity_a, big)
    if (r.status, r.description) != ("413", "PayloadTooLarge"):
        fail(f"oversized body: {r.status} {r.description}")
    r = await send(start_b, start_aps("cooking"), priority=7)
    if (r.status, r.description) != ("400", "BadPriority"):
        fail(f"bad priority: {r.status} {r.description}")
    for _ in range(100):  # the phone's verdict on the end arrives asynchronously
        r = await send(activity_a, {"timestamp": now + 4, "event": "update", "content-state": content("cooking")})
        if r.status != "200":
            break
        await asyncio.sleep(0.05)
    if (r.status, r.description) != ("410", "Unregistered") or not r.timestamp:
        fail(f"ended activity's token: {r.status} {r.description} {r.timestamp}")
    r = await send("00" * 32, {"timestamp": now, "event": "update", "content-state": content("cooking")})
    if (r.status, r.description) != ("400", "BadDeviceToken"):
        fail(f"unknown token: {r.status} {r.description}")

    # Phone B still shows the broadcast's state; phone A's activity ended.
    last_b = [l for l in log_lines(args.phone_b) if l.get("type") == "push" and l.get("order") == "M2001"][-1]
    if last_b.get("status") != "delivering":
        fail(f"phone B: {last_b}")
    print("apns-client-e2e: ok (push-to-start ×2, update, broadcast to 2 phones, end, 413/400/410/400 answers)")


if __name__ == "__main__":
    asyncio.run(main())
