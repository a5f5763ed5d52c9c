#!/usr/bin/env python3
"""livebus-py: an independent LiveBus client (wire protocol v1), Python 3 standard library only.

Written from Protocol/PROTOCOL.md, Protocol/CLOCKSYNC.md and Protocol/vectors/frames.json alone; it shares no
code with the Swift client. It is both a library (FrameDecoder, encode_frame, OrderBook, SessionClient) and a
command line tool:

    python3 tools/pyclient/livebus_client.py attach --socket /tmp/bus.sock --clock-skew 90000 --exit-when delivered

prints one JSON object per applied update on stdout (see README.md).
"""

import argparse
import json
import os
import random
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import zlib

CLIENT_NAME = "livebus-py/0.1"
PROTOCOL_VERSION = 1
HEADER_SIZE = 24
MAX_FRAME_SIZE = 65536
MAX_TOPIC_LENGTH = 255

# ---------------------------------------------------------------------------------------------------------------
# Frame types, flags, errors (PROTOCOL.md §2, §3, §6)

FRAME_TYPES = {
    "HELLO": 0x01,
    "WELCOME": 0x02,
    "SUBSCRIBE": 0x03,
    "UNSUBSCRIBE": 0x04,
    "PUBLISH": 0x05,
    "EVENT": 0x06,
    "ACK": 0x07,
    "PING": 0x08,
    "PONG": 0x09,
    "ERROR": 0x0A,
    "BYE": 0x0B,
    "POSTURE": 0x0C,
    "RESEND": 0x0D,
    "UPTODATE": 0x0E,
    "COMMAND": 0x10,
    "RESULT": 0x11,
}
FRAME_NAMES = {code: name for name, code in FRAME_TYPES.items()}

FLAG_REPLAY = 0x1
FLAG_SNAPSHOT = 0x2
FLAG_TERMINAL = 0x4
KNOWN_FLAGS = FLAG_REPLAY | FLAG_SNAPSHOT | FLAG_TERMINAL

ERROR_CODES = {
    "malformedFrame": 1,
    "frameTooLarge": 2,
    "unknownFrameType": 3,
    "unsupportedVersion": 4,
    "handshakeRequired": 5,
    "checksumMismatch": 6,
    "invalidBody": 7,
    "invalidTopic": 8,
    "slowConsumer": 9,
    "shuttingDown": 10,
    "notPermitted": 11,
    "invalidPosture": 12,
    "unknownDevice": 13,
    "resumeRejected": 14,
    "rejected": 15,
    "duplicateHello": 16,
    "internalError": 17,
}
ERROR_NAMES = {code: name for name, code in ERROR_CODES.items()}


class WireError(Exception):
    """A protocol error; `name` is the PROTOCOL.md §6 name (e.g. "checksumMismatch"), `code` its number."""

    def __init__(self, name, message=""):
        super().__init__("%s: %s" % (name, message) if message else name)
        self.name = name
        self.code = ERROR_CODES[name]
        self.message = message


def json_body(obj):
    """The canonical body encoding: keys sorted, no insignificant whitespace, UTF-8."""
    if obj is None:
        return b""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class Frame:
    __slots__ = ("type", "flags", "sequence", "topic", "body")

    def __init__(self, type, body=b"", topic="", sequence=0, flags=0):
        if isinstance(type, str):
            type = FRAME_TYPES[type]
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.topic = topic
        self.body = body if isinstance(body, (bytes, bytearray)) else json_body(body)

    @property
    def type_name(self):
        return FRAME_NAMES.get(self.type, "0x%02x" % self.type)

    def json(self):
        """The body as a JSON object ({} for an empty body). Raises WireError(invalidBody) if it is not one."""
        if not self.body:
            return {}
        try:
            value = json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise WireError("invalidBody", "%s body is not JSON: %s" % (self.type_name, error))
        if not isinstance(value, dict):
            raise WireError("invalidBody", "%s body is not a JSON object" % self.type_name)
        return value

    def encode(self):
        return encode_frame(self.type, self.body, self.topic, self.sequence, self.flags)

    def __eq__(self, other):
        return isinstance(other, Frame) and (self.type, self.flags, self.sequence, self.topic, bytes(self.body)) == (
            other.type, other.flags, other.sequence, other.topic, bytes(other.body))

    def __repr__(self):
        return "Frame(%s, flags=%d, seq=%d, topic=%r, body=%r)" % (
            self.type_name, self.flags, self.sequence, self.topic, bytes(self.body)[:80])


