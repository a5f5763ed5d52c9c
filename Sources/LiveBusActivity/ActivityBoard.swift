import LiveBusClock
import LiveBusSimulator

/// All Live Activities of one client session, following Apple's documented rules, as a pure state machine.
///
/// Every mutating method takes the client's now (``ClientInstant``, milliseconds) and first catches up with any
/// deadline already passed; changes that happen by time alone (stale date, 8-hour end, dismissal, a pending start
/// once ready) are returned by ``tick(at:)``, each stamped with its deadline instant. Arm a timer for
/// ``nextDeadline`` and call ``tick(at:)`` when it fires; a tick at the stale date marks the activity stale at once.
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/activitystate ,
///   https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities ,
///   reference/field-reports/001_df7ae4e21a8ebe10.txt (start once from order creation).
public struct ActivityBoard: Sendable {
    /// The device settings that change outcomes (authorization, foreground). Change it as the simulated phone does.
    public var profile: DeviceProfile
    /// The app's activity schema: how pushed `content-state` decodes (default: the built-in delivery activity).
    public var schema: ActivitySchema = .delivery

    private struct OrderRecord: Sendable {
        var latest: ActivityUpdate
        var intent: StartIntent
        var cancelFailures: Int
    }

    private var activityByOrder: [String: Activity] = [:]
    private var orderByID: [String: OrderRecord] = [:]
    /// Order ids in creation order, so pending starts are applied in the order they were requested.
    private var orderSequence: [String] = []
    private var readyAt: ClientInstant?
    private var simulatedStartFailuresLeft = 0
    private var deferredTransitions: [ActivityTransition] = []
    private var nextStartIndex = 0

    /// The number of activities started so far in this session (a start that failed is not counted).
    public private(set) var startedActivityCount = 0

    /// Creates an empty board.
    /// - Parameter profile: The device settings.
    public init(profile: DeviceProfile) {
        self.profile = profile
    }

    // MARK: - Queries

    /// The activity of `orderID`, or `nil` if none was started.
    /// - Parameter orderID: The order's id.
    /// - Returns: The activity in its current state (as of the last call that took an instant).
    public func activity(_ orderID: String) -> Activity? { activityByOrder[orderID] }

    /// All activities, ordered for the lock screen: highest relevance score first, then the first started first.
    ///
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities
    ///   ("Configure the Live Activity": relevance score).
    public var activities: [Activity] {
        activityByOrder.values.sorted {
            $0.relevanceScore != $1.relevanceScore
                ? $0.relevanceScore > $1.relevanceScore : $0.startIndex < $1.startIndex
        }
    }

    /// The activity the Dynamic Island shows: among active and stale ones, the highest relevance score, ties going to
    /// the first started; `nil` if none.
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/activitycontent/init(state:staledate:relevancescore:)
    public var dynamicIslandActivity: Activity? { activities.first { $0.isInDynamicIsland } }

    /// The start intent of an order created on this client, or `nil` if the order was never created here.
    /// - Parameter orderID: The order's id.
    /// - Returns: pending, failed (with the reason), started, or orderEnded.
    public func startIntent(_ orderID: String) -> StartIntent? { orderByID[orderID]?.intent }

    /// How many cancel requests failed for this order (they never erase the created order or its start intent).
    /// - Parameter orderID: The order's id.
    /// - Returns: The count, 0 if none or unknown.
    public func cancelFailureCount(_ orderID: String) -> Int { orderByID[orderID]?.cancelFailures ?? 0 }

    /// Whether the client is ready to start activities at `now`.
    /// - Parameter now: Client clock.
    /// - Returns: `false` while a simulated "not ready" period lasts.
    public func isReady(at now: ClientInstant) -> Bool { readyAt.map { now >= $0 } ?? true }

