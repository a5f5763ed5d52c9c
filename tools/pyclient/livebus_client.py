#!/usr/bin/env python3
"""livebus-py: an independent LiveBus client (wire protocol v2), Python 3 standard library only.

Written from Protocol/PROTOCOL.md, Protocol/CLOCKSYNC.md and Protocol/vectors/frames.json alone; it shares no
code with the Swift client. It is both a library (FrameDecoder, encode_frame, OrderBook, SessionClient) and a
command line tool:

    python3 tools/pyclient/livebus_client.py attach --socket /tmp/bus.sock --clock-skew +90s --exit-when delivered

prints one JSON object per applied update on stdout (see README.md).
"""

import argparse
import json
import math
import os
import random
import re
import select
import signal
import socket
import stat
import struct
import sys
import threading
import time
import zlib

CLIENT_NAME = "livebus-py/0.1"
PROTOCOL_VERSION = 2
SUPPORTED_VERSIONS = [2]
HEADER_SIZE = 24
TRAILER_SIZE = 48  # an EVENT's per-session trailer (PROTOCOL.md §5.1)
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
    "SYNC": 0x12,  # sent only to a client whose HELLO features list "sync" (PROTOCOL.md §5.9)
}
FRAME_NAMES = {code: name for name, code in FRAME_TYPES.items()}

# The daemon's sync states a SYNC frame carries (PROTOCOL.md §5.9), and what this client asks for in HELLO.
DAEMON_SYNC_STATES = ("live", "degraded", "catchingUp")
HELLO_FEATURES = ["sync"]
# The topic patterns every session subscribes to (SUBSCRIBE after WELCOME, and `patterns` in a resume).
SUBSCRIBE_PATTERNS = ["orders/>"]
INSTANT_LIMIT_MS = 3155760000000  # ±100 years of 365.25 days around the epoch (PROTOCOL.md §3)


def decode_sync(body):
    """A SYNC body checked as the Swift codec checks it: `state` one of DAEMON_SYNC_STATES, `since` an instant
    (ms, client clock) within ±INSTANT_LIMIT_MS, `uncertaintyMs` 0…INSTANT_LIMIT_MS, `reason` absent, null or a
    string. Raises WireError (invalidBody / invalidValue) naming the field."""
    if not isinstance(body, dict):
        raise WireError("invalidBody", "SYNC body is not a JSON object")
    state = body.get("state")
    if state not in DAEMON_SYNC_STATES:
        raise WireError("invalidBody", "SYNC body: field 'state' is %r; expected one of %s"
                        % (state, ", ".join(DAEMON_SYNC_STATES)))
    for field, low in (("since", -INSTANT_LIMIT_MS), ("uncertaintyMs", 0)):
        value = body.get(field)
        if not isinstance(value, int) or isinstance(value, bool):
            raise WireError("invalidBody", "SYNC body: field '%s' should be an integer" % field)
        if not low <= value <= INSTANT_LIMIT_MS:
            raise WireError("invalidValue", "SYNC body: field '%s' is %d ms, outside %d…%d"
                            % (field, value, low, INSTANT_LIMIT_MS))
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise WireError("invalidBody", "SYNC body: field 'reason' should be a string")
    return {"state": state, "since": body["since"], "uncertaintyMs": body["uncertaintyMs"], "reason": reason}


def shown_sync_state(connection, daemon):
    """What the phone shows (PROTOCOL.md §5.3, §5.9): its connection's own state, unless it is connected
    (catchingUp or live) to a daemon whose last SYNC said degraded or catchingUp. `daemon` is None when no SYNC
    came on this connection (a daemon without federation is always live and sends none)."""
    if connection not in ("catchingUp", "live"):
        return connection
    if daemon in ("degraded", "catchingUp"):
        return daemon
    return connection


FLAG_REPLAY = 0x1
FLAG_SNAPSHOT = 0x2
FLAG_TERMINAL = 0x4
FLAG_RECONVERT = 0x8  # an EVENT re-sent for the last sequence with fresh `client` instants (§5.2, CLOCKSYNC.md §5)
KNOWN_FLAGS = FLAG_REPLAY | FLAG_SNAPSHOT | FLAG_TERMINAL | FLAG_RECONVERT

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
    "invalidValue": 18,
    "storeUnavailable": 19,
    "messageRateTooHigh": 20,
    "tooManySubscriptions": 21,
    "replyQueueFull": 22,
    "handshakeTimeout": 23,
    "idleTimeout": 24,
    "tooManyConnections": 25,
    "connectionsRefused": 26,
    "federationUnavailable": 30,
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


TRAILER_STALE = 0x1      # `present` bit: staleDate is set
TRAILER_DISMISSAL = 0x2  # `present` bit: dismissalDate is set


def encode_trailer(client):
    """The 48-byte EVENT trailer (PROTOCOL.md §5.1) of a `client` dict: timestamp, etaTarget, lastConfirmed,
    staleDate?, dismissalDate? (ms, client clock) and uncertaintyMs."""
    stale, dismissal = client.get("staleDate"), client.get("dismissalDate")
    present = (TRAILER_STALE if stale is not None else 0) | (TRAILER_DISMISSAL if dismissal is not None else 0)
    return struct.pack(">qqqqqIHH", client["timestamp"], client["etaTarget"], client["lastConfirmed"],
                       stale or 0, dismissal or 0, client["uncertaintyMs"], present, 0)


def decode_trailer(data):
    """The `client` dict of an EVENT trailer (its first 48 bytes; later bytes belong to later versions)."""
    if len(data) < TRAILER_SIZE:
        raise WireError("malformedFrame", "EVENT trailer of %d bytes; v2 needs %d" % (len(data), TRAILER_SIZE))
    timestamp, eta, confirmed, stale, dismissal, uncertainty, present, reserved = struct.unpack_from(
        ">qqqqqIHH", data, 0)
    if present & ~(TRAILER_STALE | TRAILER_DISMISSAL) or reserved:
        raise WireError("malformedFrame", "EVENT trailer: present bits 0x%x, reserved %d" % (present, reserved))
    client = {"timestamp": timestamp, "etaTarget": eta, "lastConfirmed": confirmed, "uncertaintyMs": uncertainty}
    if present & TRAILER_STALE:
        client["staleDate"] = stale
    if present & TRAILER_DISMISSAL:
        client["dismissalDate"] = dismissal
    return client


class Frame:
    """One frame. `trailer` is an EVENT's `client` dict (decoded from its trailer), None for other types."""
    __slots__ = ("type", "flags", "sequence", "topic", "body", "trailer")

    def __init__(self, type, body=b"", topic="", sequence=0, flags=0, trailer=None):
        if isinstance(type, str):
            type = FRAME_TYPES[type]
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.topic = topic
        self.body = body if isinstance(body, (bytes, bytearray)) else json_body(body)
        self.trailer = trailer

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

    def event_body(self):
        """An EVENT's body with its trailer's instants as the `client` member (how the order book reads it)."""
        body = self.json()
        if self.trailer is not None:
            body["client"] = dict(self.trailer)
        return body

    def encode(self):
        return encode_frame(self.type, self.body, self.topic, self.sequence, self.flags, self.trailer)

    def __eq__(self, other):
        return isinstance(other, Frame) and (self.type, self.flags, self.sequence, self.topic, bytes(self.body),
                                             self.trailer) == (
            other.type, other.flags, other.sequence, other.topic, bytes(other.body), other.trailer)

    def __repr__(self):
        return "Frame(%s, flags=%d, seq=%d, topic=%r, body=%r)" % (
            self.type_name, self.flags, self.sequence, self.topic, bytes(self.body)[:80])


