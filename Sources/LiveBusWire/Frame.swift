/// Frame types of wire protocol v1. Raw values are the type byte in the header (`Protocol/PROTOCOL.md` §3).
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

    /// Every bit v1 defines; others must be zero.
    public static let known: FrameFlags = [.replay, .snapshot, .terminal, .reconvert]
}

/// One frame: a fixed header, a topic and a body.
///
/// Layout (big-endian): `length u32 | version u8 | type u8 | flags u16 | sequence u64 | topicLength u16 |
/// reserved u16 | crc32 u32 | topic | body`. `length` counts every byte after itself.
public struct Frame: Sendable, Hashable {
    /// The only version this codec speaks.
    public static let version: UInt8 = 1
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
    /// The body: UTF-8 JSON object, or empty.
    public var body: [UInt8]

    /// Creates a frame.
    public init(type: FrameType, flags: FrameFlags = [], sequence: UInt64 = 0, topic: String = "", body: [UInt8] = []) {
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.topic = topic
        self.body = body
    }

    /// The encoded size of this frame, in bytes.
    public var encodedSize: Int { Frame.headerSize + topic.utf8.count + body.count }

    /// Appends the encoded frame to `buffer`.
    ///
    /// - Throws: ``WireError`` `frameTooLarge` when the frame exceeds ``maximumSize``, `invalidTopic` when the topic
    ///   is longer than ``maximumTopicLength``.
    public func encode(into buffer: inout [UInt8]) throws(WireError) {
        try Frame.encode(
            type: type,
            flags: flags,
            sequence: sequence,
            topic: Array(topic.utf8),
            bodyParts: [body],
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

    /// Appends a frame whose body is the concatenation of `bodyParts`, without joining them first.
    ///
    /// Fan-out uses this to write one shared, already-encoded body prefix plus a small per-session suffix.
    /// - Throws: ``WireError`` `frameTooLarge` or `invalidTopic`.
    /// - Complexity: O(size of the frame): one pass for the CRC, one copy.
    public static func encode(
        type: FrameType,
        flags: FrameFlags,
        sequence: UInt64,
        topic: [UInt8],
        bodyParts: [[UInt8]],
        into buffer: inout [UInt8]
    ) throws(WireError) {
        guard topic.count <= maximumTopicLength else {
            throw WireError(.invalidTopic, "topic is \(topic.count) bytes; the limit is \(maximumTopicLength)")
        }
        var bodyCount = 0
        for p in bodyParts { bodyCount += p.count }
        let total = headerSize + topic.count + bodyCount
        guard total <= maximumSize else {
            throw WireError(.frameTooLarge, "frame would be \(total) bytes; the limit is \(maximumSize)")
        }
        let start = buffer.count
        appendBE(UInt32(total - 4), to: &buffer)
        buffer.append(version)
        buffer.append(type.rawValue)
        appendBE(flags.rawValue, to: &buffer)
        appendBE(sequence, to: &buffer)
        appendBE(UInt16(topic.count), to: &buffer)
        appendBE(UInt16(0), to: &buffer)
        var crc = CRC32()
        buffer.withUnsafeBytes { crc.update(UnsafeRawBufferPointer(rebasing: $0[(start + 4)..<(start + 20)])) }
        topic.withUnsafeBytes { crc.update($0) }
        for p in bodyParts { p.withUnsafeBytes { crc.update($0) } }
        appendBE(crc.value, to: &buffer)
        buffer.append(contentsOf: topic)
        for p in bodyParts { buffer.append(contentsOf: p) }
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

/// A streaming frame decoder: feed it bytes as they arrive, take out every complete frame.
///
/// Bytes may arrive in any pieces (one byte at a time, several frames at once). After a thrown error the
/// stream cannot be resynchronised: the connection must be closed (after sending ERROR).
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Largest frame accepted, in bytes (length field included).
    public let maximumFrameSize: Int

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

    private mutating func compactIfNeeded() {
        if readIndex > 0 && (readIndex >= 65536 || readIndex == buffer.count) {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    /// The next complete frame, or `nil` when more bytes are needed.
    ///
    /// - Throws: ``WireError`` with code `frameTooLarge` (length field over the limit, checked before the body
    ///   arrives), `malformedFrame` (length below the header size, reserved bits set, topic length past the frame,
    ///   topic not UTF-8), `unsupportedVersion`, `unknownFrameType` or `checksumMismatch`.
    public mutating func next() throws(WireError) -> Frame? {
        let available = buffer.count - readIndex
        guard available >= 4 else { return nil }
        let result: Result<Frame?, WireError> = buffer.withUnsafeBytes { raw in
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
            guard version == Frame.version else {
                return .failure(
                    WireError(.unsupportedVersion, "frame version \(version); this daemon speaks version 1")
                )
            }
            guard let type = FrameType(rawValue: b[5]) else {
                return .failure(
                    WireError(.unknownFrameType, "frame type 0x\(String(b[5], radix: 16)) is not defined in v1")
                )
            }
            let flags = FrameFlags(rawValue: readBE(UInt16.self, b, 6))
            guard FrameFlags.known.isSuperset(of: flags) else {
                return .failure(WireError(.malformedFrame, "unknown flag bits 0x\(String(flags.rawValue, radix: 16))"))
            }
            let sequence = readBE(UInt64.self, b, 8)
            let topicLength = Int(readBE(UInt16.self, b, 16))
            let reserved = readBE(UInt16.self, b, 18)
            guard reserved == 0 else {
                return .failure(WireError(.malformedFrame, "reserved header field is not zero"))
            }
            guard Frame.headerSize + topicLength <= length + 4 else {
                return .failure(WireError(.malformedFrame, "topic length \(topicLength) runs past the frame"))
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
            guard let topic = String(validating: topicBytes, as: UTF8.self) else {
                return .failure(WireError(.malformedFrame, "topic is not valid UTF-8"))
            }
            let body = [UInt8](UnsafeRawBufferPointer(rebasing: b[(24 + topicLength)..<(length + 4)]))
            return .success(Frame(type: type, flags: flags, sequence: sequence, topic: topic, body: body))
        }
        switch result {
        case .failure(let e): throw e
        case .success(let f):
            if let f { readIndex += f.encodedSize }
            return f
        }
    }
}
