import LiveBusWire
import Testing

/// The Foundation-free EVENT/PUBLISH body codec (issue 15 item 3). Source: RFC 8259; Protocol/PROTOCOL.md §3, §5.1.
struct EventJSONTests {
    static let bodies: [EventBody] = {
        var withPlaces = GoldenVectors.event
        withPlaces.places = PlacesBody(
            store: PositionBody(latitude: 37.498, longitude: 127.0276),
            customer: PositionBody(latitude: -33.8688, longitude: 151.2093)
        )
        withPlaces.contentState.summary = SummaryBody(
            ko: "배달 중 \"곧\" 도착",
            en: "On the way\\n\t\u{1}/",
            detailKo: "라이더가 가고 있어요",
            detailEn: "Rider 🛵 is coming"
        )
        withPlaces.relevanceScore = 0.1
        withPlaces.contentState.progress = 1e-7
        withPlaces.staleDate = nil
        return [GoldenVectors.event, GoldenVectors.endEvent, withPlaces]
    }()

    /// The fast writer produces exactly Foundation's bytes (sorted keys, no whitespace), `client` left out.
    @Test(arguments: 0..<3)
    func encodesLikeFoundation(_ i: Int) throws {
        let body = Self.bodies[i]
        #expect(try EventJSON.encode(body) == WireJSON.encode(body))
        var withClient = body
        withClient.client = ClientInstantsBody(
            timestamp: 1,
            etaTarget: 2,
            staleDate: nil,
            dismissalDate: 4,
            lastConfirmed: 5,
            uncertaintyMs: 6
        )
        #expect(try EventJSON.encode(withClient) == WireJSON.encode(body))
    }

    /// Decoding gives back the body, equal to what Foundation decodes; a v1 `client` member is read past.
    @Test(arguments: 0..<3)
    func decodesLikeFoundation(_ i: Int) throws {
        let bytes = try WireJSON.encode(Self.bodies[i])
        #expect(try EventJSON.decode(bytes) == Self.bodies[i])
        #expect(try EventJSON.decode(bytes) == WireJSON.decode(EventBody.self, from: bytes))
        var v1 = bytes
        v1.removeLast()
        v1 += Array(
            #", "client" : {"timestamp":1,"etaTarget":2,"lastConfirmed":3,"uncertaintyMs":4}, "later":[1,{"x":null}] }"#
                .utf8
        )
        #expect(try EventJSON.decode(v1) == Self.bodies[i])
    }

    /// Whitespace, any key order, escapes (\u with a surrogate pair) and nulls for optional members are read.
    @Test func readsAnyLayout() throws {
        let text = """
             { "timestamp" : 5 , "priority":10, "relevanceScore": 2.5e1, "event":"up\\u0064ate",
              "staleDate": null, "dismissalDate": null, "places": null,
              "contentState": {"summary": {"en":"\\ud83d\\udef5 \\"x\\"", "ko":"\\uc870\\ub9ac", "detailEn": null},
                               "status":"cooking", "progress":0, "lastConfirmed":-3, "etaTarget":9, "riderPosition":null}}
            """
        let b = try EventJSON.decode(Array(text.utf8))
        #expect(b.event == "update")
        #expect(b.relevanceScore == 25)
        #expect(b.contentState.summary.en == "🛵 \"x\"")
        #expect(b.contentState.summary.ko == "조리")
        #expect(b.contentState.lastConfirmed == -3)
        #expect(b.staleDate == nil && b.places == nil && b.contentState.riderPosition == nil)
    }

