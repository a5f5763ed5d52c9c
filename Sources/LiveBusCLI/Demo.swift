import Foundation
import LiveBusClient
import LiveBusDaemon
import LiveBusLoop
import LiveBusSimulator
import LiveBusWire

/// `livebus demo`: starts a private daemon playing `demo-120s`, attaches three phones, shows them live, and exits 0
/// once every phone shows the order delivered.
enum DemoCommand {
    static func run(_ argv: [String], json: Bool) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "demo",
            options: ["time-scale", "seed", "scenario", "record"],
            flags: ["json"]
        )
        try a.allowPositionals(0)
        let scale = try a.double("time-scale", default: 10, in: DeliverySimulator.timeScaleRange)
        let seed = try a.uint("seed", default: 1)
        let scenario = a.value("scenario") ?? "demo-120s"
        // A Ctrl-C while the daemon starts (before the loop watches signals) is remembered, not fatal, so the
        // private directory is removed on every path.
        demoInterruptedEarly = 0
        signal(SIGINT) { _ in demoInterruptedEarly = 1 }
        signal(SIGTERM) { _ in demoInterruptedEarly = 1 }
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var dirTemplate = Array("\(base)/livebus-demo-XXXXXX".utf8CString)
        guard let dirPtr = mkdtemp(&dirTemplate) else {
            throw CLIError("internal", "cannot create a temporary directory under \(base)", exit: .usage)
        }
        let dir = String(cString: dirPtr)
        let socket = dir + "/bus.sock"
        let logPath = dir + "/livebusd.log"
        // The directory (socket, daemon log, data dir) is removed on every exit: success, failure, Ctrl-C.
        // Messages never point into it; a failure quotes the log's last lines instead.
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let daemon: DaemonProcess
        do {
            daemon = try DaemonProcess.start(
                arguments: [
                    "--socket", socket, "--scenario", scenario, "--time-scale", "\(scale)", "--seed", "\(seed)",
                ],
                socket: socket,
                logPath: logPath
            )
        } catch {
            if demoInterruptedEarly != 0 { throw Self.interrupted }
            throw error
        }
        defer { daemon.stop() }
        // --record FILE: `livebus record` against the private daemon, from before the first phone to the last state.
        let recorder = try a.value("record").map { path throws(CLIError) in try startRecorder(path, socket: socket) }
        defer { if let r = recorder, r.isRunning { r.terminate() } }
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .usage) }
        let specs: [(String, ClientOptions)] = [
            (
                "iPhone 16 Pro · portrait · foreground",
                ClientOptions(socketPath: socket, name: "pro", device: "iphone-16-pro")
            ),
            (
                "iPhone Duo · unfolded (flat)",
                ClientOptions(
                    socketPath: socket,
                    name: "duo-flat",
                    device: "iphone-duo",
                    posture: PostureBody(foldState: "flat", orientation: "landscape")
                )
            ),
            (
                "iPhone Duo · half-opened · background · clock +90 s",
                ClientOptions(
                    socketPath: socket,
                    name: "duo-half",
                    device: "iphone-duo",
                    posture: PostureBody(foldState: "half-opened", orientation: "landscape"),
                    appState: "foreground",
                    clockSkewMilliseconds: 90_000
                )
            ),
        ]
        let out = Output(json: json)
        // Repaints only on a real terminal (not TERM=dumb, not a pipe or file).
        let tty = TerminalText.mayRepaint && !json
        let sessions = specs.map { ClientSession(loop: loop, options: $0.1, trueClock: SystemServerClock()) }
        var finished = false
        var readerGone = false
        func allDelivered() -> Bool {
            sessions.allSatisfy { s in
                let acts = s.board.activities
                return !acts.isEmpty
                    && acts.allSatisfy { $0.content.status == .delivered || $0.content.status == .canceled }
            }
        }
        func draw() {
            var text = "LiveBus demo · scenario \(scenario) at \(scale)×\n"
            let (columns, rows) = tty ? TerminalText.size : (SessionView.width, Int.max)
            let width = tty ? min(max(columns, 40), 160) : SessionView.width
            // Each box keeps its title and sync lines on screen: the rows are shared among the three.
            let share = rows == Int.max ? Int.max : max(4, (rows - 1) / max(1, sessions.count))
            for s in sessions {
                let box = TerminalText.fitRows(SessionView.render(s, width: width), rows: share, head: 2, tail: 1) {
                    SessionView.pad("… \($0) more lines", width: width)
                }
                text += box.joined(separator: "\n") + "\n"
            }
            print(tty ? "\u{1B}[H\u{1B}[2J" + text : text, terminator: "")
            fflush(nil)
        }
        for (i, s) in sessions.enumerated() {
            // The third phone ordered in the foreground (an activity starts only there, Apple's rule), then left the
            // app: from then on it is backgrounded, as in the Delivery Lab report.
            let backgroundAfterStart = i == 2
            s.onUpdate = { u in
                if backgroundAfterStart && u.event == "start" && u.applied && s.options.appState == "foreground" {
                    s.change(appState: "background")
                }
                // A reader that went away (`livebus demo | head -1`) ends the demo through its cleanup (the private
                // daemon stopped, its directory removed), with 0 as for any command; `exit` would leave both behind.
                let line: [UInt8]? =
                    json
                    ? (try? WireJSON.encode(u)).map { Array($0) + [0x0A] }
                    : tty ? nil : Array((LogLine.update(u) + "\n").utf8)
                if !readerGone, let line, !StandardStream.offer(line, to: 1) {
                    readerGone = true
                    loop.stop()
                }
                if !finished && allDelivered() {
                    finished = true
                    loop.schedule(after: 300) { loop.stop() }
                }
            }
            s.onError = { msg in StandardStream.err("\(s.name): \(msg)\n") }
            s.start()
        }
        let redraw = tty ? loop.schedule(after: 0, repeat: 200) { draw() } : nil
        let timeoutMs = UInt64(120_000 / scale * 2 + 20_000)
        let timeout = loop.schedule(after: timeoutMs) { loop.stop() }
        // The private daemon ended under the demo (kill -9, a crash): fail at once, naming how it ended.
        var daemonEnded: String?
        let watchDaemon = loop.schedule(after: 200, repeat: 200) {
            guard daemonEnded == nil, !finished, !daemon.process.isRunning else { return }
            daemonEnded = daemon.howItEnded
            loop.stop()
        }
        var interrupted = demoInterruptedEarly != 0
        let signals = try? SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { _ in
            interrupted = true
            loop.stop()
        }
        if !interrupted { loop.run() }
        redraw?.cancel()
        timeout.cancel()
        watchDaemon.cancel()
        signals?.close()
        if !json && !readerGone { draw() }
        if let r = recorder { try stopRecorder(r) }
        for s in sessions { s.close() }
        loop.run()
        loop.close()
        if readerGone { return 0 }
        if interrupted && !finished { throw Self.interrupted }
        if let daemonEnded, !finished {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(15).joined(separator: "\n")
            throw CLIError(
                "daemonUnreachable",
                "the demo's daemon \(daemonEnded)"
                    + (tail.isEmpty ? "" : "; its last log lines:\n\(tail)"),
                recovery: "run `livebusd --scenario \(scenario)` yourself to look closer",
                exit: .daemonUnreachable
            )
        }
        guard finished else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(15).joined(separator: "\n")
            throw CLIError(
                "timedOut",
                "the demo did not reach 'delivered' on every session within \(timeoutMs / 1000) s"
                    + (tail.isEmpty ? "" : "; the daemon's last log lines:\n\(tail)"),
                recovery: "run `livebusd --scenario \(scenario)` and `livebus attach` yourself to look closer",
                exit: .timedOut
            )
        }
        if !json { print("demo finished: every session shows the order delivered") }
        return 0
    }
}

