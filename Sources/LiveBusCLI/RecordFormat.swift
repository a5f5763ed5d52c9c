import LiveBusSimulator
import LiveBusWire

/// The recording file of `livebus record` and `livebus replay` (Protocol/RECORD.md, format version 1): JSON Lines,
/// a `header` first, then `attach`, `detach`, `posture`, `appState`, `profile`, `command`, `verdict` and `event`
/// lines, each with `t` (milliseconds since the daemon started, its clock), and a `final` line last.
///
/// Pure: no sockets, no clock. The commands in Record.swift do the I/O.
enum Recording {
    /// The header's `format`.
    static let format = "livebus-record"
    /// The format version this build reads and writes.
    static let version = 1
    /// Line types after the header.
    static let entryTypes: Set<String> = [
        "attach", "detach", "posture", "appState", "profile", "clockChanged", "clock", "command", "verdict", "event",
        "final",
    ]

    /// The daemon the recording was made against (what `replay` starts).
    struct Daemon: Equatable {
        /// `--scenario` (a built-in name or a file), or nil for none.
        var scenario: String?
        /// `--time-scale`.
        var timeScale: Double
        /// `--seed`.
        var seed: UInt64
    }

    /// One input to replay, at `t` ms since the daemon started.
    struct Entry {
        /// The file's line number (1-based).
        var line: Int
        /// `attach`, `detach`, `posture`, `appState`, `profile`, `command` or `verdict`/`event` (not replayed).
        var type: String
        /// Milliseconds since the daemon started.
        var t: Int64
        /// The whole line.
        var json: JSONValue
    }

    /// What one phone ended as: the comparison of record and replay.
    struct Phone: Equatable {
        var name: String
        var device: String
        var foldState: String
        var orientation: String
        var appState: String
        /// Topic → the last update the phone was sent: its status and whether its stale date had passed.
        var activities: [String: Activity]
        /// Push id → `applied` or `not applied: REASON`.
        var verdicts: [String: String]
    }

    /// One Live Activity as a phone ended with it.
    struct Activity: Equatable {
        var status: String
        var stale: Bool
    }

    /// The facts of one published event that the final state needs.
    struct EventFacts: Equatable {
        var status: String
        /// Stale date, ms since the Unix epoch, server clock.
        var staleDate: Int64?
        var terminal: Bool
    }

    /// A parsed recording.
    struct Parsed {
        var daemon: Daemon
        /// The header's `since`: `now` (nothing before the header's `t` is recorded) or `start`.
        var since = "start"
        /// The header's `t`: when recording began, ms since the daemon started.
        var startT: Int64 = 0
        /// The header's `recordedAt`: the host's wall clock then, ms since the Unix epoch (`nil` in old files).
        var recordedAt: Int64?
        /// The header's `scenarioFinished`: the scenario had played to its end when recording began.
        var scenarioFinished = false
        var entries: [Entry]
        var final: [Phone]
        /// `t` of the final line.
        var finalT: Int64
        var events: Int
    }

    // MARK: - Writing

    /// The header line's object.
    /// - Parameters:
    ///   - daemon: The daemon's scenario, time scale and seed.
    ///   - livebus: The recorder's version.
    ///   - recordedAtMs: The host's wall clock now, ms since the Unix epoch.
    ///   - startT: When recording began, ms since the daemon started (its clock).
    ///   - since: `now` (the recording starts at `startT`: nothing before it is in the file) or `start` (the
    ///     daemon's journal from its start).
    ///   - scenarioFinished: Whether the daemon's scenario had played to its end when recording began.
    /// - Returns: The header line's object.
    static func header(
        daemon: Daemon,
        livebus: String,
        recordedAtMs: Int64,
        startT: Int64,
        since: String = "start",
        scenarioFinished: Bool = false
    ) -> JSONValue {
        .object([
            "type": .string("header"), "format": .string(format), "version": .number(Double(version)),
            "livebus": .string(livebus), "recordedAt": .number(Double(recordedAtMs)), "t": .number(Double(startT)),
            "since": .string(since), "scenarioFinished": .bool(scenarioFinished),
            "daemon": .object([
                "scenario": daemon.scenario.map { .string($0) } ?? .null, "timeScale": .number(daemon.timeScale),
                "seed": .number(Double(daemon.seed)),
            ]),
        ])
    }

