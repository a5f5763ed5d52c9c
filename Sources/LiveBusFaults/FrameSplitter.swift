/// Finds frame boundaries in a byte stream by the 4-byte big-endian length field (PROTOCOL.md §2), so that faults on
/// the upstream (bytes read in arbitrary pieces) can act on whole frames and never cut one in two.
///
/// The splitter must see the stream from its first byte (or from a point where no frame is partly read). When a
/// length field is out of range (`length + 4` under 24 or over 65 536 bytes) it gives up (`isLost`) and reports the
/// rest as unframed: the daemon's own decoder then reports the error to the client.
public struct FrameSplitter: Sendable, Equatable {
    /// Largest frame, header included, in bytes (PROTOCOL.md §2, the hard limit).
    public static let maximumFrameBytes = 65_536
    /// Smallest frame: the 24-byte header.
    public static let minimumFrameBytes = 24

    /// A run of bytes that belongs to one frame.
    public struct Segment: Sendable, Equatable {
        /// The bytes.
        public var bytes: ArraySlice<UInt8>
        /// True when the segment holds the frame's first byte.
        public var startsFrame: Bool
        /// True when the segment holds the frame's last byte.
        public var endsFrame: Bool
        /// False after the splitter lost the framing: the bytes are passed on unframed.
        public var isFramed: Bool
    }

    private var lengthBytes: [UInt8] = []
    private var remaining = 0

    /// True once a length field was out of range; every later byte is unframed.
    public private(set) var isLost = false

    /// A splitter at the start of a stream.
    public init() {}

    /// True between frames: no frame is partly seen.
    public var isAtBoundary: Bool { lengthBytes.isEmpty && remaining == 0 }

    /// Splits `bytes` into per-frame segments, in order; their concatenation is `bytes`.
    /// - Complexity: O(number of frames in `bytes`).
    public mutating func split(_ bytes: [UInt8]) -> [Segment] {
        var segments: [Segment] = []
        walk(bytes) { segments.append($0) }
        return segments
    }

    /// Advances over `bytes` without returning segments (for bytes that bypass the pipeline).
    public mutating func skip(_ bytes: [UInt8]) { walk(bytes) { _ in } }

    private mutating func walk(_ bytes: [UInt8], _ emit: (Segment) -> Void) {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if isLost {
                emit(Segment(bytes: bytes[i...], startsFrame: false, endsFrame: false, isFramed: false))
                return
            }
            let starts = isAtBoundary
            let start = i
            if lengthBytes.count < 4 {
                let take = min(4 - lengthBytes.count, bytes.endIndex - i)
                lengthBytes += bytes[i..<i + take]
                i += take
                if lengthBytes.count == 4 {
                    let total = lengthBytes.reduce(0) { $0 << 8 | Int($1) } + 4
                    guard (Self.minimumFrameBytes...Self.maximumFrameBytes).contains(total) else {
                        isLost = true
                        emit(Segment(bytes: bytes[start...], startsFrame: starts, endsFrame: false, isFramed: false))
                        return
                    }
                    remaining = total - 4
                }
            }
            if lengthBytes.count == 4 {
                let take = min(remaining, bytes.endIndex - i)
                i += take
                remaining -= take
            }
            let ends = lengthBytes.count == 4 && remaining == 0
            if ends { lengthBytes.removeAll() }
            emit(Segment(bytes: bytes[start..<i], startsFrame: starts, endsFrame: ends, isFramed: true))
        }
    }
}
