import Foundation
import LiveBusWire

/// One stored event of a topic: its sequence and body, plus the bytes every subscriber's EVENT shares.
public struct StoredEvent: Sendable {
    /// The topic, e.g. `orders/A1001`.
    public var topic: String
    /// The topic's sequence number, 1-based, never reused.
    public var sequence: UInt64
    /// The event, server-clock instants.
    public var body: EventBody
    /// The topic and `body` encoded once, with their CRC-32: each delivery adds only its header flags and trailer
    /// (``Frame/appendEvent(_:flags:trailer:into:)``, PROTOCOL.md §5.1).
    public var template: EventTemplate

    /// `true` for end events and delivered/canceled statuses: never dropped or coalesced away.
    public var isTerminal: Bool {
        body.event == "end" || body.contentState.status == "delivered" || body.contentState.status == "canceled"
    }

    /// Creates a stored event, encoding the shared bytes once (without Foundation).
    /// - Parameters:
    ///   - topic: The topic.
    ///   - sequence: The topic's sequence number.
    ///   - body: The event, server-clock instants.
    ///   - encoded: `body` already encoded as an EVENT body (read back from the store), or `nil` to encode it with
    ///     ``EventJSON/encode(_:)``.
    /// - Throws: ``WireError`` `invalidBody` if the body cannot be encoded, `frameTooLarge` if an EVENT would
    ///   exceed 64 KiB.
    public init(topic: String, sequence: UInt64, body: EventBody, encoded: [UInt8]? = nil) throws(WireError) {
        self.topic = topic
        self.sequence = sequence
        self.body = body
        let bytes: [UInt8]
        if let encoded { bytes = encoded } else { bytes = try EventJSON.encode(body) }
        self.template = try EventTemplate(topic: topic, sequence: sequence, body: bytes)
    }
}

/// What the daemon keeps per topic: retained latest state, sequence counter and a bounded replay log.
///
/// Kept behind this small interface so that a NATS JetStream-backed store can sit beside the SQLite one
/// (../shared/DESIGN.md "Beyond one machine").
public protocol TopicStore {
    /// Appends an event to `topic`, assigning the next sequence number. Durable when this returns.
    /// - Throws: ``StoreError`` when the event cannot be stored.
    mutating func append(topic: String, body: EventBody) throws -> StoredEvent
    /// The retained latest event of `topic`.
    func latest(topic: String) -> StoredEvent?
    /// Events of `topic` with sequence ≥ `from`, or `nil` when the log no longer holds `from`.
    func events(topic: String, from: UInt64) -> [StoredEvent]?
    /// Every topic with at least one event.
    var topics: [String] { get }
    /// Appends several events and, in the same transaction where the store is durable, the simulator state that
    /// produced them.
    /// - Throws: ``StoreError`` when nothing could be stored.
    mutating func commit(_ items: [(topic: String, body: EventBody)], simulatorState: Data?) throws -> [StoredEvent]
}

extension TopicStore {
    public mutating func commit(_ items: [(topic: String, body: EventBody)], simulatorState: Data?) throws
        -> [StoredEvent]
    {
        var out: [StoredEvent] = []
        for (t, b) in items { out.append(try append(topic: t, body: b)) }
        return out
    }
}

/// An error of the store.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What failed and what to do.
    public var message: String
    /// The SQLite extended result code of the failure, when SQLite reported it (`nil` for other stores).
    /// Source: https://www.sqlite.org/rescode.html
    public var resultCode: Int32?
    /// Creates an error.
    /// - Parameters:
    ///   - message: What failed and what to do.
    ///   - resultCode: The SQLite extended result code, if any.
    public init(_ message: String, resultCode: Int32? = nil) {
        self.message = message
        self.resultCode = resultCode
    }
    public var description: String { message }
}

/// The in-memory topic store: a ring of the last `logCapacity` events per topic.
///
/// - Complexity: ``append(topic:body:)`` is O(1) (one dictionary lookup, one ring slot written in place).
public struct MemoryTopicStore: TopicStore {
    /// One topic's ring; a class so appends mutate it in place instead of copying the log.
    private final class TopicLog {
        var next: UInt64 = 1
        var ring: [StoredEvent] = []
        var head = 0  // index of the oldest event once the ring is full

        func append(_ e: StoredEvent, capacity: Int) {
            if ring.count < capacity {
                ring.append(e)
            } else {
                ring[head] = e
                head = (head + 1) % capacity
            }
        }

        var count: Int { ring.count }
        var oldest: StoredEvent? { ring.isEmpty ? nil : ring[head] }
        var newest: StoredEvent? { ring.isEmpty ? nil : ring[(head + ring.count - 1) % ring.count] }
        func event(at i: Int) -> StoredEvent { ring[(head + i) % ring.count] }
    }
    private var logs: [String: TopicLog] = [:]
    /// Events kept per topic for replay.
    public let logCapacity: Int

    /// Creates a store keeping `logCapacity` events per topic.
    public init(logCapacity: Int = 1024) { self.logCapacity = max(1, logCapacity) }

    public mutating func append(topic: String, body: EventBody) throws -> StoredEvent {
        let t: TopicLog
        if let existing = logs[topic] {
            t = existing
        } else {
            t = TopicLog()
            logs[topic] = t
        }
        let e = try StoredEvent(topic: topic, sequence: t.next, body: body)
        t.next += 1
        t.append(e, capacity: logCapacity)
        return e
    }

    public func latest(topic: String) -> StoredEvent? { logs[topic]?.newest }

    public func events(topic: String, from: UInt64) -> [StoredEvent]? {
        guard let t = logs[topic] else { return from <= 1 ? [] : nil }
        if from >= t.next { return [] }
        guard let first = t.oldest, first.sequence <= max(from, 1) else { return nil }
        let start = Int(max(from, 1) - first.sequence)
        return (start..<t.count).map { t.event(at: $0) }
    }

    public var topics: [String] { logs.keys.sorted() }
}