def encode_frame(type, body=b"", topic="", sequence=0, flags=0, trailer=None):
    """Encode one frame. `body` is bytes (sent as is) or a JSON-able object (canonical encoding). An EVENT needs
    `trailer`, its `client` dict (or the 48 trailer bytes); other types have none."""
    if isinstance(type, str):
        type = FRAME_TYPES[type]
    if not isinstance(body, (bytes, bytearray)):
        body = json_body(body)
    topic_bytes = topic.encode("utf-8")
    if len(topic_bytes) > MAX_TOPIC_LENGTH:
        raise WireError("invalidTopic", "topic of %d bytes; the limit is %d" % (len(topic_bytes), MAX_TOPIC_LENGTH))
    if flags & ~KNOWN_FLAGS:
        raise WireError("malformedFrame", "unknown flag bits 0x%x" % flags)
    if (type == FRAME_TYPES["EVENT"]) != (trailer is not None):
        raise WireError("malformedFrame", "an EVENT needs a trailer; other frames have none")
    tail = b"" if trailer is None else (bytes(trailer) if isinstance(trailer, (bytes, bytearray))
                                        else encode_trailer(trailer))
    length = 20 + len(topic_bytes) + len(body) + len(tail)
    if length + 4 > MAX_FRAME_SIZE:
        raise WireError("frameTooLarge", "frame of %d bytes; the limit is %d" % (length + 4, MAX_FRAME_SIZE))
    fixed = struct.pack(">BBHQHH", PROTOCOL_VERSION, type, flags, sequence, len(topic_bytes), len(tail))
    crc = zlib.crc32(tail, zlib.crc32(body, zlib.crc32(topic_bytes, zlib.crc32(fixed)))) & 0xFFFFFFFF
    return struct.pack(">I", length) + fixed + struct.pack(">I", crc) + topic_bytes + bytes(body) + tail


def _check_length(length, max_frame_size):
    if length + 4 > max_frame_size:
        raise WireError("frameTooLarge", "frame of %d bytes announced; the limit is %d" % (length + 4, max_frame_size))
    if length + 4 < HEADER_SIZE:
        raise WireError("malformedFrame", "frame of %d bytes announced; a header is %d" % (length + 4, HEADER_SIZE))


def _decode_whole(data, known_flags=KNOWN_FLAGS):
    """Decode one complete frame (`data` is exactly length + 4 bytes, length already checked)."""
    version, type_byte, flags, sequence, topic_length, trailer_length, crc = struct.unpack_from(">BBHQHHI", data, 4)
    if version != PROTOCOL_VERSION:
        raise WireError("unsupportedVersion", "frame version %d; this client speaks %d" % (version, PROTOCOL_VERSION))
    if type_byte not in FRAME_NAMES:
        raise WireError("unknownFrameType", "frame type 0x%02x" % type_byte)
    if flags & ~known_flags:
        raise WireError("malformedFrame", "unknown flag bits 0x%04x" % flags)
    is_event = type_byte == FRAME_TYPES["EVENT"]
    if is_event and trailer_length < TRAILER_SIZE:
        raise WireError("malformedFrame", "EVENT trailer length %d; v2 needs at least %d" % (trailer_length,
                                                                                             TRAILER_SIZE))
    if not is_event and trailer_length != 0:
        raise WireError("malformedFrame", "trailer length %d on a %s" % (trailer_length, FRAME_NAMES[type_byte]))
    if topic_length > MAX_TOPIC_LENGTH or HEADER_SIZE + topic_length + trailer_length > len(data):
        raise WireError("malformedFrame", "topic length %d and trailer length %d run past the frame" % (
            topic_length, trailer_length))
    actual = zlib.crc32(data[HEADER_SIZE:], zlib.crc32(data[4:20])) & 0xFFFFFFFF
    if actual != crc:
        raise WireError("checksumMismatch", "CRC-32 is 0x%08x, the frame says 0x%08x" % (actual, crc))
    try:
        topic = bytes(data[HEADER_SIZE:HEADER_SIZE + topic_length]).decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("malformedFrame", "topic is not UTF-8")
    body_end = len(data) - trailer_length
    trailer = decode_trailer(data[body_end:]) if is_event else None
    return Frame(type_byte, bytes(data[HEADER_SIZE + topic_length:body_end]), topic, sequence, flags, trailer)


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

    def __init__(self, max_frame_size=MAX_FRAME_SIZE, known_flags=KNOWN_FLAGS):
        self.max_frame_size = max_frame_size
        self.known_flags = known_flags
        self._buffer = bytearray()
        self.error = None

    @property
    def buffered(self):
        return len(self._buffer)

    def feed(self, data):
        """Returns the whole frames now in. A bad frame raises WireError; whole frames decoded before it in the
        same call are returned first and the error is raised by the next call (`error` holds it meanwhile)."""
        if self.error is not None:
            raise self.error
        self._buffer += data
        frames = []
        try:
            while len(self._buffer) >= 4:
                (length,) = struct.unpack_from(">I", self._buffer, 0)
                _check_length(length, self.max_frame_size)  # before waiting for the rest
                if len(self._buffer) < length + 4:
                    break
                whole = bytes(self._buffer[:length + 4])
                del self._buffer[:length + 4]
                frames.append(_decode_whole(whole, self.known_flags))
        except WireError as error:
            self.error = error
            if not frames:
                raise
        return frames


# ---------------------------------------------------------------------------------------------------------------
# The simulated phone clock (CLOCKSYNC.md §1: the client clock may be off and drift)


class SimClock:
    """The phone's wall clock: the host's clock plus `skew_ms`, running `drift_ppm` fast (negative: slow) from
    the moment it is made, and steppable. Reads truncate to whole ms (CLOCKSYNC.md §1)."""

    def __init__(self, skew_ms=0, drift_ppm=0.0, source=time.time):
        self._source = source
        self._origin = source()
        self.skew_ms = float(skew_ms)
        self.drift_ppm = float(drift_ppm)

    def now_ms(self):
        real = self._source()
        elapsed_ms = (real - self._origin) * 1000.0
        return int(real * 1000.0 + self.skew_ms + elapsed_ms * self.drift_ppm / 1e6)

    def step(self, delta_ms):
        self.skew_ms += delta_ms


# ---------------------------------------------------------------------------------------------------------------
# Per-topic sync and Live Activity content rules (PROTOCOL.md §5.2)


class TopicState:
    __slots__ = ("last", "held", "resend_from", "last_timestamp", "ended", "record", "stale_date",
                 "stale_reported", "uptodate")

    def __init__(self, last=0):
        self.last = last              # last sequence applied (sequence rule)
        self.held = {}                # sequence -> (flags, body): events ahead of a gap
        self.resend_from = None       # the RESEND outstanding for this topic, if any
        self.last_timestamp = None    # server `timestamp` of the last applied content (Apple's rule)
        self.ended = False            # an `end` was applied: nothing after it
        self.record = None            # the last log record written for an applied update
        self.stale_date = None        # client-clock stale date of the shown content
        self.stale_reported = False
        self.uptodate = None          # sequence of the last UPTODATE on this topic


def _order_of(topic):
    return topic.split("/", 1)[1] if topic.startswith("orders/") and "/" in topic else topic


