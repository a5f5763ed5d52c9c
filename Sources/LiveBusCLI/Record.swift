import Foundation
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusSimulator
import LiveBusWire

/// An observer connection that receives every EVENT the daemon publishes (pattern `>`), answers its PINGs, and
/// keeps what the final state needs of each (``Recording/EventFacts``).
final class EventTap {
    private(set) var facts: [String: [UInt64: Recording.EventFacts]] = [:]
    private(set) var connection: Connection?
    /// Called for each EVENT with its frame, after its facts are kept.
    var onEvent: ((Frame) -> Void)?
    /// Called once when the connection fails or closes, with what happened.
    var onEnd: ((CLIError?) -> Void)?

    /// Connects to `socket` and subscribes to every topic.
    init(loop: EventLoop, socket: String, name: String) {
        Connection.connect(loop: loop, path: socket) { [self] r in
            switch r {
            case .failure(let e):
                onEnd?(.unreachable(socket, e))
            case .success(let c):
                connection = c
                if let e = c.checkPeer(path: socket) {
                    c.close()
                    onEnd?(.impostor(e))
                    return
                }
                var decoder = FrameDecoder()
                c.onRead = { [self] bytes in
                    decoder.append(bytes)
                    while let f = try? decoder.next() {
                        switch f.type {
                        case .event:
                            if let b = try? EventJSON.decode(f.body) {
                                facts[f.topic, default: [:]][f.sequence] = Recording.EventFacts(
                                    status: b.contentState.status,
                                    staleDate: b.staleDate,
                                    terminal: f.flags.contains(.terminal)
                                )
                            }
                            onEvent?(f)
                        case .ping:
                            c.write { buf in Frame.appendPong(answering: f, into: &buf) }
                        case .error:
                            let e = try? WireJSON.decode(ErrorBody.self, from: f.body)
                            onEnd?(CLIError(e?.name ?? "error", "daemon refused: \(e?.message ?? "?")", exit: .usage))
                        default:
                            break
                        }
                    }
                }
                c.onClose = { [self] _ in onEnd?(nil) }
                try? c.startReading()
                do throws(CLIError) {
                    let hello = HelloBody(
                        client: "livebus-\(name)/\(liveBusVersion)",
                        role: .observer,
                        name: "\(name)-\(getpid())",
                        clientTime: SystemServerClock().now().millisecondsSinceEpoch
                    )
                    try sendFrame(c, .hello, body: try frameBody(hello))
                    try sendFrame(c, .subscribe, body: try frameBody(SubscribeBody(patterns: [">"])))
                } catch {
                    onEnd?(error)
                }
            }
        }
    }
}

/// Reads a daemon's state over its admin interface: `status`, and its `journal` (read in pages until caught up).
struct DaemonReader {
    var socket: String
    var after = 0

    /// The `status` data.
    func status() throws(CLIError) -> JSONValue {
        try StatusPages.all(socket: socket)
    }

    /// The journal's entries since the last call, oldest first.
    /// - Throws: ``CLIError`` when the daemon does not answer, or `journalGap` when it dropped entries unread.
    mutating func journal() throws(CLIError) -> [JSONValue] {
        var all: [JSONValue] = []
        while true {
            let d = try LivebusCommand.resultData(
                AdminClient.request(
                    socket: socket,
                    command: "journal",
                    args: ["after": .number(Double(after))],
                    timeoutMs: 5000
                )
            )
            if (d["missed"]?.doubleValue ?? 0) > 0 {
                throw CLIError(
                    "journalGap",
                    "the daemon dropped \(d["missed"]?.description ?? "some") journal entries before they were read",
                    recovery:
                        "the journal keeps 10,000 entries: record from the daemon's start, or send fewer commands",
                    exit: .verdictFailed
                )
            }
            guard case .array(let entries)? = d["entries"], let last = entries.last?["n"]?.int64Value else { break }
            all += entries
            after = Int(last)
        }
        return all
    }

