import Foundation
import LiveBusWire

/// Text rendering of `status` and `order list` results.
enum StatusText {
    static func num(_ v: JSONValue?) -> Double { v?.doubleValue ?? 0 }

    /// Milliseconds for a person, by the one rule of the CLI's text (README "Durations"): whole milliseconds
    /// (`-30000 ms`, as `retried every 500 ms`), a tenth only below 1 ms, where the fraction is the information (a
    /// local round trip, a settled error bound: `0.3 ms`). The status JSON keeps the daemon's fractional estimates.
    /// - Parameters:
    ///   - v: Milliseconds.
    ///   - signed: Whether a sign is always written (an offset: `+90000 ms`, `-30000 ms`).
    /// - Returns: The figure with its unit, e.g. `-30000 ms`, `0.3 ms`.
    static func milliseconds(_ v: Double, signed: Bool = false) -> String {
        let sign = signed && v >= 0 ? "+" : ""
        if v != 0 && abs(v) < 1 { return sign + String(format: "%.1f ms", v) }
        return sign + "\(Int(v.rounded())) ms"
    }

    static func render(_ d: JSONValue) -> String {
        var s = "daemon on \(d["socket"]?.stringValue ?? "?") · scenario \(d["scenario"]?.stringValue ?? "none")"
        s += " at \(LivebusCommand.fmt(num(d["timeScale"])))× · up \(age(Int64(num(d["uptimeMs"]))))\n\n"
        s += degraded(d)
        s += federation(d)
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
                line +=
                    " · clock offset \(milliseconds(num(c["offsetMs"]), signed: true))"
                    + " ±\(milliseconds(num(c["errorBoundMs"])))"
                    + String(format: ", drift %+.1f ppm", num(c["driftPPM"]))
                    + ", rtt \(milliseconds(num(c["roundTripMs"])))"
            }
            line += " · \(Int(num(x["eventsSent"]))) events"
            s += line + "\n"
            if let sc = x["scheduler"], sc != .null {
                let queued: Int = { if case .array(let q)? = sc["queued"] { q.count } else { 0 } }()
                var l2 =
                    "      scheduler: budget \(Int(num(sc["priority10BudgetLeft"])))/\(Int(num(sc["priority10Budget"]))) left"
                l2 +=
                    " · \(queued) queued · \(Int(num(sc["coalescedCount"]))) coalesced · \(Int(num(sc["deliveredCount"]))) delivered"
                if let w = sc["nextRefreshWindowAtMilliseconds"]?.doubleValue {
                    let inSeconds = Int((w - num(d["serverTime"])) / 1000)
                    l2 +=
                        inSeconds > 0
                        ? " · next refresh window in \(inSeconds) s" : " · refresh window due (the phone asks next)"
                }
                if let open = sc["openWindow"]?.stringValue { l2 += " · window open (\(open))" }
                s += l2 + "\n"
            }
            if case .array(let ex)? = x["explain"] {
                for e in ex {
                    var l3 =
                        "      · \(e["topic"]?.stringValue ?? "-")#\(Int(num(e["sequence"]))) \(e["outcome"]?.stringValue ?? "?"): \(e["reason"]?.stringValue ?? "?")"
                    if let w = e["words"]?.stringValue { l3 += " — \(w)" }
                    s += l3 + "\n"
                }
            }
        }
        let total = Int(num(d["sessionCount"]))
        if total > sessions.count {
            // `livebus status` reads every page; only a session larger than one answer frame is left unread.
            s +=
                "  … \(total - sessions.count) more of \(total) sessions could not be read (one is larger than an answer)\n"
        }
        s += apnsTokens(d["apns"])
        s += "\nORDERS\n" + orders(d["orders"] ?? .array([]))
        if let f = d["federation"], f != .null {
            s += "  (this daemon's orders only: each daemon of the federation lists the orders created on it)\n"
        }
        let shownOrders: Int = { if case .array(let a)? = d["orders"] { a.count } else { 0 } }()
        let orderCount = Int(num(d["orderCount"]))
        if orderCount > shownOrders {
            s += "  (the newest \(shownOrders) of \(orderCount) orders; `livebus order list` shows them all)\n"
        }
        return s
    }

    /// The `APNS PUSH TOKENS` section (issue 17): per phone its topic and push-to-start token, each activity's
    /// token, and the broadcast channels; empty when no phone is attached, or when the daemon has no APNs endpoint
    /// (`"endpoint": false`: no --apns/--apns-socket, so nothing accepts a push to these tokens; `--json` still
    /// lists them, as the tokens the phones would hold).
    static func apnsTokens(_ a: JSONValue?) -> String {
        guard let a, a["endpoint"]?.boolValue == true, case .array(let phones)? = a["phones"], !phones.isEmpty
        else { return "" }
        var s = "\nAPNS PUSH TOKENS (POST /3/device/<token>)\n"
        for p in phones {
            s += "  \(p["session"]?.stringValue ?? "?") · apns-topic \(p["topic"]?.stringValue ?? "?")\n"
            s += "      push-to-start  \(p["pushToStartToken"]?.stringValue ?? "?")\n"
            if case .array(let acts)? = p["activities"] {
                for x in acts {
                    var l = "      \(x["order"]?.stringValue ?? "?")"
                    l += "  \(x["token"]?.stringValue ?? "(no token: channel only)")"
                    if let c = x["channel"]?.stringValue { l += " · channel \(c)" }
                    if x["ended"]?.boolValue == true { l += " · ended" }
                    s += l + "\n"
                }
            }
        }
        if case .array(let channels)? = a["channels"], !channels.isEmpty {
            s +=
                "  channels: "
                + channels.map {
                    "\($0["id"]?.stringValue ?? "?") (\($0["bundleID"]?.stringValue ?? "?"), storage policy \(Int(num($0["messageStoragePolicy"]))))"
                }.joined(separator: ", ") + "\n"
        }
        return s
    }

    /// `order list`: an array of orders, or a page `{"orders": [...], "total", "offset"}`.
    static func orders(_ d: JSONValue) -> String {
        if let page = d["orders"] {
            var s = orders(page)
            let count: Int = { if case .array(let a) = page { a.count } else { 0 } }()
            s += "  (\(count) of \(Int(num(d["total"]))) orders from offset \(Int(num(d["offset"]))))\n"
            return s
        }
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
