import Foundation
import LiveBusWire
import Testing

/// Instants and durations outside PROTOCOL.md §3's range (±100 years around the epoch) are refused by the decoder
/// with `invalidValue` naming the field; the values at the ends of the range pass. Source: issue 14 "Crashes".
struct InstantRangeTests {
    static let limit = WireRange.instantLimitMilliseconds

    /// `body` with a JSON member replaced (by its path), decoded as `T`.
    static func decode<T: Decodable>(_: T.Type, _ body: some Encodable, set path: [String], to value: Int64)
        throws(WireError) -> T
    {
        var json = try WireJSON.decode(JSONValue.self, from: WireJSON.encode(body))
        func set(_ v: inout JSONValue, _ p: ArraySlice<String>) {
            guard let key = p.first, case .object(var o) = v else { return }
            if p.count == 1 {
                o[key] = .number(0)  // replaced textually below: a Double cannot hold every Int64
            } else {
                var inner = o[key] ?? .object([:])
                set(&inner, p.dropFirst())
                o[key] = inner
            }
            v = .object(o)
        }
        set(&json, path[...])
        var text = String(decoding: try WireJSON.encode(json), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"\(path.last!)\":0", with: "\"\(path.last!)\":\(value)")
        return try WireJSON.decode(T.self, from: Array(text.utf8))
    }

    static func expectInvalidValue(_ field: String, _ body: () throws(WireError) -> Void) {
        do {
            try body()
            Issue.record("\(field): an out-of-range value was accepted")
        } catch {
            #expect(error.code == .invalidValue, "\(field): \(error)")
            #expect(error.message.contains("field '\(field)'"), "\(error.message)")
            #expect(error.message.contains("PROTOCOL.md §3"), "\(error.message)")
        }
    }

    /// The issue's poison: a PUBLISH whose `etaTarget` is −2^63 (it was stored, then trapped every delivery).
    @Test func publishWithEtaTargetMinusTwoToTheSixtyThreeIsInvalidValue() {
        Self.expectInvalidValue("contentState.etaTarget") { () throws(WireError) in
            _ = try Self.decode(EventBody.self, GoldenVectors.event, set: ["contentState", "etaTarget"], to: .min)
        }
    }

    /// `timestamp`, `staleDate`, `dismissalDate` and `lastConfirmed` near 2^63 − 1 (they trapped with a phone ahead).
    @Test(arguments: [
        ["timestamp"], ["staleDate"], ["dismissalDate"], ["contentState", "lastConfirmed"],
        ["contentState", "etaTarget"],
    ])
    func publishInstantNearTheTopOfInt64IsInvalidValue(_ path: [String]) {
        for v in [Int64.max, Int64.max - 1, Self.limit + 1, -Self.limit - 1] {
            Self.expectInvalidValue(path.joined(separator: ".")) { () throws(WireError) in
                _ = try Self.decode(EventBody.self, GoldenVectors.event, set: path, to: v)
            }
        }
    }

    /// The ends of the range are allowed instants.
    @Test func theEndsOfTheRangeAreAccepted() throws {
        for v in [Self.limit, -Self.limit, 0] {
            let e = try Self.decode(EventBody.self, GoldenVectors.event, set: ["contentState", "etaTarget"], to: v)
            #expect(e.contentState.etaTarget == v)
            let h = try Self.decode(
                HelloBody.self,
                HelloBody(client: "c", role: .session, clientTime: 1),
                set: ["clientTime"],
                to: v
            )
            #expect(h.clientTime == v)
        }
    }

    /// HELLO `clientTime` at ±2^63 (−2^63 trapped before the handshake completed, 2^63 − 1 at the first event).
    @Test(arguments: [Int64.min, Int64.max])
    func helloClientTimeAtTheEndsOfInt64IsInvalidValue(_ v: Int64) {
        Self.expectInvalidValue("clientTime") { () throws(WireError) in
            _ = try Self.decode(
                HelloBody.self,
                HelloBody(client: "c", role: .session, clientTime: 1),
                set: ["clientTime"],
                to: v
            )
        }
    }

