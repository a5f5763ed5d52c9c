import Foundation
import LiveBusLayout
import LiveBusLoop
import LiveBusSimulator
import LiveBusWire

/// One setting a config file may give: its dotted key, the environment variable and the flag it stands for, and
/// the commands that take that flag.
struct ConfigSetting: Sendable {
    enum Kind: String, Sendable {
        /// A string.
        case string
        /// A file or directory; a relative path is taken from the config file's directory, `~/` from `$HOME`.
        case path
        /// A JSON number.
        case number
        /// A duration string with its unit (`+90s`, `10m`), as the flag takes it.
        case duration
        /// `true` or `false`: `true` gives the flag.
        case bool
    }

    var key: String
    var env: String?
    var flag: String
    var commands: Set<String>
    var kind: Kind
    /// What applies when nothing sets it (for `config show`).
    var defaultText: String
    /// Flags that, given on the command line, keep this setting from being applied (`--device-file` for the device).
    var excludedBy: [String] = []
}

/// Where an effective value came from.
enum ConfigSource: Sendable, Equatable, CustomStringConvertible {
    case flag
    case env(String)
    case file(String, line: Int)
    case `default`

    var description: String {
        switch self {
        case .flag: "flag"
        case .env(let name): "env:\(name)"
        case .file(let path, let line): "file:\(path):\(line)"
        case .default: "default"
        }
    }
}

/// The config file: `livebus.json` in the current directory or the nearest one above it (found as git finds
/// `.git`), else `$XDG_CONFIG_HOME/livebus/config.json` (`~/.config/livebus/config.json` without it).
/// `$LIVEBUS_CONFIG` names a file instead (empty: none). Flags win over the environment, which wins over the file.
struct ConfigFile: Sendable {
    /// The file's path.
    var path: String
    /// Each setting given: its value as flag text (paths made absolute) and the line of its key.
    var values: [String: (value: String, line: Int)]

    static let fileName = "livebus.json"

    /// Every setting, in the order `config show` prints them. The daemon's come from the options of
    /// `livebusd --help` (`daemon.logLevel` is `--log-level`).
    static let settings: [ConfigSetting] = {
        let socketCommands = Set(
            LivebusCommand.commands.filter { $0.usage.contains("--socket") }.map(\.name) + ["livebusd"]
        )
        var list: [ConfigSetting] = [
            ConfigSetting(
                key: "socket",
                env: "LIVEBUS_SOCKET",
                flag: "socket",
                commands: socketCommands,
                kind: .path,
                defaultText: SocketPath.defaultPath(
                    environment: ProcessInfo.processInfo.environment.filter { $0.key != "LIVEBUS_SOCKET" }
                )
            ),
            ConfigSetting(
                key: "attach.device",
                env: "LIVEBUS_DEVICE",
                flag: "device",
                commands: ["attach"],
                kind: .string,
                defaultText: "iphone-16-pro",
                excludedBy: ["device-file"]
            ),
            ConfigSetting(
                key: "attach.posture",
                env: "LIVEBUS_POSTURE",
                flag: "posture",
                commands: ["attach"],
                kind: .string,
                defaultText: "flat"
            ),
            ConfigSetting(
                key: "attach.clockSkew",
                env: "LIVEBUS_CLOCK_SKEW",
                flag: "clock-skew",
                commands: ["attach"],
                kind: .duration,
                defaultText: "0s"
            ),
            ConfigSetting(
                key: "attach.clockDrift",
                env: "LIVEBUS_CLOCK_DRIFT",
                flag: "clock-drift",
                commands: ["attach"],
                kind: .number,
                defaultText: "0"
            ),
            ConfigSetting(
                key: "e2e.timeScale",
                env: "LIVEBUS_E2E_TIME_SCALE",
                flag: "time-scale",
                commands: ["e2e"],
                kind: .number,
                defaultText: "10"
            ),
            ConfigSetting(
                key: "e2e.report",
                env: "LIVEBUS_E2E_REPORT",
                flag: "report",
                commands: ["e2e"],
                kind: .path,
                defaultText: "none"
            ),
            ConfigSetting(
                key: "activitySchema",
                env: "LIVEBUS_ACTIVITY_SCHEMA",
                flag: "activity-schema",
                commands: ["attach", "layout", "livebusd"],
                kind: .path,
                defaultText: "the built-in delivery activity"
            ),
        ]
        for o in HelpSections(LivebusdCommand.help).daemonOptions
        where !["socket", "activity-schema", "help", "version", "fresh"].contains(o.name) {
            let parts = o.name.split(separator: "-")
            let key =
                "daemon." + parts[0] + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
            let kind: ConfigSetting.Kind =
                switch o.value {
                case nil: .bool
                case "N", "X", "K": .number
                case "D": .duration
                case let v? where v.contains("FILE") || v.contains("DIR") || v.contains("PATH"): .path
                default: .string
                }
            let d = defaultText(o.description)
            list.append(
                ConfigSetting(
                    key: key,
                    env: nil,
                    flag: o.name,
                    commands: ["livebusd"],
                    kind: kind,
                    defaultText: o.value == nil ? "false" : d,
                    excludedBy: o.name == "memory" ? ["data-dir"] : o.name == "data-dir" ? ["memory"] : []
                )
            )
        }
        return list
    }()