class OrderBook:
    """What one phone shows: the sequence rules and Apple's content rules, without any I/O.

    `on_event` returns (records, resends): the log records to write (one per event the sequence rules
    apply, with `applied` false and a `reason` when the content rules refuse it) and RESEND requests
    [(topic, fromSequence)] to send."""

    def __init__(self, session="", now_ms=None):
        self.session = session
        self.topics = {}
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.refreshed = 0  # re-converted copies of applied events taken (fresh client instants)

    def topic(self, topic):
        state = self.topics.get(topic)
        if state is None:
            state = self.topics[topic] = TopicState()
        return state

    def last_sequences(self):
        return {topic: state.last for topic, state in self.topics.items() if state.last > 0}

    # -- events

    def on_event(self, topic, sequence, flags, body):
        state = self.topic(topic)
        records, resends = [], []
        if flags & FLAG_RECONVERT and sequence <= state.last:
            line = self._refresh(state, body) if sequence == state.last else None
            return ([line] if line else []), resends
        if flags & FLAG_SNAPSHOT:
            if sequence <= state.last:
                return records, resends  # older than what we show: a duplicate
            # the latest state as of `sequence`: supersedes everything in between
            state.held = {s: v for s, v in state.held.items() if s > sequence}
            if state.resend_from is not None and state.resend_from <= sequence:
                state.resend_from = None
            records.append(self._apply(topic, state, sequence, flags, body))
        elif sequence <= state.last:
            return records, resends  # a duplicate
        elif sequence == state.last + 1:
            records.append(self._apply(topic, state, sequence, flags, body))
        else:
            state.held[sequence] = (flags, body)
            if state.resend_from != state.last + 1:
                state.resend_from = state.last + 1
                resends.append((topic, state.last + 1))
            return records, resends
        # drain held events now in order
        while state.last + 1 in state.held:
            next_flags, next_body = state.held.pop(state.last + 1)
            records.append(self._apply(topic, state, state.last + 1, next_flags, next_body))
        if state.held:
            lowest = min(state.held)
            if lowest > state.last + 1 and state.resend_from != state.last + 1:
                state.resend_from = state.last + 1
                resends.append((topic, state.last + 1))
        elif state.resend_from is not None and state.resend_from <= state.last:
            state.resend_from = None
        return records, resends

    def on_uptodate(self, topic, sequence):
        """UPTODATE {"sequence": latest}: returns a RESEND request whenever we are still behind, even with later
        events held (the RESEND answering a gap may itself have been lost: the daemon's once-a-second UPTODATE is
        what asks again, PROTOCOL.md §5.4)."""
        state = self.topic(topic)
        if sequence < state.last:
            # the daemon's topic is behind what we applied: its history is not the one we followed (it lost its
            # state and numbers again from 1). Start the topic afresh and ask for all of it.
            state = self.topics[topic] = TopicState()
            state.uptodate = sequence
            state.resend_from = 1
            return [(topic, 1)] if sequence > 0 else []
        state.uptodate = sequence
        if sequence > state.last:
            state.resend_from = state.last + 1
            return [(topic, state.last + 1)]
        return []

    def pending(self):
        """True while some topic waits for a gap to be filled."""
        return any(state.held or state.resend_from is not None for state in self.topics.values())

    def _refresh(self, state, body):
        """A `reconvert` EVENT for the last applied sequence: the content stays, the `client` instants are new.
        Returns a {"type": "reconvert"} log record (as the Swift client writes one), or None when there is no
        shown update of that sequence (it was refused by Apple's rules)."""
        client = body.get("client")
        record = state.record
        if record is None or record["seq"] != state.last or not isinstance(client, dict):
            return None
        self.refreshed += 1
        if isinstance(client.get("etaTarget"), int):
            record["etaTarget"] = client["etaTarget"]
        if isinstance(client.get("uncertaintyMs"), int):
            record["uncertaintyMs"] = client["uncertaintyMs"]
        if not state.ended:
            stale = client.get("staleDate")
            state.stale_date = stale if isinstance(stale, int) else None
            state.stale_reported = False
        now = self.now_ms()
        line = dict(record)
        eta = line.get("etaTarget")
        line.update({"type": "reconvert", "delivery": "reconvert", "clientTime": now,
                     "remainingMs": max(0, eta - now) if isinstance(eta, int) else None,
                     "stale": bool(state.stale_date is not None and now >= state.stale_date)})
        return line

    def _apply(self, topic, state, sequence, flags, body):
        """Apply `sequence` (the sequence rules accept it) and make its log record."""
        state.last = sequence
        if state.resend_from is not None and state.resend_from <= sequence and not state.held:
            state.resend_from = None
        client = body.get("client") if isinstance(body.get("client"), dict) else {}
        content = body.get("contentState") if isinstance(body.get("contentState"), dict) else {}
        event = body.get("event")
        timestamp = body.get("timestamp")
        now = self.now_ms()
        reason = None
        if state.ended:
            reason = "afterEnd"
        elif event != "end" and state.last_timestamp is not None and isinstance(timestamp, int) \
                and timestamp < state.last_timestamp:
            reason = "olderTimestamp"
        applied = reason is None
        eta = client.get("etaTarget")
        stale_date = client.get("staleDate")
        if applied:
            if isinstance(timestamp, int):
                state.last_timestamp = timestamp if state.last_timestamp is None else max(timestamp,
                                                                                         state.last_timestamp)
            if event == "end":
                state.ended = True
            state.stale_date = stale_date if isinstance(stale_date, int) and event != "end" else None
            state.stale_reported = False
        delivery = "snapshot" if flags & FLAG_SNAPSHOT else "replay" if flags & FLAG_REPLAY else None
        record = {
            "type": "update",
            "session": self.session,
            "topic": topic,
            "order": _order_of(topic),
            "seq": sequence,
            "event": event,
            "status": content.get("status"),
            "etaTarget": eta,
            "remainingMs": max(0, eta - now) if isinstance(eta, int) else None,
            "stale": bool(applied and isinstance(stale_date, int) and now >= stale_date),
            "applied": applied,
            "reason": reason,
            "clientTime": now,
            "uncertaintyMs": client.get("uncertaintyMs"),
            "delivery": delivery,
        }
        if applied:
            state.record = record
            if record["stale"]:
                state.stale_reported = True
        return record

    # -- stale timer

    def next_stale_deadline(self):
        """The earliest client-clock stale date still to report, or None."""
        dates = [s.stale_date for s in self.topics.values()
                 if s.stale_date is not None and not s.stale_reported and not s.ended]
        return min(dates) if dates else None

    def due_stale(self):
        """Records {"type": "stale"} for every shown order whose stale date has passed (client clock)."""
        now = self.now_ms()
        records = []
        for topic, state in sorted(self.topics.items()):
            if state.ended or state.stale_reported or state.stale_date is None or state.record is None:
                continue
            if now >= state.stale_date:
                state.stale_reported = True
                record = dict(state.record)
                eta = record.get("etaTarget")
                record.update({"type": "stale", "stale": True, "clientTime": now,
                               "remainingMs": max(0, eta - now) if isinstance(eta, int) else None})
                records.append(record)
        return records

    def all_ended(self):
        return bool(self.topics) and all(state.ended for state in self.topics.values())


# ---------------------------------------------------------------------------------------------------------------
# Durations, postures and scripts (CLI words)

