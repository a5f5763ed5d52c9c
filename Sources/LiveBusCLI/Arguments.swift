import Foundation
import LiveBusDaemon
import LiveBusLayout
import LiveBusLoop
import LiveBusWire

/// Exit codes shared by every `livebus` command (README "Exit codes").
public enum ExitCode: Int32, Sendable {
    /// Success.
    case success = 0
    /// A verdict failed: e2e invariants, a push not applied under `--expect applied`, a demo that did not finish.
    case verdictFailed = 1
    /// Usage or input error: unknown flag, bad value, invalid file.
    case usage = 2
    /// The daemon is unreachable.
    case daemonUnreachable = 3
    /// Timed out.
    case timedOut = 4
    /// Interrupted by SIGINT (Ctrl-C) before it finished: 128 + 2, as a shell reports a process that SIGINT ended.
    case interrupted = 130
}

/// An error a command reports to the user and maps to an exit code.
public struct CLIError: Error, Sendable, CustomStringConvertible {
    /// Stable error code for `--json` (`usage`, `daemonUnreachable`, …).
    public var code: String
    /// What went wrong.
    public var message: String
    /// What to do about it.
    public var recovery: String?
    /// The process exit code.
    public var exit: ExitCode
    /// What the refusal carried besides the error (e.g. APNs's `status` and `reason`): `data` of the `--json`
    /// error envelope, `nil` for none.
    public var data: JSONValue?

    /// Creates an error.
    public init(_ code: String, _ message: String, recovery: String? = nil, exit: ExitCode, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.recovery = recovery
        self.exit = exit
        self.data = data
    }

    /// Nothing answers on `socket` (exit 3), with how to start a daemon there; or, when the socket file belongs to
    /// another user, that user's daemon owns it (a permission problem, not a missing daemon: issue 14).
    public static func unreachable(_ socket: String, _ cause: some CustomStringConvertible) -> CLIError {
        if let owner = SocketProbe.owner(of: socket), owner != getuid() {
            return foreignSocket(socket, owner: owner)
        }
        return CLIError(
            "daemonUnreachable",
            "no daemon at \(socket): \(cause)",
            recovery: "start one with `livebusd --socket \(socket)` or pass --socket",
            exit: .daemonUnreachable
        )
    }

    /// The socket file at `socket` belongs to user `owner`, not to the caller (exit 3): a stale file of that user
    /// (nothing listening), a running livebusd of that user (it answered a HELLO), or, when that cannot be told
    /// (the file's mode keeps the caller out), that user's daemon (``SocketHolder``). `flag` is the option that
    /// named it: `--socket` (the bus) or `--apns-socket` (the APNs endpoint).
    public static func foreignSocket(_ socket: String, owner: UInt32, flag: String = "--socket") -> CLIError {
        let own =
            flag == "--socket"
            ? "start your own daemon on a path of yours (livebusd, default socket \(defaultSocketPath())) and pass its --socket"
            : "start your own daemon with `livebusd \(flag) PATH` on a path of yours and pass that \(flag)"
        let you = "you (\(userName(uid: getuid())))"
        // What is there, as far as can be told (review finding 11): a stale file is not "a daemon".
        switch SocketHolder.identify(path: socket, hello: flag == "--socket") {
        case .foreignStale:
            return CLIError(
                "daemonUnreachable",
                "\(socket) is a stale socket file of user \(userName(uid: owner)) (nothing listening): no daemon runs there, and \(you) cannot use or remove it",
                recovery: "have that user or root remove it, or \(own)",
                exit: .daemonUnreachable
            )
        case .livebusd(_, let user, _):
            return CLIError(
                "daemonUnreachable",
                "a running livebusd of user \(userName(uid: user)) owns this socket (\(socket)); \(you) cannot use it",
                recovery: "run livebus as that user, or \(own); never remove the other user's socket",
                exit: .daemonUnreachable
            )
        default:
            return CLIError(
                "daemonUnreachable",
                "a daemon of user \(userName(uid: owner)) owns this socket (\(socket)); \(you) cannot use it",
                recovery: "run livebus as that user, or \(own); never remove the other user's socket",
                exit: .daemonUnreachable
            )
        }
    }