    /// Skips the journal's entries so far: the next ``journal()`` returns only what is noted from now on.
    mutating func skipToNow() throws(CLIError) {
        let d = try LivebusCommand.resultData(
            AdminClient.request(
                socket: socket,
                command: "journal",
                args: ["after": .number(9_007_199_254_740_992)],
                timeoutMs: 5000
            )
        )
        after = d["total"]?.int64Value.map(Int.init) ?? after
    }

    /// Every order of the simulator (`order.list`, read 1,000 at a time).
    func orders() throws(CLIError) -> [JSONValue] {
        var all: [JSONValue] = []
        while true {
            let d = try LivebusCommand.resultData(
                AdminClient.request(
                    socket: socket,
                    command: "order.list",
                    args: ["limit": .number(1000), "offset": .number(Double(all.count))],
                    timeoutMs: 5000
                )
            )
            guard case .array(let page)? = d["orders"], !page.isEmpty else { break }
            all += page
            if all.count >= d["total"]?.int64Value.map(Int.init) ?? 0 { break }
        }
        return all
    }

    /// The daemon's start on the host's wall clock (its status: `serverTime − uptimeMs`), ms since the Unix epoch.
    static func startMs(_ status: JSONValue) -> Int64 {
        (status["serverTime"]?.int64Value ?? e2eNowMs()) - (status["uptimeMs"]?.int64Value ?? 0)
    }
}

/// `livebus record --out FILE`: writes what a running daemon publishes and what its phones are told, with timing
/// (Protocol/RECORD.md).
enum RecordCommand {
    /// Sessions seen without a clock estimate are written after this many polls anyway (100 ms apart).
    static let clockWaitPolls = 30