FOLD_STATES = ("flat", "half-opened", "folded")
ORIENTATIONS = ("portrait", "landscape")
APP_STATES = ("foreground", "background", "suspended", "terminated")
FOLD_ALIASES = {"book": "half-opened", "tabletop": "half-opened", "half": "half-opened", "open": "flat",
                "unfolded": "flat", "closed": "folded"}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration_ms(text):
    """'90s', '-1.5m', '+1h30m', '250ms' → int ms. The rule of every LiveBus client (README "Durations"): each number
    needs its unit (ms, s, m, h); a bare number is refused ("did you mean 500ms or 500s?"), only 0 needs none; a
    fraction of a millisecond is refused, not rounded."""
    original = str(text).strip()
    text = original
    sign = 1
    if text[:1] in "+-":
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        if float(text) == 0:
            return 0
        prefix = original[:1] if original[:1] in "+-" else ""
        raise ValueError("%r has no unit: did you mean %s%sms or %s%ss? (durations need ms, s, m or h)"
                         % (original, prefix, text, prefix, text))
    position, total = 0, 0.0
    scale = {"h": 3600000.0, "m": 60000.0, "s": 1000.0, "ms": 1.0}
    while position < len(text):
        match = _DURATION_PART.match(text, position)
        if not match:
            raise ValueError("not a duration: %r (use e.g. 90s, 500ms, 1m30s, +1h)" % text)
        total += float(match.group(1)) * scale[match.group(2)]
        position = match.end()
    if not text:
        raise ValueError("empty duration")
    if total != round(total):
        raise ValueError("%r is not a whole number of milliseconds; the smallest step is 1ms" % original)
    return int(round(sign * total))


def normalize_fold(word):
    word = FOLD_ALIASES.get(word, word)
    if word not in FOLD_STATES:
        raise ValueError("unknown posture %r (flat, half-opened, folded)" % word)
    return word


def parse_posture_script(text):
    """'2s:half-opened,4s:flat,6s:background,8s:landscape' → [(at_ms, kind, value)] sorted by time.
    kind is 'foldState', 'orientation' or 'appState' (the word says which)."""
    steps = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        if ":" not in item:
            raise ValueError("posture script item %r is not TIME:STATE" % item)
        at, word = item.split(":", 1)
        at_ms = parse_duration_ms(at)
        if at_ms < 0:
            raise ValueError("posture script time %r is negative" % at)
        word = word.strip()
        if word in ORIENTATIONS:
            steps.append((at_ms, "orientation", word))
        elif word in APP_STATES:
            steps.append((at_ms, "appState", word))
        else:
            steps.append((at_ms, "foldState", normalize_fold(word)))
    return sorted(steps, key=lambda step: step[0])


# ---------------------------------------------------------------------------------------------------------------
# The session client (a simulated phone)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3

# Fatal HELLO refusals that retrying cannot fix: the phone as described, or its resume, is refused (PROTOCOL.md
# §6, "A refused HELLO"). They end the client with exit 2 and the daemon's message, on the first
# connection and on every reconnect: a resume past --max-subscriptions (tooManySubscriptions, §5.3) would be
# refused again for the whole resume window. The same set as the Swift client's
# ClientSession.unretryableRefusals.
_INPUT_ERRORS = {"unknownDevice", "invalidPosture", "invalidBody", "invalidTopic", "notPermitted",
                 "unsupportedVersion", "duplicateHello", "handshakeRequired", "tooManySubscriptions"}
# `rejected` (a name in use, or reserved for a disconnected session) ends the client only before it was ever
# attached; after that it is retried with backoff: the reservation ends with the other session's resume window.
_REJECTED_UNTIL_ATTACHED = "rejected"


