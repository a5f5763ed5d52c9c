import LiveBusCore
import LiveBusWire
import Testing

/// The topic → subscribers index agrees with ``Topic/matches(pattern:topic:)`` (NATS subject semantics) and
/// follows subscription changes. Source: nats-server `server/sublist.go`; ISSUE-15 item 1.
struct TopicIndexTests {
    static let patterns = [
        "orders/A1", "orders/*", "orders/>", "*/A1", ">", "orders/*/eta", "orders/A1/>", "riders/*", "*", "*/*/*",
    ]
    static let topics = ["orders/A1", "orders/B2", "orders/A1/eta", "riders/r1", "orders", "x/y/z", "orders/A1/b/c"]

    @Test(arguments: patterns)
    func compiledPatternMatchesLikeTopicMatches(_ pattern: String) {
        let c = CompiledPattern(pattern)
        for t in Self.topics {
            #expect(c.matches(t) == Topic.matches(pattern: pattern, topic: t), "\(pattern) vs \(t)")
        }
    }

    @Test func subscribersAreThoseWithAMatchingPatternAscending() {
        var index = TopicIndex<Int>()
        for (i, p) in Self.patterns.enumerated() { index.setPatterns([p], for: 100 - i) }
        for t in Self.topics {
            let expected = Self.patterns.enumerated().filter { Topic.matches(pattern: $0.element, topic: t) }
                .map { 100 - $0.offset }.sorted()
            #expect(index.subscribers(of: t) == expected, "\(t)")
            #expect(index.subscribers(of: t) == expected, "\(t) (cached)")
        }
    }

    @Test func changesAndRemovalInvalidateTheCache() {
        var index = TopicIndex<Int>(cacheLimit: 2)
        index.setPatterns(["orders/*"], for: 1)
        index.setPatterns(["orders/A1", "riders/>"], for: 2)
        #expect(index.subscribers(of: "orders/A1") == [1, 2])
        index.setPatterns(["riders/>"], for: 2)
        #expect(index.subscribers(of: "orders/A1") == [1])
        #expect(index.isSubscribed(2, to: "riders/r1/x"))
        #expect(!index.isSubscribed(2, to: "orders/A1"))
        index.remove(1)
        #expect(index.subscribers(of: "orders/A1").isEmpty)
        #expect(index.patterns(of: 2) == ["riders/>"])
        #expect(index.count == 1)
        for t in ["riders/1", "riders/2", "riders/3"] { #expect(index.subscribers(of: t) == [2]) }
    }

    /// A caller's kept answer (the daemon's fan-out lists) is current exactly while the generation is unchanged.
    @Test func theGenerationCountsChangesOnly() {
        var index = TopicIndex<Int>()
        let g0 = index.generation
        index.setPatterns(["orders/*"], for: 1)
        let g1 = index.generation
        #expect(g1 != g0)
        index.setPatterns(["orders/*"], for: 1)  // the same patterns: nothing changed
        _ = index.subscribers(of: "orders/A1")  // a lookup changes nothing either
        #expect(index.generation == g1)
        index.setPatterns(["orders/*", "riders/>"], for: 1)
        let g2 = index.generation
        #expect(g2 != g1)
        index.remove(1)
        #expect(index.generation != g2)
        let g3 = index.generation
        index.remove(1)  // not subscribed any more
        #expect(index.generation == g3)
    }
}
