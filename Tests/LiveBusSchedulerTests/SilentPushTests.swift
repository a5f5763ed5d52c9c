import LiveBusClock
import LiveBusScheduler
import Testing

struct SilentPushTests {
    /// Silent pushes are limited to three per rolling hour; over the rate the device holds only the newest,
    /// and it is delivered when the rate allows (Apple: "two or three per hour"; "only holds the newest one").
    @Test func rateLimitedAndOnlyTheNewestHeld() {
        var s = makeScheduler()
        var sent: [Sent] = []
        for n in Int64(0)..<3 {
            sent += s.offerSilentPush(update(UInt64(n + 1), topic: "silent"), at: at(n * 60)).sent
        }
        #expect(sent.map(\.reason) == [.silentPushDelivered, .silentPushDelivered, .silentPushDelivered])
        #expect(sent.map(\.channel) == [.silentPush, .silentPush, .silentPush])
        #expect(s.offerSilentPush(update(4, topic: "silent"), at: at(600)).isEmpty)
        #expect(s.offerSilentPush(update(5, topic: "silent"), at: at(700)).isEmpty)
        #expect(s.explain(last: 2).map(\.reason) == [.silentPushReplaced, .silentPushRateLimited])
        #expect(s.status(at: at(700)).heldSilentPush == TopicSequence(topic: "silent", sequence: 5))
        #expect(s.status(at: at(700)).silentPushesLeft == 0)
        #expect(s.nextDeadline == at(3600))
        #expect(s.advance(to: at(3600)).sent == [Sent(5, .silentPush, .silentPushDelivered, at: 3600, topic: "silent")])
    }

    /// A delivered silent push gives the app a run window (30 s): queued updates go out on its connection
    /// (Apple: the handler has 30 s to fetch).
    @Test func silentPushOpensARunWindow() {
        var s = makeScheduler()
        _ = s.offer(update(1, priority: 5), at: at(0))
        let sent = s.offerSilentPush(update(1, topic: "silent"), at: at(10)).sent
        #expect(
            sent == [
                Sent(1, .silentPush, .silentPushDelivered, at: 10, topic: "silent"),
                Sent(1, .appConnection, .silentPushWindow, at: 10),
            ]
        )
        #expect(s.status(at: at(10)).openWindow == .silentPush)
        #expect(
            s.offer(update(2, priority: 5), at: at(39)).sent == [Sent(2, .appConnection, .silentPushWindow, at: 39)]
        )
        _ = s.advance(to: at(40))
        #expect(s.offer(update(3, priority: 5), at: at(41)).isEmpty)
    }

    /// Launching the app delivers the held silent push at once; force quit discards it (Apple: "If the user
    /// launches the app, the system immediately delivers the held notification"; "If something force quits or
    /// kills the app, the system discards the held notification").
    @Test func launchDeliversAndForceQuitDiscardsTheHeldPush() {
        let config = SchedulerConfig(refreshJitterMilliseconds: 0, silentPushesPerHour: 1)
        var launched = makeScheduler(config: config)
        _ = launched.offerSilentPush(update(1, topic: "silent"), at: at(0))
        #expect(launched.offerSilentPush(update(2, topic: "silent"), at: at(60)).isEmpty)
        #expect(
            launched.setAppState(.foreground, at: at(120)).sent == [
                Sent(2, .silentPush, .silentPushOnLaunch, at: 120, topic: "silent")
            ]
        )

        var quit = makeScheduler(config: config)
        _ = quit.offerSilentPush(update(1, topic: "silent"), at: at(0))
        _ = quit.offerSilentPush(update(2, topic: "silent"), at: at(60))
        _ = quit.setAppState(.terminated, at: at(120))
        #expect(quit.nextDeadline == nil)
        #expect(quit.status(at: at(120)).heldSilentPush == nil)
        #expect(quit.explain(last: 1).map(\.reason) == [.silentPushDiscardedForceQuit])
        #expect(quit.advance(to: at(7200)).isEmpty)
    }
}
