import Foundation
import LiveBusDaemon
import LiveBusLayout
import LiveBusLoop
import LiveBusScenario
import LiveBusSimulator
import LiveBusWire

/// How `livebus e2e` runs every scenario.
struct E2EOptions {
    /// `--time-scale`, overriding each scenario's.
    var timeScale: Double?
    /// `--seed`, overriding each scenario's.
    var seed: UInt64?
    /// Keep the logs of passing scenarios too.
    var keepLogs: Bool
    /// The Python client script.
    var pythonClient: String?
    /// Show a progress line on stderr.
    var progress: Bool
    /// The catalog, for layouts.
    var catalog: DeviceCatalog
}

/// One scenario's outcome: the table row and the report entry.
struct E2EScenarioResult {
    var file: String
    var name: String
    var sessions: Int
    /// Applied updates summed over the sessions: timing-dependent (a phone attached late gets a replay, a
    /// backgrounded one snapshots that coalesce held updates on the daemon's wall-clock refresh budget).
    var updates: Int
    /// Events the backend published (its final sequence numbers summed over the orders): the same on every run of
    /// a scenario, seed and time scale whose timeline ran to its end.
    var published: Int = 0
    var invariants: [E2EInvariantResult]
    /// The scenario's assertion steps, in step order.
    var steps: [E2EAssertionResult] = []
    /// Each session's log files (`name.jsonl`, `name.layout.jsonl`), by session name, in session order.
    var logFiles: [(session: String, files: [String])] = []
    var wallMs: Int64
    var logDirectory: String?
    var error: String?

    var passed: Bool { error == nil && invariants.allSatisfy(\.passed) && steps.allSatisfy(\.passed) }
}

/// Plays one scenario against a real `livebusd` with one client process per session and checks the invariants.
final class E2ERun {
    let scenario: E2EScenario
    let file: String
    let options: E2EOptions
    let timeScale: Double
    let seed: UInt64
    let directory: String
    let socket: String
    let dataDirectory: String
    let registry = E2EProcesses.shared

    /// The daemons: the only one, or the federation's in file order (the first runs the backend).
    private var daemons: [E2EDaemonSlot] = []
    /// The federation's NATS cluster, when the scenario has one.
    private var cluster: E2ENATSCluster?
    /// Where each phone is attached now (federation daemon name; "" without a federation).
    private var placement: [String: String] = [:]
    /// Each phone's moves: when (true clock, ms) and to which daemon.
    private var moves: [String: [E2EDaemonMove]] = [:]
    /// Which daemon each toxic label was added on.
    private var toxicDaemons: [String: String] = [:]
    /// Whether any daemon is running.
    private var anyDaemon: Bool { daemons.contains { $0.process != nil } }
    private var clients: [String: E2EClientProcess] = [:]
    private var clockEvents: [String: [E2EClockEvent]] = [:]
    private var layouts: [String: [String]] = [:]
    private var postures: [String: E2EPosture] = [:]
    /// Layout outcomes (the line's fields but time and posture) by device, posture and language (a storm repeats
    /// the same few postures).
    private var layoutCache: [String: [String: JSONValue]] = [:]
    /// When each action with an `id` was performed, true clock, ms (assertion steps' `after`).
    private var actionTimes: [String: Int64] = [:]
    private var toxicIDs: [String: JSONValue] = [:]
    private var daemonLog = E2EDaemonLog()
    private var outcomes: [E2EActionOutcome] = []
    private var observations: [E2EBackendObservation] = []
    private var final: [String: E2EBackendObservation] = [:]
    private var finalAfterStop: [String: E2EBackendObservation] = [:]
    private var lastPollMs: Int64 = 0
    private var lastProgressMs: Int64 = 0
    private var t0: Int64 = 0

    init(scenario: E2EScenario, file: String, options: E2EOptions) throws(CLIError) {
        self.scenario = scenario
        self.file = file
        self.options = options
        timeScale = options.timeScale ?? scenario.timeScale
        seed = options.seed ?? scenario.seed
        var template = Array("/tmp/lbe2e-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else {
            throw CLIError("internal", "cannot create a temporary directory under /tmp", exit: .usage)
        }
        directory = String(cString: p)
        if let f = scenario.federation {
            for d in f.daemons {
                daemons.append(
                    E2EDaemonSlot(
                        name: d.name,
                        socket: "\(directory)/\(d.name).sock",
                        dataDirectory: "\(directory)/data-\(d.name)"
                    )
                )
            }
        } else {
            daemons = [E2EDaemonSlot(name: "", socket: directory + "/bus.sock", dataDirectory: directory + "/data")]
        }
        socket = daemons[0].socket
        dataDirectory = daemons[0].dataDirectory
        for d in daemons {
            try? FileManager.default.createDirectory(atPath: d.dataDirectory, withIntermediateDirectories: true)
        }
        registry.add(directory: directory)
    }

    // MARK: - Running

    /// Runs the scenario; never throws: failures to start become the result's `error`.
    func run() -> E2EScenarioResult {
        let wallStart = e2eNowMs()
        var result = E2EScenarioResult(
            file: file,
            name: scenario.name,
            sessions: scenario.sessions.count,
            updates: 0,
            invariants: [],
            wallMs: 0
        )
        defer { stopEverything() }
        do throws(CLIError) {
            try startFederation()
            for d in daemons { try startDaemon(d) }
            t0 = daemonStartTrueMs()
            try play()
            settle()
        } catch {
            result.error = error.message
        }
        stopEverything()
        let logs = collect()
        result.updates = logs.sessions.reduce(0) { $0 + $1.records.filter { $0.type == "update" && $0.applied }.count }
        result.published = logs.final.values.reduce(0) { $0 + Int($1.seq) }
        if result.error == nil {
            result.invariants = E2EInvariantChecker.check(logs, scenario: scenario)
            result.steps = E2EAssertionChecker.check(
                logs,
                scenario: scenario,
                timeScale: timeScale,
                actionTimes: actionTimes
            )
        }
        result.logFiles = scenario.sessions.map { spec in
            (spec.name, ["\(directory)/\(spec.name).jsonl", "\(directory)/\(spec.name).layout.jsonl"])
        }
        result.wallMs = e2eNowMs() - wallStart
        if result.passed && !options.keepLogs {
            try? FileManager.default.removeItem(atPath: directory)
        } else {
            // Sockets and data go; logs stay for reading.
            for d in daemons {
                unlink(d.socket)
                try? FileManager.default.removeItem(atPath: d.dataDirectory)
            }
            if let c = cluster {
                for n in 1...c.nodes { try? FileManager.default.removeItem(atPath: "\(c.directory)/n\(n)") }
            }
            result.logDirectory = directory
        }
        registry.remove(directory: directory)
        return result
    }

