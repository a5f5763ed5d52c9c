/// Why a queued update is waiting.
public enum HoldReason: String, Sendable, Codable, CaseIterable, Hashable {
    /// Priority 10 with the hourly budget spent; released when a slot frees.
    case throttled
    /// Priority 5; released when the device is awake or woken by a priority 10 push.
    case opportunistic
    /// Priority 10 in Low Power Mode on an asleep device; released when the device wakes.
    case lowPowerNoWake
}

/// Which kind of background run time the app has.
public enum AppWindowKind: String, Sendable, Codable, CaseIterable, Hashable {
    /// A granted background refresh window (`BGAppRefreshTask`).
    case backgroundRefresh
    /// The run time a delivered silent push gives the app.
    case silentPush
}

/// One queued update as `status` reports it. Instants are server clock, milliseconds since the Unix epoch.
public struct QueuedUpdate: Sendable, Codable, Equatable, Hashable {
    /// The topic.
    public var topic: String
    /// The sequence.
    public var sequence: UInt64
    /// The update's own APNs priority.
    public var priority: Int
    /// The priority it is scheduled with: 10 if it or any update it superseded was priority 10.
    public var effectivePriority: Int
    /// `true` for delivered, canceled and end.
    public var isTerminal: Bool
    /// Why it waits.
    public var hold: HoldReason
    /// Since when it waits.
    public var heldSinceMilliseconds: Int64
    /// When it is released at the latest, if known (throttle slot or idle wake).
    public var releaseAtMilliseconds: Int64?
    /// How many older updates it superseded while queued.
    public var supersededCount: Int

    /// Creates a queued-update report.
    public init(
        topic: String,
        sequence: UInt64,
        priority: Int,
        effectivePriority: Int,
        isTerminal: Bool,
        hold: HoldReason,
        heldSinceMilliseconds: Int64,
        releaseAtMilliseconds: Int64?,
        supersededCount: Int
    ) {
        self.topic = topic
        self.sequence = sequence
        self.priority = priority
        self.effectivePriority = effectivePriority
        self.isTerminal = isTerminal
        self.hold = hold
        self.heldSinceMilliseconds = heldSinceMilliseconds
        self.releaseAtMilliseconds = releaseAtMilliseconds
        self.supersededCount = supersededCount
    }
}

/// The last sequence a session received on one topic.
public struct TopicSequence: Sendable, Codable, Equatable, Hashable {
    /// The topic.
    public var topic: String
    /// The highest sequence delivered on it.
    public var sequence: UInt64

    /// Creates a pair.
    public init(topic: String, sequence: UInt64) {
        self.topic = topic
        self.sequence = sequence
    }
}

/// A snapshot of one session's scheduler, for `livebus status --json`.
///
/// Instants are server clock, milliseconds since the Unix epoch; arrays are in a fixed order so the JSON is stable.
public struct SchedulerStatus: Sendable, Codable, Equatable, Hashable {
    /// The instant the snapshot describes.
    public var atMilliseconds: Int64
    /// The app state.
    public var appState: AppState
    /// The profile in force.
    public var profile: SessionProfile
    /// The open app run window's kind, if one is open.
    public var openWindow: AppWindowKind?
    /// When the open window ends.
    public var openWindowEndsAtMilliseconds: Int64?
    /// When the pending refresh request's window opens (if the app is in the foreground then, it opens as soon
    /// as the app is backgrounded); `nil` when no request is pending or none can open.
    public var nextRefreshWindowAtMilliseconds: Int64?
    /// The pending refresh request's earliest begin date.
    public var refreshEarliestBeginMilliseconds: Int64?
    /// Refresh windows opened in the last 24 h.
    public var refreshWindowsInLastDay: Int
    /// The daily refresh budget in force.
    public var dailyRefreshBudget: Int
    /// The hourly priority 10 budget in force.
    public var priority10Budget: Int
    /// Priority 10 pushes still allowed in the current rolling hour.
    public var priority10BudgetLeft: Int
    /// When the next budget slot frees, if the budget is spent.
    public var nextBudgetSlotAtMilliseconds: Int64?
    /// Silent pushes still allowed in the current rolling hour.
    public var silentPushesLeft: Int
    /// The held silent push, if any (the device holds only the newest).
    public var heldSilentPush: TopicSequence?
    /// Queued updates, in delivery order.
    public var queued: [QueuedUpdate]
    /// Updates coalesced away since the scheduler was created.
    public var coalescedCount: Int
    /// Deliveries since the scheduler was created.
    public var deliveredCount: Int
    /// What the session last received, per topic, sorted by topic.
    public var lastDelivered: [TopicSequence]
    /// When the caller must call `advance(to:)` next, if anything is pending.
    public var nextDeadlineMilliseconds: Int64?
    /// The last few decisions, oldest first.
    public var recentDecisions: [Decision]
}
