/// The outcome of one invariant over one run.
public struct E2EInvariantResult: Sendable, Equatable {
    /// Invariant name (``E2EInvariantChecker/names``).
    public var name: String
    /// How many items were checked (records, intervals, samples…).
    public var checked: Int
    /// How many broke it.
    public var failures: Int
    /// The first counterexample, for people.
    public var counterexample: String?

    /// Whether it held.
    public var passed: Bool { failures == 0 }

    /// Creates a result (reports and their tests build them directly).
    public init(name: String, checked: Int, failures: Int, counterexample: String?) {
        self.name = name
        self.checked = checked
        self.failures = failures
        self.counterexample = counterexample
    }
}

/// Checks the invariants of `Protocol/E2E.md` §3 over the logs of one run. Pure: no clock, no I/O.
///
/// All instants are converted to the true (host) clock: client records through each session's
/// ``E2EClientClockModel``; the daemon's server clock is the host clock.
public enum E2EInvariantChecker {
    /// The invariants, in table order.
    public static let names = [
        "convergence", "sequence", "statuses", "remaining", "stale", "layout", "crashes", "memory", "actions",
    ]

    /// Runs every invariant.
    /// - Parameters:
    ///   - logs: what the run collected.
    ///   - scenario: the scenario (tolerances and expectations).
    /// - Returns: one result per name in ``names``, same order.
    public static func check(_ logs: E2ERunLogs, scenario: E2EScenario) -> [E2EInvariantResult] {
        let ctx = Context(logs: logs, scenario: scenario)
        return [
            ctx.convergence(), ctx.sequence(), ctx.statuses(), ctx.remaining(), ctx.stale(), ctx.layout(),
            ctx.crashes(), ctx.memory(), ctx.actions(),
        ]
    }
}

/// A result being built: counts every check, keeps the first counterexample.
private struct Tally {
    var name: String
    var checked = 0
    var failures = 0
    var first: String?

    init(_ name: String) { self.name = name }

    mutating func check(_ ok: Bool, _ message: @autoclosure () -> String) {
        checked += 1
        if !ok {
            failures += 1
            if first == nil { first = message() }
        }
    }

    var result: E2EInvariantResult {
        E2EInvariantResult(name: name, checked: checked, failures: failures, counterexample: first)
    }
}

private struct TimedRecord {
    var record: E2EClientRecord
    var trueMs: Double
}

private struct Context {
    let logs: E2ERunLogs
    let scenario: E2EScenario
    /// Per session: records with their true time.
    let timed: [String: [TimedRecord]]
    /// (order, seq) → what the backend had at that sequence.
    let observed: [String: E2EBackendObservation]
    /// order → every status the backend published.
    let backendStatuses: [String: Set<String>]

    init(logs: E2ERunLogs, scenario: E2EScenario) {
        self.logs = logs
        self.scenario = scenario
        var timed: [String: [TimedRecord]] = [:]
        for s in logs.sessions {
            let model = s.clockModel
            var cursor = E2EClientClockModel.Cursor()
            timed[s.name] = s.records.map { r in
                TimedRecord(record: r, trueMs: model.trueTime(ofClient: Double(r.clientTime), cursor: &cursor))
            }
        }
        self.timed = timed
        // The first look at each (order, sequence) stands for the event published with it: during a stall the
        // backend's state moves on (held changes) while its last published sequence stays.
        var observed: [String: E2EBackendObservation] = [:]
        var statuses = logs.timelineStatuses
        for o in logs.observations + logs.final.values.sorted(by: { $0.order < $1.order }) {
            let key = "\(o.order)#\(o.seq)"
            if observed[key] == nil { observed[key] = o }
            // Every order starts `created` (its `start` event), even when no poll saw it in that state.
            statuses[o.order, default: []].formUnion([o.status, "created"])
        }
        self.observed = observed
        self.backendStatuses = statuses
    }

    func at(_ ms: Double) -> String {
        let rel = (ms - Double(logs.startTrueMs)) / 1000
        return "+" + String(Double(Int((rel * 1000).rounded())) / 1000) + " s"
    }

