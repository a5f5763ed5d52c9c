import LiveBusScenario
import Testing

/// Each invariant of Protocol/E2E.md §3 holds on a consistent run and reports the counterexample when a log is
/// deliberately broken.
struct InvariantCheckerTests {
    static let start: Int64 = 1_800_000_000_000
    static let eta: Int64 = start + 60_000

    /// The backend: A1 created (0 s), cooking (5 s), delivering (20 s), delivered (25 s); true (server) clock.
    static let backend: [(seq: UInt64, status: String, at: Int64)] = [
        (1, "created", 0), (2, "cooking", 5000), (3, "delivering", 20_000), (4, "delivered", 25_000),
    ]

    static func observations() -> [E2EBackendObservation] {
        backend.map {
            E2EBackendObservation(
                trueTime: start + $0.at + 10,
                order: "A1",
                status: $0.status,
                seq: $0.seq,
                etaTarget: eta,
                lastConfirmed: start + $0.at
            )
        }
    }

    /// A session's records as a correct client writes them: each update 20 ms after the backend's event, stale
    /// 5 ms after the cooking state's stale date (5 s + 8 s), all on the phone's own clock.
    static func session(_ name: String, skew: Int64, drift: Double) -> E2ESessionLog {
        let model = E2EClientClockModel(skewMilliseconds: skew, driftPPM: drift, epochTrueMs: start, events: [])
        func c(_ t: Int64) -> Int64 { Int64(model.clientTime(atTrue: Double(t)).rounded()) }
        let etaClient = c(eta)
        var records: [E2EClientRecord] = []
        for (i, b) in backend.enumerated() {
            let now = c(start + b.at + 20)
            records.append(
                E2EClientRecord(
                    topic: "orders/A1",
                    seq: b.seq,
                    event: i == 0 ? "start" : b.status == "delivered" ? "end" : "update",
                    status: b.status,
                    etaTarget: etaClient,
                    remainingMs: max(0, etaClient - now),
                    clientTime: now,
                    uncertaintyMs: 5,
                    line: records.count + 1
                )
            )
            if b.status == "cooking" {
                let now = c(start + 13_005)
                records.append(
                    E2EClientRecord(
                        type: "stale",
                        topic: "orders/A1",
                        seq: 2,
                        event: "transition",
                        status: "cooking",
                        etaTarget: etaClient,
                        remainingMs: etaClient - now,
                        stale: true,
                        clientTime: now,
                        uncertaintyMs: 5,
                        line: records.count + 1
                    )
                )
            }
        }
        let layout = E2ELayoutRecord(
            trueTime: start,
            device: "iphone-duo",
            posture: E2EPosture(foldState: "flat", orientation: "portrait"),
            invariants: [E2ELayoutRecord.Outcome(name: "noInteractiveAcrossReservedRegion", holds: true, detail: "")]
        )
        return E2ESessionLog(
            name: name,
            client: name == "py" ? .python : .swift,
            clockSkewMilliseconds: skew,
            clockDriftPPM: drift,
            clockEpochTrueMs: start,
            records: records,
            layouts: [layout]
        )
    }

    static func goodRun() -> E2ERunLogs {
        let obs = observations()
        return E2ERunLogs(
            sessions: [session("pro", skew: 0, drift: 0), session("py", skew: 90_000, drift: 200)],
            observations: obs,
            final: ["A1": obs[3]],
            timelineStatuses: ["A1": ["created", "cooking", "delivering", "delivered"]],
            staleAfterMs: ["created": 10_000, "cooking": 8000, "delivering": 8000],
            daemon: E2EDaemonLog(
                exits: [.init(trueTime: start + 30_000, scheduled: true, description: "exit 0")],
                rssKiB: [(start + 1000, 40_000), (start + 20_000, 42_000)]
            ),
            actions: [E2EActionOutcome(line: 9, atMilliseconds: 0, description: "createOrder A1", ok: true)],
            startTrueMs: start,
            endTrueMs: start + 30_000
        )
    }

    static let scenario = E2EScenario(name: "unit", expect: E2EExpectations(finalStatus: ["A1": "delivered"]))

    static func result(_ logs: E2ERunLogs, _ name: String) -> E2EInvariantResult {
        E2EInvariantChecker.check(logs, scenario: scenario).first { $0.name == name }!
    }

    /// A consistent run passes every invariant, and each invariant checked something.
    @Test func consistentRunPasses() {
        let results = E2EInvariantChecker.check(Self.goodRun(), scenario: Self.scenario)
        #expect(results.map(\.name) == E2EInvariantChecker.names)
        for r in results {
            #expect(r.passed, "\(r.name): \(r.counterexample ?? "")")
            #expect(r.checked > 0, "\(r.name) checked nothing")
        }
    }