    /// Errors name the field (its path) or the byte where the text stops being JSON.
    @Test(arguments: [
        (#"{"event":"update"}"#, "Event body: field 'timestamp' is missing"),
        (
            #"{"event":"update","timestamp":1,"relevanceScore":1,"priority":10,"contentState":{"status":3}}"#,
            "Event body: field 'contentState.status' should be a string"
        ),
        (
            #"{"event":"update","timestamp":1.5,"relevanceScore":1,"priority":10}"#,
            "Event body: field 'timestamp' should be an integer"
        ),
        (
            #"{"event":null,"timestamp":1,"relevanceScore":1,"priority":10}"#,
            "Event body: field 'event' is null; expected a string"
        ),
        (
            #"{"event":"update","timestamp":1,"relevanceScore":1,"priority":10,"contentState":{"status":"cooking","summary":{"ko":"x"}}}"#,
            "Event body: field 'contentState.summary.en' is missing"
        ),
        (
            #"{"event":"update","timestamp":99999999999999999999}"#,
            "Event body: field 'timestamp' is out of range for a 64-bit integer"
        ),
        (#"{"event":"update",}"#, "Event body is not a valid JSON object: expected a member name in quotes at byte 18"),
        (#"{"timestamp":01}"#, "Event body is not a valid JSON object: a number has a leading zero at byte 14"),
        (#"[1]"#, "Event body is not a valid JSON object: expected '{' at byte 0"),
        (
            #"{"event":"a","timestamp":1,"relevanceScore":1,"priority":10,"contentState":{"status":"s","summary":{"ko":"k","en":"e"},"etaTarget":1,"progress":0,"lastConfirmed":1}} x"#,
            "Event body is not a valid JSON object: unexpected data after the body's object at byte 166"
        ),
        (
            "{\"event\":\"a\u{1}\"}",
            "Event body is not a valid JSON object: a control character inside a string must be escaped at byte 11"
        ),
    ])
    func errorsNameTheField(text: String, message: String) {
        #expect(throws: WireError(.invalidBody, message)) { _ = try EventJSON.decode(Array(text.utf8)) }
    }

    /// A member name twice in one object is refused, naming it with its path, at any depth and whether or not the
    /// name is escaped (RFC 8259 §4 leaves such an object's meaning to each reader); the same names in different
    /// objects are fine.
    @Test(arguments: [
        (#"{"event":"end","event":"update"}"#, "field 'event' appears twice"),
        (#"{"event":"end","\u0065vent":"update"}"#, "field 'event' appears twice"),
        (#"{"\u0065vent":"end","event":"update"}"#, "field 'event' appears twice"),
        (
            #"{"event":"a","contentState":{"status":"s","status":"t"}}"#,
            "field 'contentState.status' appears twice"
        ),
    ])
    func refusesADuplicateMemberName(text: String, words: String) {
        #expect {
            _ = try EventJSON.decode(Array(text.utf8))
        } throws: { error in
            (error as? WireError).map { $0.code == .invalidBody && $0.message.contains(words) } ?? false
        }
    }

    @Test func theSameNameInTwoObjectsIsNotADuplicate() throws {
        let text =
            #"{"event":"a","timestamp":1,"relevanceScore":1,"priority":10,"contentState":{"status":"s","summary":{"ko":"k","en":"e"},"etaTarget":1,"progress":0,"lastConfirmed":1},"places":{"store":{"latitude":1,"longitude":2},"customer":{"latitude":3,"longitude":4}}}"#
        let body = try EventJSON.decode(Array(text.utf8))
        #expect(body.places?.customer?.latitude == 3 && body.places?.store?.longitude == 2)
    }

    /// Invalid UTF-8 inside a string and nesting past 64 levels are refused, never crash.
    @Test func refusesBadUTF8AndDeepNesting() {
        let bad: [UInt8] = Array(#"{"event":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(throws: WireError.self) { _ = try EventJSON.decode(bad) }
        let deep = #"{"x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
        #expect(throws: WireError.self) { _ = try EventJSON.decode(Array(deep.utf8)) }
        for cut in 0..<40 {
            let t = Array(try! WireJSON.encode(GoldenVectors.event).prefix(cut))
            #expect(throws: WireError.self) { _ = try EventJSON.decode(t) }
        }
    }

    /// The ACK body is the same bytes Foundation writes for ``AckBody``.
    @Test(arguments: [0, 3, UInt64.max])
    func ackBody(_ n: UInt64) throws {
        #expect(EventJSON.ackBody(sequence: n) == (try WireJSON.encode(AckBody(sequence: n))))
    }
}
