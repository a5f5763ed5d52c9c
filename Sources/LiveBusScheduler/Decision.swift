/// Why the scheduler did what it did. Raw values are stable reason codes (for `livebus status --json`).
///
/// Each code has ``words`` (one sentence for people) and ``source`` (where the rule comes from).
public enum DecisionReason: String, Sendable, Codable, CaseIterable, Hashable {
    /// Delivered at once on the app's live stream (foreground).
    case foregroundStream
    /// Delivered on the app's connection because the app came to the foreground.
    case foregroundFlush
    /// Delivered on the app's connection inside a granted background refresh window.
    case refreshWindow
    /// Delivered on the app's connection inside the run time a silent push gave the app.
    case silentPushWindow
    /// Priority 10 push delivered at once; drew on the hourly budget.
    case priority10Immediate
    /// Priority 10 push delayed: the hourly budget is spent.
    case priority10Throttled
    /// A throttled priority 10 push delivered once a budget slot freed.
    case throttleReleased
    /// A throttled priority 10 push delivered because the budget was raised (frequent updates turned on).
    case budgetRaised
    /// A priority 10 push held by Low Power Mode delivered because Low Power Mode was turned off.
    case lowPowerEnded
    /// Priority 5 push held until the device is awake.
    case priority5Held
    /// Held push delivered because a priority 10 push woke the device.
    case wokenByPriority10
    /// Held push delivered because the device woke on its own (idle-wake bound).
    case idleWake
    /// Priority 10 push held: Low Power Mode keeps it from waking the device.
    case lowPowerHeld
    /// Removed from the queue: a newer update on the same coalescing key supersedes it.
    case coalesced
    /// Not delivered: the session already received this sequence or a newer one.
    case alreadyReceived
    /// Silent push delivered to the app.
    case silentPushDelivered
    /// Silent push held: over the hourly rate.
    case silentPushRateLimited
    /// Held silent push discarded: a newer one replaced it.
    case silentPushReplaced
    /// Held silent push delivered because the app was launched (foreground).
    case silentPushOnLaunch
    /// Silent push discarded: the app was force-quit.
    case silentPushDiscardedForceQuit
    /// Background refresh request accepted; a window is scheduled.
    case refreshScheduled
    /// The pending background refresh request was replaced by a new one.
    case refreshRequestReplaced
    /// Background refresh denied or dropped: the app was force-quit.
    case refreshDeniedForceQuit
    /// Background refresh denied: Background App Refresh is off for this app.
    case refreshDeniedDisabled
    /// Background refresh denied: the daily refresh budget in this mode is zero.
    case refreshDeniedBudget
    /// A background refresh window opened.
    case refreshWindowOpened
    /// The app's background run time (refresh or silent push window) ended.
    case appWindowClosed

    /// One sentence that explains the decision.
    public var words: String {
        switch self {
        case .foregroundStream: "The app is in the foreground: its live stream carries every update at once."
        case .foregroundFlush: "The app came to the foreground: queued updates go out on its own connection."
        case .refreshWindow: "A background refresh window is open: the app fetches the latest state itself."
        case .silentPushWindow: "A silent push woke the app for a short run time: it fetches the latest state."
        case .priority10Immediate: "Priority 10: delivered at once; it counts toward the hourly push budget."
        case .priority10Throttled: "Priority 10 but the hourly budget is spent: throttled (delayed, never dropped)."
        case .throttleReleased: "A budget slot freed: the throttled priority 10 push goes out now."
        case .budgetRaised: "Frequent updates raised the hourly budget: the throttled priority 10 push goes out now."
        case .lowPowerEnded: "Low Power Mode ended: the held priority 10 push wakes the device now."
        case .priority5Held: "Priority 5: opportunistic, no budget; held until the device is awake."
        case .wokenByPriority10: "A priority 10 push woke the device: held pushes go out with it."
        case .idleWake: "The device woke on its own (idle-wake bound): held pushes go out."
        case .lowPowerHeld: "Low Power Mode: even priority 10 does not wake the device; held until it wakes."
        case .coalesced: "Superseded by a newer update on the same topic: the newest state wins."
        case .alreadyReceived: "The session already received this sequence or a newer one; it would be ignored."
        case .silentPushDelivered: "Silent push delivered to the app within the hourly rate."
        case .silentPushRateLimited: "Silent push over the hourly rate: held; the device keeps only the newest."
        case .silentPushReplaced: "A newer silent push arrived: the device discards the older held one."
        case .silentPushOnLaunch: "The app was launched: the held silent push is delivered at once."
        case .silentPushDiscardedForceQuit: "The app was force-quit: silent pushes to it are discarded."
        case .refreshScheduled: "Background refresh accepted: the window opens at the system's discretion, never early."
        case .refreshRequestReplaced: "A new background refresh request replaces the pending one (one per app)."
        case .refreshDeniedForceQuit: "The app was force-quit: it gets no background refresh."
        case .refreshDeniedDisabled: "Background App Refresh is off for this app: the request is unavailable."
        case .refreshDeniedBudget: "The daily refresh budget in this mode is zero: no window."
        case .refreshWindowOpened: "A background refresh window opened: the app runs for a bounded time."
        case .appWindowClosed: "The app's background run time ended: no live connection until the next window."
        }
    }

