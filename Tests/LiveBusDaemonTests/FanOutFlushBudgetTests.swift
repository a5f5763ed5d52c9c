import Testing

@testable import LiveBusDaemon

/// ``FanOutFlushBudget``: when the fan-out flushes as it goes (ISSUE-15 item 5).
struct FanOutFlushBudgetTests {
    /// Events fanned out until the budget asks for a flush, at `n` deliveries each.
    private func eventsPerFlush(_ n: Int) -> Int {
        var b = FanOutFlushBudget()
        for i in 1...100_000 where b.note(deliveries: n) { return i }
        return -1
    }

    /// N = 100: 4,096 deliveries (41 events); N = 1000: 32 events, not 5 (one write per subscriber per 32 frames,
    /// where 4,096 deliveries alone made it one per 4); N = 2000 and 10,000: 32,768 deliveries (17 and 4 events);
    /// N = 1: 4,096 events.
    @Test func flushesAfterEnoughDeliveriesAndEvents() {
        #expect(eventsPerFlush(100) == 41)
        #expect(eventsPerFlush(1000) == 32)
        #expect(eventsPerFlush(2000) == 17)
        #expect(eventsPerFlush(10_000) == 4)
        #expect(eventsPerFlush(40_000) == 1)
        #expect(eventsPerFlush(1) == 4096)
    }

    /// After a flush the counts start again, so flushes come at the same rhythm; the running total counts every
    /// delivery; an event with no subscriber counts as an event, never as a delivery.
    @Test func countsStartAgainAfterAFlush() {
        var b = FanOutFlushBudget()
        var flushes: [Int] = []
        for i in 1...128 where b.note(deliveries: 1000) { flushes.append(i) }
        #expect(flushes == [32, 64, 96, 128])
        #expect(b.deliveries == 0 && b.events == 0)
        #expect(b.total == 128_000)
        let flushed = b.note(deliveries: 0)
        #expect(!flushed)
        #expect(b.deliveries == 0 && b.events == 1 && b.total == 128_000)
    }
}
