import LiveBusClock

/// Decides, for one session, when an update may reach the phone and on which channel, the way iOS does it.
///
/// A pure, seeded state machine on the server clock (milliseconds). Every mutating method takes the current
/// instant, first runs every rule that fell due up to it (in time order), and returns the deliveries the caller
/// must apply in order; a delivered update means "send this (topic, sequence) to the client now". The caller
/// arms a timer for ``nextDeadline`` and calls ``advance(to:)`` when it fires. Instants earlier than one already
/// seen are treated as that one (the scheduler's clock never goes back).
///
/// Rules, in short:
/// - Foreground: every update goes out at once on the app's connection (live stream).
/// - Background or suspended: the app's connection is used only inside a granted window (background refresh,
///   or the run time of a delivered silent push); opening a window flushes the queue.
/// - Otherwise the Live Activity push channel: priority 10 goes at once and draws on a rolling hourly budget;
///   once spent it is throttled (delayed, never dropped). Priority 5 never draws on the budget and waits until
///   the device is awake: woken by a priority 10 push, or on its own within the idle-wake interval. In Low Power
///   Mode even priority 10 may not wake the device.
/// - Coalescing: a newer update supersedes queued older non-terminal updates with the same coalescing key.
///   Terminal updates are never coalesced away.
/// - Force quit: no refresh windows, no silent pushes; Live Activity pushes still reach the activity.
/// - Every decision goes to a bounded explain log with a reason code, words and the rule's source.
///
/// When nothing can be delivered the scheduler invents nothing: the client's stale date does its work.
///
/// - Note: Source: ../shared/reference/live-activities.md §2.1, §2.4, §2.7, §3; field report 001
///   (a backgrounded phone's countdown moves while its status stays frozen).
public struct RefreshScheduler: Sendable {
    /// The queued update of one coalescing key and why it waits.
    ///
    /// Updates that arrive behind a queued terminal update on the same key ride along as `followers` and go out
    /// right after it, in order, as one push: the newest state wins, terminal updates are never lost, and the
    /// client still sees each topic's sequences in order.
    struct Entry: Sendable, Equatable {
        var update: PendingUpdate
        var followers: [PendingUpdate] = []
        /// Priority 10, or it superseded (or carries) a priority 10 update.
        var immediate: Bool
        var hold: HoldReason
        var since: ServerInstant
        /// Throttled: the retry instant. Wake-gated: the idle-wake bound.
        var releaseAt: ServerInstant
        var supersededCount: Int = 0

        /// The head and its followers, in delivery order.
        var updates: [PendingUpdate] { [update] + followers }
    }

    /// The one pending background refresh request.
    struct RefreshRequest: Sendable, Equatable {
        var earliestBegin: ServerInstant
        var requestedAt: ServerInstant
        var jitterMilliseconds: Int64
    }

    /// An open app run window.
    struct AppWindow: Sendable, Equatable {
        var kind: AppWindowKind
        var opened: ServerInstant
        var end: ServerInstant
    }

    /// A silent push the device holds (only the newest).
    struct HeldSilentPush: Sendable, Equatable {
        var update: PendingUpdate
        var since: ServerInstant
    }

    static let hourMilliseconds: Int64 = 3_600_000
    static let maximumStepsPerCall = 100_000

    /// The numbers in force.
    public private(set) var config: SchedulerConfig
    /// The session's device and user settings.
    public private(set) var profile: SessionProfile
    /// The app state.
    public private(set) var appState: AppState
    /// The latest instant the scheduler has seen, server clock.
    public private(set) var clock: ServerInstant

    private var random: SplitMix64
    private var queue: [Entry] = []
    private var budgetSpends: [ServerInstant] = []
    private var silentSpends: [ServerInstant] = []
    private var heldSilent: HeldSilentPush?
    private var pendingRefresh: RefreshRequest?
    private var refreshOpens: [ServerInstant] = []
    private var window: AppWindow?
    /// The highest sequence delivered per topic (``LastDelivered``).
    private var lastDelivered = LastDelivered()
    private var log: DecisionRing
    private var coalescedTotal = 0
    private var deliveredTotal = 0

    /// Creates the scheduler of one session.
    ///
    /// - Parameters:
    ///   - config: The numbers to decide with (``SchedulerConfig/default`` documents ours).
    ///   - profile: Low Power Mode, frequent updates and Background App Refresh settings.
    ///   - seed: Seed of the generator that draws refresh jitter; equal seeds give equal decisions.
    ///   - now: The current instant, server clock.
    ///   - appState: The app state at `now`; defaults to `foreground`.
    public init(
        config: SchedulerConfig,
        profile: SessionProfile,
        seed: UInt64,
        now: ServerInstant,
        appState: AppState = .foreground
    ) {
        self.config = config
        self.profile = profile
        self.random = SplitMix64(seed: seed)
        self.clock = now
        self.appState = appState
        self.log = DecisionRing(capacity: config.explainLogCapacity)
    }

    // MARK: - Inputs

