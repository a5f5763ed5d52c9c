import Foundation
import LiveBusWire

/// The conformance suite every ``EventStore`` passes (the in-memory store, SQLite, and a later NATS JetStream
/// store): shipped with the core, in the shape of swift-collections' conformance checkers, so each store's test
/// target runs the same checks.
///
/// Each check opens stores through a ``Harness`` and throws ``Failure`` naming what differed.
public enum StoreConformance {
    /// Opens stores for the checks.
    public struct Harness {
        /// Opens an empty store keeping `logCapacity` events per topic.
        public var open: (_ logCapacity: Int) throws -> any EventStore
        /// Reopens the store last opened (a restart), or `nil` for a store that keeps nothing across a restart.
        public var reopen: ((_ logCapacity: Int) throws -> any EventStore)?

        /// Creates a harness.
        /// - Parameters:
        ///   - open: Opens an empty store.
        ///   - reopen: Reopens the last store, for durable stores.
        public init(
            open: @escaping (_ logCapacity: Int) throws -> any EventStore,
            reopen: ((_ logCapacity: Int) throws -> any EventStore)? = nil
        ) {
            self.open = open
            self.reopen = reopen
        }
    }

    /// A check that did not hold.
    public struct Failure: Error, CustomStringConvertible {
        /// What was expected and what the store did.
        public var description: String
    }

    /// One named check.
    public struct Check: Sendable, CustomStringConvertible {
        /// What the check proves.
        public var name: String
        let body: @Sendable (Harness) throws -> Void
        public var description: String { name }

        /// Runs the check.
        /// - Parameter harness: Opens the stores.
        /// - Throws: ``Failure`` when the store does not behave as the protocol says; whatever `harness` throws.
        public func run(_ harness: Harness) throws { try body(harness) }
    }

    /// Every check.
    public static let checks: [Check] = [
        Check(name: "sequences start at 1 and are consecutive within and across batches", body: sequences),
        Check(name: "a batch's events, simulator state, resume records and metadata are visible together", body: batch),
        Check(name: "completion is called exactly once per commit", body: completionOnce),
        Check(name: "events(from:limit:) replays from the log and says when it no longer holds from", body: replay),
        Check(name: "latest is the newest event and topics are sorted", body: latestAndTopics),
        Check(
            name: "a resume record of the same token replaces the earlier one, newest first; removal deletes it",
            body: resume
        ),
        Check(
            name: "resumeRecord(token:) finds a token's newest committed record; nil once removed or never saved",
            body: resumeLookup
        ),
        Check(name: "an event reads back with the body and shared bytes it was stored with", body: roundTrip),
        Check(name: "a durable store keeps everything across a reopen and continues the sequences", body: reopen),
        Check(
            name: "an event given with its encoded body is stored and read back with exactly those bytes",
            body: encodedBody
        ),
    ]

    /// A sample event of the checks, server-clock instants from `timestamp` (milliseconds since 1970).
    /// - Parameters:
    ///   - status: Its content state status.
    ///   - timestamp: Its timestamp, milliseconds since 1970, server clock.
    /// - Returns: The event.
    public static func event(_ status: String, timestamp: Int64 = 1_700_000_000_000) -> EventBody {
        EventBody(
            event: "update",
            timestamp: timestamp,
            contentState: ContentStateBody(
                status: status,
                summary: SummaryBody(ko: "요약", en: "summary", detailKo: nil, detailEn: nil),
                etaTarget: timestamp + 600_000,
                progress: 0.5,
                riderPosition: nil,
                lastConfirmed: timestamp
            ),
            staleDate: timestamp + 900_000,
            relevanceScore: 50,
            dismissalDate: nil,
            priority: 10
        )
    }

    static func expect(_ ok: Bool, _ what: @autoclosure () -> String) throws(Failure) {
        if !ok { throw Failure(description: what()) }
    }

    static func commit(_ store: any EventStore, _ batch: StoreBatch) throws -> [StoredEvent] {
        var outcome: Result<[StoredEvent], StoreError>?
        store.commit(batch) { outcome = $0 }
        // A store that completes later is driven by its own harness until it does.
        guard let outcome else { throw Failure(description: "the commit did not complete within the check") }
        return try outcome.get()
    }

    static func sequences(_ h: Harness) throws {
        let s = try h.open(16)
        let a = try commit(s, StoreBatch(events: [("t/a", event("a1")), ("t/b", event("b1")), ("t/a", event("a2"))]))
        try expect(a.map(\.sequence) == [1, 1, 2], "sequences of one batch: \(a.map(\.sequence)), expected [1, 1, 2]")
        try expect(a.map(\.topic) == ["t/a", "t/b", "t/a"], "batch order: \(a.map(\.topic))")
        let b = try commit(s, StoreBatch(events: [("t/a", event("a3"))]))
        try expect(b.map(\.sequence) == [3], "next batch continues at 3, got \(b.map(\.sequence))")
        let empty = try commit(s, StoreBatch())
        try expect(empty.isEmpty, "an empty batch stores nothing, got \(empty.count)")
        try expect(s.latest(topic: "t/a")?.sequence == 3, "latest t/a is 3")
    }

