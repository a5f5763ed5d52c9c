import Foundation
import LiveBusAPNs
import LiveBusActivity
import LiveBusClock
import LiveBusDaemon
import LiveBusFaults
import LiveBusLayout
import LiveBusLoop
import LiveBusWire

/// Commands that drive attached phones from outside, for scripts: posture, app state, profile, clock, push,
/// backend stall, explain.
enum ControlCommands {
    static func sessionsText(_ data: JSONValue) -> String {
        guard case .array(let a)? = data["sessions"] else { return "" }
        return a.compactMap(\.stringValue).joined(separator: ", ")
    }

    /// `livebus posture SESSION STATE [--orientation O] [--angle DEG] [--window WxH] [--keyboard PT]`
    static func posture(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "posture",
            options: ["socket", "orientation", "angle", "window", "split-width", "keyboard"],
            flags: ["json"]
        )
        try a.allowPositionals(2)
        guard a.positionals.count >= 1 else {
            throw .usage("livebus posture needs SESSION and a posture", recovery: "livebus posture duo half-opened")
        }
        let target = a.positionals[0]
        var fold: String
        if a.positionals.count >= 2 {
            let word = a.positionals[1]
            if ["flat", "half-opened", "folded"].contains(word) {
                fold = word
            } else if let c = SessionFlags.postureAliases[word] {
                fold = c
            } else {
                let near = NearMatch.closest(
                    word,
                    among: ["flat", "half-opened", "folded"] + SessionFlags.postureAliases.keys.sorted(),
                    limit: 1
                )
                throw .usage(
                    "'\(word)' is not a posture"
                        + (near.first.map { " (did you mean '\($0)'?)" } ?? "")
                        + "; use flat, half-opened or folded (aliases: book, tabletop, half, open, unfolded, closed)"
                )
            }
        } else if a.value("angle") != nil {
            fold = "flat"
        } else {
            throw .usage("livebus posture needs a posture or --angle", recovery: "livebus posture duo half-opened")
        }
        var angle: Double?
        if a.value("angle") != nil {
            let deg = try a.double("angle", default: 180, in: 0...360)
            angle = deg
            // Jetpack WindowManager: FLAT at 180°, HALF_OPENED in between; we call ≤ 30° folded.
            fold = deg >= 165 && deg <= 195 ? "flat" : deg <= 30 || deg >= 330 ? "folded" : "half-opened"
        }
        var posture: [String: JSONValue] = ["foldState": .string(fold)]
        if a.value("orientation") != nil {
            posture["orientation"] = .string(
                try a.choice("orientation", ["portrait", "landscape"], default: "portrait")
            )
        }
        if let angle { posture["hingeAngle"] = .number(angle) }
        if let w = a.value("window"), w.lowercased() == "full" {
            // Clears the window and any pinned split-view width: the phone uses the whole screen.
            posture["window"] = .string("full")
        } else if let w = a.value("window") {
            let p = w.lowercased().split(separator: "x")
            guard p.count == 2, let ww = Double(p[0]), let hh = Double(p[1]) else {
                throw .usage("--window '\(w)' is not WIDTHxHEIGHT in points or full")
            }
            posture["windowWidth"] = .number(ww)
            posture["windowHeight"] = .number(hh)
        }
        if a.value("split-width") != nil {
            guard a.value("window") == nil else {
                throw .usage("--split-width and --window cannot be combined", recovery: "give one of them")
            }
            posture["splitViewWidth"] = .number(try a.double("split-width", default: 0, in: 1...10_000))
        }
        if a.value("keyboard") != nil {
            posture["keyboardHeight"] = .number(try a.double("keyboard", default: 0, in: 0...2000))
        }
        let data = try LivebusCommand.resultData(
            AdminClient.request(
                socket: a.value("socket") ?? defaultSocketPath(),
                command: "session.posture",
                args: ["session": .string(target), "posture": .object(posture)]
            )
        )
        var text = "posture \(fold) sent to \(sessionsText(data))"
        if case .array(let notes)? = data["notes"] {
            for case .string(let note) in notes { text += "\nnote: \(note)" }
        }
        out.success(text, data: data)
        return 0
    }

    /// `livebus app-state SESSION foreground|background|suspended|terminated`
    static func appState(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "app-state", options: ["socket"], flags: ["json"])
        try a.allowPositionals(2)
        guard a.positionals.count == 2 else {
            throw .usage("livebus app-state needs SESSION and STATE", recovery: "livebus app-state duo background")
        }
        let aliases = ["fg": "foreground", "bg": "background", "force-quit": "terminated", "killed": "terminated"]
        let state = aliases[a.positionals[1]] ?? a.positionals[1]
        guard ["foreground", "background", "suspended", "terminated"].contains(state) else {
            throw .usage(
                "'\(a.positionals[1])' is not an app state; use foreground, background, suspended or terminated"
            )
        }
        let data = try LivebusCommand.resultData(
            AdminClient.request(
                socket: a.value("socket") ?? defaultSocketPath(),
                command: "session.app-state",
                args: ["session": .string(a.positionals[0]), "appState": .string(state)]
            )
        )
        out.success("app state \(state) sent to \(sessionsText(data))", data: data)
        return 0
    }

    /// `livebus profile SESSION [--low-power on|off] [--frequent-updates on|off] [--activities authorized|denied|disabled]`
    static func profile(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "profile",
            options: ["socket", "low-power", "frequent-updates", "activities"],
            flags: ["json"]
        )
        try a.allowPositionals(1)
        guard a.positionals.count == 1 else {
            throw .usage("livebus profile needs SESSION", recovery: "livebus profile duo --low-power on")
        }
        var args: [String: JSONValue] = ["session": .string(a.positionals[0])]
        for (flag, key) in [("low-power", "lowPowerMode"), ("frequent-updates", "frequentUpdates")] {
            if a.value(flag) != nil {
                args[key] = .bool(
                    try a.choice(flag, ["on", "off"], aliases: ["true": "on", "false": "off"], default: "off") == "on"
                )
            }
        }
        if a.value("activities") != nil {
            let v = try a.choice("activities", ["authorized", "denied", "disabled"], default: "authorized")
            args["liveActivities"] = .string(v == "disabled" ? "activitiesDisabled" : v)
        }
        guard args.count > 1 else { throw .usage("give at least one of --low-power, --frequent-updates, --activities") }
        let data = try LivebusCommand.resultData(
            AdminClient.request(
                socket: a.value("socket") ?? defaultSocketPath(),
                command: "session.profile",
                args: args
            )
        )
        out.success("profile sent to \(sessionsText(data))", data: data)
        return 0
    }

    /// `livebus clock SESSION --step ±DURATION | --drift ±PPM`
    static func clock(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "clock", options: ["socket", "step", "drift"], flags: ["json"])
        try a.allowPositionals(1)
        guard a.positionals.count == 1 else {
            throw .usage("livebus clock needs SESSION", recovery: "livebus clock duo --step +30s")
        }
        var args: [String: JSONValue] = ["session": .string(a.positionals[0])]
        // Echo what was understood: `clock stepped +8h20m`, not "clock change applied".
        var understood: [String] = []
        if let s = a.value("step") {
            let ms = try parseDuration(s, flag: "step")
            args["stepMs"] = .number(Double(ms))
            understood.append("clock stepped \(signedSpokenDuration(ms))")
        }
        if a.value("drift") != nil {
            let ppm = try a.ppm("drift", default: 0, in: -100_000...100_000)
            args["driftPPM"] = .number(ppm)
            understood.append("drift set to \(ppm >= 0 ? "+" : "")\(LivebusCommand.fmt(ppm)) ppm")
        }
        guard !understood.isEmpty else { throw .usage("give --step ±DURATION or --drift ±PPM") }
        let data = try LivebusCommand.resultData(
            AdminClient.request(socket: a.value("socket") ?? defaultSocketPath(), command: "session.clock", args: args)
        )
        out.success(
            "\(understood.joined(separator: ", ")) on \(sessionsText(data).isEmpty ? a.positionals[0] : sessionsText(data))",
            data: data
        )
        return 0
    }

    /// The verdict reasons that mean the payload itself cannot be read by the app (ActivityBoard.push): `livebus
    /// push` exits 2 when every phone answered one of them.
    static let unreadablePayloadReasons: Set<String> = [
        "malformedPayload", "payloadTooLarge", "contentStateTooLarge", "keyNotFound", "valueNotFound", "typeMismatch",
        "dataCorrupted",
    ]

    /// `livebus push TARGET FILE|- --order ID [--expect applied|ignored]`
    static func push(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "push",
            options: Set(["socket", "order", "expect", "session"]).union(PushHTTP2.options),
            flags: ["json", "all"]
        )
        // Every argument is checked before anything is sent: a usage error (exit 2) has no side effect.
        let expected = try a.choice("expect", ["applied", "ignored"], default: "applied")
        if let via = a.value("via") {
            guard via == "http2" else {
                throw .usage(
                    "--via '\(via)' is not http2",
                    recovery: "--via http2 sends through the daemon's APNs endpoint"
                )
            }
            return try PushHTTP2.run(a, out: out)
        }
        if let only = PushHTTP2.options.sorted().first(where: { a.value($0) != nil }) {
            throw .usage(
                "--\(only) goes with --via http2",
                recovery: "e.g. livebus push update.json --via http2 --token HEX --apns-socket PATH"
            )
        }
        guard let order = a.value("order") else {
            throw .usage(
                "livebus push needs --order ORDER-ID: the Live Activity the payload updates",
                recovery: "e.g. livebus push all payload.json --order A1001 (order ids: `livebus order list`)"
            )
        }
        var positionals = a.positionals
        var target = a.value("session") ?? (a.flag("all") ? "all" : nil)
        if target == nil, positionals.count == 2 { target = positionals.removeFirst() }
        guard let target, positionals.count == 1 else {
            throw .usage(
                "livebus push needs TARGET and FILE (or - for stdin)",
                recovery: "livebus push all payload.json --order A1001"
            )
        }
        let path = positionals[0]
        var bytes = try readInputFile(path)
        guard !bytes.isEmpty else {
            throw CLIError(
                "fileUnreadable",
                "\(path == "-" ? "standard input" : path) is empty",
                recovery: "give a file with the push payload (JSON, a .apns file or a curl-style request)",
                exit: .usage
            )
        }
        // A Simulator .apns file names its app in a top-level key that simctl strips before delivering: so do we.
        bytes = Data(APNsRequestFile.simulatorPayload(Array(bytes)).payload)
        guard bytes.count <= 4096 else {
            throw CLIError(
                "payloadTooLarge",
                "\(path) is \(bytes.count) bytes; a push payload may be at most 4096 bytes (APNs answers 413 PayloadTooLarge)",
                recovery: "shrink the content-state",
                exit: .usage
            )
        }
        guard let text = String(data: bytes, encoding: .utf8),
            (try? JSONSerialization.jsonObject(with: bytes)) is [String: Any]
        else {
            // APNs rejects invalid JSON (comments, trailing commas): say where, with the lint codes.
            var detail = ""
            do { _ = try APNsPayload.parse(Array(bytes)) } catch {
                if error.code == .malformedJSON {
                    detail = ": " + error.message + error.lints.map { " [\($0.code.rawValue)] \($0.message)" }.joined()
                }
            }
            throw CLIError(
                "invalidPayload",
                "\(path) is not a JSON object like simctl push takes ({\"aps\": {…}})\(detail)",
                exit: .usage
            )
        }
        let data = try LivebusCommand.resultData(
            AdminClient.request(
                socket: a.value("socket") ?? defaultSocketPath(),
                command: "push",
                args: ["session": .string(target), "order": .string(order), "payload": .string(text)],
                // The daemon answers within its 3 s relay bound (the phones' verdicts, or that one did not
                // answer); 15 s is for a loaded machine, where the CLI gave up first (exit 4).
                timeoutMs: 15_000
            )
        )
        guard case .array(let results)? = data["results"] else { return 0 }
        var lines: [String] = []
        var allApplied = true
        for r in results {
            let d = r["data"] ?? .null
            let applied = d["applied"]?.boolValue ?? false
            allApplied = allApplied && applied
            var line = "\(d["pushID"]?.stringValue ?? "?") → \(r["session"]?.stringValue ?? "?"): "
            if applied {
                line += "applied (\(d["status"]?.stringValue ?? "?"), \(d["state"]?.stringValue ?? "?"))"
                if let w = d["warning"]?.stringValue { line += " — warning: \(w)" }
                if let removal = d["removalAt"]?.doubleValue {
                    line += " — removed from the lock screen at \(isoTime(Int64(removal)))"
                }
            } else if let e = r["error"] {
                line += "not delivered: \(e["message"]?.stringValue ?? "?")"
            } else {
                line += "not applied: \(d["reason"]?.stringValue ?? "?")"
                if let w = d["appleWords"]?.stringValue { line += " — \"\(w)\"" }
                if let m = d["message"]?.stringValue { line += " — \(m)" }
                if let s = d["source"]?.stringValue { line += " (source: \(s))" }
            }
            if case .array(let lints)? = d["lints"] {
                for lint in lints {
                    line += "\n  lint \(lint["code"]?.stringValue ?? "?") \(lint["field"]?.stringValue ?? "?"): "
                    line += lint["message"]?.stringValue ?? ""
                    if let s = lint["suggested"]?.stringValue { line += " (meant: \(s))" }
                }
            }
            lines.append(line)
        }
        out.success(lines.joined(separator: "\n"), data: data)
        // One rule for every verdict (help push): a phone that did not answer, 4; a payload every phone refused as
        // unreadable (the file is wrong, whichever way: JSON, size, or a content state that does not decode), 2;
        // --expect not met, 1; otherwise 0, whatever the activity rules decided (the verdict says why).
        if results.contains(where: { $0["error"]?["code"]?.stringValue == "timedOut" }) {
            return ExitCode.timedOut.rawValue
        }
        if !results.isEmpty,
            results.allSatisfy({ Self.unreadablePayloadReasons.contains($0["data"]?["reason"]?.stringValue ?? "") })
        {
            return ExitCode.usage.rawValue
        }
        if a.value("expect") != nil, (expected == "applied") != allApplied { return ExitCode.verdictFailed.rawValue }
        return 0
    }

    /// `livebus backend stall [ORDER] --duration D`
    static func backend(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "backend", options: ["socket", "duration"], flags: ["json"])
        try a.allowPositionals(2)
        guard a.positionals.first == "stall" else { throw .usage("livebus backend stall [ORDER] --duration D") }
        guard let d = a.value("duration") else {
            throw .usage("livebus backend stall needs --duration, e.g. 30s (scenario time)")
        }
        let stallMs = try parseDuration(d, flag: "duration", allowed: 1...86_400_000)
        var args: [String: JSONValue] = ["durationMs": .number(Double(stallMs))]
        if a.positionals.count > 1 { args["order"] = .string(a.positionals[1]) }
        let data = try LivebusCommand.resultData(
            AdminClient.request(socket: a.value("socket") ?? defaultSocketPath(), command: "backend.stall", args: args)
        )
        out.success(
            "backend stalled: \(data["stalled"]?.stringValue ?? "all") for \(spokenDuration(stallMs)) (scenario time)",
            data: data
        )
        return 0
    }

    /// `livebus explain PUSH-ID`
    static func explain(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "explain", options: ["socket"], flags: ["json"])
        try a.allowPositionals(1)
        guard let id = a.positionals.first else {
            throw .usage("livebus explain needs a push id, e.g. p3 (printed by livebus push)")
        }
        // A push id is `p` and a number (p3), as livebus push prints it.
        guard id.count > 1, id.first == "p", id.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw .usage("'\(id)' is not a push id (p<n>, e.g. p3)", recovery: "livebus push prints each push's id")
        }
        let data = try LivebusCommand.resultData(
            AdminClient.request(
                socket: a.value("socket") ?? defaultSocketPath(),
                command: "push.explain",
                args: ["pushID": .string(id)]
            )
        )
        var text = ""
        if case .array(let traces)? = data["traces"] {
            for t in traces {
                text += "\(t["session"]?.stringValue ?? "?"):\n"
                if case .array(let steps)? = t["steps"] {
                    for s in steps {
                        text += "  \(s["stage"]?.stringValue ?? "?"): \(s["outcome"]?.stringValue ?? "")\n"
                    }
                }
            }
        }
        out.success(text, data: data)
        return 0
    }
}