    /// Moves the app to state `s`.
    ///
    /// Foregrounding delivers the held silent push and flushes the queue on the app's connection. Force quit
    /// (`terminated`) closes any window, discards the held silent push and drops the pending refresh request;
    /// queued updates stay and still go out as Live Activity pushes.
    ///
    /// - Parameters:
    ///   - s: The new app state.
    ///   - now: The current instant, server clock.
    /// - Returns: The deliveries to apply, in order.
    /// - Note: Source: https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app
    ///   ("If the user launches the app, the system immediately delivers the held notification"; force quit
    ///   discards it); https://developer.apple.com/forums/thread/719222
    public mutating func setAppState(_ s: AppState, at now: ServerInstant) -> [Delivery] {
        var out = process(upTo: now)
        let t = clock
        guard s != appState else { return out }
        let previous = appState
        appState = s
        switch s {
        case .foreground:
            if let w = window {
                window = nil
                record(
                    t,
                    nil,
                    .closed,
                    .appWindowClosed,
                    nil,
                    "\(w.kind.rawValue) window ended early: app in foreground"
                )
            }
            if let held = heldSilent {
                heldSilent = nil
                out.append(
                    deliver(
                        held.update,
                        via: .silentPush,
                        reason: .silentPushOnLaunch,
                        at: t,
                        detail: "held since \(held.since)"
                    )
                )
                dropSuperseded(by: held.update, at: t)
            }
            out += flush(reason: .foregroundFlush, at: t)
        case .background, .suspended:
            break
        case .terminated:
            if let w = window {
                window = nil
                record(t, nil, .closed, .appWindowClosed, nil, "\(w.kind.rawValue) window ended: app force-quit")
            }
            if let held = heldSilent {
                heldSilent = nil
                record(t, held.update, .discarded, .silentPushDiscardedForceQuit, nil, "held since \(held.since)")
            }
            if let request = pendingRefresh {
                pendingRefresh = nil
                record(
                    t,
                    nil,
                    .denied,
                    .refreshDeniedForceQuit,
                    nil,
                    "pending request (earliest begin \(request.earliestBegin)) dropped; was \(previous.rawValue)"
                )
            }
        }
        out += process(upTo: t)
        checkInvariants()
        return out
    }

    /// Changes the session's profile (Low Power Mode, frequent updates, Background App Refresh).
    ///
    /// A raised budget or Low Power Mode turned off releases waiting priority 10 pushes at once. Background App
    /// Refresh turned off, or a daily refresh budget of 0, denies the pending refresh request.
    ///
    /// - Parameters:
    ///   - p: The new profile.
    ///   - now: The current instant, server clock.
    /// - Returns: The deliveries to apply, in order.
    public mutating func setProfile(_ p: SessionProfile, at now: ServerInstant) -> [Delivery] {
        var out = process(upTo: now)
        let t = clock
        profile = p
        if let request = pendingRefresh {
            if !p.backgroundAppRefreshEnabled {
                pendingRefresh = nil
                record(
                    t,
                    nil,
                    .denied,
                    .refreshDeniedDisabled,
                    nil,
                    "pending request (earliest begin \(request.earliestBegin)) dropped"
                )
            } else if config.dailyRefreshBudget(for: p) == 0 {
                pendingRefresh = nil
                record(
                    t,
                    nil,
                    .denied,
                    .refreshDeniedBudget,
                    nil,
                    "pending request (earliest begin \(request.earliestBegin)) dropped"
                )
            }
        }
        var woke = false
        var kept: [Entry] = []
        for var entry in queue {
            let reconsider: Bool
            switch entry.hold {
            case .lowPowerNoWake: reconsider = !lowPowerBlocksWake
            case .throttled: reconsider = budgetLeft(at: t) > 0
            case .opportunistic: reconsider = false
            }
            if reconsider {
                let reason: DecisionReason = entry.hold == .lowPowerNoWake ? .lowPowerEnded : .budgetRaised
                let sent = tryImmediate(&entry, at: t, deliveredReason: reason, deviceAwake: false)
                if !sent.isEmpty {
                    out += sent
                    woke = true
                    continue
                }
            }
            kept.append(entry)
        }
        queue = kept
        if woke { out += wake(at: t, reason: .wokenByPriority10) }
        out += process(upTo: t)
        checkInvariants()
        return out
    }

    /// The refresh gate's fast path: an update for a foreground app with nothing queued, held or windowed goes
    /// straight through (``DecisionReason/foregroundStream``, recorded in the explain log like ``offer(_:at:)``)
    /// without building an array of deliveries.
    ///
    /// - Parameters:
    ///   - u: The update.
    ///   - now: The current instant, server clock.
    /// - Returns: The delivery, or `nil` when the fast path does not apply: call ``offer(_:at:)`` then (it also
    ///   records an update already received).
    /// - Complexity: O(1), no allocation once the update's topic has been delivered before and the log is full.
    public mutating func passThrough(_ u: PendingUpdate, at now: ServerInstant) -> Delivery? {
        passThrough(u, slot: -1, at: now)
    }

    /// ``passThrough(_:at:)`` with the caller's number for `u.topic` (a session's topic slot: the same number for
    /// every update of that topic, small and dense), so that the fast path finds the topic's last delivered
    /// sequence by index instead of hashing the topic's name, a third of the gate's cost per delivery (callgrind,
    /// fan-out to 100 phones). A number that names another topic is noticed (the topic is compared) and only costs
    /// the hash.
    ///
    /// - Parameters:
    ///   - u: The update.
    ///   - slot: The caller's number for `u.topic` (0, 1, 2, …), or -1 for none.
    ///   - now: The current instant, server clock.
    /// - Returns: As ``passThrough(_:at:)``.
    /// - Complexity: O(1), no allocation once the update's topic has been delivered before and the log is full.
    public mutating func passThrough(_ u: PendingUpdate, slot: Int, at now: ServerInstant) -> Delivery? {
        guard passesThrough(u, slot: slot, at: now) else { return nil }
        return Delivery(update: u, channel: .appConnection, reason: .foregroundStream, at: clock)
    }

