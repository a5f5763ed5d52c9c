"""The session client against a scripted fake daemon (no build needed): handshake, PING/PONG on the phone's
clock, gap repair with RESEND, a corrupted frame repaired by resuming, resumeRejected, POSTURE, BYE."""

import io
import json
import os
import socket
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import livebus_client as lb  # noqa: E402
from test_orderbook import event  # noqa: E402

TOPIC = "orders/A1001"


class Peer:
    """The daemon's side of one accepted connection."""

    def __init__(self, conn):
        self.conn = conn
        self.conn.settimeout(5)
        self.decoder = lb.FrameDecoder()
        self.pending = []

    def read(self):
        while not self.pending:
            data = self.conn.recv(65536)
            if not data:
                raise EOFError("client closed")
            self.pending += self.decoder.feed(data)
        return self.pending.pop(0)

    def expect(self, type_name):
        frame = self.read()
        if frame.type_name != type_name:
            raise AssertionError("expected %s, got %r" % (type_name, frame))
        return frame

    def send(self, type_name, body=b"", topic="", sequence=0, flags=0):
        self.conn.sendall(encode(type_name, body, topic, sequence, flags))

    def send_unless_gone(self, type_name, body=b"", topic="", sequence=0, flags=0):
        """A frame the client may no longer wait for: a client that exits once every activity ended (exit-when
        delivered) can say BYE and close before it arrives (CI of 2026-12-03: BrokenPipeError on this UPTODATE)."""
        try:
            self.send(type_name, body, topic, sequence, flags)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def welcome(self, token, resumed=False, session="s1", name="pro"):
        self.send("WELCOME", {"version": 2, "session": session, "name": name, "resumeToken": token,
                              "serverTime": int(time.time() * 1000), "resumed": resumed, "maxFrameSize": 65536})

    def event(self, seq, flags=0, **kwargs):
        self.send("EVENT", event(seq, **kwargs), TOPIC, seq, flags)


def encode(type_name, body=b"", topic="", sequence=0, flags=0):
    """A frame as livebusd writes it: an EVENT's `client` instants go into its trailer (PROTOCOL.md §5.1)."""
    trailer = None
    if type_name == "EVENT":
        body = dict(body)
        trailer = body.pop("client")
    return lb.encode_frame(type_name, body, topic, sequence, flags, trailer)


class FakeDaemon:
    def __init__(self, script):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "bus.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(4)
        self.server.settimeout(10)
        self.script = script
        self.failure = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.script(self.accept)
        except BaseException as error:  # reported by the test
            self.failure = error

    def accept(self):
        conn, _ = self.server.accept()
        return Peer(conn)

    def close(self):
        self.thread.join(10)
        self.server.close()
        self.dir.cleanup()
        if self.failure:
            raise self.failure