    /// The earliest instant (client clock) at which ``tick(at:)`` will change something: a stale date, an 8-hour end,
    /// a removal from the lock screen, the end of a "not ready" period with starts pending, or the instant of a
    /// transition already caught up but not yet returned by ``tick(at:)`` (then in the past); `nil` if none.
    ///
    /// Arm a timer for it; ticking at this instant applies the change at this instant (the stale mark is therefore
    /// as late as the timer fires, well within 100 ms with a loop timer).
    public var nextDeadline: ClientInstant? {
        var earliest: ClientInstant?
        func consider(_ instant: ClientInstant?) {
            guard let instant else { return }
            earliest = earliest.map { min($0, instant) } ?? instant
        }
        // Transitions already caught up by an earlier call (another order's update, a profile change) wait for the
        // next tick: their instants are past, so the caller's timer fires at once.
        for transition in deferredTransitions { consider(transition.at) }
        for activity in activityByOrder.values {
            switch activity.state {
            case .active:
                consider(activity.staleDate)
                consider(activity.systemEndInstant)
            case .stale:
                consider(activity.systemEndInstant)
            case .ended:
                consider(activity.removalInstant)
            case .dismissed:
                break
            }
        }
        if let readyAt, orderByID.values.contains(where: { $0.intent == .pendingUntilReady }) { consider(readyAt) }
        return earliest
    }

    // MARK: - Simulation controls

    /// Makes the client "not ready" for `milliseconds` from `now`: starts requested meanwhile are kept and applied
    /// once ready (on the tick at the end of the period).
    /// - Parameters:
    ///   - milliseconds: How long, in milliseconds (0 or less makes it ready at once).
    ///   - now: Client clock.
    /// - Note: Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("네이티브 준비가 늦으면 시작 의도를 유지하다가 준비 뒤 적용한다").
    public mutating func simulateNotReady(forMilliseconds milliseconds: Int64, at now: ClientInstant) {
        catchUp(to: now)
        readyAt = now.advanced(byMilliseconds: max(0, milliseconds))
        // A zero period makes the client ready at once: pending starts apply now (returned by the next tick).
        catchUp(to: now)
    }

    /// Makes the next `count` start attempts fail (``VerdictReason/simulatedStartFailure``); the orders are kept.
    /// - Parameter count: How many start attempts fail (0 clears it).
    public mutating func simulateStartFailures(_ count: Int) { simulatedStartFailuresLeft = max(0, count) }

    // MARK: - Starting

    /// A client learned of an order: from its creation by the person (the only origin that starts an activity) or
    /// from a restore, reconnect, resume or link (which never start one).
    ///
    /// Creation and start are separate outcomes: whatever the verdict, the order stays created. A start requested
    /// while the client is not ready is kept (verdict `startPendingUntilReady`) and applied by a later
    /// ``tick(at:)``; a failed start is kept as ``StartIntent/failed(_:)`` and can be retried.
    /// - Parameters:
    ///   - update: The order's first content (event `start`); instants on the client's clock.
    ///   - origin: Where the request came from.
    ///   - now: Client clock.
    /// - Returns: Applied when the activity started now; otherwise the reason (Apple's error for a refused start).
    /// - Note: Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ; https://developer.apple.com/documentation/activitykit/activityauthorizationerror
    public mutating func orderCreated(_ update: ActivityUpdate, origin: StartOrigin, at now: ClientInstant) -> Verdict {
        catchUp(to: now)
        let source = ActivitySource.fieldReportStartIntent
        guard origin == .orderCreation else { return .rejected(.startNotFromOrderCreation, source: source) }
        if orderByID[update.orderID] != nil || activityByOrder[update.orderID] != nil {
            return .rejected(.alreadyStarted, source: source)
        }
        orderSequence.append(update.orderID)
        orderByID[update.orderID] = OrderRecord(latest: update, intent: .pendingUntilReady, cancelFailures: 0)
        if !isReady(at: now) { return .rejected(.startPendingUntilReady, source: source) }
        return attemptStart(update.orderID, at: now)
    }

    /// Retries the start of an order whose start failed (for example after the app came to the foreground).
    /// - Parameters:
    ///   - orderID: The order's id.
    ///   - now: Client clock.
    /// - Returns: Applied when the activity started; `alreadyStarted` if it started before (a dismissed activity is
    ///   never revived), `noActivity` if the order was never created here.
    public mutating func retryStart(orderID: String, at now: ClientInstant) -> Verdict {
        catchUp(to: now)
        let source = ActivitySource.fieldReportStartIntent
        guard let record = orderByID[orderID] else { return .rejected(.noActivity, source: source) }
        switch record.intent {
        case .started: return .rejected(.alreadyStarted, source: source)
        case .orderEnded: return .rejected(.orderEndedBeforeStart, source: source)
        case .pendingUntilReady: return .rejected(.startPendingUntilReady, source: source)
        case .failed:
            if !isReady(at: now) {
                orderByID[orderID]?.intent = .pendingUntilReady
                return .rejected(.startPendingUntilReady, source: source)
            }
            return attemptStart(orderID, at: now)
        }
    }

