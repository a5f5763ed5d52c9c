import LiveBusClock
import LiveBusCore
import LiveBusScheduler
import LiveBusWire

/// One subscriber of a topic as the fan-out visits it: the session and the slot of its state for that topic
/// (``Session/topicStates``).
struct FanOutTarget {
    let session: Session
    let slot: Int
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
        entries.append(Entry(generation: 0, isCurrent: false, targets: []))
        return n
    }

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
        entries[number] = Entry(generation: generation, isCurrent: true, targets: t)
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
        let update = PendingUpdate(
            topic: e.topic,
            sequence: e.sequence,
            priority: e.body.priority,
            isTerminal: e.isTerminal,
            serverTimestamp: ServerInstant(millisecondsSinceEpoch: e.body.timestamp)
        )
        for t in targets {
            let s = t.session
            guard s.phase == .established else { continue }
            offer(e, to: s, slot: t.slot, update: update, now: now)
        }
        // Flush as you go: a large batch (one read of many PUBLISHes, a burst of the simulator) does not hold every
        // subscriber's output until its last event is fanned out (ISSUE-15 item 5).
        fanOutDeliveriesSinceFlush += targets.count
        if fanOutDeliveriesSinceFlush >= Daemon.fanOutFlushDeliveries {
            fanOutDeliveriesSinceFlush = 0
            loop.flushPendingWrites()
        }
    }

    /// Deliveries fanned out between two flushes of every connection's output within one loop turn (the turn's
    /// end flushes the rest): at about 1 k instructions per delivery, a flush at least every few milliseconds of
    /// the loop's CPU time even under callgrind's slowdown, and few enough system calls (one per subscriber per
    /// flush) not to cost throughput.
    static let fanOutFlushDeliveries = 4096

    /// Drops the fan-out lists a closing session is in.
    func leaveFanOut(_ s: Session) {
        fanOutTable.drop(s.topicStates.lazy.map(\.number))
    }
}