class FakeDaemonTests(unittest.TestCase):
    def run_client(self, daemon, **kwargs):
        out = io.StringIO()
        client = lb.SessionClient(daemon.path, out=out, err=io.StringIO(), **kwargs)
        result = {}
        thread = threading.Thread(target=lambda: result.setdefault("code", client.run()), daemon=True)
        thread.start()
        return client, thread, result, out

    def test_handshake_pong_gap_corruption_resume_bye(self):
        seen = {}

        def script(accept):
            peer = accept()
            hello = peer.expect("HELLO").json()
            seen["hello"] = hello
            seen["hello_host"] = int(time.time() * 1000)
            peer.welcome("tok1")
            seen["subscribe"] = peer.expect("SUBSCRIBE").json()
            peer.send("PING", {"t1": 123})
            seen["pong"] = peer.expect("PONG").json()
            seen["pong_host"] = int(time.time() * 1000)
            peer.event(1, flags=lb.FLAG_REPLAY, kind="start", status="created")
            peer.event(3, status="awaitingPickup")
            resend = peer.expect("RESEND")
            seen["resend"] = (resend.topic, resend.json())
            peer.event(2, flags=lb.FLAG_REPLAY, status="cooking")
            peer.event(3, flags=lb.FLAG_REPLAY, status="awaitingPickup")
            peer.send("UPTODATE", {"sequence": 3}, TOPIC)
            # a corrupted frame: the client drops the connection and resumes
            bad = bytearray(encode("EVENT", event(4, status="pickedUp"), TOPIC, 4))
            bad[-2] ^= 0x01
            peer.conn.sendall(bytes(bad))
            try:
                while True:
                    peer.read()
            except (EOFError, ConnectionError):
                pass
            peer = accept()
            seen["hello2"] = peer.expect("HELLO").json()
            peer.welcome("tok1", resumed=True, session="s2")
            peer.event(4, flags=lb.FLAG_REPLAY, status="pickedUp")
            peer.event(5, flags=lb.FLAG_TERMINAL, kind="end", status="delivered")
            peer.send_unless_gone("UPTODATE", {"sequence": 5}, TOPIC)
            seen["bye"] = peer.expect("BYE").json()

        daemon = FakeDaemon(script)
        client, thread, result, out = self.run_client(daemon, clock=lb.SimClock(90_000), exit_when_delivered=True,
                                                      name="pro", device="iphone-duo", fold_state="half-opened")
        thread.join(15)
        daemon.close()
        self.assertEqual(result.get("code"), 0)
        hello = seen["hello"]
        self.assertEqual(hello["role"], "session")
        self.assertEqual(hello["versions"], [2])
        self.assertEqual(hello["device"], "iphone-duo")
        self.assertEqual(hello["name"], "pro")
        self.assertEqual(hello["posture"], {"foldState": "half-opened", "orientation": "portrait"})
        self.assertEqual(hello["appState"], "foreground")
        self.assertNotIn("resume", hello)
        self.assertLess(abs(hello["clientTime"] - 90_000 - seen["hello_host"]), 2000)
        self.assertEqual(seen["subscribe"], {"patterns": ["orders/>"]})
        pong = seen["pong"]
        self.assertEqual(pong["t1"], 123)
        self.assertLessEqual(pong["t2"], pong["t3"])
        self.assertLess(abs(pong["t3"] - 90_000 - seen["pong_host"]), 2000)
        self.assertEqual(seen["resend"], (TOPIC, {"fromSequence": 2}))
        self.assertEqual(seen["hello2"]["resume"], {"token": "tok1", "topics": {TOPIC: 3}, "patterns": ["orders/>"]})
        self.assertEqual(seen["bye"], {"reason": "client exit"})
        self.assertEqual([(r["seq"], r["status"]) for r in client.records],
                         [(1, "created"), (2, "cooking"), (3, "awaitingPickup"), (4, "pickedUp"), (5, "delivered")])
        self.assertEqual([r["delivery"] for r in client.records], ["replay", "replay", None, "replay", None])  # 3 held from the live copy
        self.assertEqual(client.records[0]["etaTarget"], 2_090_000)
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual(len([r for r in lines if r["type"] != "sync"]), 5)
        states = [r["state"] for r in lines if r["type"] == "sync"]
        # The first connection drops during catch-up (the script), the resumed one goes live, the BYE ends it.
        self.assertEqual(states, ["catchingUp", "disconnected", "catchingUp", "live", "disconnected"], states)
        self.assertTrue(all(isinstance(r["clientTime"], int) for r in lines))
        self.assertEqual(client.resumed_count, 1)

    def test_sync_frames_degraded_then_live_keep_the_book(self):
        """A federated daemon's SYNC (PROTOCOL.md §5.9): the HELLO asks for it; degraded is shown over a live
        connection with the daemon's since (client clock) and reason, the book is kept, catchingUp then live
        follow; a bad SYNC is ignored; the next WELCOME forgets the daemon's state."""
        seen = {}

        def script(accept):
            peer = accept()
            seen["hello"] = peer.expect("HELLO").json()
            peer.welcome("tok1")
            peer.expect("SUBSCRIBE")
            peer.send("SYNC", {"since": 1_000, "state": "live", "uncertaintyMs": 3})
            peer.event(1, flags=lb.FLAG_REPLAY, kind="start", status="cooking")
            peer.send("UPTODATE", {"sequence": 1}, TOPIC)
            peer.send("UPTODATE", {"sequence": 0}, "")
            time.sleep(0.4)
            peer.send("SYNC", {"since": 2_000, "state": "degraded", "uncertaintyMs": 3,
                               "reason": "NATS link reconnecting"})
            peer.send("SYNC", {"since": 2_500, "state": "asleep", "uncertaintyMs": 3})  # ignored
            time.sleep(0.4)
            seen["degraded"] = (client.sync_state, [r["seq"] for r in client.records])
            peer.send("SYNC", {"since": 3_000, "state": "catchingUp", "uncertaintyMs": 3})
            peer.event(2, status="awaitingPickup")
            peer.send("SYNC", {"since": 3_100, "state": "live", "uncertaintyMs": 3})
            peer.event(3, flags=lb.FLAG_TERMINAL, kind="end", status="delivered")
            peer.send_unless_gone("UPTODATE", {"sequence": 3}, TOPIC)
            peer.expect("BYE")

        daemon = FakeDaemon(script)
        client, thread, result, out = self.run_client(daemon, exit_when_delivered=True, name="pro")
        thread.join(15)
        daemon.close()
        self.assertEqual(result.get("code"), 0)
        self.assertEqual(seen["hello"]["features"], ["sync"])
        self.assertEqual(seen["degraded"], ("degraded", [1]))
        self.assertEqual([r["seq"] for r in client.records], [1, 2, 3])
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        syncs = [(r["state"], r["daemon"], r["since"], r["reason"]) for r in lines if r["type"] == "sync"]
        self.assertEqual(syncs, [
            ("catchingUp", None, None, None),
            ("live", "live", 1_000, None),
            ("degraded", "degraded", 2_000, "NATS link reconnecting"),
            ("catchingUp", "catchingUp", 3_000, None),
            ("live", "live", 3_100, None),
            ("disconnected", "live", 3_100, None),
        ], syncs)

    def test_resume_rejected_attaches_as_new_session(self):
        seen = {}

        def script(accept):
            peer = accept()
            peer.expect("HELLO")
            peer.welcome("tok1")
            peer.expect("SUBSCRIBE")
            peer.event(1, kind="start", status="created")
            peer.send("UPTODATE", {"sequence": 1}, TOPIC)
            peer.conn.close()
            peer = accept()
            seen["hello2"] = peer.expect("HELLO").json()
            peer.send("ERROR", {"code": 14, "name": "resumeRejected", "message": "unknown token", "fatal": True})
            peer.conn.close()
            peer = accept()
            seen["hello3"] = peer.expect("HELLO").json()
            peer.welcome("tok2", session="s9")
            seen["subscribe"] = peer.expect("SUBSCRIBE").json()
            peer.event(1, flags=lb.FLAG_REPLAY, kind="start", status="created")  # a duplicate: not logged
            peer.event(2, flags=lb.FLAG_TERMINAL, kind="end", status="canceled")
            peer.send_unless_gone("UPTODATE", {"sequence": 2}, TOPIC)
            peer.expect("BYE")

        daemon = FakeDaemon(script)
        client, thread, result, _ = self.run_client(daemon, exit_when_delivered=True)
        thread.join(15)
        daemon.close()
        self.assertEqual(result.get("code"), 0)
        self.assertEqual(seen["hello2"]["resume"]["token"], "tok1")
        self.assertNotIn("resume", seen["hello3"])
        self.assertEqual(seen["subscribe"], {"patterns": ["orders/>"]})
        self.assertEqual([(r["seq"], r["status"]) for r in client.records], [(1, "created"), (2, "canceled")])
        # Issue 14: each lost connection and each daemon ERROR leaves an `error` line with clientTime (§10).
        messages = [e["message"] for e in client.errors]
        self.assertTrue(any(m.startswith("connection lost") for m in messages), messages)
        self.assertTrue(any("resumeRejected" in m for m in messages), messages)
        self.assertTrue(all(isinstance(e["clientTime"], int) and e["type"] == "error" for e in client.errors))

    def test_posture_changes_and_stop(self):
        seen = {"postures": []}
        ready = threading.Event()

        def script(accept):
            peer = accept()
            peer.expect("HELLO")
            peer.welcome("tok1")
            peer.expect("SUBSCRIBE")
            ready.set()
            while True:
                frame = peer.read()
                if frame.type_name == "BYE":
                    break
                seen["postures"].append(frame.json())

        daemon = FakeDaemon(script)
        client, thread, result, _ = self.run_client(
            daemon, device="galaxy-z-fold6", fold_state="folded",
            posture_script=lb.parse_posture_script("0.2s:half-opened"))
        ready.wait(5)
        time.sleep(0.5)
        client.set_posture(fold_state="flat", orientation="landscape")
        client.set_posture(app_state="background")
        for line in ("h", "rotate", "app-state foreground", "fold closed landscape", "nonsense"):
            error = lb.apply_control_line(client, line)
            self.assertEqual(error is not None, line == "nonsense", line)
        time.sleep(0.3)
        client.stop()
        thread.join(10)
        daemon.close()
        self.assertEqual(result.get("code"), 0)
        self.assertEqual(seen["postures"], [
            {"posture": {"foldState": "half-opened", "orientation": "portrait"}, "appState": "foreground"},
            {"posture": {"foldState": "flat", "orientation": "landscape"}, "appState": "foreground"},
            {"posture": {"foldState": "flat", "orientation": "landscape"}, "appState": "background"},
            {"posture": {"foldState": "half-opened", "orientation": "landscape"}, "appState": "background"},
            {"posture": {"foldState": "half-opened", "orientation": "portrait"}, "appState": "background"},
            {"posture": {"foldState": "half-opened", "orientation": "portrait"}, "appState": "foreground"},
            {"posture": {"foldState": "folded", "orientation": "landscape"}, "appState": "foreground"},
        ])

    def test_refused_device_exits_2(self):
        def script(accept):
            peer = accept()
            peer.expect("HELLO")
            peer.send("ERROR", {"code": 13, "name": "unknownDevice", "message": "unknown device id 'x'",
                                "fatal": True})
            peer.conn.close()

        daemon = FakeDaemon(script)
        client, thread, result, _ = self.run_client(daemon, device="x")
        thread.join(10)
        daemon.close()
        self.assertEqual(result.get("code"), 2)

    def test_name_in_use_exits_2(self):
        def script(accept):
            peer = accept()
            peer.expect("HELLO")
            peer.send("ERROR", {"code": 15, "name": "rejected", "fatal": True,
                                "message": "a live session is already named 'same'; choose another --name"})
            peer.conn.close()

        daemon = FakeDaemon(script)
        client, thread, result, _ = self.run_client(daemon, name="same")
        thread.join(10)
        daemon.close()
        self.assertEqual(result.get("code"), 2)

    def test_resume_refused_past_max_subscriptions_exits_2_without_reconnecting(self):
        """A resuming HELLO refused with a fatal ERROR that retrying cannot fix (tooManySubscriptions, PROTOCOL.md
        §5.3; unknownDevice or invalidPosture of a daemon restarted with another catalog) ends the client with
        exit 2 and the daemon's message, after it was attached once too: no reconnect, no resume loop for the
        whole resume window (issue 19)."""
        refusals = [
            (21, "tooManySubscriptions", "resuming would hold 4 topic patterns (3 held by the session, 1 in HELLO "
                                         "resume.patterns); a session may hold 3 (--max-subscriptions): raise the "
                                         "daemon's --max-subscriptions, or attach as a new session (without resume)"),
            (13, "unknownDevice", "unknown device 'iphone-16-pro'; valid ids: iphone-duo"),
        ]
        for code, name, message in refusals:
            with self.subTest(name):
                seen = {}

                def script(accept):
                    peer = accept()
                    peer.expect("HELLO")
                    peer.welcome("tok1")
                    peer.expect("SUBSCRIBE")
                    peer.send("UPTODATE", {"sequence": 0}, "")
                    peer.conn.close()
                    peer = accept()
                    seen["hello2"] = peer.expect("HELLO").json()
                    peer.send("ERROR", {"code": code, "name": name, "message": message, "fatal": True})
                    peer.conn.close()

                daemon = FakeDaemon(script)
                client, thread, result, _ = self.run_client(daemon, name="pro")
                thread.join(10)
                # The client returned: a reconnect would have connected by now (the listen backlog takes it).
                daemon.server.setblocking(False)
                try:
                    extra, _ = daemon.server.accept()
                    extra.close()
                    reconnected = True
                except BlockingIOError:
                    reconnected = False
                daemon.close()
                self.assertEqual(result.get("code"), lb.EXIT_USAGE, "the client is still retrying")
                self.assertFalse(reconnected, "the client connected again after the refusal")
                self.assertEqual(seen["hello2"]["resume"]["token"], "tok1")
                self.assertEqual(client.connections, 1)
                self.assertIn(message, client.err.getvalue())
                self.assertTrue(any(name in e["message"] and message in e["message"] for e in client.errors),
                                client.errors)

    def test_name_in_use_after_attaching_is_retried(self):
        """`rejected` on a reconnect (the name reserved for a while, PROTOCOL.md §4.2) may clear: it is retried
        with backoff, unlike the refusals retrying cannot fix."""
        seen = {}

        def script(accept):
            peer = accept()
            peer.expect("HELLO")
            peer.welcome("tok1")
            peer.expect("SUBSCRIBE")
            peer.conn.close()
            peer = accept()
            peer.expect("HELLO")
            peer.send("ERROR", {"code": 15, "name": "rejected", "fatal": True,
                                "message": "a live session is already named 'pro'; choose another --name"})
            peer.conn.close()
            peer = accept()
            seen["hello3"] = peer.expect("HELLO").json()
            peer.welcome("tok1", resumed=True, session="s2")
            peer.expect("BYE")

        daemon = FakeDaemon(script)
        client, thread, result, _ = self.run_client(daemon, name="pro")
        for _ in range(100):
            if client.resumed_count:
                break
            time.sleep(0.05)
        client.stop()
        thread.join(10)
        daemon.close()
        self.assertEqual(result.get("code"), 0)
        self.assertEqual(seen["hello3"]["resume"]["token"], "tok1")

    def test_down_toxic_refusal_before_attaching_is_retried(self):
        """`connectionsRefused` (a `down` toxic, FAULTS.md §6: "backoff until the toxic is removed, then attach")
        is retried with backoff even before the first WELCOME, unlike `rejected` (fresh-user review 2026-12-03,
        finding 5: the first attach under `down` ended with exit 2)."""
        seen = {}

        def script(accept):
            for _ in range(2):
                peer = accept()
                peer.expect("HELLO")
                peer.send("ERROR", {"code": 26, "name": "connectionsRefused", "fatal": True,
                                    "message": "new connections are refused by the 'down' toxic; "
                                               "`livebus fault remove` ends it"})
                peer.conn.close()
            peer = accept()
            seen["hello3"] = peer.expect("HELLO").json()
            peer.welcome("tok1")
            peer.expect("SUBSCRIBE")
            seen["welcomed"] = True
            peer.expect("BYE")

        daemon = FakeDaemon(script)
        client, thread, result, _ = self.run_client(daemon, name="pro")
        for _ in range(200):
            if seen.get("welcomed"):
                break
            time.sleep(0.05)
        client.stop()
        thread.join(10)
        daemon.close()
        self.assertTrue(seen.get("welcomed"), "the client gave up before the toxic was removed")
        self.assertEqual(result.get("code"), 0)
        self.assertEqual(lb.ERROR_CODES["connectionsRefused"], 26)

    def test_unreachable_exits_3(self):
        with tempfile.TemporaryDirectory() as directory:
            client = lb.SessionClient(os.path.join(directory, "none.sock"), out=io.StringIO(), err=io.StringIO())
            self.assertEqual(client.run(), 3)


if __name__ == "__main__":
    unittest.main()
