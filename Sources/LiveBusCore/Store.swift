import Foundation
import LiveBusWire

/// One stored event of a topic: its sequence and body, plus the shared encoded prefix written to every subscriber.
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

/// What a session left for its resume: the token's owner, its subscriptions and what it had received.
public struct ResumeRecord: Sendable, Codable, Equatable {
    /// The resume token.
    public var token: String
    /// The session's name.
    public var name: String
    /// Its topic patterns.
    public var patterns: [String]
    /// Topic → last sequence written to it.
    public var lastSent: [String: UInt64]

    /// Creates a record.
    /// - Parameters:
    ///   - token: The resume token.
    ///   - name: The session's name.
    ///   - patterns: Its topic patterns.
    ///   - lastSent: Topic → last sequence written to it.
    public init(token: String, name: String, patterns: [String], lastSent: [String: UInt64]) {
        self.token = token
        self.name = name
        self.patterns = patterns
        self.lastSent = lastSent
    }
}

/// An event to append: its topic and body (the store assigns the sequence).
public typealias StoreItem = (topic: String, body: EventBody)

/// Everything written in one store transaction: the events appended during one loop turn (group commit), the
/// simulator state that produced them, resume records and metadata.
///
/// A batch is all or nothing: after a failed commit none of it is visible and no sequence number was taken.
public struct StoreBatch {
    /// Events to append, in order; several of one topic get consecutive sequences in this order.
    public var events: [StoreItem]
    /// For `events[i]`, its body already encoded — bytes ``EventJSON/encode(_:)`` writes for it (a client's
    /// canonical PUBLISH body, ``EventJSON/decodeCanonical(_:)``) — stored and fanned out as they are; `nil`, or
    /// fewer entries than events, encodes the body. Encode once: no event is encoded twice on its way in.
    public var encodedBodies: [[UInt8]?]
    /// The simulator's state after ``events``, or `nil` to leave the stored one.
    public var simulatorState: Data?
    /// Resume records to save (a later record of the same token replaces an earlier one).
    public var resumeRecords: [ResumeRecord]
    /// Tokens whose resume records are deleted (the window passed, or the session said BYE).
    public var removedResumeTokens: [String]
    /// Metadata to set, in order (a later value of the same key wins).
    public var meta: [(key: String, value: String)]
    /// When the batch was formed, milliseconds on the server clock (stored with resume records, newest first).
    public var nowMilliseconds: Int64

    /// Creates a batch.
    /// - Parameters:
    ///   - events: Events to append, in order.
    ///   - encodedBodies: For each event, its body already encoded by ``EventJSON/encode(_:)``, or `nil`.
    ///   - simulatorState: The simulator's state after them, or `nil`.
    ///   - resumeRecords: Resume records to save.
    ///   - removedResumeTokens: Tokens whose resume records are deleted.
    ///   - meta: Metadata to set.
    ///   - nowMilliseconds: Milliseconds on the server clock.
    public init(
        events: [StoreItem] = [],
        encodedBodies: [[UInt8]?] = [],
        simulatorState: Data? = nil,
        resumeRecords: [ResumeRecord] = [],
        removedResumeTokens: [String] = [],
        meta: [(key: String, value: String)] = [],
        nowMilliseconds: Int64 = 0
    ) {
        self.events = events
        self.encodedBodies = encodedBodies
        self.simulatorState = simulatorState
        self.resumeRecords = resumeRecords
        self.removedResumeTokens = removedResumeTokens
        self.meta = meta
        self.nowMilliseconds = nowMilliseconds
    }

    /// The encoded body of `events[i]`, if the batch carries one (``encodedBodies``).
    @inline(__always)
    public func encodedBody(at i: Int) -> [UInt8]? { i < encodedBodies.count ? encodedBodies[i] : nil }

    /// Whether the batch writes nothing.
    public var isEmpty: Bool {
        events.isEmpty && simulatorState == nil && resumeRecords.isEmpty && removedResumeTokens.isEmpty
            && meta.isEmpty
    }
}