    static func batch(_ h: Harness) throws {
        let s = try h.open(16)
        let state = Data("simulator state 1".utf8)
        let r = ResumeRecord(token: "tok1", name: "pixel", patterns: ["orders/>"], lastSent: ["orders/A": 2])
        _ = try commit(
            s,
            StoreBatch(
                events: [("orders/A", event("created"))],
                simulatorState: state,
                resumeRecords: [r],
                meta: [("scenario", "demo seed 1")],
                nowMilliseconds: 5
            )
        )
        try expect(s.latest(topic: "orders/A")?.body.contentState.status == "created", "the event is visible")
        try expect(s.simulatorState() == state, "the simulator state is visible")
        try expect(s.resumeRecords() == [r], "the resume record is visible: \(s.resumeRecords())")
        try expect(s.meta("scenario") == "demo seed 1", "the metadata is visible")
        try expect(s.meta("absent") == nil, "an unset key reads nil")
        // A batch without a simulator state keeps the stored one.
        _ = try commit(s, StoreBatch(events: [("orders/A", event("accepted"))]))
        try expect(s.simulatorState() == state, "a batch without a state keeps the stored state")
        _ = try commit(s, StoreBatch(meta: [("scenario", "x"), ("scenario", "y")]))
        try expect(s.meta("scenario") == "y", "the later value of a key wins, got \(s.meta("scenario") ?? "nil")")
    }

    static func completionOnce(_ h: Harness) throws {
        let s = try h.open(4)
        var calls = 0
        s.commit(StoreBatch(events: [("t/a", event("x"))])) { _ in calls += 1 }
        s.commit(StoreBatch()) { _ in calls += 1 }
        try expect(calls == 2, "two commits completed \(calls) times")
    }

    static func replay(_ h: Harness) throws {
        let s = try h.open(4)
        try expect(s.events(topic: "t/none", from: 1)?.isEmpty == true, "an unknown topic from 1 is []")
        for i in 1...6 { _ = try commit(s, StoreBatch(events: [("t/a", event("s\(i)"))])) }
        // Capacity 4: sequences 3…6 are kept (a store may keep more, never fewer).
        let tail = s.events(topic: "t/a", from: 3)
        try expect(tail?.map(\.sequence) == [3, 4, 5, 6], "from 3: \(tail.map { $0.map(\.sequence) } ?? [])")
        let limited = s.events(topic: "t/a", from: 4, limit: 1)
        try expect(limited?.map(\.sequence) == [4], "from 4 limit 1: \(limited.map { $0.map(\.sequence) } ?? [])")
        try expect(s.events(topic: "t/a", from: 7)?.isEmpty == true, "after the newest is []")
        try expect(s.events(topic: "t/a", from: 9)?.isEmpty == true, "far after the newest is []")
        // Sequence 1 is gone once 100 events follow a capacity of 4 (SQLite trims in rounds).
        for i in 7...1100 { _ = try commit(s, StoreBatch(events: [("t/a", event("s\(i)"))])) }
        try expect(s.events(topic: "t/a", from: 1) == nil, "from a trimmed sequence is nil")
        try expect(s.events(topic: "t/a", from: 1097)?.map(\.sequence) == [1097, 1098, 1099, 1100], "the newest 4")
    }

    static func latestAndTopics(_ h: Harness) throws {
        let s = try h.open(8)
        try expect(s.latest(topic: "b/x") == nil, "no latest before the first event")
        try expect(s.topics.isEmpty, "no topics in an empty store")
        _ = try commit(s, StoreBatch(events: [("b/x", event("1")), ("a/y", event("2")), ("b/x", event("3"))]))
        try expect(s.latest(topic: "b/x")?.body.contentState.status == "3", "latest is the newest")
        try expect(s.topics == ["a/y", "b/x"], "topics sorted: \(s.topics)")
    }

    static func resume(_ h: Harness) throws {
        let s = try h.open(8)
        let r1 = ResumeRecord(token: "t1", name: "a", patterns: ["x/>"], lastSent: [:])
        let r2 = ResumeRecord(token: "t2", name: "b", patterns: ["y/*"], lastSent: ["y/1": 4])
        var r1b = r1
        r1b.lastSent = ["x/1": 9]
        _ = try commit(s, StoreBatch(resumeRecords: [r1], nowMilliseconds: 1))
        _ = try commit(s, StoreBatch(resumeRecords: [r2], nowMilliseconds: 2))
        _ = try commit(s, StoreBatch(resumeRecords: [r1b], nowMilliseconds: 3))
        try expect(s.resumeRecords() == [r1b, r2], "newest first, one per token: \(s.resumeRecords())")
        _ = try commit(s, StoreBatch(removedResumeTokens: ["t1", "never-saved"], nowMilliseconds: 4))
        try expect(s.resumeRecords() == [r2], "a removed record is gone: \(s.resumeRecords())")
    }