    /// Whether true time `t` is within the settle window after a disturbance of `session`.
    func disturbed(_ session: E2ESessionLog, _ t: Double) -> Bool {
        let w = Double(scenario.tolerances.settleAfterDisturbanceMilliseconds)
        let times =
            session.clockEvents.map { Double($0.trueTime) } + logs.daemon.restarts.map(Double.init)
            + session.moves.map { Double($0.trueTime) }
            + logs.daemon.exits.filter(\.scheduled).map { Double($0.trueTime) }
        return times.contains { t >= $0 && t < $0 + w }
    }

    // MARK: - Invariants

    /// Every session ends showing the backend's final state: the last sequence it processed per topic is the
    /// backend's last, and the last update it applied shows the backend's final status.
    func convergence() -> E2EInvariantResult {
        var t = Tally("convergence")
        t.check(
            logs.final.count >= scenario.expect.minimumOrders,
            "the backend has \(logs.final.count) orders at the end, the scenario expects at least \(scenario.expect.minimumOrders)"
        )
        for (order, status) in scenario.expect.finalStatus.sorted(by: { $0.key < $1.key }) {
            let got = (logs.finalAfterStop[order] ?? logs.final[order])?.status
            t.check(
                got == status,
                "the backend's order \(order) ends \(got ?? "absent"), the scenario expects \(status)"
            )
        }
        for s in logs.sessions {
            t.check(s.malformed.isEmpty, "session \(s.name): unreadable log line \(s.malformed.first ?? "")")
            let records = s.records
            for (order, fin) in logs.final.sorted(by: { $0.key < $1.key }) {
                let topic = "orders/\(order)"
                let updates = records.filter { $0.type == "update" && $0.topic == topic }
                let lastSeq = updates.map(\.seq).max() ?? 0
                let lastApplied = updates.last { $0.applied }
                // A backend still busy when the clients stop may publish between the last look before the stop and
                // the one after it: the session must end within that window, showing the status of where it ended.
                let after = logs.finalAfterStop[order] ?? fin
                let lo = min(fin.seq, after.seq)
                let hi = max(fin.seq, after.seq)
                let expected: String? =
                    lastSeq == fin.seq
                    ? fin.status : lastSeq == after.seq ? after.status : observed["\(order)#\(lastSeq)"]?.status
                let window = lo == hi ? "#\(hi) \(after.status)" : "#\(lo)…#\(hi) (\(fin.status) … \(after.status))"
                t.check(
                    lastSeq >= lo && lastSeq <= hi && (expected == nil || lastApplied?.status == expected),
                    "session \(s.name), \(topic): ends at #\(lastSeq) showing \(lastApplied?.status ?? "nothing"), the backend ends at \(window)"
                )
            }
        }
        return t.result
    }

    /// Per session and topic, processed sequence numbers strictly increase by one; only a snapshot may skip.
    func sequence() -> E2EInvariantResult {
        var t = Tally("sequence")
        for s in logs.sessions {
            var last: [String: UInt64] = [:]
            for tr in timed[s.name] ?? [] where tr.record.type == "update" {
                let r = tr.record
                // In a federation: which daemon the phone was on (a move's gap or repeat shows there).
                let on = s.daemon(atTrueMs: tr.trueMs).map { " on daemon \($0)" } ?? ""
                let prev = last[r.topic] ?? 0
                if r.seq <= prev {
                    t.check(
                        false,
                        "session \(s.name)\(on), \(r.topic): #\(r.seq) processed after #\(prev) (log line \(r.line)): applied twice or out of order"
                    )
                } else {
                    t.check(
                        r.seq == prev + 1 || r.delivery == "snapshot",
                        "session \(s.name)\(on), \(r.topic): #\(r.seq) processed after #\(prev) without a snapshot (log line \(r.line)): a gap left unrepaired"
                    )
                }
                last[r.topic] = max(prev, r.seq)
            }
        }
        return t.result
    }