    /// Records that a cancel request for the order failed. The created order and its start intent are kept: a failed
    /// cancel never erases a successful creation (a successful cancel arrives later as an `end` update).
    /// - Parameters:
    ///   - orderID: The order's id.
    ///   - now: Client clock.
    /// - Note: Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("취소 요청이 실패하면, 성공한 주문 생성 결과까지 지워져").
    public mutating func cancelRequestFailed(orderID: String, at now: ClientInstant) {
        catchUp(to: now)
        orderByID[orderID]?.cancelFailures += 1
    }

    private mutating func attemptStart(_ orderID: String, at now: ClientInstant) -> Verdict {
        guard let record = orderByID[orderID] else { return .rejected(.noActivity, source: ActivitySource.update) }
        if let failure = startFailure(for: record.latest) {
            orderByID[orderID]?.intent = .failed(failure.reason)
            return .rejected(failure.reason, source: failure.source)
        }
        let update = record.latest
        return begin(orderID, with: update, at: now, source: ActivitySource.displayingLiveData)
    }

    /// Starts the activity of `orderID` showing `update`: counted, marked started, stale at once when its stale
    /// date already passed (P4).
    private mutating func begin(
        _ orderID: String,
        with update: ActivityUpdate,
        at now: ClientInstant,
        source: String
    ) -> Verdict {
        var activity = Activity(
            orderID: orderID,
            content: update.content,
            etaTarget: update.etaTarget,
            staleDate: update.staleDate,
            relevanceScore: update.relevanceScore,
            startedAt: now,
            lastAppliedTimestamp: update.timestamp,
            lastConfirmed: update.lastConfirmed,
            startIndex: nextStartIndex
        )
        if let staleDate = update.staleDate, staleDate <= now { activity.state = .stale }
        nextStartIndex += 1
        startedActivityCount += 1
        orderByID[orderID]?.intent = .started
        activityByOrder[orderID] = activity
        return .applied(source: source)
    }

    private mutating func startFailure(for update: ActivityUpdate) -> (reason: VerdictReason, source: String)? {
        switch profile.authorization {
        case .authorized: break
        case .denied, .activitiesDisabled: return (.denied, ActivitySource.authorizationError)
        case .unentitled: return (.unentitled, ActivitySource.authorizationError)
        }
        if !profile.appInForeground { return (.visibility, ActivitySource.visibilityError) }
        if update.contentStateByteCount > ActivityLimits.contentStateBytes {
            return (.attributesTooLarge, ActivitySource.authorizationError)
        }
        if let limit = profile.maximumOngoingActivities,
            activityByOrder.values.filter(\.isInDynamicIsland).count >= limit
        {
            return (.globalMaximumExceeded, ActivitySource.authorizationError)
        }
        if simulatedStartFailuresLeft > 0 {
            simulatedStartFailuresLeft -= 1
            return (.simulatedStartFailure, ActivitySource.fieldReportStartIntent)
        }
        return nil
    }

    /// Records an activity started by a push-to-start push (``pushToStart(_:orderID:toClient:at:)``).
    mutating func startedByPush(_ update: ActivityUpdate, at now: ClientInstant) -> Verdict {
        var start = update
        start.event = .start
        orderByID[update.orderID] = OrderRecord(latest: start, intent: .pendingUntilReady, cancelFailures: 0)
        orderSequence.append(update.orderID)
        return begin(update.orderID, with: update, at: now, source: ActivitySource.pushArticle)
    }

    // MARK: - Updates