    /// The default a `livebusd --help` description states (`Default 12; …`, `Default: PATH.d next to the socket.`,
    /// `default normal: …`), else `none`.
    static func defaultText(_ description: String) -> String {
        guard
            let r = description.range(of: "Default: ") ?? description.range(of: "Default ")
                ?? description.range(of: "default ")
        else { return "none" }
        var text = String(description[r.upperBound...])
        if let end = text.range(of: ". ") { text = String(text[..<end.lowerBound]) }
        for stop in [" [", ":", ";"] {
            if let end = text.range(of: stop) { text = String(text[..<end.lowerBound]) }
        }
        if text.hasSuffix(".") { text.removeLast() }
        if text.filter({ $0 == ")" }).count > text.filter({ $0 == "(" }).count { text.removeLast() }
        return text.trimmingCharacters(in: .whitespaces)
    }

    /// Finds the config file: `$LIVEBUS_CONFIG` when set (empty: none), else `livebus.json` in `directory` or the
    /// nearest parent, else `$XDG_CONFIG_HOME/livebus/config.json` (`$HOME/.config/…`) when it exists.
    /// - Parameters:
    ///   - directory: Where to start looking (the current directory).
    ///   - environment: The process environment.
    ///   - exists: Whether a file exists (the file system; a test passes its own).
    /// - Returns: The file's path, or nil when there is none.
    static func discover(
        from directory: String,
        environment: [String: String],
        exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }
    ) -> String? {
        if let explicit = environment["LIVEBUS_CONFIG"] { return explicit.isEmpty ? nil : explicit }
        var dir = URL(fileURLWithPath: directory).standardizedFileURL.path
        while true {
            let candidate = (dir as NSString).appendingPathComponent(fileName)
            if exists(candidate) { return candidate }
            let parent = (dir as NSString).deletingLastPathComponent
            if parent == dir || parent.isEmpty { break }
            dir = parent
        }
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].map { $0 + "/.config" }
        guard let base else { return nil }
        let user = base + "/livebus/config.json"
        return exists(user) ? user : nil
    }

    /// A config error: `file:line: message` (exit 2).
    static func error(_ path: String, _ line: Int, _ message: String, recovery: String? = nil) -> CLIError {
        CLIError(
            "invalidConfig",
            "\(path):\(line): \(message)",
            recovery: recovery ?? "fix the file or remove the key; `livebus help config` lists every key",
            exit: .usage
        )
    }

    /// Reads and checks a config file.
    /// - Throws: ``CLIError`` `invalidConfig` naming the file and line: unreadable, not JSON, not an object, an
    ///   unknown key (with the nearest key), a key given twice, a value of the wrong type.
    static func load(_ path: String) throws(CLIError) -> ConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw error(path, 0, "cannot read the config file", recovery: "check the path and its permissions")
        }
        return try parse(Array(data), path: path)
    }

    /// Parses config text (see ``load(_:)``); relative paths are taken from `path`'s directory.
    static func parse(_ bytes: [UInt8], path: String) throws(CLIError) -> ConfigFile {
        let root: JSONNode
        do { root = try LineJSON.parse(bytes) } catch {
            throw Self.error(path, error.line, "not valid JSON: \(error.message)")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var values: [String: (String, Int)] = [:]
        let byKey = Dictionary(uniqueKeysWithValues: settings.map { ($0.key, $0) })
        let sections = Set(settings.compactMap { $0.key.contains(".") ? String($0.key.split(separator: ".")[0]) : nil })

        func walk(_ node: JSONNode, prefix: String) throws(CLIError) {
            guard case .object(let members) = node.value else {
                throw Self.error(
                    path,
                    node.line,
                    prefix.isEmpty
                        ? "the config must be a JSON object, found \(node.kindName)"
                        : "\(prefix) must be an object, found \(node.kindName)"
                )
            }
            var seen: [String: Int] = [:]
            for m in members {
                let key = prefix.isEmpty ? m.key : prefix + "." + m.key
                if let first = seen[m.key] {
                    throw Self.error(path, m.keyLine, "\(key) is given twice (first on line \(first))")
                }
                seen[m.key] = m.keyLine
                if prefix.isEmpty, sections.contains(m.key) {
                    try walk(m.value, prefix: m.key)
                    continue
                }
                guard let setting = byKey[key] else {
                    let here =
                        prefix.isEmpty
                        ? settings.filter { !$0.key.contains(".") }.map(\.key) + sections.sorted()
                        : settings.filter { $0.key.hasPrefix(prefix + ".") }.map {
                            String($0.key.dropFirst(prefix.count + 1))
                        }
                    let close = NearMatch.closest(m.key, among: here, limit: 1).first
                    throw Self.error(
                        path,
                        m.keyLine,
                        "unknown key '\(key)'"
                            + (close.map { "; did you mean '\(prefix.isEmpty ? $0 : prefix + "." + $0)'?" } ?? ""),
                        recovery: "keys here: \(here.joined(separator: ", "))"
                    )
                }
                values[key] = (try text(m.value, setting: setting, path: path, base: base), m.keyLine)
            }
        }
        try walk(root, prefix: "")
        return ConfigFile(path: path, values: values.mapValues { (value: $0.0, line: $0.1) })
    }

    /// A value as the flag's text, or a wrong-type error naming the line.
    static func text(_ node: JSONNode, setting: ConfigSetting, path: String, base: String) throws(CLIError) -> String {
        func wrong(_ want: String) -> CLIError {
            Self.error(path, node.line, "\(setting.key) must be \(want), found \(node.kindName)")
        }
        switch (setting.kind, node.value) {
        case (.bool, .bool(let b)): return b ? "true" : "false"
        case (.bool, _): throw wrong("true or false")
        case (.number, .number(_, let text)): return text
        case (.number, _): throw wrong("a number")
        case (.duration, .string(let s)):
            do throws(CLIError) {
                _ = try parseDuration(s, flag: setting.flag, allowed: Int64.min / 2...Int64.max / 2)
            } catch {
                throw Self.error(path, node.line, "\(setting.key): \(error.message)", recovery: error.recovery)
            }
            return s
        case (.duration, _): throw wrong("a duration string with its unit, e.g. \"90s\"")
        case (.string, .string(let s)): return s
        case (.string, _): throw wrong("a string")
        case (.path, .string(let s)):
            guard !s.isEmpty else { throw Self.error(path, node.line, "\(setting.key) is empty; give a path") }
            if s.hasPrefix("~/"), let home = ProcessInfo.processInfo.environment["HOME"] {
                return home + s.dropFirst(1)
            }
            // daemon.scenario takes a name (demo-120s) or a file: only something that looks like a path is moved.
            if s.hasPrefix("/") || (setting.key == "daemon.scenario" && !s.contains("/") && !s.hasSuffix(".json")) {
                return s
            }
            return URL(fileURLWithPath: s, relativeTo: URL(fileURLWithPath: base, isDirectory: true))
                .standardizedFileURL.path
        case (.path, _): throw wrong("a path string")
        }
    }

    /// Whether `argv` gives `--flag` (before a `--`).
    static func gives(_ argv: [String], _ flag: String) -> Bool {
        for a in argv {
            if a == "--" { return false }
            if a == "--" + flag || a.hasPrefix("--" + flag + "=") { return true }
        }
        return false
    }

    /// One setting's effective value and its source for `command`: the flag when `argv` gives it, else the
    /// environment variable when set and not empty, else the file, else the default.
    static func resolve(
        _ s: ConfigSetting,
        argv: [String],
        environment: [String: String],
        file: ConfigFile?
    ) -> (value: String, source: ConfigSource) {
        if gives(argv, s.flag) {
            let value =
                argv.firstIndex { $0.hasPrefix("--\(s.flag)=") }.map { String(argv[$0].dropFirst(s.flag.count + 3)) }
                ?? argv.firstIndex(of: "--" + s.flag).flatMap { $0 + 1 < argv.count ? argv[$0 + 1] : nil } ?? "true"
            return (value, .flag)
        }
        if let name = s.env, let v = environment[name], !v.isEmpty { return (v, .env(name)) }
        if let file, let v = file.values[s.key] { return (v.value, .file(file.path, line: v.line)) }
        return (s.defaultText, .default)
    }

    /// `argv` with the flags the environment and the file give for `command` put in front (so that a flag given
    /// by the user, later, wins), and what was added with its source.
    static func apply(
        command: String,
        argv: [String],
        environment: [String: String],
        file: ConfigFile?
    ) -> (argv: [String], applied: [(flag: String, source: ConfigSource)]) {
        var front: [String] = []
        var applied: [(String, ConfigSource)] = []
        for s in settings where s.commands.contains(command) {
            if gives(argv, s.flag) || s.excludedBy.contains(where: { gives(argv, $0) }) { continue }
            let (value, source) = resolve(s, argv: argv, environment: environment, file: file)
            guard source != .default else { continue }
            if s.kind == .bool {
                if value == "true" { front.append("--" + s.flag) } else { continue }
            } else {
                front.append("--\(s.flag)=\(value)")
            }
            applied.append((s.flag, source))
        }
        return (front + argv, applied)
    }

    /// The environment for a daemon or phone that `demo` and `e2e` start privately: no config file
    /// (`LIVEBUS_CONFIG` empty) and none of the settings' variables, so that a user's defaults never change a
    /// scenario's verdicts (every child gets its flags from the scenario).
    static func privateEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [String: String]
    {
        var env = environment
        for name in settings.compactMap(\.env) { env.removeValue(forKey: name) }
        env["LIVEBUS_CONFIG"] = ""
        return env
    }

    /// Loads the file that ``discover(from:environment:exists:)`` finds, if any.
    static func current(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIError)
        -> ConfigFile?
    {
        guard let path = discover(from: FileManager.default.currentDirectoryPath, environment: environment) else {
            return nil
        }
        return try load(path)
    }

    /// Adds where an injected flag came from to an error about it.
    static func annotate(_ error: CLIError, applied: [(flag: String, source: ConfigSource)]) -> CLIError {
        var e = error
        for (flag, source) in applied where e.message.contains("--\(flag)") {
            let whence: String
            switch source {
            case .env(let name): whence = "$\(name)"
            case .file(let p, let line): whence = "\(p):\(line)"
            default: continue
            }
            e.recovery = (e.recovery.map { $0 + "; " } ?? "") + "--\(flag) came from \(whence)"
        }
        return e
    }

    /// Each value the environment or the file gives that the command using it would refuse, as
    /// `FILE:LINE: KEY: what is wrong` (`$VAR: KEY: …` for the environment), with what is accepted when the
    /// command's parser says it. Checked by the same parsers those commands run: `attach`'s session options,
    /// `e2e`'s time scale, and `livebusd`'s whole option parsing (without starting anything). After a refusal the
    /// value it names is left out and the rest checked again, so every wrong value is reported.
    static func problems(environment: [String: String], file: ConfigFile?) -> [String] {
        var out: [String] = []
        var reported: Set<String> = []
        for command in ["attach", "e2e", "livebusd"] {
            var (argv, applied) = apply(command: command, argv: [], environment: environment, file: file)
            for _ in 0...applied.count {
                guard let e = check(command, argv) else { break }
                func value(_ flag: String) -> String? {
                    argv.first { $0.hasPrefix("--\(flag)=") }.map { String($0.dropFirst(flag.count + 3)) }
                }
                // The setting the refusal is about: the one whose flag it names, else the one whose value it quotes.
                guard
                    let i = applied.firstIndex(where: { e.message.contains("--" + $0.flag) })
                        ?? applied.firstIndex(where: { a in value(a.flag).map { e.message.contains($0) } ?? false }),
                    let setting = settings.first(where: { $0.flag == applied[i].flag && $0.commands.contains(command) })
                else {
                    out.append("\(command): \(e.message)")
                    break
                }
                let whence: String
                switch applied[i].source {
                case .env(let name): whence = "$\(name)"
                case .file(let p, let line): whence = "\(p):\(line)"
                default: whence = "?"
                }
                if reported.insert(setting.key).inserted {
                    out.append(
                        "\(whence): \(setting.key): \(e.message)" + (e.recovery.map { " (\($0))" } ?? "")
                    )
                }
                let flag = applied.remove(at: i).flag
                argv.removeAll { $0 == "--" + flag || $0.hasPrefix("--\(flag)=") }
            }
        }
        return out
    }

    /// What `command` says of these flags when it parses them, or `nil` when it takes them.
    static func check(_ command: String, _ argv: [String]) -> CLIError? {
        do throws(CLIError) {
            switch command {
            case "attach":
                let a = try Arguments(argv, command: "attach", options: SessionFlags.options, flags: SessionFlags.flags)
                _ = try SessionFlags.clientOptions(a)
            case "e2e":
                let a = try Arguments(
                    argv,
                    command: "e2e",
                    options: ["time-scale", "seed", "report", "python-client", "junit", "tap"],
                    flags: ["json", "keep-logs", "quiet", "validate"]
                )
                _ = try E2ECommand.timeScale(a)
            default:
                var refusal: CLIError?
                _ = LivebusdCommand.run(argv, check: { refusal = $0 })
                return refusal
            }
        } catch {
            return error
        }
        return nil
    }

    /// The FILES and ENVIRONMENT text of the man pages.
    static var manText: String {
        var s = ".TP\n.B livebus.json\n"
        s +=
            ManPage.escape(
                "In the current directory or the nearest one above it (found as git finds .git); else $XDG_CONFIG_HOME/livebus/config.json (~/.config/livebus/config.json); $LIVEBUS_CONFIG names another file (empty: none). A JSON object; flags win over the environment, which wins over the file. `livebus config show` prints every value and where it came from. Keys:"
            ) + "\n"
        for setting in settings {
            s += ".TP\n.B \(ManPage.escape(setting.key))\n"
            s +=
                ManPage.escape(
                    "--\(setting.flag) of \(setting.commands.contains("livebusd") && setting.commands.count == 1 ? "livebusd" : setting.key == "socket" ? "every command" : setting.commands.sorted().joined(separator: ", "))"
                        + (setting.env.map { "; environment $\($0)" } ?? "") + "; \(setting.kind.rawValue)."
                ) + "\n"
        }
        return s
    }
}