    /// Convergence fails when a session never shows the final state.
    @Test func convergenceFails() {
        var run = Self.goodRun()
        run.sessions[1].records.removeLast()
        let r = Self.result(run, "convergence")
        #expect(!r.passed)
        #expect(
            r.counterexample
                == "session py, orders/A1: ends at #3 showing delivering, the backend ends at #4 delivered"
        )
    }

    /// Convergence also fails when the backend itself did not end as the scenario says.
    @Test func convergenceFailsOnBackendFinalStatus() {
        var run = Self.goodRun()
        run.final["A1"]?.status = "canceled"
        #expect(Self.result(run, "convergence").counterexample?.contains("expects delivered") == true)
    }

    /// Sequence fails on an update applied twice and on a gap left unrepaired; a snapshot may skip.
    @Test func sequenceFails() {
        var dup = Self.goodRun()
        dup.sessions[0].records.insert(dup.sessions[0].records[1], at: 2)
        #expect(Self.result(dup, "sequence").counterexample?.contains("#2 processed after #2") == true)

        var gap = Self.goodRun()
        gap.sessions[0].records.remove(at: 1)
        gap.sessions[0].records.remove(at: 1)
        let r = Self.result(gap, "sequence")
        #expect(r.counterexample?.hasPrefix("session pro, orders/A1: #3 processed after #1 without a snapshot") == true)

        var snap = Self.goodRun()
        snap.sessions[0].records.remove(at: 1)
        snap.sessions[0].records.remove(at: 1)
        snap.sessions[0].records[1].delivery = "snapshot"
        #expect(Self.result(snap, "sequence").passed)
    }

    /// In a federation the sequence check follows a phone across its moves: a repeat or a gap after a move names the
    /// daemon the phone was on then (ISSUE-19: "a phone moves from host 1 to host 3 mid-order: no gap, no double
    /// application"), and a correct move passes.
    @Test func sequenceNamesTheDaemonAcrossMoves() {
        var moved = Self.goodRun()
        moved.sessions[0].daemon = "d1"
        // Moved to d3 between #2 (5 s) and #3 (20 s).
        moved.sessions[0].moves = [E2EDaemonMove(trueTime: Self.start + 10_000, daemon: "d3")]
        #expect(Self.result(moved, "sequence").passed)
        #expect(moved.sessions[0].daemon(atTrueMs: Double(Self.start + 9_000)) == "d1")
        #expect(moved.sessions[0].daemon(atTrueMs: Double(Self.start + 11_000)) == "d3")

        var twice = moved
        // d3 replays #2 after the move: applied twice.
        var again = twice.sessions[0].records[1]
        again.clientTime = twice.sessions[0].records[3].clientTime - 1
        twice.sessions[0].records.insert(again, at: 3)
        #expect(
            Self.result(twice, "sequence").counterexample?.hasPrefix(
                "session pro on daemon d3, orders/A1: #2 processed after #2"
            ) == true,
            "\(Self.result(twice, "sequence").counterexample ?? "passed")"
        )

        var gap = moved
        // #3 never arrived on d3.
        gap.sessions[0].records.removeAll { $0.seq == 3 && $0.type == "update" }
        #expect(
            Self.result(gap, "sequence").counterexample?.hasPrefix(
                "session pro on daemon d3, orders/A1: #4 processed after #2 without a snapshot"
            ) == true,
            "\(Self.result(gap, "sequence").counterexample ?? "passed")"
        )
    }

    /// Statuses fail when a phone shows delivered because its countdown reached zero, or any status the
    /// backend never sent.
    @Test func statusesFail() {
        var zero = Self.goodRun()
        var ended = zero.sessions[0].records[2]
        ended.type = "ended"
        ended.stale = false
        ended.status = "delivered"
        zero.sessions[0].records.insert(ended, at: 3)
        let r = Self.result(zero, "statuses")
        #expect(r.counterexample?.contains("never end because a countdown reached zero") == true)

        var phantom = Self.goodRun()
        phantom.sessions[1].records[3].status = "pickedUp"
        #expect(
            Self.result(phantom, "statuses").counterexample?.contains("the backend never sent pickedUp for A1") == true
        )

        var wrongSeq = Self.goodRun()
        wrongSeq.sessions[1].records[3].status = "created"
        #expect(Self.result(wrongSeq, "statuses").counterexample?.contains("the backend's #3 is delivering") == true)
    }

    /// Remaining fails when a phone's countdown disagrees with the true remaining time (here: 2 s too much).
    @Test func remainingFails() {
        var run = Self.goodRun()
        run.sessions[1].records[1].remainingMs! += 2000
        let r = Self.result(run, "remaining")
        #expect(!r.passed)
        #expect(r.counterexample?.hasPrefix("session py, A1#2 at +5.02 s") == true, "\(r.counterexample ?? "")")
        #expect(
            r.counterexample?.contains("true 54980 ms (backend target), off by 2011 ms > 505 ms allowed") == true,
            "\(r.counterexample ?? "")"
        )
    }

    /// Stale fails when never shown, shown too early, or not cleared by a fresh update.
    @Test func staleFails() {
        var never = Self.goodRun()
        never.sessions[0].records.remove(at: 2)
        #expect(
            Self.result(never, "stale").counterexample?.contains("stale never shown before the next update") == true
        )

        var early = Self.goodRun()
        early.sessions[0].records[1].stale = true
        #expect(Self.result(early, "stale").counterexample?.contains("before the stale date") == true)

        var sticky = Self.goodRun()
        sticky.sessions[0].records[3].stale = true
        #expect(Self.result(sticky, "stale").counterexample?.contains("still shows stale") == true)

        var late = Self.goodRun()
        late.sessions[0].records[2].clientTime += 3000
        #expect(Self.result(late, "stale").counterexample?.contains("ms after it was due") == true)
    }

    /// Layout fails when an invariant broke after a posture change, or a posture change left no layout.
    @Test func layoutFails() {
        var broken = Self.goodRun()
        broken.sessions[0].layouts[0].invariants[0] = .init(
            name: "noInteractiveAcrossReservedRegion",
            holds: false,
            detail: "button crosses the hinge"
        )
        #expect(
            Self.result(broken, "layout").counterexample?.contains(
                "layout invariant noInteractiveAcrossReservedRegion failed: button crosses the hinge"
            ) == true
        )

        var missing = Self.goodRun()
        missing.actions.append(
            E2EActionOutcome(line: 3, atMilliseconds: 100, description: "posture", ok: true, postureTargets: ["py"])
        )
        #expect(
            Self.result(missing, "layout").counterexample
                == "session py: 1 posture changes but 1 layouts (expected 2, the first at attach)"
        )
    }

    /// Crashes fail on an unscheduled daemon exit or a client that ended on its own.
    @Test func crashesFail() {
        var run = Self.goodRun()
        run.daemon.exits.insert(.init(trueTime: Self.start + 7000, scheduled: false, description: "signal 11"), at: 0)
        #expect(Self.result(run, "crashes").counterexample == "livebusd ended unscheduled at +7.0 s: signal 11")

        var client = Self.goodRun()
        client.sessions[1].abnormalExit = "exit 1 at +3.0 s"
        #expect(Self.result(client, "crashes").counterexample == "client py (python): exit 1 at +3.0 s")
    }

    /// Memory fails above the bound.
    @Test func memoryFails() {
        var run = Self.goodRun()
        run.daemon.rssKiB.append((Self.start + 25_000, 600 * 1024))
        #expect(Self.result(run, "memory").counterexample == "livebusd resident memory 600 MiB at +25.0 s > 512 MiB")
    }

    /// Actions fail when the daemon refused a command or a cancel had another outcome.
    @Test func actionsFail() {
        var run = Self.goodRun()
        run.actions.append(
            E2EActionOutcome(
                line: 12,
                atMilliseconds: 4000,
                description: "posture all → folded/portrait",
                ok: false,
                message: "unknownCommand: unknown command 'session.posture'"
            )
        )
        #expect(
            Self.result(run, "actions").counterexample
                == "line 12, at 4.0 s scenario time, posture all → folded/portrait: unknownCommand: unknown command 'session.posture'"
        )
    }

    /// JSON-lines logs parse into records; unreadable lines are reported by convergence.
    @Test func logsParse() {
        var s = E2ESessionLog(name: "x")
        s.appendLog(
            """
            {"applied":true,"clientTime":5,"delivery":null,"etaTarget":9,"event":"start","order":"A1","reason":null,"remainingMs":4,"seq":1,"session":"x","stale":false,"status":"created","topic":"orders/A1","type":"update","uncertaintyMs":1000}
            {"type":"error","session":"x","message":"connection lost"}
            {"type":"layout","trueTime":7,"device":"iphone-duo","posture":{"foldState":"folded","orientation":"portrait"},"invariants":[{"name":"n","holds":true,"detail":""}]}
            not json
            """
        )
        #expect(s.records.count == 1)
        #expect(s.records[0].uncertaintyMs == 1000)
        #expect(s.layouts.count == 1)
        #expect(s.malformed == ["4: not json"])
        var run = Self.goodRun()
        run.sessions[0].malformed = s.malformed
        #expect(Self.result(run, "convergence").counterexample == "session pro: unreadable log line 4: not json")
    }

    /// The clock model inverts readings, across a backwards step too.
    @Test func clockModelInverts() {
        let m = E2EClientClockModel(
            skewMilliseconds: -3_600_000,
            driftPPM: 200,
            epochTrueMs: 0,
            events: [E2EClockEvent(trueTime: 10_000, stepMilliseconds: -5000)]
        )
        var cursor = E2EClientClockModel.Cursor()
        for t in [0.0, 5000, 9999, 10_001, 20_000] {
            let c = m.clientTime(atTrue: t)
            let back = m.trueTime(ofClient: c, cursor: &cursor)
            #expect(abs(back - t) < 0.01, "\(t) → \(c) → \(back)")
        }
    }
}

