"""Frame codec tests against every golden vector in Protocol/vectors/frames.json."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import livebus_client as lb  # noqa: E402

VECTORS_PATH = os.path.join(HERE, "..", "..", "Protocol", "vectors", "frames.json")
with open(VECTORS_PATH, encoding="utf-8") as handle:
    VECTORS = json.load(handle)
ERRORS_PATH = os.path.join(HERE, "..", "..", "Protocol", "errors.json")


class VectorTests(unittest.TestCase):
    def test_there_are_vectors(self):
        self.assertGreater(len(VECTORS["frames"]), 10)
        self.assertGreater(len(VECTORS["malformed"]), 5)

    def test_type_table_matches_vectors(self):
        for vector in VECTORS["frames"]:
            self.assertEqual(lb.FRAME_TYPES[vector["type"]], vector["typeByte"], vector["name"])

    def test_error_codes_match_errors_json(self):
        with open(ERRORS_PATH, encoding="utf-8") as handle:
            errors = json.load(handle)["errors"]
        self.assertEqual({e["name"]: e["code"] for e in errors}, lb.ERROR_CODES)

    def test_encode_every_vector(self):
        for vector in VECTORS["frames"]:
            with self.subTest(vector=vector["name"]):
                trailer = bytes.fromhex(vector["trailer"]) if vector.get("trailer") else None
                encoded = lb.encode_frame(vector["type"], vector["body"].encode("utf-8"), vector["topic"],
                                          vector["sequence"], vector["flags"], trailer)
                self.assertEqual(encoded.hex(), vector["hex"])

    def test_encode_from_json_objects(self):
        """Bodies built as objects and encoded canonically (sorted keys, no spaces) give the vector's bytes.
        EVENT bodies have no `client` member: the per-session instants are the 48-byte trailer (§5.1)."""
        for vector in VECTORS["frames"]:
            with self.subTest(vector=vector["name"]):
                body = json.loads(vector["body"]) if vector["body"] else None
                if vector["type"] == "EVENT":
                    self.assertNotIn("client", body)
                    self.assertEqual(lb.encode_trailer(vector["client"]).hex(), vector["trailer"])
                encoded = lb.encode_frame(vector["type"], body, vector["topic"], vector["sequence"],
                                          vector["flags"], vector.get("client"))
                self.assertEqual(encoded.hex(), vector["hex"])

    def test_event_trailer_fields(self):
        """The trailer decodes to the vector's `client` instants; the straight CRC-32 covers it (§2)."""
        for vector in VECTORS["frames"]:
            if vector["type"] != "EVENT":
                continue
            with self.subTest(vector=vector["name"]):
                data = bytes.fromhex(vector["hex"])
                frame = lb.decode_frame(data)
                self.assertEqual(frame.trailer, vector["client"])
                self.assertEqual(data[18:20], lb.TRAILER_SIZE.to_bytes(2, "big"))
                self.assertEqual(data[-lb.TRAILER_SIZE:].hex(), vector["trailer"])
                self.assertEqual(frame.event_body()["client"], vector["client"])
                for index in (30, len(data) - 60, len(data) - 20, len(data) - 1):  # topic, body, trailer
                    bad = bytearray(data)
                    bad[index] ^= 0x10
                    with self.assertRaises(lb.WireError) as caught:
                        lb.decode_frame(bytes(bad))
                    self.assertEqual(caught.exception.name, "checksumMismatch")

    def test_sync_vectors_decode_as_the_daemon_sent_them(self):
        """SYNC (PROTOCOL.md §5.9): every state's vector decodes; a state, an instant or a type out of bounds is
        refused naming the field; what the phone shows follows shown_sync_state."""
        syncs = [v for v in VECTORS["frames"] if v["type"] == "SYNC"]
        self.assertEqual(sorted(lb.decode_sync(json.loads(v["body"]))["state"] for v in syncs),
                         sorted(lb.DAEMON_SYNC_STATES))
        for vector in syncs:
            frame = lb.decode_frame(bytes.fromhex(vector["hex"]))
            body = lb.decode_sync(frame.json())
            self.assertEqual(body["since"], json.loads(vector["body"])["since"])
        for bad, name, field in (({"state": "asleep", "since": 1, "uncertaintyMs": 0}, "invalidBody", "state"),
                                 ({"state": "live", "since": 4e15, "uncertaintyMs": 0}, "invalidBody", "since"),
                                 ({"state": "live", "since": 4 * 10 ** 15, "uncertaintyMs": 0}, "invalidValue",
                                  "since"),
                                 ({"state": "live", "since": 1, "uncertaintyMs": -1}, "invalidValue",
                                  "uncertaintyMs"),
                                 ({"state": "live", "since": 1, "uncertaintyMs": 0, "reason": 5}, "invalidBody",
                                  "reason")):
            with self.assertRaises(lb.WireError) as caught:
                lb.decode_sync(bad)
            self.assertEqual(caught.exception.name, name)
            self.assertIn("'%s'" % field, caught.exception.message)
        self.assertEqual(lb.shown_sync_state("live", None), "live")
        self.assertEqual(lb.shown_sync_state("live", "degraded"), "degraded")
        self.assertEqual(lb.shown_sync_state("catchingUp", "degraded"), "degraded")
        self.assertEqual(lb.shown_sync_state("live", "catchingUp"), "catchingUp")
        self.assertEqual(lb.shown_sync_state("catchingUp", "live"), "catchingUp")
        self.assertEqual(lb.shown_sync_state("disconnected", "degraded"), "disconnected")

    def test_decode_every_vector(self):
        for vector in VECTORS["frames"]:
            with self.subTest(vector=vector["name"]):
                frame = lb.decode_frame(bytes.fromhex(vector["hex"]))
                self.assertEqual(frame.type, vector["typeByte"])
                self.assertEqual(frame.type_name, vector["type"])
                self.assertEqual(frame.flags, vector["flags"])
                self.assertEqual(frame.sequence, vector["sequence"])
                self.assertEqual(frame.topic, vector["topic"])
                self.assertEqual(frame.body.decode("utf-8"), vector["body"])
                self.assertEqual(frame.trailer, vector.get("client"))
                expected = json.loads(vector["body"]) if vector["body"] else {}
                self.assertEqual(frame.json(), expected)

    def test_all_vectors_as_one_stream(self):
        stream = b"".join(bytes.fromhex(v["hex"]) for v in VECTORS["frames"])
        frames = lb.FrameDecoder().feed(stream)
        self.assertEqual([f.encode().hex() for f in frames], [v["hex"] for v in VECTORS["frames"]])

    def test_decoder_split_at_every_index(self):
        for vector in VECTORS["frames"]:
            data = bytes.fromhex(vector["hex"])
            for cut in range(len(data) + 1):
                decoder = lb.FrameDecoder()
                frames = decoder.feed(data[:cut]) + decoder.feed(data[cut:])
                self.assertEqual(len(frames), 1, (vector["name"], cut))
                self.assertEqual(frames[0].encode(), data, (vector["name"], cut))
                self.assertEqual(decoder.buffered, 0)

    def test_decoder_byte_by_byte_over_two_frames(self):
        data = bytes.fromhex(VECTORS["frames"][7]["hex"]) + bytes.fromhex(VECTORS["frames"][11]["hex"])
        decoder = lb.FrameDecoder()
        frames = []
        for index in range(len(data)):
            frames += decoder.feed(data[index:index + 1])
        self.assertEqual(b"".join(f.encode() for f in frames), data)

    def test_decoder_two_cuts_over_a_stream(self):
        data = b"".join(bytes.fromhex(v["hex"]) for v in VECTORS["frames"][:6])
        step = 7
        for first in range(0, len(data), step):
            for second in range(first, len(data), step * 5):
                decoder = lb.FrameDecoder()
                frames = decoder.feed(data[:first]) + decoder.feed(data[first:second]) + decoder.feed(data[second:])
                self.assertEqual(b"".join(f.encode() for f in frames), data)


