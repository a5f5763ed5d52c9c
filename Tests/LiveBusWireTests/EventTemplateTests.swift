import LiveBusWire
import Testing

/// Encode once per event: the trailer, the template and the combined checksum (issue 15 item 3).
/// Source: Protocol/PROTOCOL.md §2 and §5.1; zlib's `crc32_combine_op` (zlib.h, 1.2.12+).
struct EventTemplateTests {
    static let trailers: [EventTrailer] = [
        EventTrailer(
            timestamp: 1_767_225_690_000,
            etaTarget: 1_767_226_890_000,
            lastConfirmed: 1_767_225_690_000,
            staleDate: 1_767_225_990_000,
            dismissalDate: nil,
            uncertaintyMs: 3
        ),
        EventTrailer(
            timestamp: -1,
            etaTarget: 0,
            lastConfirmed: .min,
            staleDate: nil,
            dismissalDate: .max,
            uncertaintyMs: 0
        ),
        EventTrailer(
            timestamp: .max,
            etaTarget: -5,
            lastConfirmed: 7,
            staleDate: 0,
            dismissalDate: 0,
            uncertaintyMs: .max
        ),
    ]

    static func template(flags: FrameFlags = []) throws -> EventTemplate {
        try EventTemplate(topic: "orders/A1001", sequence: 2, body: EventJSON.encode(GoldenVectors.event))
    }

    /// A trailer survives its 48 bytes, with every field at the offset PROTOCOL.md §5.1 gives.
    @Test(arguments: 0..<3)
    func trailerRoundTrip(_ i: Int) throws {
        let t = Self.trailers[i]
        let bytes = t.bytes
        #expect(bytes.count == EventTrailer.size)
        let back = try EventTrailer(bytes: bytes)
        #expect(back == t)
        func i64(_ at: Int) -> Int64 { bytes[at..<(at + 8)].reduce(0) { $0 << 8 | Int64($1) } }
        #expect(i64(0) == t.timestamp)
        #expect(i64(8) == t.etaTarget)
        #expect(i64(16) == t.lastConfirmed)
        #expect(i64(24) == (t.staleDate ?? 0))
        #expect(i64(32) == (t.dismissalDate ?? 0))
        #expect(UInt32(truncatingIfNeeded: i64(40) >> 32) == t.uncertaintyMs)
        #expect(bytes[45] == (t.staleDate == nil ? 0 : 1) | (t.dismissalDate == nil ? 0 : 2))
        #expect(bytes[44] == 0 && bytes[46] == 0 && bytes[47] == 0)
    }

    /// Unknown presence bits, a non-zero reserved field and a short trailer are refused.
    @Test func trailerRefusesUnknownBits() {
        var b = Self.trailers[0].bytes
        b[45] |= 0x04
        #expect(throws: WireError.self) { _ = try EventTrailer(bytes: b) }
        b = Self.trailers[0].bytes
        b[47] = 1
        #expect(throws: WireError.self) { _ = try EventTrailer(bytes: b) }
        b = Array(Self.trailers[0].bytes.prefix(47))
        #expect(throws: WireError.self) { _ = try EventTrailer(bytes: b) }
    }

    /// zlib's combine gives the CRC of a concatenation from its parts, for lengths 0…3000.
    @Test func combineEqualsStraightCRC() {
        var rng = SplitMix(seed: 42)
        for length in [0, 1, 2, 15, 16, 17, 255, 256, 1000, 3000] {
            let a = (0..<16).map { _ in rng.byte() }
            let b = (0..<length).map { _ in rng.byte() }
            #expect(CRC32.combine(CRC32.checksum(a), CRC32.checksum(b), length: length) == CRC32.checksum(a + b))
        }
    }

    /// A delivery written from the template is byte for byte the frame the general encoder writes, and its CRC is
    /// the straight CRC-32 of bytes 4–19 and 24… (so a client checks it with one plain crc32 call).
    @Test(arguments: [FrameFlags(), [.terminal], [.replay, .snapshot], [.reconvert], FrameFlags.known])
    func deliveryEqualsStraightFrame(_ flags: FrameFlags) throws {
        let t = try Self.template()
        for trailer in Self.trailers {
            var buf: [UInt8] = []
            try Frame.appendEvent(t, flags: flags, trailer: trailer, into: &buf)
            let straight = Frame(
                type: .event,
                flags: flags,
                sequence: 2,
                topic: "orders/A1001",
                body: try EventJSON.encode(GoldenVectors.event),
                trailer: trailer
            )
            #expect(buf == (try straight.encoded()))
            #expect(buf.count == t.frameSize)
            let crc = UInt32(buf[20]) << 24 | UInt32(buf[21]) << 16 | UInt32(buf[22]) << 8 | UInt32(buf[23])
            #expect(crc == CRC32.checksum(buf[4..<20] + buf[24...]))
            var d = FrameDecoder()
            d.append(buf)
            #expect(try d.next() == straight)
        }
    }