    private func daemonArguments(_ d: E2EDaemonSlot) -> [String] {
        var args = [
            "--socket", d.socket, "--data-dir", d.dataDirectory, "--time-scale", "\(timeScale)", "--seed", "\(seed)",
        ]
        // The backend runs on the first daemon only (README "More than one machine").
        if d === daemons[0], let s = scenario.backend.daemonArgument { args += ["--scenario", s] }
        return args + d.extraArguments
    }

    private func startDaemon(_ d: E2EDaemonSlot) throws(CLIError) {
        d.generation += 1
        let p = try DaemonProcess.start(
            arguments: daemonArguments(d),
            socket: d.socket,
            logPath: d.logPath,
            launcher: d.namespace.map { [E2ENetworkNamespace.ipBinary, "netns", "exec", $0.name] } ?? []
        )
        registry.add(p.process.processIdentifier)
        d.process = p
        d.scheduledExit = false
    }

    /// The federation's cluster (and a network namespace per daemon the scenario partitions); each daemon's
    /// `--federate` arguments.
    private func startFederation() throws(CLIError) {
        guard let f = scenario.federation else { return }
        guard E2ENATSCluster.binary != nil else { throw E2ENATSCluster.missing }
        let cut = E2EFederation.partitioned(scenario.actions)
        var host = "127.0.0.1"
        for (i, d) in daemons.enumerated() where cut.contains(d.name) {
            guard E2ENetworkNamespace.available else { throw E2ERun.partitionNeedsRoot(d.name) }
            let ns = try E2ENetworkNamespace(index: i)
            d.namespace = ns
            if host == "127.0.0.1" { host = ns.hostAddress }
        }
        cluster = try E2ENATSCluster(nodes: f.natsNodes, directory: directory + "/nats", host: host)
        for (d, spec) in zip(daemons, f.daemons) {
            d.extraArguments = [
                "--federate", spec.connect.map { cluster!.url($0) }.joined(separator: ","),
                "--federate-replicas", "\(f.replicas)",
            ]
        }
    }

    /// Why a scenario that partitions a daemon cannot run here.
    static func partitionNeedsRoot(_ daemon: String) -> CLIError {
        CLIError(
            "partitionUnavailable",
            "partitionDaemon \(daemon) needs network namespaces: root and iproute2 (/usr/sbin/ip)",
            recovery: "run livebus e2e as root (tools/setup installs iproute2), or drop the partitionDaemon actions",
            exit: .usage
        )
    }

    private func slot(_ name: String?) -> E2EDaemonSlot {
        guard let name, let d = daemons.first(where: { $0.name == name }) else { return daemons[0] }
        return d
    }

    /// The socket a phone's client connects to: the daemon's, or (in a federation) a link of the phone's own to
    /// the daemon it is placed on, which `moveSession` points at another.
    private func phoneSocket(_ name: String) -> String {
        scenario.federation == nil ? socket : "\(directory)/phone-\(name).sock"
    }

    /// Points a phone's link at a daemon's socket (atomically: a new link renamed over the old).
    private func place(_ name: String, on daemon: String) {
        placement[name] = daemon
        guard scenario.federation != nil else { return }
        let link = phoneSocket(name)
        let tmp = link + ".new"
        unlink(tmp)
        symlink(slot(daemon).socket, tmp)
        rename(tmp, link)
    }

    /// The daemon's start on the true clock (its status: `serverTime − uptimeMs`), else now.
    private func daemonStartTrueMs() -> Int64 {
        if let r = try? AdminClient.request(socket: socket, command: "status", timeoutMs: 3000), r.ok,
            case .object(let o)? = r.data, let st = o["serverTime"]?.doubleValue, let up = o["uptimeMs"]?.doubleValue
        {
            return Int64(st - up)
        }
        return e2eNowMs()
    }

    /// Wall instant (true ms) of a scenario time.
    private func wall(_ scenarioMs: Int64) -> Int64 { t0 + Int64((Double(scenarioMs) / timeScale).rounded()) }

    private func play() throws(CLIError) {
        var pendingSessions = scenario.sessions.sorted { $0.attachAtMilliseconds < $1.attachAtMilliseconds }
        var actionIndex = 0
        let end = wall(scenario.durationMilliseconds)
        while true {
            let now = e2eNowMs()
            while let s = pendingSessions.first, wall(s.attachAtMilliseconds) <= now {
                pendingSessions.removeFirst()
                try startClient(s)
            }
            while actionIndex < scenario.actions.count, wall(scenario.actions[actionIndex].atMilliseconds) <= e2eNowMs()
            {
                perform(scenario.actions[actionIndex])
                actionIndex += 1
            }
            housekeeping(actionsDone: actionIndex)
            if pendingSessions.isEmpty && actionIndex >= scenario.actions.count && e2eNowMs() >= end { break }
            var next = end
            if let s = pendingSessions.first { next = min(next, wall(s.attachAtMilliseconds)) }
            if actionIndex < scenario.actions.count {
                next = min(next, wall(scenario.actions[actionIndex].atMilliseconds))
            }
            let wait = max(0, min(next - e2eNowMs(), 20))
            if wait > 0 { usleep(useconds_t(wait * 1000)) }
        }
    }

