/// Frame types of wire protocol v2 (the same as v1). Raw values are the type byte in the header (`Protocol/PROTOCOL.md` §3).
public enum FrameType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Client → daemon: first frame of a connection; versions, client name, device, posture, app state, resume.
    case hello = 0x01
    /// Daemon → client: chosen version, session id, resume token, server time.
    case welcome = 0x02
    /// Client → daemon: start receiving events of topics matching patterns.
    case subscribe = 0x03
    /// Client → daemon: stop receiving events of topics matching patterns.
    case unsubscribe = 0x04
    /// Publisher → daemon: a new state for a topic; answered by ACK once durable.
    case publish = 0x05
    /// Daemon → client: a topic's event with its per-topic sequence number.
    case event = 0x06
    /// Acknowledgement: daemon → publisher (publish durable), client → daemon (event applied).
    case ack = 0x07
    /// Clock probe request carrying the sender's transmit time.
    case ping = 0x08
    /// Clock probe answer carrying the four timestamps' first three.
    case pong = 0x09
    /// An error with a numeric code and a reason; fatal ones are followed by close.
    case error = 0x0A
    /// Orderly goodbye with a reason.
    case bye = 0x0B
    /// Client → daemon: posture or app-state change.
    case posture = 0x0C
    /// Client → daemon: resend events of a topic after a gap (from sequence, inclusive).
    case resend = 0x0D
    /// Daemon → client: a catch-up (replay or snapshot) is complete; live events follow.
    case upToDate = 0x0E
    /// Client → daemon: a command (status, order, push, fault…); answered by RESULT.
    case command = 0x10
    /// Daemon → client: the answer to a COMMAND.
    case result = 0x11
    /// Daemon → client: the daemon's sync state with its federation (`live`, `degraded`, `catchingUp`); sent only to
    /// a client whose HELLO `features` lists `sync` (PROTOCOL.md §5.9).
    case sync = 0x12

    public var description: String {
        switch self {
        case .hello: "HELLO"
        case .welcome: "WELCOME"
        case .subscribe: "SUBSCRIBE"
        case .unsubscribe: "UNSUBSCRIBE"
        case .publish: "PUBLISH"
        case .event: "EVENT"
        case .ack: "ACK"
        case .ping: "PING"
        case .pong: "PONG"
        case .error: "ERROR"
        case .bye: "BYE"
        case .posture: "POSTURE"
        case .resend: "RESEND"
        case .upToDate: "UPTODATE"
        case .command: "COMMAND"
        case .result: "RESULT"
        case .sync: "SYNC"
        }
    }
}

/// Header flag bits (`Protocol/PROTOCOL.md` §2).
public struct FrameFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// The EVENT is a replay from the log during a catch-up.
    public static let replay = FrameFlags(rawValue: 1 << 0)
    /// The EVENT is a snapshot of the latest retained state (the log no longer covered the gap).
    public static let snapshot = FrameFlags(rawValue: 1 << 1)
    /// The EVENT is a terminal event (delivered, canceled, end); it is never coalesced away.
    public static let terminal = FrameFlags(rawValue: 1 << 2)

    /// The EVENT repeats the session's latest sequence with its instants converted again for the client's clock
    /// (after a clock step, a better estimate, or drift); content is unchanged.
    public static let reconvert = FrameFlags(rawValue: 1 << 3)

    /// Every bit v2 defines; others must be zero.
    public static let known: FrameFlags = [.replay, .snapshot, .terminal, .reconvert]
}

/// One frame: a fixed header, a topic, a body and, for EVENT, the per-session trailer.
///
/// Layout (big-endian, `Protocol/PROTOCOL.md` §2): `length u32 | version u8 | type u8 | flags u16 |
/// sequence u64 | topicLength u16 | trailerLength u16 | crc32 u32 | topic | body | trailer`. `length` counts every
/// byte after itself; the CRC-32 covers bytes 4–19 and everything after the CRC field.
public struct Frame: Sendable, Hashable {
    /// The version this codec writes.
    public static let version: UInt8 = 2
    /// Every protocol version this codec speaks (HELLO `versions`, WELCOME `version`).
    public static let supportedVersions: [Int] = [2]
    /// Bytes before the topic, including the length field.
    public static let headerSize = 24
    /// Default and hard maximum of a whole frame (length field included), in bytes: 64 KiB.
    public static let maximumSize = 65536
    /// Longest topic, in UTF-8 bytes.
    public static let maximumTopicLength = 255