    /// The process serving the socket is not the caller's user (`SO_PEERCRED`), or the default socket's private
    /// directory is refused (exit 3): nothing was sent.
    public static func impostor(_ error: LoopError) -> CLIError {
        CLIError(
            "daemonNotYours",
            error.message,
            recovery: "start your own daemon (livebusd) or pass the --socket of yours",
            exit: .daemonUnreachable
        )
    }

    /// A usage error (exit 2).
    public static func usage(_ message: String, recovery: String? = nil) -> CLIError {
        CLIError("usage", message, recovery: recovery, exit: .usage)
    }

    public var description: String { message }
}

/// Parsed command-line arguments: `--flag value`, `--flag=value`, boolean `--flag`, positionals.
///
/// Unknown flags are errors, so typos never pass silently.
public struct Arguments {
    private var values: [String: [String]] = [:]
    private var seen: Set<String> = []
    /// Positional arguments in order.
    public private(set) var positionals: [String] = []
    /// The command name, for messages.
    public let command: String

    /// How messages name the command and where its help is.
    private var invocation: String { command == "livebusd" ? "livebusd" : "livebus \(command)" }
    private var helpHint: String { command == "livebusd" ? "see `livebusd --help`" : "see `livebus help \(command)`" }

    /// Parses `args` (without the command words) knowing which flags take values and which are booleans.
    /// - Throws: ``CLIError`` (usage) for an unknown flag or a missing value.
    public init(_ args: [String], command: String, options: Set<String>, flags: Set<String>) throws(CLIError) {
        self.command = command
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let a = args[i]
            i += 1
            if !onlyPositionals, let long = Self.shortFlags[a], flags.contains(long) {
                // `-j` is `--json`, as `simctl list -j` takes it.
                values[long, default: []].append("true")
                seen.insert(long)
                continue
            }
            if onlyPositionals || !a.hasPrefix("--") || a == "-" {
                if a.hasPrefix("-") && a.count > 1 && !onlyPositionals && Double(a) == nil {
                    let close = NearMatch.closest(
                        String(a.drop { $0 == "-" }),
                        among: options.union(flags).sorted(),
                        limit: 1
                    ).first
                    throw .usage(
                        "unknown option '\(a)' for `\(invocation)`",
                        recovery: close.map { "did you mean --\($0)? \(helpHint)" } ?? helpHint
                    )
                }
                positionals.append(a)
                continue
            }
            if a == "--" {
                onlyPositionals = true
                continue
            }
            var name = String(a.dropFirst(2))
            var value: String?
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if flags.contains(name) {
                if let value, !["true", "false"].contains(value) {
                    throw .usage("--\(name) takes no value")
                }
                values[name, default: []].append(value ?? "true")
            } else if options.contains(name) {
                if value == nil {
                    guard i < args.count else {
                        throw .usage("--\(name) needs a value", recovery: helpHint)
                    }
                    // `--angle --socket X`: the next word is another option of this command, not a value.
                    let next = args[i]
                    if next.hasPrefix("--"),
                        options.union(flags).contains(String(next.dropFirst(2).prefix { $0 != "=" }))
                    {
                        throw .usage("--\(name) needs a value (\(next) after it is another option)", recovery: helpHint)
                    }
                    value = next
                    i += 1
                }
                if value!.isEmpty && Self.pathOptions.contains(name) {
                    // One rule for every command and livebusd: an empty path names nothing (review finding 11).
                    throw .usage(
                        "--\(name) is empty: give the socket's path, or leave --\(name) out for the default",
                        recovery: helpHint
                    )
                }
                values[name, default: []].append(value!)
            } else {
                let all = (options.union(flags)).sorted()
                let close = NearMatch.closest(name, among: all, limit: 1).first
                throw .usage(
                    "unknown option '--\(name)' for `\(invocation)`",
                    recovery: close.map { "did you mean --\($0)? \(helpHint)" } ?? helpHint
                )
            }
            seen.insert(name)
        }
    }

    /// Options whose value is a socket path: an empty one is a usage error (exit 2) wherever it is parsed, before a
    /// command tries to connect to or bind "".
    public static let pathOptions: Set<String> = ["socket", "apns-socket"]

    /// Single-letter spellings of long flags: `-j` for `--json` wherever a command takes `--json`.
    public static let shortFlags: [String: String] = ["-j": "json"]

    /// Refuses positional arguments past the first `count` (exit 2), naming the first stray one, so that
    /// `livebus status extra` fails instead of running as if `extra` were not there.
    /// - Throws: ``CLIError`` (usage) with the command's usage line.
    public func allowPositionals(_ count: Int) throws(CLIError) {
        guard positionals.count > count else { return }
        let usage = LivebusCommand.commands.first { $0.name == command }?.usage
        throw .usage(
            "unexpected argument '\(positionals[count])' for `\(invocation)`",
            recovery: usage.map { "usage: \($0); \(helpHint)" } ?? helpHint
        )
    }

    /// The last value of `--name`, if given.
    public func value(_ name: String) -> String? { values[name]?.last }
    /// Every value of a repeatable `--name`.
    public func values(_ name: String) -> [String] { values[name] ?? [] }
    /// Whether boolean `--name` was given (and not `=false`).
    public func flag(_ name: String) -> Bool { values[name]?.last == "true" }

    /// `--name` as a number, or `default`.
    /// - Throws: ``CLIError`` (usage) when it is not a number in `range`.
    public func double(_ name: String, default d: Double, in range: ClosedRange<Double>) throws(CLIError) -> Double {
        guard let v = value(name) else { return d }
        guard let x = Double(v), range.contains(x) else {
            throw .usage(
                "--\(name) '\(v)' is not a number in \(String(format: "%g", range.lowerBound))…\(String(format: "%g", range.upperBound))"
            )
        }
        return x
    }

    /// `--name` as a clock drift in parts per million, or `default`: a number, bare (the flag's name says the unit,
    /// README "One rule for every duration flag") or with the unit written out: `50`, `-20`, `+3.5ppm`.
    /// - Throws: ``CLIError`` (usage) naming the flag and the range, with an example.
    public func ppm(_ name: String, default d: Double, in range: ClosedRange<Double>) throws(CLIError) -> Double {
        guard let v = value(name) else { return d }
        let number = v.hasSuffix("ppm") ? String(v.dropLast(3)) : v
        guard let x = Double(number), x.isFinite, range.contains(x) else {
            throw .usage(
                "--\(name) '\(v)' is not a drift in ppm within \(String(format: "%g", range.lowerBound))…\(String(format: "%g", range.upperBound))",
                recovery: "e.g. --\(name) +50 or --\(name) -20ppm (parts per million; + runs fast)"
            )
        }
        return x
    }

    /// `--name` as an unsigned integer, or `default`.
    /// - Throws: ``CLIError`` (usage) when it is not a non-negative integer.
    public func uint(_ name: String, default d: UInt64) throws(CLIError) -> UInt64 {
        guard let v = value(name) else { return d }
        guard let x = UInt64(v) else {
            if !v.isEmpty, v.allSatisfy({ ("0"..."9").contains($0) }) {
                throw .usage("--\(name) \(v) is out of range; give a whole number in 0…\(UInt64.max)")
            }
            throw .usage("--\(name) '\(v)' is not a whole number ≥ 0", recovery: "e.g. --\(name) 42")
        }
        return x
    }

    /// `--name` as an unsigned integer within `range`, or `default` (a count or a size that must fit an `Int`).
    /// - Throws: ``CLIError`` (usage) naming the flag and the range.
    public func uint(_ name: String, default d: Int, in range: ClosedRange<UInt64>) throws(CLIError) -> Int {
        guard value(name) != nil else { return d }
        let x = try uint(name, default: 0)
        guard range.contains(x) else {
            throw .usage(
                "--\(name) \(x) is out of range; give a whole number in \(range.lowerBound)…\(range.upperBound)"
            )
        }
        return Int(x)
    }

    /// `--name` as a size in bytes within `range`, or `default`: a whole number of bytes, or one with a binary unit
    /// (`B`, `KiB` = 1,024 bytes, `MiB`, `GiB`, `TiB`), as in `262144`, `256KiB`, `4MiB`; a space may come before
    /// the unit (`'256 KiB'`, one argument). The one unit rule for every size flag (``sizeUnits``): a fraction
    /// (`1.5MiB`) is refused with the whole number it is in a smaller unit (`1536KiB`), a unit spelled in another
    /// case (`kib`), a decimal unit (`kB`, `MB`) or a bare `K`/`M` with the binary unit meant (``meantSizeUnit(_:)``).
    /// - Throws: ``CLIError`` (usage) naming the flag and an example: not a size, an unknown unit, a fraction, or out
    ///   of `range` (giving the range in bytes and the largest accepted).
    public func bytes(_ name: String, default d: Int, in range: ClosedRange<UInt64>) throws(CLIError) -> Int {
        guard let v = value(name) else { return d }
        let example = "e.g. --\(name) 262144 or --\(name) 256KiB"
        let digits = v.prefix { $0.isASCII && $0.isNumber }
        var rest = v.dropFirst(digits.count)
        var fraction: Substring?
        if !digits.isEmpty, rest.first == "." {
            fraction = rest.dropFirst().prefix { $0.isASCII && $0.isNumber }
            rest = rest.dropFirst(1 + (fraction?.count ?? 0))
        }
        let unit = rest.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty else {
            throw .usage(
                "--\(name) '\(v)' is not a size: give a whole number of bytes or one with B, KiB, MiB, GiB or TiB (\(example))"
            )
        }
        let number = v.prefix(digits.count + (fraction.map { 1 + $0.count } ?? 0))
        guard let scale = Self.sizeUnits.first(where: { $0.name == (unit.isEmpty ? "B" : unit) })?.scale else {
            guard let meant = Self.meantSizeUnit(unit) else {
                throw .usage("--\(name) '\(v)': unknown size unit '\(unit)'; use B, KiB, MiB, GiB or TiB (\(example))")
            }
            let why = meant.lowercased() == unit.lowercased() ? "unit names are case-sensitive" : "sizes are binary"
            let suggestion = Self.wholeSize(digits, fraction, unit: meant) ?? "\(number)\(meant)"
            throw .usage(
                "--\(name) '\(v)': unknown size unit '\(unit)'; \(why): did you mean \(suggestion)? (\(example))"
            )
        }
        if let fraction {
            let inBytes = unit.isEmpty || unit == "B"
            let whole = Self.wholeSize(digits, fraction, unit: inBytes ? "B" : unit)
            let instead =
                whole.map { "e.g. \($0)" }
                ?? (inBytes ? "(\(example))" : "and it is no whole number of bytes either (\(example))")
            throw .usage(
                "--\(name) '\(v)' is not a whole number of \(inBytes ? "bytes" : unit): whole numbers only, \(instead)"
            )
        }
        let spoken = Self.spokenSize(range.upperBound)
        let largest =
            spoken == "\(range.upperBound)B" ? "\(range.upperBound) bytes" : "\(spoken) = \(range.upperBound) bytes"
        let outOfRange = CLIError.usage(
            "--\(name) \(v) is out of range; give a size in \(range.lowerBound)…\(range.upperBound) bytes (the largest accepted is \(largest); \(example))"
        )
        // More digits than a UInt64 holds is out of range too, not "not a size".
        guard let n = UInt64(digits) else { throw outOfRange }
        let (x, overflow) = n.multipliedReportingOverflow(by: scale)
        guard !overflow, range.contains(x) else { throw outOfRange }
        return Int(x)
    }

    /// The size units of every size flag, smallest first: bytes and the binary multiples (IEC 80000-13).
    static let sizeUnits: [(name: String, scale: UInt64)] = [
        ("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
    ]

    /// The size unit a mistyped `unit` meant: the binary unit of its first letter when it is that letter alone, with
    /// `B` or with `iB`, in any case (`k`, `kB`, `KB`, `kib`, `MIB` → `KiB`, `KiB`, `KiB`, `KiB`, `MiB`; `b` → `B`).
    /// - Parameter unit: A unit that is not one of ``sizeUnits``.
    /// - Returns: The unit of ``sizeUnits`` meant, or `nil` when none is near.
    static func meantSizeUnit(_ unit: String) -> String? {
        let lower = unit.lowercased()
        if lower == "b" { return "B" }
        guard let letter = lower.first, ["", "b", "ib"].contains(lower.dropFirst()) else { return nil }
        return sizeUnits.first { $0.name.lowercased().first == letter && $0.name != "B" }?.name
    }

    /// `digits.fraction` of `unit` as a whole number in the largest unit (of ``sizeUnits``, `unit` or smaller) that
    /// holds it exactly: `1`, `5`, `MiB` → `1536KiB`; `2`, `0`, `MiB` → `2MiB`; `0`, `5`, `KiB` → `512B`.
    /// - Returns: The size text, or `nil` when no unit holds it exactly (or it does not fit 64 bits).
    static func wholeSize(_ digits: Substring, _ fraction: Substring?, unit: String) -> String? {
        var f = fraction ?? ""
        while f.last == "0" { f = f.dropLast() }
        guard let k = sizeUnits.firstIndex(where: { $0.name == unit }), f.count <= 18 else { return nil }
        var power: UInt64 = 1
        for _ in 0..<f.count { power *= 10 }
        guard let w = UInt64(digits), let r = f.isEmpty ? 0 : UInt64(f) else { return nil }
        // The size times 10^(fraction digits), in `unit`: whole.
        let (shifted, o1) = w.multipliedReportingOverflow(by: power)
        let (scaled, o2) = shifted.addingReportingOverflow(r)
        guard !o1, !o2 else { return nil }
        for smaller in sizeUnits[...k].reversed() {
            let (n, o) = scaled.multipliedReportingOverflow(by: sizeUnits[k].scale / smaller.scale)
            if o { return nil }
            if n % power == 0 { return "\(n / power)\(smaller.name)" }
        }
        return nil
    }

    /// `64KiB`, `4MiB`, `1000B`: a byte count in the largest unit of ``sizeUnits`` that holds it exactly, as
    /// ``bytes(_:default:in:)`` reads it back.
    static func spokenSize(_ bytes: UInt64) -> String {
        let unit = sizeUnits.last { bytes > 0 && bytes % $0.scale == 0 } ?? sizeUnits[0]
        return "\(bytes / unit.scale)\(unit.name)"
    }

    /// `--name` restricted to `choices` (aliases map to canonical values), or `default`.
    /// - Throws: ``CLIError`` (usage) listing the valid choices.
    public func choice(_ name: String, _ choices: [String], aliases: [String: String] = [:], default d: String)
        throws(CLIError) -> String
    {
        guard let v = value(name) else { return d }
        if choices.contains(v) { return v }
        if let c = aliases[v] { return c }
        let close = NearMatch.closest(v, among: choices + aliases.keys.sorted(), limit: 1).first
        throw .usage(
            "--\(name) '\(v)' is not one of: \(choices.joined(separator: ", "))"
                + (close.map { "; did you mean '\(aliases[$0] ?? $0)'?" } ?? "")
        )
    }
}

