import LiveBusWire
import Testing

/// Message bodies and topics. Source: Protocol/PROTOCOL.md §4–§5.
struct MessageTests {
    /// A missing field is reported by its path.
    @Test func missingFieldIsNamed() {
        let body = Array(#"{"versions":[1],"client":"x","role":"session"}"#.utf8)
        #expect(throws: WireError(.invalidBody, "Hello body: field 'clientTime' is missing")) {
            _ = try WireJSON.decode(HelloBody.self, from: body)
        }
    }

    /// A wrong type is reported with its path.
    @Test func wrongTypeIsNamed() {
        let body = Array(
            #"{"versions":[1],"client":"x","role":"session","clientTime":1,"posture":{"foldState":3,"orientation":"portrait"}}"#
                .utf8
        )
        #expect(throws: WireError(.invalidBody, "Hello body: field 'posture.foldState' should be a string")) {
            _ = try WireJSON.decode(HelloBody.self, from: body)
        }
    }

    /// An unknown role names the value and the valid roles, never a Swift type name (review finding).
    @Test func unknownRoleNamesTheValueNotTheType() {
        let body = Array(#"{"versions":[1],"client":"x","role":"root","clientTime":1}"#.utf8)
        #expect(
            throws: WireError(
                .invalidBody,
                "Hello body: field 'role' has the value 'root', which is not allowed; use one of session, admin, publisher, observer"
            )
        ) {
            _ = try WireJSON.decode(HelloBody.self, from: body)
        }
        // A nested object of the wrong type: "an object", not the Swift type.
        let nested = Array(#"{"versions":[1],"client":"x","role":"session","clientTime":1,"posture":7}"#.utf8)
        #expect(throws: WireError(.invalidBody, "Hello body: field 'posture' should be an object (PROTOCOL.md)")) {
            _ = try WireJSON.decode(HelloBody.self, from: nested)
        }
    }

    /// Not JSON at all.
    @Test func garbageBody() {
        #expect(throws: WireError(.invalidBody, "Ping body is not a valid JSON object")) {
            _ = try WireJSON.decode(PingBody.self, from: Array("\u{1}\u{2}".utf8))
        }
    }

    /// Pattern matching: `*` one segment, `>` the rest (NATS semantics).
    @Test(arguments: [
        ("orders/>", "orders/A1", true), ("orders/>", "orders", false), ("orders/*", "orders/A1", true),
        ("orders/*", "orders/A1/x", false), ("orders/A1", "orders/A1", true), ("orders/A1", "orders/A2", false),
        (">", "a/b/c", true), ("*/x", "a/x", true),
    ])
    func patternMatching(pattern: String, topic: String, expected: Bool) {
        #expect(Topic.matches(pattern: pattern, topic: topic) == expected)
    }

    /// Invalid topics and patterns are rejected.
    @Test(arguments: ["", "a//b", "a/>/b", "a/b*", "has space", "orders/*"])
    func invalidTopics(topic: String) {
        #expect(throws: WireError.self) { try Topic.validate(topic) }
    }

    /// Valid patterns pass.
    @Test(arguments: ["orders/>", "orders/*", ">", "a/*/c"])
    func validPatterns(pattern: String) throws {
        try Topic.validatePattern(pattern)
    }
}

/// Session names (PROTOCOL.md §4.1): the words and ids commands address sessions by are refused.
@Suite struct SessionNameTests {
    @Test func reservedAndMalformedNamesAreRefused() {
        for n in ["all", "current", "s1", "s0", "s0042", "", "a b", "x\u{1B}", String(repeating: "n", count: 65)] {
            #expect(SessionName.problem(n) != nil, "\(n)")
        }
        for n in ["pro", "duo", "s", "s1x", "S1", "sx1", "current2", "Alle", String(repeating: "n", count: 64)] {
            #expect(SessionName.problem(n) == nil, "\(n)")
        }
        #expect(SessionName.problem("s7")?.contains("session id") == true)
        #expect(SessionName.problem("all")?.contains("reserved") == true)
    }
}

/// The SYNC frame (PROTOCOL.md §5.9) and the HELLO feature that asks for it.
struct SyncFrameTests {
    @Test func syncBodyRoundTripsWithSortedKeysAndLeavesOutANilReason() throws {
        let live = SyncBody(state: .live, since: 1_767_225_721_000, uncertaintyMs: 3)
        #expect(
            String(decoding: try WireJSON.encode(live), as: UTF8.self)
                == #"{"since":1767225721000,"state":"live","uncertaintyMs":3}"#
        )
        let degraded = SyncBody(state: .degraded, since: 5, uncertaintyMs: 0, reason: "NATS link closed")
        #expect(try WireJSON.decode(SyncBody.self, from: WireJSON.encode(degraded)) == degraded)
        #expect(FrameType(rawValue: 0x12) == .sync && FrameType.sync.description == "SYNC")
    }

    @Test func aSyncOutsideTheInstantRangeOrWithAnUnknownStateIsRefusedNamingTheField() {
        let far = Array(#"{"since":9999999999999999,"state":"live","uncertaintyMs":0}"#.utf8)
        #expect {
            _ = try WireJSON.decode(SyncBody.self, from: far)
        } throws: { e in
            (e as? WireError)?.code == .invalidValue && "\(e)".contains("'since'")
        }
        let odd = Array(#"{"since":1,"state":"asleep","uncertaintyMs":0}"#.utf8)
        #expect {
            _ = try WireJSON.decode(SyncBody.self, from: odd)
        } throws: { e in
            (e as? WireError)?.code == .invalidBody && "\(e)".contains("'state'")
        }
    }

    @Test func helloFeaturesAskForSyncAndAnOlderHelloAsksForNothing() throws {
        let old = Array(#"{"versions":[2],"client":"x","role":"session","clientTime":1}"#.utf8)
        #expect(try WireJSON.decodeHello(old).features == nil)
        #expect(try !WireJSON.decodeHello(old).wantsSync)
        let new = Array(#"{"versions":[2],"client":"x","role":"session","clientTime":1,"features":["x","sync"]}"#.utf8)
        #expect(try WireJSON.decodeHello(new).features == ["x", "sync"])
        #expect(try WireJSON.decodeHello(new).wantsSync)
        let other = Array(#"{"versions":[2],"client":"x","role":"session","clientTime":1,"features":["zstd"]}"#.utf8)
        #expect(try !WireJSON.decodeHello(other).wantsSync)
    }
}
