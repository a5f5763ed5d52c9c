import CSQLite
import Foundation
import LiveBusDaemon
import LiveBusWire
import Testing

/// A data directory is validated before anything is served from it: damage is refused with the directory, what is
/// wrong and what to do (`--fresh`), never a crash or a replay with holes. Source: issue 14 "A store loaded at start
/// is validated" (negative `next_seq` crashed the daemon; 200 flipped bytes served 624 of 3,000 events missing).
@Suite(.serialized)
struct StoreValidationTests {
    /// A directory with `topics` topics of `events` events each, closed (the WAL checkpointed into the file).
    static func makeStore(topics: Int = 3, events: Int = 40) throws -> String {
        let dir = temporaryDirectory("lbv")
        let store = try SQLiteStore(directory: dir, logCapacity: 1024)
        for t in 0..<topics {
            for i in 0..<events {
                var b = GoldenVectorsForTests.event
                b.contentState.status = "delivering \(i)"
                _ = try store.append(topic: "orders/T\(t)", body: b)
            }
        }
        return dir
    }

    /// Runs SQL on the closed database (as a person with the sqlite3 shell would).
    static func sql(_ dir: String, _ statements: String) {
        var db: OpaquePointer?
        #expect(sqlite3_open(dir + "/livebus.db", &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, statements, nil, nil, nil) == SQLITE_OK, "\(String(cString: sqlite3_errmsg(db)))")
        sqlite3_close(db)
    }

    static func refusal(_ dir: String) -> String? {
        do {
            _ = try SQLiteStore(directory: dir)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func anIntactStoreOpensAndKeepsItsEvents() throws {
        let dir = try Self.makeStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try SQLiteStore(directory: dir)
        #expect(s.topics.count == 3)
        #expect(s.events(topic: "orders/T1", from: 1)?.count == 40)
        #expect(FileManager.default.fileExists(atPath: dir + "/livebus.created"))
    }

    /// The issue's crash: a negative `next_seq` trapped in the loader.
    @Test func negativeNextSeqIsRefused() throws {
        let dir = try Self.makeStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        Self.sql(dir, "UPDATE topics SET next_seq = -5 WHERE topic = 'orders/T1'")
        let m = Self.refusal(dir)
        #expect(m?.contains("the data directory \(dir) is damaged") == true, "\(m ?? "opened")")
        #expect(m?.contains("topic 'orders/T1' has the sequence counter next_seq = -5") == true, "\(m ?? "opened")")
        #expect(m?.contains("--fresh") == true)
        Self.sql(dir, "UPDATE topics SET next_seq = 9223372036854775807 WHERE topic = 'orders/T1'")
        #expect(Self.refusal(dir)?.contains("next_seq = 9223372036854775807") == true)
    }

    @Test func aHoleInATopicIsRefused() throws {
        let dir = try Self.makeStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        Self.sql(dir, "DELETE FROM events WHERE topic = 'orders/T2' AND seq IN (7, 8, 20)")
        let m = Self.refusal(dir)
        #expect(
            m?.contains("topic 'orders/T2' has a hole: 3 of its events 1…40 are missing") == true,
            "\(m ?? "opened")"
        )
    }

    @Test func aMissingLatestEventIsRefused() throws {
        let dir = try Self.makeStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        Self.sql(dir, "DELETE FROM events WHERE topic = 'orders/T0' AND seq = 40")
        #expect(Self.refusal(dir)?.contains("topic 'orders/T0' is missing its latest event 40") == true)
        Self.sql(dir, "DELETE FROM events WHERE topic = 'orders/T0'")
        #expect(Self.refusal(dir)?.contains("topic 'orders/T0' is missing its latest event 40") == true)
    }

    @Test func anEventPastItsCounterIsRefused() throws {
        let dir = try Self.makeStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        Self.sql(
            dir,
            "INSERT INTO events(topic, seq, body) SELECT topic, 99, body FROM events WHERE topic = 'orders/T0' AND seq = 1"
        )
        #expect(Self.refusal(dir)?.contains("event 99 of topic 'orders/T0' lies outside") == true)
    }

    /// A stored instant out of PROTOCOL.md §3's range (the issue's poisoned store) is refused at start, naming it.
    @Test func aStoredInstantOutOfRangeIsRefused() throws {
        let dir = try Self.makeStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        Self.sql(
            dir,
            """
            UPDATE events SET body = CAST(replace(CAST(body AS TEXT), '"etaTarget":1767226800000',
                '"etaTarget":-9223372036854775808') AS BLOB) WHERE topic = 'orders/T1' AND seq = 3
            """
        )
        let m = Self.refusal(dir)
        #expect(m?.contains("event 3 of topic 'orders/T1' cannot be served (invalidValue") == true, "\(m ?? "opened")")
        #expect(m?.contains("contentState.etaTarget") == true)
    }

    /// 200 bytes flipped across the file's pages (not the header page): refused, never served with holes.
    @Test func flippedBytesAreRefused() throws {
        let dir = try Self.makeStore(topics: 10, events: 300)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/livebus.db"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.count > 8192)
        var x: UInt64 = 14
        for _ in 0..<200 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let at = 4096 + Int((x >> 33) % UInt64(bytes.count - 4096))
            bytes[at] ^= 0xFF
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let m = Self.refusal(dir)
        #expect(m != nil, "a corrupted store was opened")
        #expect(m?.contains(dir) == true, "\(m ?? "")")
    }

    /// The database deleted or emptied while the directory (and its creation marker) stays: an error naming the
    /// file, not a silent fresh start; `--fresh` (SQLiteStore.remove) starts afresh on purpose.
    @Test func aMissingOrEmptyDatabaseIsRefused() throws {
        let dir = try Self.makeStore()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        SQLiteStore.remove(directory: dir)
        _ = try SQLiteStore(directory: dir)  // --fresh removed the marker too: a new store
        for suffix in ["", "-wal", "-shm"] { unlink(dir + "/livebus.db" + suffix) }
        var m = Self.refusal(dir)
        #expect(m?.contains("held a database (created ") == true, "\(m ?? "opened")")
        #expect(m?.contains("\(dir)/livebus.db is missing") == true, "\(m ?? "opened")")
        #expect(m?.contains("--fresh") == true)
        #expect(!FileManager.default.fileExists(atPath: dir + "/livebus.db"), "the refusal created a database")
        _ = FileManager.default.createFile(atPath: dir + "/livebus.db", contents: Data())
        m = Self.refusal(dir)
        #expect(m?.contains("\(dir)/livebus.db is empty") == true, "\(m ?? "opened")")
    }
}