def encode_frame(type, body=b"", topic="", sequence=0, flags=0):
    """Encode one frame. `body` is bytes (sent as is) or a JSON-able object (canonical encoding)."""
    if isinstance(type, str):
        type = FRAME_TYPES[type]
    if not isinstance(body, (bytes, bytearray)):
        body = json_body(body)
    topic_bytes = topic.encode("utf-8")
    if len(topic_bytes) > MAX_TOPIC_LENGTH:
        raise WireError("invalidTopic", "topic of %d bytes; the limit is %d" % (len(topic_bytes), MAX_TOPIC_LENGTH))
    if flags & ~KNOWN_FLAGS:
        raise WireError("malformedFrame", "unknown flag bits 0x%x" % flags)
    length = 20 + len(topic_bytes) + len(body)
    if length + 4 > MAX_FRAME_SIZE:
        raise WireError("frameTooLarge", "frame of %d bytes; the limit is %d" % (length + 4, MAX_FRAME_SIZE))
    fixed = struct.pack(">BBHQHH", PROTOCOL_VERSION, type, flags, sequence, len(topic_bytes), 0)
    crc = zlib.crc32(body, zlib.crc32(topic_bytes, zlib.crc32(fixed))) & 0xFFFFFFFF
    return struct.pack(">I", length) + fixed + struct.pack(">I", crc) + topic_bytes + bytes(body)


def _check_length(length, max_frame_size):
    if length + 4 > max_frame_size:
        raise WireError("frameTooLarge", "frame of %d bytes announced; the limit is %d" % (length + 4, max_frame_size))
    if length + 4 < HEADER_SIZE:
        raise WireError("malformedFrame", "frame of %d bytes announced; a header is %d" % (length + 4, HEADER_SIZE))


def _decode_whole(data):
    """Decode one complete frame (`data` is exactly length + 4 bytes, length already checked)."""
    version, type_byte, flags, sequence, topic_length, reserved, crc = struct.unpack_from(">BBHQHHI", data, 4)
    if version != PROTOCOL_VERSION:
        raise WireError("unsupportedVersion", "frame version %d; this client speaks %d" % (version, PROTOCOL_VERSION))
    if type_byte not in FRAME_NAMES:
        raise WireError("unknownFrameType", "frame type 0x%02x" % type_byte)
    if flags & ~KNOWN_FLAGS:
        raise WireError("malformedFrame", "unknown flag bits 0x%04x" % flags)
    if reserved != 0:
        raise WireError("malformedFrame", "reserved field is 0x%04x, must be 0" % reserved)
    if topic_length > MAX_TOPIC_LENGTH or HEADER_SIZE + topic_length > len(data):
        raise WireError("malformedFrame", "topic length %d runs past the frame" % topic_length)
    actual = zlib.crc32(data[HEADER_SIZE:], zlib.crc32(data[4:20])) & 0xFFFFFFFF
    if actual != crc:
        raise WireError("checksumMismatch", "CRC-32 is 0x%08x, the frame says 0x%08x" % (actual, crc))
    try:
        topic = bytes(data[HEADER_SIZE:HEADER_SIZE + topic_length]).decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("malformedFrame", "topic is not UTF-8")
    return Frame(type_byte, bytes(data[HEADER_SIZE + topic_length:]), topic, sequence, flags)


def decode_frame(data, max_frame_size=MAX_FRAME_SIZE):
    """Decode exactly one frame from `data` (bytes). Raises WireError; trailing or missing bytes are malformed."""
    decoder = FrameDecoder(max_frame_size)
    frames = decoder.feed(data)
    if len(frames) != 1 or decoder.buffered:
        if not frames and not decoder.buffered:
            raise WireError("malformedFrame", "no bytes")
        raise WireError("malformedFrame", "expected exactly one whole frame")
    return frames[0]


class FrameDecoder:
    """Streaming decoder: feed it bytes in any pieces; it returns the whole frames in. After a WireError the
    stream is unusable (every error is fatal for the connection)."""

    def __init__(self, max_frame_size=MAX_FRAME_SIZE):
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()

    @property
    def buffered(self):
        return len(self._buffer)

    def feed(self, data):
        self._buffer += data
        frames = []
        while len(self._buffer) >= 4:
            (length,) = struct.unpack_from(">I", self._buffer, 0)
            _check_length(length, self.max_frame_size)  # before waiting for the rest
            if len(self._buffer) < length + 4:
                break
            whole = bytes(self._buffer[:length + 4])
            del self._buffer[:length + 4]
            frames.append(_decode_whole(whole))
        return frames