/// Parses a duration with an optional sign and a unit on every number: `90s`, `-1h`, `+500ms`, `2m`, `1h30m`.
///
/// The one rule for every duration flag of `livebus` and `tools/pyclient` (README "Durations"): a number needs its
/// unit (`ms`, `s`, `m`, `h`), because a bare `500` meant 500 s in one client and 500 ms in the other. A bare number
/// is refused with "did you mean 500ms or 500s?"; only `0` needs no unit. The resolution is one millisecond: a
/// value that is not a whole number of milliseconds (`0.5ms`) is refused rather than rounded. Flags whose name
/// carries the unit (`--delay-us`) and JSON fields named `…Ms` take bare numbers in that unit.
/// - Parameters:
///   - text: The flag's value.
///   - flag: The flag's name, for the error.
///   - allowed: The range the value must fall in, milliseconds (default −24 h…+24 h).
/// - Returns: milliseconds.
/// - Throws: ``CLIError`` (usage) naming the flag: a bare number, not a duration, an unknown unit, a fraction of a
///   millisecond, or out of `allowed` (saying the range).
public func parseDuration(
    _ text: String,
    flag: String,
    allowed: ClosedRange<Int64> = -86_400_000...86_400_000
) throws(CLIError) -> Int64 {
    let total = try durationMilliseconds(text, flag: flag, signed: allowed.lowerBound < 0)
    guard !total.isFinite || total == total.rounded() else {
        throw .usage(
            "--\(flag) '\(text)' is not a whole number of milliseconds; the smallest step is 1ms",
            recovery: "e.g. --\(flag) 1ms"
        )
    }
    guard total.isFinite, total >= Double(allowed.lowerBound), total <= Double(allowed.upperBound) else {
        let range =
            allowed.lowerBound == 0
            ? "0 … \(spokenDuration(allowed.upperBound))"
            : allowed.lowerBound > 0
                ? "\(spokenDuration(allowed.lowerBound)) … \(spokenDuration(allowed.upperBound))"
                // ASCII "-": the range is copied into a command line.
                : "-\(spokenDuration(-allowed.lowerBound)) … +\(spokenDuration(allowed.upperBound))"
        throw .usage("--\(flag) '\(text)' is out of range; give a duration in \(range)")
    }
    return Int64(total.rounded())
}