/// The store protocol of the bus: retained latest state, sequence counters, a bounded replay log per topic,
/// resume records, the simulator's state and metadata. Writes go in batches (one transaction each), reads are
/// answered from what is committed.
///
/// Asynchronous: ``commit(_:completion:)`` may complete before it returns (the in-memory and SQLite stores, on the
/// loop thread) or later (a networked store, e.g. NATS JetStream); callers act on the completion only
/// ("batch committed": ACKs, fan-out). Every store passes ``StoreConformance``.
/// Source: ../shared/DESIGN.md "The core and its adapters", "Beyond one machine".
public protocol EventStore: AnyObject {
    /// Whether committed data survives a restart of the daemon (`false` for the in-memory store).
    var isDurable: Bool { get }
    /// Commits `batch` as one transaction and calls `completion` exactly once, on the caller's thread, with the
    /// stored events in batch order, or with the error (nothing of the batch stored, no sequence taken).
    /// - Parameters:
    ///   - batch: What to write.
    ///   - completion: Called with the outcome.
    func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void)
    /// The retained latest event of `topic`.
    /// - Parameter topic: The topic.
    /// - Returns: The newest committed event, or `nil` when the topic has none.
    func latest(topic: String) -> StoredEvent?
    /// Events of `topic` with sequence ≥ `from`, at most `limit` of them, oldest first.
    /// - Parameters:
    ///   - topic: The topic.
    ///   - from: The first sequence wanted (0 and 1 both mean the first).
    ///   - limit: The most events to return.
    /// - Returns: The events, `[]` when `from` is after the newest, or `nil` when the log no longer holds `from`.
    func events(topic: String, from: UInt64, limit: Int) -> [StoredEvent]?
    /// Every topic with at least one event, sorted.
    var topics: [String] { get }
    /// The stored resume records, newest first.
    func resumeRecords() -> [ResumeRecord]
    /// The stored resume record of `token`: how a HELLO's resume token is looked up (the store owns resume records;
    /// the daemon keeps no copy of them).
    /// - Parameter token: The resume token.
    /// - Returns: The committed record, or `nil` when none is stored (never saved, removed, or not yet committed).
    func resumeRecord(token: String) -> ResumeRecord?
    /// A metadata value.
    /// - Parameter key: The key.
    /// - Returns: The value, or `nil` when unset.
    func meta(_ key: String) -> String?
    /// The stored simulator state, if any.
    func simulatorState() -> Data?
    /// Whether the store itself hands every committed event to the bus, in its own order (a federated store: its
    /// events, and other daemons', come back through its stream consumer), so the caller does not fan out what
    /// ``commit(_:completion:)`` returns. `false` for the in-memory and SQLite stores.
    var announcesCommittedEvents: Bool { get }
    /// Writes what the store defers between commits, before the daemon lets go of it (its shutdown): the SQLite
    /// store's lagging topic counters (`SQLiteStore.counterSlack`). Nothing for a store that defers nothing (the
    /// default). A failure is not reported: what was committed stays committed, and the next open recovers the
    /// deferred state as it does after a kill -9.
    func flushDeferredState()
}

/// A store whose reads come from an in-memory store while it decides its commits itself: the test doubles of a
/// store that refuses writes (a full disk) or answers later (a networked store). Every read forwards to ``inner``.
public protocol ForwardingEventStore: EventStore {
    /// Where the reads come from (and the commits go, when the double lets one through).
    var inner: MemoryEventStore { get }
}

extension ForwardingEventStore {
    public func latest(topic: String) -> StoredEvent? { inner.latest(topic: topic) }
    public func events(topic: String, from: UInt64, limit: Int) -> [StoredEvent]? {
        inner.events(topic: topic, from: from, limit: limit)
    }
    public var topics: [String] { inner.topics }
    public func resumeRecords() -> [ResumeRecord] { inner.resumeRecords() }
    public func resumeRecord(token: String) -> ResumeRecord? { inner.resumeRecord(token: token) }
    public func meta(_ key: String) -> String? { inner.meta(key) }
    public func simulatorState() -> Data? { inner.simulatorState() }
}

extension EventStore {
    public var announcesCommittedEvents: Bool { false }

    public func flushDeferredState() {}