    /// Frames on both sides of the 1 KiB a delivery is put together in on the stack (one append) and above it
    /// (three appends), appended after bytes already in the buffer, are byte for byte the general encoder's.
    @Test func deliveriesAroundTheScratchSizeEqualStraightFrames() throws {
        let topic = "orders/A1001"
        let fixed = Frame.headerSize + topic.utf8.count + EventTrailer.size
        for size in [fixed + 1, 1000, 1023, 1024, 1025, 1100, 5000] {
            let body = (0..<(size - fixed)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let t = try EventTemplate(topic: topic, sequence: 9, body: body)
            #expect(t.frameSize == size)
            for (i, trailer) in Self.trailers.enumerated() {
                let flags: FrameFlags = i == 1 ? [.terminal, .snapshot] : []
                var buf: [UInt8] = [1, 2, 3]
                try Frame.appendEvent(t, flags: flags, trailer: trailer, into: &buf)
                let straight = Frame(
                    type: .event,
                    flags: flags,
                    sequence: 9,
                    topic: topic,
                    body: body,
                    trailer: trailer
                )
                #expect(buf == [1, 2, 3] + (try straight.encoded()), "frame of \(size) bytes")
            }
        }
    }

    /// One flipped bit anywhere in the shared bytes (topic, body) or the trailer fails the checksum.
    @Test func corruptedSharedOrTrailerBytesAreDetected() throws {
        let t = try Self.template()
        var good: [UInt8] = []
        try Frame.appendEvent(t, flags: [.terminal], trailer: Self.trailers[0], into: &good)
        for index in 20..<good.count {
            for bit in [0, 3, 7] {
                var bad = good
                bad[index] ^= UInt8(1 << bit)
                var d = FrameDecoder()
                d.append(bad)
                do {
                    _ = try d.next()
                    Issue.record("bit \(bit) of byte \(index) flipped was not detected")
                } catch {
                    #expect(error.code == .checksumMismatch, "byte \(index): \(error)")
                }
            }
        }
        // A header flag the checksum covers, changed to another known flag.
        var bad = good
        bad[7] ^= 0x01
        var d = FrameDecoder()
        d.append(bad)
        #expect(throws: WireError.self) { _ = try d.next() }
    }

    /// Many deliveries of many templates into one reused buffer decode back in order; once the buffer has grown,
    /// later rounds do not grow it again (the benchmark counts the allocations themselves).
    @Test func reusedBufferDecodesInOrder() throws {
        let templates = try (1...5).map { n in
            try EventTemplate(topic: "orders/A\(n)", sequence: UInt64(n), body: EventJSON.encode(GoldenVectors.event))
        }
        var buf: [UInt8] = []
        var capacityAfterFirstRound = 0
        for round in 0..<3 {
            buf.removeAll(keepingCapacity: true)
            for (i, t) in templates.enumerated() {
                try Frame.appendEvent(t, flags: [], trailer: Self.trailers[i % 3], into: &buf)
            }
            if round == 0 { capacityAfterFirstRound = buf.capacity }
            #expect(buf.capacity == capacityAfterFirstRound)
            var d = FrameDecoder()
            d.append(buf)
            for (i, t) in templates.enumerated() {
                let f = try #require(try d.next())
                #expect(f.topic == t.topic && f.sequence == t.sequence && f.trailer == Self.trailers[i % 3])
                #expect(f.body[...] == t.body)
            }
            #expect(try d.next() == nil)
        }
    }

    /// Limits: a topic over 255 bytes and an event that would not fit a 64 KiB frame are refused.
    @Test func templateLimits() {
        #expect(throws: WireError.self) {
            _ = try EventTemplate(topic: String(repeating: "a", count: 256), sequence: 1, body: [])
        }
        let fits = 65536 - 24 - 1 - 48
        var out: [UInt8] = []
        let largest = try? EventTemplate(topic: "t", sequence: 1, body: [UInt8](repeating: 0x20, count: fits))
        #expect((try? Frame.appendEvent(largest!, flags: [], trailer: Self.trailers[0], into: &out)) != nil)
        #expect(out.count == 65536)
        // One byte more is kept as an event (the store takes it) but refused at delivery, writing nothing.
        let tooLarge = try? EventTemplate(topic: "t", sequence: 1, body: [UInt8](repeating: 0x20, count: fits + 1))
        out = []
        #expect(throws: WireError(.frameTooLarge, "EVENT would be 65537 bytes; the limit is 65536")) {
            try Frame.appendEvent(tooLarge!, flags: [], trailer: Self.trailers[0], into: &out)
        }
        #expect(out.isEmpty)
        #expect(throws: WireError.self) {
            try Frame.appendEvent(largest!, flags: FrameFlags(rawValue: 0x10), trailer: Self.trailers[0], into: &out)
        }
    }

    /// The general encoder refuses an EVENT without a trailer and a trailer on another type.
    @Test func trailerOnlyOnEvent() {
        #expect(throws: WireError.self) { _ = try Frame(type: .event, topic: "t").encoded() }
        #expect(throws: WireError.self) { _ = try Frame(type: .ping, trailer: Self.trailers[0]).encoded() }
    }
}

/// SplitMix64, for reproducible test bytes.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
}