    /// Polls the backend and the daemon's memory every 150 ms; notices processes that ended on their own.
    private func housekeeping(actionsDone: Int) {
        let now = e2eNowMs()
        guard now - lastPollMs >= 150 else { return }
        lastPollMs = now
        var polled = false
        for slot in daemons {
            guard let d = slot.process else { continue }
            if !d.process.isRunning {
                if !slot.scheduledExit {
                    daemonLog.exits.append(
                        .init(
                            trueTime: now,
                            scheduled: false,
                            description:
                                "\(slot.name.isEmpty ? "" : "\(slot.name): ")\(Self.describe(d.process)); log: \(e2eTail(slot.logPath))"
                        )
                    )
                }
                registry.remove(d.process.processIdentifier)
                slot.process = nil
            } else {
                if let kib = e2eResidentKiB(d.process.processIdentifier) { daemonLog.rssKiB.append((now, kib)) }
                polled = true
            }
        }
        if polled { pollBackend() }
        for c in clients.values where c.earlyExit == nil && !c.process.isRunning {
            c.earlyExit =
                "\(Self.describe(c.process)) on its own at +\(Double(now - t0) / 1000) s; stderr: \(e2eTail(c.errPath))"
        }
        // Every second on a terminal (one line, rewritten), every 5 s in a log.
        if options.progress && now - lastProgressMs >= (isatty(2) == 1 ? 1000 : 5000) {
            lastProgressMs = now
            let rss = daemonLog.rssKiB.last.map { "\($0.kib / 1024) MiB" } ?? "–"
            let line =
                "  \(scenario.name): +\(String(format: "%.1f", Double(now - t0) / 1000)) s of \(String(format: "%.1f", Double(scenario.durationMilliseconds) / timeScale / 1000)) s · \(clients.count)/\(scenario.sessions.count) sessions · actions \(actionsDone)/\(scenario.actions.count) · livebusd \(rss)"
            if isatty(2) == 1 {
                StandardStream.write(Array("\r\u{1B}[K\(line)".utf8), to: 2)
            } else {
                StandardStream.write(Array("\(line)\n".utf8), to: 2)
            }
        }
    }

    private static func describe(_ p: Process) -> String {
        guard !p.isRunning else { return "running" }
        return p.terminationReason == .uncaughtSignal
            ? "killed by signal \(p.terminationStatus)" : "exited with status \(p.terminationStatus)"
    }

    /// `order.list` of every running daemon (each lists the orders created on it), merged: the backend's state per
    /// order, or nil when no daemon answered. A daemon that does not answer (killed) counts with its last answer.
    private func fetchOrders(timeoutMs: UInt64) -> [String: E2EBackendObservation]? {
        var merged: [String: E2EBackendObservation] = [:]
        var answered = false
        for d in daemons {
            if d.process != nil, let o = fetchOrders(d.socket, timeoutMs: timeoutMs) {
                d.orders = o
                answered = true
            }
            merged.merge(d.orders) { a, b in a.seq >= b.seq ? a : b }
        }
        return answered ? merged : nil
    }

    /// One daemon's `order.list`, or nil when it did not answer.
    private func fetchOrders(_ socket: String, timeoutMs: UInt64) -> [String: E2EBackendObservation]? {
        guard let list = try? AdminClient.allOrders(socket: socket, timeoutMs: timeoutMs) else { return nil }
        let now = e2eNowMs()
        var latest: [String: E2EBackendObservation] = [:]
        for item in list {
            guard case .object(let o) = item, let id = o["id"]?.stringValue, let status = o["status"]?.stringValue,
                let eta = o["etaTarget"]?.doubleValue, let lc = o["lastConfirmed"]?.doubleValue
            else { continue }
            latest[id] = E2EBackendObservation(
                trueTime: now,
                order: id,
                status: status,
                seq: UInt64(max(0, o["sequence"]?.doubleValue ?? 0)),
                etaTarget: Int64(eta),
                lastConfirmed: Int64(lc)
            )
        }
        return latest
    }

    /// Polls the backend: records every order's state as an observation and as the latest `final`.
    @discardableResult
    private func pollBackend(timeoutMs: UInt64 = 2000) -> Bool {
        guard let latest = fetchOrders(timeoutMs: timeoutMs) else { return false }
        for o in latest.values.sorted(by: { $0.order < $1.order }) where o.seq > 0 { observations.append(o) }
        final = latest
        return true
    }

    // MARK: - Clients

    private func clientArguments(_ s: E2ESessionSpec) -> (String, [String]) {
        var args = [
            "--socket", phoneSocket(s.name), "--name", s.name, "--device", s.device, "--posture", s.posture.foldState,
            "--orientation", s.posture.orientation, "--app-state", s.appState,
            "--clock-skew=\(s.clockSkewMilliseconds)ms", "--clock-drift=\(s.clockDriftPPM)",
        ]
        if let w = s.posture.windowWidth, let h = s.posture.windowHeight {
            args += ["--window", "\(Self.points(w))x\(Self.points(h))"]
        }
        if let os = s.os { args += ["--os", os] }
        switch s.client {
        case .swift:
            return (E2ERun.livebusBinary(), ["attach", "--json"] + args)
        case .python:
            return (
                "/usr/bin/env",
                ["python3", options.pythonClient ?? "tools/pyclient/livebus_client.py", "attach", "--ack"] + args
            )
        }
    }

    static func points(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }

    /// The running `livebus` binary, resolved once (a rebuild while the suite runs replaces the file; the path stays).
    static let livebusPath: String = {
        var path =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        if path.hasSuffix(" (deleted)") { path = String(path.dropLast(" (deleted)".count)) }
        return path
    }()

    /// The running `livebus` binary.
    static func livebusBinary() -> String { livebusPath }

    private func startClient(_ s: E2ESessionSpec) throws(CLIError) {
        // A phone moved before it started attaches where it was moved to.
        place(s.name, on: placement[s.name] ?? scenario.daemon(of: s) ?? "")
        let (exe, args) = clientArguments(s)
        let logPath = "\(directory)/\(s.name).jsonl"
        let errPath = "\(directory)/\(s.name).err"
        let layoutPath = "\(directory)/\(s.name).layout.jsonl"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        p.environment = ConfigFile.privateEnvironment()
        p.standardOutput = FileHandle(forWritingAtPath: logPath)
        p.standardError = FileHandle(forWritingAtPath: errPath)
        p.standardInput = FileHandle.nullDevice
        let started = e2eNowMs()
        do { try p.run() } catch {
            throw CLIError(
                "internal",
                "cannot start session \(s.name) (\(exe) \(args.joined(separator: " "))): \(error)",
                exit: .usage
            )
        }
        registry.add(p.processIdentifier)
        clients[s.name] = E2EClientProcess(
            spec: E2ESessionSpecView(name: s.name, arguments: args, executable: exe),
            process: p,
            logPath: logPath,
            errPath: errPath,
            layoutPath: layoutPath,
            startedTrueMs: started
        )
        postures[s.name] = s.posture
        recordLayout(s.name, posture: s.posture, at: started)
    }

