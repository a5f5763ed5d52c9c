import Synchronization

/// The per-session part of a v2 EVENT: its instants converted into the receiving client's clock and the
/// uncertainty of that conversion, as a fixed-layout trailer after the body (`Protocol/PROTOCOL.md` §5.1).
///
/// Layout (big-endian, 48 bytes): `timestamp i64 | etaTarget i64 | lastConfirmed i64 | staleDate i64 |
/// dismissalDate i64 | uncertaintyMs u32 | present u16 | reserved u16`. Instants are milliseconds since the Unix
/// epoch on the **client's clock**; `present` bit 0 says `staleDate` is set, bit 1 `dismissalDate` (an absent
/// instant is written as 0); other bits and `reserved` are 0.
public struct EventTrailer: Sendable, Hashable {
    /// Bytes of the v2 trailer.
    public static let size = 48

    /// The event timestamp, ms since the Unix epoch, client clock.
    public var timestamp: Int64
    /// The countdown target, ms, client clock.
    public var etaTarget: Int64
    /// When the backend last confirmed the status, ms, client clock.
    public var lastConfirmed: Int64
    /// The stale date, ms, client clock, if the event has one.
    public var staleDate: Int64?
    /// The dismissal date, ms, client clock, if the event has one.
    public var dismissalDate: Int64?
    /// Uncertainty of every converted instant, milliseconds (the clock estimate's error bound), 0…4 294 967 295.
    public var uncertaintyMs: UInt32

    /// Creates a trailer.
    public init(
        timestamp: Int64,
        etaTarget: Int64,
        lastConfirmed: Int64,
        staleDate: Int64?,
        dismissalDate: Int64?,
        uncertaintyMs: UInt32
    ) {
        self.timestamp = timestamp
        self.etaTarget = etaTarget
        self.lastConfirmed = lastConfirmed
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.uncertaintyMs = uncertaintyMs
    }

    /// Writes the 48 trailer bytes at the start of `raw` (which must hold at least ``size`` bytes).
    @inline(__always)
    public func write(to raw: UnsafeMutableRawBufferPointer) {
        precondition(raw.count >= Self.size)
        raw.storeBytes(of: timestamp.bigEndian, toByteOffset: 0, as: Int64.self)
        raw.storeBytes(of: etaTarget.bigEndian, toByteOffset: 8, as: Int64.self)
        raw.storeBytes(of: lastConfirmed.bigEndian, toByteOffset: 16, as: Int64.self)
        raw.storeBytes(of: (staleDate ?? 0).bigEndian, toByteOffset: 24, as: Int64.self)
        raw.storeBytes(of: (dismissalDate ?? 0).bigEndian, toByteOffset: 32, as: Int64.self)
        raw.storeBytes(of: uncertaintyMs.bigEndian, toByteOffset: 40, as: UInt32.self)
        let present: UInt16 = (staleDate == nil ? 0 : 1) | (dismissalDate == nil ? 0 : 2)
        raw.storeBytes(of: present.bigEndian, toByteOffset: 44, as: UInt16.self)
        raw.storeBytes(of: UInt16(0), toByteOffset: 46, as: UInt16.self)
    }

    /// Reads a trailer from its first ``size`` bytes (later bytes, from a later version, are not looked at).
    /// - Throws: ``WireError`` `malformedFrame` when fewer than 48 bytes are given, or unknown `present` bits or a
    ///   non-zero `reserved` field are set.
    public init(reading raw: UnsafeRawBufferPointer) throws(WireError) {
        guard raw.count >= Self.size else {
            throw WireError(.malformedFrame, "EVENT trailer is \(raw.count) bytes; v2 needs \(Self.size)")
        }
        func i64(_ at: Int) -> Int64 { Int64(bigEndian: raw.loadUnaligned(fromByteOffset: at, as: Int64.self)) }
        let present = UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 44, as: UInt16.self))
        let reserved = UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 46, as: UInt16.self))
        guard present & ~3 == 0, reserved == 0 else {
            throw WireError(
                .malformedFrame,
                "EVENT trailer: present bits 0x\(String(present, radix: 16)), reserved \(reserved); v2 defines bits 0-1 and reserved 0"
            )
        }
        self.init(
            timestamp: i64(0),
            etaTarget: i64(8),
            lastConfirmed: i64(16),
            staleDate: present & 1 != 0 ? i64(24) : nil,
            dismissalDate: present & 2 != 0 ? i64(32) : nil,
            uncertaintyMs: UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: 40, as: UInt32.self))
        )
    }

    /// Reads a trailer from `bytes` (at least ``size``). - Throws: as ``init(reading:)``.
    public init(bytes: [UInt8]) throws(WireError) {
        let r: Result<EventTrailer, WireError> = bytes.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try EventTrailer(reading: raw)) } catch { return .failure(error) }
        }
        self = try r.get()
    }

    /// The trailer's 48 bytes.
    public var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.size) { b, n in
            write(to: UnsafeMutableRawBufferPointer(b))
            n = Self.size
        }
    }
}