    static func resumeLookup(_ h: Harness) throws {
        let s = try h.open(8)
        let r1 = ResumeRecord(token: "t1", name: "a", patterns: [], lastSent: [:])
        let r2 = ResumeRecord(token: "t2", name: "b", patterns: ["y/*"], lastSent: ["y/1": 4])
        try expect(s.resumeRecord(token: "t1") == nil, "an empty store has no record")
        _ = try commit(s, StoreBatch(resumeRecords: [r1, r2], nowMilliseconds: 1))
        try expect(s.resumeRecord(token: "t1") == r1, "the record is found by its token")
        try expect(s.resumeRecord(token: "t2") == r2, "each token finds its own record")
        // A HELLO, then a SUBSCRIBE of the same session: the later record of the token is the one found.
        var r1b = r1
        r1b.patterns = ["orders/>"]
        r1b.lastSent = ["orders/A": 3]
        _ = try commit(s, StoreBatch(resumeRecords: [r1b], nowMilliseconds: 2))
        let found = s.resumeRecord(token: "t1")
        try expect(found == r1b, "the newest record of a token is found: \(String(describing: found))")
        try expect(s.resumeRecord(token: "never-saved") == nil, "an unknown token finds nothing")
        _ = try commit(s, StoreBatch(removedResumeTokens: ["t1"], nowMilliseconds: 3))
        try expect(s.resumeRecord(token: "t1") == nil, "a removed record is not found")
        try expect(s.resumeRecord(token: "t2") == r2, "removing one record leaves the others")
        // A batch the store refuses stores no record: an event that cannot be encoded fails the whole batch.
        var bad = event("cooking")
        bad.contentState.summary.en = String(repeating: "x", count: 70_000)
        let r3 = ResumeRecord(token: "t3", name: "c", patterns: [], lastSent: [:])
        var refused = false
        s.commit(StoreBatch(events: [("orders/R", bad)], resumeRecords: [r3], nowMilliseconds: 4)) { result in
            if case .failure = result { refused = true }
        }
        if refused { try expect(s.resumeRecord(token: "t3") == nil, "a refused batch's record is not found") }
    }

    static func roundTrip(_ h: Harness) throws {
        let s = try h.open(8)
        var body = event("picked_up")
        body.contentState.riderPosition = PositionBody(latitude: 37.5665, longitude: 126.978)
        let stored = try commit(s, StoreBatch(events: [("orders/K", body)]))
        let back = s.events(topic: "orders/K", from: 1)?.first
        try expect(back?.body == body, "the body reads back equal")
        try expect(back?.template.body == stored.first?.template.body, "the shared bytes read back equal")
        try expect(back?.isTerminal == false, "a non-terminal event stays non-terminal")
    }

    static func encodedBody(_ h: Harness) throws {
        let s = try h.open(8)
        let a = event("cooking")
        let b = event("picked_up")
        // The client's canonical bytes of `a` (what EventJSON.encode writes); `b` without: the store encodes it.
        let bytes = try EventJSON.encode(a)
        let stored = try commit(s, StoreBatch(events: [("orders/E", a), ("orders/E", b)], encodedBodies: [bytes]))
        try expect(stored.count == 2, "both events are stored")
        try expect(stored.first.map { Array($0.template.body) } == bytes, "the given bytes are the shared body")
        try expect(stored.last.map { Array($0.template.body) } == (try EventJSON.encode(b)), "the other is encoded")
        let back = s.events(topic: "orders/E", from: 1) ?? []
        try expect(back.map { Array($0.template.body) } == stored.map { Array($0.template.body) }, "bytes read back")
        try expect(back.map(\.body) == [a, b], "bodies read back")
    }

    static func reopen(_ h: Harness) throws {
        guard let reopen = h.reopen else { return }
        var s: (any EventStore)? = try h.open(8)
        let state = Data("state".utf8)
        let r = ResumeRecord(token: "tk", name: "n", patterns: ["orders/>"], lastSent: ["orders/A": 1])
        _ = try commit(
            s!,
            StoreBatch(
                events: [("orders/A", event("created")), ("orders/A", event("accepted"))],
                simulatorState: state,
                resumeRecords: [r],
                meta: [("k", "v")]
            )
        )
        try expect(s!.isDurable, "a store with reopen says it is durable")
        s = nil
        let t = try reopen(8)
        try expect(t.latest(topic: "orders/A")?.sequence == 2, "latest survives the reopen")
        try expect(t.events(topic: "orders/A", from: 1)?.count == 2, "the log survives the reopen")
        try expect(t.simulatorState() == state, "the simulator state survives")
        try expect(t.resumeRecords() == [r], "the resume record survives")
        try expect(t.resumeRecord(token: "tk") == r, "the resume record is found by its token after the reopen")
        try expect(t.meta("k") == "v", "the metadata survives")
        let next = try commit(t, StoreBatch(events: [("orders/A", event("picked_up"))]))
        try expect(next.map(\.sequence) == [3], "sequences continue after the reopen: \(next.map(\.sequence))")
    }
}