/// `livebus fault add|list|remove|preset`: toxics on attached phones' connections (Protocol/FAULTS.md).
enum FaultCommand {
    static let toxics = [
        "latency", "bandwidth", "slicer", "slow_close", "limit_data", "timeout", "reset_peer", "down", "drop",
        "duplicate",
        "reorder", "corrupt", "partition",
    ]

    static func run(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "fault",
            options: [
                "socket", "session", "direction", "toxicity", "seed", "latency", "jitter", "rate", "average-size",
                "size-variation", "delay-us", "delay", "bytes", "timeout", "probability", "window", "duration", "id",
                "frame-types",
            ],
            flags: ["json", "all", "minority", "majority", "one"]
        )
        let socket = a.value("socket") ?? defaultSocketPath()
        guard let verb = a.positionals.first else {
            throw .usage("livebus fault needs add, list, remove or preset", recovery: "livebus fault list")
        }
        try a.allowPositionals(verb == "list" ? 1 : 2)
        var target: [String: JSONValue] = [:]
        if let s = a.value("session") { target["session"] = .string(s) }
        for scope in ["all", "minority", "majority", "one"] where a.flag(scope) { target["scope"] = .string(scope) }
        if a.value("seed") != nil {
            // A COMMAND's numbers are JSON numbers, exact up to 2^53: a larger seed would silently lose bits.
            let seed = try a.uint("seed", default: 1)
            guard seed <= 1 << 53 else {
                throw .usage("--seed \(seed) is too large for a fault seed; use a whole number from 0 to \(1 << 53)")
            }
            target["seed"] = .number(Double(seed))
        }
        switch verb {
        case "list":
            let data = try LivebusCommand.resultData(AdminClient.request(socket: socket, command: "fault.list"))
            var text = ""
            if case .array(let list) = data {
                if list.isEmpty { text = "no faults" }
                for entry in list {
                    text += "\(entry["session"]?.stringValue ?? "?")"
                    text +=
                        entry["disconnected"]?.boolValue == true
                        ? " (disconnected; its toxics act again when it resumes):\n" : ":\n"
                    if case .array(let ts)? = entry["toxics"] {
                        for t in ts {
                            text +=
                                "  \(t["id"]?.stringValue ?? "?") \(t["kind"]?.stringValue ?? "?") \(t["direction"]?.stringValue ?? "")"
                            text += " toxicity \(t["toxicity"]?.doubleValue ?? 1)"
                            let params = Self.paramsText(t)
                            text += (params.isEmpty ? "" : " " + params) + Self.seedText(t) + "\n"
                        }
                    }
                    var counters: [String] = []
                    for (dir, label) in [("down", "downstream"), ("up", "upstream")] {
                        guard case .object(let st)? = entry["stats"]?[dir] else { continue }
                        let nonzero = st.filter { ($0.value.doubleValue ?? 0) > 0 }.sorted { $0.key < $1.key }
                        if !nonzero.isEmpty {
                            counters.append(
                                "\(label): "
                                    + nonzero.map { "\($0.key) \(Int($0.value.doubleValue ?? 0))" }.joined(
                                        separator: ", "
                                    )
                            )
                        }
                    }
                    if !counters.isEmpty { text += "  " + counters.joined(separator: " · ") + "\n" }
                }
            }
            out.success(text, data: data)
        case "remove":
            var args: [String: JSONValue] = [:]
            if a.flag("all") {
                args["all"] = .bool(true)
            } else if a.positionals.count > 1 {
                args["id"] = .string(a.positionals[1])
            } else {
                throw .usage("livebus fault remove needs a fault id or --all", recovery: "livebus fault list")
            }
            let data = try LivebusCommand.resultData(
                AdminClient.request(socket: socket, command: "fault.remove", args: args)
            )
            out.success("removed \(Int(data["removed"]?.doubleValue ?? 0)) toxic(s)", data: data)
        case "preset":
            guard a.positionals.count > 1 else {
                throw .usage("livebus fault preset needs a preset: 3g, edge, lossy, very-bad, airplane")
            }
            var args = target
            args["preset"] = .string(a.positionals[1])
            let data = try LivebusCommand.resultData(
                AdminClient.request(socket: socket, command: "fault.preset", args: args)
            )
            out.success(
                "preset \(a.positionals[1]) added on \(ControlCommands.sessionsText(data)): \(Self.idsText(data)) (remove them all with `livebus fault remove \(a.positionals[1])`)",
                data: data
            )
        case "add":
            guard a.positionals.count > 1 else {
                throw .usage("livebus fault add needs a toxic: \(toxics.joined(separator: ", "))")
            }
            let kind = a.positionals[1].replacingOccurrences(of: "-", with: "_")
            guard toxics.contains(kind) else {
                let near = NearMatch.closest(kind, among: toxics, limit: 1).first
                throw .usage(
                    "'\(a.positionals[1])' is not a toxic"
                        + (near.map { " (did you mean '\($0)'?)" } ?? "")
                        + "; use one of \(toxics.joined(separator: ", "))"
                )
            }
            var params: [String: JSONValue] = [:]
            // What each flag was understood as, echoed back (`latency 200ms, jitter 50ms`).
            var understood: [String] = []
            // The daemon's ranges (ToxicSpec.Limits), checked here with the flag's name before anything is sent.
            func ms(_ flag: String, _ key: String, _ allowed: ClosedRange<Int64> = ToxicSpec.Limits.milliseconds)
                throws(CLIError)
            {
                if let v = a.value(flag) {
                    // A unit is required (README "Durations"): `--latency 0.5` is refused, not read as 1 ms.
                    let d = try parseDuration(v, flag: flag, allowed: allowed)
                    params[key] = .number(Double(d))
                    understood.append("\(flag) \(spokenDuration(d))")
                }
            }
            try ms("latency", "latencyMs")
            try ms("jitter", "jitterMs")
            try ms("delay", "delayMs")
            try ms("timeout", "timeoutMs", ToxicSpec.Limits.timeoutMs)
            try ms("duration", "durationMs", ToxicSpec.Limits.durationMs)
            for (flag, key, range) in [
                ("rate", "rateKBps", ToxicSpec.Limits.rateKBps), ("probability", "probability", 0.0...1.0),
            ]
            where a.value(flag) != nil {
                params[key] = .number(try a.double(flag, default: 0, in: range))
            }
            for (flag, key) in [
                ("average-size", "averageSize"), ("size-variation", "sizeVariation"), ("delay-us", "delayUs"),
                ("bytes", "bytes"), ("window", "window"),
            ]
            where a.value(flag) != nil {
                params[key] = .number(Double(try a.uint(flag, default: 0)))
            }
            var toxic: [String: JSONValue] = [
                "kind": .string(kind),
                "direction": .string(
                    try a.choice(
                        "direction",
                        ["down", "up"],
                        aliases: ["downstream": "down", "upstream": "up"],
                        default: "down"
                    )
                ),
                "toxicity": .number(try a.double("toxicity", default: 1, in: 0...1)),
                "params": .object(params),
            ]
            if let frameTypes = a.value("frame-types") {
                toxic["params"] = .object(params.merging(["frameTypes": try Self.frameTypes(frameTypes)]) { $1 })
            }
            if let id = a.value("id") { toxic["id"] = .string(id) }
            var args = target
            args["toxic"] = .object(toxic)
            let data = try LivebusCommand.resultData(
                AdminClient.request(socket: socket, command: "fault.add", args: args)
            )
            // What the daemon acts with: every parameter (defaults filled in) and the seed (FAULTS.md §1).
            var reported: String?
            if case .array(let ts)? = data["toxics"], let t = ts.first {
                let params = Self.paramsText(t)
                reported = " (" + (params.isEmpty ? "" : params + "; ") + String(Self.seedText(t).dropFirst(3)) + ")"
            }
            out.success(
                "\(kind) added as \(data["id"]?.stringValue ?? "?") on \(ControlCommands.sessionsText(data).isEmpty ? "the daemon" : ControlCommands.sessionsText(data))"
                    + (understood.isEmpty ? "" : ": " + understood.joined(separator: ", ")) + (reported ?? ""),
                data: data
            )
        default:
            throw .usage("unknown fault action '\(verb)'; use add, list, remove or preset")
        }
        return 0
    }

    /// A reported toxic's parameters (`params`, defaults filled in by the daemon) in its kind's order, e.g.
    /// `latencyMs 500, jitterMs 0`; `frameTypes` as frame type names (`PUBLISH,EVENT`).
    static func paramsText(_ toxic: JSONValue) -> String {
        guard case .object(let p)? = toxic["params"] else { return "" }
        let order = toxic["kind"]?.stringValue.flatMap(ToxicKind.init(rawValue:))?.parameterNames ?? []
        let names = order.filter { p[$0] != nil } + p.keys.filter { !order.contains($0) }.sorted()
        return names.map { name -> String in
            let v = p[name]!
            if name == "frameTypes", case .array(let codes) = v {
                let types = codes.compactMap { c in
                    c.doubleValue.flatMap { UInt8(exactly: $0) }.map { FrameType(rawValue: $0)?.description ?? "\($0)" }
                }
                return "frameTypes \(types.joined(separator: ","))"
            }
            if let d = v.doubleValue { return "\(name) \(Int64(exactly: d).map { "\($0)" } ?? "\(d)")" }
            return "\(name) \(v)"
        }.joined(separator: ", ")
    }

    /// ` · seed N` for a reported toxic (its own seed), or empty.
    static func seedText(_ toxic: JSONValue) -> String {
        guard let seed = toxic["seed"]?.doubleValue else { return "" }
        return " · seed \(UInt64(exactly: seed).map { "\($0)" } ?? "\(seed)")"
    }

    /// The toxic ids of a `fault.add` / `fault.preset` result, comma-separated.
    static func idsText(_ data: JSONValue) -> String {
        guard case .array(let ids)? = data["ids"] else { return data["id"]?.stringValue ?? "?" }
        return ids.compactMap(\.stringValue).joined(separator: ", ")
    }

    /// `--frame-types EVENT,PING` or `6,8`: frame type names or codes (PROTOCOL.md §3) as a JSON list of codes.
    /// - Throws: ``CLIError`` (usage) naming the unknown entry and the valid names.
    static func frameTypes(_ text: String) throws(CLIError) -> JSONValue {
        var codes: [JSONValue] = []
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if let t = FrameType.allCases.first(where: { $0.description.caseInsensitiveCompare(part) == .orderedSame })
            {
                codes.append(.number(Double(t.rawValue)))
            } else if let n = UInt8(part), n > 0 {
                codes.append(.number(Double(n)))
            } else {
                throw .usage(
                    "--frame-types: '\(part)' is not a frame type; use names or codes from PROTOCOL.md §3: \(FrameType.allCases.map(\.description).joined(separator: ","))"
                )
            }
        }
        guard !codes.isEmpty else { throw .usage("--frame-types needs at least one frame type, e.g. EVENT,PING") }
        return .array(codes)
    }
}

