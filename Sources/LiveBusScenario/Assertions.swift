import Foundation

/// An assertion step of an e2e scenario (`Protocol/E2E.md` §2.4): at a scenario time, or after an action, on
/// named phones, over what each phone shows, read back from the phones' JSON-lines logs.
public struct E2EAssertion: Sendable, Equatable {
    /// When the step looks.
    public enum Anchor: Sendable, Equatable {
        /// At a scenario time, ms (mapped to the wall clock as actions are: `start + at / timeScale`).
        case at(Int64)
        /// When the action with this `id` was performed (the runner's true instant).
        case after(String)
    }

    /// The step's number among the scenario's assertion steps, 1-based, in file order.
    public var index: Int
    /// The step's name (given, or `step N`).
    public var name: String
    /// When it looks.
    public var anchor: Anchor
    /// How long after the anchor, **wall** ms, the states checked may take to show (propagation; default 250 ms);
    /// the countdown is read at the first instant they all show.
    public var withinMilliseconds: Int64
    /// Which phones.
    public var target: E2ESessionTarget
    /// The order the checks of one activity are about; nil = the phone's only order.
    public var order: String?
    /// What must hold, all at one instant of the window.
    public var checks: [E2EAssertionCheck]
    /// The 1-based line of the step's object in the file.
    public var line: Int

    /// Creates a step.
    public init(
        index: Int,
        name: String,
        anchor: Anchor,
        withinMilliseconds: Int64 = 250,
        target: E2ESessionTarget,
        order: String? = nil,
        checks: [E2EAssertionCheck],
        line: Int = 0
    ) {
        self.index = index
        self.name = name
        self.anchor = anchor
        self.withinMilliseconds = withinMilliseconds
        self.target = target
        self.order = order
        self.checks = checks
        self.line = line
    }
}

/// How one rect relates to another (window coordinates, points; y grows downwards).
public enum E2ERectRelation: String, Sendable, Equatable, CaseIterable {
    /// `a.maxX ≤ b.minX`.
    case leftOf
    /// `a.minX ≥ b.maxX`.
    case rightOf
    /// `a.maxY ≤ b.minY`.
    case above
    /// `a.minY ≥ b.maxY`.
    case below
    /// `a` lies within `b`.
    case inside
    /// `b` lies within `a`.
    case contains
    /// The two share no area (touching edges is fine).
    case notCrossing
    /// The two share some area.
    case crossing

    /// Whether `a` relates so to `b` (`[x, y, width, height]`), within 0.01 pt.
    public func holds(_ a: [Double], _ b: [Double]) -> Bool {
        guard a.count == 4, b.count == 4 else { return false }
        let e = 0.01
        let (ax0, ay0, ax1, ay1) = (a[0], a[1], a[0] + a[2], a[1] + a[3])
        let (bx0, by0, bx1, by1) = (b[0], b[1], b[0] + b[2], b[1] + b[3])
        let overlapW = min(ax1, bx1) - max(ax0, bx0)
        let overlapH = min(ay1, by1) - max(ay0, by0)
        let crosses = overlapW > e && overlapH > e
        switch self {
        case .leftOf: return ax1 <= bx0 + e
        case .rightOf: return ax0 >= bx1 - e
        case .above: return ay1 <= by0 + e
        case .below: return ay0 >= by1 - e
        case .inside: return ax0 >= bx0 - e && ay0 >= by0 - e && ax1 <= bx1 + e && ay1 <= by1 + e
        case .contains: return bx0 >= ax0 - e && by0 >= ay0 - e && bx1 <= ax1 + e && by1 <= ay1 + e
        case .notCrossing: return !crosses
        case .crossing: return crosses
        }
    }
}

/// One expectation of an assertion step (`expect` in the file).
public enum E2EAssertionCheck: Sendable, Equatable {
    /// The status the activity shows, e.g. `delivering`.
    case status(String)
    /// Whether the activity shows stale.
    case stale(Bool)
    /// The remaining time shown, **scenario** ms (the phone's countdown × the time scale), within a tolerance
    /// (scenario ms).
    case remaining(Int64, tolerance: Int64)
    /// The Dynamic Island presentation of the order: `compact`, `minimal` (attached or detached),
    /// `minimalAttached`, `minimalDetached` or `none`.
    case island(String)
    /// The order's place on the Lock Screen: 1 = top; 0 = not on it.
    case lockScreen(Int)
    /// Whether the order is on the Lock Screen at all.
    case onLockScreen(Bool)
    /// The layout's arrangement (`vertical`, `horizontal`, `tabletop`, `column`, `fullScreen`).
    case arrangement(String)
    /// The layout's horizontal size class (`compact`, `regular`).
    case sizeClass(String)
    /// A rect's relation to another, by the layout engine's rect names.
    case rect(String, E2ERectRelation, String)
    /// Whether any text or box overflows its space.
    case overflow(Bool)
    /// This element (e.g. `compactTrailing.timer`) fits: it is not among the overflowing ones.
    case fits(String)
    /// The phone's sync state: `connecting`, `catchingUp`, `live`, `degraded` (PROTOCOL.md §5.9), `disconnected`, `closed`.
    case sync(String)