    /// The frame type.
    public var type: FrameType
    /// Header flags.
    public var flags: FrameFlags
    /// EVENT: the topic's sequence number (1, 2, …). PUBLISH/ACK/COMMAND/RESULT: a request id. Else 0.
    public var sequence: UInt64
    /// The topic (EVENT, PUBLISH, ACK, RESEND, UPTODATE) or empty.
    public var topic: String
    /// The body: UTF-8 JSON object, or empty. An EVENT's body is the same for every subscriber.
    public var body: [UInt8]
    /// EVENT only: the receiving session's converted instants (`nil` for every other type).
    public var trailer: EventTrailer?

    /// Creates a frame.
    public init(
        type: FrameType,
        flags: FrameFlags = [],
        sequence: UInt64 = 0,
        topic: String = "",
        body: [UInt8] = [],
        trailer: EventTrailer? = nil
    ) {
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.topic = topic
        self.body = body
        self.trailer = trailer
    }

    /// The encoded size of this frame, in bytes.
    public var encodedSize: Int {
        Frame.headerSize + topic.utf8.count + body.count + (trailer == nil ? 0 : EventTrailer.size)
    }

    /// Appends the encoded frame to `buffer`.
    ///
    /// - Throws: ``WireError`` `frameTooLarge` when the frame exceeds ``maximumSize``, `invalidTopic` when the topic
    ///   is longer than ``maximumTopicLength``, `malformedFrame` when an EVENT has no trailer or another type has one.
    public func encode(into buffer: inout [UInt8]) throws(WireError) {
        try Frame.encode(
            type: type,
            flags: flags,
            sequence: sequence,
            topic: topic,
            body: body,
            trailer: trailer,
            into: &buffer
        )
    }

    /// The encoded frame.
    /// - Throws: ``WireError`` as ``encode(into:)``.
    public func encoded() throws(WireError) -> [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(encodedSize)
        try encode(into: &b)
        return b
    }

    /// Appends a frame without building a ``Frame`` first (no copy of the topic or the body).
    ///
    /// - Parameters:
    ///   - type: The frame type.
    ///   - flags: Header flags.
    ///   - sequence: The sequence or request id.
    ///   - topic: The topic, or empty.
    ///   - body: The encoded body.
    ///   - trailer: EVENT only: the per-session trailer.
    ///   - version: The version byte; ``version`` except for the ERROR that refuses a v1 peer's HELLO, which is
    ///     written in v1 framing so that the peer can read why (§4.1).
    ///   - buffer: Where the frame is appended.
    /// - Throws: ``WireError`` `frameTooLarge`, `invalidTopic` or `malformedFrame` (an EVENT without a trailer,
    ///   another type with one).
    public static func encode(
        type: FrameType,
        flags: FrameFlags = [],
        sequence: UInt64 = 0,
        topic: String = "",
        body: [UInt8] = [],
        trailer: EventTrailer? = nil,
        version: UInt8 = Frame.version,
        into buffer: inout [UInt8]
    ) throws(WireError) {
        var topic = topic
        let result: Result<Void, WireError> = topic.withUTF8 { t in
            body.withUnsafeBytes { b in
                do throws(WireError) {
                    try encode(
                        type: type,
                        flags: flags,
                        sequence: sequence,
                        topic: UnsafeRawBufferPointer(t),
                        body: b,
                        trailer: trailer,
                        version: version,
                        into: &buffer
                    )
                    return .success(())
                } catch { return .failure(error) }
            }
        }
        try result.get()
    }

    /// Appends the PONG that answers a PING frame (PROTOCOL.md §6, CLOCKSYNC.md §2): its `t1` echoed, `t2` and `t3`
    /// the responder's receive and send times (milliseconds since 1970, the responder's clock; a peer that keeps
    /// no clock of its own, an observer, echoes `t1` in both).
    /// - Parameters:
    ///   - ping: The PING frame.
    ///   - t2: When it was received, ms, responder's clock; `nil` echoes `t1`.
    ///   - t3: When the PONG is sent, ms, responder's clock; `nil` echoes `t1`.
    ///   - buffer: Where the PONG is appended.
    /// - Returns: `false`, appending nothing, when the PING's body is not `{"t1": N}`.
    @discardableResult
    public static func appendPong(answering ping: Frame, t2: Int64? = nil, t3: Int64? = nil, into buffer: inout [UInt8])
        -> Bool
    {
        guard let p = try? WireJSON.decode(PingBody.self, from: ping.body),
            let body = try? WireJSON.encode(PongBody(t1: p.t1, t2: t2 ?? p.t1, t3: t3 ?? p.t1)),
            (try? encode(type: .pong, body: body, into: &buffer)) != nil
        else { return false }
        return true
    }