/// `livebus watch`: every event the daemon publishes, as it happens (NDJSON with --json).
enum WatchCommand {
    /// An EVENT's body for `watch --json`, with the trailer's converted instants as its `client` member (the
    /// shape of wire v1's body, PROTOCOL.md §5.1).
    static func watchBody(_ f: Frame) -> JSONValue {
        guard case .object(var o)? = try? WireJSON.decode(JSONValue.self, from: f.body) else { return .null }
        if let t = f.trailer, let c = try? WireJSON.decode(JSONValue.self, from: WireJSON.encode(ClientInstantsBody(t)))
        {
            o["client"] = c
        }
        return .object(o)
    }

    /// Says on stderr which `--topic` filters match none of the daemon's current topics (`orders/<id>` of every
    /// order), with the closest topics (case-insensitive: `M0001` → `orders/M0001`). Watching goes on: a later
    /// order may match. Nothing is said when the daemon cannot list its orders (the connection reports that).
    static func warnUnmatched(_ patterns: [String], socket: String) {
        guard patterns != [">"], let orders = try? AdminClient.allOrders(socket: socket, timeoutMs: 2000) else {
            return
        }
        // The store's topics (published ones too: counting only the simulator's orders said "none of the 0
        // current topics" beside five published ones), and the orders whose first event is not stored yet.
        let stored = (try? AdminClient.allTopics(socket: socket, timeoutMs: 2000)) ?? []
        let orderTopics = orders.compactMap { o in
            o["topic"]?.stringValue ?? o["id"]?.stringValue.map { "orders/\($0)" }
        }
        let topics = Array(Set(stored + orderTopics)).sorted()
        for (pattern, close) in unmatched(patterns, topics: topics) {
            StandardStream.err(
                "warning: --topic '\(pattern)' matches none of the \(topics.count) current topics"
                    + (close.isEmpty
                        ? "; topics look like orders/<order-id> (`livebus order list`)\n"
                        : "; closest: \(close.joined(separator: ", "))\n")
            )
        }
    }