    /// The check's name as the file writes it (`rects[0]` for a rect relation is named by the caller).
    public var field: String {
        switch self {
        case .status: "status"
        case .stale: "stale"
        case .remaining: "remaining"
        case .island: "island"
        case .lockScreen, .onLockScreen: "lockScreen"
        case .arrangement: "arrangement"
        case .sizeClass: "sizeClass"
        case .rect(let a, let r, let b): "rect \(a) \(r.rawValue) \(b)"
        case .overflow: "overflow"
        case .fits: "fits"
        case .sync: "sync"
        }
    }

    /// Whether the check reads a quantity that changes continuously (the countdown), not a state.
    var isCountdown: Bool {
        if case .remaining = self { return true }
        return false
    }

    /// Whether the check reads the phone's layout lines (else its update and sync lines).
    var readsLayout: Bool {
        switch self {
        case .island, .lockScreen, .onLockScreen, .arrangement, .sizeClass, .rect, .overflow, .fits: true
        default: false
        }
    }

    /// Island values the format accepts.
    public static let islandValues = ["compact", "minimal", "minimalAttached", "minimalDetached", "none"]
    /// Arrangements the format accepts.
    public static let arrangements = ["vertical", "horizontal", "tabletop", "column", "fullScreen"]
    /// Size classes the format accepts.
    public static let sizeClasses = ["compact", "regular"]
    /// Sync states the format accepts (`SyncState` of the Swift client).
    public static let syncStates = ["connecting", "catchingUp", "live", "degraded", "disconnected", "closed"]
}

/// A sync-state change a client logged (`{"type": "sync", "state", "clientTime"}`, PROTOCOL.md §10).
public struct E2ESyncRecord: Sendable, Equatable {
    /// The new state.
    public var state: String
    /// The phone's clock, ms since the Unix epoch.
    public var clientTime: Int64
    /// 1-based line in ``file``.
    public var line: Int
    /// The log file's name (`pro.jsonl`).
    public var file: String

    /// Creates a record.
    public init(state: String, clientTime: Int64, line: Int = 0, file: String = "") {
        self.state = state
        self.clientTime = clientTime
        self.line = line
        self.file = file
    }
}

/// One phone's failure of one step.
public struct E2EAssertionFailure: Sendable, Equatable, CustomStringConvertible {
    /// The phone (session name).
    public var session: String
    /// The check, as the file names it (`status`, `rect cardColumn leftOf reservedRegion`…).
    public var check: String
    /// What the step expects.
    public var expected: String
    /// What the phone showed (at the end of the window).
    public var observed: String
    /// When the observed value was read, relative to the scenario's start on the wall clock (`+4.013 s`).
    public var at: String
    /// The log line the observed value comes from: `file:line: text`, or why there is none.
    public var logLine: String

    /// Creates a failure.
    public init(session: String, check: String, expected: String, observed: String, at: String, logLine: String) {
        self.session = session
        self.check = check
        self.expected = expected
        self.observed = observed
        self.at = at
        self.logLine = logLine
    }

    /// `phone duo-half: stale expected true, observed false at +4.013 s (duo-half.jsonl:7: {…})`.
    public var description: String {
        "phone \(session): \(check) expected \(expected), observed \(observed) at \(at) (\(logLine))"
    }
}

/// The outcome of one assertion step.
public struct E2EAssertionResult: Sendable, Equatable {
    /// The step.
    public var step: E2EAssertion
    /// The phones it looked at.
    public var sessions: [String]
    /// Every phone's failures (empty when it passed).
    public var failures: [E2EAssertionFailure]
    /// Why the step could not be evaluated at all (an `after` whose action never ran…), else nil.
    public var error: String?