class SessionClient:
    """One simulated phone attached to livebusd. `run()` blocks until the client ends and returns an exit code
    (0 normal end, 2 refused as described, 3 daemon unreachable). Thread-safe controls for tests and scripts:
    `set_posture`, `drop_connection`, `step_clock`, `stop`."""

    def __init__(self, socket_path, name=None, device="iphone-16-pro", fold_state="flat", orientation="portrait",
                 app_state="foreground", window=None, os_version=None, clock=None, out=None, err=None,
                 reconnect=True, exit_when_delivered=False, duration_ms=None, posture_script=(),
                 send_acks=False, verbose=False, unreachable_after_ms=30000, hello_time_error_ms=0,
                 language="en"):
        self.socket_path = socket_path
        self.name = name
        self.device = device
        self.posture = {"foldState": normalize_fold(fold_state), "orientation": orientation}
        if window:
            self.posture["windowWidth"], self.posture["windowHeight"] = window
        self.app_state = app_state
        self.os_version = os_version
        self.clock = clock or SimClock()
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.reconnect = reconnect
        self.exit_when_delivered = exit_when_delivered
        self.duration_ms = duration_ms
        self.posture_script = list(posture_script)
        self.errors = []  # the `error` lines written to the log
        self.send_acks = send_acks
        self.verbose = verbose
        self.unreachable_after_ms = unreachable_after_ms
        self.hello_time_error_ms = hello_time_error_ms  # test hook: a HELLO clientTime off by this much
        self.language = language  # which `summary` text the verbose lines show (en or ko)

        self.book = OrderBook(name or "", self.clock.now_ms)
        self.records = []              # every record written, for tests
        self.sync_state = "connecting"  # what the phone shows (shown_sync_state)
        self.conn_state = "connecting"  # the connection's own state (never degraded)
        self.daemon_sync = None         # the last SYNC on this connection (decode_sync), None when none came
        self.last_live_ms = None       # client clock, when last live
        self.session_id = None
        self.resume_token = None
        self.connections = 0           # WELCOMEs received
        self.resumed_count = 0         # WELCOMEs with resumed: true
        self.frames_in = {}            # frame type name -> count
        self.resends_sent = []

        self._lock = threading.Lock()
        self._requests = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stopping = False
        self._sock = None
        self._welcomed_here = False  # a WELCOME on the current connection (set per connection by _serve)

    # -- thread-safe controls

    def _request(self, action):
        with self._lock:
            self._requests.append(action)
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def set_posture(self, fold_state=None, orientation=None, app_state=None, window=None):
        self._request(("posture", fold_state, orientation, app_state, window))

    def drop_connection(self):
        """Close the socket abruptly (a lost connection); the client reconnects and resumes."""
        self._request(("drop",))

    def step_clock(self, delta_ms):
        self._request(("step", delta_ms))

    def stop(self):
        self._request(("stop",))

    # -- output

    def _log(self, text):
        if self.verbose:
            self.err.write("livebus-py: %s\n" % text)
            self.err.flush()

    def _warn(self, text):
        self.err.write("livebus-py: %s\n" % text)
        self.err.flush()

    def _error(self, text):
        """An `error` line in the JSON log (PROTOCOL.md §10: with clientTime, as every line) and on stderr."""
        record = {"type": "error", "session": self.name or "", "message": text, "clientTime": self.clock.now_ms()}
        self.errors.append(record)  # not in self.records, which are what the phone shows
        self.out.write(json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.out.flush()
        self._warn(text)

    def _emit(self, record):
        self.records.append(record)
        self.out.write(json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.out.flush()

    def _set_sync(self, connection=None):
        """Sets the connection's state (when given) and writes a `sync` line when the shown state changes."""
        if connection is not None:
            self.conn_state = connection
        daemon = self.daemon_sync
        state = shown_sync_state(self.conn_state, daemon["state"] if daemon else None)
        if state != self.sync_state:
            if self.sync_state == "live" and state != "live":
                self.last_live_ms = self.clock.now_ms()
            self.sync_state = state
            # A `sync` line in the JSON log (PROTOCOL.md §10), as the Swift client writes one; e2e assertion
            # steps read it (E2E.md §2.4). Not in self.records, which are what the phone shows.
            record = {"type": "sync", "session": self.name or "", "state": state, "clientTime": self.clock.now_ms(),
                      "daemon": daemon["state"] if daemon else None, "since": daemon["since"] if daemon else None,
                      "reason": daemon["reason"] if daemon else None}
            self.out.write(json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
            self.out.flush()
            if state == "disconnected" and self.last_live_ms is not None:
                self._log("sync: disconnected (last live at %d, client clock)" % self.last_live_ms)
            elif daemon is not None and daemon["state"] != "live":
                self._log("sync: %s (daemon %s since %d, client clock)%s" % (
                    state, daemon["state"], daemon["since"], ": " + daemon["reason"] if daemon["reason"] else ""))
            else:
                self._log("sync: %s" % state)

    # -- sending

    def _send(self, type_name, body=None, topic="", sequence=0):
        data = encode_frame(type_name, body if body is not None else b"", topic, sequence)
        self._sock.sendall(data)

    def _hello(self):
        body = {"versions": SUPPORTED_VERSIONS, "client": CLIENT_NAME, "role": "session",
                "device": self.device, "posture": dict(self.posture), "appState": self.app_state,
                "features": list(HELLO_FEATURES)}
        if self.name:
            body["name"] = self.name
        if self.os_version:
            body["os"] = self.os_version
        if self.resume_token:
            # its patterns too: a daemon killed before it stored the SUBSCRIBE resumes an older record (§5.3)
            body["resume"] = {"token": self.resume_token, "topics": self.book.last_sequences(),
                              "patterns": list(SUBSCRIBE_PATTERNS)}
        body["clientTime"] = self.clock.now_ms() + self.hello_time_error_ms  # as late as possible
        self._send("HELLO", body)

    # -- the run loop

    def run(self):
        start = time.monotonic()
        self._start = start
        self._deadline = start + self.duration_ms / 1000.0 if self.duration_ms is not None else None
        self._script = list(self.posture_script)
        attempt = 0
        unreachable_since = None
        ever_connected = False
        try:
            while True:
                if self._stopping or self._past_deadline():
                    return EXIT_OK
                self._set_sync("connecting" if not ever_connected else "disconnected")
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(self.socket_path)
                except OSError as error:
                    sock.close()
                    if not ever_connected and not self.reconnect:
                        self._warn("cannot reach the daemon at %s: %s" % (self.socket_path, error.strerror))
                        return EXIT_UNREACHABLE
                    now = time.monotonic()
                    unreachable_since = unreachable_since or now
                    if not ever_connected or (now - unreachable_since) * 1000 >= self.unreachable_after_ms:
                        if not ever_connected and (now - unreachable_since) * 1000 < min(
                                1000, self.unreachable_after_ms):
                            pass  # a daemon just starting: a few quick tries
                        else:
                            self._warn("cannot reach the daemon at %s: %s" % (self.socket_path, error.strerror))
                            return EXIT_UNREACHABLE
                    attempt += 1
                    self._backoff(attempt)
                    continue
                problem = _peer_problem(sock, self.socket_path)
                if problem is not None:
                    sock.close()
                    self._warn(problem)
                    return EXIT_UNREACHABLE
                unreachable_since = None
                self._sock = sock
                outcome = self._serve()
                self._sock = None
                self._set_sync("disconnected")
                try:
                    sock.close()
                except OSError:
                    pass
                if outcome[0] == "welcomed":
                    ever_connected = True
                    attempt = 0
                    outcome = outcome[1]
                if outcome[0] == "exit":
                    return outcome[1]
                ever_connected = ever_connected or outcome[0] != "refused-first"
                if not self.reconnect:
                    self._set_sync("disconnected")
                    # As `livebus attach --no-reconnect`: the daemon's BYE ends it with 0; a connection lost without
                    # BYE (the daemon killed, a fault) is 3 with a message, never a silent 0.
                    if outcome[0] == "bye":
                        return EXIT_OK
                    if ever_connected:
                        self._warn("connection to the daemon lost without BYE")
                    return EXIT_UNREACHABLE
                if outcome[0] == "rejected-resume":
                    continue  # attach again at once as a new session
                attempt += 1
                self._backoff(attempt)
        finally:
            self._set_sync("disconnected")
            for end in (self._wake_r, self._wake_w):
                try:
                    end.close()
                except OSError:
                    pass

    def _past_deadline(self):
        return self._deadline is not None and time.monotonic() >= self._deadline

    def _backoff(self, attempt):
        """Exponential backoff with full jitter: 100 ms doubling, capped at 5 s (PROTOCOL.md §5.3)."""
        cap = min(5000.0, 100.0 * (2 ** min(attempt - 1, 16)))
        delay = random.uniform(0, cap) / 1000.0
        self._log("reconnecting in %d ms" % (delay * 1000))
        until = time.monotonic() + delay
        while not self._stopping:
            now = time.monotonic()
            if now >= until or self._past_deadline():
                return
            self._handle_requests(connected=False)
            self._run_timers(connected=False)
            ready, _, _ = select.select([self._wake_r], [], [], min(until - now, self._timer_timeout()))
            if ready:
                self._drain_wake()

    def _drain_wake(self):
        try:
            while self._wake_r.recv(512):
                pass
        except (BlockingIOError, OSError):
            pass

    def _timer_timeout(self):
        timeout = 0.25
        now = time.monotonic()
        if self._deadline is not None:
            timeout = min(timeout, max(0.0, self._deadline - now))
        if self._script:
            timeout = min(timeout, max(0.0, self._start + self._script[0][0] / 1000.0 - now))
        stale = self.book.next_stale_deadline()
        if stale is not None:
            timeout = min(timeout, max(0.0, (stale - self.clock.now_ms()) / 1000.0 + 0.001))
        return timeout

    def _run_timers(self, connected):
        for record in self.book.due_stale():
            self._emit(record)
        changed = False
        while self._script and time.monotonic() >= self._start + self._script[0][0] / 1000.0:
            _, kind, value = self._script.pop(0)
            if kind == "appState":
                self.app_state = value
            else:
                self.posture[kind] = value
            changed = True
        if changed:
            self._log("posture: %s, %s" % (json.dumps(self.posture, sort_keys=True), self.app_state))
            if connected:
                self._send("POSTURE", {"posture": dict(self.posture), "appState": self.app_state})

    def _handle_requests(self, connected):
        """Returns 'drop' or 'stop' when the connection must end."""
        with self._lock:
            requests, self._requests = self._requests, []
        verdict = None
        for request in requests:
            if request[0] == "posture":
                _, fold_state, orientation, app_state, window = request
                if fold_state:
                    self.posture["foldState"] = normalize_fold(fold_state)
                if orientation == "rotate":
                    self.posture["orientation"] = "landscape" if self.posture["orientation"] == "portrait" \
                        else "portrait"
                elif orientation:
                    self.posture["orientation"] = orientation
                if window:
                    self.posture["windowWidth"], self.posture["windowHeight"] = window
                if app_state:
                    self.app_state = app_state
                self._log("posture: %s, %s" % (json.dumps(self.posture, sort_keys=True), self.app_state))
                if connected:
                    self._send("POSTURE", {"posture": dict(self.posture), "appState": self.app_state})
            elif request[0] == "step":
                self.clock.step(request[1])
                self._log("clock stepped %+d ms" % request[1])
                # As iOS's significantTimeChangeNotification: the daemon probes at once (CLOCKSYNC.md §3).
                self._send("POSTURE", {"clockChanged": True})
            elif request[0] == "drop":
                verdict = verdict or "drop"
            elif request[0] == "stop":
                self._stopping = True
                verdict = "stop"
        return verdict

    def _serve(self):
        """One connection: HELLO … until it closes. Returns ('welcomed', inner) once a WELCOME came, else inner;
        inner is ('lost',), ('exit', code), ('rejected-resume',) or ('refused-first',)."""
        decoder = FrameDecoder()
        self._acks = {}
        welcomed = False
        self._welcomed_here = False  # a WELCOME on this connection: an ERROR before it refuses the HELLO
        self._catchup = None
        try:
            self._hello()
        except OSError as error:
            self._log("connection lost while saying HELLO: %s" % error)
            return ("lost",)

        def result(inner):
            return ("welcomed", inner) if welcomed else inner

        while True:
            try:
                verdict = self._handle_requests(connected=True)
                if verdict == "drop":
                    self._log("dropping the connection (asked to)")
                    self._sock.shutdown(socket.SHUT_RDWR)
                    return result(("lost",))
                if verdict == "stop" or self._past_deadline():
                    self._bye("client exit")
                    return result(("exit", EXIT_OK))
                self._run_timers(connected=True)
                if welcomed and self._check_live() and self.exit_when_delivered and self.book.all_ended():
                    self._bye("client exit")
                    return result(("exit", EXIT_OK))
                ready, _, _ = select.select([self._sock, self._wake_r], [], [], self._timer_timeout())
                if self._wake_r in ready:
                    self._drain_wake()
                if self._sock not in ready:
                    continue
                data = self._sock.recv(65536)
                if not data:
                    self._error("connection lost: the daemon closed the connection without BYE")
                    return result(("lost",))
                try:
                    frames = decoder.feed(data)
                except WireError:
                    frames = []
                received = self.clock.now_ms()
                for frame in frames:  # PONGs first: "at once, before other work" (CLOCKSYNC.md §2)
                    if frame.type == FRAME_TYPES["PING"]:
                        self._pong(frame, received)
                for frame in frames:
                    self.frames_in[frame.type_name] = self.frames_in.get(frame.type_name, 0) + 1
                    if frame.type == FRAME_TYPES["PING"]:
                        continue
                    outcome = self._on_frame(frame)
                    if outcome == "welcome":
                        welcomed = True
                    elif outcome is not None:
                        return result(outcome)
                self._flush_acks()
                if decoder.error is not None:
                    # a corrupted frame is repaired like a lost one: drop the connection and resume (§5.4)
                    self._warn("bad frame from the daemon (%s); reconnecting" % decoder.error)
                    return result(("lost",))
            except (ConnectionError, BrokenPipeError, OSError) as error:
                self._error("connection lost: %s" % error)
                return result(("lost",))

    def _flush_acks(self):
        acks, self._acks = self._acks, {}
        for topic, sequence in acks.items():
            self._send("ACK", b"", topic, sequence)

    def _pong(self, frame, t2):
        try:
            t1 = frame.json().get("t1")
        except WireError:
            return
        body = {"t1": t1, "t2": t2}
        body["t3"] = self.clock.now_ms()
        self._send("PONG", body)

    def _bye(self, reason):
        try:
            self._send("BYE", {"reason": reason})
        except OSError:
            pass

    def _on_frame(self, frame):
        name = frame.type_name
        try:
            body = frame.event_body() if name == "EVENT" else frame.json()
        except WireError as error:
            self._warn("ignoring %s: %s" % (name, error))
            return None
        if name == "WELCOME":
            self.session_id = body.get("session")
            self.resume_token = body.get("resumeToken") or self.resume_token
            self.book.session = body.get("name") or self.name or self.session_id or ""
            self.connections += 1
            self._welcomed_here = True
            resumed = bool(body.get("resumed"))
            self.resumed_count += int(resumed)
            self._log("welcome: session %s (%s)%s" % (self.session_id, self.book.session,
                                                        ", resumed" if resumed else ""))
            self._catchup = {"since": time.monotonic(), "expect": set(), "seen": set(), "uptodate": set()}
            for state in self.book.topics.values():
                state.resend_from = None  # the catch-up replays from our last sequences; UPTODATE re-checks
            if resumed:
                self._catchup["expect"] = set(self.book.last_sequences())
            else:
                self._send("SUBSCRIBE", {"patterns": list(SUBSCRIBE_PATTERNS)})
            self.daemon_sync = None  # a federated daemon says its state right after WELCOME; none means live
            self._set_sync("catchingUp")
            return "welcome"
        if name == "SYNC":
            # The daemon's federation state (PROTOCOL.md §5.9): shown over a live connection; the book is kept.
            try:
                self.daemon_sync = decode_sync(body)
            except WireError as error:
                self._warn("ignoring SYNC: %s" % error)
                return None
            self._set_sync()
            return None
        if name == "EVENT":
            if self._catchup is not None and self.conn_state == "catchingUp":
                self._catchup["seen"].add(frame.topic)
            records, resends = self.book.on_event(frame.topic, frame.sequence, frame.flags, body)
            for record in records:
                self._emit(record)
                if self.verbose and record["type"] == "update" and record["applied"]:
                    summary = (body.get("contentState") or {}).get("summary") or {}
                    text = summary.get(self.language) or summary.get("en") or record["status"]
                    self._log("%s #%d %s: %s, %d s left%s" % (record["order"], record["seq"], record["status"], text,
                                                             (record["remainingMs"] or 0) // 1000,
                                                             ", stale" if record["stale"] else ""))
                if self.send_acks and record["type"] == "update":
                    # ACKs are cumulative (PROTOCOL.md §5.4): one per topic per read, sent after the read's frames.
                    self._acks[frame.topic] = max(self._acks.get(frame.topic, 0), record["seq"])
            for topic, from_sequence in resends:
                self._resend(topic, from_sequence)
            return None
        if name == "UPTODATE":
            sequence = body.get("sequence")
            if frame.topic == "":
                # PROTOCOL.md §5.3: an UPTODATE with an empty topic closes a SUBSCRIBE's whole catch-up.
                if self._catchup is not None:
                    self._catchup["closed"] = True
                return None
            if isinstance(sequence, int):
                if self._catchup is not None:
                    self._catchup["uptodate"].add(frame.topic)
                for topic, from_sequence in self.book.on_uptodate(frame.topic, sequence):
                    self._resend(topic, from_sequence)
            return None
        if name == "ERROR":
            error_name = body.get("name")
            fatal = bool(body.get("fatal"))
            self._error("daemon error %s (%s): %s" % (error_name, body.get("code"), body.get("message")))
            if error_name == "resumeRejected":
                self.resume_token = None
                return ("rejected-resume",)
            # A refusal of this connection's HELLO (no WELCOME on it yet) that retrying cannot fix ends the client.
            refused_hello = fatal and not self._welcomed_here
            if refused_hello and (error_name in _INPUT_ERRORS
                                  or (error_name == _REJECTED_UNTIL_ATTACHED and self.connections == 0)):
                return ("exit", EXIT_USAGE)
            if fatal:
                return ("lost",)  # the daemon closes after a fatal ERROR; reconnect and resume
            return None
        if name == "BYE":
            self._log("daemon said bye: %s" % body.get("reason"))
            return ("bye",)
        return None  # ACK, RESULT, … are not for a session

    def _resend(self, topic, from_sequence):
        self.resends_sent.append((topic, from_sequence))
        self._log("RESEND %s from %d" % (topic, from_sequence))
        self._send("RESEND", {"fromSequence": from_sequence}, topic)

    def _check_live(self):
        """catchingUp → live once every topic we expect or saw has had its UPTODATE and no gap is open;
        with no topic at all, once the empty-topic UPTODATE closes the SUBSCRIBE (or after 300 ms of quiet from an
        older daemon). Returns True when live."""
        if self.conn_state == "live":
            if self.book.pending():
                self._set_sync("catchingUp")
                return False
            return True
        if self.conn_state != "catchingUp" or self._catchup is None:
            return False
        catchup = self._catchup
        waiting = (catchup["expect"] | catchup["seen"]) - catchup["uptodate"]
        if waiting or self.book.pending():
            return False
        if not catchup["uptodate"] and not catchup.get("closed") and time.monotonic() - catchup["since"] < 0.3:
            return False
        self._set_sync("live")
        self.last_live_ms = self.clock.now_ms()
        return True


# ---------------------------------------------------------------------------------------------------------------
# Control lines (--control stdin): a scenario runner or a person drives the phone


CONTROL_KEYS = {"f": "fold folded", "u": "fold flat", "h": "fold half-opened", "r": "rotate",
                "b": "app-state background", "g": "app-state foreground", "s": "step +30s", "q": "quit"}


def apply_control_line(client, line):
    """One control line: `fold flat|half-opened|folded`, `orientation portrait|landscape`, `rotate`,
    `window WxH`, `app-state foreground|background|suspended|terminated`, `step ±DURATION`, `drop`, `quit`, or
    the single keys of `livebus attach` (f u h r b g s q). Returns an error text or None."""
    words = line.strip().split()
    if not words:
        return None
    if len(words) == 1 and words[0] in CONTROL_KEYS:
        words = CONTROL_KEYS[words[0]].split()
    command, args = words[0], words[1:]
    try:
        if command in ("fold", "posture") and len(args) in (1, 2):
            orientation = args[1] if len(args) == 2 else None
            if orientation is not None and orientation not in ORIENTATIONS:
                return "unknown orientation %r" % orientation
            client.set_posture(fold_state=normalize_fold(args[0]), orientation=orientation)
        elif command == "orientation" and len(args) == 1 and args[0] in ORIENTATIONS:
            client.set_posture(orientation=args[0])
        elif command == "rotate" and not args:
            client.set_posture(orientation="rotate")
        elif command == "window" and len(args) == 1:
            client.set_posture(window=_window(args[0]))
        elif command in ("app-state", "appState") and len(args) == 1 and args[0] in APP_STATES:
            client.set_posture(app_state=args[0])
        elif command == "step" and len(args) == 1:
            client.step_clock(parse_duration_ms(args[0]))
        elif command == "drop" and not args:
            client.drop_connection()
        elif command == "quit" and not args:
            client.stop()
        else:
            return "unknown control line %r" % line.strip()
    except (ValueError, argparse.ArgumentTypeError) as error:
        return str(error)
    return None


def _read_control(client, stream):
    for line in stream:
        error = apply_control_line(client, line)
        if error:
            client._warn(error)


# ---------------------------------------------------------------------------------------------------------------
# Admin commands (PROTOCOL.md §8), for tests and scripts


def admin_command(socket_path, command, args=None, timeout=5.0):
    """Run one admin COMMAND (e.g. "status") and return the RESULT body ({"ok": …, "data"|"error": …})."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket_path)
        problem = _peer_problem(sock, socket_path)
        if problem is not None:
            raise PermissionError(problem)
        sock.sendall(encode_frame("HELLO", {"versions": SUPPORTED_VERSIONS, "client": CLIENT_NAME, "role": "admin",
                                            "clientTime": int(time.time() * 1000)}))
        sock.sendall(encode_frame("COMMAND", {"command": command, "args": args or {}}, sequence=1))
        decoder = FrameDecoder()
        while True:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("the daemon closed the connection before RESULT")
            for frame in decoder.feed(data):
                if frame.type == FRAME_TYPES["PING"]:
                    now = int(time.time() * 1000)
                    sock.sendall(encode_frame("PONG", {"t1": frame.json().get("t1"), "t2": now, "t3": now}))
                elif frame.type == FRAME_TYPES["ERROR"]:
                    raise WireError(frame.json().get("name", "internalError"), frame.json().get("message", ""))
                elif frame.type == FRAME_TYPES["RESULT"] and frame.sequence == 1:
                    try:
                        sock.sendall(encode_frame("BYE", {"reason": "client exit"}))
                    except OSError:
                        pass
                    return frame.json()
    finally:
        sock.close()


# ---------------------------------------------------------------------------------------------------------------
# Command line

USAGE_EPILOG = """\
output: one JSON object per line on stdout for each update the sequence rules apply:
  {"type": "update", "session", "topic", "order", "seq", "event", "status", "etaTarget", "remainingMs",
   "stale", "applied", "reason", "clientTime", "uncertaintyMs", "delivery"}
and {"type": "stale", ...same fields} when an order's stale date passes on the phone's clock, and
{"type": "reconvert", "delivery": "reconvert", ...} when the daemon re-sends the shown update's instants.
etaTarget and clientTime are ms since the Unix epoch on the phone's (skewed, drifting) clock.

signals: SIGINT/SIGTERM say BYE and exit 0; SIGUSR1 drops the connection (the client resumes);
SIGUSR2 steps the phone's clock +30 s (the daemon should detect the step and re-send converted instants).

exit codes: 0 normal end · 2 usage error, or the daemon refused the phone as described or its resume (on a
reconnect too: unknownDevice, tooManySubscriptions, …; its message printed) · 3 daemon unreachable

examples:
  livebus_client.py attach --socket /tmp/bus.sock --clock-skew +90s --exit-when delivered
  livebus_client.py attach --socket /tmp/bus.sock --device iphone-duo --posture half-opened \\
      --posture-script 2s:flat,4s:folded,6s:background --duration 10s
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write("%s: error: %s\n" % (self.prog, message))
        sys.exit(EXIT_USAGE)


def _private_directory_problem(path):
    """None when `path` is a real directory (not a link) of this user with no group/other bits, else why not."""
    try:
        st = os.lstat(path)
    except OSError:
        return "%s does not exist" % path
    if stat.S_ISLNK(st.st_mode):
        return "%s is a symbolic link, not a directory" % path
    if not stat.S_ISDIR(st.st_mode):
        return "%s is not a directory" % path
    if st.st_uid != os.getuid():
        return "%s is owned by uid %d, not by you (uid %d): another user may pose as your daemon" % (
            path, st.st_uid, os.getuid())
    if st.st_mode & 0o077:
        return "%s has mode %o, so other users can reach its socket (chmod 700 %s)" % (
            path, st.st_mode & 0o777, path)
    return None


def _default_socket():
    """PROTOCOL.md §1: $LIVEBUS_SOCKET, else $XDG_RUNTIME_DIR/livebus.sock when that directory is ours and 0700,
    else /tmp/livebus-<uid>/livebus.sock (the same rule as the Swift client's SocketPath.defaultPath)."""
    if os.environ.get("LIVEBUS_SOCKET"):
        return os.environ["LIVEBUS_SOCKET"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and _private_directory_problem(runtime) is None:
        return os.path.join(runtime, "livebus.sock")
    return "/tmp/livebus-%d/livebus.sock" % os.getuid()


def _peer_problem(sock, socket_path):
    """None when the process serving `sock` runs as this user or root (SO_PEERCRED), else why it is refused."""
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                             struct.calcsize("3i")))
    except OSError as error:
        return "cannot read the peer credentials of %s: %s" % (socket_path, error.strerror)
    if uid in (os.getuid(), 0):
        return None
    return ("%s is served by a process of uid %d, not by you (uid %d); nothing was sent to it. Start your own "
            "daemon or pass the --socket of yours" % (socket_path, uid, os.getuid()))


def _name_problem(name):
    """Why `name` cannot name a session (PROTOCOL.md §4.1), or None."""
    if not 1 <= len(name.encode()) <= 64 or re.search(r"\s", name):
        return "--name must be 1-64 characters without spaces"
    if name in ("all", "current"):
        return "--name '%s' is reserved: commands use it to address sessions" % name
    if re.fullmatch(r"s[0-9]+", name):
        return "--name '%s' has the form of a session id (s<digits>); choose another name" % name
    return None


def _window(text):
    match = re.fullmatch(r"(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)", text)
    if not match:
        raise argparse.ArgumentTypeError("window must be WxH in points, e.g. 402x874")
    width, height = (float(v) for v in match.groups())
    return (int(width) if width.is_integer() else width, int(height) if height.is_integer() else height)


def _duration_arg():
    def parse(text):
        try:
            return parse_duration_ms(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error))
    return parse


def _fold_arg(text):
    try:
        return normalize_fold(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error))