    /// ``passThrough(_:slot:at:)`` without building its ``Delivery`` (for a caller that writes `u` itself when it
    /// passes): the same checks, the same counters and decision log entry.
    ///
    /// - Parameters:
    ///   - u: The update.
    ///   - slot: The caller's number for `u.topic` (0, 1, 2, …), or -1 for none.
    ///   - now: The current instant, server clock.
    /// - Returns: `true` when `u` was delivered on the app's connection now (what ``passThrough(_:slot:at:)``
    ///   returns a delivery for), `false` when the fast path does not apply: call ``offer(_:at:)`` then.
    /// - Complexity: O(1), no allocation once the update's topic has been delivered before and the log is full.
    public mutating func passesThrough(_ u: PendingUpdate, slot: Int, at now: ServerInstant) -> Bool {
        // `case .some` reads the held push in place: `heldSilent == nil` copied it (its strings retained and released)
        // on every delivery (callgrind).
        if case .some = heldSilent { return false }
        guard appState == .foreground, queue.isEmpty, window == nil, u.sequence > 0 else { return false }
        guard lastDelivered.advance(u.topic, slot: slot, to: u.sequence) else { return false }
        // Nothing can fall due while the app is in the foreground with an empty queue and no window.
        clock = max(clock, now)
        deliveredTotal += 1
        // The same decision as `record(…)` writes, updated in place in the ring's oldest entry when that one is a
        // live-stream delivery too (no Decision built, no strings released and retained but the topic's).
        log.appendDelivery(
            atMilliseconds: clock.millisecondsSinceEpoch,
            topic: u.topic,
            sequence: u.sequence,
            reason: .foregroundStream,
            channel: .appConnection,
            detail: "live stream"
        )
        return true
    }

    /// Offers an update for this session: delivered now, or queued, throttled, held or coalesced.
    ///
    /// - Parameters:
    ///   - u: The update (topic, sequence, priority, terminal flag).
    ///   - now: The current instant, server clock.
    /// - Returns: The deliveries to apply, in order (those that fell due before `now` first).
    /// - Note: Source: live-activities.md §2.4 (priority and budget), §2.7 (latest stored), §6 [Derived].
    public mutating func offer(_ u: PendingUpdate, at now: ServerInstant) -> [Delivery] {
        var out = process(upTo: now)
        let t = clock
        if let last = lastDelivered[u.topic], u.sequence == last || (u.sequence < last && !u.isTerminal) {
            record(t, u, .discarded, .alreadyReceived, nil, "last received seq \(last) on \(u.topic)")
            return out
        }
        if appState == .foreground {
            out.append(deliver(u, via: .appConnection, reason: .foregroundStream, at: t, detail: "live stream"))
            return out
        }
        if let w = window {
            let reason: DecisionReason = w.kind == .backgroundRefresh ? .refreshWindow : .silentPushWindow
            out.append(deliver(u, via: .appConnection, reason: reason, at: t, detail: "window open until \(w.end)"))
            return out
        }
        // The device is asleep: the Live Activity push channel decides, one queue entry per coalescing key.
        guard let i = queue.firstIndex(where: { $0.update.coalescingKey == u.coalescingKey }) else {
            let fresh = Entry(update: u, immediate: u.isImmediate, hold: .opportunistic, since: t, releaseAt: t)
            out += enqueue(fresh, at: t)
            checkInvariants()
            return out
        }
        var group = queue[i]
        if group.updates.contains(where: { $0.topic == u.topic && $0.sequence == u.sequence }) {
            coalescedTotal += 1
            record(t, u, .coalesced, .coalesced, nil, "same sequence already queued (\(group.hold.rawValue))")
            return out
        }
        if !u.isTerminal, let newer = group.updates.first(where: { $0.isNewer(than: u) }) {
            coalescedTotal += 1
            record(t, u, .coalesced, .coalesced, nil, "queued seq \(newer.sequence) is newer")
            return out
        }
        if group.update.isTerminal {
            // `u` rides behind the queued terminal update and goes out right after it, in order.
            var kept: [PendingUpdate] = []
            for follower in group.followers {
                if !follower.isTerminal && u.isNewer(than: follower) {
                    coalescedTotal += 1
                    group.supersededCount += 1
                    record(t, follower, .coalesced, .coalesced, nil, "superseded by seq \(u.sequence)")
                } else {
                    kept.append(follower)
                }
            }
            group.followers = kept + [u]
            let becomesImmediate = u.isImmediate && !group.immediate
            group.immediate = group.immediate || u.isImmediate
            record(
                t,
                u,
                .delayed,
                Self.holdReason(group.hold),
                nil,
                "queued behind terminal seq \(group.update.sequence) (\(group.hold.rawValue)); goes out right after it"
            )
            if becomesImmediate {
                queue.remove(at: i)
                out += enqueue(group, at: t)
            } else {
                queue[i] = group
            }
            checkInvariants()
            return out
        }
        // The queued entry is an older non-terminal update: `u` supersedes it and keeps its place in line.
        queue.remove(at: i)
        coalescedTotal += 1
        record(t, group.update, .coalesced, .coalesced, nil, "superseded by seq \(u.sequence)")
        let successor = Entry(
            update: u,
            immediate: u.isImmediate || group.immediate,
            hold: group.hold,
            since: group.since,
            releaseAt: group.releaseAt,
            supersededCount: group.supersededCount + 1
        )
        out += enqueue(successor, at: t)
        checkInvariants()
        return out
    }