    /// Applies one update or end (from the bus or a push) by Apple's rules, and says why if it does not.
    ///
    /// Rules, in this order: nothing is applied after the activity ended or was dismissed; a content state over
    /// 4096 bytes is refused; a timestamp more than 8 hours after `now` (compared on the client's clock) is dropped;
    /// an `update` older than the last applied timestamp is ignored, while an `end` is applied even with an older
    /// timestamp. An applied update replaces content, countdown target, stale date and relevance score, and clears
    /// the stale state unless its own stale date is already past. An applied end follows its dismissal policy.
    /// A `start` event never starts an activity here (only ``orderCreated(_:origin:at:)`` does).
    /// - Parameters:
    ///   - update: The update; instants on the client's clock except `timestamp`.
    ///   - now: Client clock.
    /// - Returns: The verdict with Apple's words and the rule's source.
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/activity/update(_:alertconfiguration:timestamp:) ,
    ///   https://developer.apple.com/forums/thread/776165 , https://developer.apple.com/documentation/activitykit/activity/update(_:)
    public mutating func apply(_ update: ActivityUpdate, at now: ClientInstant) -> Verdict {
        catchUp(to: now)
        guard var activity = activityByOrder[update.orderID] else { return applyWithoutActivity(update, at: now) }
        if update.event == .start {
            return .rejected(.alreadyStarted, source: ActivitySource.fieldReportStartIntent)
        }
        if activity.state == .ended || activity.state == .dismissed {
            return .rejected(.activityEnded, source: ActivitySource.update)
        }
        if update.contentStateByteCount > ActivityLimits.contentStateBytes {
            return .rejected(.contentStateTooLarge, source: ActivitySource.contentState)
        }
        if now.milliseconds(to: update.timestampInClientClock) > ActivityLimits.futureTimestampToleranceMilliseconds,
            !update.timestampReadFromMilliseconds
        {
            return .rejected(.timestampTooFarAhead, source: ActivitySource.dtsTimestamps)
        }
        if update.event == .update, update.timestamp < activity.lastAppliedTimestamp {
            var reason = VerdictReason.olderTimestamp
            if activity.lastAppliedFromMilliseconds {
                reason.message +=
                    "; the timestamp applied earlier, \(activity.lastAppliedTimestamp.millisecondsSinceEpoch / 1000), "
                    + "was Unix milliseconds read as seconds (lint millisecondsEpoch), so every update stamped in "
                    + "seconds is older than it until the activity ends"
            }
            return .rejected(reason, source: ActivitySource.updateTimestamp)
        }
        activity.content = update.content
        activity.etaTarget = update.etaTarget
        activity.relevanceScore = update.relevanceScore
        activity.lastConfirmed = max(activity.lastConfirmed, update.lastConfirmed)
        if update.timestamp >= activity.lastAppliedTimestamp {
            activity.lastAppliedTimestamp = update.timestamp
            activity.lastAppliedFromMilliseconds = update.timestampReadFromMilliseconds
        }
        activity.fields = update.fields
        if update.event == .end {
            // The 4-hour window counts from the end's timestamp (client clock), not from when the phone applied it
            // (ours: PROTOCOL.md §9.7). A removal instant already reached removes the activity at once.
            // And never later than 12 hours after the start (displayingLiveData: "up to 12 hours" on the lock screen).
            let removal = min(
                DismissalPolicy.removalInstant(
                    dismissalDate: update.dismissalDate,
                    endTimestamp: update.timestampInClientClock
                ),
                activity.startedAt.advanced(byMilliseconds: ActivityLimits.lockScreenMilliseconds)
            )
            let policy = DismissalPolicy.from(dismissalDate: update.dismissalDate, endedAt: now)
            activity.staleDate = nil
            activity.state = .ended
            activity.endedAt = now
            activity.endCause = .app
            activity.dismissalPolicy = removal <= now ? .immediate : policy
            activity.removalInstant = max(removal, now)
            if removal <= now {
                activity.state = .dismissed
                activity.dismissedAt = now
            }
            activityByOrder[update.orderID] = activity
            var verdict = Verdict.applied(
                source: update.timestamp < activity.lastAppliedTimestamp
                    ? ActivitySource.dtsTimestamps : ActivitySource.end
            )
            verdict.removalAt = activity.removalInstant
            verdict.lints = update.lints
            return verdict
        }
        activity.staleDate = update.staleDate
        if let staleDate = update.staleDate, staleDate <= now {
            activity.state = .stale
        } else {
            activity.state = .active
        }
        activityByOrder[update.orderID] = activity
        var verdict = Verdict.applied(source: ActivitySource.updateTimestamp)
        let ahead = now.milliseconds(to: update.timestampInClientClock)
        if ahead > ActivityLimits.timestampAheadWarningMilliseconds, !update.timestampReadFromMilliseconds {
            verdict.warning =
                "its timestamp is \(Self.spoken(milliseconds: ahead)) ahead of this phone's clock: every later update stamped before then will be ignored (olderTimestamp); stamp updates with the sender's current time"
        }
        return verdict
    }

