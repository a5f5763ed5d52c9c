import LiveBusScenario
import Testing

/// The e2e scenario format (Protocol/E2E.md §2): valid files decode with expansions; every broken file is
/// rejected with the file, the line and the field.
struct ScenarioDecoderTests {
    static let valid = """
        {
          "version": 1,
          "name": "sample",
          "backend": "timeline-demo-120s.json",
          "timeScale": 20,
          "duration": "130s",
          "sessions": [
            { "name": "pro", "device": "iphone-16-pro" },
            { "name": "duo", "client": "python", "device": "iphone-duo",
              "posture": { "foldState": "half-opened", "orientation": "landscape" },
              "clockSkew": "-1h", "clockDrift": -200, "language": "en", "count": 3 }
          ],
          "actions": [
            { "at": "1s", "type": "posture", "session": "duo", "postures": [
                { "foldState": "folded" }, { "foldState": "flat", "orientation": "landscape" } ],
              "repeat": { "every": "100ms", "count": 4 } },
            { "at": "2s", "type": "addToxic", "label": "lag", "toxic": "latency", "target": { "scope": "minority" },
              "params": { "latencyMs": 300, "jitterMs": 50 }, "duration": "5s" },
            { "at": "3s", "type": "killDaemon" },
            { "at": "4s", "type": "restartDaemon" },
            { "at": "5s", "type": "cancelOrder", "order": "A1001", "expect": "cancelFailed" },
            { "at": "6s", "type": "clock", "session": "pro", "step": "+30s" }
          ],
          "expect": { "finalStatus": { "A1001": "delivered" } },
          "tolerances": { "remaining": "750ms", "maxDaemonRSSMiB": 300 }
        }
        """

    static func decode(_ text: String) throws(E2EScenarioError) -> E2EScenario {
        try E2EScenarioDecoder.decode(Array(text.utf8), file: "Protocol/scenarios/x.json", knownDevices: nil)
    }

    static func error(_ text: String) -> E2EScenarioError? {
        do {
            _ = try decode(text)
            return nil
        } catch {
            return error
        }
    }

    /// A valid file decodes; count, repeat and toxic durations expand; the timeline path is resolved.
    @Test func validFileDecodes() throws {
        let s = try Self.decode(Self.valid)
        #expect(s.name == "sample")
        #expect(s.backend == .timeline(path: "Protocol/scenarios/timeline-demo-120s.json"))
        #expect(s.timeScale == 20)
        #expect(s.durationMilliseconds == 130_000)
        #expect(s.sessions.map(\.name) == ["pro", "duo-1", "duo-2", "duo-3"])
        #expect(s.sessions[1].clockSkewMilliseconds == -3_600_000)
        #expect(s.sessions[1].clockDriftPPM == -200)
        #expect(s.sessions[1].client == .python)
        #expect(s.sessionNames(for: .named("duo")) == ["duo-1", "duo-2", "duo-3"])
        let postures = s.actions.filter { $0.typeName == "posture" }
        #expect(postures.map(\.atMilliseconds) == [1000, 1100, 1200, 1300])
        #expect(postures[1].kind == .posture(.named("duo"), E2EPosture(foldState: "flat", orientation: "landscape")))
        #expect(s.actions.contains { $0.kind == .removeToxic(label: "lag") && $0.atMilliseconds == 7000 })
        #expect(s.actions.map(\.atMilliseconds) == s.actions.map(\.atMilliseconds).sorted())
        #expect(s.tolerances.remainingMilliseconds == 750)
        #expect(s.expect.finalStatus == ["A1001": "delivered"])
    }