    /// Offers a silent (background, `content-available`) push to the app.
    ///
    /// Force-quit app: discarded. Foreground: delivered at once. Otherwise delivered within the hourly rate,
    /// giving the app a run window in which the queue is flushed on its connection; over the rate it is held,
    /// and a newer silent push replaces the held one.
    ///
    /// - Parameters:
    ///   - u: The update the silent push announces.
    ///   - now: The current instant, server clock.
    /// - Returns: The deliveries to apply, in order.
    /// - Note: Source: https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app
    ///   ("discards the older notification and only holds the newest one"; "two or three per hour").
    public mutating func offerSilentPush(_ u: PendingUpdate, at now: ServerInstant) -> [Delivery] {
        var out = process(upTo: now)
        let t = clock
        switch appState {
        case .terminated:
            record(t, u, .discarded, .silentPushDiscardedForceQuit, nil, "app force-quit")
        case .foreground:
            out.append(deliver(u, via: .silentPush, reason: .silentPushDelivered, at: t, detail: "app in foreground"))
            dropSuperseded(by: u, at: t)
        case .background, .suspended:
            if let slot = nextSilentSlot(at: t), slot <= t {
                out += deliverSilentInBackground(u, at: t)
            } else {
                if let old = heldSilent {
                    record(t, old.update, .discarded, .silentPushReplaced, nil, "replaced by seq \(u.sequence)")
                }
                heldSilent = HeldSilentPush(update: u, since: t)
                let slotText = nextSilentSlot(at: t).map { "\($0)" } ?? "never (rate 0)"
                record(
                    t,
                    u,
                    .delayed,
                    .silentPushRateLimited,
                    nil,
                    "\(silentUsed(at: t))/\(config.silentPushesPerHour) used; next slot \(slotText)"
                )
            }
        }
        checkInvariants()
        return out
    }

    /// Submits the app's background refresh request; it replaces the pending one, if any.
    ///
    /// The window opens in this call if it is due now, else on a later ``advance(to:)`` (see ``nextDeadline``):
    /// never before `earliestBegin`, at least the minimum interval after the previous window, plus seeded jitter,
    /// within the daily budget.
    /// Denied when the app was force-quit, when Background App Refresh is off, or when the daily budget is 0.
    ///
    /// - Parameters:
    ///   - earliestBegin: The earliest begin date, server clock.
    ///   - now: The current instant, server clock.
    /// - Returns: The deliveries to apply, in order (a window opening now flushes the queue).
    /// - Note: Source: https://developer.apple.com/documentation/backgroundtasks/bgtaskrequest/earliestbegindate ;
    ///   https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler/submittaskrequest(_:completionhandler:)
    public mutating func requestBackgroundRefresh(earliestBegin: ServerInstant, at now: ServerInstant) -> [Delivery] {
        var out = process(upTo: now)
        let t = clock
        if appState == .terminated {
            record(t, nil, .denied, .refreshDeniedForceQuit, nil, "earliest begin \(earliestBegin)")
            return out
        }
        if !profile.backgroundAppRefreshEnabled {
            record(t, nil, .denied, .refreshDeniedDisabled, nil, "earliest begin \(earliestBegin)")
            return out
        }
        if config.dailyRefreshBudget(for: profile) == 0 {
            record(t, nil, .denied, .refreshDeniedBudget, nil, "earliest begin \(earliestBegin)")
            return out
        }
        if let old = pendingRefresh {
            record(
                t,
                nil,
                .replaced,
                .refreshRequestReplaced,
                nil,
                "earliest begin \(old.earliestBegin) replaced by \(earliestBegin)"
            )
        }
        let jitter = random.milliseconds(upTo: config.refreshJitterMilliseconds)
        pendingRefresh = RefreshRequest(earliestBegin: earliestBegin, requestedAt: t, jitterMilliseconds: jitter)
        let at = refreshWindowStart().map { "\($0)" } ?? "when the app is backgrounded"
        record(
            t,
            nil,
            .scheduled,
            .refreshScheduled,
            nil,
            "window at \(at) (earliest begin \(earliestBegin), jitter \(jitter) ms)"
        )
        out += process(upTo: t)
        checkInvariants()
        return out
    }

    /// Runs every rule due up to `now`: windows opening and closing, throttled pushes released as budget slots
    /// free, held pushes released at idle wake, held silent pushes released as the rate allows.
    ///
    /// - Parameter now: The current instant, server clock.
    /// - Returns: The deliveries to apply, in order.
    public mutating func advance(to now: ServerInstant) -> [Delivery] {
        let out = process(upTo: now)
        checkInvariants()
        return out
    }

    // MARK: - Outputs

    /// The instant at which the caller must call ``advance(to:)`` next, server clock, or `nil` when nothing is
    /// pending. It is never before ``clock``; when it equals ``clock``, call `advance` at once.
    public var nextDeadline: ServerInstant? { earliestDeadline() }

    /// The highest sequence the session received on `topic`, or `nil` if none.
    public func lastDeliveredSequence(topic: String) -> UInt64? { lastDelivered[topic] }

    /// The last `n` decisions of the explain log, oldest first (at most ``SchedulerConfig/explainLogCapacity``).
    ///
    /// - Parameter n: How many decisions to return.
    /// - Returns: The decisions, oldest first.
    public func explain(last n: Int) -> [Decision] { log.last(n) }

