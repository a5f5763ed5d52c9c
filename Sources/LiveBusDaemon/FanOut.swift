import LiveBusClock
import LiveBusCore
import LiveBusScheduler
import LiveBusWire

/// One subscriber of a topic as the fan-out visits it: the session and the slot of its state for that topic
/// (``Session/topicStates``).
struct FanOutTarget {
    /// The session (the list's strong reference: it keeps the session alive while a fan-out iterates the list).
    let session: Session
    /// The same session, unretained: the fan-out hands it on without a retain and a release per delivery (a
    /// session has weak references, so its reference count lives in a side table and every retain and release
    /// takes the runtime's slow path: ≈ 170 instructions per delivery, callgrind fan-out to 100 sessions).
    let unretained: Unmanaged<Session>
    let slot: Int

    init(session: Session, slot: Int) {
        self.session = session
        self.unretained = Unmanaged.passUnretained(session)
        self.slot = slot
    }
}

/// The fan-out's topics: each topic gets a dense number when it is first fanned out, and per number the list of its
/// subscribers (from the topic index, in connection order), each with the slot of its per-topic state, so that a
/// delivery looks nothing up by the topic's name.
///
/// A list is current while the topic index's ``TopicIndex/generation`` is the one it was built at (every SUBSCRIBE,
/// UNSUBSCRIBE and resume changes it); a closing session drops the lists it is in (``drop(_:)``), so none holds
/// a closed session. Loop-bound, pure (no I/O): the daemon passes the index's answer in.
/// Source: ISSUE-15 "Fan-out lookup" (about eight string-keyed lookups per delivery before).
struct FanOutTable {
    private struct Entry {
        /// The topic's name as first seen: every event of the topic is offered under this one `String`, so the
        /// per-delivery comparisons with the name a session's refresh gate kept find the same storage and compare
        /// no bytes (a new `String` per event went through `_stringCompareWithSmolCheck`, ≈ 120 instructions per
        /// delivery, callgrind fan-out to 100 sessions).
        let topic: String
        var generation: UInt64
        var isCurrent: Bool
        var targets: ContiguousArray<FanOutTarget>
    }
    private var numbers: [String: Int] = [:]
    private var entries: [Entry] = []

    /// Topics numbered so far.
    var count: Int { entries.count }

    /// The topic's number (given now when it has none).
    /// - Parameter topic: A topic name.
    /// - Returns: 0, 1, 2, … in the order topics were first seen.
    /// - Complexity: O(1) amortized: one hash of the name per event, none per delivery.
    mutating func number(of topic: String) -> Int {
        if let n = numbers[topic] { return n }
        let n = entries.count
        numbers[topic] = n
        entries.append(Entry(topic: topic, generation: 0, isCurrent: false, targets: []))
        return n
    }

    /// The name of topic `number` as first seen.
    /// - Parameter number: A number from ``number(of:)``.
    /// - Returns: The name (equal to every name ``number(of:)`` gave `number` for).
    func topic(_ number: Int) -> String { entries[number].topic }

    /// The subscribers of topic `number`: the kept list while current at `generation`, else `build()`'s, kept.
    /// - Parameters:
    ///   - number: A number from ``number(of:)``.
    ///   - generation: The topic index's generation now.
    ///   - build: Makes the list from the topic index (called only when the kept one is not current).
    /// - Returns: The list (a value: writes to the table while it is iterated do not change it).
    mutating func targets(
        of number: Int,
        generation: UInt64,
        build: () -> ContiguousArray<FanOutTarget>
    ) -> ContiguousArray<FanOutTarget> {
        if entries[number].isCurrent && entries[number].generation == generation { return entries[number].targets }
        let t = build()
        entries[number].generation = generation
        entries[number].isCurrent = true
        entries[number].targets = t
        return t
    }

    /// Forgets the lists of the topics `numbers` (a session in them closed); they are built again when next used.
    /// - Parameter numbers: Topic numbers.
    mutating func drop(_ numbers: some Sequence<Int>) {
        for n in numbers where n >= 0 && n < entries.count {
            entries[n].isCurrent = false
            entries[n].targets = []
        }
    }
}