    /// Where the rule comes from (Apple documentation, DTS answer, or ours).
    public var source: String {
        switch self {
        case .foregroundStream, .foregroundFlush, .appWindowClosed:
            "https://developer.apple.com/documentation/backgroundtasks/choosing-background-strategies-for-your-app"
        case .refreshWindow, .refreshWindowOpened:
            "https://developer.apple.com/documentation/backgroundtasks/bgapprefreshtask ; "
                + "https://developer.apple.com/documentation/backgroundtasks/choosing-background-strategies-for-your-app"
        case .silentPushWindow, .silentPushDelivered, .silentPushRateLimited, .silentPushReplaced,
            .silentPushOnLaunch:
            "https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app"
        case .priority10Immediate:
            "https://developer.apple.com/documentation/activitykit/"
                + "starting-and-updating-live-activities-with-activitykit-push-notifications"
        case .priority10Throttled, .throttleReleased, .budgetRaised:
            "https://developer.apple.com/documentation/activitykit/"
                + "starting-and-updating-live-activities-with-activitykit-push-notifications ; "
                + "budget number is ours: https://developer.apple.com/forums/thread/747624"
        case .priority5Held, .wokenByPriority10:
            "https://developer.apple.com/forums/thread/775340 (DTS: priority 5 waits until the device is awake "
                + "or woken by a priority 10 push)"
        case .idleWake:
            "ours [Derived], live-activities.md §6: an asleep device wakes on its own within the idle-wake interval"
        case .lowPowerHeld, .lowPowerEnded:
            "https://developer.apple.com/forums/thread/775340 (DTS: in low power mode even priority 10 may not wake it)"
        case .coalesced:
            "https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns "
                + "(only the latest notification is stored); DESIGN.md: latest-state topics coalesce"
        case .alreadyReceived:
            "https://developer.apple.com/documentation/activitykit/activity/update(_:alertconfiguration:timestamp:) "
                + "(older content is ignored); DESIGN.md: each (topic, seq) applied once"
        case .silentPushDiscardedForceQuit:
            "https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app ; "
                + "https://developer.apple.com/forums/thread/719222"
        case .refreshScheduled:
            "https://developer.apple.com/documentation/backgroundtasks/bgtaskrequest/earliestbegindate"
        case .refreshRequestReplaced, .refreshDeniedDisabled:
            "https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler/submittaskrequest(_:completionhandler:)"
        case .refreshDeniedForceQuit:
            "https://developer.apple.com/forums/thread/719222"
        case .refreshDeniedBudget:
            "WWDC20 10063 (energy and data budget); "
                + "https://developer.apple.com/documentation/foundation/processinfo/islowpowermodeenabled"
        }
    }
}

/// What happened to an update (or to a refresh request or window).
public enum DecisionOutcome: String, Sendable, Codable, CaseIterable, Hashable {
    /// Sent to the session now.
    case delivered
    /// Kept for later (throttled, held, rate-limited).
    case delayed
    /// Removed because a newer update supersedes it.
    case coalesced
    /// Not sent and not kept (already received, or a silent push to a force-quit app or replaced).
    case discarded
    /// A refresh request was accepted and a window scheduled.
    case scheduled
    /// A refresh request was refused.
    case denied
    /// A refresh request was replaced by a newer one.
    case replaced
    /// An app run window opened.
    case opened
    /// An app run window closed.
    case closed
}

/// One entry of the explain log: what happened, to which update, when, why, and the rule's source.
public struct Decision: Sendable, Codable, Equatable, Hashable {
    /// When the decision was taken, server clock, milliseconds since the Unix epoch.
    public var atMilliseconds: Int64
    /// The update's topic, or `nil` for refresh and window decisions.
    public var topic: String?
    /// The update's sequence, or `nil` for refresh and window decisions.
    public var sequence: UInt64?
    /// What happened.
    public var outcome: DecisionOutcome
    /// The reason code.
    public var reason: DecisionReason
    /// The channel used, for deliveries.
    public var channel: Channel?
    /// The numbers behind this decision (for example "budget 12/12 used; retry at server@…ms").
    public var detail: String
    /// The reason in words (``DecisionReason/words``).
    public var words: String
    /// The rule's source (``DecisionReason/source``).
    public var source: String

    /// Creates a log entry; `words` and `source` come from `reason`.
    public init(
        atMilliseconds: Int64,
        topic: String?,
        sequence: UInt64?,
        outcome: DecisionOutcome,
        reason: DecisionReason,
        channel: Channel?,
        detail: String
    ) {
        self.atMilliseconds = atMilliseconds
        self.topic = topic
        self.sequence = sequence
        self.outcome = outcome
        self.reason = reason
        self.channel = channel
        self.detail = detail
        self.words = reason.words
        self.source = reason.source
    }
}