/// The Swift client's own layout lines (`AppliedLayout`) are read too; a failed invariant there is reported.
@Test func clientLayoutLinesAreChecked() {
    var s = E2ESessionLog(name: "duo")
    s.appendLog(
        """
        {"type":"layout","session":"duo","device":"iphone-duo","foldState":"half-opened","orientation":"landscape","os":"27.1","arrangement":"horizontal","reason":"r","horizontalSizeClass":"regular","invariantsHeld":false,"failedInvariants":["noInteractiveAcrossReservedRegion: cardColumn crosses the hinge"],"island":{},"trigger":"posture","clientTime":1800000005000}
        """
    )
    #expect(s.layouts.count == 1)
    #expect(s.layouts[0].trigger == "posture")
    var run = InvariantCheckerTests.goodRun()
    run.sessions[0].layouts += s.layouts
    let r = InvariantCheckerTests.result(run, "layout")
    #expect(
        r.counterexample
            == "session pro (iphone-duo half-opened/landscape) at +5.0 s: layout invariant noInteractiveAcrossReservedRegion failed: noInteractiveAcrossReservedRegion: cardColumn crosses the hinge"
    )
}

/// During a stall the backend's state moves on while its last published sequence stays: the first look at a
/// sequence stands for the published event, so a later look does not make a correct phone wrong.
@Test func firstObservationOfASequenceCounts() {
    var run = InvariantCheckerTests.goodRun()
    var held = run.observations[1]
    held.trueTime += 2000
    held.etaTarget += 30_000
    held.lastConfirmed += 2000
    run.observations.insert(held, at: 2)
    for r in E2EInvariantChecker.check(run, scenario: InvariantCheckerTests.scenario) {
        #expect(r.passed, "\(r.name): \(r.counterexample ?? "")")
    }
}