extension DemoCommand {
    /// Starts `livebus record --out PATH` on the demo's socket and waits until it has written its header.
    /// - Throws: ``CLIError`` when it cannot start or exits first (its own error, e.g. an unwritable path).
    static func startRecorder(_ path: String, socket: String) throws(CLIError) -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: E2ERun.livebusBinary())
        // From the daemon's start: it was started for the demo, the recording holds all it did.
        p.arguments = ["record", "--socket", socket, "--out", path, "--since", "start"]
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        do { try p.run() } catch {
            throw CLIError("internal", "cannot start livebus record: \(error)", exit: .usage)
        }
        for _ in 0..<500 {
            if let d = FileManager.default.contents(atPath: path), d.contains(0x0A) { return p }
            if !p.isRunning { break }
            usleep(10_000)
        }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        throw CLIError(
            "recordFailed",
            "livebus record --out \(path) did not start (exit \(p.terminationStatus); its error is above)",
            recovery: "choose a writable path for --record",
            exit: .usage
        )
    }

    /// Stops the recorder (SIGINT: it writes the final state) and waits for it.
    /// - Throws: ``CLIError`` when it did not exit 0.
    static func stopRecorder(_ p: Process) throws(CLIError) {
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        guard p.terminationReason == .exit, p.terminationStatus == 0 else {
            throw CLIError(
                "recordFailed",
                "livebus record ended with \(p.terminationStatus) (its error is above)",
                exit: .verdictFailed
            )
        }
    }
}