    /// Lays the phone out as the layout engine does for `posture` and logs the outcome (the runner's layout log).
    private func recordLayout(_ name: String, posture: E2EPosture, at trueMs: Int64) {
        guard let spec = scenario.sessions.first(where: { $0.name == name }) else { return }
        let key =
            "\(spec.device)/\(posture.foldState)/\(posture.orientation)/\(posture.windowWidth ?? 0)x\(posture.windowHeight ?? 0)/\(spec.language)/\(spec.os ?? "newest")"
        var fields: [String: JSONValue] = layoutCache[key] ?? [:]
        if fields.isEmpty {
            do throws(LayoutError) {
                let request = Self.layoutRequest(spec, posture)
                let (_, result) = try OfflineLayout.run(request, catalog: options.catalog)
                fields["invariants"] = .array(
                    result.invariants.map {
                        .object(["name": .string($0.name), "holds": .bool($0.holds), "detail": .string($0.detail)])
                    }
                )
                // What assertion steps read: arrangement, size class, the named rects, what overflows.
                fields["arrangement"] = .string(result.arrangement.rawValue)
                fields["horizontalSizeClass"] = .string(result.horizontalSizeClass.rawValue)
                var rects: [String: JSONValue] = [:]
                for n in result.rects where rects[n.name] == nil {
                    rects[n.name] = .array([n.rect.x, n.rect.y, n.rect.width, n.rect.height].map { .number($0) })
                }
                fields["rects"] = .object(rects)
                fields["overflow"] = .array(LiveActivityLayout.overflowLines(result.truncations).map { .string($0) })
            } catch {
                fields["invariants"] = .array([
                    .object([
                        "name": .string("postureResolves"), "holds": .bool(false), "detail": .string(error.message),
                    ])
                ])
            }
            layoutCache[key] = fields
        }
        var p: [String: JSONValue] = [
            "foldState": .string(posture.foldState), "orientation": .string(posture.orientation),
        ]
        if let w = posture.windowWidth, let h = posture.windowHeight {
            p["windowWidth"] = .number(w)
            p["windowHeight"] = .number(h)
        }
        var o = fields
        o["type"] = .string("layout")
        o["session"] = .string(name)
        o["device"] = .string(spec.device)
        o["trueTime"] = .number(Double(trueMs))
        o["posture"] = .object(p)
        o["source"] = .string("runner")
        let line: JSONValue = .object(o)
        if let bytes = try? WireJSON.encode(line) {
            layouts[name, default: []].append(String(decoding: bytes, as: UTF8.self))
        }
    }

    static func layoutRequest(_ spec: E2ESessionSpec, _ posture: E2EPosture) -> OfflineLayoutRequest {
        let ko = spec.language == "ko"
        return OfflineLayoutRequest(
            deviceID: spec.device,
            foldState: FoldState(rawValue: posture.foldState) ?? .flat,
            orientation: Orientation(rawValue: posture.orientation) ?? .portrait,
            windowSize: posture.windowWidth.flatMap { w in posture.windowHeight.map { Size(width: w, height: $0) } },
            screen: .overlay,
            liveActivity: LiveActivityContent(
                statusText: ko ? "배달 중" : "Delivering",
                statusSymbol: "bicycle",
                timerText: "1:27",
                progress: 0.6,
                lastConfirmedText: ko ? "마지막 확인 12:03" : "Last confirmed 12:03"
            ),
            osVersion: (try? OSVersion.parse(spec.os ?? "newest")) ?? .newest
        )
    }

    // MARK: - Actions

    private func admin(_ command: String, _ args: [String: JSONValue], socket: String? = nil) -> (
        ok: Bool, data: JSONValue?, message: String
    ) {
        do {
            let r = try AdminClient.request(
                socket: socket ?? self.socket,
                command: command,
                args: args,
                timeoutMs: 5000
            )
            if r.ok { return (true, r.data, "ok") }
            let e = r.error
            return (false, nil, "\(e?.code ?? "error"): \(e?.message ?? "refused")")
        } catch {
            return (false, nil, "\(error.code): \(error.message)")
        }
    }

    private static func posture(_ p: E2EPosture) -> JSONValue {
        var o: [String: JSONValue] = ["foldState": .string(p.foldState), "orientation": .string(p.orientation)]
        if let w = p.windowWidth, let h = p.windowHeight {
            o["windowWidth"] = .number(w)
            o["windowHeight"] = .number(h)
        }
        return .object(o)
    }

    private func sessionArgument(_ t: E2ESessionTarget) -> [String] {
        switch t {
        // In a federation each phone's command goes to the daemon it is attached to.
        case .all: scenario.federation == nil ? ["all"] : scenario.sessionNames(for: t)
        case .named: scenario.sessionNames(for: t)
        }
    }

