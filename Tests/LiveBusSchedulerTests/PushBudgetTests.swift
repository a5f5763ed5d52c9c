import LiveBusClock
import LiveBusScheduler
import Testing

struct PushBudgetTests {
    /// Priority 10 draws on the rolling hourly budget; once it is spent the next push is throttled (delayed,
    /// never dropped) until a slot frees one hour after the oldest spend (Push article: "may throttle"; the
    /// number 3 is this test's config).
    @Test func budgetSpentThenDelayedUntilASlotFrees() {
        var s = makeScheduler(config: SchedulerConfig(priority10BudgetPerHour: 3, refreshJitterMilliseconds: 0))
        #expect(
            s.offer(update(1, topic: "orders/A"), at: at(0)).sent == [
                Sent(1, .activityPush, .priority10Immediate, at: 0, topic: "orders/A")
            ]
        )
        #expect(s.offer(update(1, topic: "orders/B"), at: at(10)).count == 1)
        #expect(s.offer(update(1, topic: "orders/C"), at: at(20)).count == 1)
        #expect(s.offer(update(1, topic: "orders/D"), at: at(30)).isEmpty)
        let status = s.status(at: at(30))
        #expect(status.priority10BudgetLeft == 0)
        #expect(status.nextBudgetSlotAtMilliseconds == at(3600).millisecondsSinceEpoch)
        #expect(status.queued.map(\.hold) == [.throttled])
        #expect(status.queued.map(\.releaseAtMilliseconds) == [at(3600).millisecondsSinceEpoch])
        #expect(s.nextDeadline == at(3600))
        #expect(s.advance(to: at(3599)).isEmpty)
        #expect(
            s.advance(to: at(3600)).sent == [Sent(1, .activityPush, .throttleReleased, at: 3600, topic: "orders/D")]
        )
        #expect(s.status(at: at(3600)).priority10BudgetLeft == 0)
        #expect(s.status(at: at(3610)).priority10BudgetLeft == 1)
    }

    /// A throttled push is retried no sooner than the throttle retry delay, even if a slot frees earlier
    /// (ours: APNs stores and retries; default 60 s).
    @Test func throttleRetryDelayIsRespected() {
        let config = SchedulerConfig(
            priority10BudgetPerHour: 1,
            throttleRetryDelayMilliseconds: 600_000,
            refreshJitterMilliseconds: 0
        )
        var s = makeScheduler(config: config)
        #expect(s.offer(update(1), at: at(0)).count == 1)
        #expect(s.offer(update(2), at: at(3590)).isEmpty)
        #expect(s.nextDeadline == at(4190))
        #expect(s.advance(to: at(4189)).isEmpty)
        #expect(s.advance(to: at(4190)).sent == [Sent(2, .activityPush, .throttleReleased, at: 4190)])
    }

    /// The frequent-updates setting raises the hourly budget: 12 by default, 60 with frequent updates (both
    /// ours; WWDC23 10185: "higher update budget").
    @Test(arguments: [(false, 12), (true, 60)])
    func frequentUpdatesRaisesTheBudget(frequent: Bool, budget: Int) {
        var s = makeScheduler(config: .default, profile: SessionProfile(frequentUpdates: frequent))
        var immediate = 0
        for n in 0...budget {
            immediate += s.offer(update(1, topic: "orders/\(n)"), at: at(Int64(n))).count
        }
        #expect(immediate == budget)
        #expect(s.status(at: at(Int64(budget))).queued.map(\.topic) == ["orders/\(budget)"])
        #expect(s.status(at: at(Int64(budget))).priority10Budget == budget)
    }

    /// Turning frequent updates on while a push is throttled releases it at once (the higher budget applies
    /// from then on).
    @Test func turningFrequentUpdatesOnReleasesThrottledPushes() {
        var s = makeScheduler()
        for n in 0..<12 { _ = s.offer(update(1, topic: "orders/\(n)"), at: at(Int64(n))) }
        #expect(s.offer(update(1, topic: "orders/late"), at: at(20)).isEmpty)
        let released = s.setProfile(SessionProfile(frequentUpdates: true), at: at(100))
        #expect(released.sent == [Sent(1, .activityPush, .budgetRaised, at: 100, topic: "orders/late")])
        #expect(s.status(at: at(100)).priority10BudgetLeft == 60 - 13)
    }

    /// Terminal events are never dropped: a throttled terminal update waits for its slot, later updates on the
    /// same topic ride behind it, and all of them go out in sequence order (issue: "nothing is lost, only
    /// delayed or coalesced"; DESIGN.md: terminal events are never dropped).
    @Test func terminalEventsAreNeverDropped() {
        let config = SchedulerConfig(
            priority10BudgetPerHour: 1,
            throttleRetryDelayMilliseconds: 0,
            refreshJitterMilliseconds: 0
        )
        var s = makeScheduler(config: config)
        #expect(s.offer(update(1), at: at(0)).count == 1)
        #expect(s.offer(update(2), at: at(10)).isEmpty)  // throttled
        #expect(s.offer(update(3, terminal: true), at: at(20)).isEmpty)  // supersedes 2, still throttled
        #expect(s.offer(update(4, priority: 5, terminal: true), at: at(30)).isEmpty)  // the end event rides behind 3
        #expect(s.offer(update(5, priority: 5), at: at(40)).isEmpty)  // rides behind too
        #expect(s.offer(update(6, priority: 5), at: at(50)).isEmpty)  // supersedes 5
        #expect(s.status(at: at(50)).queued.map(\.sequence) == [3, 4, 6])
        #expect(s.status(at: at(50)).queued.map(\.hold) == [.throttled, .throttled, .throttled])
        #expect(s.advance(to: at(3599)).isEmpty)
        #expect(
            s.advance(to: at(3600)).sent == [
                Sent(3, .activityPush, .throttleReleased, at: 3600),
                Sent(4, .activityPush, .throttleReleased, at: 3600),
                Sent(6, .activityPush, .throttleReleased, at: 3600),
            ]
        )
        #expect(s.status(at: at(3600)).coalescedCount == 2)
        #expect(s.explain(last: 100).filter { $0.outcome == .coalesced }.map(\.sequence) == [2, 5])
    }

    /// Two terminal updates on one topic are both kept through foregrounding (terminal updates are never
    /// coalesced away).
    @Test func twoTerminalUpdatesSurviveCoalescing() {
        var s = makeScheduler(state: .suspended)
        _ = s.offer(update(1, priority: 5, terminal: true), at: at(1))
        _ = s.offer(update(2, priority: 5, terminal: true), at: at(2))
        #expect(s.setAppState(.foreground, at: at(3)).map(\.update.sequence) == [1, 2])
    }
}
