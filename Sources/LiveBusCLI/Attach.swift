import Foundation
import LiveBusAPNs
import LiveBusActivity
import LiveBusClient
import LiveBusDaemon
import LiveBusLayout
import LiveBusLoop
import LiveBusWire

/// Session options shared by `attach` and the demo.
enum SessionFlags {
    static let options: Set<String> = [
        "socket", "name", "device", "posture", "orientation", "window", "split-width", "app-state", "os", "clock-skew",
        "clock-drift",
        "duration", "exit-when", "svg-dir", "activities", "device-file", "activity-schema", "bundle-id", "channel",
    ]
    static let flags: Set<String> = ["json", "no-reconnect", "low-power", "frequent-updates"]

    static let postureAliases = [
        "book": "half-opened", "tabletop": "half-opened", "half": "half-opened", "halfopened": "half-opened",
        "half_opened": "half-opened", "open": "flat", "unfolded": "flat", "closed": "folded",
    ]

    static func clientOptions(_ a: Arguments) throws(CLIError) -> ClientOptions {
        // A user's own device: registered before anything reads the catalog (the phone lays itself out with it).
        let (_, fileDevice) = try LivebusCommand.catalog(deviceFile: a.value("device-file"))
        let fold = try a.choice("posture", ["flat", "half-opened", "folded"], aliases: postureAliases, default: "flat")
        let orientation = try a.choice("orientation", ["portrait", "landscape"], default: "portrait")
        var posture = PostureBody(foldState: fold, orientation: orientation)
        if let w = a.value("window"), w.lowercased() != "full" {
            let parts = w.lowercased().split(separator: "x")
            guard parts.count == 2, let ww = Double(parts[0]), let hh = Double(parts[1]), ww > 0, hh > 0 else {
                throw .usage("--window '\(w)' is not WIDTHxHEIGHT in points, e.g. 951x669")
            }
            // The daemon's POSTURE rule (Daemon.swift): each side more than 0 and under 10,000 pt.
            guard ww < 10_000, hh < 10_000 else {
                throw .usage(
                    "--window '\(w)' is out of range; each side is more than 0 and under 10000 points",
                    recovery: "e.g. --window 951x669, or --window full for the whole screen"
                )
            }
            posture.windowWidth = ww
            posture.windowHeight = hh
        }
        let skew = try a.value("clock-skew").map { v throws(CLIError) in try parseDuration(v, flag: "clock-skew") } ?? 0
        let drift = try a.ppm("clock-drift", default: 0, in: -100_000...100_000)
        if let v = a.value("os") {
            do { _ = try OSVersion.parse(v) } catch {
                throw CLIError("invalidOSVersion", error.message, exit: .usage)
            }
        }
        if let name = a.value("name"), let problem = SessionName.problem(name) {
            throw .usage("--name \(problem)", recovery: "e.g. --name pro")
        }
        let device = a.value("device") ?? fileDevice ?? "iphone-16-pro"
        if let catalog = try? DeviceCatalog.bundled() {
            do { _ = try catalog.device(device) } catch {
                throw CLIError("unknownDevice", error.message, recovery: "see `livebus devices`", exit: .usage)
            }
        }
        if a.value("split-width") != nil {
            // A pinned split-view width: that width and the screen's height, kept across fold changes.
            guard a.value("window") == nil else {
                throw .usage("--split-width and --window cannot be combined", recovery: "give one of them")
            }
            let width = try a.double("split-width", default: 0, in: 1...10_000)
            posture.splitViewWidth = width
            if let catalog = try? DeviceCatalog.bundled(), let d = try? catalog.device(device),
                let f = FoldState(rawValue: fold), let o = Orientation(rawValue: orientation)
            {
                let pinned = WindowFollow.pinned(device: d, posture: (f, o), width: width)
                posture.windowWidth = pinned.window?.width
                posture.windowHeight = pinned.window?.height
                if let note = pinned.note { StandardStream.err("note: \(note)\n") }
            }
        }
        var options = ClientOptions(
            socketPath: a.value("socket") ?? defaultSocketPath(),
            name: a.value("name"),
            device: device,
            posture: posture,
            appState: try a.choice(
                "app-state",
                ["foreground", "background", "suspended", "terminated"],
                aliases: ["fg": "foreground", "bg": "background"],
                default: "foreground"
            ),
            os: a.value("os"),
            clockSkewMilliseconds: skew,
            clockDriftPPM: drift,
            reconnect: !a.flag("no-reconnect"),
            profile: ProfileBody(
                lowPowerMode: a.flag("low-power") ? true : nil,
                frequentUpdates: a.flag("frequent-updates") ? true : nil,
                liveActivities: try a.value("activities").map { _ throws(CLIError) in
                    let v = try a.choice("activities", ["authorized", "denied", "disabled"], default: "authorized")
                    return v == "disabled" ? "activitiesDisabled" : v
                },
                bundleID: try bundleID(a),
                channels: try channels(a)
            )
        )
        options.activitySchema = try a.value("activity-schema").map { path throws(CLIError) in
            try ActivitySchemaFile.read(path).schema
        }
        return options
    }
}