    /// Whether the step held on every phone.
    public var passed: Bool { failures.isEmpty && error == nil }

    /// Creates a result (the checker makes them; reports' tests build them directly).
    public init(step: E2EAssertion, sessions: [String], failures: [E2EAssertionFailure], error: String? = nil) {
        self.step = step
        self.sessions = sessions
        self.failures = failures
        self.error = error
    }

    /// `step 3 'unfolded' (line 41, at 40s, phones duo): …` — the step with its first failure.
    public var summary: String {
        let anchor: String
        switch step.anchor {
        case .at(let ms): anchor = "at \(Double(ms) / 1000) s"
        case .after(let id): anchor = "after \(id)"
        }
        let head =
            "step \(step.index) '\(step.name)' (line \(step.line), \(anchor), phones \(sessions.joined(separator: ", ")))"
        if let error { return "\(head): \(error)" }
        if let f = failures.first { return "\(head): \(f)" }
        return "\(head): holds"
    }
}

/// Evaluates assertion steps over the logs of one run. Pure: no clock, no I/O.
///
/// A phone's state at a true instant T is read from its logs: the last applied record of the order at or before T
/// (status, stale, countdown target), the last layout line at or before T (the client's own lines when it logs
/// any, else the runner's), and the last sync line (before any, `connecting`). A step holds on a phone when at
/// some instant of `[anchor, anchor + within]` every state check holds at once and, at the first such instant, the
/// countdown is within its tolerance; the window is sampled every 10 ms and at every log line inside it. A failure
/// reports the values at that instant, or at the end of the window when the states never all showed.
public enum E2EAssertionChecker {
    /// Evaluates every step of `scenario`.
    /// - Parameters:
    ///   - logs: what the run collected.
    ///   - scenario: the scenario (its steps and sessions).
    ///   - timeScale: the time scale the run used (scenario ms per wall ms).
    ///   - actionTimes: when each action with an `id` was performed, true clock, ms since the Unix epoch.
    /// - Returns: one result per step, in step order.
    public static func check(
        _ logs: E2ERunLogs,
        scenario: E2EScenario,
        timeScale: Double,
        actionTimes: [String: Int64]
    ) -> [E2EAssertionResult] {
        scenario.assertions.map { step in
            evaluate(step, logs: logs, scenario: scenario, timeScale: timeScale, actionTimes: actionTimes)
        }
    }

    static func evaluate(
        _ step: E2EAssertion,
        logs: E2ERunLogs,
        scenario: E2EScenario,
        timeScale: Double,
        actionTimes: [String: Int64]
    ) -> E2EAssertionResult {
        let names = scenario.sessionNames(for: step.target)
        var result = E2EAssertionResult(step: step, sessions: names, failures: [])
        let start: Double
        switch step.anchor {
        case .at(let ms): start = Double(logs.startTrueMs) + (Double(ms) / timeScale).rounded()
        case .after(let id):
            guard let t = actionTimes[id] else {
                result.error = "the action '\(id)' was never performed"
                return result
            }
            start = Double(t)
        }
        let end = start + Double(step.withinMilliseconds)
        for name in names {
            guard let log = logs.sessions.first(where: { $0.name == name }) else {
                result.failures.append(
                    .init(
                        session: name,
                        check: "session",
                        expected: "a log",
                        observed: "none",
                        at: rel(start, logs, timeScale),
                        logLine: "no log"
                    )
                )
                continue
            }
            let phone = PhoneTimeline(log)
            var instants: Set<Double> = [start, end]
            var t = start
            while t < end {
                instants.insert(t)
                t += 10
            }
            for e in phone.eventTimes where e >= start && e <= end { instants.insert(e) }
            // States (status, stale, layout, sync) may take until the window's end to show; the countdown is read
            // at the first instant they all show (at the anchor when the step checks no state).
            let states = step.checks.filter { !$0.isCountdown }
            let countdowns = step.checks.filter(\.isCountdown)
            let first = instants.sorted().first { i in
                states.allSatisfy { phone.observe($0, at: i, order: step.order, timeScale: timeScale).ok }
            }
            let readAt = first ?? end
            if first != nil,
                countdowns.allSatisfy({ phone.observe($0, at: readAt, order: step.order, timeScale: timeScale).ok })
            {
                continue
            }
            for c in step.checks {
                let o = phone.observe(c, at: readAt, order: step.order, timeScale: timeScale)
                guard !o.ok else { continue }
                result.failures.append(
                    .init(
                        session: name,
                        check: c.field,
                        expected: o.expected,
                        observed: o.observed,
                        at: rel(readAt, logs, timeScale),
                        logLine: o.logLine
                    )
                )
            }
        }
        return result
    }