    /// The filters that match none of `topics`, each with the closest topics (at most 3).
    static func unmatched(_ patterns: [String], topics: [String]) -> [(String, [String])] {
        patterns.compactMap { p in
            topics.contains { Topic.matches(pattern: p, topic: $0) }
                ? nil : (p, NearMatch.closestTopics(p, among: topics))
        }
    }

    static func run(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "watch", options: ["socket", "topic", "duration"], flags: ["json"])
        try a.allowPositionals(0)
        let socket = a.value("socket") ?? defaultSocketPath()
        let patterns = a.values("topic").isEmpty ? [">"] : a.values("topic")
        for p in patterns {
            do { try Topic.validatePattern(p) } catch { throw CLIError("invalidTopic", error.message, exit: .usage) }
        }
        let duration = try a.value("duration").map { v throws(CLIError) in
            try parseDuration(v, flag: "duration", allowed: 1...7 * 86_400_000)
        }
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .daemonUnreachable) }
        try checkSocketDirectory(socket)
        warnUnmatched(patterns, socket: socket)
        var failure: CLIError?
        var connection: Connection?
        // Why the daemon ended the stream: its BYE's reason, or nil (the connection was lost without one).
        var bye: String?
        var stopping = false
        connectToDaemon(
            loop: loop,
            socket: socket,
            failed: { e in
                failure = e
                loop.stop()
            },
            onFrame: { c, f in
                switch f.type {
                case .bye:
                    bye = (try? WireJSON.decode(ByeBody.self, from: f.body))?.reason ?? "no reason given"
                case .event:
                    guard let b = try? EventJSON.decode(f.body) else { return }
                    if out.json {
                        var flags: [JSONValue] = []
                        if f.flags.contains(.replay) { flags.append(.string("replay")) }
                        if f.flags.contains(.snapshot) { flags.append(.string("snapshot")) }
                        if f.flags.contains(.terminal) { flags.append(.string("terminal")) }
                        out.printJSON(
                            JSONValue.object([
                                "type": .string("event"), "topic": .string(f.topic),
                                "seq": .number(Double(f.sequence)),
                                "flags": .array(flags),
                                "body": Self.watchBody(f),
                            ])
                        )
                    } else {
                        // One write per line: flushed at once into a pipe, and EPIPE ends the process
                        // quietly (exit 0), as for --json.
                        StandardStream.out(
                            "\(f.topic)#\(f.sequence) \(b.event) \(b.contentState.status) (\(b.contentState.summary.ko) · \(b.contentState.summary.en)) priority \(b.priority)"
                                + (f.flags.contains(.replay) ? " [replay]" : "") + "\n"
                        )
                    }
                case .ping:
                    c.write { buf in Frame.appendPong(answering: f, into: &buf) }
                case .error:
                    let e = try? WireJSON.decode(ErrorBody.self, from: f.body)
                    failure = CLIError(e?.name ?? "error", "daemon refused: \(e?.message ?? "?")", exit: .usage)
                    loop.stop()
                default:
                    break
                }
            }
        ) { c in
            connection = c
            c.onClose = { error in
                // The daemon ended the stream (we close only after `stopping`): said on stderr, never a silent 0.
                if !stopping && failure == nil {
                    if let bye {
                        StandardStream.err("watch: the daemon closed the connection (BYE: \(bye))\n")
                    } else {
                        failure = CLIError(
                            "connectionLost",
                            "the daemon closed the connection (\(error.map { "\($0)" } ?? "without BYE"): it "
                                + "crashed, was killed or was cut off)",
                            recovery: "is livebusd still running? see its log, then watch again",
                            exit: .daemonUnreachable
                        )
                    }
                }
                loop.stop()
            }
            let now = SystemServerClock().now().millisecondsSinceEpoch
            do throws(CLIError) {
                let hello = HelloBody(
                    client: "livebus-watch/\(liveBusVersion)",
                    role: .observer,
                    name: "watch-\(getpid())",
                    clientTime: now
                )
                try sendFrame(c, .hello, body: try frameBody(hello))
                try sendFrame(c, .subscribe, body: try frameBody(SubscribeBody(patterns: patterns)))
            } catch {
                failure = error
                loop.stop()
            }
        }
        let signals = try? SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { _ in
            stopping = true
            loop.stop()
        }
        if let duration {
            loop.schedule(after: UInt64(max(0, duration))) {
                stopping = true
                loop.stop()
            }
        }
        loop.run()
        stopping = true
        signals?.close()
        connection?.close()
        loop.close()
        if let failure { throw failure }
        return 0
    }
}

