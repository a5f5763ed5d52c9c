import Foundation
import Testing

/// `livebus e2e` assertion steps, `--junit`, `--tap` and `--validate` as a real process, read back by real
/// consumers: `junitparser` and `tap.py` from PyPI (pinned in tools/setup).
struct E2EReportsE2ETests {
    static let root = E2ERunnerTests.root

    /// Runs `python3 -c script args…` and returns its exit status and output.
    static func python(_ script: String, _ args: [String]) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self))
    }

    /// Counts with junitparser: `tests failures name|name…` of the failed cases.
    static let junitCount = """
        import sys
        try:
            from junitparser import JUnitXml, Failure
        except ImportError:
            sys.exit("junitparser is not installed: run tools/setup")
        xml = JUnitXml.fromfile(sys.argv[1])
        tests, failed, outs = 0, [], 0
        for suite in xml:
            if suite._elem.find("system-out") is not None and "jsonl" in suite._elem.find("system-out").text:
                outs += 1
            for case in suite:
                tests += 1
                if any(isinstance(r, Failure) for r in case.result):
                    failed.append(case.name)
        print(tests, len(failed), outs, "|".join(failed))
        """

    /// Counts with tap.py: `tests failures yamlLines` (the YAML blocks' `line` fields of the failures).
    static let tapCount = """
        import sys
        try:
            from tap.parser import Parser
        except ImportError:
            sys.exit("tap.py is not installed: run tools/setup")
        lines = list(Parser().parse_file(sys.argv[1]))
        tests = [l for l in lines if l.category == "test"]
        bad = [t for t in tests if not t.ok]
        print(len(tests), len(bad), ",".join(str((t.yaml_block or {}).get("line")) for t in bad))
        """

    /// The ten-step scenario passes; a copy with three steps broken fails exactly at steps 1 (the remaining time),
    /// 7 (a rect relation) and 8 (stale), each with the phone, expected and observed values and the log line;
    /// junitparser and tap.py read the same counts from `--junit` and `--tap`.
    @Test(.timeLimit(.minutes(3))) func assertionStepsPassAndBrokenCopyFailsAtTheRightSteps() throws {
        var template = Array("/tmp/lbe2e-test-XXXXXX".utf8CString)
        let dir = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let scenario = "Protocol/scenarios/e2e-assert-steps.json"

        let good = try E2ERunnerTests.run([
            "e2e", scenario, "--quiet", "--junit", dir + "/good.xml", "--tap", dir + "/good.tap", "--keep-logs",
        ])
        #expect(good.status == 0, "stdout: \(good.stdout)\nstderr: \(good.stderr)")
        #expect(good.stdout.contains("10/10"), "\(good.stdout)")
        let gj = try Self.python(Self.junitCount, [dir + "/good.xml"])
        #expect(gj.status == 0 && gj.out.hasPrefix("19 0 1 "), "junitparser: \(gj.out)")
        let gt = try Self.python(Self.tapCount, [dir + "/good.tap"])
        #expect(gt.status == 0 && gt.out.hasPrefix("19 0"), "tap.py: \(gt.out)")
        if let x = try? String(contentsOfFile: dir + "/good.xml", encoding: .utf8),
            let r = x.range(of: "logs: /tmp/lbe2e-")
        {
            let d = x[r.lowerBound...].dropFirst(6).prefix { $0 != "\n" && $0 != "&" }
            try? FileManager.default.removeItem(atPath: String(d))
        }

        var text = try String(contentsOf: Self.root.appendingPathComponent(scenario), encoding: .utf8)
        let timeline = Self.root.appendingPathComponent("Protocol/scenarios/timeline-demo-120s.json").path
        for (from, to) in [
            ("\"backend\": \"timeline-demo-120s.json\"", "\"backend\": \"\(timeline)\""),
            ("\"value\": \"80s\", \"tolerance\": \"4s\"", "\"value\": \"70s\", \"tolerance\": \"4s\""),
            ("{ \"rect\": \"card\", \"notCrossing\": \"hinge\" }", "{ \"rect\": \"card\", \"leftOf\": \"hinge\" }"),
            (
                "\"expect\": { \"status\": \"delivering\", \"stale\": true }",
                "\"expect\": { \"status\": \"delivering\", \"stale\": false }"
            ),
        ] {
            #expect(text.contains(from), "the scenario changed: \(from)")
            text = text.replacingOccurrences(of: from, with: to)
        }
        let broken = dir + "/broken.json"
        try text.write(toFile: broken, atomically: true, encoding: .utf8)
        let report = dir + "/broken-report.json"
        let b = try E2ERunnerTests.run([
            "e2e", broken, "--quiet", "--junit", dir + "/b.xml", "--tap", dir + "/b.tap", "--report", report,
        ])
        #expect(b.status == 1, "stdout: \(b.stdout)\nstderr: \(b.stderr)")
        #expect(b.stdout.contains("7/10"), "\(b.stdout)")
        let data = try #require(FileManager.default.contents(atPath: report))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let s = try #require((json["scenarios"] as? [[String: Any]])?.first)
        if let logs = s["logs"] as? String { try? FileManager.default.removeItem(atPath: logs) }
        #expect(json["timingDependent"] as? [String] == ["updates", "checked", "wallMs"])
        let steps = try #require(s["steps"] as? [[String: Any]])
        #expect(steps.count == 10)
        let failed = steps.filter { $0["passed"] as? Bool == false }.compactMap { $0["step"] as? Int }
        #expect(failed == [1, 7, 8], "\(steps)")
        func failures(_ n: Int) -> [[String: Any]] {
            steps.first { $0["step"] as? Int == n }?["failures"] as? [[String: Any]] ?? []
        }
        let remaining = try #require(failures(1).first)
        #expect(remaining["session"] as? String == "pro")
        #expect(remaining["check"] as? String == "remaining")
        #expect(remaining["expected"] as? String == "70000 ms ± 4000 ms")
        // Observed: about 80 s at 40 s of a 120 s countdown.
        let observed = Int((remaining["observed"] as? String ?? "").split(separator: " ").first ?? "") ?? 0
        #expect((76_000...84_000).contains(observed), "\(remaining)")
        #expect((remaining["logLine"] as? String ?? "").hasPrefix("pro.jsonl:"), "\(remaining)")
        let rect = try #require(failures(7).first)
        #expect(rect["session"] as? String == "duo" && rect["check"] as? String == "rect card leftOf hinge", "\(rect)")
        #expect((rect["logLine"] as? String ?? "").contains("\"foldState\":\"half-opened\""), "\(rect)")
        let stale = failures(8)
        #expect(Set(stale.compactMap { $0["session"] as? String }) == ["pro", "duo", "py"], "\(stale)")
        #expect(stale.allSatisfy { $0["expected"] as? String == "false" && $0["observed"] as? String == "true" })
        #expect(stale.allSatisfy { ($0["logLine"] as? String ?? "").contains("\"stale\":true") }, "\(stale)")

        let bj = try Self.python(Self.junitCount, [dir + "/b.xml"])
        #expect(bj.status == 0, "junitparser: \(bj.out)")
        #expect(bj.out.hasPrefix("19 3 1 step 1 awaiting pickup with 1:20 left|step 7 "), "junitparser: \(bj.out)")
        let bt = try Self.python(Self.tapCount, [dir + "/b.tap"])
        #expect(bt.status == 0 && bt.out.hasPrefix("19 3 16,32,38"), "tap.py: \(bt.out)")
    }

    /// A report path that cannot be written is refused before anything runs (review finding: the run of minutes
    /// was thrown away at the end), for `--report`, `--junit` and `--tap` alike.
    @Test func anUnwritableReportPathIsRefusedBeforeTheRun() throws {
        for flag in ["--report", "--junit", "--tap"] {
            let r = try E2ERunnerTests.run([
                "e2e", "Protocol/scenarios/e2e-quick-mixed.json", flag, "/nonexistent-lbdir/r.out",
            ])
            #expect(r.status == 2, "\(flag): \(r.stderr)")
            #expect(r.stderr.contains("cannot write \(flag) /nonexistent-lbdir/r.out: its directory"), "\(r.stderr)")
            #expect(!r.stderr.contains("[1/1]"), "\(flag): the scenario ran: \(r.stderr)")
        }
    }

    /// `--validate` runs nothing: a valid scenario passes (exit 0) and names its steps; a backend timeline is named
    /// as one and pointed to `livebusd --scenario` (exit 2); a broken step names file, line and field.
    @Test func validateNamesTheKindOfFile() throws {
        let ok = try E2ERunnerTests.run(["e2e", "--validate", "Protocol/scenarios/e2e-assert-steps.json"])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains("valid e2e scenario 'e2e-assert-steps': 3 sessions, 1 actions, 10 assertion steps"))
        let t = try E2ERunnerTests.run(["e2e", "--validate", "Protocol/scenarios/timeline-demo-120s.json"])
        #expect(t.status == 2)
        #expect(t.stdout.contains("a valid backend timeline, not an e2e scenario; it belongs to livebusd --scenario"))
        let run = try E2ERunnerTests.run(["e2e", "Protocol/scenarios/timeline-demo-120s.json", "--quiet"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("this is a backend timeline, not an e2e scenario"), "\(run.stderr)")
        let schema = try E2ERunnerTests.run(["e2e", "--validate", "Protocol/activity-schemas/ride.json"])
        #expect(schema.status == 2 && schema.stdout.contains("a valid activity schema"), "\(schema.stdout)")

        var template = Array("/tmp/lbe2e-test-XXXXXX".utf8CString)
        let dir = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bad = dir + "/bad.json"
        try """
        {
          "version": 1, "name": "bad", "duration": "10s",
          "sessions": [ { "name": "a" } ],
          "actions": [
            { "at": "1s", "type": "assert", "session": "a",
              "expect": { "rects": [ { "rect": "card", "besides": "map" } ] } }
          ]
        }
        """.write(toFile: bad, atomically: true, encoding: .utf8)
        let b = try E2ERunnerTests.run(["e2e", "--validate", bad])
        #expect(b.status == 2)
        #expect(b.stderr.contains("\(bad):6: field 'actions[0].expect.rects[0].besides': unknown field"), "\(b.stderr)")
    }
}
