import CSQLite
import Foundation
import LiveBusCore
import LiveBusDaemon
import LiveBusWire
import Testing

/// Every text the SQLite store binds is bound with its explicit UTF-8 byte count, and read back with its column's
/// byte count: a string with an embedded NUL is stored and read whole, never cut at the NUL (fresh-user review
/// 2026-12-03: `topics` held `orders/a` beside `events`' `orders/a\u{0}b`, and the next open refused the directory as
/// damaged). The daemon refuses such a topic before the store (``Topic/validate(_:)``); the store must not depend on it.
struct SQLiteStoreTextTests {
    @Test func textsWithAnEmbeddedNULRoundTrip() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lb-text-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let topic = "orders/a\u{0}b"
        do {
            let s = try SQLiteStore(directory: dir)
            let batch = StoreBatch(
                events: [(topic, StoreConformance.event("cooking")), ("orders/a", StoreConformance.event("created"))],
                meta: [(key: "k\u{0}1", value: "v\u{0}w")]
            )
            guard let r = s.commitInTurn(batch) else { throw StoreError("no completion") }
            #expect(try r.get().map(\.sequence) == [1, 1])
            s.flushDeferredState()
        }
        // A store opened afresh checks the file (validateStoredState) and reads it back from SQLite alone.
        let cold = try SQLiteStore(directory: dir, recentCapacity: 0)
        #expect(cold.topics == ["orders/a", topic])
        #expect(cold.events(topic: topic, from: 1)?.map(\.body.contentState.status) == ["cooking"])
        #expect(cold.events(topic: "orders/a", from: 1)?.map(\.body.contentState.status) == ["created"])
        #expect(cold.latest(topic: topic)?.topic == topic)
        #expect(cold.meta("k\u{0}1") == "v\u{0}w")
        #expect(cold.meta("k") == nil)
    }

    /// A damaged store's refusal names such a topic whole, its NUL shown escaped (`orders/a\0b`), never cut at it nor
    /// written raw to the terminal.
    @Test func aRefusalNamesSuchATopicEscaped() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lb-text-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try SQLiteStore(directory: dir)
            guard let r = s.commitInTurn(StoreBatch(events: [("orders/a\u{0}b", StoreConformance.event("cooking"))]))
            else { throw StoreError("no completion") }
            _ = try r.get()
        }
        var db: OpaquePointer?
        #expect(sqlite3_open(dir + "/livebus.db", &db) == SQLITE_OK)
        // The event lost (as a person with the sqlite3 shell could): its topic's latest event is missing.
        let delete = "DELETE FROM events WHERE topic = CAST(X'6F72646572732F610062' AS TEXT)"
        #expect(sqlite3_exec(db, delete, nil, nil, nil) == SQLITE_OK)
        #expect(sqlite3_changes(db) == 1)
        sqlite3_close(db)
        do {
            _ = try SQLiteStore(directory: dir)
            Issue.record("a damaged store opened")
        } catch {
            #expect(error.message.contains(#"topic 'orders/a\0b' is missing its latest event 1"#), "\(error.message)")
            #expect(!error.message.contains("\u{0}"))
        }
    }
}
