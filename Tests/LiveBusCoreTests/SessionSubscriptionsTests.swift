import LiveBusCore
import LiveBusWire
import Testing

/// A session's patterns as a value. Source: Protocol/PROTOCOL.md §5.2, §5.6.
@Suite struct SessionSubscriptionsTests {
    @Test func subscribeKeepsFirstPlacesAndReturnsTheSubscribesPatternsCompiled() throws {
        var s = SessionSubscriptions()
        let first = try s.subscribe(["orders/>", "menu/*"], limit: 10)
        #expect(first.map(\.pattern) == ["orders/>", "menu/*"])
        let again = try s.subscribe(["menu/*", "orders/A1", "menu/*"], limit: 10)
        #expect(again.map(\.pattern) == ["menu/*", "orders/A1"])
        #expect(s.patterns == ["orders/>", "menu/*", "orders/A1"])
        #expect(s.compiled.map(\.pattern) == s.patterns)
        #expect(s.matches("orders/A9") && s.matches("menu/today") && !s.matches("menu/a/b"))
    }

    @Test func badPatternsAndTheLimitChangeNothing() throws {
        var s = SessionSubscriptions()
        _ = try s.subscribe(["a/>"], limit: 2)
        #expect(throws: WireError(.invalidBody, "SUBSCRIBE body: field 'patterns' is empty")) {
            _ = try s.subscribe([], limit: 2)
        }
        do {
            _ = try s.subscribe(["b/>", "c/>/x"], limit: 2)
            Issue.record("a malformed pattern was accepted")
        } catch {
            #expect(error.code == .invalidTopic)
        }
        #expect(
            throws: WireError(
                .tooManySubscriptions,
                "SUBSCRIBE would hold 3 topic patterns; a session may hold 2 (--max-subscriptions). Use fewer, wider patterns (orders/>)"
            )
        ) {
            _ = try s.subscribe(["b/>", "c/>"], limit: 2)
        }
        #expect(s.patterns == ["a/>"])
        // Repeats of held patterns do not count against the limit.
        _ = try s.subscribe(["a/>", "b/>"], limit: 2)
        #expect(s.patterns == ["a/>", "b/>"])
    }

    @Test func unsubscribeRemovesOnlyWhatIsHeld() throws {
        var s = SessionSubscriptions(patterns: ["a/>", "b/*", "a/>"])
        #expect(s.patterns == ["a/>", "b/*"])
        let none = s.unsubscribe(["c/>"])
        let some = s.unsubscribe(["a/>"])
        #expect(!none && some)
        #expect(s.patterns == ["b/*"] && s.compiled.map(\.pattern) == ["b/*"])
        #expect(!s.matches("a/x") && s.matches("b/x"))
    }
}

extension SessionSubscriptionsTests {
    @Test func aResumeCatchesUpEveryMatchingTopicFromWhatTheClientApplied() {
        let s = SessionSubscriptions(patterns: ["orders/>"])
        let plan = s.resumeCatchUps(
            topics: ["menu/x", "orders/A1", "orders/A2"],
            applied: ["orders/A1": 7, "menu/x": 3]
        )
        #expect(plan.map(\.topic) == ["orders/A1", "orders/A2"])
        #expect(plan.map(\.after) == [7, 0])
    }
}