    private func perform(_ a: E2EAction) {
        let now = e2eNowMs()
        var outcome = E2EActionOutcome(
            line: a.line,
            atMilliseconds: a.atMilliseconds,
            description: a.typeName,
            ok: true
        )
        var failedSessions: Set<String> = []
        func run(_ command: String, _ args: [String: JSONValue], on daemon: String? = nil) -> JSONValue? {
            // A command about one phone goes to the daemon the phone is attached to.
            var target = daemon.map { slot($0).socket }
            if target == nil, let n = args["session"]?.stringValue, let d = placement[n] { target = slot(d).socket }
            let r = admin(command, args, socket: target)
            if !r.ok {
                outcome.ok = false
                outcome.message = outcome.message.isEmpty ? r.message : outcome.message
            }
            // Relayed commands (session.clock) answer per phone: {"results": [{session, ok, error?}]}.
            if case .object(let o)? = r.data, case .array(let results)? = o["results"] {
                for case .object(let one) in results where one["ok"]?.boolValue != true {
                    let name = one["session"]?.stringValue ?? "?"
                    failedSessions.insert(name)
                    var why = "refused"
                    if case .object(let e)? = one["error"] {
                        why = "\(e["code"]?.stringValue ?? "error"): \(e["message"]?.stringValue ?? "")"
                    }
                    outcome.ok = false
                    if outcome.message.isEmpty { outcome.message = "phone \(name) answered \(why)" }
                }
            }
            return r.data
        }
        waitUntilAttached(a)
        switch a.kind {
        case .posture(let t, let p):
            outcome.description = "posture \(t) → \(p.foldState)/\(p.orientation)"
            for s in sessionArgument(t) {
                _ = run("session.posture", ["session": .string(s), "posture": Self.posture(p)])
            }
            if outcome.ok {
                outcome.postureTargets = scenario.sessionNames(for: t).filter { clients[$0] != nil }
                for n in outcome.postureTargets {
                    postures[n] = p
                    recordLayout(n, posture: p, at: now)
                }
            }
        case .appState(let t, let state):
            outcome.description = "appState \(t) → \(state)"
            for s in sessionArgument(t) {
                _ = run("session.app-state", ["session": .string(s), "appState": .string(state)])
            }
        case .createOrder(let id, let customer, let daemon, let expect):
            outcome.description =
                "createOrder \(id ?? "")" + (daemon.map { " on \($0)" } ?? "")
                + (expect == .created ? "" : " (expect \(expect.rawValue))")
            var args: [String: JSONValue] = [:]
            if let id { args["id"] = .string(id) }
            if let customer { args["customer"] = .string(customer) }
            let r = admin("order.create", args, socket: daemon.map { slot($0).socket })
            // A daemon cut off from its cluster refuses: `storeUnavailable` naming `federationUnavailable`.
            let refused = !r.ok && r.message.contains("federationUnavailable")
            switch (expect, r.ok, refused) {
            case (.created, true, _), (.any, true, _), (.any, false, true), (.federationUnavailable, false, true):
                outcome.message = r.ok ? "created" : "refused as expected: \(r.message)"
            default:
                outcome.ok = false
                outcome.message = "expected \(expect.rawValue), got \(r.ok ? "created" : r.message)"
            }
        case .cancelOrder(let order, let expect, let daemon):
            outcome.description =
                "cancelOrder \(order) (expect \(expect.rawValue))" + (daemon.map { " on \($0)" } ?? "")
            let r = admin("order.cancel", ["order": .string(order)], socket: daemon.map { slot($0).socket })
            let got: String =
                r.ok
                ? "canceled"
                : r.message.hasPrefix("cancelFailed")
                    ? "cancelFailed" : r.message.contains("federationUnavailable") ? "federationUnavailable" : "error"
            switch (expect, got) {
            case (.any, "canceled"), (.any, "cancelFailed"), (.canceled, "canceled"), (.cancelFailed, "cancelFailed"),
                (.federationUnavailable, "federationUnavailable"):
                outcome.message = got
            default:
                outcome.ok = false
                outcome.message = "expected \(expect.rawValue), got \(r.ok ? "canceled" : r.message)"
            }
        case .backendStall(let order, let d, let daemon):
            outcome.description = "backendStall \(order ?? "all") \(d) ms" + (daemon.map { " on \($0)" } ?? "")
            var args: [String: JSONValue] = ["durationMs": .number((Double(d) / timeScale).rounded())]
            if let order { args["order"] = .string(order) }
            _ = run("backend.stall", args, on: daemon)
        case .addToxic(let x):
            outcome.description = "addToxic \(x.label) (\(x.toxic) \(x.direction))"
            // fault.add {"toxic": {id, kind, direction, toxicity, params}, "session"? | "scope"?, "seed"?}
            // (PROTOCOL.md §8, FAULTS.md).
            var args: [String: JSONValue] = [
                "toxic": .object([
                    "id": .string(x.label), "kind": .string(x.toxic), "direction": .string(x.direction),
                    "toxicity": .number(x.toxicity ?? 1),
                    "params": .object(x.params.mapValues { .number($0) }),
                ]),
                "seed": .number(Double(x.seed ?? seed)),
            ]
            switch x.target {
            case .session(let s): args["session"] = .string(s)
            case .scope(let s): args["scope"] = .string(s)
            }
            if case .session(let s) = x.target, let d = placement[s] { toxicDaemons[x.label] = d }
            if case .object(let o)? = run("fault.add", args), let id = o["id"] { toxicIDs[x.label] = id }
        case .removeToxic(let label):
            outcome.description = "removeToxic \(label ?? "all")"
            if let label {
                if let id = toxicIDs[label] {
                    _ = run("fault.remove", ["id": id], on: toxicDaemons[label])
                } else {
                    outcome.ok = false
                    outcome.message = "toxic '\(label)' was never added (its addToxic failed)"
                }
            } else {
                for d in daemons where d.process != nil { _ = run("fault.remove", ["all": .bool(true)], on: d.name) }
            }
        case .clock(let t, let step, let drift):
            outcome.description =
                "clock \(t)" + (step.map { " step \($0) ms" } ?? "") + (drift.map { " drift \($0) ppm" } ?? "")
            var viaCommand: [String] = []
            for n in scenario.sessionNames(for: t) {
                // The Python client steps its clock +30 s on SIGUSR2 (its documented interface) and does not
                // take relayed session.clock commands.
                if let c = clients[n], scenario.sessions.first(where: { $0.name == n })?.client == .python,
                    step == 30_000, drift == nil
                {
                    kill(c.process.processIdentifier, SIGUSR2)
                } else {
                    viaCommand.append(n)
                }
            }
            let everyone = Set(scenario.sessionNames(for: t))
            let names =
                Set(viaCommand) == everyone && t == .all && scenario.federation == nil ? ["all"] : viaCommand
            for s in names {
                var args: [String: JSONValue] = ["session": .string(s)]
                if let step { args["stepMs"] = .number(Double(step)) }
                if let drift { args["driftPPM"] = .number(drift) }
                _ = run("session.clock", args)
            }
            // A phone that did not answer is named by id: then none of the addressed phones is trusted to have
            // stepped.
            if !failedSessions.isSubset(of: everyone) { failedSessions.formUnion(viaCommand) }
            // The phones that answered ok stepped their clocks; the model follows them.
            for n in scenario.sessionNames(for: t) where !failedSessions.contains(n) && clients[n] != nil {
                clockEvents[n, default: []].append(
                    E2EClockEvent(trueTime: now, stepMilliseconds: step ?? 0, driftPPM: drift)
                )
            }
        case .killDaemon(let name):
            let slot = slot(name)
            outcome.description = "killDaemon\(slot.name.isEmpty ? "" : " " + slot.name) (kill -9)"
            if let d = slot.process {
                slot.scheduledExit = true
                kill(d.process.processIdentifier, SIGKILL)
                d.process.waitUntilExit()
                registry.remove(d.process.processIdentifier)
                daemonLog.exits.append(
                    .init(
                        trueTime: e2eNowMs(),
                        scheduled: true,
                        description: "\(slot.name.isEmpty ? "" : "\(slot.name): ")kill -9 (scheduled)"
                    )
                )
                slot.process = nil
            } else {
                outcome.ok = false
                outcome.message = "\(slot.label) is not running"
            }
        case .restartDaemon(let name):
            let slot = slot(name)
            outcome.description = "restartDaemon\(slot.name.isEmpty ? "" : " " + slot.name)"
            do throws(CLIError) {
                try startDaemon(slot)
                daemonLog.restarts.append(e2eNowMs())
            } catch {
                outcome.ok = false
                outcome.message = error.message
            }
        case .moveSession(let t, let to):
            outcome.description = "moveSession \(t) → \(to)"
            for n in scenario.sessionNames(for: t) {
                if clients[n] != nil {
                    move(n, to: to, outcome: &outcome)
                } else {
                    // Not started yet (a later attachAt): it will attach there.
                    placement[n] = to
                    moves[n, default: []].append(E2EDaemonMove(trueTime: e2eNowMs(), daemon: to))
                }
            }
        case .killNats(let node):
            outcome.description = "killNats \(node) (kill -9)"
            if cluster?.kill9(node) != true {
                outcome.ok = false
                outcome.message = "NATS node \(node) is not running"
            }
        case .restartNats(let node):
            outcome.description = "restartNats \(node)"
            do throws(CLIError) {
                guard let c = cluster else { throw E2ENATSCluster.missing }
                try c.start(node)
                try c.waitReady(node, timeoutMs: 30_000)
            } catch {
                outcome.ok = false
                outcome.message = error.message
            }
        case .suspendNats(let node), .resumeNats(let node):
            let stop: Bool
            if case .suspendNats = a.kind { stop = true } else { stop = false }
            outcome.description = "\(stop ? "suspendNats" : "resumeNats") \(node) (\(stop ? "SIGSTOP" : "SIGCONT"))"
            if cluster?.freeze(node, stop) != true {
                outcome.ok = false
                outcome.message = "NATS node \(node) is not running"
            }
        case .partitionDaemon(let name), .healDaemon(let name):
            let cut: Bool
            if case .partitionDaemon = a.kind { cut = true } else { cut = false }
            let slot = slot(name)
            outcome.description = "\(cut ? "partitionDaemon" : "healDaemon") \(name)"
            do throws(CLIError) {
                guard let ns = slot.namespace else { throw E2ERun.partitionNeedsRoot(name) }
                if cut { try ns.cut() } else { try ns.heal() }
                slot.partitioned = cut
                // The partition has taken effect once the daemon has seen its NATS link go (libnats' PING every
                // 1 s, stale after 2 unanswered: about 3 s); later actions (a publish that must be refused) rely
                // on it, so the timeline waits for it rather than for a fixed delay.
                if cut, let state = waitForFederationLoss(slot, timeoutMs: 15_000) {
                    outcome.ok = false
                    outcome.message =
                        "\(slot.label) still reports its federation \(state) 15 s after the cut (livebus status)"
                }
            } catch {
                outcome.ok = false
                outcome.message = error.message
            }
        case .suspendClient(let t):
            outcome.description = "suspendClient \(t) (SIGSTOP)"
            for n in scenario.sessionNames(for: t) {
                if let c = clients[n] {
                    kill(c.process.processIdentifier, SIGSTOP)
                    c.suspended = true
                }
            }
        case .resumeClient(let t):
            outcome.description = "resumeClient \(t) (SIGCONT)"
            for n in scenario.sessionNames(for: t) {
                if let c = clients[n] {
                    kill(c.process.processIdentifier, SIGCONT)
                    c.suspended = false
                }
            }
        }
        // `after` steps look from when the daemon answered (the action took effect).
        if let id = a.id { actionTimes[id] = e2eNowMs() }
        outcomes.append(outcome)
    }

