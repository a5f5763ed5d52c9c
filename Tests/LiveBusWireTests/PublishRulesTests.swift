import Foundation
import LiveBusWire
import Testing

/// PROTOCOL.md §5.1's value rules for a PUBLISH body (``PublishRules``), on the canonical fast path and on the
/// general reader alike (new-user review 2026-12-03, finding 2: a 20 KB content state, `status: "exploded"`,
/// `progress: 7` and `priority: 7` were acknowledged).
struct PublishRulesTests {
    /// The golden PUBLISH body with `change` applied, encoded canonically.
    static func body(_ change: (inout EventBody) -> Void = { _ in }) throws -> [UInt8] {
        var b = GoldenVectors.event
        change(&b)
        return try EventJSON.encode(b)
    }

    /// The refusal of `bytes` by `decodePublish` + `check`, read canonically and (after a leading space) by the
    /// general reader; both must say the same.
    static func refusal(_ bytes: [UInt8]) throws -> WireError? {
        var messages: [WireError?] = []
        for input in [bytes, [UInt8(ascii: " ")] + bytes] {
            let p = try EventJSON.decodePublish(input)
            if input.first == UInt8(ascii: " ") { #expect(!p.isCanonical) }
            do {
                try PublishRules.check(p.body, contentStateBytes: p.contentStateBytes)
                messages.append(nil)
            } catch {
                messages.append(error)
            }
        }
        #expect(messages[0] == messages[1], "the fast path and the general reader disagree")
        return messages[0]
    }

    @Test func theGoldenPublishAndEveryAllowedValuePass() throws {
        #expect(try Self.refusal(Self.body()) == nil)
        for event in PublishRules.events {
            for status in PublishRules.statuses {
                for priority in PublishRules.priorities {
                    for progress in [0.0, 0.25, 1.0] {
                        let bytes = try Self.body {
                            $0.event = event
                            $0.contentState.status = status
                            $0.priority = priority
                            $0.contentState.progress = progress
                        }
                        #expect(try Self.refusal(bytes) == nil, "\(event) \(status) \(priority) \(progress)")
                    }
                }
            }
        }
    }

    @Test func anUnknownStatusIsRefusedNamingTheFieldTheValueAndTheStatuses() throws {
        let e = try #require(try Self.refusal(Self.body { $0.contentState.status = "exploded" }))
        #expect(e.code == .invalidBody)
        #expect(e.message.contains("field 'contentState.status' is 'exploded', not one of created, cooking"), "\(e)")
        #expect(e.message.contains("canceled"))
        // A start too: the phone must never show an activity in a status that does not exist.
        #expect(
            try Self.refusal(
                Self.body {
                    $0.event = "start"
                    $0.contentState.status = "exploded"
                }
            ) != nil
        )
    }

    @Test(arguments: [7.0, -0.5, 1.000_001, -1e-9])
    func progressOutsideZeroToOneIsRefused(_ progress: Double) throws {
        let e = try #require(try Self.refusal(Self.body { $0.contentState.progress = progress }))
        #expect(e.code == .invalidBody)
        #expect(e.message.contains("field 'contentState.progress' is"), "\(e)")
        #expect(e.message.contains("outside 0…1"), "\(e)")
    }

    @Test func progressSevenIsWrittenAsSeven() throws {
        let e = try #require(try Self.refusal(Self.body { $0.contentState.progress = 7 }))
        #expect(e.message.contains("'contentState.progress' is 7, outside 0…1"), "\(e)")
    }

    @Test(arguments: [7, 0, 1, -10, 11])
    func aPriorityOtherThanTenOrFiveIsRefused(_ priority: Int) throws {
        let e = try #require(try Self.refusal(Self.body { $0.priority = priority }))
        #expect(e.code == .invalidBody)
        #expect(e.message.contains("field 'priority' is \(priority), not 10 (status or ETA changed) or 5"), "\(e)")
    }

    @Test func anUnknownEventIsRefused() throws {
        let e = try #require(try Self.refusal(Self.body { $0.event = "begin" }))
        #expect(e.message.contains("field 'event' is 'begin', not one of start, update, end"), "\(e)")
    }

    /// At most 4096 bytes of content state (its canonical encoding), on both paths; 4097 is refused with the size.
    @Test func theContentStateLimitIs4096BytesOfItsCanonicalEncoding() throws {
        let base = try EventJSON.contentStateBytes(GoldenVectors.event.contentState)
        let baseKo = GoldenVectors.event.contentState.summary.ko.utf8.count
        func sized(_ n: Int) throws -> [UInt8] {
            try Self.body { $0.contentState.summary.ko = String(repeating: "x", count: n - base + baseKo) }
        }
        let atLimit = try sized(4096)
        #expect(try EventJSON.decodePublish(atLimit).contentStateBytes == 4096)
        #expect(try Self.refusal(atLimit) == nil)
        let e = try #require(try Self.refusal(sized(4097)))
        #expect(e.code == .invalidBody)
        #expect(e.message.contains("field 'contentState' is 4097 bytes as JSON, over the 4096-byte limit"), "\(e)")
        // The review's 20 000-byte summary, and Hangul (3 bytes a character in UTF-8).
        #expect(
            try Self.refusal(Self.body { $0.contentState.summary.ko = String(repeating: "x", count: 20_000) }) != nil
        )
        #expect(try Self.refusal(Self.body { $0.contentState.summary.ko = String(repeating: "조", count: 2000) }) != nil)
    }

    /// A body with whitespace is measured by its canonical encoding, not by the bytes sent.
    @Test func whitespaceDoesNotCountTowardTheLimit() throws {
        let canonical = try Self.body { $0.contentState.summary.ko = String(repeating: "x", count: 3900) }
        let spaced = Array(String(decoding: canonical, as: UTF8.self).replacingOccurrences(of: ",", with: ",  ").utf8)
        let a = try EventJSON.decodePublish(canonical)
        let b = try EventJSON.decodePublish(spaced)
        #expect(a.isCanonical && !b.isCanonical)
        #expect(a.contentStateBytes == b.contentStateBytes)
    }

    /// Random bodies: the fast path's measured content state is the canonical encoding's size, and both paths
    /// reach the same verdict.
    @Test func randomBodiesAreMeasuredAndJudgedAlikeOnBothPaths() throws {
        var rng = SplitMix(seed: 51)
        var canonicalCount = 0
        for _ in 0..<1000 {
            let body = CanonicalBodyTests.randomBody(&rng)
            let bytes = try EventJSON.encode(body)
            let p = try EventJSON.decodePublish(bytes)
            #expect(p.contentStateBytes == (try EventJSON.contentStateBytes(body.contentState)))
            if p.isCanonical { canonicalCount += 1 }
            _ = try Self.refusal(bytes)
        }
        #expect(canonicalCount > 50)
    }

    /// Only PUBLISH is held to the rules: an EVENT (or a stored body) with such values still decodes.
    @Test func eventDecodingIsNotHeldToThePublishRules() throws {
        let bytes = try Self.body { $0.contentState.status = "exploded" }
        #expect(try EventJSON.decode(bytes).contentState.status == "exploded")
        #expect(try EventJSON.decodeCanonical(bytes).isCanonical)
    }
}
