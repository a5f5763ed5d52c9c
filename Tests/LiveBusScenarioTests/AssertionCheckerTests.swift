import Foundation
import LiveBusScenario
import Testing

/// Assertion steps (Protocol/E2E.md §2.4) decoded from a scenario file and evaluated over JSON-lines logs as the
/// Swift client writes them: a consistent log passes every step; each broken expectation fails at its step with
/// the phone, the expected and observed values and the log line.
struct AssertionCheckerTests {
    static let start: Int64 = 1_800_000_000_000
    /// The phone's clock runs 90 s fast.
    static let skew: Int64 = 90_000

    static func c(_ trueOffset: Int64) -> Int64 { start + trueOffset + skew }

    /// The phone `duo`: sync connecting → live at 100 ms, an attach layout (flat), cooking at 1 s (countdown
    /// target 60 s), a half-opened layout at 2 s, stale at 3 s, delivering (fresh) at 4 s; true time offsets,
    /// written on the phone's clock. Time scale 1.
    static func line(_ o: [String: Any]) -> String {
        let d = try! JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])
        return String(decoding: d, as: UTF8.self)
    }

    static func record(_ type: String, seq: Int, status: String, stale: Bool, at t: Int64) -> String {
        let eta = c(60_000)
        return line([
            "type": type, "session": "duo", "topic": "orders/A1", "order": "A1", "seq": seq,
            "event": type == "stale" ? "transition" : seq == 1 ? "start" : "update", "status": status,
            "etaTarget": eta, "remainingMs": eta - c(t), "stale": stale, "applied": true, "reason": NSNull(),
            "clientTime": c(t), "uncertaintyMs": 5, "eventTime": NSNull(), "delivery": NSNull(),
        ])
    }

    static func layout(
        _ fold: String,
        trigger: String,
        at t: Int64,
        island: [String: String],
        rects: [String: [Double]],
        overflow: [String] = []
    ) -> String {
        line([
            "type": "layout", "session": "duo", "device": "iphone-duo", "foldState": fold, "orientation": "landscape",
            "os": "27.1", "arrangement": "horizontal", "reason": "", "horizontalSizeClass": "regular",
            "invariantsHeld": true, "failedInvariants": [String](), "island": island, "trigger": trigger,
            "clientTime": c(t), "rects": rects, "overflow": overflow, "lockScreen": Array(island.keys),
        ])
    }

    /// The phone `duo`: sync catching up → live at 100 ms, an attach layout (flat), cooking at 1 s (countdown
    /// target 60 s), a half-opened layout at 2 s, stale at 3 s, delivering (fresh) at 4 s; true time offsets,
    /// written on the phone's clock. Time scale 1.
    static func log() -> String {
        let half: [String: [Double]] = [
            "map": [0, 0, 951, 669], "focusArea": [0, 64, 443.5, 605], "reservedRegion": [443.5, 0, 64, 669],
            "cardColumn": [523.5, 8, 327.5, 645], "hinge": [455.5, 0, 40, 669], "card": [523.5, 473, 327.5, 180],
        ]
        return [
            line(["type": "sync", "session": "duo", "state": "catchingUp", "clientTime": c(50)]),
            line(["type": "sync", "session": "duo", "state": "live", "clientTime": c(100)]),
            layout("flat", trigger: "attach", at: 120, island: [:], rects: ["map": [0, 0, 951, 669]]),
            record("update", seq: 1, status: "cooking", stale: false, at: 1000),
            layout("flat", trigger: "update", at: 1100, island: ["A1": "compact"], rects: ["map": [0, 0, 951, 669]]),
            layout(
                "half-opened",
                trigger: "posture",
                at: 2000,
                island: ["A1": "compact"],
                rects: half,
                overflow: ["overflow compactTrailing.timer \"2:20:13\": 55.2 pt in 44 pt (width)"]
            ),
            record("stale", seq: 1, status: "cooking", stale: true, at: 3000),
            record("update", seq: 2, status: "delivering", stale: false, at: 4000),
        ].joined(separator: "\n") + "\n"
    }

    /// The ten steps, each on one line of the file (line = 5 + step index).
    static func scenario(_ steps: [String]) throws -> E2EScenario {
        let text = """
            {
              "version": 1, "name": "steps", "timeScale": 1, "duration": "10s",
              "sessions": [ { "name": "duo", "device": "iphone-duo", "clockSkew": "+90s" } ],
              "actions": [
                { "at": "2s", "type": "posture", "id": "half", "session": "duo", "posture": { "foldState": "half-opened", "orientation": "landscape" } },
            \(steps.joined(separator: ",\n"))
              ]
            }
            """
        return try E2EScenarioDecoder.decode(Array(text.utf8), file: "steps.json")
    }

    static let good = [
        #"{ "at": "500ms", "type": "assert", "session": "duo", "expect": { "sync": "live" } }"#,
        #"{ "at": "1500ms", "type": "assert", "session": "duo", "#
            + #""expect": { "status": "cooking", "stale": false, "remaining": { "value": "58500ms", "tolerance": "100ms" } } }"#,
        #"{ "at": "1500ms", "type": "assert", "session": "duo", "order": "A1", "#
            + #""expect": { "island": "compact", "lockScreen": 1 } }"#,
        #"{ "at": "1500ms", "type": "assert", "session": "duo", "#
            + #""expect": { "arrangement": "horizontal", "sizeClass": "regular", "overflow": false } }"#,
        #"{ "after": "half", "type": "assert", "session": "duo", "within": "300ms", "#
            + #""expect": { "rects": [ { "rect": "focusArea", "leftOf": "reservedRegion" }, { "rect": "cardColumn", "rightOf": "reservedRegion" }, { "rect": "card", "notCrossing": "hinge" }, { "rect": "card", "inside": "cardColumn" } ] } }"#,
        #"{ "after": "half", "type": "assert", "session": "duo", "expect": { "overflow": true } }"#,
        #"{ "at": "2500ms", "type": "assert", "session": "duo", "expect": { "fits": "compactLeading.status" } }"#,
        #"{ "at": "2900ms", "type": "assert", "session": "duo", "within": "200ms", "#
            + #""expect": { "stale": true, "island": "minimal" } }"#,
        #"{ "at": "3500ms", "type": "assert", "session": "all", "expect": { "status": "cooking", "stale": true } }"#,
        #"{ "at": "4s", "type": "assert", "name": "fresh again", "session": "duo", "#
            + #""expect": { "status": "delivering", "stale": false } }"#,
    ]

    static func run(_ s: E2EScenario) -> [E2EAssertionResult] {
        var session = E2ESessionLog(name: "duo", clockSkewMilliseconds: skew, clockEpochTrueMs: start)
        session.appendLog(log(), file: "duo.jsonl")
        let logs = E2ERunLogs(sessions: [session], startTrueMs: start, endTrueMs: start + 10_000)
        return E2EAssertionChecker.check(logs, scenario: s, timeScale: 1, actionTimes: ["half": start + 2000])
    }

    /// The consistent log passes nine of the ten steps; step 8 expects a minimal island, which this phone (one
    /// activity, compact) never shows.
    @Test func stepsHoldOnAConsistentLog() throws {
        let s = try Self.scenario(Self.good)
        #expect(s.assertions.count == 10)
        #expect(s.actions.count == 1, "steps are not actions")
        let results = Self.run(s)
        #expect(results.map(\.passed) == [true, true, true, true, true, true, true, false, true, true])
        let f = try #require(results[7].failures.first)
        #expect(f.check == "island" && f.expected == "A1 minimal" && f.observed == "A1 compact", "\(f)")
        #expect(f.logLine.hasPrefix("duo.jsonl:6: {") && f.logLine.contains("\"foldState\":\"half-opened\""), "\(f)")
        #expect(results[9].step.name == "fresh again")
    }

    /// Each broken expectation fails at its step with the expected and observed values and the log line they
    /// come from.
    @Test func brokenStepsFailWithValuesAndLogLine() throws {
        var steps = Self.good
        steps[1] =
            #"{ "at": "1500ms", "type": "assert", "session": "duo", "#
            + #""expect": { "remaining": { "value": "50s", "tolerance": "1s" } } }"#
        steps[4] =
            #"{ "after": "half", "type": "assert", "session": "duo", "#
            + #""expect": { "rects": [ { "rect": "card", "leftOf": "hinge" } ] } }"#
        steps[7] =
            #"{ "at": "2900ms", "type": "assert", "session": "duo", "within": "50ms", "#
            + #""expect": { "stale": true } }"#
        steps[8] = #"{ "at": "3500ms", "type": "assert", "session": "duo", "expect": { "sync": "disconnected" } }"#
        steps[9] =
            #"{ "at": "4s", "type": "assert", "session": "duo", "#
            + #""expect": { "rects": [ { "rect": "card", "inside": "toolbar" } ] } }"#
        let results = Self.run(try Self.scenario(steps))
        #expect(results.filter { !$0.passed }.map(\.step.index) == [2, 8, 9, 10, 5].sorted())
        let remaining = try #require(results[1].failures.first)
        #expect(remaining.check == "remaining" && remaining.expected == "50000 ms ± 1000 ms")
        #expect(remaining.observed == "58500 ms", "read at the anchor, 1.5 s into a 60 s countdown: \(remaining)")
        #expect(
            remaining.logLine.hasPrefix("duo.jsonl:4: {") && remaining.logLine.contains("\"type\":\"update\""),
            "\(remaining)"
        )
        let rect = try #require(results[4].failures.first)
        #expect(rect.check == "rect card leftOf hinge")
        #expect(rect.observed == "card [523.5, 473, 327.5, 180], hinge [455.5, 0, 40, 669]", "\(rect)")
        #expect(rect.logLine.hasPrefix("duo.jsonl:6:"), "\(rect)")
        let stale = try #require(results[7].failures.first)
        #expect(stale.expected == "true" && stale.observed == "false", "stale shows at 3 s, after the window: \(stale)")
        #expect(stale.at.hasPrefix("+2.95 s wall"), "\(stale)")
        let sync = try #require(results[8].failures.first)
        #expect(sync.expected == "disconnected" && sync.observed == "live" && sync.logLine.hasPrefix("duo.jsonl:2:"))
        let missing = try #require(results[9].failures.first)
        #expect(missing.observed.hasPrefix("no rect named toolbar (rects: card, cardColumn, focusArea"), "\(missing)")
        #expect(results[1].summary.hasPrefix("step 2 'step 2' (line 7, at 1.5 s, phones duo): phone duo: remaining"))
    }

    /// The decoder names file, line and field for a wrong step.
    @Test func badStepsAreRefusedWithLineAndField() throws {
        func error(_ step: String) -> String {
            do {
                _ = try Self.scenario([step])
                return "no error"
            } catch { return "\(error)" }
        }
        #expect(
            error(#"{ "at": "1s", "type": "assert", "session": "duo", "expect": { "colour": "red" } }"#)
                .hasPrefix("steps.json:6: field 'actions[1].expect.colour': unknown field")
        )
        #expect(
            error(#"{ "after": "nope", "type": "assert", "session": "duo", "expect": { "stale": true } }"#)
                .hasPrefix("steps.json:6: field 'actions[1].after': no action has the id 'nope'; ids: half")
        )
        #expect(
            error(#"{ "at": "1s", "type": "assert", "session": "x", "expect": { "stale": true } }"#)
                .contains("field 'actions[1].session': no session or session group named 'x'")
        )
        #expect(
            error(#"{ "at": "1s", "type": "assert", "session": "duo", "expect": { "island": "big" } }"#)
                .contains("field 'actions[1].expect.island': 'big' is not one of: compact, minimal")
        )
        #expect(
            error(#"{ "at": "1s", "type": "assert", "session": "duo", "expect": { "rects": [ { "rect": "a" } ] } }"#)
                .contains("give exactly one relation of: leftOf, rightOf")
        )
        #expect(
            error(#"{ "at": "1s", "type": "assert", "session": "duo", "expect": {} }"#)
                .contains("field 'actions[1].expect': needs at least one of")
        )
        #expect(
            error(#"{ "at": "11s", "type": "assert", "session": "duo", "expect": { "stale": true } }"#)
                .contains("after the duration of 10000 ms")
        )
    }

    /// The rect relations on edges: touching is left of and not crossing; 0.01 pt of overlap is tolerated.
    @Test func rectRelations() {
        let a = [0.0, 0, 10, 10]
        let b = [10.0, 0, 10, 10]
        #expect(E2ERectRelation.leftOf.holds(a, b) && E2ERectRelation.rightOf.holds(b, a))
        #expect(E2ERectRelation.notCrossing.holds(a, b) && !E2ERectRelation.crossing.holds(a, b))
        #expect(!E2ERectRelation.leftOf.holds(a, [9.5, 0, 10, 10]))
        #expect(E2ERectRelation.crossing.holds(a, [9.5, 0, 10, 10]))
        #expect(E2ERectRelation.inside.holds([1, 1, 2, 2], a) && E2ERectRelation.contains.holds(a, [1, 1, 2, 2]))
        #expect(E2ERectRelation.above.holds(a, [0, 10, 5, 5]) && E2ERectRelation.below.holds([0, 10, 5, 5], a))
    }
}