    /// The record of `token` among ``resumeRecords()``: O(records), for a store without an index of its own.
    public func resumeRecord(token: String) -> ResumeRecord? { resumeRecords().first { $0.token == token } }

    /// Every event of `topic` with sequence ≥ `from` (see ``events(topic:from:limit:)``).
    /// - Parameters:
    ///   - topic: The topic.
    ///   - from: The first sequence wanted.
    /// - Returns: The events, `[]`, or `nil` when the log no longer holds `from`.
    public func events(topic: String, from: UInt64) -> [StoredEvent]? {
        events(topic: topic, from: from, limit: .max)
    }

    /// Commits `batch` and returns its outcome, for a caller that must answer within this loop turn (a command
    /// that is refused rather than held, the held-events retry).
    ///
    /// - Parameter batch: What to write.
    /// - Returns: The outcome, or `nil` when the store completes later (a networked store): the caller then
    ///   treats the batch as in flight.
    public func commitInTurn(_ batch: StoreBatch) -> Result<[StoredEvent], StoreError>? {
        var outcome: Result<[StoredEvent], StoreError>?
        commit(batch) { outcome = $0 }
        return outcome
    }
}

/// The in-memory store: a ring of the last `logCapacity` events per topic; nothing survives a restart.
///
/// - Complexity: appending is O(1) per event (one dictionary lookup, one ring slot written in place).
public final class MemoryEventStore: EventStore {
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
    private var resume: [String: (record: ResumeRecord, updatedMs: Int64, order: Int)] = [:]
    private var resumeOrder = 0
    private var metaValues: [String: String] = [:]
    private var state: Data?
    /// Events kept per topic for replay.
    public let logCapacity: Int

    /// Creates a store keeping `logCapacity` events per topic.
    /// - Parameter logCapacity: Events kept per topic (at least 1).
    public init(logCapacity: Int = 1024) { self.logCapacity = max(1, logCapacity) }

    public var isDurable: Bool { false }

    public func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        // Encode every event first: a body that cannot be encoded fails the whole batch before anything changes.
        var next: [String: UInt64] = [:]
        var out: [StoredEvent] = []
        out.reserveCapacity(batch.events.count)
        do {
            for (i, (topic, body)) in batch.events.enumerated() {
                let seq = next[topic] ?? logs[topic]?.next ?? 1
                next[topic] = seq + 1
                out.append(try StoredEvent(topic: topic, sequence: seq, body: body, encoded: batch.encodedBody(at: i)))
            }
        } catch {
            completion(.failure(StoreError("cannot encode the event: \(error)")))
            return
        }
        for e in out {
            let t: TopicLog
            if let existing = logs[e.topic] {
                t = existing
            } else {
                t = TopicLog()
                logs[e.topic] = t
            }
            t.next = e.sequence + 1
            t.append(e, capacity: logCapacity)
        }
        if let s = batch.simulatorState { state = s }
        for r in batch.resumeRecords {
            resumeOrder += 1
            resume[r.token] = (r, batch.nowMilliseconds, resumeOrder)
        }
        for t in batch.removedResumeTokens { resume[t] = nil }
        for (k, v) in batch.meta { metaValues[k] = v }
        completion(.success(out))
    }

    public func latest(topic: String) -> StoredEvent? { logs[topic]?.newest }

    public func events(topic: String, from: UInt64, limit: Int) -> [StoredEvent]? {
        guard let t = logs[topic] else { return from <= 1 ? [] : nil }
        if from >= t.next { return [] }
        guard let first = t.oldest, first.sequence <= max(from, 1) else { return nil }
        let start = Int(max(from, 1) - first.sequence)
        let end = start + min(max(0, limit), t.count - start)
        return (start..<end).map { t.event(at: $0) }
    }

    public var topics: [String] { logs.keys.sorted() }

    public func resumeRecords() -> [ResumeRecord] {
        resume.values.sorted { ($0.updatedMs, $0.order) > ($1.updatedMs, $1.order) }.map(\.record)
    }

    public func resumeRecord(token: String) -> ResumeRecord? { resume[token]?.record }

    public func meta(_ key: String) -> String? { metaValues[key] }

    public func simulatorState() -> Data? { state }
}
