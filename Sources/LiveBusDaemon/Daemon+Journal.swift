import LiveBusWire

/// What happened to the daemon's phones and what it was told to do, in order: the admin commands that change
/// something, each phone's attach (its HELLO), its own posture, app-state, profile and clock reports, its detach, and
/// each push's verdict. `livebus record` reads it with the `journal` admin command (Protocol/RECORD.md).
///
/// Entries are numbered from 1 for the daemon's life; the oldest are dropped past ``capacity`` or ``capacityBytes``
/// (the reader asks for entries after the last number it saw, and is told how many it missed).
final class AdminJournal {
    /// Entries kept, at most.
    static let capacity = 10_000
    /// Bytes of entries kept, at most (10,000 pushes of 4 KiB would be 40 MB): the oldest go first.
    static let capacityBytes = 8 << 20
    /// An answer holds entries up to this many bytes (a push's payload is at most 4 KiB), and at least one.
    static let pageBytes = 40_000
    /// Commands that change the daemon's or a phone's state; read-only ones (`status`, `order.list`, `fault.list`,
    /// `push.explain`, `journal`) are not journaled.
    static let journaled: Set<String> = [
        "order.create", "order.cancel", "session.posture", "session.app-state", "session.profile", "session.clock",
        "session.simulate", "push", "backend.stall", "fault.add", "fault.preset", "fault.remove",
    ]
    private var entries: [(entry: JSONValue, bytes: Int)] = []
    private var bytes = 0
    private(set) var total = 0

    /// Appends an entry of `kind` at `uptimeMs` (ms since the daemon started, its clock) with `fields`.
    func append(_ kind: String, uptimeMs: Int64, _ fields: [String: JSONValue]) {
        total += 1
        var o = fields
        o["n"] = .number(Double(total))
        o["uptimeMs"] = .number(Double(uptimeMs))
        o["kind"] = .string(kind)
        let entry = JSONValue.object(o)
        let size = (try? WireJSON.encode(entry).count) ?? 256
        entries.append((entry, size))
        bytes += size
        var drop = 0
        while entries.count - drop > Self.capacity || (bytes > Self.capacityBytes && entries.count - drop > 1) {
            bytes -= entries[drop].bytes
            drop += 1
        }
        if drop > 0 { entries.removeFirst(drop) }
    }

    /// The entries numbered after `after`, within ``pageBytes``, how many were dropped before the reader could see
    /// them, and the last number.
    func page(after: Int) -> JSONValue {
        let first = total - entries.count + 1  // number of entries[0]
        let missed = max(0, first - 1 - after)
        var out: [JSONValue] = []
        var size = 0
        for e in entries.dropFirst(max(0, after + 1 - first)) {
            if !out.isEmpty && size + e.bytes > Self.pageBytes { break }
            out.append(e.entry)
            size += e.bytes
        }
        return .object([
            "entries": .array(out), "total": .number(Double(total)), "missed": .number(Double(missed)),
        ])
    }
}

extension Daemon {
    var uptimeMilliseconds: Int64 { startedAt.milliseconds(to: clock.now()) }

    /// Journals a mutating admin command, or answers `journal {after?}`; true when `c` was `journal` (answered here).
    func journalCommand(_ c: CommandBody, id: UInt64, from s: Session) -> Bool {
        guard c.command == "journal" else {
            if AdminJournal.journaled.contains(c.command) {
                journal.append(
                    "command",
                    uptimeMs: uptimeMilliseconds,
                    ["command": .string(c.command), "args": .object(c.args)]
                )
            }
            return false
        }
        guard
            let after = wholeNumberArgument(
                c,
                "after",
                meaning: "the last entry number read",
                example: 12,
                id: id,
                from: s
            )
        else { return true }
        reply(s, id: id, ResultBody(ok: true, data: journal.page(after: after)))
        return true
    }

    /// Journals a phone's attach (what its HELLO said; the clock offset is the handshake's estimate, ms, phone
    /// minus server).
    func journalAttach(_ s: Session, resumed: Bool) {
        guard s.role == .session else { return }
        journal.append(
            "attach",
            uptimeMs: uptimeMilliseconds,
            [
                "session": .string(s.name), "device": s.device.map { .string($0) } ?? .null,
                "posture": s.posture.map { Daemon.jsonValue($0) } ?? .null, "appState": .string(s.appState),
                "os": s.os.map { .string($0) } ?? .null, "profile": Daemon.jsonValue(s.profile),
                "client": .string(s.client), "resumed": .bool(resumed),
                "clockSkewMs": .number(s.handshakeOffsetMilliseconds.rounded()),
            ]
        )
    }

    /// Journals what a phone reported about itself (POSTURE): its whole posture, app state or profile after the
    /// change, and whether it said its clock was set.
    func journalReport(_ s: Session, _ b: PostureChangeBody) {
        guard s.role == .session else { return }
        let t = uptimeMilliseconds
        let name = JSONValue.string(s.name)
        if b.posture != nil, let p = s.posture {
            journal.append("posture", uptimeMs: t, ["session": name, "posture": Daemon.jsonValue(p)])
        }
        if b.appState != nil {
            journal.append("appState", uptimeMs: t, ["session": name, "appState": .string(s.appState)])
        }
        if b.profile != nil {
            journal.append("profile", uptimeMs: t, ["session": name, "profile": Daemon.jsonValue(s.profile)])
        }
        if b.clockChanged == true { journal.append("clockChanged", uptimeMs: t, ["session": name]) }
    }

    /// Journals a phone's detach.
    func journalDetach(_ s: Session, reason: String) {
        guard s.role == .session else { return }
        journal.append("detach", uptimeMs: uptimeMilliseconds, ["session": .string(s.name), "reason": .string(reason)])
    }

    /// Journals a phone's verdict on a push (the RESULT data it sent: pushID, applied, reason …).
    func journalVerdict(_ data: JSONValue, from s: Session) {
        var o: [String: JSONValue] = [:]
        if case .object(let d) = data { o = d }
        o["session"] = .string(s.name)
        journal.append("verdict", uptimeMs: uptimeMilliseconds, o)
    }
}
