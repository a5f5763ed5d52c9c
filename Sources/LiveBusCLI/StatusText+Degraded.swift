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
    /// The `doctor` check of a live daemon's store: fails while the daemon is degraded, with the reason and what to
    /// do. `nil` when the daemon does not answer `status` (the daemon check already says why).
    /// - Parameter socket: The daemon's socket.
    /// - Returns: (check, ok, fix).
    static func storeCheck(socket: String) -> (String, Bool, String)? {
        guard let r = try? AdminClient.request(socket: socket, command: "status", timeoutMs: 2000), r.ok,
            let data = r.data
        else { return nil }
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