/// `+8h20m`, `-90s`, `+0s`: a signed millisecond count as the duration text `parseDuration` reads back, for echoing
/// what a signed flag (`clock --step`, `--clock-skew`) was understood as.
func signedSpokenDuration(_ milliseconds: Int64) -> String {
    milliseconds < 0 ? "-" + spokenDuration(-milliseconds) : "+" + spokenDuration(milliseconds)
}

/// `24h`, `90s`, `1ms`, `1h30m`, `1m30s250ms`: a millisecond count as the shortest duration text `parseDuration`
/// reads back.
func spokenDuration(_ milliseconds: Int64) -> String {
    if milliseconds % 1000 != 0 {
        return milliseconds < 1000
            ? "\(milliseconds)ms" : spokenDuration(milliseconds / 1000 * 1000) + "\(milliseconds % 1000)ms"
    }
    let s = milliseconds / 1000
    var text = ""
    if s >= 3600 { text += "\(s / 3600)h" }
    if s % 3600 >= 60 { text += "\(s % 3600 / 60)m" }
    if s % 60 != 0 || text.isEmpty { text += "\(s % 60)s" }
    return text
}

private func durationMilliseconds(_ text: String, flag: String, signed: Bool) throws(CLIError) -> Double {
    // Examples that fit the flag: signed ones only for a flag that takes a sign.
    let examples = signed ? "e.g. -90s, +1h" : "e.g. 90s, 1h"
    var s = Substring(text.trimmingCharacters(in: .whitespaces))
    var sign: Double = 1
    if s.hasPrefix("-") {
        sign = -1
        s = s.dropFirst()
    } else if s.hasPrefix("+") {
        s = s.dropFirst()
    }
    if let plain = Double(s), !s.lowercased().contains("n") {
        if plain == 0 { return 0 }
        let signText = text.trimmingCharacters(in: .whitespaces).first.map { "+-".contains($0) ? String($0) : "" } ?? ""
        throw .usage(
            "--\(flag) '\(text)' has no unit: did you mean \(signText)\(s)ms or \(signText)\(s)s?",
            recovery: "durations need a unit: ms, s, m or h (e.g. 500ms, 90s, 1h30m); see README \"Durations\""
        )
    }
    var total: Double = 0
    var number = ""
    var i = s.startIndex
    var matchedAny = false
    while i < s.endIndex {
        let c = s[i]
        if c.isASCII && (c.isNumber || c == ".") {
            number.append(c)
            i = s.index(after: i)
            continue
        }
        var unit = ""
        while i < s.endIndex, s[i].isLetter {
            unit.append(s[i])
            i = s.index(after: i)
        }
        guard let n = Double(number) else { break }
        let factor: Double
        switch unit {
        case "ms": factor = 1
        case "s": factor = 1000
        case "m", "min": factor = 60_000
        case "h": factor = 3_600_000
        default:
            throw .usage("--\(flag) '\(text)': unknown unit '\(unit)'; use ms, s, m or h (\(examples))")
        }
        total += n * factor
        number = ""
        matchedAny = true
    }
    guard matchedAny, number.isEmpty else {
        let more = signed ? "e.g. 90s, -1h, +500ms, 1h30m" : "e.g. 90s, 500ms, 1h30m"
        throw .usage("--\(flag) '\(text)' is not a duration; use \(more)")
    }
    return sign * total
}