extension SessionFlags {
    /// `--bundle-id ID`: the app's bundle id (its push tokens' topic), checked as APNs checks topics.
    static func bundleID(_ a: Arguments) throws(CLIError) -> String? {
        guard let v = a.value("bundle-id") else { return nil }
        guard APNsValidator.isBundleID(v) else {
            throw .usage(
                "--bundle-id '\(v)' is not a bundle id (letters, digits, '-' and '.')",
                recovery: "e.g. --bundle-id com.example.delivery"
            )
        }
        return v
    }

    /// `--channel ID` (repeatable): broadcast channels the app's activities listen on (base64 ids, as the channel
    /// management API gives them).
    static func channels(_ a: Arguments) throws(CLIError) -> [String]? {
        let ids = a.values("channel")
        guard !ids.isEmpty else { return nil }
        for id in ids where !APNsChannelDirectory.isChannelID(id) {
            throw .usage(
                "--channel '\(id)' is not a channel id (base64, as POST /1/apps/<bundle-id>/channels answers in apns-channel-id)",
                recovery: "create one first, e.g. with curl against livebusd --apns"
            )
        }
        return ids
    }
}

/// `livebus attach`: one simulated phone with a live view (or JSON lines).
enum AttachCommand {
    static func run(_ argv: [String], json: Bool) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "attach", options: SessionFlags.options, flags: SessionFlags.flags)
        try a.allowPositionals(0)
        let options = try SessionFlags.clientOptions(a)
        let durationMs = try a.value("duration").map { v throws(CLIError) in
            try parseDuration(v, flag: "duration", allowed: 1...7 * 86_400_000)
        }
        let exitWhen = try a.choice(
            "exit-when",
            ["delivered", "never"],
            aliases: ["terminal": "delivered"],
            default: "never"
        )
        try checkSocketDirectory(options.socketPath)
        let probe = SocketProbe.probe(path: options.socketPath)
        if case .foreign(let owner) = probe { throw CLIError.foreignSocket(options.socketPath, owner: owner) }
        if case .absent = probe {
            throw CLIError(
                "daemonUnreachable",
                "no daemon at \(options.socketPath)",
                recovery: "start one: livebusd --socket \(options.socketPath) --scenario demo-120s",
                exit: .daemonUnreachable
            )
        }
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .daemonUnreachable) }
        let session = ClientSession(loop: loop, options: options, trueClock: SystemServerClock())
        let out = Output(json: json)
        // Repaints only on a real terminal (not TERM=dumb, not a pipe or file): otherwise plain lines, once each.
        let tty = TerminalText.mayRepaint && !json
        var exitCode: Int32 = 0
        var failure: CLIError?
        var welcomed = false
        session.onWelcome = { _ in welcomed = true }
        session.onUpdate = { u in
            if json {
                out.printJSON(u)
            } else if !tty {
                // Into a file or a pipe (CI logs) line by line, as --json is: never held in a 4 KiB buffer, and
                // a reader that went away (`| head -3`) ends the process quietly (StandardStream, exit 0 on EPIPE).
                StandardStream.out(LogLine.update(u) + "\n")
            }
            if exitWhen == "delivered", allTerminal(session) {
                session.close()
                loop.stop()
            }
        }
        let svgDir = a.value("svg-dir")
        if let svgDir {
            do { try FileManager.default.createDirectory(atPath: svgDir, withIntermediateDirectories: true) } catch {
                throw CLIError(
                    "cannotWrite",
                    "cannot create --svg-dir \(svgDir): \(fileErrorReason(error))",
                    recovery: "choose a writable directory",
                    exit: .usage
                )
            }
        }
        var layoutCount = 0
        var svgWarned = false
        var notice: String?
        session.onPushToken = { t in
            if json {
                out.printJSON(t)
            } else if !tty {
                StandardStream.out(
                    "\(t.session): push token (\(t.kind)\(t.order.map { " " + $0 } ?? "")) \(t.token) topic \(t.bundleID).push-type.liveactivity\n"
                )
            } else {
                notice = "\(t.kind) push token \(t.token)"
            }
        }
        // An update-triggered layout is logged when what the phone shows changed (island, Lock Screen, rects,
        // overflow…), so e2e assertion steps can read it (PROTOCOL.md §10).
        var lastLogged: AppliedLayout?
        session.onLayout = { record, input, result in
            if json {
                if record.trigger != "update" || lastLogged.map({ !record.showsSame(as: $0) }) ?? true {
                    out.printJSON(record)
                    lastLogged = record
                }
            } else if !tty && record.trigger != "update" {
                StandardStream.out(
                    "\(record.session): layout \(record.foldState) \(record.orientation) → \(record.arrangement)"
                        + (record.invariantsHeld ? " · invariants hold" : " · FAILED \(record.failedInvariants)") + "\n"
                )
            }
            if let svgDir, record.trigger != "update" {
                layoutCount += 1
                let file =
                    "\(svgDir)/\(String(format: "%03d", layoutCount))-\(record.foldState)-\(record.orientation).svg"
                do {
                    try LiveActivityLayout.svgWithOverflow(LayoutRenderer.svg(result, input: input), result.truncations)
                        .write(toFile: file, atomically: true, encoding: .utf8)
                } catch {
                    if !svgWarned {
                        svgWarned = true
                        StandardStream.err(
                            "warning: cannot write \(file): \(fileErrorReason(error)); SVGs are skipped\n"
                        )
                    }
                }
            }
        }
        if json {
            // PROTOCOL.md §10: every sync-state change, so e2e assertion steps can read what the phone showed; with
            // the daemon's SYNC (§5.9) when one came: its state, since when (phone clock) and why.
            session.onSyncState = { state in
                let d = session.daemonSync
                out.printJSON(
                    JSONValue.object([
                        "type": .string("sync"), "session": .string(session.name), "state": .string(state.rawValue),
                        "daemon": d.map { .string($0.state.rawValue) } ?? .null,
                        "since": d.map { .number(Double($0.since)) } ?? .null,
                        "reason": d?.reason.map { .string($0) } ?? .null,
                        "clientTime": .number(Double(session.now().millisecondsSinceEpoch)),
                    ])
                )
            }
        } else if !tty {
            // Plain lines: the daemon's federation state as it changes (a daemon without federation sends none).
            session.onSyncState = { state in
                guard let d = session.daemonSync else { return }
                StandardStream.out(SessionView.syncLine(state, d) + "\n")
            }
        }
        session.onError = { msg in
            // A refused peer (SO_PEERCRED) ends the session even after a WELCOME: the client does not retry it; so
            // does a HELLO refusal that retrying cannot fix (ClientSession.endsTheSession: a resume past
            // --max-subscriptions, an unknown device…), on a reconnect too: the session is closed already.
            // A `down` toxic's refusal (connectionsRefused) is retried with backoff before the first WELCOME too:
            // the phone attaches once the toxic is removed (FAULTS.md §6).
            let transient = ClientSession.transientRefusals.contains {
                msg.hasPrefix("daemon error \($0) ")
            }
            let fatal =
                !welcomed && !transient && (msg.hasPrefix("daemon error") || msg.hasPrefix("cannot connect"))
                || ((msg.hasPrefix("cannot connect") || msg.hasPrefix("daemon error")) && session.syncState == .closed)
            if json {
                // PROTOCOL.md §10: every line has clientTime (ms since the Unix epoch, the phone's clock).
                out.printJSON(
                    JSONValue.object([
                        "type": .string("error"), "session": .string(session.name), "message": .string(msg),
                        "clientTime": .number(Double(session.now().millisecondsSinceEpoch)),
                    ])
                )
            } else if tty && !fatal {
                // On the live view the next redraw would wipe a line on stderr: the view shows the newest note.
                notice = msg
            } else if !fatal {
                // A fatal one is printed once, as the command's error.
                StandardStream.write(Array("\(session.name): \(msg)\n".utf8), to: 2)
            }
            if fatal {
                failure = CLIError("rejected", msg, exit: msg.hasPrefix("cannot connect") ? .daemonUnreachable : .usage)
                session.close()
                loop.stop()
            }
        }
        // The daemon's BYE ends attach (exit 0, or 4 under --exit-when delivered); a connection lost without BYE
        // under --no-reconnect is exit 3 with what happened, never a silent 0.
        var ending: ClientSession.Ending?
        session.onEnded = { e in
            ending = e
            loop.stop()
        }
        session.start()
        var redraw: LoopTimer?
        if tty {
            redraw = loop.schedule(after: 0, repeat: 200) {
                let (columns, rows) = TerminalText.size
                let width = min(max(columns, 40), 160)
                let help = TerminalText.truncate(
                    "keys: f fold · u unfold · h half-open · r rotate · b background · g foreground · s step clock +30 s · q quit",
                    to: width
                )
                let note = notice.map { "\n" + TerminalText.truncate("\(session.name): \($0)", to: width) } ?? ""
                // The title and sync lines stay on screen however many orders there are.
                let lines = TerminalText.fitRows(
                    SessionView.render(session, showLayout: true, width: width),
                    rows: rows - 1 - (notice == nil ? 0 : 1),
                    head: 2,
                    tail: 1
                ) { SessionView.pad("… \($0) more lines: enlarge the terminal to see them", width: width) }
                print("\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\n") + "\n" + help + note, terminator: "")
                fflush(nil)
            }
        }
        let keys = InputReader(loop: loop, rawMode: true) { bytes in
            for b in bytes { handleKey(b, session: session, loop: loop) }
        }
        let signals = try? SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { _ in
            session.close()
            loop.stop()
        }
        if let durationMs {
            loop.schedule(after: UInt64(max(0, durationMs))) {
                session.close()
                loop.stop()
            }
        }
        loop.run()
        redraw?.cancel()
        keys?.close()
        signals?.close()
        if tty { print("") }
        session.close()
        loop.close()
        if let failure { throw failure }
        if case .refused(let e)? = ending {
            throw CLIError("rejected", "daemon error \(e.name) (\(e.code)): \(e.message)", exit: .usage)
        }
        if case .lost(let what)? = ending {
            throw CLIError(
                "connectionLost",
                "\(session.name): \(what)",
                recovery:
                    "is livebusd still running? see its log (without --no-reconnect attach reconnects and resumes)",
                exit: .daemonUnreachable
            )
        }
        if exitWhen == "delivered" && !allTerminal(session) { exitCode = ExitCode.timedOut.rawValue }
        return exitCode
    }

    static func allTerminal(_ s: ClientSession) -> Bool {
        let acts = s.board.activities
        return !acts.isEmpty && acts.allSatisfy { $0.content.status.isTerminal }
    }

    static func handleKey(_ b: UInt8, session: ClientSession, loop: EventLoop) {
        var p = session.options.posture
        switch b {
        case UInt8(ascii: "f"): p.foldState = "folded"
        case UInt8(ascii: "u"): p.foldState = "flat"
        case UInt8(ascii: "h"): p.foldState = "half-opened"
        case UInt8(ascii: "r"): p.orientation = p.orientation == "portrait" ? "landscape" : "portrait"
        case UInt8(ascii: "b"):
            session.change(appState: "background")
            return
        case UInt8(ascii: "g"):
            session.change(appState: "foreground")
            return
        case UInt8(ascii: "s"):
            session.stepClock(byMilliseconds: 30_000)
            return
        case UInt8(ascii: "q"), 3:
            session.close()
            loop.stop()
            return
        default: return
        }
        let (followed, note) = PhoneLayout.following(session.options.posture, to: p, device: session.options.device)
        if let note { session.onError?(note) }
        session.change(posture: followed)
    }
}

