import Foundation
import LiveBusWire

extension StatusText {
    /// The `DEGRADED` block of `status` when the daemon's store refuses writes (a full disk), else "".
    /// - Parameter d: The `status` data; its `degraded` field is `null` or the daemon's ``Daemon/degradedStatus()``.
    /// - Returns: The block, ending with a blank line, or "".
    static func degraded(_ d: JSONValue) -> String {
        guard let g = d["degraded"], g != .null else { return "" }
        var s =
            "DEGRADED for \(Int(num(g["forMs"]) / 1000)) s: \(g["reason"]?.stringValue ?? "the store refuses writes")"
        if let e = g["error"]?.stringValue { s += " (\(e))" }
        s += "\n  \(Int(num(g["heldEvents"]))) simulator events held in memory, in order"
        s += " · \(Int(num(g["failedAttempts"]))) failed attempts, retried every \(Int(num(g["retryEveryMs"]))) ms"
        if g["simulatorPaused"]?.boolValue == true { s += " · simulator paused at the held-events limit" }
        if case .array(let topics)? = g["held"], !topics.isEmpty {
            let shown = topics.prefix(5).map { t in
                "\(t["topic"]?.stringValue ?? "?") ×\(Int(num(t["events"]))) up to \(t["status"]?.stringValue ?? "?")"
            }
            s += "\n  held: " + shown.joined(separator: ", ") + (topics.count > 5 ? ", … \(topics.count - 5) more" : "")
        }
        s += "\n  fix: \(g["fix"]?.stringValue ?? "free space on the data directory's filesystem")\n\n"
        return s
    }
}

extension LivebusCommand {
    /// How long `doctor` waits for the daemon's answer to `status`, in ms: as long as `livebus status` waits.
    static let doctorAnswerTimeoutMs: UInt64 = 5000

    /// The `doctor` check that a daemon answers on `socket`: a HELLO and a `status` COMMAND sent, its RESULT read
    /// within ``doctorAnswerTimeoutMs`` (a socket that accepts and never answers, as a stopped daemon's, fails it:
    /// review finding 3). `fix` says what to do.
    /// - Parameter socket: The daemon's socket, on which a process accepts connections.
    /// - Returns: (check, ok, fix), the exit code the failure maps to (README "Exit codes": 4 when nothing
    ///   answered in time, 3 otherwise), and the `status` data when it answered.
    static func answerCheck(socket: String) -> (check: (String, Bool, String), exit: ExitCode?, status: JSONValue?) {
        do {
            let r = try AdminClient.request(socket: socket, command: "status", timeoutMs: doctorAnswerTimeoutMs)
            guard r.ok, let data = r.data else {
                let why = r.error.map { "\($0.code): \($0.message)" } ?? "its status answer has no data"
                return (
                    ("daemon answering on \(socket)", false, "it answered `status` with an error (\(why))"),
                    .daemonUnreachable, nil
                )
            }
            return (("daemon answering on \(socket)", true, ""), nil, data)
        } catch {
            if error.exit == .timedOut {
                return (
                    (
                        "daemon not answering within \(doctorAnswerTimeoutMs) ms on \(socket)", false,
                        "a process accepts connections there but sends no answer: a stopped or stuck livebusd (resume it with kill -CONT PID, or restart it), or a program that does not speak the LiveBus protocol (fuser -v \(socket) shows which)"
                    ),
                    .timedOut, nil
                )
            }
            return (
                ("daemon answering on \(socket)", false, error.message + (error.recovery.map { "; \($0)" } ?? "")),
                error.exit, nil
            )
        }
    }

    /// The `doctor` check of a live daemon's store: fails while the daemon is degraded, with the reason and what to
    /// do.
    /// - Parameter data: The daemon's answer to `status`.
    /// - Returns: (check, ok, fix).
    static func storeCheck(status data: JSONValue) -> (String, Bool, String) {
        guard let g = data["degraded"], g != .null else { return ("daemon's store accepts writes", true, "") }
        let held = Int(StatusText.num(g["heldEvents"]))
        return (
            "daemon's store accepts writes",
            false,
            "degraded for \(Int(StatusText.num(g["forMs"]) / 1000)) s: \(g["reason"]?.stringValue ?? "the store refuses writes")"
                + " (\(g["error"]?.stringValue ?? "?")), \(held) simulator events held in memory; "
                + (g["fix"]?.stringValue ?? "free space on the data directory's filesystem")
        )
    }
}
