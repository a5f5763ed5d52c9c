import LiveBusWire

/// A federated daemon's sync state as a value (PROTOCOL.md §5.9, issue 19 "phones keep their state and are told the
/// sync state"): `live` while its NATS JetStream link is up and its stream consumer has everything; `degraded` from
/// the moment the link is seen lost (or before a `--federate-optional` daemon joined); `catchingUp` once the link is
/// back, until the consumer has applied the stream's last sequence as JetStream reported it *after* the link came
/// back; then `live` again.
///
/// Pure: the daemon feeds it observations (its link, the consumer's progress, the stream's state as last read) with
/// its own clock's time, and sends a SYNC frame to every phone that asked for it when ``observe(_:nowMilliseconds:)``
/// says the state changed. Times are milliseconds since the Unix epoch on the **server clock**.
public struct FederationSync: Sendable, Equatable {
    /// The daemon's link to its cluster, as the daemon sees it now.
    public enum Link: Sendable, Equatable {
        /// Connected: publishes are taken.
        case connected
        /// Lost; the link's state (libnats': `reconnecting` or `closed`).
        case lost(String)
        /// A `--federate-optional` daemon that has not joined yet.
        case unjoined
    }

    /// One observation.
    public struct Observation: Sendable, Equatable {
        /// The link now.
        public var link: Link
        /// The newest stream sequence the daemon's consumer has applied.
        public var appliedStreamSequence: UInt64
        /// How many times the stream's state has been read so far (a count that only grows): a read counts for the
        /// catch-up only when it happened after the link came back.
        public var streamReads: UInt64
        /// The stream's last sequence in the newest read, `nil` before any.
        public var streamLastSequence: UInt64?

        /// Creates an observation.
        public init(link: Link, appliedStreamSequence: UInt64, streamReads: UInt64, streamLastSequence: UInt64?) {
            self.link = link
            self.appliedStreamSequence = appliedStreamSequence
            self.streamReads = streamReads
            self.streamLastSequence = streamLastSequence
        }
    }

    /// The state.
    public private(set) var state: DaemonSyncState
    /// When the daemon entered ``state``, ms since the Unix epoch, server clock.
    public private(set) var sinceMilliseconds: Int64
    /// Why, for people: set while `degraded`, else `nil`.
    public private(set) var reason: String?
    /// While catching up: the stream sequence the consumer must reach, once a read after the link came back gave it.
    public private(set) var target: UInt64?
    /// ``Observation/streamReads`` when the link came back: later reads are fresh.
    private var readsWhenBack: UInt64 = 0

    /// Starts in `live` (joined at start, the stream loaded) or `degraded` (a `--federate-optional` daemon that could
    /// not join, or a link already lost).
    /// - Parameters:
    ///   - link: The link at start.
    ///   - nowMilliseconds: The server clock now.
    public init(link: Link, nowMilliseconds: Int64) {
        state = .live
        sinceMilliseconds = nowMilliseconds
        if let why = Self.degradation(link) {
            state = .degraded
            reason = why
        }
    }

    /// Takes one observation.
    /// - Parameters:
    ///   - o: The link, the consumer's progress and the stream's state as last read.
    ///   - nowMilliseconds: The server clock now.
    /// - Returns: Whether ``state`` changed (the daemon then tells the phones). At most one step per call:
    ///   `degraded` → `catchingUp` → `live` takes two calls, since the catch-up's target needs a read made after the
    ///   link came back.
    public mutating func observe(_ o: Observation, nowMilliseconds: Int64) -> Bool {
        if let why = Self.degradation(o.link) {
            guard state != .degraded else { return false }
            enter(.degraded, nowMilliseconds, reason: why)
            target = nil
            return true
        }
        switch state {
        case .live:
            return false
        case .degraded:
            enter(.catchingUp, nowMilliseconds, reason: nil)
            readsWhenBack = o.streamReads
            target = nil
            return true
        case .catchingUp:
            if target == nil, o.streamReads > readsWhenBack, let last = o.streamLastSequence { target = last }
            guard let target, o.appliedStreamSequence >= target else { return false }
            enter(.live, nowMilliseconds, reason: nil)
            self.target = nil
            return true
        }
    }

    private mutating func enter(_ s: DaemonSyncState, _ now: Int64, reason why: String?) {
        state = s
        sinceMilliseconds = now
        reason = why
    }

    /// The reason a link is degraded, or `nil` when it is connected.
    static func degradation(_ link: Link) -> String? {
        switch link {
        case .connected: nil
        case .lost(let how):
            "NATS link \(how): PUBLISH is refused (federationUnavailable) and events of other daemons do not arrive; what the phone has is kept"
        case .unjoined:
            "not joined to the NATS JetStream cluster yet (--federate-optional): PUBLISH is refused (federationUnavailable)"
        }
    }
}