/// When the fan-out flushes every connection's output within one loop turn (flush as you go; the turn's end flushes
/// the rest): once ``minimumDeliveries`` deliveries and ``minimumEvents`` events were fanned out since the last
/// flush, or ``maximumDeliveries`` deliveries whatever the events.
///
/// A flush costs one system call per subscriber written to, so it pays off per delivery only when each subscriber
/// got several frames since the last one: counting deliveries alone (4,096) flushed after every 4 events at
/// N = 1000 (one `write(2)` per 4 deliveries, against one per 32 at N = 100). The delivery bound keeps what one
/// flush holds to at most ``maximumDeliveries`` frames at any N. Pure (no I/O). Source: ISSUE-15 item 5 ("one large
/// read must not hold every subscriber's output until the whole batch is fanned out").
struct FanOutFlushBudget {
    /// Deliveries before a flush, at the least.
    static let minimumDeliveries = 4096
    /// Events before a flush, at the least (below ``maximumDeliveries``): each subscriber's write carries that many.
    /// The batch's own rule flushes every 32 events too (Daemon+Durability.swift). Paired timed runs at N = 1000
    /// (BENCHMARKS.md, 2026-12-02 evening): 712 k deliveries/s with 16, 1.01 M with 32.
    static let minimumEvents = 32
    /// Deliveries that force a flush (about 16 events at N = 2,000): what one flush holds at most, at any N.
    static let maximumDeliveries = 32768

    /// Deliveries since the last flush.
    private(set) var deliveries = 0
    /// Events since the last flush.
    private(set) var events = 0
    /// Deliveries counted so far (never reset; wraps).
    private(set) var total = 0

    /// Counts one event fanned out to `n` sessions.
    /// - Parameter n: The event's deliveries (0 or more).
    /// - Returns: `true` when the caller flushes now (the counts start again from 0).
    mutating func note(deliveries n: Int) -> Bool {
        deliveries += n
        events += 1
        total &+= n
        guard deliveries >= Self.minimumDeliveries,
            events >= Self.minimumEvents || deliveries >= Self.maximumDeliveries
        else { return false }
        deliveries = 0
        events = 0
        return true
    }
}

extension Daemon {
    /// Offers a stored event to every session subscribed to its topic, in connection order.
    ///
    /// Per event: one lookup of the topic's number, its kept subscriber list, one reading of the server clock and one
    /// ``PendingUpdate``; per delivery, only array accesses by slot (``Session/topicStates``), the refresh gate's
    /// fast path and the frame's trailer. Every delivery of one event is converted at the same server instant (the
    /// fan-out's `now`; PROTOCOL.md §5.1 / CLOCKSYNC.md "Conversion rule").
    func fanOut(_ e: StoredEvent) {
        let number = fanOutTable.number(of: e.topic)
        let targets = fanOutTable.targets(of: number, generation: index.generation) {
            var out = ContiguousArray<FanOutTarget>()
            for n in index.subscribers(of: e.topic) {
                guard let s = byNumber[n], s.phase != .closed, s.role == .session || s.role == .observer else {
                    continue
                }
                out.append(FanOutTarget(session: s, slot: s.slot(for: e.topic, number: number)))
            }
            return out
        }
        guard !targets.isEmpty else { return }
        let now = clock.now()
        let isTerminal = e.isTerminal
        let update = PendingUpdate(
            topic: fanOutTable.topic(number),
            sequence: e.sequence,
            priority: e.body.priority,
            isTerminal: isTerminal,
            serverTimestamp: ServerInstant(millisecondsSinceEpoch: e.body.timestamp)
        )
        // `targets` (a local copy of the list) holds every session strongly until the loop ends; each delivery
        // borrows its session from the list's unretained reference (no retain, no release).
        targets.withUnsafeBufferPointer { list in
            for i in list.indices {
                let slot = list[i].slot
                list[i].unretained._withUnsafeGuaranteedRef { s in
                    guard s.phase == .established else { return }
                    offer(e, to: s, slot: slot, update: update, isTerminal: isTerminal, now: now)
                }
            }
        }
        // Flush as you go: a large batch (one read of many PUBLISHes, a burst of the simulator) does not hold every
        // subscriber's output until its last event is fanned out (ISSUE-15 item 5).
        if fanOutFlush.note(deliveries: targets.count) { loop.flushPendingWrites() }
    }

    /// Drops the fan-out lists a closing session is in.
    func leaveFanOut(_ s: Session) {
        fanOutTable.drop(s.topicStates.lazy.map(\.number))
    }
}
