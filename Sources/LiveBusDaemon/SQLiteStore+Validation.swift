import CSQLite
import Foundation
import LiveBusWire

/// Checks of a data directory's store before the daemon serves anything from it: a corrupt page, a hole in a topic's
/// sequence, an impossible counter, an instant outside PROTOCOL.md §3's range, or a database that the directory says
/// existed but is gone is refused with the path, what is wrong and what to do; it is never served with events
/// silently missing, and never crashes the daemon.
extension SQLiteStore {
    /// The file, next to `livebus.db`, that says a database was created in this directory (and when).
    static let creationMarkerName = "livebus.created"

    /// The largest sequence counter accepted from a store: 2^53, past which a sequence could not be a JSON number
    /// exactly (RFC 8259 §6); a counter above it is damage, not history.
    static let largestSequence: Int64 = 1 << 53

    /// What to do about a store that fails a check.
    static let whatToDo =
        "restore the data directory from a backup, or restart livebusd with --fresh to discard its state"

    /// Refuses a directory whose creation marker says a database existed when `livebus.db` is missing or empty
    /// (deleted or truncated under the daemon), instead of starting afresh silently.
    /// - Throws: ``StoreOpenError`` naming the directory, the marker and what to do.
    static func checkCreationMarker(directory: String, database path: String) throws(StoreOpenError) {
        let marker = directory + "/" + creationMarkerName
        guard FileManager.default.fileExists(atPath: marker) else { return }
        let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
        let problem: String
        switch size {
        case nil: problem = "is missing"
        case 0?: problem = "is empty"
        default: return
        }
        let since =
            (try? String(contentsOfFile: marker, encoding: .utf8))?
            .split(separator: "\n").first.map { " (\($0))" } ?? ""
        throw StoreOpenError(
            "the data directory \(directory) held a database\(since), but \(path) \(problem); \(whatToDo)"
        )
    }

    /// Writes the creation marker once the database is set up (also for a directory made before markers existed).
    static func writeCreationMarker(directory: String) {
        let marker = directory + "/" + creationMarkerName
        guard !FileManager.default.fileExists(atPath: marker) else { return }
        let when = ISO8601DateFormatter().string(from: Date())
        let fd = open(marker, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let text = "created \(when) by livebusd; livebus.db in this directory holds its state\n"
        _ = text.withCString { write(fd, $0, strlen($0)) }
        fsync(fd)
        Glibc.close(fd)
    }

    /// Checks the stored state before it is loaded.
    ///
    /// - SQLite's `PRAGMA quick_check` (corrupt pages, broken b-trees);
    /// - each topic's `next_seq` is 1…2^53;
    /// - each topic's events are one run without holes that ends at `next_seq − 1` or later (the replay log trims
    ///   from the oldest end only, so any other gap is lost data), and no event lies `counterSlack` or more past its
    ///   topic's counter (the counter may lag the newest event by less: ``SQLiteStore/counterSlack``);
    /// - each event decodes, with every instant within PROTOCOL.md §3's range (``WireRange``).
    /// - Throws: ``StoreOpenError`` naming the data directory, the first problem found, and what to do.
    func validateStoredState(directory: String) throws(StoreOpenError) {
        func refuse(_ what: String) -> StoreOpenError {
            StoreOpenError("the data directory \(directory) is damaged: \(what) in \(path); \(Self.whatToDo)")
        }
        let check = rows("PRAGMA quick_check(5)") { stmt in Self.text(stmt, 0) }
        guard let check else { throw refuse("SQLite cannot check the file (\(lastErrorMessage))") }
        if check != ["ok"] { throw refuse("SQLite reports \(check.joined(separator: "; "))") }
        let badCounter = rows(
            "SELECT topic, next_seq FROM topics WHERE typeof(next_seq) != 'integer' OR next_seq < 1 OR next_seq > \(Self.largestSequence) LIMIT 1"
        ) { stmt in (Self.text(stmt, 0), Self.text(stmt, 1)) }
        if let (topic, value) = badCounter?.first {
            throw refuse(
                "topic '\(topic)' has the sequence counter next_seq = \(value) (must be 1…\(Self.largestSequence))"
            )
        }
        let stray = rows(
            """
            SELECT e.topic, e.seq FROM events e LEFT JOIN topics t ON t.topic = e.topic
            WHERE t.topic IS NULL OR typeof(e.seq) != 'integer' OR e.seq < 1 OR e.seq >= t.next_seq + \(Self.counterSlack) LIMIT 1
            """
        ) { stmt in (Self.text(stmt, 0), Self.text(stmt, 1)) }
        if let (topic, seq) = stray?.first {
            throw refuse("event \(seq) of topic '\(topic)' lies outside the topic's sequence counter")
        }
        let runs = rows(
            """
            SELECT t.topic, t.next_seq, min(e.seq), max(e.seq), count(e.seq) FROM topics t
            LEFT JOIN events e ON e.topic = t.topic GROUP BY t.topic
            """
        ) { stmt in
            (
                Self.text(stmt, 0), sqlite3_column_int64(stmt, 1), sqlite3_column_int64(stmt, 2),
                sqlite3_column_int64(stmt, 3), sqlite3_column_int64(stmt, 4)
            )
        }
        guard let runs else { throw refuse("the topics cannot be read (\(lastErrorMessage))") }
        for (topic, next, first, last, count) in runs where next > 1 {
            if count == 0 || last < next - 1 {
                throw refuse("topic '\(topic)' is missing its latest event \(next - 1)")
            }
            if count != last - first + 1 {
                throw refuse(
                    "topic '\(topic)' has a hole: \(last - first + 1 - count) of its events \(first)…\(last) are missing"
                )
            }
        }
        var bad: StoreOpenError?
        _ = rows("SELECT topic, seq, body FROM events") { stmt in
            guard bad == nil else { return () }
            let topic = Self.text(stmt, 0)
            let seq = sqlite3_column_int64(stmt, 1)
            let n = Int(sqlite3_column_bytes(stmt, 2))
            let bytes = sqlite3_column_blob(stmt, 2).map { [UInt8](UnsafeRawBufferPointer(start: $0, count: n)) } ?? []
            do throws(WireError) {
                _ = try EventJSON.decode(bytes)
            } catch {
                bad = refuse("event \(seq) of topic '\(topic)' cannot be served (\(error.code.name): \(error.message))")
            }
            return ()
        }
        if let bad { throw bad }
    }

    /// The rows of a query, or `nil` when SQLite fails (a corrupt page met while reading included).
    private func rows<T>(_ sql: String, _ row: (OpaquePointer?) -> T) -> [T]? {
        guard let stmt = try? prepareStatement(sql) else { return nil }
        defer { sqlite3_finalize(stmt) }
        var out: [T] = []
        while true {
            switch sqlite3_step(stmt) {
            case SQLITE_ROW: out.append(row(stmt))
            case SQLITE_DONE: return out
            default: return nil
            }
        }
    }

    /// A column's text for a message: whole (an embedded NUL kept), with a control character shown escaped
    /// (`orders/a\0b`, as Swift writes it) rather than written raw to the log or the terminal.
    private static func text(_ stmt: OpaquePointer?, _ i: Int32) -> String {
        guard let s = columnText(stmt, i) else { return "NULL" }
        guard s.unicodeScalars.contains(where: { $0 != " " && Topic.isForbidden($0) }) else { return s }
        return String(String(reflecting: s).dropFirst().dropLast())
    }
}