/// Writes command output: plain text, or the `--json` envelope `{"ok": true, "data": …}`.
public struct Output {
    /// Whether `--json` was given.
    public var json: Bool

    /// Creates an output.
    public init(json: Bool) { self.json = json }

    /// Prints a success result: `text` for people, `data` in the envelope.
    public func success(_ text: @autoclosure () -> String, data: JSONValue) {
        if json {
            printJSON(JSONValue.object(["ok": .bool(true), "data": data]))
        } else {
            let t = text()
            if !t.isEmpty { print(t) }
        }
    }

    /// Prints an error: to stderr for people, the envelope `{"ok": false, "error": {code, message, recovery}}` on
    /// stdout for `--json` (with `"data"` when the error carries some).
    public func failure(_ e: CLIError) {
        if json {
            var err: [String: JSONValue] = ["code": .string(e.code), "message": .string(e.message)]
            err["recovery"] = e.recovery.map { .string($0) } ?? .null
            var envelope: [String: JSONValue] = ["ok": .bool(false), "error": .object(err)]
            if let data = e.data { envelope["data"] = data }
            printJSON(JSONValue.object(envelope))
        } else {
            var text = "error: \(e.message)\n"
            if let r = e.recovery { text += "hint: \(r)\n" }
            StandardStream.write(Array(text.utf8), to: 2)
        }
    }

