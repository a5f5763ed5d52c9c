import LiveBusClock
import LiveBusScheduler
import Testing

struct BackgroundRefreshTests {
    /// A granted window opens at the earliest begin date (jitter 0 here), lasts 30 s, and the app fetches the
    /// queued state on its own connection (BGAppRefreshTask: "up to 30 seconds"; earliestBeginDate: "won't begin
    /// sooner").
    @Test func grantedWindowOpensAtEarliestBeginAndFlushes() {
        var s = makeScheduler(state: .suspended)
        _ = s.offer(update(1, priority: 5), at: at(1))
        _ = s.requestBackgroundRefresh(earliestBegin: at(600), at: at(2))
        #expect(s.status(at: at(2)).nextRefreshWindowAtMilliseconds == at(600).millisecondsSinceEpoch)
        // The held priority 5 update would go out at idle wake (15 min); the window comes first.
        #expect(s.nextDeadline == at(600))
        #expect(s.advance(to: at(599)).isEmpty)
        #expect(s.advance(to: at(600)).sent == [Sent(1, .appConnection, .refreshWindow, at: 600)])
        // Inside the window updates go on the app's connection at once.
        #expect(s.offer(update(2, priority: 5), at: at(610)).sent == [Sent(2, .appConnection, .refreshWindow, at: 610)])
        #expect(s.status(at: at(610)).openWindowEndsAtMilliseconds == at(630).millisecondsSinceEpoch)
        #expect(s.nextDeadline == at(630))
        #expect(s.advance(to: at(630)).isEmpty)
        #expect(s.status(at: at(630)).openWindow == nil)
        // After the window the app is asleep again: priority 5 waits.
        #expect(s.offer(update(3, priority: 5), at: at(631)).isEmpty)
        #expect(s.explain(last: 10).map(\.reason).contains(.appWindowClosed))
    }

    /// Jitter comes from the seeded generator: the same seed gives the same window, and it stays within
    /// 0...refreshJitter (issue: "jitter"; "deterministic for a given seed").
    @Test(arguments: [UInt64(1), 2, 42, 0xDEAD_BEEF])
    func jitterIsSeededAndBounded(seed: UInt64) {
        func windowStart(_ seed: UInt64) -> Int64? {
            var s = makeScheduler(config: .default, seed: seed)
            _ = s.requestBackgroundRefresh(earliestBegin: at(600), at: at(0))
            return s.status(at: at(0)).nextRefreshWindowAtMilliseconds
        }
        var generator = SplitMix64(seed: seed)
        let expected = at(600).millisecondsSinceEpoch + generator.milliseconds(upTo: 300_000)
        #expect(windowStart(seed) == expected)
        #expect(windowStart(seed) == windowStart(seed))
        let jitter = (windowStart(seed) ?? 0) - at(600).millisecondsSinceEpoch
        #expect((0...300_000).contains(jitter))
    }

    /// Denied: a force-quit app gets no background refresh, and force quit drops the pending request
    /// (DTS forum 719222); Background App Refresh off makes the request unavailable (submitTaskRequest docs).
    @Test func windowsDeniedWhenForceQuitOrSwitchedOff() {
        var quit = makeScheduler(state: .terminated)
        _ = quit.requestBackgroundRefresh(earliestBegin: at(60), at: at(0))
        #expect(quit.nextDeadline == nil)
        #expect(quit.explain(last: 1).map(\.reason) == [.refreshDeniedForceQuit])
        #expect(quit.explain(last: 1).map(\.outcome) == [.denied])

        var dropped = makeScheduler(state: .suspended)
        _ = dropped.requestBackgroundRefresh(earliestBegin: at(60), at: at(0))
        #expect(dropped.nextDeadline == at(60))
        _ = dropped.setAppState(.terminated, at: at(30))
        #expect(dropped.nextDeadline == nil)
        #expect(dropped.advance(to: at(3600)).isEmpty)
        #expect(dropped.status(at: at(3600)).refreshWindowsInLastDay == 0)

        var off = makeScheduler(profile: SessionProfile(backgroundAppRefreshEnabled: false))
        _ = off.requestBackgroundRefresh(earliestBegin: at(60), at: at(0))
        #expect(off.nextDeadline == nil)
        #expect(off.explain(last: 1).map(\.reason) == [.refreshDeniedDisabled])
    }

