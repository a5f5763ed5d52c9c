import LiveBusClock
import LiveBusCore
import LiveBusScheduler
import LiveBusWire

/// The refresh gate between the topic store and each session: what a backgrounded phone really receives.
/// Source: ../shared/reference/live-activities.md §2.4 (priority and budget), §3 (background refresh);
/// the rules themselves live in `LiveBusScheduler`.
extension Daemon {
    /// The scheduler configuration in real time: scenario durations divided by the time scale.
    var scaledSchedulerConfig: SchedulerConfig {
        var c = options.scheduler
        let k = max(options.timeScale, 0.001)
        func scale(_ v: Int64) -> Int64 { max(1, Int64((Double(v) / k).rounded())) }
        c.budgetWindowMilliseconds = scale(c.budgetWindowMilliseconds)
        c.throttleRetryDelayMilliseconds = scale(c.throttleRetryDelayMilliseconds)
        c.refreshMinimumIntervalMilliseconds = scale(c.refreshMinimumIntervalMilliseconds)
        c.lowPowerRefreshMinimumIntervalMilliseconds = scale(c.lowPowerRefreshMinimumIntervalMilliseconds)
        c.refreshJitterMilliseconds = scale(c.refreshJitterMilliseconds)
        c.windowRunTimeMilliseconds = scale(c.windowRunTimeMilliseconds)
        c.idleWakeIntervalMilliseconds = scale(c.idleWakeIntervalMilliseconds)
        return c
    }

    static func schedulerProfile(_ p: ProfileBody) -> SessionProfile {
        SessionProfile(lowPowerMode: p.lowPowerMode ?? false, frequentUpdates: p.frequentUpdates ?? false)
    }

    func startScheduler(_ s: Session) {
        var seedBytes: UInt64 = options.seed
        for b in s.id.utf8 { seedBytes = seedBytes &* 31 &+ UInt64(b) }
        s.scheduler = RefreshScheduler(
            config: scaledSchedulerConfig,
            profile: Daemon.schedulerProfile(s.profile),
            seed: seedBytes,
            now: clock.now(),
            appState: AppState(rawValue: s.appState) ?? .foreground
        )
    }

    /// Offers a stored event to the session's scheduler and writes whatever it releases.
    /// - Parameters:
    ///   - e: The event.
    ///   - s: The session.
    ///   - slot: The slot of the event's topic in the session (``Session/slot(for:number:)``).
    ///   - u: The event as the scheduler sees it (the same for every session: built once per fan-out).
    ///   - isTerminal: `e.isTerminal` (read once per fan-out).
    ///   - now: The fan-out's server instant.
    func offer(
        _ e: StoredEvent,
        to s: Session,
        slot: Int,
        update u: PendingUpdate,
        isTerminal: Bool,
        now: ServerInstant
    ) {
        // A foreground phone with nothing pending: straight through, no array, no timer to re-arm. Optional chaining
        // mutates the session's scheduler in place; the `s.scheduler != nil` that came first copied the whole
        // RefreshScheduler out of the session on every delivery (callgrind: a memcpy and an outlined copy). The gate
        // answers with a Bool: comparing its `Delivery?` with `!= nil` went through Optional's Equatable `!=` (four
        // outlined destroys of a `(Delivery?, Delivery?)` per delivery, ≈ 330 instructions).
        if let passed = s.scheduler?.passesThrough(u, slot: slot, at: now), passed {
            deliver(e, to: s, slot: slot, flags: [], isTerminal: isTerminal, now: now)
            return
        }
        guard s.scheduler != nil else {
            deliver(e, to: s, slot: slot, flags: [], isTerminal: isTerminal, now: now)  // no scheduler (an observer)
            return
        }
        let released = s.scheduler!.offer(u, at: now)
        apply(released, to: s, fresh: e)
    }

    /// Writes released updates (the newest stored state of each), then re-arms the scheduler's timer.
    /// - Parameters:
    ///   - deliveries: What the session's scheduler released.
    ///   - s: The session.
    ///   - fresh: The event just published, when there is one: released at once (the common case, a foreground
    ///     phone) it is written as it is, without reading it back from the store (with SQLite, a query and a JSON
    ///     decode per phone per event, two thirds of a fan-out's time in the profile).
    func apply(_ deliveries: [Delivery], to s: Session, fresh: StoredEvent? = nil) {
        for d in deliveries {
            let topic = d.update.topic
            if topic.hasPrefix(Daemon.apnsTopicPrefix) {  // a push from the APNs endpoint (Daemon+APNs.swift)
                releaseAPNsPush(d, to: s)
                continue
            }
            if let fresh, fresh.topic == topic, fresh.sequence == d.update.sequence {
                deliver(fresh, to: s)
                continue
            }
            // One row (`LIMIT 1`): the released update, or the newest state when the log no longer holds it.
            let e = store.events(topic: topic, from: d.update.sequence, limit: 1)?.first ?? store.latest(topic: topic)
            if let e { deliver(e, to: s) }
        }
        armScheduler(s)
    }

    func armScheduler(_ s: Session) {
        s.schedulerTimer?.cancel()
        s.schedulerTimer = nil
        guard let deadline = s.scheduler?.nextDeadline, s.phase == .established else { return }
        let delay = max(0, clock.now().milliseconds(to: deadline))
        s.schedulerTimer = loop.scheduleTimer(after: UInt64(delay), repeat: 0) { [unowned self, weak s] in
            guard let s, s.scheduler != nil else { return }
            let released = s.scheduler!.advance(to: self.clock.now())
            self.apply(released, to: s)
        }
    }

    func schedulerAppStateChanged(_ s: Session) {
        guard s.scheduler != nil, let state = AppState(rawValue: s.appState) else { return }
        var released = s.scheduler!.setAppState(state, at: clock.now())
        if state == .background {
            // Like an app that schedules its BGAppRefreshTask when it leaves the foreground (Apple's advice), ask for
            // the earliest window; the scheduler grants it at its own discretion.
            released += s.scheduler!.requestBackgroundRefresh(earliestBegin: clock.now(), at: clock.now())
        }
        apply(released, to: s)
    }

    func schedulerProfileChanged(_ s: Session) {
        guard s.scheduler != nil else { return }
        let released = s.scheduler!.setProfile(Daemon.schedulerProfile(s.profile), at: clock.now())
        apply(released, to: s)
    }
}