/// `livebus simulate SESSION [--not-ready MS] [--start-failures N]`: exercise the start-intent rules.
enum SimulateCommand {
    static func run(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "simulate",
            options: ["socket", "not-ready", "start-failures"],
            flags: ["json"]
        )
        try a.allowPositionals(1)
        guard a.positionals.count == 1 else {
            throw .usage(
                "livebus simulate needs SESSION",
                recovery: "livebus simulate duo --not-ready 2s --start-failures 1"
            )
        }
        var args: [String: JSONValue] = ["session": .string(a.positionals[0])]
        var understood: [String] = []
        if let v = a.value("not-ready") {
            let ms = try parseDuration(v, flag: "not-ready", allowed: 0...86_400_000)
            args["notReadyMs"] = .number(Double(ms))
            understood.append("not ready for \(spokenDuration(ms))")
        }
        if a.value("start-failures") != nil {
            let n = try a.uint("start-failures", default: 0, in: 0...1000)
            args["startFailures"] = .number(Double(n))
            understood.append("next \(n) start(s) fail")
        }
        guard args.count > 1 else { throw .usage("give --not-ready DURATION and/or --start-failures N") }
        let data = try LivebusCommand.resultData(
            AdminClient.request(
                socket: a.value("socket") ?? defaultSocketPath(),
                command: "session.simulate",
                args: args
            )
        )
        out.success("simulation set: \(understood.joined(separator: ", "))", data: data)
        return 0
    }
}

