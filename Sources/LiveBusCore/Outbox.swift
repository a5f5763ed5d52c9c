import LiveBusWire

/// A session's outbox as a state machine: what happens to an event offered to a session given what it was sent and
/// how much output is queued to its connection. Coalescing under pressure (the newest state of a topic wins),
/// terminal events never held, a slow consumer cut off past its limit.
///
/// Pure: the caller passes the bytes queued to the connection and carries out the decision.
/// Source: Protocol/PROTOCOL.md §5.5; ../shared/DESIGN.md "Sessions and sync".
public struct Outbox {
    /// The outbox's limits, bytes queued to the connection.
    public struct Limits: Sendable, Equatable {
        /// Past this many queued bytes, non-terminal live events are held and coalesced per topic.
        public var coalesceThresholdBytes: Int
        /// Past this many queued bytes, the session is a slow consumer and is disconnected.
        public var slowConsumerLimitBytes: Int

        /// Creates limits.
        /// - Parameters:
        ///   - coalesceThresholdBytes: Bytes queued past which live events are coalesced.
        ///   - slowConsumerLimitBytes: Bytes queued past which the session is cut off.
        public init(coalesceThresholdBytes: Int, slowConsumerLimitBytes: Int) {
            self.coalesceThresholdBytes = coalesceThresholdBytes
            self.slowConsumerLimitBytes = slowConsumerLimitBytes
        }
    }

    /// What to do with an offered event.
    public enum Decision: Equatable {
        /// Write it now with these flags.
        case write(FrameFlags)
        /// Nothing: the session already has this sequence or a newer one.
        case alreadySent
        /// Held for the drain, coalesced with what was held of its topic.
        case held
        /// Disconnect the session with this error (`slowConsumer`).
        case slowConsumer(WireError)
    }

    /// The limits in force.
    public var limits: Limits
    /// Topic → newest event held back while the connection is congested.
    public private(set) var held: [String: StoredEvent] = [:]
    /// Held events replaced by a newer one of their topic.
    public private(set) var coalescedCount = 0

    /// Creates an empty outbox.
    /// - Parameter limits: The limits.
    public init(limits: Limits) { self.limits = limits }

    /// Decides what happens to `e`.
    ///
    /// - Parameters:
    ///   - e: The event.
    ///   - flags: Its flags so far (`replay` or `snapshot` for a catch-up, which is never held).
    ///   - lastSent: The highest sequence of its topic written to the session (0 when none).
    ///   - queuedBytes: Bytes queued to the session's connection right now.
    /// - Returns: The decision; with ``Decision/write(_:)`` the flags to write it with (`terminal` added for a
    ///   terminal event, `snapshot` for a jump over coalesced sequences).
    /// - Complexity: O(1).
    public mutating func offer(
        _ e: StoredEvent,
        flags: FrameFlags,
        lastSent: UInt64,
        queuedBytes: Int
    ) -> Decision {
        offer(e, flags: flags, lastSent: lastSent, queuedBytes: queuedBytes, isTerminal: e.isTerminal)
    }

    /// ``offer(_:flags:lastSent:queuedBytes:)`` with `e`'s ``StoredEvent/isTerminal`` known (the fan-out reads it
    /// once per event, not once per delivery: three string comparisons).
    ///
    /// - Parameters:
    ///   - e: The event.
    ///   - flags: Its flags so far (`replay` or `snapshot` for a catch-up, which is never held).
    ///   - lastSent: The highest sequence of its topic written to the session (0 when none).
    ///   - queuedBytes: Bytes queued to the session's connection right now.
    ///   - isTerminal: `e.isTerminal`.
    /// - Returns: As ``offer(_:flags:lastSent:queuedBytes:)``.
    /// - Complexity: O(1).
    @inline(__always)
    public mutating func offer(
        _ e: StoredEvent,
        flags: FrameFlags,
        lastSent: UInt64,
        queuedBytes: Int,
        isTerminal: Bool
    ) -> Decision {
        if e.sequence <= lastSent { return .alreadySent }
        if queuedBytes > limits.slowConsumerLimitBytes {
            return .slowConsumer(
                WireError(
                    .slowConsumer,
                    "\(queuedBytes) bytes queued to this session (limit \(limits.slowConsumerLimitBytes)); resume with your token"
                )
            )
        }
        if queuedBytes > limits.coalesceThresholdBytes && !isTerminal && flags.isEmpty {
            if held[e.topic] != nil { coalescedCount += 1 }
            held[e.topic] = e
            return .held
        }
        if !held.isEmpty, let h = held[e.topic], h.sequence < e.sequence { held[e.topic] = nil }
        var f = flags
        if isTerminal { f.insert(.terminal) }
        // A jump over coalesced events is a snapshot: the client must not treat it as a gap.
        if e.sequence > lastSent + 1 && !f.contains(.replay) { f.insert(.snapshot) }
        return .write(f)
    }

    /// Whether anything is held for the drain.
    public var hasHeld: Bool { !held.isEmpty }

    /// Drops the held event of `topic` when a write outside the outbox (a paced catch-up) sent `sequence` or newer.
    /// - Parameters:
    ///   - topic: The topic.
    ///   - sequence: The sequence just written.
    public mutating func discardHeld(topic: String, upTo sequence: UInt64) {
        if let h = held[topic], h.sequence <= sequence { held[topic] = nil }
    }

    /// Takes what was held, by topic, for the connection's drain (each is offered again).
    /// - Returns: The held events, sorted by topic.
    public mutating func drain() -> [StoredEvent] {
        guard !held.isEmpty else { return [] }
        let out = held.values.sorted { $0.topic < $1.topic }
        held.removeAll()
        return out
    }
}