    /// Errors name file, line and field, as SCENARIOS.md does for backend timelines.
    @Test(arguments: [
        // unknown field: the key's line
        (
            "{\n\"version\": 1,\n\"name\": \"x\",\n\"duration\": \"1s\",\n\"colour\": 3,\n\"sessions\": [{\"name\": \"a\"}]\n}",
            5, "colour", "unknown field"
        ),
        // impossible value
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"1s\",\n\"sessions\": [\n{\"name\": \"a\",\n\"clockDrift\": 1e9}]}",
            4, "sessions[0].clockDrift", "must be within"
        ),
        // wrong type
        (
            "{\"version\": 1, \"name\": \"x\",\n\"duration\": \"soon\", \"sessions\": [{\"name\": \"a\"}]}",
            2, "duration", "expected a duration"
        ),
        // missing field: the object's line
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"1s\", \"sessions\": [\n{\"device\": \"iphone-16-pro\"}]}",
            2, "sessions[0].name", "missing required field"
        ),
        // repeated field
        (
            "{\"version\": 1, \"name\": \"x\",\n\"name\": \"y\", \"duration\": \"1s\", \"sessions\": [{\"name\": \"a\"}]}",
            2, "name", "given twice"
        ),
        // time order
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"a\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"killDaemon\"},\n{\"at\": \"4s\", \"type\": \"restartDaemon\"}]}",
            3, "actions[1].at", "time order"
        ),
        // unknown session
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"a\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"appState\",\n\"session\": \"b\", \"appState\": \"background\"}]}",
            3, "actions[0].session", "no session"
        ),
        // a misspelled session: the nearest name
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"duo\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"appState\",\n\"session\": \"dou\", \"appState\": \"background\"}]}",
            3, "actions[0].session", "no session or session group named 'dou' (did you mean 'duo'?)"
        ),
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"duo\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"addToxic\", \"label\": \"d\", \"toxic\": \"drop\",\n\"target\": {\"session\": \"Duo\"}, \"params\": {\"probability\": 0.5}}]}",
            3, "actions[0].target.session", "no session named 'Duo' (did you mean 'duo'?)"
        ),
        // toxic parameter out of range
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"a\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"addToxic\", \"label\": \"d\", \"toxic\": \"drop\", \"target\": {\"scope\": \"all\"},\n\"params\": {\"probability\": 1.5}}]}",
            3, "actions[0].params.probability", "within 0…1"
        ),
        // unknown toxic parameter
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"a\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"addToxic\", \"label\": \"d\", \"toxic\": \"drop\", \"target\": {\"scope\": \"all\"},\n\"params\": {\n\"latencyMs\": 3}}]}",
            4, "actions[0].params.latencyMs", "unknown field"
        ),
        // killed and never restarted
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"a\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"killDaemon\"}]}",
            1, "actions", "never restarted"
        ),
        // unknown action type
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"9s\", \"sessions\": [{\"name\": \"a\"}], \"actions\": [\n{\"at\": \"5s\",\n\"type\": \"explode\"}]}",
            3, "actions[0].type", "unknown action type"
        ),
        // action after the duration
        (
            "{\"version\": 1, \"name\": \"x\",\n\"duration\": \"1s\", \"sessions\": [{\"name\": \"a\"}], \"actions\": [\n{\"at\": \"5s\", \"type\": \"createOrder\"}]}",
            2, "duration", "after the duration"
        ),
        // wrong version
        (
            "{\"version\": 2, \"name\": \"x\", \"duration\": \"1s\", \"sessions\": [{\"name\": \"a\"}]}",
            1, "version", "unsupported version"
        ),
        // fold state
        (
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"1s\", \"sessions\": [{\"name\": \"a\", \"posture\":\n{\"foldState\": \"crumpled\"}}]}",
            2, "sessions[0].posture.foldState", "is not one of"
        ),
    ])
    func errorsNameFileLineAndField(text: String, line: Int, field: String, message: String) {
        let e = Self.error(text)
        #expect(e?.file == "Protocol/scenarios/x.json")
        #expect(e?.line == line)
        #expect(e?.field == field)
        #expect(e?.message.contains(message) == true, "\(e?.description ?? "no error")")
        #expect(e?.description.hasPrefix("Protocol/scenarios/x.json:\(line): field '\(field)': ") == true)
    }

    /// Syntax errors name the line only.
    @Test func syntaxErrorNamesTheLine() {
        let e = Self.error("{\n\"version\": 1,\n\"name\": \"x\"\n\"duration\": 3}")
        #expect(e?.line == 4)
        #expect(e?.field == nil)
        #expect(e?.description.hasPrefix("Protocol/scenarios/x.json:4: expected ',' or '}'") == true)
    }

    /// Unknown devices are rejected when the catalog is given.
    @Test func unknownDeviceIsRejected() {
        let text =
            "{\"version\": 1, \"name\": \"x\", \"duration\": \"1s\", \"sessions\": [\n{\"name\": \"a\", \"device\": \"nokia-3310\"}]}"
        do {
            _ = try E2EScenarioDecoder.decode(Array(text.utf8), file: "f.json", knownDevices: ["iphone-16-pro"])
            Issue.record("accepted an unknown device")
        } catch {
            #expect(
                error.description
                    == "f.json:2: field 'sessions[0].device': unknown device 'nokia-3310'; known: iphone-16-pro"
            )
        }
    }
}
