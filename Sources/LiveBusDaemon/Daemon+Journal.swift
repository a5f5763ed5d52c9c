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
    /// A kept entry: its JSON, or a phone's attach in its fields (``Attach``), made JSON when it is read.
    private enum Entry {
        case value(JSONValue)
        case attach(Attach)

        var json: JSONValue {
            switch self {
            case .value(let v): return v
            case .attach(let a): return a.json
            }
        }
    }

    /// A phone's attach as its fields: one object of about 300 bytes where the JSON object (two dictionaries and
    /// their values) took about 1 KB per attach, and 10,000 attaches are kept (massif, 1,000 idle sessions).
    final class Attach {
        let n: Int
        let uptimeMs: Int64
        let session: String
        let device: String?
        let posture: PostureBody?
        let appState: String
        let os: String?
        let profile: ProfileBody
        let client: String
        let resumed: Bool
        let clockSkewMs: Double

        init(
            n: Int,
            uptimeMs: Int64,
            session: String,
            device: String?,
            posture: PostureBody?,
            appState: String,
            os: String?,
            profile: ProfileBody,
            client: String,
            resumed: Bool,
            clockSkewMs: Double
        ) {
            self.n = n
            self.uptimeMs = uptimeMs
            self.session = session
            self.device = device
            self.posture = posture
            self.appState = appState
            self.os = os
            self.profile = profile
            self.client = client
            self.resumed = resumed
            self.clockSkewMs = clockSkewMs
        }

        /// The entry as `journal` answers it (PROTOCOL.md §8: `attach` with `session`, `device`, `posture`,
        /// `appState`, `os`, `profile`, `client`, `resumed`, `clockSkewMs`).
        var json: JSONValue {
            .object([
                "session": .string(session), "device": device.map { .string($0) } ?? .null,
                "posture": posture.map(Daemon.journalValue) ?? .null, "appState": .string(appState),
                "os": os.map { .string($0) } ?? .null, "profile": Daemon.journalValue(profile),
                "client": .string(client), "resumed": .bool(resumed), "clockSkewMs": .number(clockSkewMs),
                "n": .number(Double(n)), "uptimeMs": .number(Double(uptimeMs)), "kind": .string("attach"),
            ])
        }

        /// ``AdminJournal/encodedSize(_:)`` of ``json``, counted from the fields (the small posture and profile
        /// objects are measured as values).
        var encodedSize: Int {
            // 12 members: braces and 11 commas, each key's quoted name and colon.
            var n = 2 + 11
            for key in ["session", "device", "posture", "appState", "os", "profile", "client", "resumed"] {
                n += key.utf8.count + 3
            }
            for key in ["clockSkewMs", "n", "uptimeMs", "kind"] { n += key.utf8.count + 3 }
            n += AdminJournal.stringSize(session) + AdminJournal.stringSize(appState) + AdminJournal.stringSize(client)
            n += device.map(AdminJournal.stringSize) ?? 4
            n += os.map(AdminJournal.stringSize) ?? 4
            n += posture.map { AdminJournal.encodedSize(Daemon.journalValue($0)) } ?? 4
            n += AdminJournal.encodedSize(Daemon.journalValue(profile))
            n += resumed ? 4 : 5
            n += AdminJournal.encodedSize(.number(clockSkewMs)) + AdminJournal.encodedSize(.number(Double(self.n)))
            n += AdminJournal.encodedSize(.number(Double(uptimeMs))) + AdminJournal.stringSize("attach")
            return n
        }
    }

    private var entries: [(entry: Entry, bytes: Int)] = []
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
        keep(.value(entry), size: Self.encodedSize(entry))
    }

    /// Appends a phone's attach (kind `attach`), numbered next; `make` gets the entry's number.
    func appendAttach(_ make: (_ n: Int) -> Attach) {
        total += 1
        let a = make(total)
        keep(.attach(a), size: a.encodedSize)
    }

    private func keep(_ entry: Entry, size: Int) {
        entries.append((entry, size))
        bytes += size
        var drop = 0
        while entries.count - drop > Self.capacity || (bytes > Self.capacityBytes && entries.count - drop > 1) {
            bytes -= entries[drop].bytes
            drop += 1
        }
        if drop > 0 { entries.removeFirst(drop) }
    }

    /// The length of `v`'s JSON as ``WireJSON/encode(_:)`` writes it, bytes, counted without encoding it (a
    /// JSONEncoder per entry was a large part of every attach: callgrind, sessions workload). Integral numbers
    /// below 9·10^15 are written as integers; the rare fractional one is measured by encoding it alone.
    static func encodedSize(_ v: JSONValue) -> Int {
        switch v {
        case .null: return 4
        case .bool(let b): return b ? 4 : 5
        case .number(let n):
            if n.rounded() == n && abs(n) < 9e15 {
                var m = Int64(n).magnitude
                var digits = 1
                while m >= 10 {
                    m /= 10
                    digits += 1
                }
                return digits + (n < 0 ? 1 : 0)
            }
            return (try? WireJSON.encode(v).count) ?? 24
        case .string(let s): return stringSize(s)
        case .array(let a): return 2 + max(0, a.count - 1) + a.reduce(0) { $0 + encodedSize($1) }
        case .object(let o):
            return 2 + max(0, o.count - 1) + o.reduce(0) { $0 + stringSize($1.key) + 1 + encodedSize($1.value) }
        }
    }

    /// The length of a JSON string, quotes and escapes included (`"`, `\` and `\n`-style escapes 2 bytes, other
    /// control characters 6).
    static func stringSize(_ s: String) -> Int {
        var n = 2
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x09, 0x0A, 0x0C, 0x0D: n += 2
            case 0..<0x20: n += 6
            default: n += 1
            }
        }
        return n
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
            out.append(e.entry.json)
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
        let uptime = uptimeMilliseconds
        journal.appendAttach { n in
            AdminJournal.Attach(
                n: n,
                uptimeMs: uptime,
                session: s.name,
                device: s.device,
                posture: s.posture,
                appState: s.appState,
                os: s.os,
                profile: s.profile,
                client: s.client,
                resumed: resumed,
                clockSkewMs: s.handshakeOffsetMilliseconds.rounded()
            )
        }
    }

    /// A posture as ``jsonValue(_:)`` makes it (its members, absent ones left out), built directly: no encoder
    /// and decoder per attach.
    static func journalValue(_ p: PostureBody) -> JSONValue {
        var o: [String: JSONValue] = ["foldState": .string(p.foldState), "orientation": .string(p.orientation)]
        o["windowWidth"] = p.windowWidth.map(JSONValue.number)
        o["windowHeight"] = p.windowHeight.map(JSONValue.number)
        o["hingeAngle"] = p.hingeAngle.map(JSONValue.number)
        o["keyboardHeight"] = p.keyboardHeight.map(JSONValue.number)
        o["splitViewWidth"] = p.splitViewWidth.map(JSONValue.number)
        return .object(o)
    }

    /// A profile as ``jsonValue(_:)`` makes it, built directly.
    static func journalValue(_ p: ProfileBody) -> JSONValue {
        var o: [String: JSONValue] = [:]
        o["lowPowerMode"] = p.lowPowerMode.map(JSONValue.bool)
        o["frequentUpdates"] = p.frequentUpdates.map(JSONValue.bool)
        o["liveActivities"] = p.liveActivities.map(JSONValue.string)
        return .object(o)
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
