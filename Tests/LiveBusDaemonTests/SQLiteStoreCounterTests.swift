import CSQLite
import Foundation
import LiveBusCore
import Testing

@testable import LiveBusDaemon

/// The topic counters (`topics.next_seq`) written once per ``SQLiteStore/counterSlack`` events of a topic instead of
/// in every batch: one WAL frame less per one-event commit, and no sequence ever taken twice, after a crash too.
struct SQLiteStoreCounterTests {
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lb-ctr-\(UUID().uuidString)").path
    }

    static func commit(_ s: SQLiteStore, _ topic: String, _ status: String) throws -> StoredEvent {
        guard let r = s.commitInTurn(StoreBatch(events: [(topic, StoreConformance.event(status))])) else {
            throw StoreError("no completion")
        }
        guard let e = try r.get().first else { throw StoreError("nothing stored") }
        return e
    }

    /// `next_seq` of `topic` as the file holds it, read with a connection of its own.
    static func storedCounter(_ dir: String, _ topic: String) -> Int64? {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        guard sqlite3_open_v2(dir + "/livebus.db", &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return nil }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT next_seq FROM topics WHERE topic = ?", -1, &stmt, nil) == SQLITE_OK
        else { return nil }
        defer { sqlite3_finalize(stmt) }
        sqlite3_bind_text(stmt, 1, topic, -1, CSQLite_transient())
        return sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : nil
    }

    /// The files of an open store copied as they are, as a kill -9 leaves them (the committed batches are in the
    /// WAL; no counter is written at a close).
    static func crashImage(of dir: String) throws -> String {
        let copy = directory()
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        chmod(copy, 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where !name.hasSuffix("-shm") {
            try FileManager.default.copyItem(atPath: dir + "/" + name, toPath: copy + "/" + name)
        }
        return copy
    }

    /// One event per commit, the N = 1 latency shape: one WAL frame per commit (the events table's page), not two
    /// (the topics table's page too, every batch, before); the file's counter lags by less than `counterSlack`.
    @Test func oneEventCommitsWriteTheCounterOncePerSlack() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir)
        _ = try Self.commit(s, "orders/a", "s0")
        let before = s.walFrames
        for i in 1...40 { _ = try Self.commit(s, "orders/a", "s\(i)") }
        let frames = Int(s.walFrames - before)
        // 40 commits: the events table's leaf each, its splits (≈ 13 bodies a page: 55 frames in all here) and the
        // counter's page once (at 2 + counterSlack); with the counter's page in every commit it was 40 more.
        #expect(frames < 2 * 40, "\(frames) WAL frames for 40 one-event commits")
        let stored = Self.storedCounter(dir, "orders/a")
        #expect(stored != nil)
        if let stored {
            #expect(stored < 42, "the counter was written in every batch: \(stored)")
            #expect(42 - stored < Int64(SQLiteStore.counterSlack))
        }
    }

    /// A crash image with a lagging counter opens (it is not damage), numbers on from the newest stored event, and
    /// a clean close leaves the exact counter.
    @Test func aLaggingCounterSurvivesACrashAndACleanCloseWritesItExactly() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir)
        for i in 1...41 { _ = try Self.commit(s, "orders/a", "s\(i)") }
        _ = try Self.commit(s, "orders/b", "b1")
        let image = try Self.crashImage(of: dir)
        defer { try? FileManager.default.removeItem(atPath: image) }
        #expect((Self.storedCounter(image, "orders/a") ?? 0) < 42)
        var reopened: SQLiteStore? = try SQLiteStore(directory: image)
        #expect(reopened?.events(topic: "orders/a", from: 1)?.map(\.sequence) == Array(1...41))
        #expect(reopened?.latest(topic: "orders/a")?.body == StoreConformance.event("s41"))
        #expect(try reopened.map { try Self.commit($0, "orders/a", "s42").sequence } == 42)
        #expect(try reopened.map { try Self.commit($0, "orders/b", "b2").sequence } == 2)
        reopened = nil
        #expect(Self.storedCounter(image, "orders/a") == 43)
        #expect(Self.storedCounter(image, "orders/b") == 3)
        let again = try SQLiteStore(directory: image)
        #expect(try Self.commit(again, "orders/a", "s43").sequence == 43)
    }

    /// Past the slack an event is outside its counter (damage), as every event past the counter was in schema 1.
    @Test func anEventASlackPastTheCounterIsRefused() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try SQLiteStore(directory: dir)
            for i in 1...3 { _ = try Self.commit(s, "orders/a", "s\(i)") }
        }
        #expect(Self.storedCounter(dir, "orders/a") == 4)
        var db: OpaquePointer?
        #expect(sqlite3_open(dir + "/livebus.db", &db) == SQLITE_OK)
        let far = 4 + Int64(SQLiteStore.counterSlack)
        let sql =
            "INSERT INTO events(topic, seq, body) SELECT topic, \(far), body FROM events WHERE topic = 'orders/a' AND seq = 3"
        #expect(sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        do {
            _ = try SQLiteStore(directory: dir)
            Issue.record("opened a store with an event past its counter's slack")
        } catch {
            #expect(error.message.contains("event \(far) of topic 'orders/a' lies outside"), "\(error.message)")
        }
    }

    /// A schema-1 file (exact counters) opens, numbers on, and is marked schema 2 (a lagging counter in it from then
    /// on is refused by a schema-1 livebusd as newer, not called damage).
    @Test func aSchemaOneFileOpensAndBecomesSchemaTwo() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try SQLiteStore(directory: dir)
            for i in 1...3 { _ = try Self.commit(s, "orders/a", "s\(i)") }
        }
        var db: OpaquePointer?
        #expect(sqlite3_open(dir + "/livebus.db", &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "PRAGMA user_version=1", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        let s = try SQLiteStore(directory: dir)
        #expect(try Self.commit(s, "orders/a", "s4").sequence == 4)
        let stmt = try s.prepareStatement("PRAGMA user_version")
        defer { sqlite3_finalize(stmt) }
        #expect(sqlite3_step(stmt) == SQLITE_ROW)
        #expect(sqlite3_column_int(stmt, 0) == 2)
        #expect(SQLiteStore.schemaVersion == 2)
    }
}