    /// PONG t2 = −2^63, and t2 = −1 with t3 = 2^63 − 1 (both trapped in the round-trip arithmetic).
    @Test func pongStampsOutOfRangeAreInvalidValue() {
        let pong = PongBody(t1: 1_800_000_000_000, t2: 1_800_000_000_000, t3: 1_800_000_000_000)
        Self.expectInvalidValue("t2") { () throws(WireError) in
            _ = try Self.decode(PongBody.self, pong, set: ["t2"], to: .min)
        }
        Self.expectInvalidValue("t3") { () throws(WireError) in
            var p = pong
            p.t2 = -1
            _ = try Self.decode(PongBody.self, p, set: ["t3"], to: .max)
        }
        Self.expectInvalidValue("t1") { () throws(WireError) in
            _ = try Self.decode(PingBody.self, PingBody(t1: 1), set: ["t1"], to: .max)
            _ = try Self.decode(PongBody.self, pong, set: ["t1"], to: .max)
        }
    }

    /// An EVENT's `client` block is checked too, and so is its `uncertaintyMs` duration (never negative).
    @Test func eventClientBlockIsChecked() throws {
        var e = GoldenVectors.event
        e.client = ClientInstantsBody(
            timestamp: 1,
            etaTarget: 1,
            staleDate: nil,
            dismissalDate: nil,
            lastConfirmed: 1,
            uncertaintyMs: 3
        )
        _ = try WireJSON.decode(EventBody.self, from: WireJSON.encode(e))
        Self.expectInvalidValue("client.etaTarget") { () throws(WireError) in
            _ = try Self.decode(EventBody.self, e, set: ["client", "etaTarget"], to: .min)
        }
        Self.expectInvalidValue("client.uncertaintyMs") { () throws(WireError) in
            _ = try Self.decode(EventBody.self, e, set: ["client", "uncertaintyMs"], to: -1)
        }
    }

    /// The range is the one PROTOCOL.md states (100 years of 365.25 days in ms).
    @Test func theConstantIsTheDocumentedOne() throws {
        #expect(WireRange.instantLimitMilliseconds == 100 * 36_525 * 86_400_000 / 100)
        let doc = try String(
            contentsOf: GoldenVectorTests.repoRoot.appendingPathComponent("Protocol/PROTOCOL.md"),
            encoding: .utf8
        )
        #expect(doc.contains("−3155760000000 … 3155760000000 ms"))
    }
}

/// Numbers Foundation's decoder cannot put in an integer field (it says only "not valid JSON") are named: past
/// ±2^63 is `invalidValue`, a negative or fractional number where a whole one is expected `invalidBody`, each with
/// the field. Source: issue 14 review ("Hello body is not a valid JSON object" named no field).
struct UnrepresentableNumberTests {
    @Test(arguments: [
        ("\"clientTime\":9223372036854775808", "invalidValue", "clientTime"),
        ("\"clientTime\":1.5", "invalidBody", "clientTime"),
        ("\"clientTime\":1,\"versions\":[18446744073709551616],\"x\":0", "invalidValue", "versions[0]"),
    ])
    func hello(_ member: String, _ code: String, _ field: String) throws {
        // A valid HELLO with `clientTime` (and in the last case `versions`) replaced.
        var json = String(
            decoding: try WireJSON.encode(HelloBody(client: "t", role: .session, clientTime: 42)),
            as: UTF8.self
        )
        json = json.replacingOccurrences(of: "\"versions\":[2]", with: "\"v\":0")
        json = json.replacingOccurrences(of: "\"clientTime\":42", with: member)
        if !member.contains("versions") { json = json.replacingOccurrences(of: "\"v\":0", with: "\"versions\":[2]") }
        do {
            _ = try WireJSON.decode(HelloBody.self, from: Array(json.utf8))
            Issue.record("\(json) was accepted")
        } catch {
            #expect(error.code.name == code, "\(json): \(error)")
            #expect(error.message.contains("field '\(field)'"), "\(json): \(error.message)")
        }
    }

    @Test(arguments: [
        (#"{"fromSequence":-1}"#, "invalidBody", "must not be negative"),
        (#"{"fromSequence":18446744073709551616}"#, "invalidValue", "outside ±2^63"),
    ])
    func resend(_ json: String, _ code: String, _ says: String) {
        do {
            _ = try WireJSON.decode(ResendBody.self, from: Array(json.utf8))
            Issue.record("\(json) was accepted")
        } catch {
            #expect(error.code.name == code, "\(error)")
            #expect(error.message.contains("field 'fromSequence'") && error.message.contains(says), "\(error.message)")
        }
    }
}