    /// `2 h 5 min`, `3 min 20 s` or `45 s`: a duration for a person.
    static func spoken(milliseconds: Int64) -> String {
        let s = milliseconds / 1000
        if s >= 3600 { return "\(s / 3600) h \(s % 3600 / 60) min" }
        if s >= 60 { return "\(s / 60) min \(s % 60) s" }
        return "\(s) s"
    }

    /// Ends the activity with final content and an explicit dismissal policy, as `Activity.end(_:dismissalPolicy:)`
    /// does; the same rules as an `end` through ``apply(_:at:)`` hold (applied even with an older timestamp).
    /// - Parameters:
    ///   - update: The final content; its `event` is treated as `end` and its `dismissalDate` is replaced.
    ///   - dismissalPolicy: default (4 hours), immediate, or after a date (client clock; a past date is immediate).
    ///   - now: Client clock.
    /// - Returns: The verdict.
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/activity/end(_:dismissalpolicy:timestamp:) ,
    ///   https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy
    public mutating func end(
        _ update: ActivityUpdate,
        dismissalPolicy: DismissalPolicy,
        at now: ClientInstant
    ) -> Verdict {
        var final = update
        final.event = .end
        switch dismissalPolicy {
        case .default: final.dismissalDate = nil
        case .immediate: final.dismissalDate = now
        case .after(let date): final.dismissalDate = max(date, now)
        }
        return apply(final, at: now)
    }

    private mutating func applyWithoutActivity(_ update: ActivityUpdate, at now: ClientInstant) -> Verdict {
        guard var record = orderByID[update.orderID] else {
            let reason: VerdictReason = update.event == .start ? .pushToStartNotSupported : .noActivity
            return .rejected(reason, source: ActivitySource.fieldReportStartIntent)
        }
        if update.event == .start { return .rejected(.alreadyStarted, source: ActivitySource.fieldReportStartIntent) }
        switch record.intent {
        case .started:
            return .rejected(.activityEnded, source: ActivitySource.update)
        case .orderEnded:
            return .rejected(.orderEndedBeforeStart, source: ActivitySource.fieldReportStartIntent)
        case .pendingUntilReady, .failed:
            if now.milliseconds(to: update.timestampInClientClock) > ActivityLimits.futureTimestampToleranceMilliseconds
            {
                return .rejected(.timestampTooFarAhead, source: ActivitySource.dtsTimestamps)
            }
            if update.event == .end {
                record.intent = .orderEnded
                orderByID[update.orderID] = record
                return .rejected(.orderEndedBeforeStart, source: ActivitySource.fieldReportStartIntent)
            }
            if update.timestamp < record.latest.timestamp {
                return .rejected(.olderTimestamp, source: ActivitySource.updateTimestamp)
            }
            record.latest = update
            record.latest.event = .start
            orderByID[update.orderID] = record
            return .rejected(.keptForPendingStart, source: ActivitySource.fieldReportStartIntent)
        }
    }

    /// A person removed the activity from the lock screen: it becomes dismissed at once and is never revived by
    /// later updates or starts.
    /// - Parameters:
    ///   - orderID: The order's id.
    ///   - now: Client clock.
    /// - Returns: The `dismissed` transition, or nothing if there was no visible activity.
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities
    ///   ("When a person or the system removes a Live Activity, its ActivityState changes to ActivityState.dismissed.")
    @discardableResult
    public mutating func userDismissed(orderID: String, at now: ClientInstant) -> [ActivityTransition] {
        catchUp(to: now)
        guard var activity = activityByOrder[orderID], activity.state != .dismissed else { return [] }
        if activity.endedAt == nil {
            activity.endedAt = now
            activity.endCause = .person
        }
        activity.state = .dismissed
        activity.dismissedAt = now
        activity.removalInstant = now
        activityByOrder[orderID] = activity
        return [ActivityTransition(orderID: orderID, kind: .dismissed, at: now)]
    }

