import Foundation
import LiveBusWire
import Testing

/// The canonical fast path of the body reader (``EventJSON/decodeCanonical(_:)``): a body in the bytes
/// ``EventJSON/encode(_:)`` writes is read by literal compares and said canonical, so the daemon stores and fans out
/// the client's bytes instead of encoding again (issue 15 item 3). It must read exactly what the general strict reader
/// reads, and say canonical only when encoding the result gives back the same bytes.
struct CanonicalBodyTests {
    /// A body read through the general reader: a leading space is not canonical.
    static func general(_ bytes: [UInt8]) throws -> EventBody { try EventJSON.decode([UInt8(ascii: " ")] + bytes) }

    /// What `encode` writes is canonical unless a string needed an escape; the result equals the general reader's.
    @Test(arguments: 0..<3)
    func encodedBodiesAreCanonical(_ i: Int) throws {
        let body = EventJSONTests.bodies[i]
        let bytes = try EventJSON.encode(body)
        let (read, canonical) = try EventJSON.decodeCanonical(bytes)
        #expect(read == body)
        #expect(read == (try Self.general(bytes)))
        #expect(canonical == !bytes.contains(UInt8(ascii: "\\")))
    }

    /// Random bodies (numbers of every form, optional members present or not, non-ASCII text): whenever the fast
    /// path says canonical, encoding what it read gives back the input, and it reads what the general reader reads.
    @Test func randomBodiesRoundTrip() throws {
        var rng = SplitMix(seed: 15)
        var canonicalCount = 0
        for _ in 0..<2000 {
            let body = Self.randomBody(&rng)
            let bytes = try EventJSON.encode(body)
            let (read, canonical) = try EventJSON.decodeCanonical(bytes)
            #expect(read == (try Self.general(bytes)))
            #expect(read == body)
            if canonical {
                canonicalCount += 1
                #expect(try EventJSON.encode(read) == bytes)
            }
        }
        // A body is canonical only if all of its 2–6 numbers and 4–6 strings are (no exponent, at most 15 digits, no
        // escape): about one in ten of these; enough that the fast path is exercised on every form it takes.
        #expect(canonicalCount > 100)
    }