/// An instant (milliseconds since 1970, the phone's clock) as ISO 8601 UTC with milliseconds, for `livebus push` text.
func isoTime(_ milliseconds: Int64) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
}

/// The bytes of `path`, or of standard input for `-`, read through a file descriptor (so `/dev/null` and FIFOs work
/// too; `Data(contentsOf:)` refuses a device).
/// - Throws: ``CLIError`` `fileUnreadable` (exit 2): a directory, or a path that cannot be opened (with the system's
///   reason).
func readInputFile(_ path: String) throws(CLIError) -> Data {
    if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    return FileHandle(fileDescriptor: try openInputFile(path), closeOnDealloc: true).readDataToEndOfFile()
}

/// A descriptor open for reading on `path` (a file, a FIFO, a device), checked as ``readInputFile(_:)`` checks it,
/// for a command that reads its input as it arrives (`publish`). The caller closes it.
/// - Throws: ``CLIError`` `fileUnreadable` (exit 2): a directory, or a path that cannot be opened (with the system's
///   reason).
func openInputFile(_ path: String) throws(CLIError) -> Int32 {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else {
        throw CLIError(
            "fileUnreadable",
            "cannot read \(path): \(String(cString: strerror(errno)))",
            recovery: "check the path",
            exit: .usage
        )
    }
    var st = stat()
    if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
        close(fd)
        throw CLIError("fileUnreadable", "\(path) is a directory", recovery: "give a file", exit: .usage)
    }
    return fd
}
