import LiveBusWire

/// A topic pattern compiled once into segments (NATS subject semantics: `*` one segment, a final `>` one or more).
/// Source: nats-server `server/sublist.go`; Protocol/PROTOCOL.md §5.3.
public struct CompiledPattern: Hashable, Sendable {
    enum Segment: Hashable, Sendable {
        case literal([UInt8])
        case one
        case rest
    }
    /// The pattern as subscribed.
    public let pattern: String
    let segments: [Segment]
    /// Whether the pattern has no wildcard (it matches exactly one topic, itself).
    public let isLiteral: Bool

    /// Compiles a pattern (validated by the caller with ``Topic/validatePattern(_:)``).
    /// - Parameter pattern: The pattern, e.g. `orders/*` or `orders/>`.
    public init(_ pattern: String) {
        self.pattern = pattern
        var segs: [Segment] = []
        for s in pattern.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if s.elementsEqual("*".utf8) {
                segs.append(.one)
            } else if s.elementsEqual(">".utf8) {
                segs.append(.rest)
            } else {
                segs.append(.literal(Array(s)))
            }
        }
        segments = segs
        isLiteral = !segs.contains { $0 == .one || $0 == .rest }
    }

    /// Whether `topic` matches.
    /// - Parameter topic: A topic name.
    /// - Returns: `true` when the pattern covers `topic`.
    /// - Complexity: O(length of `topic`), without allocating.
    public func matches(_ topic: String) -> Bool {
        if isLiteral { return topic == pattern }
        let bytes = topic.utf8
        var position = bytes.startIndex
        var exhausted = false
        for segment in segments {
            if segment == .rest { return !exhausted }
            if exhausted { return false }
            let end = bytes[position...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
            if case .literal(let l) = segment, !bytes[position..<end].elementsEqual(l) { return false }
            if end == bytes.endIndex {
                exhausted = true
            } else {
                position = bytes.index(after: end)
            }
        }
        return exhausted
    }
}

/// The topic → subscribers index of the bus: who receives an event of a topic, found without visiting every
/// session. Literal patterns are a dictionary lookup; wildcard patterns are compiled once and matched once per
/// topic, and each topic's answer is cached until a subscription changes.
///
/// A value type; `ID` is the caller's session key (the daemon uses its connection number, so fan-out goes in
/// connection order).
public struct TopicIndex<ID: Hashable & Comparable> {
    private var literal: [String: Set<ID>] = [:]
    private var wildcard: [CompiledPattern: Set<ID>] = [:]
    private var byID: [ID: [CompiledPattern]] = [:]
    private var cache: [String: [ID]] = [:]
    /// Topics whose answers are cached at most (the cache is emptied beyond it).
    public let cacheLimit: Int
    /// Counts the changes of any subscriber's patterns: an answer of ``subscribers(of:)`` kept by a caller is
    /// current while this is unchanged.
    public private(set) var generation: UInt64 = 0

    /// Creates an empty index.
    /// - Parameter cacheLimit: Topics whose answers are cached at most.
    public init(cacheLimit: Int = 100_000) { self.cacheLimit = max(1, cacheLimit) }

    /// Sets the patterns of `id` (replacing its earlier ones; an empty list removes it).
    /// - Parameters:
    ///   - patterns: Validated patterns.
    ///   - id: The subscriber.
    /// - Complexity: O(patterns of `id`), plus emptying the cache when anything changed.
    public mutating func setPatterns(_ patterns: [String], for id: ID) {
        if (byID[id] ?? []).map(\.pattern) == patterns { return }
        setPatterns(compiled: patterns.map(CompiledPattern.init), for: id)
    }

    /// Sets the patterns of `id` already compiled (a session's ``SessionSubscriptions/compiled``): nothing is
    /// compiled again, and the index shares their storage with the session (a SUBSCRIBE compiled and stored each
    /// pattern twice: callgrind and massif, sessions workload).
    /// - Parameters:
    ///   - compiled: Compiled validated patterns.
    ///   - id: The subscriber.
    /// - Complexity: O(patterns of `id`), plus emptying the cache when anything changed.
    public mutating func setPatterns(compiled: [CompiledPattern], for id: ID) {
        let old = byID[id] ?? []
        if old.count == compiled.count && zip(old, compiled).allSatisfy({ $0.pattern == $1.pattern }) { return }
        for p in old { remove(p, id) }
        for p in compiled {
            if p.isLiteral {
                literal[p.pattern, default: []].insert(id)
            } else {
                wildcard[p, default: []].insert(id)
            }
        }
        byID[id] = compiled.isEmpty ? nil : compiled
        cache.removeAll(keepingCapacity: true)
        generation &+= 1
    }

    /// Removes `id` and all its patterns.
    /// - Parameter id: The subscriber.
    public mutating func remove(_ id: ID) { setPatterns([], for: id) }

    private mutating func remove(_ p: CompiledPattern, _ id: ID) {
        if p.isLiteral {
            literal[p.pattern]?.remove(id)
            if literal[p.pattern]?.isEmpty == true { literal[p.pattern] = nil }
        } else {
            wildcard[p]?.remove(id)
            if wildcard[p]?.isEmpty == true { wildcard[p] = nil }
        }
    }

    /// The subscribers of `topic`, ascending.
    /// - Parameter topic: A topic name.
    /// - Returns: Every `id` with a pattern that matches `topic`.
    /// - Complexity: O(1) amortized (a cached answer); on a miss O(wildcard patterns × topic length).
    public mutating func subscribers(of topic: String) -> [ID] {
        if let hit = cache[topic] { return hit }
        var out = literal[topic] ?? []
        for (p, ids) in wildcard where p.matches(topic) { out.formUnion(ids) }
        let sorted = out.sorted()
        if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
        cache[topic] = sorted
        return sorted
    }

    /// Whether `id` is subscribed to `topic`.
    /// - Parameters:
    ///   - id: The subscriber.
    ///   - topic: A topic name.
    /// - Returns: `true` when one of its patterns matches.
    public func isSubscribed(_ id: ID, to topic: String) -> Bool {
        byID[id]?.contains { $0.matches(topic) } ?? false
    }

    /// The patterns of `id`, in the order set.
    /// - Parameter id: The subscriber.
    /// - Returns: Its patterns.
    public func patterns(of id: ID) -> [String] { byID[id]?.map(\.pattern) ?? [] }

    /// The number of subscribers with at least one pattern.
    public var count: Int { byID.count }
}
