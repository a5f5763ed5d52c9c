import Foundation
import LiveBusActivity
import LiveBusClient
import LiveBusClock
import LiveBusLayout
import LiveBusWire

/// The live text view of one session: its posture, sync state, clock, and each activity as the lock screen and
/// Dynamic Island would show it.
enum SessionView {
    static let width = 78

    static func deviceName(_ id: String) -> String {
        (try? DeviceCatalog.bundled().device(id).name) ?? id
    }

    static func clockText(_ ms: Int64) -> String {
        let s = Double(ms) / 1000
        if abs(s) >= 3600 { return String(format: "%+.2f h", s / 3600) }
        return String(format: "%+.1f s", s)
    }

    static func timeOfDay(_ ms: Int64) -> String {
        var t = tm()
        var secs = time_t(ms / 1000)
        gmtime_r(&secs, &t)
        return String(format: "%02d:%02d:%02d", t.tm_hour, t.tm_min, t.tm_sec)
    }

    /// `sync: degraded since 12:00:31 client time · NATS link reconnecting: …`: the shown state with the daemon's
    /// SYNC (PROTOCOL.md §5.9): since when (the phone's clock) and why.
    static func syncLine(_ state: SyncState, _ d: SyncBody) -> String {
        var line = "sync: \(state.rawValue)"
        if d.state != .live || state == .live {
            line += " (daemon \(d.state.rawValue) since \(timeOfDay(d.since)) client time)"
        }
        if let r = d.reason { line += " · \(r)" }
        return line
    }

    /// Lines for one session (no trailing newline), each exactly `width` terminal cells of box drawing (East Asian
    /// width: Hangul 2, box drawing 1; ``TerminalText``); longer text is cut with `…`.
    static func render(_ s: ClientSession, title: String? = nil, showLayout: Bool = false, width: Int = width)
        -> [String]
    {
        let width = max(20, width)
        func pad(_ text: String) -> String { SessionView.pad(text, width: width) }
        let o = s.options
        let now = s.now()
        var head = "\(title ?? s.name) · \(deviceName(o.device)) · \(o.posture.foldState) \(o.posture.orientation)"
        head += " · \(o.appState) · clock \(clockText(o.clockSkewMilliseconds))"
        if o.clockDriftPPM != 0 { head += String(format: " %+.0f ppm", o.clockDriftPPM) }
        // "┌─ " + head + " " + dashes + "┐" is exactly `width` columns; a head too long for it is cut with "…".
        head = TerminalText.truncate(head, to: width - 5)
        var lines = [
            "┌─ " + head + " " + String(repeating: "─", count: max(0, width - 5 - TerminalText.columns(head))) + "┐"
        ]
        var sync = "sync: \(s.syncState.rawValue)"
        if let d = s.daemonSync, s.syncState == .degraded || s.syncState == .catchingUp, d.state != .live {
            sync = syncLine(s.syncState, d)
        } else if let live = s.lastLive, s.syncState != .live {
            sync += " (last live \(timeOfDay(live.millisecondsSinceEpoch)) client time)"
        }
        sync += " · phone time \(timeOfDay(now.millisecondsSinceEpoch))"
        lines.append(pad(sync))
        let plan = PhoneLayout.plan(s)
        let activities = plan.lockScreenOrder.compactMap { s.board.activity($0) }
        if activities.isEmpty { lines.append(pad("no Live Activity yet")) }
        for a in activities {
            let island = plan.assignment(a.orderID)?.island.rawValue ?? "none"
            let v = ActivityView(activity: a, at: now, language: .korean)
            let en = ActivityView(activity: a, at: now, language: .english)
            let seq = s.replicas["orders/\(a.orderID)"]?.sequence ?? 0
            var first = "\(a.orderID) [\(a.state.rawValue)] \(a.content.summary.ko) · \(a.content.summary.en)"
            if let c = v.countdown { first += " · \(c)" }
            first += " · seq \(seq)"
            lines.append(pad(first))
            if let removal = v.removalAt {
                lines.append(pad("  leaves the lock screen at \(timeOfDay(removal.millisecondsSinceEpoch)) phone time"))
            }
            // The planner decides the presentation: compact for one ongoing activity, minimal (attached and
            // detached) for two or more, chosen by relevance score (live-activities.md §1.1, §4.1).
            if island == "compact" && !v.compactLeading.isEmpty {
                let leading = v.compactLeading.joined(separator: " ")
                lines.append(pad("  Dynamic Island compact: ⟦\(leading) │ \(v.compactTrailing ?? "")⟧"))
            } else if island.hasPrefix("minimal") {
                lines.append(pad("  Dynamic Island \(island): ⟦\(v.minimal ?? "-")⟧"))
            }
            for l in v.lockScreen.dropFirst() { lines.append(pad("  " + l)) }
            if en.showsStaleLines || en.showsLastEstimateLine {
                lines.append(pad("  " + en.lockScreen.suffix(en.showsStaleLines ? 3 : 1).joined(separator: " · ")))
            }
        }
        if let (_, r) = s.layout {
            for l in LiveActivityLayout.overflowLines(r.truncations) { lines.append(pad("  " + l)) }
        }
        if showLayout, let (_, r) = s.layout {
            lines.append(
                pad(
                    "layout: \(r.arrangement) · \(r.horizontalSizeClass.rawValue) width · "
                        + (r.invariants.allSatisfy(\.holds) ? "invariants hold" : "INVARIANTS FAIL")
                )
            )
            for l in LayoutRenderer.text(r, width: 40).split(separator: "\n") { lines.append(pad("  " + l)) }
        }
        lines.append("└" + String(repeating: "─", count: width - 2) + "┘")
        return lines
    }

    /// One row of the box: `│ text │`, exactly `width` cells (text cut with `…` or padded).
    static func pad(_ text: String, width: Int = width) -> String {
        "│ " + TerminalText.fit(text, width: width - 4) + " │"
    }
}
