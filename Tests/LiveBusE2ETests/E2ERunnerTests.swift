import Foundation
import Testing

/// `livebus e2e` as a real process (the built binary at `.build/debug/livebus`): a quick scenario mixing the Swift
/// and the Python client passes every invariant and writes its report; a broken scenario file is refused with
/// exit 2 naming the file, the line and the field (Protocol/E2E.md).
struct E2ERunnerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func run(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let p = Process()
        p.executableURL = root.appendingPathComponent(".build/debug/livebus")
        p.arguments = args
        p.currentDirectoryURL = root
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// The quick mixed scenario passes end to end (exit 0, every invariant passed in the table and the report);
    /// an invalid file exits 2 with `file:line: field '…'`.
    @Test(.timeLimit(.minutes(2))) func quickScenarioPassesAndBadFileIsRefused() throws {
        var template = Array("/tmp/lbe2e-test-XXXXXX".utf8CString)
        let dir = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let report = dir + "/report.json"
        let r = try Self.run(["e2e", "Protocol/scenarios/e2e-quick-mixed.json", "--quiet", "--report", report])
        #expect(r.status == 0, "stdout: \(r.stdout)\nstderr: \(r.stderr)")
        #expect(r.stdout.contains("1 of 1 scenarios passed"))
        let data = try #require(FileManager.default.contents(atPath: report))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["passed"] as? Bool == true)
        let scenario = try #require((json["scenarios"] as? [[String: Any]])?.first)
        let names = (scenario["invariants"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(
            names == [
                "convergence", "sequence", "statuses", "remaining", "stale", "layout", "crashes", "memory", "actions",
            ]
        )
        #expect((scenario["updates"] as? Int ?? 0) > 0)

        let bad = dir + "/bad.json"
        try """
        {
          "version": 1, "name": "bad", "duration": "1s",
          "sessions": [ { "name": "a", "clockDrift": 1e9 } ]
        }
        """.write(toFile: bad, atomically: true, encoding: .utf8)
        let b = try Self.run(["e2e", bad, "--quiet"])
        #expect(b.status == 2)
        #expect(b.stderr.contains("\(bad):3: field 'sessions[0].clockDrift': must be within"), "\(b.stderr)")
    }
}