    /// A snapshot for `livebus status --json`: app state, open and next window, budget left, queue, counts and
    /// the last five decisions. It reports the state as of the last mutating call, with budgets counted at `now`.
    ///
    /// - Parameter now: The instant to count budgets at, server clock (earlier than ``clock`` counts as ``clock``).
    /// - Returns: The snapshot.
    public func status(at now: ServerInstant) -> SchedulerStatus {
        let t = max(now, clock)
        let left = budgetLeft(at: t)
        return SchedulerStatus(
            atMilliseconds: t.millisecondsSinceEpoch,
            appState: appState,
            profile: profile,
            openWindow: window?.kind,
            openWindowEndsAtMilliseconds: window?.end.millisecondsSinceEpoch,
            nextRefreshWindowAtMilliseconds: appState == .terminated
                ? nil : refreshWindowStart()?.millisecondsSinceEpoch,
            refreshEarliestBeginMilliseconds: pendingRefresh?.earliestBegin.millisecondsSinceEpoch,
            refreshWindowsInLastDay: refreshOpens.filter {
                $0 > t.advanced(byMilliseconds: -SchedulerConfig.refreshDayMilliseconds)
            }.count,
            dailyRefreshBudget: config.dailyRefreshBudget(for: profile),
            priority10Budget: config.priority10Budget(for: profile),
            priority10BudgetLeft: left,
            nextBudgetSlotAtMilliseconds: left > 0 ? nil : nextBudgetSlot(at: t).millisecondsSinceEpoch,
            silentPushesLeft: max(0, config.silentPushesPerHour - silentUsed(at: t)),
            heldSilentPush: heldSilent.map { TopicSequence(topic: $0.update.topic, sequence: $0.update.sequence) },
            queued: queue.flatMap { entry in
                entry.updates.map {
                    QueuedUpdate(
                        topic: $0.topic,
                        sequence: $0.sequence,
                        priority: $0.priority,
                        effectivePriority: entry.immediate ? 10 : 5,
                        isTerminal: $0.isTerminal,
                        hold: entry.hold,
                        heldSinceMilliseconds: entry.since.millisecondsSinceEpoch,
                        releaseAtMilliseconds: entry.releaseAt.millisecondsSinceEpoch,
                        supersededCount: $0 == entry.update ? entry.supersededCount : 0
                    )
                }
            },
            coalescedCount: coalescedTotal,
            deliveredCount: deliveredTotal,
            lastDelivered: lastDelivered.all.sorted { $0.topic < $1.topic }.map {
                TopicSequence(topic: $0.topic, sequence: $0.sequence)
            },
            nextDeadlineMilliseconds: earliestDeadline()?.millisecondsSinceEpoch,
            recentDecisions: explain(last: 5)
        )
    }

    // MARK: - The machine

    /// Runs every step whose deadline is at or before `now`, in time order.
    private mutating func process(upTo now: ServerInstant) -> [Delivery] {
        var out: [Delivery] = []
        var steps = 0
        while let due = earliestDeadline(), due <= now, steps < Self.maximumStepsPerCall {
            let t = max(due, clock)
            clock = t
            out += step(at: t)
            steps += 1
        }
        assert(steps < Self.maximumStepsPerCall, "RefreshScheduler made no progress")
        clock = max(clock, now)
        prune(at: clock)
        return out
    }

    /// Everything due at `t`.
    private mutating func step(at t: ServerInstant) -> [Delivery] {
        var out: [Delivery] = []
        if let w = window, w.end <= t {
            window = nil
            record(t, nil, .closed, .appWindowClosed, nil, "\(w.kind.rawValue) window opened at \(w.opened)")
        }
        if appState.isBackgrounded, window == nil, let start = refreshWindowStart(), start <= t {
            out += openRefreshWindow(at: t)
        }
        if appState.isBackgrounded, let held = heldSilent, let slot = nextSilentSlot(at: t), slot <= t {
            heldSilent = nil
            out += deliverSilentInBackground(held.update, at: t)
        }
        var woke = false
        var kept: [Entry] = []
        for var entry in queue {
            if entry.hold == .throttled, entry.releaseAt <= t {
                let sent = tryImmediate(&entry, at: t, deliveredReason: .throttleReleased, deviceAwake: false)
                if !sent.isEmpty {
                    out += sent
                    woke = true
                    continue
                }
            }
            kept.append(entry)
        }
        queue = kept
        if woke {
            out += wake(at: t, reason: .wokenByPriority10)
        } else if queue.contains(where: { $0.hold != .throttled && $0.releaseAt <= t }) {
            out += wake(at: t, reason: .idleWake)
        }
        return out
    }

    /// The earliest pending deadline.
    private func earliestDeadline() -> ServerInstant? {
        var candidates: [ServerInstant] = queue.map(\.releaseAt)
        if let w = window { candidates.append(w.end) }
        if appState.isBackgrounded, window == nil, let start = refreshWindowStart() { candidates.append(start) }
        if appState.isBackgrounded, heldSilent != nil, let slot = nextSilentSlot(at: clock) { candidates.append(slot) }
        return candidates.min().map { max($0, clock) }
    }