def _ppm_arg(text):
    """argparse type of --clock-drift: parts per million, bare or with the unit written out (50, -20ppm, +3.5ppm),
    as livebus attach --clock-drift takes it."""
    number = text[:-3] if text.endswith("ppm") else text
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or not -100000 <= value <= 100000:
        raise argparse.ArgumentTypeError(
            "'%s' is not a drift in ppm within -100000…100000: e.g. +50 or -20ppm" % text)
    return value


def _script_arg(text):
    try:
        return parse_posture_script(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error))


def build_parser():
    parser = _Parser(prog="livebus_client.py",
                     description="livebus-py: an independent LiveBus client (wire protocol v2), standard library "
                                 "only.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    attach = commands.add_parser(
        "attach", help="attach one simulated phone and log what it shows",
        description="Attach one simulated phone to livebusd: HELLO, SUBSCRIBE orders/>, answer every PING, apply "
                    "events in order, resume after a lost connection, say BYE on exit.",
        epilog=USAGE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    attach.add_argument("--socket", default=None, metavar="PATH",
                        help="the daemon's Unix socket (default $LIVEBUS_SOCKET, else $XDG_RUNTIME_DIR/livebus.sock, "
                             "when it is yours with mode 0700, else /tmp/livebus-<uid>/livebus.sock)")
    attach.add_argument("--name", default=None, metavar="N", help="session name (1-64 characters, no spaces)")
    attach.add_argument("--device", default="iphone-16-pro", metavar="ID",
                        help="device id from the catalog (default iphone-16-pro)")
    attach.add_argument("--posture", default="flat", type=_fold_arg, metavar="flat|half-opened|folded",
                        help="fold state (aliases: book, tabletop, half, open, unfolded, closed)")
    attach.add_argument("--orientation", default="portrait", choices=ORIENTATIONS)
    attach.add_argument("--window", default=None, type=_window, metavar="WxH", help="window size in points")
    attach.add_argument("--app-state", default="foreground", choices=APP_STATES)
    attach.add_argument("--os", default=None, metavar="VERSION", help="OS version, e.g. 27.1")
    attach.add_argument("--clock-skew", default=0, type=_duration_arg(), metavar="±DURATION",
                        help="the phone's clock offset with its unit (+90s, -1h, 500ms); a bare number is refused")
    attach.add_argument("--clock-drift", default=0.0, type=_ppm_arg, metavar="PPM",
                        help="the phone's clock rate error in ppm, bare or with its unit (+50, -20ppm; positive runs fast)")
    attach.add_argument("--posture-script", default=[], type=_script_arg, metavar="SCRIPT",
                        help="timed changes after attaching, e.g. 2s:half-opened,4s:flat,6s:background,8s:landscape")
    attach.add_argument("--exit-when", default=None, choices=("delivered",),
                        help="delivered: exit 0 once every order seen has ended and the client is live")
    attach.add_argument("--duration", default=None, type=_duration_arg(), metavar="DURATION",
                        help="exit 0 after this long, with its unit (30s, 500ms, 2m); a bare number is refused")
    attach.add_argument("--language", default="en", choices=("en", "ko"),
                        help="language of the order summaries shown with --verbose (the log is language-free)")
    attach.add_argument("--control", default=None, choices=("stdin",),
                        help="read control lines from stdin: fold STATE, orientation O, rotate, window WxH, "
                             "app-state S, step ±DURATION, drop, quit (or the keys f u h r b g s q)")
    attach.add_argument("--no-reconnect", action="store_true", help="end instead of reconnecting")
    attach.add_argument("--ack", action="store_true", help="send ACK {} for every applied event")
    attach.add_argument("--verbose", "-v", action="store_true", help="sync state and connection notes on stderr")
    return parser


_SIGNED_OPTIONS = ("--clock-skew", "--clock-drift")


def _join_signed_values(argv):
    """`--clock-skew -90s` → `--clock-skew=-90s` (argparse would take -90s for an option)."""
    joined, index = [], 0
    while index < len(argv):
        if argv[index] in _SIGNED_OPTIONS and index + 1 < len(argv):
            joined.append("%s=%s" % (argv[index], argv[index + 1]))
            index += 2
        else:
            joined.append(argv[index])
            index += 1
    return joined


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(_join_signed_values(list(sys.argv[1:] if argv is None else argv)))
    if args.command != "attach":
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    socket_path = args.socket or _default_socket()
    if len(socket_path.encode()) > 107:
        sys.stderr.write("livebus-py: socket path longer than 107 bytes: %s\n" % socket_path)
        return EXIT_USAGE
    if args.name is not None and _name_problem(args.name) is not None:
        sys.stderr.write("livebus-py: %s\n" % _name_problem(args.name))
        return EXIT_USAGE
    if args.socket is None and socket_path.startswith("/tmp/livebus-%d/" % os.getuid()):
        problem = _private_directory_problem(os.path.dirname(socket_path))
        if problem is not None and os.path.lexists(os.path.dirname(socket_path)):
            sys.stderr.write("livebus-py: %s\n" % problem)
            return EXIT_UNREACHABLE
    client = SessionClient(socket_path, name=args.name, device=args.device, fold_state=args.posture,
                           orientation=args.orientation, app_state=args.app_state, window=args.window,
                           os_version=args.os, clock=SimClock(args.clock_skew, args.clock_drift),
                           reconnect=not args.no_reconnect, exit_when_delivered=args.exit_when == "delivered",
                           duration_ms=args.duration, posture_script=args.posture_script, send_acks=args.ack,
                           verbose=args.verbose, language=args.language)
    signal.signal(signal.SIGINT, lambda *_: client.stop())
    signal.signal(signal.SIGTERM, lambda *_: client.stop())
    signal.signal(signal.SIGUSR1, lambda *_: client.drop_connection())
    signal.signal(signal.SIGUSR2, lambda *_: client.step_clock(30000))
    if args.control == "stdin":
        threading.Thread(target=_read_control, args=(client, sys.stdin), daemon=True).start()
    try:
        return client.run()
    except BrokenPipeError:  # stdout closed by the reader
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
