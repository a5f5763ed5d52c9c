import Foundation
import LiveBusDaemon
import LiveBusLayout
import LiveBusScenario
import LiveBusSimulator
import LiveBusWire

/// `livebus e2e FILE… [--time-scale X] [--seed N] [--report FILE]`: plays end-to-end scenarios (`Protocol/E2E.md`)
/// against a real `livebusd`, one client process per session, and checks the invariants from their logs.
enum E2ECommand {
    /// `--time-scale X` (``DeliverySimulator/timeScaleRange``), or `nil` when not given (each scenario's own then).
    static func timeScale(_ a: Arguments) throws(CLIError) -> Double? {
        a.value("time-scale") == nil
            ? nil : try a.double("time-scale", default: 10, in: DeliverySimulator.timeScaleRange)
    }

    /// Throws unless `path` can be written: its directory exists and is writable, and the file, if it exists, is a
    /// writable regular file. Checked with `access(2)` and `stat(2)`; nothing is created.
    /// - Throws: ``CLIError`` `cannotWrite` (exit 2) naming the flag, the path and the system's reason.
    static func checkWritable(_ path: String, flag: String) throws(CLIError) {
        func fail(_ why: String) -> CLIError {
            CLIError(
                "cannotWrite",
                "cannot write --\(flag) \(path): \(why)",
                recovery: "choose a writable path for --\(flag), or create its directory first",
                exit: .usage
            )
        }
        guard !path.isEmpty else { throw fail("the path is empty") }
        var st = stat()
        if stat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFREG else { throw fail("it exists and is not a regular file") }
            guard access(path, W_OK) == 0 else { throw fail(String(cString: strerror(errno))) }
            return
        }
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard stat(dir, &st) == 0 else { throw fail("its directory \(dir): \(String(cString: strerror(errno)))") }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw fail("\(dir) is not a directory") }
        guard access(dir, W_OK) == 0 else { throw fail("its directory \(dir): \(String(cString: strerror(errno)))") }
    }

    static func run(_ argv: [String], json: Bool) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "e2e",
            options: ["time-scale", "seed", "report", "python-client", "junit", "tap"],
            flags: ["json", "keep-logs", "quiet", "validate"]
        )
        let json = json || a.flag("json")
        guard !a.positionals.isEmpty else {
            throw .usage(
                "livebus e2e needs at least one scenario file",
                recovery: "livebus e2e Protocol/scenarios/e2e-*.json"
            )
        }
        let scale = try timeScale(a)
        let seed = a.value("seed") == nil ? nil : try a.uint("seed", default: 1)
        // A report that cannot be written fails now, not after a run of minutes (review finding).
        for flag in ["report", "junit", "tap"] {
            if let path = a.value(flag) { try checkWritable(path, flag: flag) }
        }
        let catalog: DeviceCatalog
        do { catalog = try DeviceCatalog.bundled() } catch {
            throw CLIError("internal", "cannot read the device catalog: \(error.message)", exit: .usage)
        }
        if a.flag("validate") { return try E2EValidate.run(a.positionals, catalog: catalog, json: json) }
        var scenarios: [(String, E2EScenario)] = []
        for file in a.positionals {
            scenarios.append((file, try E2EValidate.scenario(file, catalog: catalog)))
        }
        let python = a.value("python-client") ?? findPythonClient()
        if scenarios.contains(where: { $0.1.sessions.contains { $0.client == .python } }) && python == nil {
            throw CLIError(
                "missingClient",
                "a scenario has Python sessions but tools/pyclient/livebus_client.py was not found",
                recovery: "run from the repository root or pass --python-client PATH",
                exit: .usage
            )
        }
        E2EProcesses.shared.installSignalHandlers()
        let options = E2EOptions(
            timeScale: scale,
            seed: seed,
            keepLogs: a.flag("keep-logs"),
            pythonClient: python,
            progress: !a.flag("quiet"),
            catalog: catalog
        )
        var results: [E2EScenarioResult] = []
        for (i, (file, s)) in scenarios.enumerated() {
            if options.progress {
                let scaleText = String(format: "%g", scale ?? s.timeScale)
                // StandardStream, not FileHandle.write, which traps on a closed pipe (`2>&1 | head -1`): a reader
                // that went away gets no more progress, and the runs, their cleanup and the reports go on.
                StandardStream.err(
                    "[\(i + 1)/\(scenarios.count)] \(s.name) (\(file)): \(s.sessions.count) sessions, \(s.actions.count) actions, \(scaleText)×\n"
                )
            }
            let r: E2EScenarioResult
            do { r = try E2ERun(scenario: s, file: file, options: options).run() } catch {
                r = E2EScenarioResult(
                    file: file,
                    name: s.name,
                    sessions: s.sessions.count,
                    updates: 0,
                    invariants: [],
                    wallMs: 0,
                    error: error.message
                )
            }
            if options.progress {
                StandardStream.err(
                    "    \(r.passed ? "pass" : "FAIL") in \(String(format: "%.1f", Double(r.wallMs) / 1000)) s\n"
                )
            }
            results.append(r)
        }
        let report = reportJSON(results, timeScale: scale, seed: seed)
        if let path = a.value("report") {
            guard let bytes = try? WireJSON.encode(report),
                FileManager.default.createFile(atPath: path, contents: Data(bytes + [0x0A]))
            else {
                throw CLIError("cannotWrite", "cannot write the report to \(path)", exit: .usage)
            }
        }
        for (flag, text) in [("junit", E2EReports.junit(results)), ("tap", E2EReports.tap(results))] {
            guard let path = a.value(flag) else { continue }
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
                throw CLIError("cannotWrite", "cannot write the --\(flag) report to \(path)", exit: .usage)
            }
        }
        let allPassed = results.allSatisfy(\.passed)
        if json {
            Output(json: true).printJSON(JSONValue.object(["ok": .bool(allPassed), "data": report]))
        } else {
            print(table(results), terminator: "")
        }
        return allPassed ? 0 : ExitCode.verdictFailed.rawValue
    }

    /// Impossible postures for a device (half-opened on a phone without a hinge…) are rejected before running,
    /// with the file, the line and the field.
    static func preflight(_ s: E2EScenario, file: String, catalog: DeviceCatalog) throws(E2EScenarioError) {
        // A federation needs nats-server; a partition needs network namespaces (root and iproute2).
        if let problem = s.hostProblem(
            file: file,
            natsServer: E2ENATSCluster.binary != nil,
            namespaces: E2ENetworkNamespace.available
        ) {
            throw problem
        }
        for (i, spec) in s.sessions.enumerated() {
            if let os = spec.os {
                do throws(LayoutError) { _ = try OSVersion.parse(os) } catch {
                    throw E2EScenarioError(
                        file: file,
                        line: spec.line,
                        field: "sessions[\(i)].os",
                        message: error.message
                    )
                }
            }
            do throws(LayoutError) {
                _ = try OfflineLayout.run(E2ERun.layoutRequest(spec, spec.posture), catalog: catalog)
            } catch {
                throw E2EScenarioError(
                    file: file,
                    line: spec.line,
                    field: "sessions[\(i)].posture",
                    message: "impossible for \(spec.device): \(error.message)"
                )
            }
        }
        for a in s.actions {
            guard case .posture(let t, let p) = a.kind else { continue }
            for n in s.sessionNames(for: t) {
                guard let spec = s.sessions.first(where: { $0.name == n }) else { continue }
                do throws(LayoutError) {
                    _ = try OfflineLayout.run(E2ERun.layoutRequest(spec, p), catalog: catalog)
                } catch {
                    throw E2EScenarioError(
                        file: file,
                        line: a.line,
                        field: "posture",
                        message:
                            "\(p.foldState)/\(p.orientation) is impossible for session \(n) (\(spec.device)): \(error.message)"
                    )
                }
            }
        }
    }

    /// `tools/pyclient/livebus_client.py` under the working directory or above the `livebus` binary.
    static func findPythonClient() -> String? {
        let rel = "tools/pyclient/livebus_client.py"
        if FileManager.default.fileExists(atPath: rel) { return rel }
        var dir = URL(fileURLWithPath: E2ERun.livebusBinary()).deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = dir.appendingPathComponent(rel).path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return nil
    }

    /// The table: scenario, sessions, updates, each invariant pass/FAIL, wall time; then each failure's first
    /// counterexample.
    static func table(_ results: [E2EScenarioResult]) -> String {
        let names = E2EInvariantChecker.names
        let nameWidth = max(8, results.map(\.name.count).max() ?? 8)
        var header = "scenario".padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  sessions  updates"
        for n in names { header += "  " + n }
        header += "  steps    wall"
        var out = header + "\n"
        var notes: [String] = []
        for r in results {
            var line = r.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            line += "  " + String(repeating: " ", count: max(0, 8 - String(r.sessions).count)) + String(r.sessions)
            line += "  " + String(repeating: " ", count: max(0, 7 - String(r.updates).count)) + String(r.updates)
            for n in names {
                let cell: String
                if r.error != nil {
                    cell = "–"
                } else if let i = r.invariants.first(where: { $0.name == n }) {
                    cell = i.passed ? "pass" : "FAIL"
                    if !i.passed {
                        notes.append("  \(r.name) · \(n) (\(i.failures) of \(i.checked)): \(i.counterexample ?? "")")
                    }
                } else {
                    cell = "–"
                }
                line += "  " + cell.padding(toLength: n.count, withPad: " ", startingAt: 0)
            }
            let steps = r.error != nil || r.steps.isEmpty ? "–" : "\(r.steps.filter(\.passed).count)/\(r.steps.count)"
            line += "  " + steps.padding(toLength: 5, withPad: " ", startingAt: 0)
            for s in r.steps where !s.passed { notes.append("  \(r.name) · \(s.summary)") }
            line += "  " + String(format: "%6.1f s", Double(r.wallMs) / 1000)
            out += line + "\n"
            if let e = r.error { notes.append("  \(r.name) · could not run: \(e)") }
            if let d = r.logDirectory, !r.passed { notes.append("  \(r.name) · logs: \(d)") }
        }
        let passed = results.filter(\.passed).count
        if !notes.isEmpty { out += "\nfirst counterexamples:\n" + notes.joined(separator: "\n") + "\n" }
        out += "\n\(passed) of \(results.count) scenarios passed\n"
        out += "(updates, checked counts and wall times depend on real-time scheduling; verdicts do not)\n"
        return out
    }

    static func reportJSON(_ results: [E2EScenarioResult], timeScale: Double?, seed: UInt64?) -> JSONValue {
        .object([
            "timeScale": timeScale.map { .number($0) } ?? .null,
            "seed": seed.map { .number(Double($0)) } ?? .null,
            "passed": .bool(results.allSatisfy(\.passed)),
            // The runner plays in real time: these figures may differ between runs of one scenario and seed.
            "timingDependent": .array(E2EReports.timingDependent.map { .string($0) }),
            "scenarios": .array(
                results.map { r in
                    .object([
                        "file": .string(r.file),
                        "name": .string(r.name),
                        "passed": .bool(r.passed),
                        "sessions": .number(Double(r.sessions)),
                        "updates": .number(Double(r.updates)),
                        "published": .number(Double(r.published)),
                        "wallMs": .number(Double(r.wallMs)),
                        "error": r.error.map { .string($0) } ?? .null,
                        "logs": r.logDirectory.map { .string($0) } ?? .null,
                        "invariants": .array(
                            r.invariants.map { i in
                                .object([
                                    "name": .string(i.name),
                                    "passed": .bool(i.passed),
                                    "checked": .number(Double(i.checked)),
                                    "failures": .number(Double(i.failures)),
                                    "counterexample": i.counterexample.map { .string($0) } ?? .null,
                                ])
                            }
                        ),
                        "steps": .array(
                            r.steps.map { s in
                                .object([
                                    "step": .number(Double(s.step.index)),
                                    "name": .string(s.step.name),
                                    "line": .number(Double(s.step.line)),
                                    "passed": .bool(s.passed),
                                    "sessions": .array(s.sessions.map { .string($0) }),
                                    "error": s.error.map { .string($0) } ?? .null,
                                    "failures": .array(
                                        s.failures.map { f in
                                            .object([
                                                "session": .string(f.session), "check": .string(f.check),
                                                "expected": .string(f.expected), "observed": .string(f.observed),
                                                "at": .string(f.at), "logLine": .string(f.logLine),
                                            ])
                                        }
                                    ),
                                ])
                            }
                        ),
                    ])
                }
            ),
        ])
    }
}
