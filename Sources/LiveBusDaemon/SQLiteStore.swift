import CSQLite
import Foundation
import LiveBusCore
import LiveBusWire

/// A failure of the durable store, with what to do about it.
public struct StoreOpenError: Error, Sendable, CustomStringConvertible {
    /// What is wrong with the data directory and what to do.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The daemon's durable state in SQLite (WAL mode) under `--data-dir`: events per topic with their sequence
/// counters (the replay log and the retained latest state), session resume records, and the simulator's state.
///
/// Every batch is one transaction (the daemon's group commit: everything appended during one loop turn); once
/// ``commit(_:completion:)`` completes, the data survives a kill -9 of the daemon (WAL, `synchronous=NORMAL`;
/// `fullSync` adds one fsync per batch, for power loss). Completes before it returns, on the loop thread.
/// Source: https://www.sqlite.org/wal.html ("durable across application crashes"), https://www.sqlite.org/pragma.html#pragma_synchronous
public final class SQLiteStore: EventStore {
    /// `PRAGMA application_id` of a LiveBus data file: "LBUS".
    public static let applicationID: Int32 = 0x4C42_5553
    /// The schema this build writes and reads.
    /// Schema 2: a topic's `next_seq` may lag its newest event by up to ``counterSlack`` − 1 events (schema 1: it
    /// was exact after every batch). A schema-1 file opens as is (its counters are exact); a schema-1 livebusd
    /// refuses a schema-2 file ("newer than this livebusd") instead of calling a lagging counter damage.
    public static let schemaVersion: Int32 = 2
    /// Events a topic may hold past its stored counter (`topics.next_seq`): a batch writes the counter only for a
    /// new topic or once the topic's newest sequence is `counterSlack` past the stored value, and a clean close
    /// writes every lagging one. At open the counter is `max(next_seq, max(seq) + 1)`: the replay-log trim always
    /// keeps a topic's latest event, so no sequence is ever taken twice, after a kill -9 too. The upsert in every
    /// batch cost 9.0 k instructions and one more B-tree page, so one more WAL frame (two `pwrite64`s), per commit:
    /// at 10,000 msg/s to N = 1 nearly every commit holds one PUBLISH (callgrind and strace, BENCHMARKS.md "Profiles
    /// of 2026-12-03 (store: …)"). What it still detects: a deleted latest event of a cleanly closed store, or one
    /// more than `counterSlack` − 1 events behind the counter after a crash, and any event `counterSlack` or more
    /// past it (``validateStoredState(directory:)``).
    static let counterSlack: UInt64 = 32
    private var db: OpaquePointer?
    /// `INSERT OR ROLLBACK INTO events … VALUES(?, ?, ?), …` of ``insertRowCounts`` rows each, largest first: a
    /// batch's events go in as few statements as those sizes allow. One statement per row cost 11.7 k instructions
    /// a row with its share of the commit; 64 rows a statement 7.0 k (callgrind, 256-row transactions of the bench's
    /// body): each `sqlite3_step` and `sqlite3_reset` pays the statement's start and end (its VDBE program's
    /// prologue; before `OR ROLLBACK`, its statement journal) once per statement, not per row.
    private var insertEvents: [OpaquePointer?] = []
    /// Rows per statement of ``insertEvents``.
    static let insertRowCounts = [64, 16, 4, 1]
    /// The topic and body bytes of the rows of one statement, bound in place (SQLITE_STATIC: SQLite neither copies
    /// them nor runs `strlen`); grown as needed, kept for the store's life.
    private var rowBytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private var upsertTopic: OpaquePointer?
    private var selectFrom: OpaquePointer?
    private var upsertSession: OpaquePointer?
    private var upsertMeta: OpaquePointer?
    private var upsertSimulator: OpaquePointer?
    private var deleteSession: OpaquePointer?
    /// `BEGIN IMMEDIATE` and `COMMIT`, prepared once: `sqlite3_exec` parsed them again for every batch (36 k
    /// instructions a batch, callgrind publish profile; two batches per connecting phone).
    private var beginBatch: OpaquePointer?
    private var commitBatch: OpaquePointer?
    /// The replay log's trim (``trim(_:)``), prepared at its first use.
    private var trimEvents: OpaquePointer?
    /// The WAL's checkpoints, on their own thread (``WALCheckpointer``): none runs in a COMMIT on the loop thread.
    private var checkpointer: WALCheckpointer?
    /// WAL frames after which the next batch waits for a checkpoint first (``WALCheckpointer/capFrames``; tests
    /// lower it).
    var walCapFrames = WALCheckpointer.capFrames
    /// The WAL's frame count when the last wait's checkpoint could not copy every frame (a reader of another process
    /// held it back), else 0: the next wait comes ``walCapFrames`` frames after it, not at every batch.
    private var walWaitFailedAt: Int32 = 0
    /// Batches that waited for a checkpoint first (tests, measurements).
    private(set) var walWaits = 0
    /// `PRAGMA journal_size_limit` while it is in force, bytes (``WALCheckpointer/sizeLimitBytes``; tests lower it).
    var walSizeLimit = Int32(WALCheckpointer.sizeLimitBytes) {
        didSet { if walSizeLimited { limitWALFile(true) } }
    }
    /// Whether `journal_size_limit` is in force on this connection: not from a wait for the cap until a reset
    /// without one (``boundWAL()``).
    private var walSizeLimited = true
    /// The WAL's frame count after the commit before the last, and whether the last batch waited first.
    private var walFramesBefore: Int32 = 0
    private var walWaitedBefore = false
    /// Per topic, the sequence below which every event is deleted (the replay log's oldest end, for ``trim(_:)``).
    private var trimFloor: [String: UInt64] = [:]
    /// The counters the batch being written stores (kept for its capacity).
    private var counterWrites: [String: UInt64] = [:]
    private var nextSequence: [String: UInt64] = [:]
    /// Per topic, its `next_seq` as stored in the `topics` table (at most ``counterSlack`` − 1 behind
    /// ``nextSequence`` after any commit).
    private var storedCounter: [String: UInt64] = [:]
    private var latestCache: [String: StoredEvent] = [:]
    /// The newest committed events of each topic, decoded (``RecentEvents``): replays and scheduler releases read
    /// them without a query and a JSON decode per event.
    private var recent: RecentEvents
    /// Events kept per topic for replay; older ones are trimmed.
    public let logCapacity: Int
    /// The database file.
    public let path: String

