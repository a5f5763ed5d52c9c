import LiveBusWire

/// One session's topic patterns as a value: SUBSCRIBE and UNSUBSCRIBE, the `--max-subscriptions` limit, and the
/// patterns compiled once per change (``CompiledPattern``), not once per match.
///
/// Source: Protocol/PROTOCOL.md §5.2 (SUBSCRIBE, UNSUBSCRIBE, patterns), §5.6 (limits); issue 15 item 1.
public struct SessionSubscriptions: Sendable, Equatable {
    /// The patterns held, in the order first subscribed.
    public private(set) var patterns: [String] = []
    /// ``patterns``, compiled.
    public private(set) var compiled: [CompiledPattern] = []

    /// No patterns.
    public init() {}

    /// Holds `patterns` as they are (a resumed session's, already checked when they were subscribed).
    /// - Parameter patterns: Topic patterns, in order; repeats are kept once.
    public init(patterns: [String]) {
        var held = Set<String>()
        self.patterns = patterns.filter { held.insert($0).inserted }
        self.compiled = self.patterns.map(CompiledPattern.init)
    }

    /// Adds a SUBSCRIBE's patterns (those already held are kept once, in their first place).
    /// - Parameters:
    ///   - new: The SUBSCRIBE's patterns.
    ///   - limit: At most this many patterns may be held (`--max-subscriptions`).
    /// - Returns: The SUBSCRIBE's patterns compiled (held ones too): the topics they match are caught up.
    /// - Throws: ``WireError`` `invalidBody` when `new` is empty, `invalidTopic` for a malformed pattern (nothing
    ///   is added), `tooManySubscriptions` when the session would hold more than `limit` (nothing is added).
    /// - Complexity: O(patterns held + new).
    public mutating func subscribe(_ new: [String], limit: Int) throws(WireError) -> [CompiledPattern] {
        guard !new.isEmpty else { throw WireError(.invalidBody, "SUBSCRIBE body: field 'patterns' is empty") }
        for p in new { try Topic.validatePattern(p) }
        var held = [String: Int](minimumCapacity: patterns.count + new.count)
        for (k, p) in patterns.enumerated() { held[p] = k }
        var added: [String] = []
        for p in new where held[p] == nil {
            held[p] = patterns.count + added.count
            added.append(p)
        }
        let count = patterns.count + added.count
        guard count <= limit else {
            throw WireError(
                .tooManySubscriptions,
                "SUBSCRIBE would hold \(count) topic patterns; a session may hold \(limit) (--max-subscriptions). Use fewer, wider patterns (orders/>)"
            )
        }
        let addedCompiled = added.map(CompiledPattern.init)
        patterns += added
        compiled += addedCompiled
        // The SUBSCRIBE's own patterns: new ones compiled just now, held ones from before.
        var seen = Set<String>()
        return new.compactMap { p in seen.insert(p).inserted ? held[p].map { compiled[$0] } : nil }
    }

    /// Removes an UNSUBSCRIBE's patterns; patterns not held are ignored.
    /// - Returns: Whether anything was removed.
    @discardableResult
    public mutating func unsubscribe(_ gone: [String]) -> Bool {
        let drop = Set(gone)
        let before = patterns.count
        patterns.removeAll { drop.contains($0) }
        compiled.removeAll { drop.contains($0.pattern) }
        return patterns.count != before
    }

    /// Whether a held pattern matches `topic`.
    public func matches(_ topic: String) -> Bool { compiled.contains { $0.matches(topic) } }
}

extension SessionSubscriptions {
    /// The catch-ups a resumed session gets (PROTOCOL.md §5.3): every topic of `topics` a held pattern matches, from
    /// after the last sequence the client says it applied (0 when it names none), in the order of `topics`. Each is
    /// replayed from the log, or sent as one snapshot when the log no longer covers the gap, then ends with its
    /// UPTODATE.
    /// - Parameters:
    ///   - topics: The store's topics.
    ///   - applied: HELLO `resume.topics`: topic → last sequence applied.
    /// - Returns: Topic and the sequence the replay starts after.
    public func resumeCatchUps(topics: some Sequence<String>, applied: [String: UInt64]) -> [(
        topic: String, after: UInt64
    )] {
        topics.filter(matches).map { ($0, applied[$0] ?? 0) }
    }
}