    /// `+4.75 s wall (scenario 95.0 s)`: an instant relative to the run's start.
    static func rel(_ t: Double, _ logs: E2ERunLogs, _ timeScale: Double) -> String {
        let ms = (t - Double(logs.startTrueMs)).rounded()
        let scenario = (ms * timeScale / 100).rounded() / 10
        return "+" + String(ms / 1000) + " s wall (scenario \(scenario) s)"
    }
}

/// One phone's records, layouts and sync states on the true clock.
private struct PhoneTimeline {
    struct Observation {
        var ok: Bool
        var expected: String
        var observed: String
        var logLine: String
    }

    let log: E2ESessionLog
    let model: E2EClientClockModel
    let records: [(Double, E2EClientRecord)]
    let layouts: [(Double, E2ELayoutRecord)]
    let syncs: [(Double, E2ESyncRecord)]

    init(_ log: E2ESessionLog) {
        self.log = log
        let model = log.clockModel
        self.model = model
        var cursor = E2EClientClockModel.Cursor()
        records = log.records.map { (model.trueTime(ofClient: Double($0.clientTime), cursor: &cursor), $0) }
        // The client's own layout lines when it logs any (they carry the island and the Lock Screen), else the
        // runner's (the layout engine's for the phone's posture).
        let own = log.layouts.filter { $0.clientTime != nil }
        let chosen = own.isEmpty ? log.layouts : own
        var lc = E2EClientClockModel.Cursor()
        layouts = chosen.map { l in
            (l.clientTime.map { model.trueTime(ofClient: Double($0), cursor: &lc) } ?? Double(l.trueTime), l)
        }
        .sorted { $0.0 < $1.0 }
        var sc = E2EClientClockModel.Cursor()
        syncs = log.syncs.map { (model.trueTime(ofClient: Double($0.clientTime), cursor: &sc), $0) }
    }

    var eventTimes: [Double] { records.map(\.0) + layouts.map(\.0) + syncs.map(\.0) }

    func line(_ file: String, _ line: Int) -> String {
        let text = log.rawLines[file].flatMap { line >= 1 && line <= $0.count ? $0[line - 1] : nil } ?? ""
        return "\(file):\(line): \(text.prefix(400))"
    }