    /// Moves a phone to another daemon of the federation: its link points there, the daemon it was attached to
    /// closes its connection (`reset_peer` at once, removed once the phone is attached elsewhere), and the client
    /// reconnects through the link and resumes with its token (PROTOCOL.md §5.8).
    private func move(_ name: String, to: String, outcome: inout E2EActionOutcome) {
        let from = slot(placement[name])
        place(name, on: to)
        moves[name, default: []].append(E2EDaemonMove(trueTime: e2eNowMs(), daemon: to))
        // A phone of a killed daemon reconnects through its link by itself.
        guard from.name != to, from.process != nil else { return }
        let label = "move-\(name)-\(moves[name]?.count ?? 0)"
        let r = admin(
            "fault.add",
            [
                "toxic": .object([
                    "id": .string(label), "kind": .string("reset_peer"), "direction": .string("down"),
                    "toxicity": .number(1), "params": .object(["timeoutMs": .number(0)]),
                ]),
                "session": .string(name),
            ],
            socket: from.socket
        )
        guard r.ok, case .object(let o)? = r.data, let id = o["id"] else {
            outcome.ok = false
            if outcome.message.isEmpty {
                outcome.message = "\(from.label) did not close \(name)'s connection: \(r.message)"
            }
            return
        }
        let target = slot(to)
        let deadline = e2eNowMs() + 10_000
        while e2eNowMs() < deadline && target.process != nil && !sessionsListed(on: target).contains(name) {
            usleep(50_000)
        }
        _ = admin("fault.remove", ["id": id], socket: from.socket)
        if target.process != nil && !sessionsListed(on: target).contains(name) {
            outcome.ok = false
            if outcome.message.isEmpty { outcome.message = "\(name) did not attach to \(to) within 10 s" }
        }
    }

