import Foundation
import LiveBusScenario

/// `livebus e2e --junit FILE` and `--tap FILE`: the run's results for CI systems.
///
/// JUnit XML follows the common schema that Jenkins, GitLab and `junitparser` read: one `<testsuite>` per scenario,
/// one `<testcase>` per invariant and per assertion step (plus one `run` case for a scenario that could not run),
/// a `<failure>` with the counterexample, and `<system-out>` with the log paths. TAP is version 14
/// (testanything.org): one test point per scenario, invariant and step, the failure's details in a YAML block.
enum E2EReports {
    /// The JUnit XML document of `results`.
    static func junit(_ results: [E2EScenarioResult]) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let tests = results.reduce(0) { $0 + cases($1).count }
        let failures = results.reduce(0) { $0 + cases($1).filter { $0.failure != nil }.count }
        let wall = Double(results.reduce(0) { $0 + $1.wallMs }) / 1000
        out +=
            "<testsuites name=\"livebus e2e\" tests=\"\(tests)\" failures=\"\(failures)\" errors=\"0\" time=\"\(wall)\">\n"
        for r in results {
            let cs = cases(r)
            let f = cs.filter { $0.failure != nil }.count
            out +=
                "  <testsuite name=\"\(xml(r.name))\" tests=\"\(cs.count)\" failures=\"\(f)\" errors=\"0\" skipped=\"0\" time=\"\(Double(r.wallMs) / 1000)\" file=\"\(xml(r.file))\">\n"
            out += "    <properties>\n"
            out += "      <property name=\"sessions\" value=\"\(r.sessions)\"/>\n"
            out += "      <property name=\"updates\" value=\"\(r.updates)\"/>\n"
            out += "      <property name=\"published\" value=\"\(r.published)\"/>\n"
            out += "      <property name=\"timingDependent\" value=\"\(timingDependent.joined(separator: ","))\"/>\n"
            out += "    </properties>\n"
            for c in cs {
                out += "    <testcase name=\"\(xml(c.name))\" classname=\"\(xml(r.name))\" file=\"\(xml(r.file))\""
                if let line = c.line { out += " line=\"\(line)\"" }
                if let failure = c.failure {
                    out += ">\n      <failure message=\"\(xml(failure.message))\" type=\"\(c.kind)\">"
                    out += xml(failure.details) + "</failure>\n    </testcase>\n"
                } else {
                    out += "/>\n"
                }
            }
            out += "    <system-out>" + xml(systemOut(r)) + "</system-out>\n"
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }

    /// The TAP 14 document of `results`.
    static func tap(_ results: [E2EScenarioResult]) -> String {
        var out = "TAP version 14\n"
        var n = 0
        var body = ""
        for r in results {
            for c in cases(r) {
                n += 1
                body += "\(c.failure == nil ? "ok" : "not ok") \(n) - \(tapText(r.name)): \(tapText(c.name))\n"
                if let f = c.failure {
                    body += "  ---\n"
                    body += "  message: \(yaml(f.message))\n"
                    body += "  severity: fail\n"
                    body += "  file: \(yaml(r.file))\n"
                    if let line = c.line { body += "  line: \(line)\n" }
                    body += "  details: \(yaml(f.details))\n"
                    if let d = r.logDirectory { body += "  logs: \(yaml(d))\n" }
                    body += "  ...\n"
                }
            }
        }
        out += "1..\(n)\n" + body
        return out
    }

    /// Figures of a run that depend on real-time scheduling (the e2e runner plays in real time): how many updates
    /// the phones applied, how many items an invariant checked, wall times. Verdicts do not.
    static let timingDependent = ["updates", "checked", "wallMs"]

    struct Case {
        var name: String
        var kind: String
        var line: Int?
        var failure: (message: String, details: String)?
    }

    /// One case per invariant and per step, or one `run` case for a scenario that could not run.
    static func cases(_ r: E2EScenarioResult) -> [Case] {
        if let e = r.error { return [Case(name: "run", kind: "error", failure: ("could not run", e))] }
        var out: [Case] = []
        for i in r.invariants {
            var c = Case(name: "invariant \(i.name)", kind: "invariant")
            if !i.passed {
                c.failure = (
                    "\(i.name): \(i.failures) of \(i.checked) failed",
                    "first counterexample: \(i.counterexample ?? "")"
                )
            }
            out.append(c)
        }
        for s in r.steps {
            var c = Case(name: "step \(s.step.index) \(s.step.name)", kind: "assertion", line: s.step.line)
            if !s.passed {
                let lines = s.error.map { [$0] } ?? s.failures.map(\.description)
                let first =
                    s.error ?? s.failures.first.map {
                        "phone \($0.session): \($0.check) expected \($0.expected), observed \($0.observed)"
                    } ?? ""
                c.failure = (first, lines.joined(separator: "\n"))
            }
            out.append(c)
        }
        return out
    }

    static func systemOut(_ r: E2EScenarioResult) -> String {
        var lines: [String] = []
        if let d = r.logDirectory {
            lines.append("logs: \(d)")
            for (session, files) in r.logFiles { lines.append("\(session): \(files.joined(separator: " "))") }
        } else {
            lines.append("logs: removed (the scenario passed; --keep-logs keeps them)")
        }
        lines.append("updates: \(r.updates) (timing-dependent)")
        return lines.joined(separator: "\n") + "\n"
    }

    /// XML text and attribute escaping; control characters other than tab and newline (invalid in XML 1.0)
    /// become U+FFFD.
    static func xml(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n": out += "&#10;"
            case "\t": out.unicodeScalars.append(u)
            default:
                if u.value < 0x20 || u.value == 0xFFFE || u.value == 0xFFFF {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out
    }

    /// A test point's description: one line, no `#` (a TAP directive).
    static func tapText(_ s: String) -> String {
        s.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "#", with: "\\#")
    }

    /// A YAML double-quoted scalar.
    static func yaml(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += String(format: "\\x%02X", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }
}