    static func run(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "record",
            options: ["socket", "out", "duration", "exit-when", "since"],
            flags: ["json"]
        )
        try a.allowPositionals(0)
        guard let path = a.value("out") else {
            throw .usage("livebus record needs --out FILE", recovery: "e.g. livebus record --out session.jsonl")
        }
        let exitWhen = try a.choice("exit-when", ["finished", "never"], default: "never")
        let duration = try a.value("duration").map { v throws(CLIError) in
            try parseDuration(v, flag: "duration", allowed: 1...7 * 86_400_000)
        }
        // From now (what the daemon did before is not in the recording), or from the daemon's start.
        let since = try a.choice("since", ["now", "start"], default: "now")
        let socket = a.value("socket") ?? defaultSocketPath()
        var reader = DaemonReader(socket: socket)
        if since == "now" { try reader.skipToNow() }
        let first = try reader.status()
        let start = DaemonReader.startMs(first)
        func uptime() -> Int64 { e2eNowMs() - start }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else {
            throw CLIError(
                "cannotWrite",
                "cannot write --out \(path): \(String(cString: strerror(errno)))",
                recovery: "choose a writable path for --out",
                exit: .usage
            )
        }
        let file = FileHandle(fileDescriptor: fd, closeOnDealloc: false)
        defer { try? file.close() }
        var lines = 0
        func write(_ v: JSONValue) {
            guard let b = try? WireJSON.encode(v) else { return }
            file.write(Data(b + [0x0A]))
            lines += 1
        }
        let daemon = Recording.Daemon(
            scenario: first["scenario"]?.stringValue,
            timeScale: first["timeScale"]?.doubleValue ?? 1,
            seed: UInt64(max(0, first["seed"]?.doubleValue ?? 1))
        )
        let startT = uptime()
        write(
            Recording.header(
                daemon: daemon,
                livebus: liveBusVersion,
                recordedAtMs: e2eNowMs(),
                startT: startT,
                since: since,
                scenarioFinished: first["scenarioFinished"]?.boolValue ?? false
            )
        )
        if since == "now" {
            // What the replay needs of the state so far, as inputs at the recording's start: the orders of a daemon
            // without a scenario (a scenario makes its own), then the phones attached now.
            if daemon.scenario == nil {
                for o in try reader.orders() {
                    guard let id = o["id"]?.stringValue else { continue }
                    var args: [String: JSONValue] = ["id": .string(id)]
                    if let c = o["customer"]?.stringValue { args["customer"] = .string(c) }
                    write(
                        .object([
                            "type": .string("command"), "t": .number(Double(startT)),
                            "command": .string("order.create"), "args": .object(args),
                        ])
                    )
                }
            }
            for line in Recording.attachLines(status: first, t: startT) { write(line) }
        }
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .daemonUnreachable) }
        var failure: CLIError?
        var events = 0
        var inputs = 0
        let tap = EventTap(loop: loop, socket: socket, name: "record")
        tap.onEvent = { f in
            var flags: [JSONValue] = []
            if f.flags.contains(.replay) { flags.append(.string("replay")) }
            if f.flags.contains(.snapshot) { flags.append(.string("snapshot")) }
            if f.flags.contains(.terminal) { flags.append(.string("terminal")) }
            write(
                .object([
                    "type": .string("event"), "t": .number(Double(uptime())), "topic": .string(f.topic),
                    "seq": .number(Double(f.sequence)), "flags": .array(flags), "body": WatchCommand.watchBody(f),
                ])
            )
            events += 1
        }
        tap.onEnd = { e in
            failure = failure ?? e
            loop.stop()
        }
        var verdicts: [JSONValue] = []
        var phonesAttached = 0
        var lastStatus = first
        var polls = 0
        var clocked: Set<String> = []
        func poll(final: Bool = false) throws(CLIError) {
            for e in try reader.journal() {
                guard case .object(var o) = e, let kind = o["kind"]?.stringValue else { continue }
                o["type"] = .string(kind)
                o["t"] = o["uptimeMs"] ?? .number(Double(uptime()))
                for k in ["kind", "uptimeMs", "n"] { o[k] = nil }
                write(.object(o))
                switch kind {
                case "verdict": verdicts.append(e)
                case "attach":
                    phonesAttached += 1
                    if let name = o["session"]?.stringValue { clocked.remove(name) }
                default: break
                }
                if kind != "verdict" { inputs += 1 }
            }
            polls += 1
            guard final || polls % 5 == 0 else { return }
            let st = try reader.status()
            lastStatus = st
            // Each phone's clock offset once the daemon's probes settled (a better estimate than the handshake's).
            if case .array(let sessions)? = st["sessions"] {
                for s in sessions where Recording.isPhone(s) {
                    guard let name = s["name"]?.stringValue, !clocked.contains(name),
                        let c = s["clock"], let off = c["offsetMs"]?.doubleValue,
                        (c["samples"]?.doubleValue ?? 0) >= 5 || final
                    else { continue }
                    clocked.insert(name)
                    write(
                        .object([
                            "type": .string("clock"), "t": .number(Double(uptime())), "session": .string(name),
                            "offsetMs": .number(off.rounded()), "errorBoundMs": c["errorBoundMs"] ?? .null,
                            "driftPPM": c["driftPPM"] ?? .null,
                        ])
                    )
                }
            }
            if exitWhen == "finished", st["scenarioFinished"]?.boolValue == true, phonesAttached > 0 {
                let phones = Recording.phones(status: st, events: tap.facts, verdicts: verdicts)
                let done =
                    !phones.isEmpty
                    && phones.allSatisfy { p in
                        !p.activities.isEmpty
                            && p.activities.values.allSatisfy { $0.status == "delivered" || $0.status == "canceled" }
                    }
                if done { loop.stop() }
            }
        }
        let timer = loop.schedule(after: 0, repeat: 100) {
            do throws(CLIError) { try poll() } catch {
                failure = failure ?? error
                loop.stop()
            }
        }
        let signals = try? SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { _ in loop.stop() }
        let stopAfter = duration.map { d in loop.schedule(after: UInt64(d)) { loop.stop() } }
        loop.run()
        timer.cancel()
        stopAfter?.cancel()
        signals?.close()
        // The last state: asked once more (the daemon may be gone: then the last status seen).
        if failure == nil || (failure?.exit != .daemonUnreachable) { try? poll(final: true) }
        let phones = Recording.phones(status: lastStatus, events: tap.facts, verdicts: verdicts)
        write(
            .object([
                "type": .string("final"), "t": .number(Double(uptime())), "phones": Recording.json(phones),
            ])
        )
        tap.connection?.close()
        loop.run()
        loop.close()
        if let failure, failure.exit != .daemonUnreachable || events == 0 { throw failure }
        out.success(
            "recorded \(events) events, \(inputs) inputs and \(phones.count) phones to \(path)",
            data: .object([
                "out": .string(path), "events": .number(Double(events)), "inputs": .number(Double(inputs)),
                "phones": .number(Double(phones.count)), "lines": .number(Double(lines)),
            ])
        )
        return 0
    }
}

