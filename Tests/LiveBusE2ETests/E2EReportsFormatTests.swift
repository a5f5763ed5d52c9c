import Foundation
import LiveBusScenario
import Testing

@testable import LiveBusCLI

/// `--junit` and `--tap` with hostile text (markup, quotes, `#`, control characters, newlines) in names and
/// counterexamples: junitparser and tap.py still read the counts, names and messages.
struct E2EReportsFormatTests {
    static func results() -> [E2EScenarioResult] {
        let step = E2EAssertion(
            index: 1,
            name: "card <left> & \"right\" # 1",
            anchor: .at(40_000),
            target: .named("duo"),
            checks: [.stale(true)],
            line: 12
        )
        var failed = E2EScenarioResult(
            file: "/tmp/a&b.json",
            name: "s<1>",
            sessions: 1,
            updates: 3,
            invariants: [
                E2EInvariantResult(name: "convergence", checked: 2, failures: 0, counterexample: nil),
                E2EInvariantResult(
                    name: "stale",
                    checked: 2,
                    failures: 1,
                    counterexample: "late\u{1} by \"2 s\"\nline 2"
                ),
            ],
            wallMs: 1500
        )
        failed.steps = [
            E2EAssertionResult(
                step: step,
                sessions: ["duo"],
                failures: [
                    E2EAssertionFailure(
                        session: "duo",
                        check: "stale",
                        expected: "true",
                        observed: "false",
                        at: "+4 s",
                        logLine: "duo.jsonl:3: {\"stale\":false,\"x\":\"<&>\"}"
                    )
                ]
            )
        ]
        failed.logDirectory = "/tmp/lbe2e-x"
        failed.logFiles = [("duo", ["/tmp/lbe2e-x/duo.jsonl", "/tmp/lbe2e-x/duo.layout.jsonl"])]
        let broken = E2EScenarioResult(
            file: "b.json",
            name: "could-not-run",
            sessions: 0,
            updates: 0,
            invariants: [],
            wallMs: 0,
            error: "cannot start livebusd"
        )
        return [failed, broken]
    }

    @Test func hostileTextStaysReadable() throws {
        var template = Array("/tmp/lbe2e-test-XXXXXX".utf8CString)
        let dir = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try E2EReports.junit(Self.results()).write(toFile: dir + "/r.xml", atomically: true, encoding: .utf8)
        try E2EReports.tap(Self.results()).write(toFile: dir + "/r.tap", atomically: true, encoding: .utf8)
        let j = try E2EReportsE2ETests.python(
            """
            import sys
            from junitparser import JUnitXml, Failure
            for suite in JUnitXml.fromfile(sys.argv[1]):
                for case in suite:
                    for r in case.result:
                        if isinstance(r, Failure):
                            print(repr((suite.name, case.name, r.message, (r.text or "")[:80])))
            """,
            [dir + "/r.xml"]
        )
        #expect(j.status == 0, "\(j.out)")
        let lines = j.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(j.out)")
        #expect(
            lines.first?.hasPrefix(
                "('s<1>', 'invariant stale', 'stale: 1 of 2 failed', 'first counterexample: late\u{FFFD} by \"2 s\"\\nline 2')"
            ) == true,
            "\(j.out)"
        )
        #expect(
            lines.dropFirst().first?.contains(
                "'step 1 card <left> & \"right\" # 1', 'phone duo: stale expected true, observed false'"
            ) == true,
            "\(j.out)"
        )
        #expect(
            lines.last?.hasPrefix("('could-not-run', 'run', 'could not run', 'cannot start livebusd')") == true,
            "\(j.out)"
        )
        let t = try E2EReportsE2ETests.python(E2EReportsE2ETests.tapCount, [dir + "/r.tap"])
        #expect(t.status == 0 && t.out.hasPrefix("4 3 None,12,None"), "tap.py: \(t.out)")
    }
}
