import Foundation
import LiveBusWire
import Testing

/// Where an event body expects an integer, a JSON number written with a fraction or an exponent is taken when its
/// value is exactly a whole number in range (`10.0`, `1e1`): JSON has one number type (RFC 8259 §6) and JavaScript
/// or Python writers produce these; the body is re-encoded in the integer form, so what is stored and fanned out is
/// byte-for-byte the golden vector. `10.5` is still refused. Every error on the PUBLISH path starts `PUBLISH body:`
/// (fresh-user review 2026-12-03, finding 4). Source: PROTOCOL.md §3.
struct PublishWholeNumberTests {
    /// The golden PUBLISH body's bytes (the vector `publish`).
    static let golden = GoldenVectors.json(GoldenVectors.event)

    /// The golden body with the text `old` replaced by `new`.
    static func replacing(_ old: String, with new: String) -> [UInt8] {
        let text = String(decoding: golden, as: UTF8.self)
        #expect(text.contains(old), "\(old)")
        return Array(text.replacingOccurrences(of: old, with: new).utf8)
    }

    @Test(arguments: [
        "\"priority\":10.0", "\"priority\":1e1", "\"priority\":1E+1", "\"priority\":1.0e1", "\"priority\":100e-1",
        "\"priority\":10.000000000000000000000000000000",
    ])
    func aWholeNumberIsAnIntegerAndIsReencodedAsOne(member: String) throws {
        let p = try EventJSON.decodePublish(Self.replacing("\"priority\":10", with: member))
        #expect(p.body.priority == 10)
        #expect(!p.isCanonical, "re-encoded, not stored as sent")
        #expect(try EventJSON.encode(p.body) == Self.golden, "the integer form: the golden vector's bytes")
        try PublishRules.check(p.body, contentStateBytes: p.contentStateBytes)
    }

    /// Instants too: exact from the decimal digits (no `Double` rounding), and `Int64`'s limits hold.
    @Test func wholeNumbersAreExactAndInRange() throws {
        let p = try EventJSON.decodePublish(
            Self.replacing("\"timestamp\":1767225600000", with: "\"timestamp\":1.7672256000000e12")
        )
        #expect(p.body.timestamp == 1_767_225_600_000)
        #expect(try EventJSON.encode(p.body) == Self.golden)
        let zero = try EventJSON.decode(Self.replacing("\"timestamp\":1767225600000", with: "\"timestamp\":-0.0"))
        #expect(zero.timestamp == 0)
        let exact = try EventJSON.decode(Self.replacing("\"priority\":10", with: "\"priority\":9007199254740993.0"))
        #expect(exact.priority == 9_007_199_254_740_993)
        let largest = try EventJSON.decode(
            Self.replacing("\"priority\":10", with: "\"priority\":9223372036854775807.0")
        )
        #expect(largest.priority == Int.max)
        for tooLarge in ["9223372036854775808.0", "1e19", "1e100000000", "-9223372036854775809e0"] {
            #expect(
                throws: WireError(.invalidBody, "PUBLISH body: field 'priority' is out of range for a 64-bit integer")
            ) {
                _ = try EventJSON.decodePublish(Self.replacing("\"priority\":10", with: "\"priority\":\(tooLarge)"))
            }
        }
    }

    @Test(arguments: ["10.5", "1.05e1", "1e-1", "10.0000000000000000000001"])
    func aFractionIsStillRefused(value: String) {
        #expect(throws: WireError(.invalidBody, "PUBLISH body: field 'priority' should be an integer")) {
            _ = try EventJSON.decodePublish(Self.replacing("\"priority\":10", with: "\"priority\":\(value)"))
        }
    }

    /// The PUBLISH path's messages all start `PUBLISH body`: the general reader's (a missing field, a wrong type,
    /// text that is not JSON), the range check's and the rules'; an EVENT's reader keeps `Event body`.
    @Test func everyPublishMessageSaysPublishBody() throws {
        let cases: [[UInt8]] = [
            Array(#"{"event":"update"}"#.utf8), Array("[1]".utf8),
            Self.replacing("\"event\":\"update\"", with: "\"event\":1"),
            Self.replacing("\"timestamp\":1767225600000", with: "\"timestamp\":99999999999999999"),
        ]
        for bytes in cases {
            do throws(WireError) {
                _ = try EventJSON.decodePublish(bytes)
                Issue.record("accepted \(String(decoding: bytes, as: UTF8.self))")
            } catch {
                #expect(error.message.hasPrefix("PUBLISH body"), "\(error.message)")
            }
        }
        let rule = try EventJSON.decodePublish(Self.replacing("\"priority\":10", with: "\"priority\":7.0"))
        do throws(WireError) {
            try PublishRules.check(rule.body, contentStateBytes: rule.contentStateBytes)
            Issue.record("priority 7.0 passed the rules")
        } catch {
            #expect(error.message.hasPrefix("PUBLISH body: field 'priority' is 7"), "\(error.message)")
        }
        #expect(throws: WireError(.invalidBody, "Event body: field 'timestamp' is missing")) {
            _ = try EventJSON.decode(Array(#"{"event":"update"}"#.utf8))
        }
    }
}