    /// Queues `entry` (fresh, or succeeding an older one) under the rule its priority calls for: priority 10 goes
    /// at once if it can (waking the device), priority 5 waits for the device to wake.
    private mutating func enqueue(_ e: Entry, at t: ServerInstant) -> [Delivery] {
        var entry = e
        if entry.immediate {
            let sent = tryImmediate(&entry, at: t, deliveredReason: .priority10Immediate, deviceAwake: false)
            if sent.isEmpty {
                queue.append(entry)
                return []
            }
            return sent + wake(at: t, reason: .wokenByPriority10)
        }
        if entry.hold != .opportunistic { entry.since = t }
        entry.hold = .opportunistic
        entry.releaseAt = entry.since.advanced(byMilliseconds: max(0, config.idleWakeIntervalMilliseconds))
        queue.append(entry)
        record(
            t,
            entry.update,
            .delayed,
            .priority5Held,
            nil,
            "until the device wakes, at the latest \(entry.releaseAt)"
        )
        return []
    }

    /// Sends a priority 10 push now if Low Power Mode lets it wake the device and the budget allows (one budget
    /// slot for the entry and its followers); otherwise updates `entry` to its new hold and returns nothing (the
    /// caller keeps it queued).
    private mutating func tryImmediate(
        _ entry: inout Entry,
        at t: ServerInstant,
        deliveredReason: DecisionReason,
        deviceAwake: Bool
    ) -> [Delivery] {
        if !deviceAwake && lowPowerBlocksWake {
            if entry.hold != .lowPowerNoWake { entry.since = t }
            entry.hold = .lowPowerNoWake
            entry.releaseAt = entry.since.advanced(byMilliseconds: max(0, config.idleWakeIntervalMilliseconds))
            record(
                t,
                entry.update,
                .delayed,
                .lowPowerHeld,
                nil,
                "until the device wakes, at the latest \(entry.releaseAt)"
            )
            return []
        }
        let limit = config.priority10Budget(for: profile)
        let used = budgetUsed(at: t)
        if used < limit {
            budgetSpends.append(t)
            return deliverGroup(
                entry,
                via: .activityPush,
                reason: deliveredReason,
                at: t,
                detail: "budget \(used + 1)/\(limit) used in the rolling hour"
            )
        }
        let retry = max(
            nextBudgetSlot(at: t),
            t.advanced(byMilliseconds: max(0, config.throttleRetryDelayMilliseconds))
        )
        if entry.hold != .throttled { entry.since = t }
        entry.hold = .throttled
        entry.releaseAt = retry
        record(t, entry.update, .delayed, .priority10Throttled, nil, "budget \(used)/\(limit) used; retry at \(retry)")
        return []
    }

    /// The device is awake at `t`: held priority 5 pushes go out, and priority 10 pushes held by Low Power Mode
    /// go out if the budget allows (else they are throttled).
    private mutating func wake(at t: ServerInstant, reason: DecisionReason) -> [Delivery] {
        var out: [Delivery] = []
        var kept: [Entry] = []
        for var entry in queue {
            switch entry.hold {
            case .opportunistic:
                out += deliverGroup(
                    entry,
                    via: .activityPush,
                    reason: reason,
                    at: t,
                    detail: "held since \(entry.since)"
                )
            case .lowPowerNoWake:
                let sent = tryImmediate(&entry, at: t, deliveredReason: reason, deviceAwake: true)
                if sent.isEmpty {
                    kept.append(entry)
                } else {
                    out += sent
                }
            case .throttled:
                kept.append(entry)
            }
        }
        queue = kept
        return out
    }

    /// The reason code recorded for an update that waits with `hold`.
    static func holdReason(_ hold: HoldReason) -> DecisionReason {
        switch hold {
        case .throttled: .priority10Throttled
        case .opportunistic: .priority5Held
        case .lowPowerNoWake: .lowPowerHeld
        }
    }

    /// Opens the background refresh window at `t` and flushes the queue on the app's connection.
    private mutating func openRefreshWindow(at t: ServerInstant) -> [Delivery] {
        let request = pendingRefresh
        pendingRefresh = nil
        refreshOpens.append(t)
        let end = t.advanced(byMilliseconds: max(0, config.windowRunTimeMilliseconds))
        window = AppWindow(kind: .backgroundRefresh, opened: t, end: end)
        let begin = request.map { "\($0.earliestBegin)" } ?? "none"
        record(t, nil, .opened, .refreshWindowOpened, nil, "until \(end) (earliest begin \(begin))")
        return flush(reason: .refreshWindow, at: t)
    }

    /// Delivers a silent push while the app is backgrounded; it gives the app a run window unless one is open.
    private mutating func deliverSilentInBackground(_ u: PendingUpdate, at t: ServerInstant) -> [Delivery] {
        silentSpends.append(t)
        var out = [
            deliver(
                u,
                via: .silentPush,
                reason: .silentPushDelivered,
                at: t,
                detail: "\(silentUsed(at: t))/\(config.silentPushesPerHour) used in the rolling hour"
            )
        ]
        dropSuperseded(by: u, at: t)
        if window == nil {
            let end = t.advanced(byMilliseconds: max(0, config.windowRunTimeMilliseconds))
            window = AppWindow(kind: .silentPush, opened: t, end: end)
            record(t, nil, .opened, .silentPushWindow, nil, "app runs until \(end)")
            out += flush(reason: .silentPushWindow, at: t)
        }
        return out
    }

    /// Delivers the whole queue on the app's connection, in order.
    private mutating func flush(reason: DecisionReason, at t: ServerInstant) -> [Delivery] {
        let entries = queue
        queue = []
        var out: [Delivery] = []
        for entry in entries {
            out += deliverGroup(
                entry,
                via: .appConnection,
                reason: reason,
                at: t,
                detail: "was \(entry.hold.rawValue) since \(entry.since)"
            )
        }
        return out
    }

