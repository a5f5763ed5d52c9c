import CSQLite
import Foundation
import Glibc
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// The SQLite store writes no temporary file on the loop thread (issue 15): a large batch's multi-row INSERTs kept a
/// statement journal that SQLite spilled to `etilqs_*` files in /var/tmp past 64 KiB, a 4 KiB `pwrite` at a time.
/// The store keeps SQLite's temporary files in memory (`PRAGMA temp_store=MEMORY`) and its INSERTs keep no statement
/// journal (`INSERT OR ROLLBACK`: a failing row rolls the whole batch back, which the store does on any failure).
/// Source: https://www.sqlite.org/tempfiles.html §2.5 ("Statement Journal Files"), §4 (`temp_store`).
@Suite(.serialized)
struct SQLiteStoreTempFileTests {
    static func directory(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lb-\(name)-\(UUID().uuidString)").path
    }

    /// Batches of 1,024 events with 2 KiB bodies over 2 topics: their 64-row INSERTs change more existing pages than
    /// the 64 KiB a statement journal holds in memory by default (without the store's fix: one `etilqs_*` file a
    /// batch).
    static func largeBatches(_ s: SQLiteStore, count: Int) throws {
        let status = String(repeating: "x", count: 2_048)
        for b in 0..<count {
            var items: [StoreItem] = []
            for i in 0..<1_024 { items.append(("orders/\(i % 2)", StoreConformance.event("\(b).\(i).\(status)"))) }
            guard let r = s.commitInTurn(StoreBatch(events: items)) else { throw StoreError("no completion") }
            #expect(try r.get().count == 1_024)
        }
    }

    /// The store's connection reads `temp_store` back as 2 (MEMORY).
    @Test func temporaryFilesAreKeptInMemory() throws {
        let dir = Self.directory("tempstore")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir)
        #expect(s.tempStore == 2)
    }

    /// A batch whose INSERT fails (a row put behind the store's back at a sequence it takes) is stored not at all:
    /// INSERT OR ROLLBACK ends the transaction, the store's own ROLLBACK finds none, and the next batch is stored
    /// with the numbers the refused one would have taken.
    @Test func aFailingInsertRollsTheWholeBatchBack() throws {
        let dir = Self.directory("rollback")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir)
        guard let first = s.commitInTurn(StoreBatch(events: [("orders/a", StoreConformance.event("one"))])) else {
            throw StoreError("no completion")
        }
        #expect(try first.get().map(\.sequence) == [1])
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        try #require(sqlite3_open(s.path, &db) == SQLITE_OK)
        func sql(_ text: String) throws {
            let rc = sqlite3_exec(db, text, nil, nil, nil)
            try #require(rc == SQLITE_OK, "\(text): \(String(cString: sqlite3_errmsg(db)))")
        }
        try sql("INSERT INTO events(topic, seq, body) VALUES('orders/a', 40, x'7b7d')")
        // 70 events: a 64-row INSERT (2…65), whose row 40 conflicts, then 4-row and 1-row ones.
        let items = (0..<70).map { ("orders/a", StoreConformance.event("b\($0)")) }
        guard let refused = s.commitInTurn(StoreBatch(events: items)) else { throw StoreError("no completion") }
        #expect(throws: StoreError.self) { try refused.get() }
        #expect(s.latest(topic: "orders/a")?.sequence == 1)
        try sql("DELETE FROM events WHERE topic = 'orders/a' AND seq = 40")
        var count: OpaquePointer?
        defer { sqlite3_finalize(count) }
        try #require(sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &count, nil) == SQLITE_OK)
        try #require(sqlite3_step(count) == SQLITE_ROW)
        #expect(sqlite3_column_int(count, 0) == 1)
        guard let next = s.commitInTurn(StoreBatch(events: items)) else { throw StoreError("no completion") }
        #expect(try next.get().map(\.sequence) == Array(2...71))
    }

    /// SQLite's temporary directory pointed at a directory watched with inotify: large batches (and their trims)
    /// create no file in it. A temporary file is unlinked as soon as it is opened, so its IN_CREATE is what shows it.
    @Test func largeBatchesCreateNoTemporaryFile() throws {
        let dir = Self.directory("tempfile")
        let tmp = dir + "-sqlite-tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(atPath: dir)
            try? FileManager.default.removeItem(atPath: tmp)
        }
        // SQLite's process-wide temporary directory (sqlite3_temp_directory), set under SQLite's own mutex and
        // read back: a build without deprecated pragmas would ignore it, and the test would watch the wrong place.
        func setTemporaryDirectory(_ path: String) throws {
            var db: OpaquePointer?
            defer { sqlite3_close(db) }
            var stmt: OpaquePointer?
            defer { sqlite3_finalize(stmt) }
            guard sqlite3_open(":memory:", &db) == SQLITE_OK,
                sqlite3_exec(db, "PRAGMA temp_store_directory='\(path)'", nil, nil, nil) == SQLITE_OK,
                sqlite3_prepare_v2(db, "PRAGMA temp_store_directory", -1, &stmt, nil) == SQLITE_OK
            else { throw StoreError("cannot set SQLite's temporary directory to \(path)") }
            let now = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_text(stmt, 0).map { String(cString: $0) } : nil
            try #require((now ?? "") == path, "SQLite's temporary directory is \(now ?? "unset"), not \(path)")
        }
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        try #require(fd >= 0)
        defer { Glibc.close(fd) }
        try #require(inotify_add_watch(fd, tmp, UInt32(IN_CREATE)) >= 0)
        try setTemporaryDirectory(tmp)
        defer { try? setTemporaryDirectory("") }
        let s = try SQLiteStore(directory: dir, logCapacity: 256)
        try Self.largeBatches(s, count: 3)
        var created: [String] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            var at = 0
            while at + 16 <= n {
                // struct inotify_event: wd, mask, cookie, len (4 bytes each), then len bytes of NUL-padded name.
                let len = buffer.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: at + 12, as: UInt32.self)) }
                let name = buffer[(at + 16)..<min(at + 16 + len, n)].prefix { $0 != 0 }
                let file = String(decoding: name, as: UTF8.self)
                // SQLite names its temporary files etilqs_… (SQLITE_TEMP_FILE_PREFIX).
                if file.hasPrefix("etilqs_") { created.append(file) }
                at += 16 + len
            }
        }
        #expect(created.isEmpty, "SQLite created temporary files: \(created)")
    }
}