/// Set by the demo's early SIGINT/SIGTERM handler (before the event loop watches signals).
nonisolated(unsafe) var demoInterruptedEarly: sig_atomic_t = 0

extension DemoCommand {
    /// Ctrl-C before every phone showed delivered: exit 130, nothing left behind.
    static var interrupted: CLIError {
        CLIError(
            "interrupted",
            "demo interrupted (SIGINT) before every phone showed the order delivered",
            recovery: "run it again; `livebus demo --time-scale 20` is quicker",
            exit: .interrupted
        )
    }
}

/// A `livebusd` child process on a private socket.
final class DaemonProcess {
    let process: Process

    init(process: Process) { self.process = process }

    /// The `livebusd` binary next to the running `livebus`.
    static func daemonBinary() -> String {
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("livebusd").path
    }

    /// Starts `livebusd` and waits until its socket accepts connections.
    /// - Parameters:
    ///   - arguments: `livebusd`'s arguments.
    ///   - socket: the socket it serves (waited for).
    ///   - logPath: where its standard error goes.
    ///   - launcher: a command that execs the daemon (`ip netns exec NAME`), empty for none.
    /// - Returns: the running daemon.
    /// - Throws: ``CLIError`` when the binary is missing or the daemon does not come up within 10 s.
    static func start(arguments: [String], socket: String, logPath: String, launcher: [String] = []) throws(CLIError)
        -> DaemonProcess
    {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: launcher.first ?? daemonBinary())
        p.arguments = launcher.isEmpty ? arguments : Array(launcher.dropFirst()) + [daemonBinary()] + arguments
        p.environment = ConfigFile.privateEnvironment()
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        p.standardError = FileHandle(forWritingAtPath: logPath)
        p.standardOutput = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch {
            throw CLIError(
                "internal",
                "cannot start \(daemonBinary()): \(error)",
                recovery: "build both executables: swift build -c release",
                exit: .daemonUnreachable
            )
        }
        let d = DaemonProcess(process: p)
        for _ in 0..<500 {
            if SocketProbe.probe(path: socket) == .live { return d }
            if !p.isRunning { break }
            usleep(20_000)
        }
        d.stop()
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        // livebusd exits 2 for a usage or input error (a bad --scenario): the same error, the same code.
        if !p.isRunning && p.terminationReason == .exit && p.terminationStatus == ExitCode.usage.rawValue {
            // Its `error: …` line (log lines may come first) is the error, the `hint: …` after it the recovery.
            let lines = log.split(separator: "\n").map(String.init)
            let at = lines.firstIndex { $0.hasPrefix("error: ") }
            let hint = at.flatMap { i in
                i + 1 < lines.count && lines[i + 1].hasPrefix("hint: ") ? String(lines[i + 1].dropFirst(6)) : nil
            }
            throw CLIError(
                "usage",
                at.map { String(lines[$0].dropFirst(7)) } ?? lines.last ?? "livebusd refused its arguments",
                recovery: hint,
                exit: .usage
            )
        }
        throw CLIError(
            "daemonUnreachable",
            "livebusd did not start on \(socket):\n\(log)",
            exit: .daemonUnreachable
        )
    }

    /// How the ended process ended: "was killed (SIGKILL)", "exited with status 1".
    var howItEnded: String {
        if process.terminationReason == .uncaughtSignal {
            let sig = process.terminationStatus
            let names: [Int32: String] = [
                SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT",
                SIGBUS: "SIGBUS", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP", SIGHUP: "SIGHUP", SIGQUIT: "SIGQUIT",
                SIGPIPE: "SIGPIPE",
            ]
            return "was killed (\(names[sig] ?? "signal \(sig)"))"
        }
        return "exited with status \(process.terminationStatus)"
    }

    /// SIGTERM, then wait (SIGKILL after 3 s).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<150 where process.isRunning { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