    /// Waits (at most `timeoutMs`) until a daemon's `status` shows its federation link other than `connected`.
    /// - Returns: nil once it does, else the last state seen (`connected`, or `no answer`).
    private func waitForFederationLoss(_ d: E2EDaemonSlot, timeoutMs: Int64) -> String? {
        let deadline = e2eNowMs() + timeoutMs
        var last = "no answer"
        while e2eNowMs() < deadline && d.process != nil {
            if let r = try? AdminClient.request(socket: d.socket, command: "status", timeoutMs: 2000), r.ok,
                case .object(let o)? = r.data, case .object(let f)? = o["federation"],
                let state = f["state"]?.stringValue
            {
                if state != "connected" { return nil }
                last = state
            }
            usleep(100_000)
        }
        return last
    }

    /// The phones a daemon's `status` lists as attached.
    private func sessionsListed(on d: E2EDaemonSlot) -> Set<String> {
        guard d.process != nil,
            let r = try? AdminClient.request(socket: d.socket, command: "status", timeoutMs: 2000), r.ok,
            case .object(let o)? = r.data, case .array(let list)? = o["sessions"]
        else { return [] }
        var names: Set<String> = []
        for case .object(let s) in list where s["role"]?.stringValue == "session" {
            if let n = s["name"]?.stringValue { names.insert(n) }
        }
        return names
    }

    private var attached: Set<String> = []

    /// Before an action addressed to sessions, waits (at most 10 s) until the daemon lists them, so that a fast
    /// time scale does not outrun the clients' start-up.
    private func waitUntilAttached(_ a: E2EAction) {
        let target: E2ESessionTarget
        switch a.kind {
        case .posture(let t, _), .appState(let t, _), .clock(let t, _, _), .moveSession(let t, _): target = t
        // A phone stopped before it attached would connect only when continued: the slow consumer it stands for is
        // one that attached and then stopped reading.
        case .suspendClient(let t): target = t
        case .addToxic(let x):
            guard case .session(let n) = x.target else { return }
            target = .named(n)
        default: return
        }
        let wanted = Set(scenario.sessionNames(for: target).filter { clients[$0] != nil })
        let deadline = e2eNowMs() + 10_000
        while !wanted.isSubset(of: attached) && e2eNowMs() < deadline && anyDaemon {
            for d in daemons { attached.formUnion(sessionsListed(on: d)) }
            if !wanted.isSubset(of: attached) { usleep(50_000) }
        }
        // The first action addressed to a session also waits (within the same 10 s) until the session has processed
        // what the backend had published when it attached: a replay still in flight must not be overtaken (an app
        // sent to the background before its replayed start arrives refuses the start, as iOS does).
        // A phone being moved, or one whose daemon is not running, cannot catch up where it is: waiting for it
        // would only hold back the timeline (up to 10 s; every later action would then run late, one after another).
        if case .moveSession = a.kind { return }
        let fresh = wanted.subtracting(caughtUp).filter { slot(placement[$0]).process != nil }
        guard !fresh.isEmpty, let published = fetchOrders(timeoutMs: 2000) else { return }
        for name in fresh.sorted() {
            guard let c = clients[name] else { continue }
            while e2eNowMs() < deadline && anyDaemon {
                let seen = Self.sequencesProcessed(inLog: c.logPath)
                if published.values.allSatisfy({ $0.seq == 0 || (seen[$0.order] ?? 0) >= $0.seq }) { break }
                usleep(50_000)
            }
            caughtUp.insert(name)
        }
    }

    private var caughtUp: Set<String> = []