    /// Delivers an entry's head and followers, in order.
    private mutating func deliverGroup(
        _ entry: Entry,
        via channel: Channel,
        reason: DecisionReason,
        at t: ServerInstant,
        detail: String
    ) -> [Delivery] {
        var out: [Delivery] = []
        for u in entry.updates { out.append(deliver(u, via: channel, reason: reason, at: t, detail: detail)) }
        return out
    }

    /// Removes queued non-terminal updates that `u` (just delivered) supersedes.
    private mutating func dropSuperseded(by u: PendingUpdate, at t: ServerInstant) {
        func superseded(_ q: PendingUpdate) -> Bool {
            !q.isTerminal && q.coalescingKey == u.coalescingKey && (u.isNewer(than: q) || u == q)
        }
        var kept: [Entry] = []
        for var entry in queue {
            for q in entry.updates where superseded(q) {
                coalescedTotal += 1
                record(t, q, .coalesced, .coalesced, nil, "superseded by delivered seq \(u.sequence)")
            }
            if superseded(entry.update) { continue }  // a non-terminal head has no followers
            entry.followers.removeAll(where: superseded)
            kept.append(entry)
        }
        queue = kept
    }

    /// Records and returns one delivery.
    private mutating func deliver(
        _ u: PendingUpdate,
        via channel: Channel,
        reason: DecisionReason,
        at t: ServerInstant,
        detail: String
    ) -> Delivery {
        lastDelivered[u.topic] = max(lastDelivered[u.topic] ?? u.sequence, u.sequence)
        deliveredTotal += 1
        record(t, u, .delivered, reason, channel, detail)
        return Delivery(update: u, channel: channel, reason: reason, at: t)
    }

    /// Appends a decision to the bounded explain log.
    private mutating func record(
        _ t: ServerInstant,
        _ u: PendingUpdate?,
        _ outcome: DecisionOutcome,
        _ reason: DecisionReason,
        _ channel: Channel?,
        _ detail: String
    ) {
        log.append(
            Decision(
                atMilliseconds: t.millisecondsSinceEpoch,
                topic: u?.topic,
                sequence: u?.sequence,
                outcome: outcome,
                reason: reason,
                channel: channel,
                detail: detail
            )
        )
    }

    // MARK: - Budgets and windows

    private var lowPowerBlocksWake: Bool { profile.lowPowerMode && config.lowPowerBlocksPriority10Wake }

    private var budgetWindow: Int64 { max(1, config.budgetWindowMilliseconds) }

    /// Priority 10 pushes delivered in the rolling budget window ending at `t`.
    private func budgetUsed(at t: ServerInstant) -> Int {
        let start = t.advanced(byMilliseconds: -budgetWindow)
        return budgetSpends.filter { $0 > start && $0 <= t }.count
    }

    private func budgetLeft(at t: ServerInstant) -> Int {
        max(0, config.priority10Budget(for: profile) - budgetUsed(at: t))
    }

    /// When the rolling window ending at `t` next holds fewer than the budget (`t` if it already does).
    private func nextBudgetSlot(at t: ServerInstant) -> ServerInstant {
        let start = t.advanced(byMilliseconds: -budgetWindow)
        let inWindow = budgetSpends.filter { $0 > start && $0 <= t }.sorted()
        let limit = config.priority10Budget(for: profile)
        guard inWindow.count >= limit else { return t }
        return inWindow[inWindow.count - limit].advanced(byMilliseconds: budgetWindow)
    }

    private func silentUsed(at t: ServerInstant) -> Int {
        let start = t.advanced(byMilliseconds: -Self.hourMilliseconds)
        return silentSpends.filter { $0 > start && $0 <= t }.count
    }

    /// When the next silent push may be delivered (`t` if now), or `nil` if the rate is 0.
    private func nextSilentSlot(at t: ServerInstant) -> ServerInstant? {
        let limit = config.silentPushesPerHour
        guard limit > 0 else { return nil }
        let start = t.advanced(byMilliseconds: -Self.hourMilliseconds)
        let inWindow = silentSpends.filter { $0 > start && $0 <= t }.sorted()
        guard inWindow.count >= limit else { return t }
        return inWindow[inWindow.count - limit].advanced(byMilliseconds: Self.hourMilliseconds)
    }

    /// When the pending refresh request's window opens under the current profile, or `nil` if none can open.
    private func refreshWindowStart() -> ServerInstant? {
        guard let request = pendingRefresh, profile.backgroundAppRefreshEnabled else { return nil }
        let budget = config.dailyRefreshBudget(for: profile)
        guard budget > 0 else { return nil }
        var start = max(request.earliestBegin, request.requestedAt)
        if let last = refreshOpens.last {
            start = max(start, last.advanced(byMilliseconds: config.refreshMinimumInterval(for: profile)))
        }
        start = start.advanced(byMilliseconds: request.jitterMilliseconds)
        let day = SchedulerConfig.refreshDayMilliseconds
        let recent = refreshOpens.filter { $0 > start.advanced(byMilliseconds: -day) }
        if recent.count >= budget {
            start = max(start, recent[recent.count - budget].advanced(byMilliseconds: day))
        }
        return start
    }