    /// Layouts the general reader takes but `encode` never writes are read the same, and are not canonical.
    @Test(arguments: [
        ("{", "{ "),  // whitespace
        (#""progress":0.25"#, #""progress":0.250"#),  // a trailing zero
        (#""progress":0.25"#, #""progress":2.5e-1"#),  // an exponent
        (#""relevanceScore":50"#, #""relevanceScore":50.0"#),  // an integral value with a fraction
        (#""etaTarget":1767226800000"#, #""etaTarget":1767226800000,"later":[1,null]"#),  // an unknown member
        (#""event":"update""#, #""event":"upd\u0061te""#),  // an escape
        (#","priority""#, #","places":null,"priority""#),  // a null optional member
        (#""timestamp":1767225600000}"#, #""timestamp":1767225600000,"client":{"timestamp":1}}"#),  // v1 client
        (#""lastConfirmed":1767225600000,"progress":0.25"#, #""progress":0.25,"lastConfirmed":1767225600000"#),
    ])
    func otherLayoutsAreNotCanonical(_ from: String, _ to: String) throws {
        let canonical =
            #"{"contentState":{"etaTarget":1767226800000,"lastConfirmed":1767225600000,"progress":0.25,"status":"cooking","summary":{"en":"Cooking","ko":"조리 중"}},"event":"update","priority":10,"relevanceScore":50,"timestamp":1767225600000}"#
        let base = try EventJSON.decodeCanonical(Array(canonical.utf8))
        #expect(base.isCanonical)
        #expect(try EventJSON.encode(base.body) == Array(canonical.utf8))
        let variant = canonical.replacingFirst(from, with: to)
        #expect(variant != canonical)
        let (read, isCanonical) = try EventJSON.decodeCanonical(Array(variant.utf8))
        #expect(!isCanonical)
        #expect(read == base.body)
    }

    /// Numbers at the edges of the canonical forms: each is read as the general reader reads it; said canonical
    /// exactly where expected (16 digits and more go to the general path even when `encode` would write them the
    /// same), and never where `encode` writes something else.
    @Test(arguments: [
        ("0", true), ("-1", true), ("0.0001", true), ("0.00012", true), ("0.00009", false),
        ("123456789012345", true), ("1234567890123456", false), ("0.1", true), ("-0.5", true),
        ("99999999999999.9", true), ("12345678901234.56", false), ("9007199254740993", false), ("-0", false),
        ("1e2", false), ("0.30000000000000004", false), ("7.25", true), ("7.250", false), ("2.0", false),
    ])
    func numberEdges(_ number: String, _ expected: Bool) throws {
        let text =
            #"{"contentState":{"etaTarget":1,"lastConfirmed":2,"progress":"# + number
            + #","status":"s","summary":{"en":"e","ko":"k"}},"event":"update","priority":5,"relevanceScore":1,"timestamp":3}"#
        let bytes = Array(text.utf8)
        let (read, canonical) = try EventJSON.decodeCanonical(bytes)
        #expect(read == (try Self.general(bytes)))
        #expect(canonical == expected)
        if canonical { #expect(try EventJSON.encode(read) == bytes) }
    }

    /// Malformed bodies give the general reader's error, word for word (the fast path never words one).
    @Test func malformedBodiesKeepTheirErrors() throws {
        let good = try EventJSON.encode(GoldenVectors.event)
        for cut in [1, 10, 40, good.count - 1] {
            let t = Array(good.prefix(cut))
            var fast: WireError?
            var general: WireError?
            do { _ = try EventJSON.decodeCanonical(t) } catch { fast = error }
            do { _ = try EventJSON.decode(t) } catch { general = error }
            #expect(fast != nil && fast == general)
        }
        // Out-of-range instants are refused on the fast path too (PROTOCOL.md §3).
        var far = GoldenVectors.event
        far.timestamp = Int64.max
        let bytes = Array(try EventJSON.encode(far))
        #expect(throws: WireError.self) { _ = try EventJSON.decodeCanonical(bytes) }
    }

    static func randomBody(_ rng: inout SplitMix) -> EventBody {
        func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        func number() -> Double {
            switch rng.next() % 6 {
            case 0: return Double(Int64(bitPattern: rng.next()) % 1_000_000)
            case 1: return Double(Int64(rng.next() % 100_000)) / pick([10, 100, 1000, 10_000, 1e6, 1e9])
            case 2: return -Double(rng.next() % 1000) / 8
            case 3:
                let v = Double(bitPattern: rng.next())
                return v.isFinite ? v : 0.5
            case 4: return pick([0, 1e-4, 1.2e-4, 9e-5, 1e15, 1e16, 0.1, 0.2, 0.3])
            default: return Double(rng.next() % 1_000_000_007) / 1_000_003
            }
        }
        func string() -> String {
            pick(["", "cooking", "조리 중", "T0000000000000000000", "q\"x", "🛵 on its way", "a/b"])
        }
        func instant() -> Int64 { 1_767_225_600_000 + Int64(rng.next() % 10_000_000) - 5_000_000 }
        func position() -> PositionBody { PositionBody(latitude: number(), longitude: number()) }
        func maybe<T>(_ make: () -> T) -> T? { rng.next() % 2 == 0 ? make() : nil }
        return EventBody(
            event: pick(["start", "update", "end"]),
            timestamp: instant(),
            contentState: ContentStateBody(
                status: string(),
                summary: SummaryBody(ko: string(), en: string(), detailKo: maybe(string), detailEn: maybe(string)),
                etaTarget: instant(),
                progress: number(),
                riderPosition: maybe(position),
                lastConfirmed: pick([instant(), 0, -1])
            ),
            staleDate: maybe(instant),
            relevanceScore: number(),
            dismissalDate: maybe(instant),
            priority: pick([5, 10, 0, -3]),
            places: maybe { PlacesBody(store: maybe(position), customer: maybe(position)) }
        )
    }
}

extension String {
    fileprivate func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let r = range(of: target) else { return self }
        return replacingCharacters(in: r, with: replacement)
    }
}

/// The ACK written from its fixed layout is the frame the general encoder writes for it (PROTOCOL.md §5.2).
struct AckTemplateTests {
    @Test(arguments: [(UInt64(0), UInt64(1)), (7, 10), (UInt64.max, UInt64.max), (123_456, 9_999_999_999)])
    func ackEqualsGeneralFrame(_ id: UInt64, _ sequence: UInt64) throws {
        for topic in ["orders/A1001", "t", String(repeating: "x", count: 255)] {
            var fixed: [UInt8] = [1, 2, 3]
            Array(topic.utf8).withUnsafeBytes { Frame.appendAck(id: id, topic: $0, sequence: sequence, into: &fixed) }
            var general: [UInt8] = [1, 2, 3]
            try Frame.encode(
                type: .ack,
                sequence: id,
                topic: topic,
                body: EventJSON.ackBody(sequence: sequence),
                into: &general
            )
            #expect(fixed == general)
            var d = FrameDecoder()
            d.append(Array(fixed.dropFirst(3)))
            let f = try d.next()
            #expect(f?.type == .ack && f?.sequence == id && f?.topic == topic)
            #expect(f.map { try? WireJSON.decode(AckBody.self, from: $0.body) }??.sequence == sequence)
        }
    }
}

/// The flag terms come from a cache by shared length: lengths that share a slot, and the same length again, still
/// give every flag combination the straight CRC-32 of §2.
struct FlagTermCacheTests {
    @Test func collidingLengthsKeepTheirOwnTerms() throws {
        for n in [10, 74, 10, 138, 74, 200, 10] {
            let body = Array(repeating: UInt8(ascii: "x"), count: n)
            let t = try EventTemplate(topic: "t/a", sequence: UInt64(n), body: body)
            for f in 0..<16 {
                let flags = FrameFlags(rawValue: UInt16(f))
                var buf: [UInt8] = []
                try Frame.appendEvent(t, flags: flags, trailer: EventTemplateTests.trailers[0], into: &buf)
                let crc = UInt32(buf[20]) << 24 | UInt32(buf[21]) << 16 | UInt32(buf[22]) << 8 | UInt32(buf[23])
                #expect(crc == CRC32.checksum(buf[4..<20] + buf[24...]), "length \(n), flags \(f)")
            }
        }
    }
}
