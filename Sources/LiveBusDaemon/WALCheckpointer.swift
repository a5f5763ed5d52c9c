import CSQLite
import Foundation
import LiveBusCore

/// WAL checkpoints of a ``SQLiteStore`` on a thread of their own, never on the loop thread, and the WAL's bound.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1,000 pages: it copies every page
/// back into the database file and, with `synchronous=NORMAL`, fsyncs the WAL and the database file, on the
/// committing thread. On the loop thread that was a turn of 10–20 ms every few hundred commits (the p99 of the
/// N = 1 latency row). Here the store's connection has no automatic checkpoint (`sqlite3_wal_hook` replaces it);
/// its WAL hook asks for a checkpoint once the WAL holds ``thresholdFrames`` frames, and this thread runs a
/// PASSIVE checkpoint on a second connection to the same file: it never waits for the writer and never blocks
/// it. Once a checkpoint has copied every frame, the writer's next transaction starts the WAL over from its
/// beginning (SQLite's WAL reset).
///
/// **The bound.** Under a sustained load a commit lands during nearly every checkpoint, so that moment may not come
/// for seconds: the WAL grew to 101–441 MB after 55,000 commits at 10,000/s on a loaded machine (BENCHMARKS.md,
/// "Profiles of 2026-12-03"). So once the store's last commit left ``capFrames`` frames or more in the WAL, its
/// next batch first waits on the loop thread for ``checkpointAndWait()``: a PASSIVE checkpoint of this thread that
/// started after that commit. The store is the only writer and commits nothing while it waits, so that checkpoint
/// copies every frame and the batch's transaction starts the WAL over. The WAL thus holds at most ``capFrames``
/// frames plus one batch's: with 4 KiB pages a frame is 4,120 bytes, 16,000 frames 65.9 MB (62.9 MiB, under 64
/// MiB). The wait is one loop turn as long as the end of the checkpoint running and one more of the last frames
/// (two fsyncs each; 4–192 ms under strace on a loaded machine, BENCHMARKS.md "Profiles of 2026-12-03 (the WAL's
/// bound, issue 15)"), once per ``capFrames`` frames written while the checkpoints lose the race; none while they
/// keep up. (A RESTART or TRUNCATE checkpoint instead would need the writer's lock: on the loop thread it gets
/// SQLITE_BUSY at once, without its busy handler, whenever this thread holds the checkpoint lock; on this thread
/// the loop's BEGIN IMMEDIATE would need a busy timeout and wait just as long.) A reader of another process that
/// keeps an old snapshot open can still hold the WAL back: then the next wait comes ``capFrames`` frames later.
/// After a reset the file keeps its size unless `PRAGMA journal_size_limit` is set: ``SQLiteStore`` sets
/// ``sizeLimitBytes``, and SQLite truncates the file to it in the first commit after the reset, on the loop thread
/// (36–44 ms for a 60 MB file on a loaded disk): so the store lifts the limit for the reset after a wait and puts it
/// back once a reset comes without one, and the file is given back once the load has passed.
/// Durability is unchanged: a commit is durable once it is in the WAL; a checkpoint only copies committed pages.
/// Source: https://www.sqlite.org/wal.html ("Checkpointing", "Avoiding Excessively Large WAL Files"),
/// https://www.sqlite.org/c3ref/wal_checkpoint_v2.html (PASSIVE; the checkpoint lock never calls the busy handler),
/// https://www.sqlite.org/c3ref/wal_hook.html, https://www.sqlite.org/pragma.html#pragma_journal_size_limit
final class WALCheckpointer: @unchecked Sendable {
    /// WAL frames (pages) after which a commit asks for a checkpoint: SQLite's own default.
    static let thresholdFrames: Int32 = 1000
    /// WAL frames after which the next batch waits for a checkpoint first (``checkpointAndWait()``): 16 ×
    /// ``thresholdFrames``, 65.9 MB of 4 KiB pages. Far above the WAL's size while the checkpoints keep up
    /// (≈ 1,000 frames, 4.1 MB), so it costs nothing then; at 10,000 one-PUBLISH commits/s (≈ 2 frames each) a
    /// wait every ≈ 0.8 s while they lose the race.
    static let capFrames: Int32 = 16 * thresholdFrames
    /// `PRAGMA journal_size_limit` of the store's connection, bytes: 8 MiB. Above the WAL file's size while the
    /// checkpoints keep up (so a normal reset does not shorten the file only to grow it again), below
    /// ``capFrames``: after a burst the file gives the rest back (not while the cap's waits go on: ``SQLiteStore``).
    static let sizeLimitBytes = 8 * 1024 * 1024

    /// Guards every `var` below; the checkpoint thread waits on it.
    private let condition = NSCondition()
    private var requested = false
    private var stopping = false
    private var exited = false
    private var completedCount = 0
    private var framesCopied = 0
    private var db: OpaquePointer?
    /// Checkpoints begun, and ended whatever their result; whether the last one ended copied every frame.
    private var startedCount = 0
    private var endedCount = 0
    private var lastCopiedAll = false
    private var heldBackFlag = false
    /// Frames in the WAL after the store's last commit (its WAL hook): written and read on the store's thread only.
    var walFrames: Int32 = 0

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
        if !requested && !heldBackFlag {
            requested = true
            condition.signal()
        }
        condition.unlock()
    }

    /// Asks for a checkpoint that starts after this call and waits until it has ended (the store's thread, when
    /// the WAL holds ``capFrames`` frames; while it waits the store commits nothing, so that checkpoint sees
    /// every frame). Served also while ``heldBack``.
    /// - Returns: Whether it copied every frame of the WAL (the next write transaction then starts the WAL over);
    ///   `false` when it failed, or a reader of another connection kept frames from it, or the thread has stopped.
    func checkpointAndWait() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let target = startedCount + 1
        if !requested {
            requested = true
            condition.signal()
        }
        while endedCount < target && !exited { condition.wait() }
        return endedCount >= target && lastCopiedAll
    }

    /// While `true`, the WAL hook's requests are ignored: the checkpoints lose every race, as under a sustained
    /// load (tests of the bound). ``checkpointAndWait()`` is still served.
    var heldBack: Bool {
        get {
            condition.lock()
            defer { condition.unlock() }
            return heldBackFlag
        }
        set {
            condition.lock()
            heldBackFlag = newValue
            condition.unlock()
        }
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
            startedCount += 1
            let ordinal = startedCount
            condition.unlock()
            var logFrames: Int32 = 0
            var copied: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied)
            condition.lock()
            endedCount = ordinal
            lastCopiedAll = rc == SQLITE_OK && copied == logFrames
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