    func observe(_ check: E2EAssertionCheck, at t: Double, order: String?, timeScale: Double) -> Observation {
        func obs(_ ok: Bool, _ e: String, _ o: String, _ l: String) -> Observation {
            Observation(ok: ok, expected: e, observed: o, logLine: l)
        }
        if check.readsLayout {
            guard let (_, l) = layouts.last(where: { $0.0 <= t }) else {
                return obs(false, expectedText(check), "no layout yet", "no layout line at or before this instant")
            }
            let where_ = line(l.file, l.line)
            switch check {
            case .arrangement(let a):
                guard let got = l.arrangement else { return obs(false, a, "not logged", where_) }
                return obs(got == a, a, got, where_)
            case .sizeClass(let c):
                guard let got = l.horizontalSizeClass else { return obs(false, c, "not logged", where_) }
                return obs(got == c, c, got, where_)
            case .rect(let a, let rel, let b):
                guard let rects = l.rects else {
                    return obs(false, "\(a) \(rel.rawValue) \(b)", "no rects logged", where_)
                }
                guard let ra = rects[a], let rb = rects[b] else {
                    let missing = [a, b].filter { rects[$0] == nil }.joined(separator: ", ")
                    return obs(
                        false,
                        "\(a) \(rel.rawValue) \(b)",
                        "no rect named \(missing) (rects: \(rects.keys.sorted().joined(separator: ", ")))",
                        where_
                    )
                }
                return obs(rel.holds(ra, rb), "\(a) \(rel.rawValue) \(b)", "\(a) \(fmt(ra)), \(b) \(fmt(rb))", where_)
            case .overflow(let want):
                guard let over = l.overflow else { return obs(false, "\(want)", "not logged", where_) }
                return obs(
                    over.isEmpty != want,
                    want ? "something overflows" : "nothing overflows",
                    over.isEmpty ? "nothing overflows" : over.joined(separator: "; "),
                    where_
                )
            case .fits(let element):
                guard let over = l.overflow else { return obs(false, "\(element) fits", "not logged", where_) }
                let hit = over.filter { $0.hasPrefix("overflow \(element) ") || $0 == element }
                return obs(hit.isEmpty, "\(element) fits", hit.isEmpty ? "fits" : hit.joined(separator: "; "), where_)
            case .island(let want):
                guard let island = l.island else {
                    return obs(false, want, "not logged (the \(log.client.rawValue) client logs no island)", where_)
                }
                guard let o = order ?? (island.count == 1 ? island.keys.first : nil) else {
                    return obs(false, want, "name an order: the island shows \(island.keys.sorted())", where_)
                }
                let got = island[o] ?? "none"
                let ok = want == "minimal" ? got.hasPrefix("minimal") : got == want
                return obs(ok, "\(o) \(want)", "\(o) \(got)", where_)
            case .lockScreen(let pos):
                guard let ls = l.lockScreen else {
                    return obs(
                        false,
                        "\(pos)",
                        "not logged (the \(log.client.rawValue) client logs no lock screen)",
                        where_
                    )
                }
                guard let o = order ?? (ls.count == 1 ? ls.first : nil) else {
                    return obs(false, "\(pos)", "name an order: the lock screen shows \(ls)", where_)
                }
                let got = (ls.firstIndex(of: o) ?? -1) + 1
                return obs(got == pos, "\(o) at \(pos)", "\(o) at \(got) of \(ls)", where_)
            case .onLockScreen(let want):
                guard let ls = l.lockScreen else {
                    return obs(
                        false,
                        "\(want)",
                        "not logged (the \(log.client.rawValue) client logs no lock screen)",
                        where_
                    )
                }
                guard let o = order ?? (ls.count == 1 ? ls.first : nil) else {
                    return obs(false, "\(want)", "name an order: the lock screen shows \(ls)", where_)
                }
                return obs(ls.contains(o) == want, "\(o) shown \(want)", "lock screen \(ls)", where_)
            default:
                return obs(false, "", "", where_)
            }
        }
        if case .sync(let want) = check {
            guard let (_, s) = syncs.last(where: { $0.0 <= t }) else {
                let note = log.syncs.isEmpty ? "no sync line in the log" : "no sync line at or before this instant"
                return obs(want == "connecting", want, "connecting", note)
            }
            return obs(s.state == want, want, s.state, line(s.file, s.line))
        }
        // Status, stale, remaining: the order's last applied record.
        let applied = records.filter { $0.0 <= t && $0.1.applied }
        let orders = Set(records.map(\.1.order))
        guard let o = order ?? (orders.count == 1 ? orders.first : nil) else {
            return obs(
                false,
                expectedText(check),
                orders.isEmpty ? "no activity" : "name an order: the phone has \(orders.sorted())",
                "no record"
            )
        }
        guard let (_, r) = applied.last(where: { $0.1.order == o }) else {
            return obs(
                false,
                expectedText(check),
                "no activity for \(o) yet",
                "no record of \(o) at or before this instant"
            )
        }
        let where_ = line(r.file, r.line)
        switch check {
        case .status(let s): return obs(r.status == s, s, r.status, where_)
        case .stale(let s): return obs(r.stale == s, "\(s)", "\(r.stale)", where_)
        case .remaining(let want, let tol):
            guard let eta = r.etaTarget else { return obs(false, expectedText(check), "no countdown", where_) }
            let shownWall = max(0, Double(eta) - model.clientTime(atTrue: t))
            let shown = Int64((shownWall * timeScale).rounded())
            return obs(abs(shown - want) <= tol, expectedText(check), "\(shown) ms", where_)
        default:
            return obs(false, "", "", where_)
        }
    }

    func expectedText(_ c: E2EAssertionCheck) -> String {
        switch c {
        case .status(let s), .island(let s), .arrangement(let s), .sizeClass(let s), .sync(let s): s
        case .stale(let b), .overflow(let b), .onLockScreen(let b): "\(b)"
        case .remaining(let v, let tol): "\(v) ms ± \(tol) ms"
        case .lockScreen(let p): "\(p)"
        case .rect(let a, let r, let b): "\(a) \(r.rawValue) \(b)"
        case .fits(let e): "\(e) fits"
        }
    }

    func fmt(_ r: [Double]) -> String {
        "[" + r.map { $0 == $0.rounded() ? String(Int($0)) : String(format: "%.1f", $0) }.joined(separator: ", ") + "]"
    }
}