    /// No status is shown that the backend never sent: every shown status is one the backend published for that
    /// order (its timeline's statuses and every polled one; orders created by hand may take any status of the
    /// lifecycle), equals the backend's status at that sequence when it was polled, is the same in every session
    /// at that sequence (one event, one status), and transitions (stale, ended…) never change the status (a
    /// countdown reaching zero is not delivery).
    func statuses() -> E2EInvariantResult {
        var t = Tally("statuses")
        var firstShown: [String: (session: String, status: String)] = [:]
        for s in logs.sessions {
            var shown: [String: E2EClientRecord] = [:]
            for r in s.records where r.applied {
                if r.type == "update" {
                    let key = "\(r.order)#\(r.seq)"
                    if logs.timelineStatuses[r.order] != nil {
                        let known = backendStatuses[r.order] ?? []
                        t.check(
                            known.contains(r.status),
                            "session \(s.name) shows \(r.order) \(r.status) at #\(r.seq) (log line \(r.line)); the backend never sent \(r.status) for \(r.order) (it sent: \(known.sorted().joined(separator: ", ")))"
                        )
                    } else {
                        t.check(
                            E2EStatusNames.all.contains(r.status),
                            "session \(s.name) shows \(r.order) '\(r.status)' at #\(r.seq) (log line \(r.line)): not a status of the protocol"
                        )
                    }
                    if let o = observed[key] {
                        t.check(
                            o.status == r.status,
                            "session \(s.name) shows \(r.order) \(r.status) at #\(r.seq) (log line \(r.line)); the backend's #\(r.seq) is \(o.status)"
                        )
                    }
                    if let f = firstShown[key] {
                        t.check(
                            f.status == r.status,
                            "session \(s.name) shows \(r.order) \(r.status) at #\(r.seq) (log line \(r.line)); session \(f.session) shows \(f.status) at the same sequence"
                        )
                    } else {
                        firstShown[key] = (s.name, r.status)
                    }
                    shown[r.topic] = r
                } else if let u = shown[r.topic] {
                    t.check(
                        r.status == u.status,
                        "session \(s.name) shows \(r.order) \(r.status) on a '\(r.type)' transition (log line \(r.line)) while its last update #\(u.seq) is \(u.status): a status the backend did not send"
                            + (E2EStatusNames.terminal.contains(r.status)
                                ? " (never end because a countdown reached zero)" : "")
                    )
                }
            }
        }
        return t.result
    }

    /// The countdown's target in true time, from a record's client-clock target (the clock's offset taken at the
    /// target itself, so drift is accounted for).
    func trueEta(_ s: E2ESessionLog, _ r: TimedRecord) -> Double? {
        guard let eta = r.record.etaTarget else { return nil }
        let model = s.clockModel
        let first = Double(eta) - (model.clientTime(atTrue: r.trueMs) - r.trueMs)
        return Double(eta) - (model.clientTime(atTrue: first) - first)
    }

    /// Remaining times agree with the true remaining time: `remainingMs` shown vs. backend target − true now.
    func remaining() -> E2EInvariantResult {
        var t = Tally("remaining")
        let tol = Double(scenario.tolerances.remainingMilliseconds)
        // Consensus true target per (order, seq) across sessions, where the backend's was not observed.
        var votes: [String: [Double]] = [:]
        for s in logs.sessions {
            for r in timed[s.name] ?? [] where r.record.type == "update" && r.record.applied && !disturbed(s, r.trueMs)
            {
                if let e = trueEta(s, r) { votes["\(r.record.order)#\(r.record.seq)", default: []].append(e) }
            }
        }
        for s in logs.sessions {
            for r in timed[s.name] ?? [] {
                let rec = r.record
                guard rec.applied, rec.type == "update" || rec.type == "stale",
                    !E2EStatusNames.terminal.contains(rec.status), let shown = rec.remainingMs,
                    !disturbed(s, r.trueMs)
                else { continue }
                let key = "\(rec.order)#\(rec.seq)"
                let target: Double
                let source: String
                if let o = observed[key] {
                    target = Double(o.etaTarget)
                    source = "backend"
                } else if let v = votes[key], v.count >= 2 {
                    target = v.sorted()[v.count / 2]
                    source = "\(v.count) sessions' median"
                } else {
                    continue
                }
                let truth = max(0, target - r.trueMs)
                let err = Double(shown) - truth
                let allowed = tol + Double(rec.uncertaintyMs)
                t.check(
                    abs(err) <= allowed,
                    "session \(s.name), \(key) at \(at(r.trueMs)) (log line \(rec.line)): shows \(shown) ms left, true \(Int64(truth.rounded())) ms (\(source) target), off by \(Int64(err.rounded())) ms > \(Int64(allowed)) ms allowed"
                )
            }
        }
        return t.result
    }

