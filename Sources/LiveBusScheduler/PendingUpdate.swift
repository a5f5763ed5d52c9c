import LiveBusClock

/// A generic descriptor of one update the daemon wants to bring to a session: which topic, which sequence,
/// how urgent, and whether it is terminal. The content state itself stays with the caller.
public struct PendingUpdate: Sendable, Equatable, Hashable {
    /// The topic the update was published on, for example `orders/A1001`.
    public var topic: String
    /// The per-topic sequence number; higher is newer.
    public var sequence: UInt64
    /// APNs priority: 10 (immediate, budgeted) or 5 (opportunistic, unbudgeted). Any value below 10 is
    /// treated as opportunistic.
    ///
    /// - Note: Source: `apns-priority` (live-activities.md §2.1, §2.4).
    public var priority: Int
    /// `true` for delivered, canceled and end: never coalesced away, always delivered (perhaps later).
    public var isTerminal: Bool
    /// Updates with the same key coalesce: only the newest non-terminal one stays queued. Defaults to `topic`.
    public var coalescingKey: String
    /// When the backend produced the update (APNs `timestamp`), server clock, milliseconds.
    public var serverTimestamp: ServerInstant

    /// Creates an update descriptor.
    ///
    /// - Parameters:
    ///   - topic: The topic, for example `orders/A1001`.
    ///   - sequence: The per-topic sequence number.
    ///   - priority: 10 or 5 (APNs priority).
    ///   - isTerminal: `true` for delivered, canceled and end.
    ///   - coalescingKey: The coalescing key; `nil` means `topic`.
    ///   - serverTimestamp: When the backend produced it, server clock.
    public init(
        topic: String,
        sequence: UInt64,
        priority: Int = 10,
        isTerminal: Bool = false,
        coalescingKey: String? = nil,
        serverTimestamp: ServerInstant
    ) {
        self.topic = topic
        self.sequence = sequence
        self.priority = priority
        self.isTerminal = isTerminal
        self.coalescingKey = coalescingKey ?? topic
        self.serverTimestamp = serverTimestamp
    }

    /// `true` when the update is priority 10 (delivered at once, draws on the hourly budget).
    public var isImmediate: Bool { priority >= 10 }

    /// `true` when `self` carries newer state than `other` under the same coalescing key: a higher sequence on
    /// the same topic, else a later server timestamp.
    public func isNewer(than other: PendingUpdate) -> Bool {
        if topic == other.topic { return sequence > other.sequence }
        return serverTimestamp > other.serverTimestamp
    }
}

/// One instruction to the caller: send `update` (its topic and sequence) to the session now, on `channel`.
public struct Delivery: Sendable, Equatable, Hashable {
    /// The update to send.
    public var update: PendingUpdate
    /// The path it takes.
    public var channel: Channel
    /// Why it goes now (also recorded in the explain log).
    public var reason: DecisionReason
    /// The instant the rule let it go, server clock; never later than the `now` of the call that returned it.
    public var at: ServerInstant

    /// Creates a delivery.
    public init(update: PendingUpdate, channel: Channel, reason: DecisionReason, at: ServerInstant) {
        self.update = update
        self.channel = channel
        self.reason = reason
        self.at = at
    }
}