    /// Opens (or creates) `<directory>/livebus.db`.
    /// - Throws: ``StoreOpenError`` when the directory cannot be created, the file is not SQLite, belongs to another
    ///   application, or has a newer schema. A corrupt or foreign file is never reset silently.
    /// - Parameters:
    ///   - directory: The data directory.
    ///   - logCapacity: Events kept per topic for replay.
    ///   - fullSync: `synchronous=FULL` (one fsync per batch) instead of `NORMAL`.
    ///   - recentCapacity: Events kept decoded in memory for replay, over all topics (each topic keeps at most
    ///     `logCapacity` of them; the oldest committed go first). 0 reads every replay from SQLite.
    public init(
        directory: String,
        logCapacity: Int = 1024,
        fullSync: Bool = false,
        recentCapacity: Int = RecentEvents.defaultCapacity
    ) throws(StoreOpenError) {
        self.logCapacity = logCapacity
        self.recent = RecentEvents(capacity: recentCapacity, perTopic: logCapacity)
        path = directory + "/livebus.db"
        // Private to the daemon's user, like the socket (0600): the directory 0700, the database 0600 (SQLite gives
        // its -wal and -shm files the database file's permissions).
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            } catch {
                throw StoreOpenError("cannot create data directory \(directory): \(error.localizedDescription)")
            }
        } else if !isDirectory.boolValue {
            throw StoreOpenError("\(directory) exists and is not a directory; choose another --data-dir")
        }
        // Not another user's directory or file, not through a symbolic link (issue 14).
        if let e = DataDirectory.check(directory) { throw e }
        try Self.checkCreationMarker(directory: directory, database: path)
        if !FileManager.default.fileExists(atPath: path) {
            let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if fd >= 0 { Glibc.close(fd) }
        }
        let existed = FileManager.default.fileExists(atPath: path)
        guard
            sqlite3_open_v2(
                path,
                &db,
                SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                nil
            )
                == SQLITE_OK
        else {
            throw StoreOpenError("cannot open \(path): \(lastError); check the directory's permissions")
        }
        let appID = (try? scalar("PRAGMA application_id")) ?? -1
        if appID == -1 {
            close()
            throw StoreOpenError(
                "\(path) is not a SQLite database (corrupt or foreign file); move it away or choose another --data-dir"
            )
        }
        if existed && appID != 0 && appID != Self.applicationID {
            close()
            throw StoreOpenError(
                "\(path) belongs to another application (application_id \(appID)); choose another --data-dir"
            )
        }
        let tables = (try? scalar("SELECT count(*) FROM sqlite_master WHERE type='table'")) ?? 0
        if existed && appID == 0 && tables > 0 {
            close()
            throw StoreOpenError("\(path) is a SQLite database of another application; choose another --data-dir")
        }
        let version = (try? scalar("PRAGMA user_version")) ?? 0
        if version > Self.schemaVersion {
            close()
            throw StoreOpenError(
                "\(path) has schema \(version), newer than this livebusd (\(Self.schemaVersion)); upgrade livebusd"
            )
        }
        do {
            try exec("PRAGMA journal_mode=WAL")
            try exec("PRAGMA synchronous=\(fullSync ? "FULL" : "NORMAL")")
            // SQLite's temporary files in memory: a statement journal or sorter past its 64 KiB in-memory budget
            // spilled to /var/tmp/etilqs_* a 4 KiB pwrite at a time, on the loop thread (strace, issue 15: 90–121
            // files in 2.5 s of `bench fanout --subs 1 --topics 10 --rate 10000`).
            // Source: https://www.sqlite.org/tempfiles.html §4
            try exec("PRAGMA temp_store=MEMORY")
            // The WAL file is truncated back to this size in the first commit after a reset, instead of keeping the
            // size of its longest run (``WALCheckpointer/sizeLimitBytes``).
            // Source: https://www.sqlite.org/pragma.html#pragma_journal_size_limit
            try exec("PRAGMA journal_size_limit=\(walSizeLimit)")
            try exec("PRAGMA application_id=\(Self.applicationID)")
            try exec("PRAGMA user_version=\(Self.schemaVersion)")
            try exec(
                """
                CREATE TABLE IF NOT EXISTS events(topic TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL,
                    PRIMARY KEY(topic, seq)) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS topics(topic TEXT PRIMARY KEY, next_seq INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS sessions(token TEXT PRIMARY KEY, record BLOB NOT NULL, updated_ms INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS simulator(id INTEGER PRIMARY KEY CHECK (id = 1), state BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """
            )
            // OR ROLLBACK: a row that fails rolls the whole transaction back, as ``write(_:)`` does on any failure,
            // so SQLite keeps no statement journal for these statements (the original of every page they change,
            // copied to undo the statement alone; under `bench fanout --topics 10` a 64-row INSERT changed more than
            // 64 KiB of them, and the journal spilled to a file).
            // Source: https://www.sqlite.org/tempfiles.html §2.5, https://www.sqlite.org/lang_conflict.html
            insertEvents = try Self.insertRowCounts.map { n throws(StoreError) in
                try prepare(
                    "INSERT OR ROLLBACK INTO events(topic, seq, body) VALUES"
                        + Array(repeating: "(?, ?, ?)", count: n).joined(separator: ", ")
                )
            }
            upsertTopic = try prepare(
                "INSERT INTO topics(topic, next_seq) VALUES(?, ?) ON CONFLICT(topic) DO UPDATE SET next_seq = excluded.next_seq"
            )
            selectFrom = try prepare(
                "SELECT seq, body FROM events WHERE topic = ? AND seq >= ? ORDER BY seq LIMIT ?"
            )
            // An upsert updates a known token's row in place: the token's index entry stays, so a SUBSCRIBE's
            // record dirties one page, where INSERT OR REPLACE deleted and reinserted the row and its index entry.
            upsertSession = try prepare(
                "INSERT INTO sessions(token, record, updated_ms) VALUES(?, ?, ?) ON CONFLICT(token) DO UPDATE SET record = excluded.record, updated_ms = excluded.updated_ms"
            )
            upsertMeta = try prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)")
            upsertSimulator = try prepare("INSERT OR REPLACE INTO simulator(id, state) VALUES(1, ?)")
            deleteSession = try prepare("DELETE FROM sessions WHERE token = ?")
            beginBatch = try prepare("BEGIN IMMEDIATE")
            commitBatch = try prepare("COMMIT")
        } catch {
            close()
            // A full disk (or quota) or a failing write is not damage: moving the database away would lose what it
            // holds, so the advice is to make room and start again.
            let condition = StoreCondition(error)
            if condition != .storeError {
                throw StoreOpenError(
                    "cannot open \(path): \(condition.words) (\(error.message)); nothing in it was changed: free space "
                        + "on the filesystem of \(directory) (`df -h \(directory)`) and start livebusd again"
                )
            }
            throw StoreOpenError(
                "cannot use \(path): \(error.message); it may be corrupt: move it away to start afresh"
            )
        }
        do {
            try validateStoredState(directory: directory)
            try loadTopics()
        } catch {
            close()
            throw error
        }
        // Under `--sync full` SQLite's automatic checkpoint stays in the COMMIT: a checkpoint thread's fsyncs beside
        // each batch's own fsync lowered one publisher's rate from 43–48 k to 31–42 k ACKs/s (paired runs,
        // BENCHMARKS.md "Profiles of 2026-12-02 (publish path)").
        do {
            if !fullSync { try startCheckpointer() }
        } catch {
            close()
            throw StoreOpenError("cannot use \(path): \(error.message)")
        }
        Self.writeCreationMarker(directory: directory)
    }

    /// Turns SQLite's automatic checkpoint off on this connection and hands checkpoints to a ``WALCheckpointer``:
    /// the WAL hook (after every commit, with the WAL's frame count) asks for one past
    /// ``WALCheckpointer/thresholdFrames``; `sqlite3_wal_hook` replaces the automatic checkpoint's own hook.
    private func startCheckpointer() throws(StoreError) {
        let c = try WALCheckpointer(path: path)
        checkpointer = c
        sqlite3_wal_hook(
            db,
            { context, _, _, frames in
                guard let context else { return SQLITE_OK }
                let c = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                c.walFrames = frames
                if frames >= WALCheckpointer.thresholdFrames { c.request() }
                return SQLITE_OK
            },
            Unmanaged.passUnretained(c).toOpaque()
        )
    }

    /// Checkpoints the background thread completed, and the WAL frames they copied into the database file (tests).
    var checkpoints: (checkpoints: Int, frames: Int) { checkpointer?.completed ?? (0, 0) }

    /// Holds the checkpoint thread back from the WAL hook's requests, as a sustained load does (tests of the bound).
    func holdBackCheckpoints(_ on: Bool) { checkpointer?.heldBack = on }

    /// The size of the WAL file in bytes, 0 when there is none (tests).
    var walFileSize: Int {
        var st = stat()
        return stat(path + "-wal", &st) == 0 ? Int(st.st_size) : 0
    }

    /// `PRAGMA journal_size_limit` of this connection, bytes (tests).
    var journalSizeLimit: Int32? { try? scalar("PRAGMA journal_size_limit") }

    /// Frames in the WAL after the last commit (the WAL hook), 0 without a checkpoint thread (tests).
    var walFrames: Int32 { checkpointer?.walFrames ?? 0 }

    /// Puts `PRAGMA journal_size_limit` in force (``walSizeLimit``) or lifts it (-1: no limit).
    private func limitWALFile(_ on: Bool) {
        _ = try? scalar("PRAGMA journal_size_limit=\(on ? walSizeLimit : -1)")
        walSizeLimited = on
    }

    /// Once the last commit left ``walCapFrames`` frames or more in the WAL, waits for a checkpoint of all of them
    /// (``WALCheckpointer/checkpointAndWait()``), so that this batch's transaction starts the WAL over.
    ///
    /// That reset keeps the file's size (at most the cap and one batch): `journal_size_limit` is lifted before the
    /// wait, since SQLite truncates in the first commit after a reset, on this thread, and truncating a 60 MB WAL
    /// took 36–44 ms (strace, loaded machine), once per cap while the load lasts. It is put back once a commit
    /// starts the WAL over without a wait (the checkpoints keep up again), so the reset after that one truncates.
    private func boundWAL() {
        guard let c = checkpointer else { return }
        let frames = c.walFrames
        if !walSizeLimited && frames < walFramesBefore && !walWaitedBefore { limitWALFile(true) }
        walFramesBefore = frames
        walWaitedBefore = false
        if frames < walWaitFailedAt { walWaitFailedAt = 0 }
        guard frames >= walCapFrames + walWaitFailedAt else { return }
        if walSizeLimited { limitWALFile(false) }
        walWaits += 1
        walWaitedBefore = true
        walWaitFailedAt = c.checkpointAndWait() ? 0 : frames
    }

    /// Waits up to `seconds` for a checkpoint after the first `count` (tests).
    /// - Returns: Whether one completed.
    func waitForCheckpoint(after count: Int, seconds: Double) -> Bool {
        checkpointer?.waitForCheckpoints(moreThan: count, seconds: seconds) ?? false
    }

    deinit { close() }

    private func close() {
        writeLaggingCounters()
        // The checkpoint thread's connection goes first: the last connection to close checkpoints and removes
        // the WAL (on this thread, at shutdown).
        if let c = checkpointer {
            sqlite3_wal_hook(db, nil, nil)
            c.stop()
            checkpointer = nil
        }
        for s in insertEvents + [
            upsertTopic, selectFrom, upsertSession, upsertMeta, upsertSimulator, deleteSession,
            beginBatch, commitBatch, trimEvents,
        ] where s != nil {
            sqlite3_finalize(s)
        }
        insertEvents = []
        rowBytes.deallocate()
        rowBytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        upsertTopic = nil
        selectFrom = nil
        upsertSession = nil
        upsertMeta = nil
        upsertSimulator = nil
        deleteSession = nil
        beginBatch = nil
        commitBatch = nil
        trimEvents = nil
        if db != nil { sqlite3_close_v2(db) }
        db = nil
    }

    private var lastError: String { db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory" }

    private func exec(_ sql: String) throws(StoreError) {
        var err: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &err) != SQLITE_OK {
            let m = err.map { String(cString: $0) } ?? lastError
            sqlite3_free(err)
            throw StoreError(m, resultCode: db.map { sqlite3_extended_errcode($0) })
        }
    }

    /// SQLite's last error message on this connection (for ``validateStoredState(directory:)``).
    var lastErrorMessage: String { lastError }

    /// A prepared statement the caller finalizes (for ``validateStoredState(directory:)``).
    func prepareStatement(_ sql: String) throws(StoreError) -> OpaquePointer? { try prepare(sql) }

    private func prepare(_ sql: String) throws(StoreError) -> OpaquePointer? {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { throw StoreError(lastError) }
        return stmt
    }

    private func scalar(_ sql: String) throws(StoreError) -> Int32 {
        let stmt = try prepare(sql)
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW else { throw StoreError(lastError) }
        return sqlite3_column_int(stmt, 0)
    }

    /// Writes every topic counter that lags its newest event (``counterSlack``), in one transaction: a clean close
    /// (the daemon's shutdown, and the store's deinit) leaves exact counters, as schema 1 did. A failure (a full
    /// disk) leaves them lagging, as a kill -9 does.
    public func flushDeferredState() { writeLaggingCounters() }

    /// Writes the lagging counters now (see ``flushDeferredState()``).
    func writeLaggingCounters() {
        guard db != nil, upsertTopic != nil else { return }
        let lagging = nextSequence.filter { storedCounter[$0.key] != $0.value }
        guard !lagging.isEmpty else { return }
        if sqlite3_get_autocommit(db) == 0 { try? exec("ROLLBACK") }
        do {
            try exec("BEGIN IMMEDIATE")
            try storeCounters(lagging)
            try exec("COMMIT")
            for (topic, next) in lagging { storedCounter[topic] = next }
        } catch {
            try? exec("ROLLBACK")
        }
    }

    /// Loads the topics' counters and latest events; ``validateStoredState(directory:)`` has checked them.
    private func loadTopics() throws(StoreOpenError) {
        guard let stmt = try? prepare("SELECT topic, next_seq FROM topics") else {
            throw StoreOpenError("cannot read the topics of \(path): \(lastError); \(Self.whatToDo)")
        }
        defer { sqlite3_finalize(stmt) }
        while sqlite3_step(stmt) == SQLITE_ROW {
            guard let topic = Self.columnText(stmt, 0) else { continue }
            // Checked to be 1…largestSequence by validateStoredState: the conversion cannot trap.
            let stored = UInt64(clamping: sqlite3_column_int64(stmt, 1))
            storedCounter[topic] = stored
            nextSequence[topic] = stored
        }
        // A counter that lags (``counterSlack``): the newest stored event + 1 (one indexed lookup per topic).
        guard let newest = try? prepare("SELECT max(seq) FROM events WHERE topic = ?") else {
            throw StoreOpenError("cannot read the events of \(path): \(lastError); \(Self.whatToDo)")
        }
        defer { sqlite3_finalize(newest) }
        for (topic, stored) in nextSequence {
            bindText(newest, 1, topic)
            if sqlite3_step(newest) == SQLITE_ROW, sqlite3_column_type(newest, 0) == SQLITE_INTEGER {
                nextSequence[topic] = max(stored, UInt64(clamping: sqlite3_column_int64(newest, 0)) + 1)
            }
            sqlite3_reset(newest)
            sqlite3_clear_bindings(newest)
        }
        for topic in nextSequence.keys {
            if let next = nextSequence[topic], next > 1, let e = events(topic: topic, from: next - 1)?.last {
                latestCache[topic] = e
            }
        }
        // Each topic's oldest stored event: where its next trim starts (one indexed lookup per topic).
        guard let oldest = try? prepare("SELECT min(seq) FROM events WHERE topic = ?") else {
            throw StoreOpenError("cannot read the events of \(path): \(lastError); \(Self.whatToDo)")
        }
        defer { sqlite3_finalize(oldest) }
        for topic in nextSequence.keys {
            bindText(oldest, 1, topic)
            if sqlite3_step(oldest) == SQLITE_ROW, sqlite3_column_type(oldest, 0) == SQLITE_INTEGER {
                trimFloor[topic] = UInt64(clamping: sqlite3_column_int64(oldest, 0))
            }
            sqlite3_reset(oldest)
            sqlite3_clear_bindings(oldest)
        }
    }

    /// Binds `s` as text with its explicit UTF-8 byte count (copied by SQLite, `SQLITE_TRANSIENT`): a length of
    /// -1 made SQLite read up to the first NUL, so a topic with an embedded NUL was stored cut short in `topics`
    /// beside its whole bytes in `events`, and the next start refused the directory as damaged (fresh-user review
    /// 2026-12-03). Every text bind of the store goes through here or binds an explicit length itself.
    private func bindText(_ stmt: OpaquePointer?, _ i: Int32, _ s: String) {
        let n = Int32(s.utf8.count)
        _ = s.withCString { sqlite3_bind_text(stmt, i, $0, n, CSQLite_transient()) }
    }

    /// A text column read with its byte count (``bindText(_:_:_:)``'s inverse: an embedded NUL is kept); `nil` for
    /// SQL NULL.
    static func columnText(_ stmt: OpaquePointer?, _ i: Int32) -> String? {
        guard let p = sqlite3_column_text(stmt, i) else { return nil }
        let n = Int(sqlite3_column_bytes(stmt, i))
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }

    private func bindBlob(_ stmt: OpaquePointer?, _ i: Int32, _ b: some ContiguousBytes) {
        b.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob(stmt, i, raw.baseAddress, Int32(raw.count), CSQLite_transient())
        }
    }

    private func step(_ stmt: OpaquePointer?) throws(StoreError) {
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        guard sqlite3_step(stmt) == SQLITE_DONE else { throw writeError }
    }

    /// The last SQLite failure with its result code (SQLITE_FULL, SQLITE_IOERR_WRITE… tell a full disk).
    private var writeError: StoreError { StoreError(lastError, resultCode: db.map { sqlite3_extended_errcode($0) }) }

    /// Inserts `events` into the replay log, as few statements as ``insertRowCounts`` allow.
    /// - Throws: ``StoreError`` when SQLite refuses a row (the caller rolls the transaction back).
    private func insertRows(_ events: [StoredEvent]) throws(StoreError) {
        var start = 0
        for (k, n) in Self.insertRowCounts.enumerated() {
            while events.count - start >= n {
                try insertRows(events[start..<(start + n)], with: insertEvents[k])
                start += n
            }
        }
    }

    /// Binds and steps one multi-row INSERT: parameters 3i+1…3i+3 are row i's topic, sequence and body. The topic
    /// and body are the template's shared bytes, copied once into ``rowBytes`` and bound in place.
    private func insertRows(_ rows: ArraySlice<StoredEvent>, with stmt: OpaquePointer?) throws(StoreError) {
        let size = rows.reduce(0) { $0 + $1.template.shared.count }
        if rowBytes.count < size {
            rowBytes.deallocate()
            rowBytes = .allocate(byteCount: max(size, 2 * rowBytes.count, 64 * 1024), alignment: 8)
        }
        var at = 0
        for (i, e) in rows.enumerated() {
            let p = Int32(3 * i)
            let t = e.template.topicLength
            let n = e.template.shared.count
            let base = rowBytes.baseAddress! + at
            e.template.shared.withUnsafeBytes { raw in
                if let src = raw.baseAddress { base.copyMemory(from: src, byteCount: n) }
            }
            sqlite3_bind_text(stmt, p + 1, base.assumingMemoryBound(to: CChar.self), Int32(t), nil)
            sqlite3_bind_int64(stmt, p + 2, Int64(e.sequence))
            sqlite3_bind_blob(stmt, p + 3, base + t, Int32(n - t), nil)
            at += n
        }
        try step(stmt)
    }

    /// Writes topics' sequence counters (one row per topic, not one per event: a 256-event batch of one topic was
    /// 256 upserts of the same row).
    private func storeCounters(_ pending: [String: UInt64]) throws(StoreError) {
        for (topic, next) in pending {
            bindText(upsertTopic, 1, topic)
            sqlite3_bind_int64(upsertTopic, 2, Int64(next))
            try step(upsertTopic)
        }
    }

    public var isDurable: Bool { true }

    public func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        do {
            completion(.success(try write(batch)))
        } catch let e as StoreError {
            completion(.failure(e))
        } catch {
            completion(.failure(StoreError("cannot store the batch: \(error)")))
        }
    }

    /// Writes one batch in one transaction: its events, the simulator state that produced them (so a restart never
    /// re-emits what was already stored), resume records and metadata.
    /// - Throws: ``StoreError`` when SQLite fails (nothing is stored then), ``WireError`` when an event cannot be
    ///   encoded.
    private func write(_ batch: StoreBatch) throws -> [StoredEvent] {
        if batch.isEmpty { return [] }
        // A transaction left open by a failed COMMIT (SQLite may keep it after SQLITE_FULL or SQLITE_IOERR) would
        // make every later BEGIN fail: end it first. Source: https://www.sqlite.org/lang_transaction.html
        if sqlite3_get_autocommit(db) == 0 { try? exec("ROLLBACK") }
        boundWAL()
        try step(beginBatch)
        var out: [StoredEvent] = []
        out.reserveCapacity(batch.events.count)
        var counters: [String: UInt64] = [:]
        var floors: [(String, UInt64)] = []
        do {
            // Several events of one topic may share a transaction: each is numbered from what it already used.
            var pending = PendingSequences()
            for (i, (topic, body)) in batch.events.enumerated() {
                let seq = pending.take(topic, committed: nextSequence)
                out.append(try StoredEvent(topic: topic, sequence: seq, body: body, encoded: batch.encodedBody(at: i)))
            }
            try insertRows(out)
            counters = pending.finish()
            // Only a new topic's counter, and those `counterSlack` or more behind (``counterSlack``).
            counterWrites.removeAll(keepingCapacity: true)
            for (topic, next) in counters {
                if let stored = storedCounter[topic], next < stored + Self.counterSlack { continue }
                counterWrites[topic] = next
            }
            try storeCounters(counterWrites)
            if let state = batch.simulatorState {
                bindBlob(upsertSimulator, 1, Array(state))
                try step(upsertSimulator)
            }
            for r in batch.resumeRecords {
                bindText(upsertSession, 1, r.token)
                bindBlob(upsertSession, 2, Self.encodeResumeRecord(r))
                sqlite3_bind_int64(upsertSession, 3, batch.nowMilliseconds)
                try step(upsertSession)
            }
            for token in batch.removedResumeTokens {
                bindText(deleteSession, 1, token)
                try step(deleteSession)
            }
            for (key, value) in batch.meta {
                bindText(upsertMeta, 1, key)
                bindText(upsertMeta, 2, value)
                try step(upsertMeta)
            }
            // The replay log's trim is part of the batch: one transaction, so one fsync under `--sync full` (a
            // trim of its own after the commit was a second transaction, and fsync).
            try trim(counters, floors: &floors)
            try step(commitBatch)
        } catch {
            // After an INSERT OR ROLLBACK failed, SQLite has rolled back already and this ROLLBACK fails: ignored.
            try? exec("ROLLBACK")
            throw error
        }
        // The counters once per topic; the latest at the end of each run of one topic (a later run overwrites it).
        for (topic, next) in counters { nextSequence[topic] = next }
        for (topic, next) in counterWrites { storedCounter[topic] = next }
        for (i, e) in out.enumerated() {
            if i + 1 == out.count || out[i + 1].topic != e.topic { latestCache[e.topic] = e }
            recent.append(e)
        }
        for (topic, floor) in floors { trimFloor[topic] = floor }
        return out
    }

    /// A resume record as the JSON object ``resumeRecords()`` reads back with `JSONDecoder` (ResumeRecord's
    /// `Codable` keys: `token`, `name`, `patterns`, `lastSent`), written without Foundation: every session's HELLO
    /// and SUBSCRIBE stage one, and a `JSONEncoder` per record was a fifth of a connect's store work
    /// (callgrind, 1,000 sessions). Strings are escaped as RFC 8259 §7 requires (`"`, `\`, U+0000–U+001F).
    static func encodeResumeRecord(_ r: ResumeRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + r.token.utf8.count + r.name.utf8.count + r.patterns.count * 24 + r.lastSent.count * 32)
        // Literals appended through their static UTF-8 (no array per literal): a record cost 6.5 k instructions
        // with `Array("…".utf8)` for every literal and a sort of an empty dictionary (callgrind, sessions workload).
        func literal(_ s: StaticString) {
            out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        }
        func string(_ s: String) {
            out.append(UInt8(ascii: "\""))
            var s = s
            s.withUTF8 { u in
                // Plain runs are copied whole; only `"`, `\` and U+0000–U+001F are escaped.
                var run = 0
                for (i, c) in u.enumerated() where c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: u[run..<i]))
                    run = i + 1
                    if c < 0x20 {
                        let hex: StaticString = "0123456789abcdef"
                        literal("\\u00")
                        out.append(hex.utf8Start[Int(c >> 4)])
                        out.append(hex.utf8Start[Int(c & 0xF)])
                    } else {
                        out.append(UInt8(ascii: "\\"))
                        out.append(c)
                    }
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: u[run...]))
            }
            out.append(UInt8(ascii: "\""))
        }
        literal("{\"token\":")
        string(r.token)
        literal(",\"name\":")
        string(r.name)
        literal(",\"patterns\":[")
        for (i, p) in r.patterns.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            string(p)
        }
        literal("],\"lastSent\":{")
        if !r.lastSent.isEmpty {
            for (i, (topic, seq)) in r.lastSent.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(topic)
                out.append(UInt8(ascii: ":"))
                out.append(contentsOf: String(seq).utf8)
            }
        }
        literal("}}")
        return out
    }

    /// Events past a topic's replay-log capacity before ``trim(_:committed:)`` deletes them: the log holds at most
    /// `logCapacity + trimChunk − 1` events of a topic between two trims.
    static let trimChunk: UInt64 = 64

    /// Deletes the events of the batch's topics older than the replay log's capacity (the latest is always kept),
    /// inside the open batch transaction, a bounded range per topic: a topic is trimmed once `trimChunk` events
    /// are past its capacity, by at most what the batch appended to it plus `2 × trimChunk`, from its oldest end
    /// (``trimFloor``). Each trim is as small as the batch; a DELETE of ~1,024 rows every 1,024 appends, over every
    /// topic ever stored, was one long loop turn (callgrind: 3.7 k Ir per PUBLISH, 3.8 M in one turn). A DELETE
    /// that fails is left for a later trim, unless SQLite rolled the transaction back with it (SQLITE_FULL,
    /// SQLITE_IOERR…): then the batch is not stored and its error is thrown.
    /// - Parameters:
    ///   - pending: The batch's counters (topic → next sequence after it).
    ///   - floors: Set to the new oldest ends of the topics trimmed (applied once the batch commits).
    /// - Throws: ``StoreError`` when a DELETE failed and SQLite rolled the batch's transaction back.
    private func trim(_ pending: [String: UInt64], floors: inout [(String, UInt64)]) throws(StoreError) {
        let capacity = UInt64(logCapacity)
        for (topic, next) in pending where next > capacity + Self.trimChunk {
            let keepFrom = next - capacity
            let floor = trimFloor[topic] ?? 1
            guard keepFrom >= floor + Self.trimChunk else { continue }
            let appended = next - (nextSequence[topic] ?? 1)
            let end = min(keepFrom, floor + appended + 2 * Self.trimChunk)
            if trimEvents == nil {
                trimEvents = try? prepare("DELETE FROM events WHERE topic = ? AND seq >= ? AND seq < ?")
            }
            guard let stmt = trimEvents else { return }
            bindText(stmt, 1, topic)
            sqlite3_bind_int64(stmt, 2, Int64(floor))
            sqlite3_bind_int64(stmt, 3, Int64(end))
            let failure = sqlite3_step(stmt) == SQLITE_DONE ? nil : writeError
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
            if let failure {
                if sqlite3_get_autocommit(db) != 0 { throw failure }
            } else {
                floors.append((topic, end))
            }
        }
    }

    public func latest(topic: String) -> StoredEvent? { latestCache[topic] }

    public func events(topic: String, from: UInt64, limit: Int) -> [StoredEvent]? {
        let next = nextSequence[topic, default: 1]
        if from >= next || limit <= 0 { return [] }
        // What the recent events cover is the same rows SQLite holds (they are its newest, at most logCapacity
        // of them, and trimming keeps at least that many): answered from memory.
        if let hit = recent.events(topic: topic, from: max(from, 1), limit: limit) { return hit }
        bindText(selectFrom, 1, topic)
        sqlite3_bind_int64(selectFrom, 2, Int64(from))
        sqlite3_bind_int64(selectFrom, 3, Int64(min(limit, Int(Int64.max))))
        defer {
            sqlite3_reset(selectFrom)
            sqlite3_clear_bindings(selectFrom)
        }
        var out: [StoredEvent] = []
        while sqlite3_step(selectFrom) == SQLITE_ROW {
            let seq = UInt64(sqlite3_column_int64(selectFrom, 0))
            let n = Int(sqlite3_column_bytes(selectFrom, 1))
            guard let p = sqlite3_column_blob(selectFrom, 1) else { continue }
            let bytes = [UInt8](UnsafeRawBufferPointer(start: p, count: n))
            guard let body = try? EventJSON.decode(bytes),
                let e = try? StoredEvent(topic: topic, sequence: seq, body: body, encoded: bytes)
            else { continue }
            out.append(e)
        }
        guard let first = out.first, first.sequence == max(from, 1) else { return from <= 1 && out.isEmpty ? [] : nil }
        return out
    }

    public var topics: [String] { nextSequence.keys.sorted() }

    /// The saved simulator state, if any.
    public func simulatorState() -> Data? {
        guard let stmt = try? prepare("SELECT state FROM simulator WHERE id = 1") else { return nil }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW, let p = sqlite3_column_blob(stmt, 0) else { return nil }
        return Data(bytes: p, count: Int(sqlite3_column_bytes(stmt, 0)))
    }

    /// Where this connection keeps SQLite's temporary files (`PRAGMA temp_store`: 0 default, 1 file, 2 memory), or
    /// `nil` when SQLite cannot say (tests).
    var tempStore: Int32? { try? scalar("PRAGMA temp_store") }

    /// The database's size in pages (`PRAGMA page_count`), or `nil` when SQLite cannot say.
    func pageCount() -> Int32? { try? scalar("PRAGMA page_count") }

    /// Caps the database at `pages` pages on this connection (`PRAGMA max_page_count`): a write that needs more fails
    /// with SQLITE_FULL, exactly as on a full disk (tests). Source: https://www.sqlite.org/pragma.html#pragma_max_page_count
    /// - Parameter pages: The cap (SQLite keeps it at least the current size).
    func limitPages(_ pages: Int32) { _ = try? scalar("PRAGMA max_page_count=\(pages)") }

    /// Removes the database files of `directory` and its creation marker (`--fresh`).
    public static func remove(directory: String) {
        for suffix in ["", "-wal", "-shm"] { unlink(directory + "/livebus.db" + suffix) }
        unlink(directory + "/" + creationMarkerName)
    }

    /// A value of the meta table.
    public func meta(_ key: String) -> String? {
        guard let stmt = try? prepare("SELECT value FROM meta WHERE key = ?") else { return nil }
        defer { sqlite3_finalize(stmt) }
        bindText(stmt, 1, key)
        guard sqlite3_step(stmt) == SQLITE_ROW else { return nil }
        return Self.columnText(stmt, 0)
    }

    /// Every stored resume record.
    public func resumeRecords() -> [ResumeRecord] {
        guard let stmt = try? prepare("SELECT record FROM sessions ORDER BY updated_ms DESC LIMIT 10000") else {
            return []
        }
        defer { sqlite3_finalize(stmt) }
        var out: [ResumeRecord] = []
        while sqlite3_step(stmt) == SQLITE_ROW {
            guard let p = sqlite3_column_blob(stmt, 0) else { continue }
            if let r = try? JSONDecoder().decode(
                ResumeRecord.self,
                from: Data(bytes: p, count: Int(sqlite3_column_bytes(stmt, 0)))
            ) {
                out.append(r)
            }
        }
        return out
    }

    /// The stored resume record of `token` (one indexed query: asked when a HELLO resumes a session this daemon
    /// has not held since its start, e.g. after a kill -9).
    public func resumeRecord(token: String) -> ResumeRecord? {
        guard let stmt = try? prepare("SELECT record FROM sessions WHERE token = ?") else { return nil }
        defer { sqlite3_finalize(stmt) }
        bindText(stmt, 1, token)
        guard sqlite3_step(stmt) == SQLITE_ROW, let p = sqlite3_column_blob(stmt, 0) else { return nil }
        let record = Data(bytes: p, count: Int(sqlite3_column_bytes(stmt, 0)))
        return try? JSONDecoder().decode(ResumeRecord.self, from: record)
    }
}

