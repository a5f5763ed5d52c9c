import LiveBusClock
import LiveBusScheduler
import Testing

struct CoalescingTests {
    /// Priority 5 updates wait for the device to wake and coalesce so that only the newest per topic is kept;
    /// a priority 10 push on another topic wakes the device and they ride along (DTS forum 775340; issue:
    /// "coalesced so that the newest state wins").
    @Test func coalescingKeepsOnlyTheNewestAndAPriority10WakeReleasesIt() {
        var s = makeScheduler()
        for seq in UInt64(1)...5 {
            #expect(s.offer(update(seq, priority: 5), at: at(Int64(seq))).isEmpty)
        }
        let status = s.status(at: at(5))
        #expect(status.queued.map(\.sequence) == [5])
        #expect(status.queued.map(\.supersededCount) == [4])
        #expect(status.coalescedCount == 4)
        #expect(status.priority10BudgetLeft == 12)
        let woken = s.offer(update(1, topic: "orders/B2002"), at: at(60))
        #expect(
            woken.sent == [
                Sent(1, .activityPush, .priority10Immediate, at: 60, topic: "orders/B2002"),
                Sent(5, .activityPush, .wokenByPriority10, at: 60),
            ]
        )
        #expect(s.status(at: at(60)).priority10BudgetLeft == 11)
    }

    /// A priority 5 update held alone goes out when the device wakes on its own, at the idle-wake bound
    /// (15 min by default; ours, live-activities.md §6 [Derived]); the bound does not restart when newer
    /// updates supersede it.
    @Test func idleWakeReleasesHeldPriority5() {
        var s = makeScheduler()
        _ = s.offer(update(1, priority: 5), at: at(0))
        _ = s.offer(update(2, priority: 5), at: at(600))
        #expect(s.nextDeadline == at(900))
        #expect(s.advance(to: at(899)).isEmpty)
        #expect(s.advance(to: at(900)).sent == [Sent(2, .activityPush, .idleWake, at: 900)])
        #expect(s.nextDeadline == nil)
    }

    /// A priority 5 update that supersedes a throttled priority 10 update keeps its priority and its place:
    /// the newest state goes out when the throttle lifts, not later.
    @Test func supersedingKeepsPriority10() {
        let config = SchedulerConfig(priority10BudgetPerHour: 1, refreshJitterMilliseconds: 0)
        var s = makeScheduler(config: config)
        _ = s.offer(update(1), at: at(0))
        _ = s.offer(update(2), at: at(100))
        _ = s.offer(update(3, priority: 5), at: at(200))
        let queued = s.status(at: at(200)).queued
        #expect(queued.map(\.sequence) == [3])
        #expect(queued.map(\.effectivePriority) == [10])
        #expect(queued.map(\.hold) == [.throttled])
        #expect(s.advance(to: at(3600)).sent == [Sent(3, .activityPush, .throttleReleased, at: 3600)])
    }

    /// An update older than what the session already received is not sent again (ActivityKit ignores older
    /// content; DESIGN.md: each (topic, seq) is applied once).
    @Test func olderThanLastReceivedIsDiscarded() {
        var s = makeScheduler(state: .foreground)
        _ = s.offer(update(5), at: at(0))
        #expect(s.offer(update(4), at: at(1)).isEmpty)
        #expect(s.offer(update(5), at: at(2)).isEmpty)
        #expect(s.explain(last: 2).map(\.reason) == [.alreadyReceived, .alreadyReceived])
        #expect(s.explain(last: 2).map(\.outcome) == [.discarded, .discarded])
        #expect(s.lastDeliveredSequence(topic: "orders/A1001") == 5)
    }

    /// An update that arrives after a newer one is already queued is coalesced at once (the newest wins even
    /// when the transport reorders; Sending requests: "APNs may reorder").
    @Test func reorderedOlderUpdateIsCoalesced() {
        var s = makeScheduler()
        _ = s.offer(update(7, priority: 5), at: at(0))
        #expect(s.offer(update(6, priority: 5), at: at(1)).isEmpty)
        #expect(s.status(at: at(1)).queued.map(\.sequence) == [7])
        #expect(s.explain(last: 1).map(\.detail) == ["queued seq 7 is newer"])
    }
}
