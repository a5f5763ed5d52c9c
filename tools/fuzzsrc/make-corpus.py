#!/usr/bin/env python3
"""Writes the fuzz seed corpus (Tests/Fuzz/corpus/{frames,session}) from Protocol/vectors/frames.json plus crafted
frames: instants at the ends of Int64 and of PROTOCOL.md §3's range, PONGs answering the fuzzer daemon's probe,
commands with odd seeds. Deterministic: rerun it after changing the vectors. Usage: tools/fuzzsrc/make-corpus.py"""
import hashlib
import json
import os
import shutil
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "Tests", "Fuzz", "corpus")
TYPES = {"hello": 1, "welcome": 2, "subscribe": 3, "unsubscribe": 4, "publish": 5, "event": 6, "ack": 7, "ping": 8,
         "pong": 9, "error": 10, "bye": 11, "posture": 12, "resend": 13, "upToDate": 14, "command": 16, "result": 17}
NOW = 1_800_000_000_000  # FixedServerClock.instant in Sources/LiveBusFuzz
MIN, MAX = -2**63, 2**63 - 1
LIMIT = 3_155_760_000_000  # WireRange.instantLimitMilliseconds


def frame(kind, body, topic="", seq=0, flags=0):
    b = json.dumps(body, separators=(",", ":"), sort_keys=True).encode() if not isinstance(body, bytes) else body
    t = topic.encode()
    # Wire v2 (PROTOCOL.md §2): no crafted frame is an EVENT, so every trailer length is 0.
    head = struct.pack(">BBHQHH", 2, TYPES[kind], flags, seq, len(t), 0)
    crc = zlib.crc32(t + b, zlib.crc32(head)) & 0xFFFFFFFF
    return struct.pack(">I", 24 + len(t) + len(b) - 4) + head + struct.pack(">I", crc) + t + b


def event(**over):
    e = {"event": "update", "timestamp": NOW, "staleDate": NOW + 60_000, "relevanceScore": 50, "priority": 10,
         "contentState": {"status": "delivering", "summary": {"ko": "배달 중", "en": "Delivering"},
                          "etaTarget": NOW + 600_000, "progress": 0.5, "lastConfirmed": NOW,
                          "riderPosition": {"latitude": 37.5, "longitude": 127.0}}}
    cs = over.pop("contentState", {})
    e.update(over)
    e["contentState"].update(cs)
    return e


def main():
    vectors = json.load(open(os.path.join(ROOT, "Protocol", "vectors", "frames.json")))
    frames_in = [bytes.fromhex(v["hex"]) for v in vectors["frames"]] + \
        [bytes.fromhex(v["hex"]) for v in vectors["malformed"]]
    crafted = [
        frame("publish", event(contentState={"etaTarget": MIN}), "orders/A", 1),
        frame("publish", event(timestamp=MAX), "orders/A", 2),
        frame("publish", event(staleDate=MAX, dismissalDate=MAX, contentState={"lastConfirmed": MAX}), "orders/A", 3),
        frame("publish", event(timestamp=LIMIT, contentState={"etaTarget": -LIMIT}), "orders/B", 4),
        frame("publish", event(event="end", dismissalDate=LIMIT + 1), "orders/B", 5),
        frame("pong", {"t1": NOW, "t2": MIN, "t3": NOW}),
        frame("pong", {"t1": NOW, "t2": -1, "t3": MAX}),
        frame("pong", {"t1": NOW, "t2": NOW + 3_600_000, "t3": NOW + 3_600_001}),
        frame("ping", {"t1": MAX}),
        frame("subscribe", {"patterns": [">"]}),
        frame("resend", {"fromSequence": 2**64 - 1}, "orders/A"),
        frame("command", {"command": "fault.add", "args": {"seed": -1, "toxic": {"kind": "latency"}}}, seq=1),
        frame("command", {"command": "fault.add", "args": {"seed": 1e19, "toxic": {"kind": "drop"}}}, seq=2),
        frame("command", {"command": "session.clock", "args": {"session": "phone", "stepMs": MAX}}, seq=3),
        frame("command", {"command": "order.create", "args": {}}, seq=4),
        frame("command", {"command": "status", "args": {}}, seq=5),
        frame("posture", {"clockChanged": True}),
        frame("posture", {"posture": {"foldState": "flat", "orientation": "landscape", "windowWidth": 1e308},
                          "appState": "background", "profile": {"lowPowerMode": True}}),
        frame("ack", {}, "orders/A", 2**64 - 1),
        frame("unsubscribe", {"patterns": [">"]}),
        frame("subscribe", {"patterns": ["orders/*", "orders/>", "*"]}),
        frame("command", {"command": "push", "args": {"session": "phone", "order": "A",
                          "payload": '{"aps":{"timestamp":1e300,"event":"update"}}'}}, seq=6),
        frame("command", {"command": "session.clock", "args": {"session": "phone", "stepMs": 86400000,
                          "driftPPM": 100000}}, seq=7),
        frame("command", {"command": "order.list", "args": {"offset": 9.2e18, "limit": -5}}, seq=8),
        frame("command", {"command": "backend.stall", "args": {"durationMs": 2**63 - 1}}, seq=9),
        frame("command", {"command": "fault.add", "args": {"session": "phone", "seed": 2**53,
                          "toxic": {"kind": "reorder", "direction": "down", "toxicity": 1,
                                    "params": {"probability": 1, "window": 64, "delayMs": 600000}}}}, seq=10),
        frame("bye", {"reason": "done"}),
    ]
    helloes = [frame("hello", {"versions": [2], "client": "c", "role": r, "clientTime": t,
                               **({"device": "iphone-16-pro"} if r == "session" else {})})
               for r in ("session", "publisher") for t in (MIN, MAX, LIMIT, NOW)]
    shutil.rmtree(OUT, ignore_errors=True)
    for mode in ("frames", "session"):
        os.makedirs(os.path.join(OUT, mode))

    def put(mode, data):
        name = hashlib.sha1(data).hexdigest()
        open(os.path.join(OUT, mode, name), "wb").write(data)

    for f in frames_in + crafted + helloes:
        put("frames", f)
    # Session inputs: first byte = role (0 session, 1 publisher, 2 admin, 3 observer; bit 7: no HELLO is sent).
    for f in frames_in + crafted:
        for role in (0, 1, 2, 3):
            put("session", bytes([role]) + f)
    put("session", bytes([1]) + b"".join(crafted[:5]))
    put("session", bytes([0]) + crafted[9] + b"".join(crafted[5:9]))
    put("session", bytes([2]) + b"".join(f for f in crafted if f[5] == TYPES["command"]))
    put("session", bytes([0]) + b"".join(f for f in crafted if f[5] in (TYPES["posture"], TYPES["ack"],
                                                                            TYPES["subscribe"], TYPES["resend"])))
    resume = frame("hello", {"versions": [2], "client": "c", "role": "session", "clientTime": NOW,
                             "device": "iphone-16-pro", "resume": {"token": "x" * 32,
                                                                  "topics": {"orders/A": 2**64 - 1}}})
    put("session", bytes([0x80]) + resume)
    for h in helloes:
        put("session", bytes([0x80]) + h + crafted[9])


if __name__ == "__main__":
    main()
