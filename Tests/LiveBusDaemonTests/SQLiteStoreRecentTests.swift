import Foundation
import LiveBusCore
import LiveBusDaemon
import Testing

/// The SQLite store's recent events in memory (replays without a query and a decode per event) and its resume
/// records written without Foundation: the answers are the ones SQLite gives, whatever the cache holds.
struct SQLiteStoreRecentTests {
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lb-recent-\(UUID().uuidString)").path
    }

    static func commit(_ s: SQLiteStore, _ items: [StoreItem]) throws -> [StoredEvent] {
        guard let r = s.commitInTurn(StoreBatch(events: items)) else { throw StoreError("no completion") }
        return try r.get()
    }

    static func seqs(_ e: [StoredEvent]?) -> [UInt64]? { e?.map(\.sequence) }

    /// With a cache smaller than a topic's log, a small cache, and none: every query answers the same.
    @Test(arguments: [0, 5, 64, 16_384])
    func answersAreTheStoresWhateverTheCacheHolds(recent: Int) throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir, logCapacity: 16, recentCapacity: recent)
        for round in 0..<5 {
            var items: [StoreItem] = []
            for i in 0..<9 { items.append(("orders/\(i % 3)", StoreConformance.event("r\(round)i\(i)"))) }
            _ = try Self.commit(s, items)
        }
        // 15 events per topic, log capacity 16: every one is kept. A second store on the same file with no cache
        // answers every query from SQLite: the same events, bodies and shared bytes.
        let cold = try SQLiteStore(directory: dir, logCapacity: 16, recentCapacity: 0)
        for t in 0..<3 {
            let topic = "orders/\(t)"
            #expect(Self.seqs(s.events(topic: topic, from: 1)) == Array(1...15))
            #expect(Self.seqs(s.events(topic: topic, from: 0, limit: 3)) == [1, 2, 3])
            #expect(Self.seqs(s.events(topic: topic, from: 10, limit: 2)) == [10, 11])
            #expect(Self.seqs(s.events(topic: topic, from: 15)) == [15])
            #expect(Self.seqs(s.events(topic: topic, from: 16)) == [])
            #expect(s.events(topic: topic, from: 7)?.first?.body.contentState.status == "r2i\(t)")
            for from in [0, 1, 5, 11, 15] as [UInt64] {
                let warm = s.events(topic: topic, from: from) ?? []
                let fromDisk = cold.events(topic: topic, from: from) ?? []
                #expect(warm.map(\.sequence) == fromDisk.map(\.sequence))
                #expect(warm.map(\.template.shared) == fromDisk.map(\.template.shared))
                #expect(warm.map(\.body) == fromDisk.map(\.body))
            }
        }
        #expect(Self.seqs(s.events(topic: "orders/none", from: 1)) == [])
    }

    /// Past the log's capacity the oldest events are gone from SQLite: the cache never answers for them.
    @Test func trimmedEventsAreNotServedFromMemory() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir, logCapacity: 4, recentCapacity: 1000)
        for i in 0..<1100 { _ = try Self.commit(s, [("orders/a", StoreConformance.event("s\(i)"))]) }
        // The store trims to the newest 4 in steps of SQLiteStore.trimChunk; the cache holds at most 4 per topic.
        #expect(s.events(topic: "orders/a", from: 1) == nil, "sequence 1 was trimmed")
        #expect(Self.seqs(s.events(topic: "orders/a", from: 1097)) == [1097, 1098, 1099, 1100])
        #expect(s.events(topic: "orders/a", from: 1100)?.first?.body.contentState.status == "s1099")
    }

    /// Resume records with every character JSON must escape are read back as they were written.
    @Test func resumeRecordsWithAwkwardTextRoundTrip() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = ResumeRecord(
            token: "tok\"en\\1",
            name: "ph\u{01}one \u{1F} \"quoted\" é 日本 \n\t/slash",
            patterns: ["orders/>", "a/*/c", "x\"y"],
            lastSent: ["orders/A1": 7, "orders/\"q\"": 1 << 53, "b": 0]
        )
        let empty = ResumeRecord(token: "t2", name: "", patterns: [], lastSent: [:])
        do {
            let s = try SQLiteStore(directory: dir)
            _ = s.commitInTurn(StoreBatch(resumeRecords: [r], nowMilliseconds: 1))
            _ = s.commitInTurn(StoreBatch(resumeRecords: [empty], nowMilliseconds: 2))
            #expect(s.resumeRecords() == [empty, r])
        }
        let reopened = try SQLiteStore(directory: dir)
        #expect(reopened.resumeRecords() == [empty, r])
    }
}

/// The bounded cache itself: per-topic and total bounds, oldest committed first out, never a gap.
struct RecentEventsTests {
    static func event(_ topic: String, _ seq: UInt64) throws -> StoredEvent {
        try StoredEvent(topic: topic, sequence: seq, body: StoreConformance.event("s\(seq)"))
    }

    @Test func boundsAndEviction() throws {
        var r = RecentEvents(capacity: 6, perTopic: 4)
        for s in 1...5 { r.append(try Self.event("a", UInt64(s))) }
        #expect(r.count == 4)
        #expect(r.events(topic: "a", from: 1, limit: 10) == nil, "1 fell out of the per-topic bound")
        #expect(r.events(topic: "a", from: 2, limit: 10)?.map(\.sequence) == [2, 3, 4, 5])
        for s in 1...3 { r.append(try Self.event("b", UInt64(s))) }
        #expect(r.count == 6, "the total bound")
        // The oldest committed events (of "a") went first.
        #expect(r.events(topic: "a", from: 2, limit: 10) == nil)
        #expect(r.events(topic: "a", from: 3, limit: 10)?.map(\.sequence) == [3, 4, 5])
        #expect(r.events(topic: "b", from: 1, limit: 2)?.map(\.sequence) == [1, 2])
        #expect(r.events(topic: "c", from: 1, limit: 2) == nil)
    }

    @Test func aGapStartsTheTopicAfreshAndZeroCapacityHoldsNothing() throws {
        var r = RecentEvents(capacity: 100, perTopic: 10)
        r.append(try Self.event("a", 1))
        r.append(try Self.event("a", 2))
        r.append(try Self.event("a", 5))
        #expect(r.events(topic: "a", from: 1, limit: 10) == nil)
        #expect(r.events(topic: "a", from: 5, limit: 10)?.map(\.sequence) == [5])
        #expect(r.count == 1)
        var none = RecentEvents(capacity: 0, perTopic: 10)
        none.append(try Self.event("a", 1))
        #expect(none.count == 0 && none.events(topic: "a", from: 1, limit: 1) == nil)
    }
}