    // MARK: - Time

    /// Applies every change due by `now`: stale at the stale date, system end 8 hours after the start, removal by
    /// the dismissal policy (so at most 12 hours after the start), and pending starts once ready.
    /// - Parameter now: Client clock.
    /// - Returns: The transitions in time order, each stamped with its deadline, including any caught up during
    ///   earlier calls since the last tick.
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/activitycontent/staledate ,
    ///   https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities
    public mutating func tick(at now: ClientInstant) -> [ActivityTransition] {
        catchUp(to: now)
        let transitions = deferredTransitions
        deferredTransitions = []
        return transitions
    }

    private mutating func catchUp(to now: ClientInstant) {
        var transitions: [ActivityTransition] = []
        // Activities first, then pending starts (whose activities are then caught up from their start instant).
        for orderID in activityByOrder.keys.sorted() { advance(orderID, to: now, into: &transitions) }
        if let readyAt, readyAt <= now {
            self.readyAt = nil
            for orderID in orderSequence where orderByID[orderID]?.intent == .pendingUntilReady {
                let verdict = attemptStart(orderID, at: readyAt)
                if verdict.applied {
                    transitions.append(ActivityTransition(orderID: orderID, kind: .started, at: readyAt))
                    advance(orderID, to: now, into: &transitions)
                } else {
                    transitions.append(
                        ActivityTransition(orderID: orderID, kind: .startFailed, at: readyAt, reason: verdict.reason)
                    )
                }
            }
        }
        if !transitions.isEmpty {
            // Stable sort by instant, so transitions of one activity stay in their order.
            let indexed = transitions.enumerated().sorted {
                $0.element.at != $1.element.at ? $0.element.at < $1.element.at : $0.offset < $1.offset
            }
            deferredTransitions.append(contentsOf: indexed.map(\.element))
        }
    }

    private mutating func advance(
        _ orderID: String,
        to now: ClientInstant,
        into transitions: inout [ActivityTransition]
    ) {
        guard var activity = activityByOrder[orderID] else { return }
        loop: while true {
            switch activity.state {
            case .active:
                let systemEnd = activity.systemEndInstant
                if let staleDate = activity.staleDate, staleDate <= now, staleDate < systemEnd {
                    activity.state = .stale
                    transitions.append(ActivityTransition(orderID: orderID, kind: .becameStale, at: staleDate))
                } else if systemEnd <= now {
                    endBySystem(&activity, at: systemEnd, into: &transitions)
                } else {
                    break loop
                }
            case .stale:
                let systemEnd = activity.systemEndInstant
                guard systemEnd <= now else { break loop }
                endBySystem(&activity, at: systemEnd, into: &transitions)
            case .ended:
                guard let removal = activity.removalInstant, removal <= now else { break loop }
                activity.state = .dismissed
                activity.dismissedAt = removal
                transitions.append(ActivityTransition(orderID: orderID, kind: .dismissed, at: removal))
            case .dismissed:
                break loop
            }
        }
        activityByOrder[orderID] = activity
    }

    private func endBySystem(
        _ activity: inout Activity,
        at instant: ClientInstant,
        into transitions: inout [ActivityTransition]
    ) {
        activity.state = .ended
        activity.endedAt = instant
        activity.endCause = .systemTimeLimit
        activity.dismissalPolicy = .default
        activity.removalInstant = DismissalPolicy.default.removalInstant(endedAt: instant)
        transitions.append(ActivityTransition(orderID: activity.orderID, kind: .ended, at: instant))
    }
}

extension ActivityBoard {
    /// Delivers a Live Activity push (APNs JSON, as `livebus push` injects it) to the activity of `orderID`.
    ///
    /// A payload that cannot be read gets a verdict naming the field (`payloadTooLarge` with Apple's
    /// `PayloadTooLarge`, `contentStateTooLarge`, or `malformedPayload`); a readable one is converted with
    /// `toClient` and goes through ``apply(_:at:)``.
    /// - Parameters:
    ///   - bytes: The payload, UTF-8 JSON.
    ///   - orderID: The order whose activity the push targets.
    ///   - toClient: Converts server (provider) instants to the client's clock.
    ///   - now: Client clock.
    /// - Returns: The verdict.
    /// - Note: Source: https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns ,
    ///   https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications
    public mutating func push(
        _ bytes: [UInt8],
        orderID: String,
        toClient: (ServerInstant) -> ClientInstant,
        at now: ClientInstant
    ) -> Verdict {
        let payload: APNsPayload
        do {
            payload = try APNsPayload.parse(bytes, schema: schema)
        } catch {
            catchUp(to: now)
            return Self.unreadable(error)
        }
        var verdict = apply(payload.activityUpdate(orderID: orderID, toClient: toClient), at: now)
        verdict.lints = payload.lints
        return verdict
    }
}

