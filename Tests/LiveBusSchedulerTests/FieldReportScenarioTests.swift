import LiveBusClock
import LiveBusScheduler
import Testing

struct FieldReportScenarioTests {
    /// A backgrounded phone without a window gets no new status: the scheduler invents nothing, the session
    /// keeps the last sequence it received, and the stale date does its work until a window or a priority 10
    /// push brings the newest state (field report 001: the countdown moved on the home screen while the status
    /// stayed 조리 중, because the app fetched only in the foreground).
    @Test func backgroundedPhoneKeepsTheLastStatusUntilAWindowOrPush() {
        var s = makeScheduler(state: .foreground)
        #expect(s.offer(update(1), at: at(0)).sent == [Sent(1, .appConnection, .foregroundStream, at: 0)])
        _ = s.setAppState(.background, at: at(30))
        _ = s.requestBackgroundRefresh(earliestBegin: at(630), at: at(30))
        _ = s.setAppState(.suspended, at: at(35))
        #expect(s.offer(update(2, priority: 5), at: at(60)).isEmpty)
        #expect(s.offer(update(3, priority: 5), at: at(120)).isEmpty)
        #expect(s.advance(to: at(629)).isEmpty)
        #expect(s.lastDeliveredSequence(topic: "orders/A1001") == 1)
        #expect(s.status(at: at(629)).queued.map(\.sequence) == [3])
        #expect(s.advance(to: at(630)).sent == [Sent(3, .appConnection, .refreshWindow, at: 630)])
        #expect(s.advance(to: at(660)).isEmpty)
        #expect(s.offer(update(4), at: at(700)).sent == [Sent(4, .activityPush, .priority10Immediate, at: 700)])
        #expect(
            s.offer(update(5, terminal: true), at: at(800)).sent == [
                Sent(5, .activityPush, .priority10Immediate, at: 800)
            ]
        )
        #expect(s.nextDeadline == nil)
        #expect(s.status(at: at(800)).deliveredCount == 4)
        #expect(s.status(at: at(800)).coalescedCount == 1)
    }
}
