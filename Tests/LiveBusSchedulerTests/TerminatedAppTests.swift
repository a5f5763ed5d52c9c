import LiveBusClock
import LiveBusScheduler
import Testing

struct TerminatedAppTests {
    /// A force-quit app gets no refresh and no silent push, but its Live Activity still gets pushes: priority 10
    /// at once, priority 5 at the next wake (Push article: pushes reach the activity; DTS forum 719222).
    @Test func terminatedAppStillGetsActivityPushes() {
        var s = makeScheduler(state: .terminated)
        #expect(s.offer(update(1), at: at(0)).sent == [Sent(1, .activityPush, .priority10Immediate, at: 0)])
        #expect(s.offer(update(2, priority: 5), at: at(10)).isEmpty)
        #expect(s.offerSilentPush(update(1, topic: "orders/silent"), at: at(20)).isEmpty)
        _ = s.requestBackgroundRefresh(earliestBegin: at(30), at: at(20))
        #expect(s.nextDeadline == at(910))
        #expect(s.advance(to: at(910)).sent == [Sent(2, .activityPush, .idleWake, at: 910)])
        #expect(
            s.offer(update(3, terminal: true), at: at(1000)).sent == [
                Sent(3, .activityPush, .priority10Immediate, at: 1000)
            ]
        )
        let reasons = s.explain(last: 100).map(\.reason)
        #expect(reasons.contains(.silentPushDiscardedForceQuit))
        #expect(reasons.contains(.refreshDeniedForceQuit))
        #expect(s.status(at: at(1000)).openWindow == nil)
    }
}
