import CSQLite
import Foundation
import LiveBusCore

/// WAL checkpoints of a ``SQLiteStore`` on a thread of their own, never on the loop thread.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1,000 pages: it copies every page
/// back into the database file and, with `synchronous=NORMAL`, fsyncs the WAL and the database file, on the
/// committing thread. On the loop thread that was a turn of 10–20 ms every few hundred commits (the p99 of the
/// N = 1 latency row). Here the store's connection has no automatic checkpoint (`sqlite3_wal_hook` replaces it);
/// its WAL hook asks for a checkpoint once the WAL holds ``thresholdFrames`` frames, and this thread runs a
/// PASSIVE checkpoint on a second connection to the same file: it never waits for the writer and never blocks
/// it. Once a checkpoint has copied every frame, the writer's next transaction starts the WAL over from its
/// beginning (SQLite's WAL reset). Under a sustained load a commit lands during nearly every checkpoint, so that
/// moment may not come for seconds and the WAL file grows meanwhile (and keeps that size): 101–441 MB after 55,000
/// commits at 10,000/s on a loaded machine (BENCHMARKS.md, "Profiles of 2026-12-03"), where the automatic
/// checkpoint keeps it near 4 MB. Not bounded yet.
/// Durability is unchanged: a commit is durable once it is in the WAL; a checkpoint only copies committed pages.
/// Source: https://www.sqlite.org/wal.html ("Checkpointing", "Avoiding Excessively Large WAL Files"),
/// https://www.sqlite.org/c3ref/wal_checkpoint_v2.html (PASSIVE), https://www.sqlite.org/c3ref/wal_hook.html
final class WALCheckpointer: @unchecked Sendable {
    /// WAL frames (pages) after which a commit asks for a checkpoint: SQLite's own default.
    static let thresholdFrames: Int32 = 1000

    /// Guards every `var` below; the checkpoint thread waits on it.
    private let condition = NSCondition()
    private var requested = false
    private var stopping = false
    private var exited = false
    private var completedCount = 0
    private var framesCopied = 0
    private var db: OpaquePointer?

    /// Opens the checkpoint connection to `path` and starts its thread.
    /// - Parameter path: The database file (already in WAL mode).
    /// - Throws: ``StoreError`` when SQLite cannot open the file.
    init(path: String) throws(StoreError) {
        guard
            sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nil)
                == SQLITE_OK
        else {
            let m = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw StoreError("cannot open the checkpoint connection to \(path): \(m)")
        }
        // It writes no transaction of its own: no automatic checkpoint of its own either. A first read opens the
        // file's WAL on this connection: a checkpoint on a connection that has read nothing yet copies nothing.
        sqlite3_wal_autocheckpoint(db, 0)
        guard sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK else {
            let m = String(cString: sqlite3_errmsg(db))
            sqlite3_close_v2(db)
            throw StoreError("cannot read \(path) on the checkpoint connection: \(m)")
        }
        let thread = Thread { [self] in run() }
        thread.name = "livebusd-checkpoint"
        thread.start()
    }

    /// Asks for a checkpoint (any thread; the store's WAL hook on the loop thread). Returns at once.
    func request() {
        condition.lock()
        if !requested {
            requested = true
            condition.signal()
        }
        condition.unlock()
    }

    /// Checkpoints completed so far, and the frames they copied (tests).
    var completed: (checkpoints: Int, frames: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (completedCount, framesCopied)
    }

    /// Waits until more than `checkpoints` checkpoints have completed, or `seconds` have passed (tests).
    /// - Returns: Whether they completed.
    func waitForCheckpoints(moreThan checkpoints: Int, seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while completedCount <= checkpoints {
            if !condition.wait(until: deadline) { return completedCount > checkpoints }
        }
        return true
    }

    /// Stops the thread after the checkpoint it is running, closes its connection and returns once it has.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !exited { condition.wait() }
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while !requested && !stopping { condition.wait() }
            if stopping { break }
            requested = false
            condition.unlock()
            var logFrames: Int32 = 0
            var copied: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied)
            condition.lock()
            if rc == SQLITE_OK {
                completedCount += 1
                framesCopied += Int(max(0, copied))
            }
            condition.broadcast()
        }
        sqlite3_close_v2(db)
        db = nil
        exited = true
        condition.broadcast()
        condition.unlock()
    }
}