    /// Stale is shown within the latency after the stale date (never before it), and cleared by the next fresh
    /// update.
    func stale() -> E2EInvariantResult {
        var t = Tally("stale")
        let latency = Double(scenario.tolerances.staleLatencyMilliseconds)
        let early = Double(scenario.tolerances.remainingMilliseconds)
        for s in logs.sessions {
            let recs = timed[s.name] ?? []
            let topics = Set(recs.map(\.record.topic))
            for topic in topics.sorted() {
                let mine = recs.filter { $0.record.topic == topic && $0.record.applied }
                let updateIdx = mine.indices.filter { mine[$0].record.type == "update" }
                for (n, i) in updateIdx.enumerated() {
                    let u = mine[i]
                    let end = n + 1 < updateIdx.count ? mine[updateIdx[n + 1]].trueMs : Double(logs.endTrueMs)
                    let nextIndex = n + 1 < updateIdx.count ? updateIdx[n + 1] : mine.count
                    let rec = u.record
                    guard !E2EStatusNames.terminal.contains(rec.status), rec.event != "end",
                        let after = logs.staleAfterMs[rec.status],
                        let o = observed["\(rec.order)#\(rec.seq)"]
                    else { continue }
                    let staleDate = Double(o.lastConfirmed + after)
                    let slack = Double(rec.uncertaintyMs)
                    if disturbed(s, staleDate) || disturbed(s, u.trueMs) { continue }
                    let window = mine[i..<nextIndex]
                    // Never before the stale date.
                    if let tooEarly = window.first(where: { $0.record.stale && $0.trueMs < staleDate - early - slack })
                    {
                        t.check(
                            false,
                            "session \(s.name), \(topic)#\(rec.seq): stale shown at \(at(tooEarly.trueMs)) (log line \(tooEarly.record.line)), \(Int64((staleDate - tooEarly.trueMs).rounded())) ms before the stale date \(at(staleDate))"
                        )
                        continue
                    }
                    // Shown in time when the state lasted past the stale date (an update that arrives after its
                    // stale date, e.g. replayed on attach, must be stale at once).
                    let due = max(staleDate, u.trueMs) + latency + slack
                    if end > due {
                        let firstStale = window.first { $0.record.stale }
                        t.check(
                            firstStale.map { $0.trueMs <= due } ?? false,
                            "session \(s.name), \(topic)#\(rec.seq): stale date \(at(staleDate)) passed; "
                                + (firstStale.map {
                                    "stale shown only at \(at($0.trueMs)) (log line \($0.record.line)), \(Int64(($0.trueMs - due + latency + slack).rounded())) ms after it was due > \(Int64(latency + slack)) ms"
                                } ?? "stale never shown before the next update at \(at(end))")
                        )
                    } else {
                        t.check(true, "")
                    }
                    // Cleared by the next fresh update.
                    if window.contains(where: { $0.record.stale }), nextIndex < mine.count {
                        let v = mine[nextIndex]
                        if let ov = observed["\(v.record.order)#\(v.record.seq)"],
                            let a = logs.staleAfterMs[v.record.status],
                            Double(ov.lastConfirmed + a) > v.trueMs + latency
                        {
                            t.check(
                                !v.record.stale,
                                "session \(s.name), \(topic)#\(v.record.seq): a fresh update at \(at(v.trueMs)) (log line \(v.record.line)) still shows stale"
                            )
                        }
                    }
                }
            }
        }
        return t.result
    }

    /// Every layout after a posture change satisfies the layout engine's invariants, and every posture change
    /// produced a layout.
    func layout() -> E2EInvariantResult {
        var t = Tally("layout")
        var changes: [String: Int] = [:]
        for a in logs.actions where a.ok { for n in a.postureTargets { changes[n, default: 0] += 1 } }
        // Sessions ever given a window (client layout lines do not carry it): the OS rule is checked full screen.
        var windowed: Set<String> = Set(scenario.sessions.filter { $0.posture.windowWidth != nil }.map(\.name))
        for a in scenario.actions {
            if case .posture(let target, let p) = a.kind, p.windowWidth != nil {
                windowed.formUnion(scenario.sessionNames(for: target))
            }
        }
        for s in logs.sessions {
            let model = s.clockModel
            // Layouts logged on an update (what the phone shows changed) are read by assertion steps; the
            // invariants are checked on the attach and posture layouts, as before.
            for l in s.layouts where l.trigger != "update" {
                var cursor = E2EClientClockModel.Cursor()
                let when =
                    l.clientTime.map { model.trueTime(ofClient: Double($0), cursor: &cursor) } ?? Double(l.trueTime)
                for i in l.invariants {
                    t.check(
                        i.holds,
                        "session \(s.name) (\(l.device) \(l.posture.foldState)/\(l.posture.orientation)) at \(at(when)): layout invariant \(i.name) failed: \(i.detail)"
                    )
                }
            }
            if let spec = scenario.sessions.first(where: { $0.name == s.name }) {
                checkOSRule(spec, s, windowed: windowed, into: &t)
            }
            let expected = 1 + (changes[s.name] ?? 0)
            t.check(
                s.layouts.count >= expected,
                "session \(s.name): \(expected - 1) posture changes but \(s.layouts.count) layouts (expected \(expected), the first at attach)"
            )
        }
        return t.result
    }