    /// Appends a frame whose body is the concatenation of `bodyParts`, without joining them first.
    /// - Throws: ``WireError`` `frameTooLarge`, `invalidTopic` or `malformedFrame` (an EVENT: use
    ///   ``appendEvent(_:flags:trailer:into:)``).
    public static func encode(
        type: FrameType,
        flags: FrameFlags,
        sequence: UInt64,
        topic: [UInt8],
        bodyParts: [[UInt8]],
        into buffer: inout [UInt8]
    ) throws(WireError) {
        let body = bodyParts.count == 1 ? bodyParts[0] : bodyParts.flatMap { $0 }
        let result: Result<Void, WireError> = topic.withUnsafeBytes { t in
            body.withUnsafeBytes { b in
                do throws(WireError) {
                    try encode(
                        type: type,
                        flags: flags,
                        sequence: sequence,
                        topic: t,
                        body: b,
                        trailer: nil,
                        version: version,
                        into: &buffer
                    )
                    return .success(())
                } catch { return .failure(error) }
            }
        }
        try result.get()
    }

    static func encode(
        type: FrameType,
        flags: FrameFlags,
        sequence: UInt64,
        topic: UnsafeRawBufferPointer,
        body: UnsafeRawBufferPointer,
        trailer: EventTrailer?,
        version: UInt8,
        into buffer: inout [UInt8]
    ) throws(WireError) {
        guard topic.count <= maximumTopicLength else {
            throw WireError(.invalidTopic, "topic is \(topic.count) bytes; at most \(maximumTopicLength)")
        }
        guard (type == .event) == (trailer != nil) || version == 1 else {
            throw WireError(
                .malformedFrame,
                type == .event ? "an EVENT needs its per-session trailer" : "only an EVENT carries a trailer"
            )
        }
        let trailerLength = trailer == nil ? 0 : EventTrailer.size
        let total = headerSize + topic.count + body.count + trailerLength
        guard total <= maximumSize else {
            throw WireError(.frameTooLarge, "frame would be \(total) bytes; the limit is \(maximumSize)")
        }
        withUnsafeTemporaryAllocation(byteCount: headerSize + EventTrailer.size, alignment: 8) { scratch in
            let header = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<headerSize])
            let tail = UnsafeMutableRawBufferPointer(rebasing: scratch[headerSize...])
            writeHeader(
                header,
                length: total - 4,
                version: version,
                type: type,
                flags: flags,
                sequence: sequence,
                topicLength: topic.count,
                trailerLength: trailerLength
            )
            var crc = CRC32()
            crc.update(UnsafeRawBufferPointer(rebasing: header[4..<20]))
            crc.update(topic)
            crc.update(body)
            if let trailer {
                trailer.write(to: tail)
                crc.update(UnsafeRawBufferPointer(tail))
            }
            header.storeBytes(of: crc.value.bigEndian, toByteOffset: 20, as: UInt32.self)
            buffer.append(contentsOf: UnsafeRawBufferPointer(header))
            buffer.append(contentsOf: topic)
            buffer.append(contentsOf: body)
            if trailer != nil { buffer.append(contentsOf: UnsafeRawBufferPointer(tail)) }
        }
    }

    /// Writes bytes 0–19 of a header (everything but the CRC, which is zeroed).
    @inline(__always)
    static func writeHeader(
        _ h: UnsafeMutableRawBufferPointer,
        length: Int,
        version: UInt8,
        type: FrameType,
        flags: FrameFlags,
        sequence: UInt64,
        topicLength: Int,
        trailerLength: Int
    ) {
        h.storeBytes(of: UInt32(truncatingIfNeeded: length).bigEndian, toByteOffset: 0, as: UInt32.self)
        h[4] = version
        h[5] = type.rawValue
        h.storeBytes(of: flags.rawValue.bigEndian, toByteOffset: 6, as: UInt16.self)
        h.storeBytes(of: sequence.bigEndian, toByteOffset: 8, as: UInt64.self)
        h.storeBytes(of: UInt16(truncatingIfNeeded: topicLength).bigEndian, toByteOffset: 16, as: UInt16.self)
        h.storeBytes(of: UInt16(truncatingIfNeeded: trailerLength).bigEndian, toByteOffset: 18, as: UInt16.self)
        h.storeBytes(of: UInt32(0), toByteOffset: 20, as: UInt32.self)
    }
}