    /// Forgets spends and window openings too old to matter at `t`.
    private mutating func prune(at t: ServerInstant) {
        let budgetStart = t.advanced(byMilliseconds: -budgetWindow)
        budgetSpends.removeAll { $0 <= budgetStart }
        let hourStart = t.advanced(byMilliseconds: -Self.hourMilliseconds)
        silentSpends.removeAll { $0 <= hourStart }
        let dayStart = t.advanced(byMilliseconds: -SchedulerConfig.refreshDayMilliseconds)
        if refreshOpens.count > 1 {
            // Keep the latest opening for the minimum interval even when it is older than a day.
            let latest = refreshOpens[refreshOpens.count - 1]
            refreshOpens.removeAll { $0 <= dayStart }
            if refreshOpens.isEmpty { refreshOpens = [latest] }
        }
    }

    /// Debug-only checks: the queue is empty whenever the app's connection is live.
    private func checkInvariants() {
        assert(queue.isEmpty || (appState != .foreground && window == nil), "queued updates while the app runs")
        assert(Set(queue.map(\.update.coalescingKey)).count == queue.count, "two entries under one coalescing key")
        assert(queue.allSatisfy { $0.followers.isEmpty || $0.update.isTerminal }, "followers behind a non-terminal")
    }
}

/// The explain log: the newest `capacity` decisions in a ring (appending overwrites the oldest in place; nothing
/// shifts).
struct DecisionRing: Sendable {
    private var storage: [Decision] = []
    private var head = 0  // the oldest entry once the ring is full
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        // Grown as decisions come, not reserved: 64 decisions reserved for every phone at HELLO were 5.7 KB of an
        // idle session's 11.5 KB of heap (massif, 1,000 idle sessions). A busy phone fills it within 64 updates.
    }

    /// Appends `d`, dropping the oldest when full.
    /// - Complexity: O(1).
    mutating func append(_ d: Decision) {
        if storage.count < capacity {
            storage.append(d)
        } else {
            storage[head] = d
            head = (head + 1) % capacity
        }
    }

    /// Appends the decision `Decision(atMilliseconds:topic:sequence:outcome: .delivered, reason:channel:detail:)`,
    /// as ``append(_:)`` does; when the entry it overwrites has the same outcome, reason, channel and detail, only its
    /// instant, topic and sequence are written.
    /// - Complexity: O(1).
    @inline(__always)
    mutating func appendDelivery(
        atMilliseconds t: Int64,
        topic: String,
        sequence: UInt64,
        reason: DecisionReason,
        channel: Channel,
        detail: String
    ) {
        if storage.count == capacity, storage[head].outcome == .delivered, storage[head].reason == reason,
            storage[head].channel == channel, storage[head].detail == detail
        {
            storage[head].atMilliseconds = t
            storage[head].topic = topic
            storage[head].sequence = sequence
            head = (head + 1) % capacity
            return
        }
        append(
            Decision(
                atMilliseconds: t,
                topic: topic,
                sequence: sequence,
                outcome: .delivered,
                reason: reason,
                channel: channel,
                detail: detail
            )
        )
    }

    var count: Int { storage.count }

    /// The newest `n` decisions, oldest first.
    func last(_ n: Int) -> [Decision] {
        let k = min(max(0, n), storage.count)
        return (storage.count - k..<storage.count).map { storage[(head + $0) % storage.count] }
    }
}

/// The highest sequence delivered per topic: a dictionary from topic to an index into flat arrays, and the caller's
/// topic numbers (``RefreshScheduler/passThrough(_:slot:at:)``) mapped to the same indices, so the fast path reads
/// and raises a topic's sequence without hashing its name.
struct LastDelivered: Sendable {
    private var index: [String: Int] = [:]
    private var topics: [String] = []
    private var sequences: [UInt64?] = []
    /// Caller's number → index (-1: not seen).
    private var bySlot: [Int] = []

    /// The topic's last delivered sequence, or `nil` when none was delivered.
    subscript(topic: String) -> UInt64? {
        get { index[topic].flatMap { sequences[$0] } }
        set {
            if let i = index[topic] {
                sequences[i] = newValue
            } else if let v = newValue {
                index[topic] = topics.count
                topics.append(topic)
                sequences.append(v)
            }
        }
    }

    /// Every topic with a delivered sequence.
    var all: [(topic: String, sequence: UInt64)] {
        topics.indices.compactMap { i in sequences[i].map { (topics[i], $0) } }
    }

    /// Raises the topic's sequence to `sequence` when that is newer (or none was delivered).
    /// - Parameters:
    ///   - topic: The topic.
    ///   - slot: The caller's number for `topic`, or -1.
    ///   - sequence: The sequence.
    /// - Returns: Whether it was raised.
    @inline(__always)
    mutating func advance(_ topic: String, slot: Int, to sequence: UInt64) -> Bool {
        let i: Int
        if slot >= 0, slot < bySlot.count, bySlot[slot] >= 0, topics[bySlot[slot]] == topic {
            i = bySlot[slot]
        } else {
            i = learn(topic, slot: slot)
        }
        if let last = sequences[i], sequence <= last { return false }
        sequences[i] = sequence
        return true
    }

    /// The topic's index (made now, with no sequence, when it has none), noted under the caller's number.
    private mutating func learn(_ topic: String, slot: Int) -> Int {
        let i: Int
        if let known = index[topic] {
            i = known
        } else {
            i = topics.count
            index[topic] = i
            topics.append(topic)
            sequences.append(nil)
        }
        if slot >= 0 && slot < 1 << 20 {
            if slot >= bySlot.count { bySlot.append(contentsOf: repeatElement(-1, count: slot + 1 - bySlot.count)) }
            bySlot[slot] = i
        }
        return i
    }
}