    /// The OS-version rule of the layout engine, on the layouts the client logged itself (`os`, `arrangement`): a
    /// session that declares an OS version lays out for that version, and an unfolded (flat or half-opened,
    /// full-screen) iPhone Duo gets the split `horizontal` arrangement from iOS 27.1 and never before (the fallback
    /// layers the cards over the map).
    func checkOSRule(_ spec: E2ESessionSpec, _ s: E2ESessionLog, windowed: Set<String>, into t: inout Tally) {
        guard let declared = spec.osVersion else { return }
        for l in s.layouts {
            if let logged = l.os {
                t.check(
                    E2EOSVersion(logged) == declared,
                    "session \(s.name): declared os \(declared) but the client laid out for \(logged) (log line \(l.line))"
                )
            }
            guard spec.device == "iphone-duo", !windowed.contains(s.name), let arrangement = l.arrangement,
                ["flat", "half-opened"].contains(l.posture.foldState)
            else { continue }
            // The split is `horizontal` (book) or `tabletop` (half-opened in portrait: map above the fold).
            let split = ["horizontal", "tabletop"].contains(arrangement)
            if declared < E2EOSVersion.arrangementAPI {
                t.check(
                    !split,
                    "session \(s.name) (iphone-duo \(l.posture.foldState)/\(l.posture.orientation), iOS \(declared) < \(E2EOSVersion.arrangementAPI)): arrangement horizontal, but ArrangementView is unavailable before \(E2EOSVersion.arrangementAPI) (log line \(l.line))"
                )
            } else {
                t.check(
                    split,
                    "session \(s.name) (iphone-duo \(l.posture.foldState)/\(l.posture.orientation), iOS \(declared) >= \(E2EOSVersion.arrangementAPI)): arrangement \(arrangement), expected the horizontal split (log line \(l.line))"
                )
            }
        }
    }

    /// No daemon crash except the scheduled kills; no client process ended on its own.
    func crashes() -> E2EInvariantResult {
        var t = Tally("crashes")
        for e in logs.daemon.exits {
            t.check(e.scheduled, "livebusd ended unscheduled at \(at(Double(e.trueTime))): \(e.description)")
        }
        for s in logs.sessions {
            t.check(s.abnormalExit == nil, "client \(s.name) (\(s.client.rawValue)): \(s.abnormalExit ?? "")")
        }
        return t.result
    }

    /// The daemon's resident memory stays at or below the scenario's bound.
    func memory() -> E2EInvariantResult {
        var t = Tally("memory")
        let limitKiB = scenario.tolerances.maximumDaemonRSSMiB * 1024
        t.check(!logs.daemon.rssKiB.isEmpty, "no memory sample of livebusd was taken")
        for sample in logs.daemon.rssKiB {
            t.check(
                Double(sample.kib) <= limitKiB,
                "livebusd resident memory \(sample.kib / 1024) MiB at \(at(Double(sample.trueTime))) > \(Int(scenario.tolerances.maximumDaemonRSSMiB)) MiB"
            )
        }
        return t.result
    }

    /// Every action did what the scenario says (the daemon accepted the command, the cancel had the expected
    /// outcome, the daemon restarted).
    func actions() -> E2EInvariantResult {
        var t = Tally("actions")
        for a in logs.actions {
            t.check(
                a.ok,
                "line \(a.line), at \(Double(a.atMilliseconds) / 1000) s scenario time, \(a.description): \(a.message)"
            )
        }
        return t.result
    }
}