/// An update that arrives after its stale date (replayed to a phone that attached late) must be shown stale at
/// once, not within the latency after the stale date it never saw.
@Test func lateArrivalMustBeStaleAtOnce() {
    var run = InvariantCheckerTests.goodRun()
    run.staleAfterMs["created"] = 20_000
    // pro receives cooking (#2) only at 14 s, past its stale date (13 s), and shows it stale at once.
    run.sessions[0].records.remove(at: 2)
    run.sessions[0].records[1].clientTime = InvariantCheckerTests.start + 14_000
    run.sessions[0].records[1].remainingMs = InvariantCheckerTests.eta - (InvariantCheckerTests.start + 14_000)
    run.sessions[0].records[1].stale = true
    #expect(InvariantCheckerTests.result(run, "stale").passed)
    run.sessions[0].records[1].stale = false
    #expect(
        InvariantCheckerTests.result(run, "stale").counterexample?.contains("stale never shown before the next update")
            == true
    )
}

/// Sessions must agree on the status of one sequence (one event, one status), whatever the backend polls saw.
@Test func sessionsDisagreeingOnASequenceFail() {
    var run = InvariantCheckerTests.goodRun()
    run.observations.remove(at: 2)
    run.sessions[1].records[3].status = "cooking"
    #expect(
        InvariantCheckerTests.result(run, "statuses").counterexample
            == "session py shows A1 cooking at #3 (log line 4); session pro shows delivering at the same sequence"
    )
}

/// A backend still publishing while the clients stop: ending between the last look before and after the stop
/// converges; ending before it does not.
@Test func convergenceWindowAtTheStop() {
    var run = InvariantCheckerTests.goodRun()
    run.final["A1"] = run.observations[2]
    run.finalAfterStop["A1"] = run.observations[3]
    #expect(InvariantCheckerTests.result(run, "convergence").passed)
    run.sessions[0].records.removeLast(2)
    #expect(
        InvariantCheckerTests.result(run, "convergence").counterexample
            == "session pro, orders/A1: ends at #2 showing cooking, the backend ends at #3…#4 (delivering … delivered)"
    )
}
