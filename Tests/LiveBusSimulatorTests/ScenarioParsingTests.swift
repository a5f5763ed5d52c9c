import Foundation
import Testing

@testable import LiveBusSimulator

/// Timeline files: valid ones load, invalid ones are rejected naming the file, line and field (issue 3;
/// Protocol/SCENARIOS.md).
struct ScenarioParsingTests {
    /// A valid file with `%EXTRA%` (an event, on line 9) and `%SETTINGS%` (line 4) to substitute.
    static func document(settings: String = "", extra: String = "") -> String {
        """
        {
          "version": 1,
          "name": "t",
          "settings": {\(settings)},
          "events": [
            { "at": "0s", "type": "createOrder", "order": "A1", "customer": "C1",
              "store": { "latitude": 37.5, "longitude": 127.0 },
              "destination": { "latitude": 37.51, "longitude": 127.01 }, "etaAt": "30m" }\(extra.isEmpty ? "" : ",")
            \(extra)
          ]
        }
        """
    }

    /// The shape of the message: `file:line: field 'path': message`.
    @Test func errorDescriptionNamesFileLineAndField() {
        let error = ScenarioError(
            code: .invalidValue,
            file: "Protocol/scenarios/x.json",
            line: 12,
            field: "events[3].at",
            message: "expected a duration like \"90s\" or milliseconds"
        )
        #expect(
            error.description
                == "Protocol/scenarios/x.json:12: field 'events[3].at': expected a duration like \"90s\" or milliseconds"
        )
        #expect(
            ScenarioError(code: .syntax, file: "a.json", line: 3, field: "", message: "bad").description
                == "a.json:3: bad"
        )
    }

    /// The base document is valid: one order, default settings.
    @Test func baseDocumentLoads() throws {
        let s = try load(Self.document())
        #expect(s.name == "t")
        #expect(s.timeline.count == 1)
        #expect(s.settings == ScenarioSettings())
        guard case .createOrder(let spec) = s.timeline[0].action else {
            Issue.record("expected createOrder")
            return
        }
        #expect(spec.etaAtMs == 1_800_000)
        #expect(spec.store == Coordinate(latitude: 37.5, longitude: 127.0))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let line: Int
        let field: String
        let code: ScenarioError.Code
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "duration that is not a duration",
            text: document(extra: #"{ "at": "soon", "type": "setStatus", "order": "A1", "status": "cooking" }"#),
            line: 9,
            field: "events[1].at",
            code: .invalidValue
        ),
        Case(
            name: "negative time",
            text: document(extra: #"{ "at": -5, "type": "setStatus", "order": "A1", "status": "cooking" }"#),
            line: 9,
            field: "events[1].at",
            code: .invalidValue
        ),
        Case(
            name: "fractional milliseconds",
            text: document(extra: #"{ "at": 1.5, "type": "setStatus", "order": "A1", "status": "cooking" }"#),
            line: 9,
            field: "events[1].at",
            code: .invalidValue
        ),
        Case(
            name: "unknown status",
            text: document(extra: #"{ "at": "1m", "type": "setStatus", "order": "A1", "status": "baking" }"#),
            line: 9,
            field: "events[1].status",
            code: .invalidValue
        ),
        Case(
            name: "status going backwards",
            text: document(
                extra: #"{ "at": "1m", "type": "setStatus", "order": "A1", "status": "delivering" },"# + "\n"
                    + #"{ "at": "2m", "type": "setStatus", "order": "A1", "status": "cooking" }"#
            ),
            line: 10,
            field: "events[2].status",
            code: .invalidValue
        ),
        Case(
            name: "progress above 1",
            text: document(
                extra: #"{ "at": "1m", "type": "setStatus", "order": "A1", "status": "cooking", "progress": 1.5 }"#
            ),
            line: 9,
            field: "events[1].progress",
            code: .invalidValue
        ),
        Case(
            name: "events out of time order",
            text: document(
                extra: #"{ "at": "2m", "type": "setStatus", "order": "A1", "status": "cooking" },"# + "\n"
                    + #"{ "at": "90s", "type": "reviseEta", "order": "A1", "etaAt": "31m" }"#
            ),
            line: 10,
            field: "events[2].at",
            code: .outOfOrder
        ),
        Case(
            name: "latitude out of range",
            text: """
                {
                  "version": 1, "name": "t",
                  "events": [
                    { "at": "0s", "type": "createOrder", "order": "A1", "customer": "C1",
                      "store": { "latitude": 95, "longitude": 127.0 },
                      "destination": { "latitude": 37.51, "longitude": 127.01 }, "etaAt": "30m" }
                  ]
                }
                """,
            line: 5,
            field: "events[0].store.latitude",
            code: .invalidValue
        ),
        Case(
            name: "unknown field in an event",
            text: document(
                extra: #"{ "at": "1m", "type": "setStatus", "order": "A1", "status": "cooking", "colour": "red" }"#
            ),
            line: 9,
            field: "events[1].colour",
            code: .unknownField
        ),
        Case(
            name: "unknown top-level field",
            text: "{\n  \"version\": 1,\n  \"name\": \"t\",\n  \"event\": []\n}",
            line: 4,
            field: "event",
            code: .unknownField
        ),
        Case(
            name: "unknown settings field",
            text: document(settings: #" "tickRate": "5s" "#),
            line: 4,
            field: "settings.tickRate",
            code: .unknownField
        ),
        Case(
            name: "stale-after for a terminal status",
            text: document(settings: #" "staleAfter": { "delivered": "1m" } "#),
            line: 4,
            field: "settings.staleAfter.delivered",
            code: .unknownField
        ),
        Case(
            name: "missing required field",
            text: document(extra: #"{ "at": "1m", "type": "reviseEta", "order": "A1" }"#),
            line: 9,
            field: "events[1].etaAt",
            code: .missingField
        ),
        Case(
            name: "unknown event type",
            text: document(extra: #"{ "at": "1m", "type": "teleport", "order": "A1" }"#),
            line: 9,
            field: "events[1].type",
            code: .invalidValue
        ),
        Case(
            name: "unknown order",
            text: document(extra: #"{ "at": "1m", "type": "setStatus", "order": "Z9", "status": "cooking" }"#),
            line: 9,
            field: "events[1].order",
            code: .invalidValue
        ),
        Case(
            name: "action after the order ended",
            text: document(
                extra: #"{ "at": "1m", "type": "cancelRequest", "order": "A1", "outcome": "succeeds" },"# + "\n"
                    + #"{ "at": "2m", "type": "setStatus", "order": "A1", "status": "cooking" }"#
            ),
            line: 10,
            field: "events[2].order",
            code: .invalidValue
        ),
        Case(
            name: "cancel outcome that is neither",
            text: document(extra: #"{ "at": "1m", "type": "cancelRequest", "order": "A1", "outcome": "maybe" }"#),
            line: 9,
            field: "events[1].outcome",
            code: .invalidValue
        ),
        Case(
            name: "ETA before the event",
            text: document(extra: #"{ "at": "10m", "type": "reviseEta", "order": "A1", "etaAt": "5m" }"#),
            line: 9,
            field: "events[1].etaAt",
            code: .invalidValue
        ),
        Case(
            name: "duplicate key",
            text: document(
                extra: #"{ "at": "1m", "type": "setStatus", "order": "A1", "status": "cooking", "status": "pickedUp" }"#
            ),
            line: 9,
            field: "events[1].status",
            code: .duplicateField
        ),
        Case(
            name: "rider position before pickup",
            text: document(
                extra:
                    #"{ "at": "1m", "type": "riderPosition", "order": "A1", "position": { "latitude": 1, "longitude": 2 } }"#
            ),
            line: 9,
            field: "events[1].position",
            code: .invalidValue
        ),
        Case(
            name: "unsupported version",
            text: "{\n  \"version\": 2,\n  \"name\": \"t\",\n  \"events\": []\n}",
            line: 2,
            field: "version",
            code: .invalidValue
        ),
        Case(
            name: "syntax error (trailing comma)",
            text: "{\n  \"version\": 1,\n  \"name\": \"t\",\n  \"events\": [],\n}",
            line: 5,
            field: "",
            code: .syntax
        ),
        Case(
            name: "arriveAt while not delivering",
            text: document(
                extra: #"{ "at": "1m", "type": "reviseEta", "order": "A1", "etaAt": "31m", "arriveAt": "30m" }"#
            ),
            line: 9,
            field: "events[1].arriveAt",
            code: .invalidValue
        ),
        Case(
            name: "empty customer",
            text: """
                {
                  "version": 1, "name": "t",
                  "events": [
                    { "at": "0s", "type": "createOrder", "order": "A1",
                      "customer": "",
                      "store": { "latitude": 37.5, "longitude": 127.0 },
                      "destination": { "latitude": 37.51, "longitude": 127.01 }, "etaAt": "30m" }
                  ]
                }
                """,
            line: 5,
            field: "events[0].customer",
            code: .invalidValue
        ),
        Case(
            name: "zero stall",
            text: document(extra: #"{ "at": "1m", "type": "stall", "duration": "0s" }"#),
            line: 9,
            field: "events[1].duration",
            code: .invalidValue
        ),
        Case(
            name: "unsafe order id",
            text: """
                {
                  "version": 1, "name": "t",
                  "events": [
                    { "at": "0s", "type": "createOrder", "order": "A/1", "customer": "C1",
                      "store": { "latitude": 37.5, "longitude": 127.0 },
                      "destination": { "latitude": 37.51, "longitude": 127.01 }, "etaAt": "30m" }
                  ]
                }
                """,
            line: 4,
            field: "events[0].order",
            code: .invalidValue
        ),
    ]

    /// Each invalid file is rejected with the exact line, field path and code.
    @Test(arguments: cases) func invalidFileIsRejected(_ c: Case) {
        do {
            let s = try load(c.text)
            Issue.record("loaded \(s.name) but expected an error at line \(c.line) field \(c.field)")
        } catch {
            #expect(error.file == "t.json")
            #expect(error.line == c.line, "\(error)")
            #expect(error.field == c.field, "\(error)")
            #expect(error.code == c.code, "\(error)")
        }
    }

    /// A summary that would make the content state larger than 4096 bytes is rejected at load time, at its field
    /// (live-activities.md §1.6).
    @Test func oversizedSummaryIsRejected() {
        let long = String(repeating: "가", count: 1400)  // 4200 bytes of UTF-8
        let text = Self.document(
            extra:
                #"{ "at": "1m", "type": "setStatus", "order": "A1", "status": "cooking", "summary": { "ko": "\#(long)", "en": "x" } }"#
        )
        #expect {
            try load(text)
        } throws: { error in
            guard let e = error as? ScenarioError else { return false }
            return e.line == 9 && e.field == "events[1].summary" && e.message.contains("4096")
        }
    }

    /// Durations: strings with units (including compound `1m30s`) and integer milliseconds.
    @Test(arguments: [
        ("90s", 90_000.0), ("1.5m", 90_000), ("250ms", 250), ("2h", 7_200_000), ("1m30s", 90_000),
        ("1h2m3s4ms", 3_723_004),
    ])
    func durationStrings(_ text: String, _ ms: Double) {
        #expect(TimelineDecoder.parseDuration(text) == ms)
    }

    /// Malformed durations are not durations.
    @Test(arguments: ["", "10", "s", "1.s", ".5s", "5 s", "5sec", "1m-30s", "1..5s"])
    func malformedDurations(_ text: String) {
        #expect(TimelineDecoder.parseDuration(text) == nil)
    }

    /// Every `Protocol/scenarios/timeline-*.json` loads (there are at least three), and plays to a finished state.
    @Test func shippedTimelineFilesLoadAndPlay() throws {
        let dir = scenariosDirectory()
        let files = try FileManager.default.contentsOfDirectory(atPath: dir)
            .filter { $0.hasPrefix("timeline-") && $0.hasSuffix(".json") }.sorted()
        #expect(files.count >= 3)
        for f in files {
            let s = try Scenario.load(contentsOf: dir + "/" + f)
            let (sim, events) = playAll(s)
            #expect(sim.isFinished, "\(f)")
            #expect(!events.isEmpty, "\(f)")
            #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp }, "\(f)")
        }
    }

    /// A missing file is reported with its path.
    @Test func unreadableFile() {
        #expect {
            try Scenario.load(contentsOf: "/nonexistent/x.json")
        } throws: { error in
            (error as? ScenarioError)?.description == "/nonexistent/x.json: cannot read the file"
        }
    }
}