    /// An `attach` line at `t` for each phone in the `status` data, with what it is now (its device, posture, app
    /// state, OS, profile and the daemon's estimate of its clock offset, ms rounded): a recording made from now
    /// starts with the phones already attached.
    static func attachLines(status: JSONValue, t: Int64) -> [JSONValue] {
        guard case .array(let sessions)? = status["sessions"] else { return [] }
        return sessions.filter(isPhone).compactMap { s -> JSONValue? in
            guard let name = s["name"]?.stringValue else { return nil }
            var o: [String: JSONValue] = [:]
            o["type"] = .string("attach")
            o["t"] = .number(Double(t))
            o["session"] = .string(name)
            for key in ["device", "posture", "appState", "os", "client"] { o[key] = s[key] ?? .null }
            o["profile"] = s["profile"] ?? .object([:])
            o["resumed"] = .bool(false)
            let offset: Double = s["clock"]?["offsetMs"]?.doubleValue ?? 0
            o["clockSkewMs"] = .number(offset.rounded())
            return .object(o)
        }
    }

    /// Every phone's final state from the daemon's `status` data, the events seen (topic → sequence → facts) and the
    /// push verdicts (journal entries): for each session its device, posture, app state, and per topic it was sent
    /// the status of the last event it was sent and whether that event's stale date is at or before the status's
    /// `serverTime`.
    static func phones(status: JSONValue, events: [String: [UInt64: EventFacts]], verdicts: [JSONValue]) -> [Phone] {
        let now = status["serverTime"]?.int64Value ?? 0
        guard case .array(let sessions)? = status["sessions"] else { return [] }
        var result: [Phone] = []
        for s in sessions where isPhone(s) {
            guard let name = s["name"]?.stringValue else { continue }
            var activities: [String: Activity] = [:]
            if case .object(let sent)? = s["lastSent"] {
                for (topic, seq) in sent {
                    guard let n = seq.int64Value, n >= 0, let facts = events[topic]?[UInt64(n)] else { continue }
                    activities[topic] = Activity(
                        status: facts.status,
                        stale: !facts.terminal && (facts.staleDate.map { $0 <= now } ?? false)
                    )
                }
            }
            var mine: [String: String] = [:]
            for v in verdicts where v["session"]?.stringValue == name {
                guard let id = v["pushID"]?.stringValue else { continue }
                mine[id] =
                    v["applied"]?.boolValue == true ? "applied" : "not applied: \(v["reason"]?.stringValue ?? "?")"
            }
            result.append(
                Phone(
                    name: name,
                    device: s["device"]?.stringValue ?? "?",
                    foldState: s["posture"]?["foldState"]?.stringValue ?? "?",
                    orientation: s["posture"]?["orientation"]?.stringValue ?? "?",
                    appState: s["appState"]?.stringValue ?? "?",
                    activities: activities,
                    verdicts: mine
                )
            )
        }
        return result.sorted { $0.name < $1.name }
    }

    /// Whether a `status` session is a phone (role `session`; observers such as `watch` and the recorder are not).
    static func isPhone(_ s: JSONValue) -> Bool { (s["role"]?.stringValue ?? "session") == "session" }

    /// The `final` line's `phones` array.
    static func json(_ phones: [Phone]) -> JSONValue {
        .array(
            phones.map { p in
                .object([
                    "name": .string(p.name), "device": .string(p.device),
                    "posture": .object(["foldState": .string(p.foldState), "orientation": .string(p.orientation)]),
                    "appState": .string(p.appState),
                    "activities": .array(
                        p.activities.sorted { $0.key < $1.key }.map { t, a in
                            .object(["topic": .string(t), "status": .string(a.status), "stale": .bool(a.stale)])
                        }
                    ),
                    "verdicts": .array(
                        p.verdicts.sorted { $0.key < $1.key }.map { id, v in
                            .object(["pushID": .string(id), "verdict": .string(v)])
                        }
                    ),
                ])
            }
        )
    }

