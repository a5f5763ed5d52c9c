import Foundation
import LiveBusWire

/// Text rendering of `status` and `order list` results.
enum StatusText {
    static func num(_ v: JSONValue?) -> Double { v?.doubleValue ?? 0 }

    static func render(_ d: JSONValue) -> String {
        var s = "daemon on \(d["socket"]?.stringValue ?? "?") · scenario \(d["scenario"]?.stringValue ?? "none")"
        s += " at \(LivebusCommand.fmt(num(d["timeScale"])))× · up \(Int(num(d["uptimeMs"]) / 1000)) s\n\n"
        s += "SESSIONS\n"
        let sessions: [JSONValue] = { if case .array(let a)? = d["sessions"] { a } else { [] } }()
        if sessions.isEmpty { s += "  (none)\n" }
        for x in sessions {
            let p = x["posture"]
            var line =
                "  \(x["id"]?.stringValue ?? "?") \(x["name"]?.stringValue ?? "?") [\(x["role"]?.stringValue ?? "?")]"
            if let dev = x["device"]?.stringValue { line += " \(dev)" }
            if let p { line += " \(p["foldState"]?.stringValue ?? "") \(p["orientation"]?.stringValue ?? "")" }
            line += " · \(x["appState"]?.stringValue ?? "?")"
            if let c = x["clock"], c != .null {
                line += String(
                    format: " · clock offset %+.1f ms ±%.1f, drift %+.1f ppm, rtt %.1f ms",
                    num(c["offsetMs"]),
                    num(c["errorBoundMs"]),
                    num(c["driftPPM"]),
                    num(c["roundTripMs"])
                )
            }
            line += " · \(Int(num(x["eventsSent"]))) events"
            s += line + "\n"
        }
        s += "\nORDERS\n" + orders(d["orders"] ?? .array([]))
        return s
    }

    static func orders(_ d: JSONValue) -> String {
        guard case .array(let list) = d, !list.isEmpty else { return "  (none)\n" }
        var s = ""
        for o in list {
            let summary = o["summary"]
            s +=
                "  \(o["id"]?.stringValue ?? "?") \(o["status"]?.stringValue ?? "?") (\(summary?["ko"]?.stringValue ?? "") · \(summary?["en"]?.stringValue ?? ""))"
            s += " · progress \(Int(num(o["progress"]) * 100))% · seq \(Int(num(o["sequence"])))\n"
        }
        return s
    }
}