/// The sequences one transaction takes, per topic: the current run of one topic is kept apart, so a batch that stays
/// on one topic (a publisher's turn) numbers its events without hashing the topic for each.
struct PendingSequences {
    private var byTopic: [String: UInt64] = [:]
    private var runTopic: String?
    private var runNext: UInt64 = 0

    /// The next sequence of `topic`: after what this transaction took, else after what is committed.
    mutating func take(_ topic: String, committed: [String: UInt64]) -> UInt64 {
        if topic != runTopic {
            if let t = runTopic { byTopic[t] = runNext }
            runNext = byTopic[topic] ?? committed[topic, default: 1]
            runTopic = topic
        }
        defer { runNext += 1 }
        return runNext
    }

    /// Topic → its next sequence after this transaction.
    mutating func finish() -> [String: UInt64] {
        if let t = runTopic { byTopic[t] = runNext }
        runTopic = nil
        return byTopic
    }
}

/// The newest committed events of every topic, decoded, in front of SQLite: at most `perTopic` per topic (the
/// replay log's capacity) and `capacity` in all; past that the oldest committed event of any topic goes first.
/// A resume of 1,000 missed updates read each back with a query and a JSON decode (26 M of its 33 M instructions
/// in the callgrind profile of the resume workload).
public struct RecentEvents {
    /// The default bound over all topics: 16,384 events (about 20 MB of 265-byte bodies).
    public static let defaultCapacity = 16_384
    /// One topic's events, contiguous sequences, oldest at `head`.
    private struct Ring {
        var events: [StoredEvent] = []
        var head = 0
        var count: Int { events.count - head }
        var first: StoredEvent? { head < events.count ? events[head] : nil }
        mutating func dropFirst() {
            head += 1
            // Compacted when half is dead: O(1) amortized per event.
            if head * 2 >= events.count && head >= 64 {
                events.removeFirst(head)
                head = 0
            } else if head == events.count {
                events.removeAll(keepingCapacity: false)
                head = 0
            }
        }
    }
    private var rings: [String: Ring] = [:]
    /// Topics in commit order, one entry per cached event: the front names the oldest cached event's topic.
    private var order: [String] = []
    private var orderHead = 0
    private var total = 0
    /// Events kept in all.
    public let capacity: Int
    /// Events kept per topic.
    public let perTopic: Int