    /// Windows are at least the minimum interval apart (15 min by default, ours), even if asked earlier.
    @Test func minimumIntervalBetweenWindows() {
        var s = makeScheduler()
        _ = s.requestBackgroundRefresh(earliestBegin: at(60), at: at(0))
        _ = s.advance(to: at(60))
        _ = s.requestBackgroundRefresh(earliestBegin: at(120), at: at(100))
        #expect(s.nextDeadline == at(960))
        _ = s.advance(to: at(959))
        #expect(s.status(at: at(959)).refreshWindowsInLastDay == 1)
        _ = s.advance(to: at(960))
        #expect(s.status(at: at(960)).refreshWindowsInLastDay == 2)
    }

    /// The daily budget caps windows per rolling day; the next one waits until the oldest leaves the day
    /// (WWDC20 10063: "energy and data budget"; the number is ours).
    @Test func dailyBudgetDefersTheNextWindow() {
        let config = SchedulerConfig(
            refreshMinimumIntervalMilliseconds: 0,
            refreshJitterMilliseconds: 0,
            dailyRefreshBudget: 2
        )
        var s = makeScheduler(config: config)
        _ = s.requestBackgroundRefresh(earliestBegin: at(100), at: at(0))
        _ = s.advance(to: at(100))
        _ = s.requestBackgroundRefresh(earliestBegin: at(200), at: at(150))
        _ = s.advance(to: at(200))
        _ = s.requestBackgroundRefresh(earliestBegin: at(300), at: at(250))
        #expect(s.nextDeadline == at(100 + 86_400))
        #expect(s.status(at: at(250)).refreshWindowsInLastDay == 2)
    }

    /// Only one refresh request is pending per app; a new one replaces it (submitTaskRequest: "replaces the
    /// previous task request").
    @Test func newRequestReplacesThePendingOne() {
        var s = makeScheduler()
        _ = s.requestBackgroundRefresh(earliestBegin: at(600), at: at(0))
        _ = s.requestBackgroundRefresh(earliestBegin: at(1800), at: at(10))
        #expect(s.nextDeadline == at(1800))
        #expect(s.explain(last: 2).map(\.reason) == [.refreshRequestReplaced, .refreshScheduled])
        _ = s.advance(to: at(1800))
        #expect(s.status(at: at(1800)).refreshWindowsInLastDay == 1)
        _ = s.advance(to: at(1830))
        #expect(s.nextDeadline == nil)
        _ = s.advance(to: at(86_000))
        #expect(s.status(at: at(86_000)).refreshWindowsInLastDay == 1)
    }

    /// Low Power Mode grants fewer windows: one hour apart instead of 15 min, and a smaller daily budget (ours;
    /// Apple: Low Power Mode pauses "discretionary and background activities").
    @Test func lowPowerModeGrantsFewerWindows() {
        var s = makeScheduler(profile: SessionProfile(lowPowerMode: true))
        _ = s.requestBackgroundRefresh(earliestBegin: at(60), at: at(0))
        _ = s.advance(to: at(60))
        _ = s.requestBackgroundRefresh(earliestBegin: at(120), at: at(100))
        #expect(s.nextDeadline == at(3660))
        #expect(s.status(at: at(100)).dailyRefreshBudget == 6)
        _ = s.setProfile(.default, at: at(200))
        #expect(s.nextDeadline == at(960))
    }

    /// A window that falls due while the app is in the foreground waits until it is backgrounded ("the system
    /// doesn't guarantee launching the task at the specified date").
    @Test func windowWaitsWhileForeground() {
        var s = makeScheduler(state: .foreground)
        _ = s.requestBackgroundRefresh(earliestBegin: at(60), at: at(0))
        #expect(s.nextDeadline == nil)
        #expect(s.advance(to: at(120)).isEmpty)
        #expect(s.setAppState(.background, at: at(200)).isEmpty)
        #expect(s.status(at: at(200)).openWindow == .backgroundRefresh)
        #expect(s.offer(update(1, priority: 5), at: at(210)).sent == [Sent(1, .appConnection, .refreshWindow, at: 210)])
        #expect(s.status(at: at(200)).refreshWindowsInLastDay == 1)
    }

    /// A request whose earliest begin date has passed opens its window in the same call (jitter 0) and the
    /// app fetches the queued state ("nil = no start delay", earliestBeginDate docs).
    @Test func pastEarliestBeginOpensAtOnce() {
        var s = makeScheduler()
        _ = s.offer(update(1, priority: 5), at: at(0))
        #expect(
            s.requestBackgroundRefresh(earliestBegin: at(0), at: at(10)).sent == [
                Sent(1, .appConnection, .refreshWindow, at: 10)
            ]
        )
        #expect(s.status(at: at(10)).openWindow == .backgroundRefresh)
    }
}