extension ClientInstantsBody {
    /// The instants of a trailer, as clients keep them in ``EventBody/client``.
    public init(_ t: EventTrailer) {
        self.init(
            timestamp: t.timestamp,
            etaTarget: t.etaTarget,
            staleDate: t.staleDate,
            dismissalDate: t.dismissalDate,
            lastConfirmed: t.lastConfirmed,
            uncertaintyMs: Int(t.uncertaintyMs)
        )
    }
}

/// What every subscriber's copy of one EVENT shares, encoded once per event: the topic and body bytes, the fixed
/// header fields and the CRC-32 of both. ``Frame/appendEvent(_:flags:trailer:into:)`` writes one delivery from it
/// with its per-session flags and trailer, without allocating and without reading the shared bytes for the CRC
/// again (`Protocol/PROTOCOL.md` §2, §5.1).
///
/// The checksum of a delivery is the plain CRC-32 of §2. CRC-32 is affine over GF(2): changing a header bit changes
/// the CRC of the header-and-shared-bytes prefix by a constant that depends only on the bit's position and the
/// prefix's length. So the template keeps the prefix's CRC with no flags set and, for each of the four flag bits,
/// that constant (computed with zlib's `crc32_combine_op`); a delivery XORs in the constants of its flags and
/// continues the CRC over its 48 trailer bytes.
/// - Complexity: building it is O(topic + body) (one copy, one CRC pass, four `crc32_combine_op`); each delivery is
///   O(topic + body) for the copy into the output buffer and O(48) for the checksum.
public struct EventTemplate: Sendable {
    /// The topic's sequence number of the event.
    public let sequence: UInt64
    /// Topic bytes followed by body bytes: frame bytes 24… up to the trailer.
    public let shared: [UInt8]
    /// Bytes of topic at the start of ``shared``.
    public let topicLength: Int
    /// CRC-32 of header bytes 4–19 with no flags set, then ``shared``: every delivery's checksum up to its trailer.
    public let prefixCRC: UInt32
    /// What each of flag bits 0–3 changes in ``prefixCRC`` when set.
    let flagTerms: (UInt32, UInt32, UInt32, UInt32)

    /// Size of every delivery of this event, in bytes (header, topic, body, trailer).
    public var frameSize: Int { Frame.headerSize + shared.count + EventTrailer.size }

    /// The body bytes (a JSON object without `client`).
    public var body: ArraySlice<UInt8> { shared[topicLength...] }

    /// The topic.
    public var topic: String { String(decoding: shared[..<topicLength], as: UTF8.self) }