    /// Creates an empty cache.
    /// - Parameters:
    ///   - capacity: Events kept in all (0: none).
    ///   - perTopic: Events kept per topic.
    public init(capacity: Int, perTopic: Int) {
        self.capacity = max(0, capacity)
        self.perTopic = max(1, perTopic)
    }

    /// Events held, over all topics.
    public var count: Int { total }

    /// Adds a committed event (sequences of one topic arrive in order, each the one after the last).
    /// - Parameter e: The event.
    public mutating func append(_ e: StoredEvent) {
        guard capacity > 0 else { return }
        // The ring is changed in place in the dictionary: one lookup of the topic.
        total += Self.add(e, to: &rings[e.topic, default: Ring()], perTopic: perTopic)
        order.append(e.topic)
        while total > capacity { evictOldest() }
        if orderHead >= 4096 && orderHead * 2 >= order.count {
            order.removeFirst(orderHead)
            orderHead = 0
        } else if order.count - orderHead > 2 * capacity + 4096 {
            compactOrder()
        }
    }

    /// Keeps of ``order`` only the entries of events still held: each topic's last `rings[t].count` entries (a ring
    /// holds its topic's newest events, and one topic's entries are in its commit order). Without it, topics that
    /// never reach the overall bound (the per-topic bound drops their oldest events) grew ``order`` by one entry per
    /// event for ever. O(entries), once per more than `capacity` appends; a run of one topic costs no hash.
    private mutating func compactOrder() {
        var left: [String: Int] = [:]
        var kept: [String] = []
        kept.reserveCapacity(total)
        var runTopic: String?
        var runLeft = 0
        for t in order[orderHead...].reversed() {
            if t != runTopic {
                if let r = runTopic { left[r] = runLeft }
                runLeft = left[t] ?? rings[t]?.count ?? 0
                runTopic = t
            }
            if runLeft > 0 {
                kept.append(t)
                runLeft -= 1
            }
        }
        order = kept.reversed()
        orderHead = 0
    }