/// One readable line per applied update, for logs and non-terminal output.
enum LogLine {
    static func update(_ u: AppliedUpdate) -> String {
        let remaining = formatCountdown(remainingMilliseconds: u.remainingMs)
        var s = "\(u.session): \(u.type) \(u.topic)#\(u.seq) \(u.status) · \(remaining) left"
        if u.stale { s += " · stale" }
        if !u.applied { s += " · not applied (\(u.reason ?? "?"))" }
        if let d = u.delivery { s += " · \(d)" }
        return s
    }
}

/// Reads an `--activity-schema FILE` for `attach` and `livebusd`.
enum ActivitySchemaFile {
    /// The largest schema file accepted, in bytes (it travels with every relayed push, in a 65 536-byte frame).
    static let maximumBytes = 32 * 1024

    /// Reads and checks the file.
    /// - Parameter path: The file.
    /// - Returns: The schema and the file's text.
    /// - Throws: `invalidActivitySchema` (exit 2) with `file:line: field: message`.
    static func read(_ path: String) throws(CLIError) -> (schema: ActivitySchema, text: String) {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw CLIError(
                "invalidActivitySchema",
                "cannot read the activity schema \(path)",
                recovery: "check the path; the format is in Protocol/ACTIVITY-SCHEMA.md",
                exit: .usage
            )
        }
        guard data.count <= maximumBytes else {
            throw CLIError(
                "invalidActivitySchema",
                "\(path) is \(data.count) bytes; an activity schema may be at most \(maximumBytes) bytes",
                exit: .usage
            )
        }
        do {
            return (try ActivitySchema.parse(Array(data), file: path), text)
        } catch {
            throw CLIError(
                "invalidActivitySchema",
                error.description,
                recovery:
                    "fix the file (format: Protocol/ACTIVITY-SCHEMA.md, JSON Schema: Protocol/activity-schema.schema.json)",
                exit: .usage
            )
        }
    }
}