@inline(__always)
func appendBE<T: FixedWidthInteger>(_ v: T, to b: inout [UInt8]) {
    var be = v.bigEndian
    withUnsafeBytes(of: &be) { b.append(contentsOf: $0) }
}

@inline(__always)
func readBE<T: FixedWidthInteger>(_: T.Type, _ b: UnsafeRawBufferPointer, _ at: Int) -> T {
    var v: T = 0
    withUnsafeMutableBytes(of: &v) {
        $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[at..<(at + MemoryLayout<T>.size)]))
    }
    return T(bigEndian: v)
}

/// Whether the `count` bytes at `a` and `b` are the same, eight at a time.
@inline(__always)
func memcmpEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    var k = 0
    while k + 8 <= count {
        guard a.loadUnaligned(fromByteOffset: k, as: UInt64.self) == b.loadUnaligned(fromByteOffset: k, as: UInt64.self)
        else { return false }
        k += 8
    }
    while k < count {
        guard a.load(fromByteOffset: k, as: UInt8.self) == b.load(fromByteOffset: k, as: UInt8.self) else {
            return false
        }
        k += 1
    }
    return true
}

/// A streaming frame decoder: feed it bytes as they arrive, take out every complete frame.
///
/// Bytes may arrive in any pieces (one byte at a time, several frames at once). After a thrown error the
/// stream cannot be resynchronised: the connection must be closed (after sending ERROR).
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Largest frame accepted, in bytes (length field included).
    public let maximumFrameSize: Int
    /// The topic of the last frame that had one: a publisher's frames mostly repeat it, and a topic whose bytes are
    /// the same is this string again (no validation, no allocation of a new `String` per frame).
    private var lastTopic = ""

    /// Creates a decoder that rejects frames larger than `maximumFrameSize` bytes.
    public init(maximumFrameSize: Int = Frame.maximumSize) {
        self.maximumFrameSize = min(maximumFrameSize, Frame.maximumSize)
    }

    /// Bytes received but not yet part of a returned frame.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Appends received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfNeeded()
        buffer.append(contentsOf: bytes)
    }

    /// Appends received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        compactIfNeeded()
        buffer.append(contentsOf: bytes)
    }

    /// Gives the buffer's memory back when every byte received was returned as frames: a connection that is read
    /// rarely (an idle phone) holds no decoder memory between its reads; the next ``append(_:)`` allocates again.
    public mutating func releaseBufferIfEmpty() {
        guard readIndex == buffer.count, buffer.capacity > 0 else { return }
        buffer = []
        readIndex = 0
    }

    private mutating func compactIfNeeded() {
        if readIndex > 0 && (readIndex >= 65536 || readIndex == buffer.count) {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    /// The version byte of the last header read (`nil` before the first): the daemon answers a v1 peer's
    /// refused HELLO in v1 framing (PROTOCOL.md §4.1).
    public private(set) var lastVersionSeen: UInt8?

    /// Whether `s`'s UTF-8 bytes are `bytes` (a native string's bytes are compared in place).
    @inline(__always)
    static func sameBytes(_ s: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let same: Bool? = s.utf8.withContiguousStorageIfAvailable { u in
            guard u.count == bytes.count else { return false }
            guard let x = u.baseAddress, let y = bytes.baseAddress else { return u.isEmpty }
            return memcmpEqual(UnsafeRawPointer(x), y, u.count)
        }
        return same ?? false
    }

    /// The next complete frame, or `nil` when more bytes are needed.
    ///
    /// - Throws: ``WireError`` with code `frameTooLarge` (length field over the limit, checked before the body
    ///   arrives), `malformedFrame` (length below the header size, unknown flag bits, topic and trailer lengths past
    ///   the frame, a trailer length not allowed for the type, unknown trailer presence bits, topic not UTF-8),
    ///   `unsupportedVersion`, `unknownFrameType` or `checksumMismatch`.
    public mutating func next() throws(WireError) -> Frame? {
        let available = buffer.count - readIndex
        guard available >= 4 else { return nil }
        var seen: UInt8?
        let cachedTopic = lastTopic
        let result: Result<(Frame, Int)?, WireError> = buffer.withUnsafeBytes { raw in
            let b = UnsafeRawBufferPointer(rebasing: raw[readIndex...])
            let length = Int(readBE(UInt32.self, b, 0))
            if length + 4 > maximumFrameSize {
                return .failure(
                    WireError(
                        .frameTooLarge,
                        "frame of \(length + 4) bytes announced; the limit is \(maximumFrameSize)"
                    )
                )
            }
            if length + 4 < Frame.headerSize {
                return .failure(
                    WireError(
                        .malformedFrame,
                        "length field \(length) is shorter than the \(Frame.headerSize)-byte header"
                    )
                )
            }
            // Validate what we can as soon as the header is in, so garbage fails fast.
            guard available >= Frame.headerSize else { return .success(nil) }
            let version = b[4]
            seen = version
            guard version == Frame.version else {
                return .failure(
                    WireError(
                        .unsupportedVersion,
                        "frame version \(version); this side speaks version \(Frame.supportedVersions.map(String.init).joined(separator: ", "))"
                    )
                )
            }
            guard let type = FrameType(rawValue: b[5]) else {
                return .failure(
                    WireError(.unknownFrameType, "frame type 0x\(String(b[5], radix: 16)) is not defined in v2")
                )
            }
            let flags = FrameFlags(rawValue: readBE(UInt16.self, b, 6))
            guard FrameFlags.known.isSuperset(of: flags) else {
                return .failure(WireError(.malformedFrame, "unknown flag bits 0x\(String(flags.rawValue, radix: 16))"))
            }
            let sequence = readBE(UInt64.self, b, 8)
            let topicLength = Int(readBE(UInt16.self, b, 16))
            let trailerLength = Int(readBE(UInt16.self, b, 18))
            if type == .event {
                guard trailerLength >= EventTrailer.size else {
                    return .failure(
                        WireError(
                            .malformedFrame,
                            "EVENT trailer length \(trailerLength); v2 needs at least \(EventTrailer.size)"
                        )
                    )
                }
            } else if trailerLength != 0 {
                return .failure(
                    WireError(.malformedFrame, "\(type) has trailer length \(trailerLength); only EVENT has one")
                )
            }
            guard Frame.headerSize + topicLength + trailerLength <= length + 4 else {
                return .failure(
                    WireError(
                        .malformedFrame,
                        "topic length \(topicLength) and trailer length \(trailerLength) run past the frame"
                    )
                )
            }
            guard available >= length + 4 else { return .success(nil) }
            let expected = readBE(UInt32.self, b, 20)
            var crc = CRC32()
            crc.update(UnsafeRawBufferPointer(rebasing: b[4..<20]))
            crc.update(UnsafeRawBufferPointer(rebasing: b[24..<(length + 4)]))
            guard crc.value == expected else {
                return .failure(WireError(.checksumMismatch, "CRC-32 \(crc.value) does not match header \(expected)"))
            }
            let topicBytes = UnsafeRawBufferPointer(rebasing: b[24..<(24 + topicLength)])
            let topic: String
            if topicLength == 0 {
                topic = ""
            } else if Self.sameBytes(cachedTopic, topicBytes) {
                topic = cachedTopic
            } else if let t = String(validating: topicBytes, as: UTF8.self) {
                topic = t
            } else {
                return .failure(WireError(.malformedFrame, "topic is not valid UTF-8"))
            }
            let bodyEnd = length + 4 - trailerLength
            let body = [UInt8](UnsafeRawBufferPointer(rebasing: b[(24 + topicLength)..<bodyEnd]))
            var trailer: EventTrailer?
            if type == .event {
                do throws(WireError) {
                    trailer = try EventTrailer(
                        reading: UnsafeRawBufferPointer(rebasing: b[bodyEnd..<(bodyEnd + EventTrailer.size)])
                    )
                } catch { return .failure(error) }
            }
            let f = Frame(type: type, flags: flags, sequence: sequence, topic: topic, body: body, trailer: trailer)
            return .success((f, length + 4))
        }
        lastVersionSeen = seen ?? lastVersionSeen
        switch result {
        case .failure(let e): throw e
        case .success(let f):
            guard let (frame, size) = f else { return nil }
            readIndex += size
            if !frame.topic.isEmpty { lastTopic = frame.topic }
            return frame
        }
    }
}