    /// Builds the shared part of an event.
    /// - Parameters:
    ///   - topic: the topic (1–255 UTF-8 bytes; checked with ``Topic/validate(_:)`` by the caller).
    ///   - sequence: the topic's sequence number of this event.
    ///   - body: the encoded EVENT body (``EventJSON/encode(_:)``), the same for every subscriber.
    /// - Throws: ``WireError`` `invalidTopic` for a topic over 255 bytes. An event too large for one frame is
    ///   kept (it is stored like any other) and refused at each delivery with `frameTooLarge`.
    public init(topic: String, sequence: UInt64, body: some Collection<UInt8>) throws(WireError) {
        let t = topic.utf8.count
        guard t <= Frame.maximumTopicLength else {
            throw WireError(.invalidTopic, "topic is \(t) bytes; at most \(Frame.maximumTopicLength)")
        }
        let size = Frame.headerSize + t + body.count + EventTrailer.size
        // One allocation and two memcpys (the generic `append(contentsOf:)` went byte by byte here).
        var topic = topic
        let shared = topic.withUTF8 { tp in
            [UInt8](unsafeUninitializedCapacity: t + body.count) { out, n in
                _ = UnsafeMutableBufferPointer(rebasing: out[0..<t]).initialize(from: tp)
                let copied: Int? = body.withContiguousStorageIfAvailable { bp in
                    UnsafeMutableBufferPointer(rebasing: out[t...]).initialize(from: bp).1
                }
                if let copied {
                    n = t + copied
                } else {
                    n = t + UnsafeMutableBufferPointer(rebasing: out[t...]).initialize(from: body).1
                }
            }
        }
        self.sequence = sequence
        self.shared = shared
        self.topicLength = t
        var crc = CRC32()
        withUnsafeTemporaryAllocation(byteCount: Frame.headerSize, alignment: 8) { h in
            Frame.writeHeader(
                h,
                length: size - 4,
                version: Frame.version,
                type: .event,
                flags: [],
                sequence: sequence,
                topicLength: t,
                trailerLength: EventTrailer.size
            )
            crc.update(UnsafeRawBufferPointer(rebasing: h[4..<20]))
        }
        // The linear part of flipping flag bit b (header bytes 6–7) in a prefix of 16 + shared.count bytes: the
        // constant of the 16-byte message (``flagConstants``) carried past the shared bytes — one operator for the
        // length, then one multiplication per bit.
        // They depend only on the length: one publisher's bodies mostly share a few, so they come from a small cache.
        let terms = Self.flagTerms(sharedLength: shared.count)
        crc.update(shared)
        self.prefixCRC = crc.value
        self.flagTerms = terms
    }

    /// The four flag terms of a prefix of 16 + `sharedLength` bytes, from ``termCache`` or computed (one
    /// `crc32_combine_gen`, four `crc32_combine_op`: 3 k instructions, callgrind publish profile).
    static func flagTerms(sharedLength: Int) -> (UInt32, UInt32, UInt32, UInt32) {
        termCache.withLock { cache in
            let slot = sharedLength & (Self.termCacheSize - 1)
            if cache[slot].length == sharedLength { return cache[slot].terms }
            let op = CRC32.combineOperator(length: sharedLength)
            let k = Self.flagConstants
            let terms = (
                CRC32.combine(k.0, 0, operator: op), CRC32.combine(k.1, 0, operator: op),
                CRC32.combine(k.2, 0, operator: op), CRC32.combine(k.3, 0, operator: op)
            )
            cache[slot] = (sharedLength, terms)
            return terms
        }
    }

    /// Slots of ``termCache`` (a power of two): direct-mapped by the shared part's length.
    static let termCacheSize = 64
    /// Flag terms by shared length (`length` -1: empty slot); a lock, since templates are built on any thread.
    static let termCache = Mutex<[(length: Int, terms: (UInt32, UInt32, UInt32, UInt32))]>(
        Array(repeating: (-1, (0, 0, 0, 0)), count: termCacheSize)
    )

    /// For flag bits 0–3: CRC(E_b) ⊕ CRC(0¹⁶), where E_b is the 16 header bytes 4–19 with only that bit set (flags
    /// are the big-endian `u16` at bytes 6–7): what setting the bit changes in the CRC of those 16 bytes. Fixed by
    /// the layout of §2; `EventTemplateTests` recomputes them.
    @inline(__always)
    static var flagConstants: (UInt32, UInt32, UInt32, UInt32) { (0xDD96_D985, 0x605C_B54B, 0xC0B9_6A96, 0x5A03_D36D) }

    /// The CRC-32 of header bytes 4–19 with `flags` set, then ``shared``.
    @inline(__always)
    public func prefixCRC(flags: FrameFlags) -> UInt32 {
        let f = flags.rawValue
        var c = prefixCRC
        if f & 1 != 0 { c ^= flagTerms.0 }
        if f & 2 != 0 { c ^= flagTerms.1 }
        if f & 4 != 0 { c ^= flagTerms.2 }
        if f & 8 != 0 { c ^= flagTerms.3 }
        return c
    }
}