    /// What differs between the recorded and the replayed final state, one line each; empty when they agree.
    static func diff(recorded: [Phone], replayed: [Phone]) -> [String] {
        var lines: [String] = []
        let r = Dictionary(recorded.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let p = Dictionary(replayed.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for name in Set(r.keys).union(p.keys).sorted() {
            guard let a = r[name] else {
                lines.append("phone \(name): not in the recording, but attached in the replay")
                continue
            }
            guard let b = p[name] else {
                lines.append("phone \(name): recorded, but not attached at the end of the replay")
                continue
            }
            func field(_ what: String, _ x: String, _ y: String) {
                if x != y { lines.append("phone \(name): \(what): recorded \(x), replayed \(y)") }
            }
            field("device", a.device, b.device)
            field("posture", "\(a.foldState) \(a.orientation)", "\(b.foldState) \(b.orientation)")
            field("app state", a.appState, b.appState)
            for topic in Set(a.activities.keys).union(b.activities.keys).sorted() {
                func show(_ x: Activity?) -> String { x.map { $0.status + ($0.stale ? " (stale)" : "") } ?? "none" }
                if a.activities[topic] != b.activities[topic] {
                    lines.append(
                        "phone \(name): activity \(topic): recorded \(show(a.activities[topic])), replayed \(show(b.activities[topic]))"
                    )
                }
            }
            for id in Set(a.verdicts.keys).union(b.verdicts.keys).sorted() where a.verdicts[id] != b.verdicts[id] {
                lines.append(
                    "phone \(name): push \(id): recorded \(a.verdicts[id] ?? "none"), replayed \(b.verdicts[id] ?? "none")"
                )
            }
        }
        return lines
    }

    // MARK: - Reading

    /// Parses a recording.
    /// - Throws: ``CLIError`` (usage, exit 2) `invalidRecording` naming `file:line` and the field: not JSON, not an
    ///   object, a missing or wrong header, another format version, an unknown `type`, a missing or mistyped field,
    ///   no `final` line (a recording cut short), or lines after it.
    static func parse(_ text: String, file: String) throws(CLIError) -> Parsed {
        func bad(_ line: Int, _ message: String) -> CLIError {
            CLIError(
                "invalidRecording",
                "\(file):\(line): \(message)",
                recovery: "record again with `livebus record --out FILE` (format: Protocol/RECORD.md)",
                exit: .usage
            )
        }
        var daemon: Daemon?
        var since = "start"
        var startT: Int64 = 0
        var recordedAt: Int64?
        var scenarioFinished = false
        var entries: [Entry] = []
        var final: [Phone]?
        var finalT: Int64 = 0
        var events = 0
        var lineNumber = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            if raw.allSatisfy({ $0 == " " || $0 == "\r" || $0 == "\t" }) { continue }
            let value: JSONValue
            do { value = try WireJSON.decode(JSONValue.self, from: Array(raw.utf8)) } catch {
                // The decoder's detail without its internal type name ("JSONValue body is not …: DETAIL").
                let prefix = "JSONValue body is not a valid JSON object"
                var detail = error.message.hasPrefix(prefix) ? String(error.message.dropFirst(prefix.count)) : ""
                if detail.hasPrefix(": ") { detail = String(detail.dropFirst(2)) }
                throw bad(
                    lineNumber,
                    "not JSON" + (detail.isEmpty ? "" : " (\(detail))") + "; a recording has one JSON object a line"
                )
            }
            guard case .object = value else { throw bad(lineNumber, "a line must be a JSON object") }
            guard let type = value["type"]?.stringValue else { throw bad(lineNumber, "type: missing or not a string") }
            if daemon == nil {
                guard type == "header" else {
                    throw bad(lineNumber, "the first line must be the header (type \"header\"), not \"\(type)\"")
                }
                guard value["format"]?.stringValue == format else {
                    throw bad(
                        lineNumber,
                        "format: expected \"\(format)\", got \(value["format"]?.description ?? "none")"
                    )
                }
                guard let v = value["version"]?.doubleValue else { throw bad(lineNumber, "version: missing") }
                guard v == Double(version) else {
                    throw bad(
                        lineNumber,
                        "version: \(v.description) is not supported; this livebus reads version \(version)"
                    )
                }
                guard let d = value["daemon"], case .object = d else { throw bad(lineNumber, "daemon: missing object") }
                guard let scale = d["timeScale"]?.doubleValue, DeliverySimulator.timeScaleRange.contains(scale) else {
                    throw bad(lineNumber, "daemon.timeScale: missing or outside 0.001…10000")
                }
                guard let seed = d["seed"]?.doubleValue, seed >= 0, seed == seed.rounded() else {
                    throw bad(lineNumber, "daemon.seed: missing or not a whole number ≥ 0")
                }
                let scenario: String?
                switch d["scenario"] {
                case .string(let s)?: scenario = s
                case .null?, nil: scenario = nil
                default: throw bad(lineNumber, "daemon.scenario: must be a string or null")
                }
                switch value["since"] {
                case nil: break
                case .string(let v)? where v == "now" || v == "start": since = v
                default: throw bad(lineNumber, "since: must be \"now\" or \"start\"")
                }
                if let v = value["t"] {
                    guard let t = v.int64Value, t >= 0 else {
                        throw bad(lineNumber, "t: not a whole number of milliseconds ≥ 0")
                    }
                    startT = t
                }
                recordedAt = value["recordedAt"]?.int64Value
                scenarioFinished = value["scenarioFinished"]?.boolValue ?? false
                daemon = Daemon(scenario: scenario, timeScale: scale, seed: UInt64(seed))
                continue
            }
            if final != nil { throw bad(lineNumber, "a line after the final line") }
            guard entryTypes.contains(type) else {
                throw bad(
                    lineNumber,
                    "type: unknown \"\(type)\"; expected one of \(entryTypes.sorted().joined(separator: ", "))"
                )
            }
            guard let t = value["t"]?.int64Value, t >= 0 else {
                throw bad(lineNumber, "t: missing or not a whole number of milliseconds ≥ 0")
            }
            func string(_ key: String) throws(CLIError) -> String {
                guard let s = value[key]?.stringValue, !s.isEmpty else {
                    throw bad(lineNumber, "\(key): missing or not a string (\(type) line)")
                }
                return s
            }
            func object(_ key: String) throws(CLIError) {
                guard case .object? = value[key] else {
                    throw bad(lineNumber, "\(key): missing or not an object (\(type) line)")
                }
            }
            switch type {
            case "attach":
                _ = try string("session")
                for key in ["device", "appState", "os", "client"] {
                    if let v = value[key], v != .null, v.stringValue == nil {
                        throw bad(lineNumber, "\(key): must be a string or null (attach line)")
                    }
                }
                if let p = value["posture"], p != .null, p["foldState"]?.stringValue == nil {
                    throw bad(lineNumber, "posture.foldState: missing or not a string (attach line)")
                }
            case "detach", "clockChanged": _ = try string("session")
            case "posture":
                _ = try string("session")
                try object("posture")
                guard value["posture"]?["foldState"]?.stringValue != nil else {
                    throw bad(lineNumber, "posture.foldState: missing or not a string (posture line)")
                }
            case "appState":
                _ = try string("session")
                _ = try string("appState")
            case "profile":
                _ = try string("session")
                try object("profile")
            case "clock":
                _ = try string("session")
                guard value["offsetMs"]?.doubleValue != nil else {
                    throw bad(lineNumber, "offsetMs: missing or not a number (clock line)")
                }
            case "command":
                _ = try string("command")
                try object("args")
            case "verdict":
                _ = try string("session")
                _ = try string("pushID")
            case "event":
                _ = try string("topic")
                guard value["seq"]?.int64Value != nil else { throw bad(lineNumber, "seq: missing (event line)") }
                try object("body")
                events += 1
            default:  // final
                guard case .array(let phones)? = value["phones"] else {
                    throw bad(lineNumber, "phones: missing or not an array (final line)")
                }
                var parsed: [Phone] = []
                for (i, p) in phones.enumerated() {
                    func s(_ v: JSONValue?, _ field: String) throws(CLIError) -> String {
                        guard let x = v?.stringValue else {
                            throw bad(lineNumber, "phones[\(i)].\(field): missing or not a string")
                        }
                        return x
                    }
                    var acts: [String: Activity] = [:]
                    guard case .array(let list)? = p["activities"] else {
                        throw bad(lineNumber, "phones[\(i)].activities: missing or not an array")
                    }
                    for (j, a) in list.enumerated() {
                        guard let stale = a["stale"]?.boolValue else {
                            throw bad(lineNumber, "phones[\(i)].activities[\(j)].stale: missing or not a boolean")
                        }
                        acts[try s(a["topic"], "activities[\(j)].topic")] = Activity(
                            status: try s(a["status"], "activities[\(j)].status"),
                            stale: stale
                        )
                    }
                    var verdicts: [String: String] = [:]
                    guard case .array(let vs)? = p["verdicts"] else {
                        throw bad(lineNumber, "phones[\(i)].verdicts: missing or not an array")
                    }
                    for (j, v) in vs.enumerated() {
                        verdicts[try s(v["pushID"], "verdicts[\(j)].pushID")] = try s(
                            v["verdict"],
                            "verdicts[\(j)].verdict"
                        )
                    }
                    parsed.append(
                        Phone(
                            name: try s(p["name"], "name"),
                            device: try s(p["device"], "device"),
                            foldState: try s(p["posture"]?["foldState"], "posture.foldState"),
                            orientation: try s(p["posture"]?["orientation"], "posture.orientation"),
                            appState: try s(p["appState"], "appState"),
                            activities: acts,
                            verdicts: verdicts
                        )
                    )
                }
                final = parsed.sorted { $0.name < $1.name }
                finalT = t
                continue
            }
            entries.append(Entry(line: lineNumber, type: type, t: t, json: value))
        }
        guard let daemon else { throw bad(max(lineNumber, 1), "empty file: no header line") }
        guard let final else {
            throw bad(lineNumber, "no final line: the recording was cut short (the recorder did not stop cleanly)")
        }
        return Parsed(
            daemon: daemon,
            since: since,
            startT: startT,
            recordedAt: recordedAt,
            scenarioFinished: scenarioFinished,
            entries: entries,
            final: final,
            finalT: finalT,
            events: events
        )
    }
}