    /// Entries of the commit order kept (a test of its bound).
    public var orderEntries: Int { order.count - orderHead }

    /// Appends `e` to its topic's ring; returns by how much the number held changed.
    private static func add(_ e: StoredEvent, to r: inout Ring, perTopic: Int) -> Int {
        var change = 0
        if let last = r.events.last, r.count > 0, last.sequence + 1 != e.sequence {
            // Not the next one (cannot happen with one writer): start the topic afresh, never leave a gap.
            change -= r.count
            r = Ring()
        }
        r.events.append(e)
        change += 1
        if r.count > perTopic {
            r.dropFirst()
            change -= 1
        }
        return change
    }

    /// Drops the oldest cached event of the topic at the front of the commit order (if it still holds it).
    private mutating func evictOldest() {
        while orderHead < order.count {
            let t = order[orderHead]
            orderHead += 1
            guard var r = rings.removeValue(forKey: t) else { continue }
            // `order` has one entry per appended event; entries of events already dropped by the per-topic bound
            // name a ring that is shorter than the entries left for it: those are skipped by count.
            if r.count > 0 {
                r.dropFirst()
                total -= 1
            }
            if r.count > 0 { rings[t] = r }
            return
        }
    }

    /// The events of `topic` from sequence `from` on, at most `limit`, when every one of them is held.
    /// - Parameters:
    ///   - topic: The topic.
    ///   - from: The first sequence (at least 1).
    ///   - limit: The most to return.
    /// - Returns: The events (the same as the store's query), or `nil` when `from` is older than what is held.
    public func events(topic: String, from: UInt64, limit: Int) -> [StoredEvent]? {
        guard let r = rings[topic], let first = r.first, first.sequence <= from else { return nil }
        let start = r.head + Int(from - first.sequence)
        guard start < r.events.count else { return nil }
        let end = start + min(limit, r.events.count - start)
        return Array(r.events[start..<end])
    }
}