extension Frame {
    /// Bytes of stack scratch ``appendEvent(_:flags:trailer:into:)`` puts a frame together in (larger frames are
    /// appended in three pieces).
    static let eventScratchSize = 1024

    /// Appends one delivery of `event` to `buffer`: the header with this session's `flags`, the shared bytes and
    /// this session's `trailer`.
    ///
    /// The CRC-32 is the one of §2 (bytes 4–19, then topic, body and trailer): the template's precomputed CRC for
    /// these flags (``EventTemplate/prefixCRC(flags:)``), continued over the 48 trailer bytes.
    /// Nothing is allocated once `buffer` has the capacity (a reused output buffer).
    /// - Throws: ``WireError`` `frameTooLarge` when the event does not fit ``maximumSize`` (nothing is written),
    ///   `malformedFrame` for flag bits outside ``FrameFlags/known``.
    @inline(__always)
    public static func appendEvent(
        _ event: EventTemplate,
        flags: FrameFlags,
        trailer: EventTrailer,
        into buffer: inout [UInt8]
    ) throws(WireError) {
        guard event.frameSize <= maximumSize else {
            throw WireError(.frameTooLarge, "EVENT would be \(event.frameSize) bytes; the limit is \(maximumSize)")
        }
        guard FrameFlags.known.isSuperset(of: flags) else {
            throw WireError(.malformedFrame, "unknown flag bits 0x\(String(flags.rawValue, radix: 16))")
        }
        let size = event.frameSize
        if size <= Self.eventScratchSize {
            // The whole frame put together on the stack and appended in one piece: one capacity and uniqueness
            // check and one memcpy into the output, not three (callgrind, fan-out to 100 sessions).
            withUnsafeTemporaryAllocation(byteCount: Self.eventScratchSize, alignment: 8) { scratch in
                let sharedEnd = headerSize + event.shared.count
                event.shared.withUnsafeBytes { shared in
                    UnsafeMutableRawBufferPointer(rebasing: scratch[headerSize..<sharedEnd]).copyMemory(from: shared)
                }
                writeEnds(
                    header: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<headerSize]),
                    tail: UnsafeMutableRawBufferPointer(rebasing: scratch[sharedEnd..<size]),
                    event,
                    flags: flags,
                    trailer: trailer
                )
                buffer.append(
                    contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<size]).assumingMemoryBound(to: UInt8.self)
                )
            }
            return
        }
        withUnsafeTemporaryAllocation(byteCount: headerSize + EventTrailer.size, alignment: 8) { scratch in
            let header = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<headerSize])
            let tail = UnsafeMutableRawBufferPointer(rebasing: scratch[headerSize...])
            writeEnds(header: header, tail: tail, event, flags: flags, trailer: trailer)
            // Typed buffers: Array's append of these is one memcpy each.
            buffer.append(contentsOf: header.assumingMemoryBound(to: UInt8.self))
            event.shared.withUnsafeBufferPointer { buffer.append(contentsOf: $0) }
            buffer.append(contentsOf: tail.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Writes what differs per delivery of `event`, for both ways ``appendEvent(_:flags:trailer:into:)`` puts a
    /// frame together: the 24-byte header with `flags` into `header`, `trailer` into `tail` (its 48 bytes), and the
    /// CRC-32 (the template's for these flags continued over the trailer) into header bytes 20–23. Inlined: one
    /// body, no call per frame.
    @inline(__always)
    private static func writeEnds(
        header: UnsafeMutableRawBufferPointer,
        tail: UnsafeMutableRawBufferPointer,
        _ event: EventTemplate,
        flags: FrameFlags,
        trailer: EventTrailer
    ) {
        writeHeader(
            header,
            length: event.frameSize - 4,
            version: version,
            type: .event,
            flags: flags,
            sequence: event.sequence,
            topicLength: event.topicLength,
            trailerLength: EventTrailer.size
        )
        trailer.write(to: tail)
        var crc = CRC32(continuing: event.prefixCRC(flags: flags))
        crc.updateShort(UnsafeRawBufferPointer(tail))
        header.storeBytes(of: crc.value.bigEndian, toByteOffset: 20, as: UInt32.self)
    }
}