/// `livebus replay FILE`: plays a recording against a fresh private daemon and checks every phone ends as recorded.
enum ReplayCommand {
    static func run(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "replay", options: ["time-scale", "settle"], flags: ["json", "quiet"])
        try a.allowPositionals(1)
        guard let path = a.positionals.first else {
            throw .usage("livebus replay needs a recording FILE", recovery: "e.g. livebus replay session.jsonl")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw CLIError(
                "cannotRead",
                "cannot read \(path)",
                recovery: "give a file written by `livebus record --out FILE`",
                exit: .usage
            )
        }
        let rec = try Recording.parse(text, file: path)
        let scale = try a.double("time-scale", default: rec.daemon.timeScale, in: DeliverySimulator.timeScaleRange)
        let settle = try parseDuration(a.value("settle") ?? "10s", flag: "settle", allowed: 0...600_000)
        if let s = rec.daemon.scenario, s.hasSuffix(".json"), !FileManager.default.fileExists(atPath: s) {
            throw CLIError(
                "cannotRead",
                "\(path): the recording's daemon played the scenario file \(s), which is not here",
                recovery: "run replay where \(s) can be read (relative paths are from the current directory)",
                exit: .usage
            )
        }
        // Recorded times are the recorded daemon's; this one runs `factor` times as long for the same scenario time.
        let factor = rec.daemon.timeScale / scale
        var template = Array("/tmp/lbreplay-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else {
            throw CLIError("internal", "cannot create a temporary directory under /tmp", exit: .usage)
        }
        let dir = String(cString: p)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        var daemonArgs = [
            "--socket", socket, "--data-dir", dir + "/data", "--time-scale", "\(scale)", "--seed", "\(rec.daemon.seed)",
        ]
        if let s = rec.daemon.scenario { daemonArgs += ["--scenario", s] }
        let daemon: DaemonProcess
        do {
            daemon = try DaemonProcess.start(arguments: daemonArgs, socket: socket, logPath: dir + "/livebusd.log")
        } catch {
            // What is wrong is the recording's daemon settings (its scenario, most often): say so, then what to do.
            var e = error
            e.message = "\(path): the recorded daemon cannot be started again: \(error.message)"
            e.recovery =
                (error.recovery.map { $0 + "; " } ?? "")
                + "the recording's header names scenario \(rec.daemon.scenario.map { "'\($0)'" } ?? "none"): replay where it can be loaded, as when it was recorded"
            throw e
        }
        var phones: [String: Process] = [:]
        defer {
            for p in phones.values where p.isRunning { p.terminate() }
            for p in phones.values { p.waitUntilExit() }
            daemon.stop()
        }
        var reader = DaemonReader(socket: socket)
        let start = DaemonReader.startMs(try reader.status())
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .usage) }
        defer { _ = loop.close() }
        let tap = EventTap(loop: loop, socket: socket, name: "replay")
        var failure: CLIError?
        tap.onEnd = { e in
            failure =
                failure ?? e
                ?? CLIError("connectionLost", "the replay's daemon closed the connection", exit: .daemonUnreachable)
            loop.stop()
        }
        let inputs = rec.entries.filter { !["event", "verdict", "clock"].contains($0.type) }.sorted { $0.t < $1.t }
        var next = 0
        var verdicts: [JSONValue] = []
        var mismatch: [String] = []
        var matched = false
        // Where the recording's times begin on this replay's clock (Protocol/RECORD.md §2): a recording from the
        // daemon's start, or of a scenario still playing, keeps its times (inputs land at the same scenario time);
        // one from later of a daemon without a scenario starts at once, and one made after the scenario ended
        // starts once this daemon's scenario has ended too.
        let origin: Int64
        var base: Int64?
        if rec.since == "now" && rec.daemon.scenario == nil {
            origin = rec.startT
            base = e2eNowMs()
        } else if rec.since == "now" && rec.scenarioFinished {
            origin = rec.startT
        } else {
            origin = 0
            base = start
        }
        func wall(_ t: Int64) -> Int64? { base.map { $0 + Int64((Double(max(0, t - origin)) * factor).rounded()) } }
        let scenarioDeadline = start + Int64((Double(rec.startT) * factor).rounded()) + 60_000
        var ticks = 0
        let progress = !a.flag("quiet") && !out.json
        func note(_ s: String) { if progress { StandardStream.err(s + "\n") } }
        // A recording made --since now while the scenario played starts at its scenario time: say how long that is
        // instead of waiting in silence (review finding: minutes without a word).
        if let first = wall(rec.startT), first - e2eNowMs() > 2000 {
            note(
                "replay: waiting \(spokenDuration((first - e2eNowMs() + 500) / 1000 * 1000)) until this daemon's scenario reaches where the recording starts (recorded --since now, \(spokenDuration(rec.startT)) after the recorded daemon started); a higher --time-scale shortens the wait"
            )
        }
        /// A push's payload with its dates (`timestamp`, `stale-date`, `dismissal-date`, seconds since the Unix
        /// epoch) moved by as long as this replay is after the recording at the same point, so that they stand to
        /// the phones' clocks as they stood when recorded (else every replayed push is olderTimestamp).
        func shifted(_ args: [String: JSONValue], at t: Int64) -> [String: JSONValue] {
            guard let recordedAt = rec.recordedAt, let text = args["payload"]?.stringValue,
                case .object(var payload)? = try? WireJSON.decode(JSONValue.self, from: Array(text.utf8)),
                case .object(var aps)? = payload["aps"]
            else { return args }
            let seconds = Double(((e2eNowMs() - (recordedAt - rec.startT + t)) / 1000))
            for key in ["timestamp", "stale-date", "dismissal-date"] {
                if case .number(let v)? = aps[key] { aps[key] = .number(v + seconds) }
            }
            payload["aps"] = .object(aps)
            var out = args
            out["payload"] =
                (try? WireJSON.encode(JSONValue.object(payload))).map { .string(String(decoding: $0, as: UTF8.self)) }
                ?? args["payload"]
            return out
        }
        /// The phone's clock offset: the first `clock` line after its attach (the daemon's settled estimate), else
        /// the handshake's.
        func skew(of e: Recording.Entry) -> Int64 {
            let name = e.json["session"]?.stringValue
            let later = rec.entries.first {
                $0.type == "clock" && $0.line > e.line && $0.json["session"]?.stringValue == name
            }
            return (later?.json["offsetMs"] ?? e.json["clockSkewMs"])?.int64Value ?? 0
        }
        func attach(_ e: Recording.Entry) {
            let j = e.json
            let name = j["session"]?.stringValue ?? "phone"
            var args = [
                "attach", "--json", "--socket", socket, "--name", name, "--device", j["device"]?.stringValue ?? "",
                "--posture", j["posture"]?["foldState"]?.stringValue ?? "flat",
                "--orientation", j["posture"]?["orientation"]?.stringValue ?? "portrait",
                "--app-state", j["appState"]?.stringValue ?? "foreground",
                "--clock-skew=\(skew(of: e))ms",
            ]
            if let w = j["posture"]?["windowWidth"]?.doubleValue, let h = j["posture"]?["windowHeight"]?.doubleValue {
                args += ["--window", "\(E2ERun.points(w))x\(E2ERun.points(h))"]
            }
            if let os = j["os"]?.stringValue { args += ["--os", os] }
            if j["profile"]?["lowPowerMode"]?.boolValue == true { args.append("--low-power") }
            if j["profile"]?["frequentUpdates"]?.boolValue == true { args.append("--frequent-updates") }
            switch j["profile"]?["liveActivities"]?.stringValue {
            case "denied"?: args += ["--activities", "denied"]
            case "activitiesDisabled"?: args += ["--activities", "disabled"]
            default: break
            }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: E2ERun.livebusBinary())
            p.arguments = args
            _ = FileManager.default.createFile(atPath: "\(dir)/\(name).jsonl", contents: nil)
            _ = FileManager.default.createFile(atPath: "\(dir)/\(name).err", contents: nil)
            p.standardOutput = FileHandle(forWritingAtPath: "\(dir)/\(name).jsonl")
            p.standardError = FileHandle(forWritingAtPath: "\(dir)/\(name).err")
            p.standardInput = FileHandle.nullDevice
            do { try p.run() } catch {
                failure = CLIError("internal", "cannot start phone \(name): \(error)", exit: .usage)
                loop.stop()
                return
            }
            phones[name] = p
            note("replay +\(e.t - origin) ms: attach \(name) (\(j["device"]?.stringValue ?? "?"))")
        }
        /// A state the phone had at `t`: set it unless it already is (a command before may have set it).
        func restore(_ e: Recording.Entry, key: String, command: String, args: [String: JSONValue]) {
            let name = e.json["session"]?.stringValue ?? ""
            let st = try? reader.status()
            if case .array(let ss)? = st?["sessions"], let s = ss.first(where: { $0["name"]?.stringValue == name }),
                s[key] == e.json[key]
            {
                return
            }
            var full = args
            full["session"] = .string(name)
            _ = try? AdminClient.request(socket: socket, command: command, args: full, timeoutMs: 5000)
            note("replay +\(e.t - origin) ms: \(key) of \(name) → \(e.json[key]?.description ?? "?")")
        }
        var attached: Set<String> = []
        /// Waits (up to 10 s) until the phone `name` this entry acts on is attached: its process may take longer to
        /// start than the recorded phone took to connect.
        func waitForPhone(_ name: String?) {
            guard let name, phones[name] != nil, !attached.contains(name) else { return }
            for _ in 0..<200 {
                if case .array(let ss)? = (try? reader.status())?["sessions"],
                    ss.contains(where: { $0["name"]?.stringValue == name && Recording.isPhone($0) })
                {
                    attached.insert(name)
                    return
                }
                usleep(50_000)
            }
        }
        func perform(_ e: Recording.Entry) {
            let j = e.json
            if e.type != "attach" { waitForPhone(j["session"]?.stringValue ?? j["args"]?["session"]?.stringValue) }
            switch e.type {
            case "attach":
                // A resumed attach is the same phone reconnecting: its process resumes by itself.
                if j["resumed"]?.boolValue == true, let name = j["session"]?.stringValue,
                    phones[name]?.isRunning == true
                {
                    return
                }
                attach(e)
            case "detach":
                // A detach followed by a resume (a lost connection, a restarted daemon) is not the phone quitting.
                guard let name = j["session"]?.stringValue, let p = phones[name], p.isRunning,
                    !inputs.contains(where: {
                        $0.t >= e.t && $0.type == "attach" && $0.json["session"]?.stringValue == name
                            && $0.json["resumed"]?.boolValue == true
                    })
                else { return }
                p.terminate()
                attached.remove(name)
            case "clockChanged", "clock":
                break  // the phone's own clock change: its amount is not known (a `session.clock` command is)
            case "posture":
                restore(e, key: "posture", command: "session.posture", args: ["posture": j["posture"] ?? .null])
            case "appState":
                restore(e, key: "appState", command: "session.app-state", args: ["appState": j["appState"] ?? .null])
            case "profile":
                var args: [String: JSONValue] = [:]
                if case .object(let o)? = j["profile"] { args = o }
                restore(e, key: "profile", command: "session.profile", args: args)
            default:  // command
                var args: [String: JSONValue] = [:]
                if case .object(let o)? = j["args"] { args = o }
                let command = j["command"]?.stringValue ?? ""
                if command == "push" { args = shifted(args, at: e.t) }
                _ = try? AdminClient.request(socket: socket, command: command, args: args, timeoutMs: 8000)
                note("replay +\(e.t - origin) ms: \(command)")
            }
        }
        let timer = loop.schedule(after: 0, repeat: 20) {
            ticks += 1
            if base == nil {
                // Recorded after the scenario ended: begin when this daemon's has ended too.
                guard ticks % 10 == 0 else { return }
                if (try? reader.status())?["scenarioFinished"]?.boolValue == true {
                    base = e2eNowMs()
                    note("replay: the scenario has ended; the recording starts now")
                } else if e2eNowMs() > scenarioDeadline {
                    failure = CLIError(
                        "replayDiffers",
                        "\(path): the recording was made after the scenario \(rec.daemon.scenario ?? "?") ended, but the replayed one has not ended",
                        recovery: "record with --since start to replay the whole run",
                        exit: .verdictFailed
                    )
                    loop.stop()
                }
                return
            }
            let now = e2eNowMs()
            while next < inputs.count, let at = wall(inputs[next].t), at <= now {
                perform(inputs[next])
                next += 1
            }
            guard next == inputs.count, let endWall = wall(rec.finalT), now >= endWall else { return }
            // After the recording's end: the state must become the recorded one within --settle.
            do throws(CLIError) {
                let st = try reader.status()
                verdicts += try reader.journal().filter { $0["kind"]?.stringValue == "verdict" }
                let replayed = Recording.phones(status: st, events: tap.facts, verdicts: verdicts)
                mismatch = Recording.diff(recorded: rec.final, replayed: replayed)
            } catch {
                failure = error
                loop.stop()
                return
            }
            if mismatch.isEmpty {
                matched = true
                loop.stop()
            } else if now >= endWall + settle {
                loop.stop()
            }
        }
        let signals = try? SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { signal in
            let name = signal == SIGTERM ? "SIGTERM" : "SIGINT"
            failure = CLIError("interrupted", "replay interrupted (\(name))", exit: .interrupted)
            loop.stop()
        }
        loop.run()
        timer.cancel()
        signals?.close()
        tap.onEnd = nil
        tap.connection?.close()
        loop.run()
        if let failure { throw failure }
        if matched {
            let summary: JSONValue = .object([
                "file": .string(path), "phones": .number(Double(rec.final.count)),
                "inputs": .number(Double(inputs.count)), "events": .number(Double(rec.events)),
            ])
            out.success(
                "replayed \(path): \(inputs.count) inputs, \(rec.final.count) phones end as recorded",
                data: summary
            )
            return 0
        }
        throw CLIError(
            "replayDiffers",
            "replayed \(path): the final state differs from the recording (after \(spokenDuration(settle)) to settle):\n"
                + mismatch.map { "  " + $0 }.joined(separator: "\n"),
            recovery: "the lines say recorded vs replayed per phone; replay again to tell a flake from a change",
            exit: .verdictFailed
        )
    }
}