    /// Order → the highest sequence a phone's JSON-lines log shows it processed (applied or refused).
    static func sequencesProcessed(inLog path: String) -> [String: UInt64] {
        var seen: [String: UInt64] = [:]
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return seen }
        for line in text.split(separator: "\n") where line.contains("\"seq\"") {
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let type = o["type"] as? String, type == "update" || type == "reconvert",
                let order = o["order"] as? String, let seq = (o["seq"] as? NSNumber)?.uint64Value
            else { continue }
            seen[order] = max(seen[order] ?? 0, seq)
        }
        return seen
    }

    // MARK: - End

    /// Waits (at most the scenario's settle time) until the backend shows the scenario's `expect.finalStatus` and
    /// every session processed the backend's last sequence. Waiting for the expected statuses too keeps a daemon
    /// whose timeline runs a little behind the runner's clock (a loaded machine) from being judged while the last
    /// status is still due: `demo-120s` delivers at 120 s of a 125 s scenario, 0.5 s of wall time before the end at
    /// 10×. The check itself is unchanged; a backend that never gets there still fails it after the settle time.
    private func settle() {
        for c in clients.values where c.suspended {
            kill(c.process.processIdentifier, SIGCONT)
            c.suspended = false
        }
        let deadline = e2eNowMs() + scenario.settleMilliseconds
        while e2eNowMs() < deadline {
            housekeeping(actionsDone: scenario.actions.count)
            guard anyDaemon, pollBackend() else {
                usleep(100_000)
                continue
            }
            if reachedExpectedStatuses() && converged() { break }
            usleep(200_000)
        }
        // The backend's final state, however busy the daemon is (a failed poll must not leave an old `final`).
        var finalOK = false
        for _ in 0..<3 where anyDaemon && !finalOK {
            finalOK = pollBackend(timeoutMs: 10_000)
        }
        if !finalOK {
            outcomes.append(
                E2EActionOutcome(
                    line: 0,
                    atMilliseconds: scenario.durationMilliseconds,
                    description: "final order.list",
                    ok: false,
                    message:
                        "the daemon did not answer order.list within 3 × 10 s (or its answer exceeded the frame limit)"
                )
            )
        }
        if options.progress && isatty(2) == 1 { StandardStream.err("\r\u{1B}[K") }
    }

    /// Whether the last poll shows every order of `expect.finalStatus` in its expected status.
    private func reachedExpectedStatuses() -> Bool {
        scenario.expect.finalStatus.allSatisfy { final[$0.key]?.status == $0.value }
    }

    /// Whether every phone processed the backend's last sequence of every order and, for the orders of
    /// `expect.finalStatus`, shows the backend's status: a federated daemon's `order.list` can show the simulator's
    /// new status while the event that carries it is still being stored (a frozen or re-electing NATS node), and
    /// the phones get it only once it is.
    private func converged() -> Bool {
        let targets = final.mapValues(\.seq)
        for c in clients.values {
            var s = E2ESessionLog(name: c.spec.name)
            s.appendLog((try? String(contentsOfFile: c.logPath, encoding: .utf8)) ?? "")
            var last: [String: UInt64] = [:]
            var status: [String: String] = [:]
            for r in s.records where r.type == "update" {
                last[r.order] = max(last[r.order] ?? 0, r.seq)
                if r.applied { status[r.order] = r.status }
            }
            for (order, seq) in targets where (last[order] ?? 0) < seq { return false }
            for (order, want) in scenario.expect.finalStatus where status[order] != want { return false }
        }
        return true
    }

    /// Stops every client (SIGTERM, then SIGKILL after 5 s) and the daemon (SIGTERM); idempotent.
    private func stopEverything() {
        let list = Array(clients.values)
        for c in list where c.process.isRunning {
            if c.suspended { kill(c.process.processIdentifier, SIGCONT) }
            if c.earlyExit == nil {
                c.process.terminate()
            }
        }
        let deadline = e2eNowMs() + 5000
        for c in list {
            while c.process.isRunning && e2eNowMs() < deadline { usleep(10_000) }
            if c.process.isRunning { kill(c.process.processIdentifier, SIGKILL) }
            c.process.waitUntilExit()
            registry.remove(c.process.processIdentifier)
        }
        // Where the backend is after the clients stopped (it may have published meanwhile).
        if anyDaemon, finalAfterStop.isEmpty { finalAfterStop = fetchOrders(timeoutMs: 10_000) ?? [:] }
        for slot in daemons {
            guard let d = slot.process else { continue }
            slot.scheduledExit = true
            d.stop()
            registry.remove(d.process.processIdentifier)
            let clean = d.process.terminationReason == .exit && d.process.terminationStatus == 0
            let who = slot.name.isEmpty ? "" : "\(slot.name): "
            daemonLog.exits.append(
                .init(
                    trueTime: e2eNowMs(),
                    scheduled: clean,
                    description: clean
                        ? "\(who)SIGTERM at the end, exit 0"
                        : "\(who)did not stop cleanly on SIGTERM: \(Self.describe(d.process)); log: \(e2eTail(slot.logPath))"
                )
            )
            slot.process = nil
        }
        cluster?.stop()
        for d in daemons {
            d.namespace?.remove()
            d.namespace = nil
        }
    }

    /// Reads every log into the checker's input.
    private func collect() -> E2ERunLogs {
        var sessions: [E2ESessionLog] = []
        for spec in scenario.sessions {
            var s = E2ESessionLog(
                name: spec.name,
                client: spec.client,
                clockSkewMilliseconds: spec.clockSkewMilliseconds,
                clockDriftPPM: spec.clockDriftPPM,
                clockEpochTrueMs: clients[spec.name]?.startedTrueMs ?? t0,
                clockEvents: clockEvents[spec.name] ?? []
            )
            s.daemon = scenario.daemon(of: spec)
            s.moves = moves[spec.name] ?? []
            if let c = clients[spec.name] {
                s.appendLog(
                    (try? String(contentsOfFile: c.logPath, encoding: .utf8)) ?? "",
                    file: "\(spec.name).jsonl"
                )
                let layoutText = (layouts[spec.name] ?? []).joined(separator: "\n")
                try? layoutText.write(toFile: c.layoutPath, atomically: true, encoding: .utf8)
                s.appendLog(layoutText, file: "\(spec.name).layout.jsonl")
                if let e = c.earlyExit {
                    s.abnormalExit = e
                } else if c.process.terminationReason == .uncaughtSignal && c.process.terminationStatus != SIGTERM {
                    s.abnormalExit = "\(Self.describe(c.process)) when stopped; stderr: \(e2eTail(c.errPath))"
                } else if c.process.terminationReason == .exit && c.process.terminationStatus != 0 {
                    s.abnormalExit = "\(Self.describe(c.process)) when stopped; stderr: \(e2eTail(c.errPath))"
                }
            } else {
                s.abnormalExit = "never started"
            }
            sessions.append(s)
        }
        let (timelineStatuses, staleAfter) = backendKnowledge()
        var logs = E2ERunLogs(
            sessions: sessions,
            observations: observations,
            final: final,
            timelineStatuses: timelineStatuses,
            staleAfterMs: staleAfter,
            daemon: daemonLog,
            actions: outcomes,
            startTrueMs: t0,
            endTrueMs: e2eNowMs()
        )
        logs.finalAfterStop = finalAfterStop
        return logs
    }

    /// What the backend timeline publishes: statuses per order, and stale-after per status in wall ms.
    private func backendKnowledge() -> ([String: Set<String>], [String: Int64]) {
        let timeline: Scenario?
        switch scenario.backend {
        case .none: timeline = nil
        case .builtin(let n): timeline = try? Scenario.builtIn(named: n)
        case .timeline(let p): timeline = try? Scenario.load(contentsOf: p)
        case .random(let k): timeline = Scenario.random(orders: k, seed: seed)
        }
        var staleScenarioMs: [String: Int64] = [:]
        for (k, v) in timeline?.settings.staleAfterMs ?? ScenarioSettings.defaultStaleAfterMs {
            staleScenarioMs[k.rawValue] = v
        }
        var statuses: [String: Set<String>] = [:]
        for e in timeline?.timeline ?? [] {
            switch e.action {
            case .createOrder(let spec): statuses[spec.id, default: []].insert("created")
            case .setStatus(let id, let status, _, _, _, _): statuses[id, default: []].insert(status.rawValue)
            case .cancelRequest(let id, true, _): statuses[id, default: []].insert("canceled")
            default: break
            }
        }
        return (statuses, staleScenarioMs.mapValues { Int64((Double($0) / timeScale).rounded()) })
    }
}
