import LiveBusClock
import LiveBusScheduler
import Testing

struct ForegroundStreamTests {
    /// Foreground: every update goes out at once on the app's live stream, whatever its priority, and draws no
    /// push budget (issue: "a live stream in the foreground"; Apple: choosing-background-strategies).
    @Test func foregroundStreamDeliversEverythingAtOnceWithoutBudget() {
        var s = makeScheduler(state: .foreground)
        var sent: [Sent] = []
        for seq in UInt64(1)...20 {
            sent += s.offer(update(seq, priority: seq.isMultiple(of: 2) ? 5 : 10), at: at(Int64(seq))).sent
        }
        #expect(sent == (UInt64(1)...20).map { Sent($0, .appConnection, .foregroundStream, at: Int64($0)) })
        let status = s.status(at: at(20))
        #expect(status.priority10BudgetLeft == 12)
        #expect(status.queued.isEmpty)
        #expect(status.deliveredCount == 20)
        #expect(s.nextDeadline == nil)
        #expect(s.lastDeliveredSequence(topic: "orders/A1001") == 20)
    }

    /// Coming to the foreground flushes the queue on the app's connection, newest state per topic, terminal
    /// updates kept (issue: "foregrounding flushes the queue"; DESIGN.md: coalescing, terminal never dropped).
    @Test func foregroundingFlushesTheQueueNewestPerTopic() {
        var s = makeScheduler(state: .suspended)
        _ = s.offer(update(1, priority: 5), at: at(1))
        _ = s.offer(update(2, priority: 5), at: at(2))
        _ = s.offer(update(1, topic: "orders/B2002", priority: 5), at: at(3))
        _ = s.offer(update(3, priority: 5, terminal: true), at: at(4))
        #expect(s.status(at: at(4)).queued.map(\.sequence) == [1, 3])
        let flushed = s.setAppState(.foreground, at: at(10))
        #expect(
            flushed.sent == [
                Sent(1, .appConnection, .foregroundFlush, at: 10, topic: "orders/B2002"),
                Sent(3, .appConnection, .foregroundFlush, at: 10),
            ]
        )
        #expect(s.status(at: at(10)).coalescedCount == 2)
        #expect(s.nextDeadline == nil)
    }

    /// Leaving the foreground ends the live stream: the next priority 5 update waits (issue: "in the background
    /// only during granted background-refresh windows").
    @Test func backgroundingEndsTheLiveStream() {
        var s = makeScheduler(state: .foreground)
        #expect(s.offer(update(1, priority: 5), at: at(1)).sent == [Sent(1, .appConnection, .foregroundStream, at: 1)])
        _ = s.setAppState(.background, at: at(2))
        #expect(s.offer(update(2, priority: 5), at: at(3)).isEmpty)
        #expect(s.status(at: at(3)).queued.map(\.hold) == [.opportunistic])
    }
}