class MalformedTests(unittest.TestCase):
    def test_every_malformed_vector(self):
        for vector in VECTORS["malformed"]:
            with self.subTest(vector=vector["name"]):
                with self.assertRaises(lb.WireError) as caught:
                    lb.FrameDecoder().feed(bytes.fromhex(vector["hex"]))
                self.assertEqual(caught.exception.name, vector["error"])
                self.assertEqual(caught.exception.code, vector["code"])

    def test_malformed_fed_byte_by_byte(self):
        """The error comes as soon as the bytes that show it are in (frameTooLarge after 4 bytes)."""
        for vector in VECTORS["malformed"]:
            with self.subTest(vector=vector["name"]):
                data = bytes.fromhex(vector["hex"])
                decoder = lb.FrameDecoder()
                with self.assertRaises(lb.WireError) as caught:
                    for index in range(len(data)):
                        decoder.feed(data[index:index + 1])
                        if vector["error"] == "frameTooLarge":
                            self.assertLess(index, 4)
                self.assertEqual(caught.exception.name, vector["error"])

    def test_whole_frames_before_a_bad_one_come_first(self):
        good = bytes.fromhex(VECTORS["frames"][11]["hex"])
        bad = bytes.fromhex(VECTORS["malformed"][4]["hex"])  # bad-crc
        decoder = lb.FrameDecoder()
        frames = decoder.feed(good + good + bad + good)
        self.assertEqual(len(frames), 2)
        self.assertEqual(decoder.error.name, "checksumMismatch")
        with self.assertRaises(lb.WireError):
            decoder.feed(b"")

    def test_reconvert_flag_is_known_and_the_next_bit_is_not(self):
        """PROTOCOL.md §2: bit 3 `reconvert` (added after the vectors were recorded); bits 4–15 must be 0."""
        vector = VECTORS["frames"][7]
        for bit, ok in ((lb.FLAG_RECONVERT, True), (0x10, False), (0x8000, False)):
            data = lb.encode_frame("EVENT", vector["body"].encode(), vector["topic"], vector["sequence"], 0,
                                   vector["client"])
            data = bytearray(data)
            data[6:8] = bit.to_bytes(2, "big")
            crc = lb.zlib.crc32(bytes(data[24:]), lb.zlib.crc32(bytes(data[4:20]))) & 0xFFFFFFFF
            data[20:24] = crc.to_bytes(4, "big")
            if ok:
                self.assertEqual(lb.decode_frame(bytes(data)).flags, bit)
            else:
                with self.assertRaises(lb.WireError) as caught:
                    lb.decode_frame(bytes(data))
                self.assertEqual(caught.exception.name, "malformedFrame")

    def test_frame_too_large_before_the_body(self):
        with self.assertRaises(lb.WireError) as caught:
            lb.FrameDecoder().feed(bytes.fromhex("0001116c"))
        self.assertEqual(caught.exception.name, "frameTooLarge")

    def test_largest_frame_accepted_one_more_refused(self):
        body = b"x" * (lb.MAX_FRAME_SIZE - lb.HEADER_SIZE)
        data = lb.encode_frame("PING", body)
        self.assertEqual(len(data), lb.MAX_FRAME_SIZE)
        self.assertEqual(lb.decode_frame(data).body, body)
        with self.assertRaises(lb.WireError) as caught:
            lb.encode_frame("PING", body + b"x")
        self.assertEqual(caught.exception.name, "frameTooLarge")

    def test_corrupting_any_byte_after_the_length_is_detected(self):
        data = bytearray(bytes.fromhex(VECTORS["frames"][7]["hex"]))
        for index in range(4, len(data)):
            corrupted = bytearray(data)
            corrupted[index] ^= 0x20
            with self.assertRaises(lb.WireError, msg=index):
                lb.decode_frame(bytes(corrupted))

    def test_non_object_body_is_invalid_body(self):
        frame = lb.decode_frame(lb.encode_frame("PING", b"[1]"))
        with self.assertRaises(lb.WireError) as caught:
            frame.json()
        self.assertEqual(caught.exception.name, "invalidBody")


if __name__ == "__main__":
    unittest.main()