    /// Prints one compact JSON line (NDJSON).
    public func printJSON(_ v: some Encodable) {
        if let b = try? WireJSON.encode(v) {
            StandardStream.write(Array(b + [0x0A]), to: 1)
        }
    }
}

/// Where `livebusd` listens and `livebus` connects by default: `$LIVEBUS_SOCKET`, else
/// `$XDG_RUNTIME_DIR/livebus.sock` when that directory is the user's own with mode 0700, else
/// `/tmp/livebus-<uid>/livebus.sock` (``SocketPath/defaultPath(environment:)``, the one rule).
public func defaultSocketPath() -> String { SocketPath.defaultPath() }

/// The version of both executables.
public let liveBusVersion = "0.1.0"

/// A file-system error for a person: the system's reason (`Permission denied`, `No such file or directory`), not
/// Foundation's error dump.
/// - Parameter error: What a Foundation file call threw.
/// - Returns: The POSIX reason when there is one, else the error's localized description.
public func fileErrorReason(_ error: any Error) -> String {
    let ns = error as NSError
    if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        return String(cString: strerror(Int32(underlying.code)))
    }
    if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
    switch CocoaError.Code(rawValue: ns.code) {
    case .fileWriteNoPermission, .fileReadNoPermission: return "Permission denied"
    case .fileNoSuchFile, .fileReadNoSuchFile: return "No such file or directory"
    case .fileWriteOutOfSpace: return "No space left on device"
    case .fileWriteVolumeReadOnly: return "Read-only file system"
    case .fileWriteFileExists: return "File exists"
    default: return ns.localizedDescription
    }
}
