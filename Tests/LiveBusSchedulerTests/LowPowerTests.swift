import LiveBusClock
import LiveBusScheduler
import Testing

struct LowPowerTests {
    /// In Low Power Mode even priority 10 does not wake the device: it waits until the device wakes on its own
    /// and then draws on the budget (DTS forum 775340: "even priority 10 may not be enough to wake it up").
    @Test func priority10WaitsForTheDeviceToWake() {
        var s = makeScheduler(profile: SessionProfile(lowPowerMode: true))
        #expect(s.offer(update(1), at: at(0)).isEmpty)
        #expect(s.status(at: at(0)).queued.map(\.hold) == [.lowPowerNoWake])
        #expect(s.status(at: at(0)).priority10BudgetLeft == 12)
        #expect(s.nextDeadline == at(900))
        #expect(s.advance(to: at(900)).sent == [Sent(1, .activityPush, .idleWake, at: 900)])
        #expect(s.status(at: at(900)).priority10BudgetLeft == 11)
    }

    /// With the Low Power Mode wake rule switched off in the config, priority 10 goes at once.
    @Test func ruleCanBeSwitchedOff() {
        var s = makeScheduler(
            config: SchedulerConfig(refreshJitterMilliseconds: 0, lowPowerBlocksPriority10Wake: false),
            profile: SessionProfile(lowPowerMode: true)
        )
        #expect(s.offer(update(1), at: at(0)).sent == [Sent(1, .activityPush, .priority10Immediate, at: 0)])
    }

    /// Turning Low Power Mode off releases held priority 10 pushes at once.
    @Test func leavingLowPowerModeReleasesHeldPushes() {
        var s = makeScheduler(profile: SessionProfile(lowPowerMode: true))
        _ = s.offer(update(1), at: at(0))
        _ = s.offer(update(1, topic: "orders/B2002", priority: 5), at: at(1))
        let released = s.setProfile(.default, at: at(100))
        #expect(
            released.sent == [
                Sent(1, .activityPush, .lowPowerEnded, at: 100),
                Sent(1, .activityPush, .wokenByPriority10, at: 100, topic: "orders/B2002"),
            ]
        )
    }

    /// Low Power Mode does not change the foreground stream.
    @Test func foregroundIsUnaffected() {
        var s = makeScheduler(profile: SessionProfile(lowPowerMode: true), state: .foreground)
        #expect(s.offer(update(1), at: at(0)).sent == [Sent(1, .appConnection, .foregroundStream, at: 0)])
    }
}