extension ActivityBoard {
    /// The verdict on a payload that does not parse (a push and a push-to-start alike), with its lints.
    static func unreadable(_ error: PushPayloadError) -> Verdict {
        var verdict: Verdict
        switch error.code {
        case .payloadTooLarge: verdict = .rejected(.payloadTooLarge, source: ActivitySource.sendingRequests)
        case .contentStateTooLarge: verdict = .rejected(.contentStateTooLarge, source: ActivitySource.contentState)
        case .keyNotFound, .valueNotFound, .typeMismatch, .dataCorrupted:
            verdict = .rejected(.decodingFailed(error), source: ActivitySource.pushArticle)
        default: verdict = .rejected(.malformedPayload(error), source: ActivitySource.pushArticle)
        }
        verdict.lints = error.lints
        return verdict
    }

    /// Starts a Live Activity from a push-to-start push (ActivityKit, iOS 17.2 and later), in any app state
    /// (foreground, background, terminated): "the system starts a new Live Activity, wakes up your app, and grants
    /// it background runtime".
    ///
    /// Rules, in order: the payload must parse (a start needs `alert`, `attributes-type` and `attributes`: without
    /// `alert` nothing starts, `missingField aps.alert`); its event must be `start` (`pushToStartNeedsStartEvent`);
    /// `attributes-type` must be the schema's attributes type (`attributesTypeMismatch`); Live Activities must be
    /// authorized (`denied`); an activity already started for `orderID` is not started twice (`alreadyStarted`; the
    /// daemon gives a second start its own id, since Apple does not de-duplicate); the system's limit of ongoing
    /// activities holds (`globalMaximumExceeded`).
    /// - Parameters:
    ///   - bytes: The payload, UTF-8 JSON.
    ///   - orderID: The id the new activity gets.
    ///   - toClient: Converts server (provider) instants to the client's clock.
    ///   - now: Client clock.
    /// - Returns: The verdict (applied: the activity started).
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications ,
    ///   reference/live-activities.md §2.6.
    public mutating func pushToStart(
        _ bytes: [UInt8],
        orderID: String,
        toClient: (ServerInstant) -> ClientInstant,
        at now: ClientInstant
    ) -> Verdict {
        let payload: APNsPayload
        do {
            payload = try APNsPayload.parse(bytes, schema: schema)
        } catch {
            catchUp(to: now)
            return Self.unreadable(error)
        }
        catchUp(to: now)
        var verdict = startFromPush(payload, orderID: orderID, toClient: toClient, at: now)
        verdict.lints = payload.lints
        return verdict
    }

    private mutating func startFromPush(
        _ payload: APNsPayload,
        orderID: String,
        toClient: (ServerInstant) -> ClientInstant,
        at now: ClientInstant
    ) -> Verdict {
        let source = ActivitySource.pushArticle
        guard payload.event == .start else { return .rejected(.pushToStartNeedsStartEvent, source: source) }
        guard payload.attributesType == schema.attributesType else {
            return .rejected(.attributesTypeMismatch, source: source)
        }
        switch profile.authorization {
        case .authorized: break
        case .denied, .activitiesDisabled: return .rejected(.denied, source: ActivitySource.authorizationError)
        case .unentitled: return .rejected(.unentitled, source: ActivitySource.authorizationError)
        }
        if activity(orderID) != nil { return .rejected(.alreadyStarted, source: source) }
        if let limit = profile.maximumOngoingActivities, activities.filter(\.isInDynamicIsland).count >= limit {
            return .rejected(.globalMaximumExceeded, source: ActivitySource.authorizationError)
        }
        let update = payload.activityUpdate(orderID: orderID, toClient: toClient)
        return startedByPush(update, at: now)
    }
}
