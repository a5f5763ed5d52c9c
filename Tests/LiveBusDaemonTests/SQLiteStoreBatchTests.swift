import Foundation
import LiveBusCore
import LiveBusDaemon
import LiveBusWire
import Testing

/// The SQLite store's batch write (one multi-row INSERT per 64, 16, 4 or 1 rows) and its recent events' commit
/// order: what a batch of any size stores is what a store opened afresh on the same file reads back.
struct SQLiteStoreBatchTests {
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lb-batch-\(UUID().uuidString)").path
    }

    /// Batches of every size around the statement sizes (and topics interleaved within one batch): every event is
    /// stored once, numbered in order, with its body, and read back the same from SQLite alone.
    @Test(arguments: [1, 3, 4, 5, 16, 21, 63, 64, 65, 150, 256, 1_024])
    func everyBatchSizeIsStoredWhole(size: Int) throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir, logCapacity: 2_048)
        var items: [StoreItem] = []
        for i in 0..<size { items.append(("orders/\(i % 3 == 0 ? "a" : "b")", StoreConformance.event("s\(i)"))) }
        guard let r = s.commitInTurn(StoreBatch(events: items)) else { throw StoreError("no completion") }
        let stored = try r.get()
        #expect(stored.count == size)
        let cold = try SQLiteStore(directory: dir, logCapacity: 2_048, recentCapacity: 0)
        for topic in ["orders/a", "orders/b"] {
            let expected = stored.filter { $0.topic == topic }
            #expect(expected.map(\.sequence) == (0..<expected.count).map { UInt64($0 + 1) })
            let read = cold.events(topic: topic, from: 1) ?? []
            #expect(read.map(\.sequence) == expected.map(\.sequence))
            #expect(read.map(\.body) == expected.map(\.body))
            #expect(read.map(\.template.shared) == expected.map(\.template.shared))
        }
        // A second batch continues the numbering.
        guard let r2 = s.commitInTurn(StoreBatch(events: [("orders/a", StoreConformance.event("next"))])) else {
            throw StoreError("no completion")
        }
        let a = stored.filter { $0.topic == "orders/a" }.count
        #expect(try r2.get().map(\.sequence) == [UInt64(a + 1)])
    }

    /// One topic committed for ever, under the per-topic bound: the commit order the cache keeps stays bounded (it
    /// grew by one entry per event before).
    @Test func commitOrderStaysBounded() {
        var recent = RecentEvents(capacity: 64, perTopic: 8)
        for i in 1...20_000 {
            guard let e = try? StoredEvent(topic: "orders/a", sequence: UInt64(i), body: StoreConformance.event("s"))
            else {
                Issue.record("no event")
                return
            }
            recent.append(e)
        }
        #expect(recent.count == 8)
        #expect(recent.orderEntries <= 2 * 64 + 4_096 + 1)
        #expect(recent.events(topic: "orders/a", from: 19_993, limit: 100)?.map(\.sequence) == Array(19_993...20_000))
    }

    /// After the order is compacted, the overall bound still drops the oldest committed event first: b's 1 (committed
    /// before a's held 5,999 and 6,000), not a's oldest held as an entry of a's long-dropped 1 at the front said.
    @Test func compactedOrderEvictsTheOldestFirst() {
        var recent = RecentEvents(capacity: 4, perTopic: 2)
        func add(_ topic: String, _ seq: UInt64) {
            if let e = try? StoredEvent(topic: topic, sequence: seq, body: StoreConformance.event("s")) {
                recent.append(e)
            }
        }
        add("orders/a", 1)
        add("orders/b", 1)
        for i in 2...6_000 { add("orders/a", UInt64(i)) }
        add("orders/b", 2)
        #expect(recent.count == 4)
        add("orders/c", 1)
        #expect(recent.count == 4)
        #expect(recent.events(topic: "orders/a", from: 5_999, limit: 2)?.map(\.sequence) == [5_999, 6_000])
        #expect(recent.events(topic: "orders/b", from: 1, limit: 2) == nil)
        #expect(recent.events(topic: "orders/b", from: 2, limit: 2)?.map(\.sequence) == [2])
        #expect(recent.events(topic: "orders/c", from: 1, limit: 2)?.map(\.sequence) == [1])
    }
}
