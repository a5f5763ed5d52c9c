import Foundation
import LiveBusWire
import Testing

@testable import LiveBusCLI

/// Issue 22, record and replay (Protocol/RECORD.md): a recorded demo replays to the same final state, a tampered
/// recording fails with the diff, a malformed one names its line.
@Suite(.serialized)
struct E2ERecordReplayTests {
    static let bin = E2ECLIGoldenTests.bin

    static func shell(_ script: String) throws -> (Int32, String) { try E2EReviewFindingsTests.shell(script) }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// `livebus demo --record` (the demo's scenario at 20×) writes a recording of three phones that all end
    /// delivered; `livebus replay` plays it against a fresh daemon and exits 0; the same recording with one phone's
    /// final app state and activity status changed fails with exit 1 and a line naming each difference.
    @Test func recordedDemoReplaysToTheSameFinalStateAndATamperedOneFailsWithTheDiff() throws {
        let dir = temporaryDirectory("lbrec")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let rec = "\(dir)/demo.jsonl"
        let (demoCode, demoOut) = try Self.shell(
            "timeout 120 \(Self.bin)/livebus demo --time-scale 20 --record \(rec) > \(dir)/demo.out; echo demo=$?"
        )
        #expect(demoOut.contains("demo=0"), "\(demoOut)")
        #expect(demoCode == 0)
        let parsed = try Recording.parse(String(contentsOfFile: rec, encoding: .utf8), file: rec)
        #expect(parsed.daemon == Recording.Daemon(scenario: "demo-120s", timeScale: 20, seed: 1))
        #expect(parsed.final.map(\.name) == ["duo-flat", "duo-half", "pro"])
        for p in parsed.final {
            #expect(p.activities["orders/A1001"] == Recording.Activity(status: "delivered", stale: false), "\(p)")
        }
        #expect(parsed.final.first { $0.name == "duo-half" }?.appState == "background")
        #expect(parsed.entries.filter { $0.type == "attach" }.count == 3)
        #expect(parsed.entries.contains { $0.type == "appState" && $0.json["session"]?.stringValue == "duo-half" })
        #expect(parsed.events > 5)
        let skew = parsed.entries.first { $0.type == "attach" && $0.json["session"]?.stringValue == "duo-half" }?
            .json["clockSkewMs"]?.doubleValue
        #expect(skew.map { abs($0 - 90_000) < 1000 } == true, "duo-half's clock: \(String(describing: skew))")

        let (replayCode, replayOut) = try Self.shell("timeout 120 \(Self.bin)/livebus replay \(rec) --quiet")
        #expect(replayCode == 0, "\(replayOut)")
        #expect(replayOut.contains("3 phones end as recorded"), "\(replayOut)")

        // Tampered: the final line says duo-half ended in the foreground, still delivering.
        var all = try Self.lines(rec)
        let last = try WireJSON.decode(JSONValue.self, from: Array(all.removeLast().utf8))
        guard case .object(var final) = last, case .array(var phones)? = final["phones"],
            let i = phones.firstIndex(where: { $0["name"]?.stringValue == "duo-half" }), case .object(var p) = phones[i]
        else {
            Issue.record("no duo-half in the final line")
            return
        }
        p["appState"] = .string("foreground")
        p["activities"] = .array([
            .object(["topic": .string("orders/A1001"), "status": .string("delivering"), "stale": .bool(false)])
        ])
        phones[i] = .object(p)
        final["phones"] = .array(phones)
        let tampered = String(decoding: try WireJSON.encode(JSONValue.object(final)), as: UTF8.self)
        try (all + [tampered]).joined(separator: "\n")
            .write(toFile: "\(dir)/bad.jsonl", atomically: true, encoding: .utf8)
        let (badCode, badOut) = try Self.shell("timeout 120 \(Self.bin)/livebus replay \(dir)/bad.jsonl --settle 1s")
        #expect(badCode == 1, "\(badOut)")
        #expect(badOut.contains("the final state differs from the recording"), "\(badOut)")
        #expect(badOut.contains("phone duo-half: app state: recorded foreground, replayed background"), "\(badOut)")
        #expect(badOut.contains("activity orders/A1001: recorded delivering, replayed delivered"), "\(badOut)")
    }

    /// `livebus record` against a daemon with one `livebus attach` phone, a posture command and a push the phone
    /// ignores: the recording holds the attach, the command with its payload and the verdict; `--exit-when finished`
    /// ends it once the order is delivered; the replay sends the same push and gets the same verdict.
    @Test func recordedCommandsAndPushVerdictsReplay() throws {
        let dir = temporaryDirectory("lbrec")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let payload =
            #"{"aps":{"timestamp":1767225630,"event":"update","content-state":{"status":"cooking","etaEnd":788919600}}}"#
        try payload.write(toFile: "\(dir)/old.json", atomically: true, encoding: .utf8)
        let (code, out) = try Self.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/b.sock; R=\(dir)/r.jsonl
            $B/livebusd --socket $S --memory --scenario demo-120s --time-scale 20 2>\(dir)/d.log &
            DP=$!
            for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
            timeout 60 $B/livebus record --socket $S --out $R --exit-when finished > \(dir)/rec.out 2>&1 &
            RP=$!
            for i in $(seq 200); do [ -s $R ] && break; sleep 0.05; done
            timeout 60 $B/livebus attach --socket $S --name solo --device iphone-duo --json --duration 30s > \(dir)/solo.jsonl 2>&1 &
            AP=$!
            for i in $(seq 200); do grep -q '"start"' \(dir)/solo.jsonl 2>/dev/null && break; sleep 0.05; done
            $B/livebus posture solo half-opened --socket $S > /dev/null
            $B/livebus push solo \(dir)/old.json --order A1001 --socket $S
            wait $RP; echo "record=$?"
            kill $AP $DP 2>/dev/null; wait $AP $DP 2>/dev/null
            timeout 60 $B/livebus replay $R --quiet; echo "replay=$?"
            """
        )
        #expect(code == 0)
        #expect(out.contains("record=0"), "\(out)")
        #expect(out.contains("replay=0"), "\(out)")
        #expect(out.contains("1 phones end as recorded"), "\(out)")
        let rec = try Recording.parse(String(contentsOfFile: "\(dir)/r.jsonl", encoding: .utf8), file: "r.jsonl")
        #expect(rec.entries.contains { $0.type == "command" && $0.json["command"]?.stringValue == "session.posture" })
        let push = rec.entries.first { $0.type == "command" && $0.json["command"]?.stringValue == "push" }
        #expect(
            push?.json["args"]?["payload"] != nil || push?.json["args"]?["aps"] != nil,
            "\(String(describing: push))"
        )
        #expect(rec.entries.contains { $0.type == "verdict" && $0.json["pushID"]?.stringValue == "p1" })
        #expect(
            rec.entries.contains {
                $0.type == "posture" && $0.json["posture"]?["foldState"]?.stringValue == "half-opened"
            }
        )
        #expect(rec.final.count == 1)
        #expect(rec.final.first?.foldState == "half-opened")
        #expect(rec.final.first?.verdicts["p1"]?.hasPrefix("not applied: olderTimestamp") == true, "\(rec.final)")
    }

    /// Review finding: `record` against a daemon that had run a while took its journal from the daemon's start, so
    /// `replay` waited out the whole uptime and replayed what came before; and a push replayed with its recorded
    /// timestamp was olderTimestamp against the replay's events. Recording starts now: the header's `since` and
    /// `t`, nothing earlier, the phone and the order there are as inputs at that `t`; the replay begins at once
    /// (its first note is `+0 ms`), and the push (stamped when it was sent) is applied again.
    @Test func recordStartsWhenRecordingStartsAndItsReplayBeginsAtOnce() throws {
        let dir = temporaryDirectory("lbrec")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try Self.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/b.sock; R=\(dir)/r.jsonl
            $B/livebusd --socket $S --memory 2>\(dir)/d.log &
            DP=$!
            for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
            $B/livebus order create A7 --socket $S >/dev/null
            timeout 60 $B/livebus attach --socket $S --name duo --device iphone-duo --json --duration 40s > \(dir)/duo.jsonl 2>&1 &
            AP=$!
            for i in $(seq 200); do grep -q '"start"' \(dir)/duo.jsonl 2>/dev/null && break; sleep 0.05; done
            $B/livebus posture duo half-opened --socket $S > /dev/null
            sleep 2
            timeout 60 $B/livebus record --socket $S --out $R --duration 5s > \(dir)/rec.out 2>&1 &
            RP=$!
            for i in $(seq 200); do [ -s $R ] && break; sleep 0.05; done
            # Well after the start: the order the replay creates at its start is older than the push's timestamp
            # (whole seconds, up to 1 s before it is sent), as the recorded order was.
            sleep 2.5
            printf '{"aps":{"timestamp":%s,"event":"update","content-state":{"status":"cooking","etaEnd":800000000}}}' $(date +%s) > \(dir)/now.json
            $B/livebus push duo \(dir)/now.json --order A7 --socket $S
            wait $RP; echo "record=$?"
            kill $AP $DP 2>/dev/null; wait $AP $DP 2>/dev/null
            timeout 60 $B/livebus replay $R 2>\(dir)/replay.err; echo "replay=$?"
            head -1 \(dir)/replay.err | sed 's/^/first-note: /'
            """
        )
        #expect(code == 0)
        #expect(out.contains("record=0"), "\(out)")
        #expect(out.contains("replay=0") && out.contains("1 phones end as recorded"), "\(out)")
        #expect(out.contains("first-note: replay +0 ms: "), "the replay begins at once:\n\(out)")
        let text = try String(contentsOfFile: "\(dir)/r.jsonl", encoding: .utf8)
        let header = try WireJSON.decode(JSONValue.self, from: Array(text.prefix { $0 != "\n" }.utf8))
        #expect(header["since"]?.stringValue == "now", "\(header)")
        let rec = try Recording.parse(text, file: "r.jsonl")
        #expect(rec.since == "now" && rec.startT >= 2000, "the daemon had run 2 s before: \(rec.startT)")
        #expect(rec.entries.allSatisfy { $0.t >= rec.startT - 200 }, "nothing from before the recording")
        #expect(
            !rec.entries.contains { $0.type == "command" && $0.json["command"]?.stringValue == "session.posture" },
            "the posture command before recording is not in it"
        )
        let attach = rec.entries.first { $0.type == "attach" }
        #expect(
            attach?.t == rec.startT && attach?.json["session"]?.stringValue == "duo",
            "\(String(describing: attach))"
        )
        #expect(attach?.json["posture"]?["foldState"]?.stringValue == "half-opened", "the phone as it is then")
        #expect(
            rec.entries.contains {
                $0.type == "command" && $0.t == rec.startT && $0.json["command"]?.stringValue == "order.create"
                    && $0.json["args"]?["id"]?.stringValue == "A7"
            },
            "the order there is, as an input at the start"
        )
        #expect(rec.final.first?.verdicts["p1"] == "applied", "\(rec.final)")
    }

    /// Review finding: a recording whose scenario cannot be loaded showed livebusd's error as the hint under a
    /// log line. The error is the scenario's, the hint what to do; exit 2.
    @Test func replayOfAnUnloadableScenarioSaysSoAsTheError() throws {
        let dir = temporaryDirectory("lbrec")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try [
            #"{"type":"header","format":"livebus-record","version":1,"t":0,"daemon":{"scenario":"demo-12s","timeScale":20,"seed":1}}"#,
            #"{"type":"final","t":10,"phones":[]}"#,
        ].joined(separator: "\n").write(toFile: "\(dir)/r.jsonl", atomically: true, encoding: .utf8)
        let (code, out) = try Self.shell("\(Self.bin)/livebus replay \(dir)/r.jsonl 2>&1")
        #expect(code == 2, "\(out)")
        let lines = out.split(separator: "\n").map(String.init)
        #expect(
            lines.first?.hasPrefix("error: \(dir)/r.jsonl: the recorded daemon cannot be started again: ") == true
                && lines.first?.contains("no built-in scenario named 'demo-12s'") == true,
            "\(out)"
        )
        #expect(!out.contains("livebusd notice") && !out.contains("hint: error"), "\(out)")
        #expect(lines.contains { $0.hasPrefix("hint: ") && $0.contains("scenario 'demo-12s'") }, "\(out)")
    }

    /// A recording made --since now a minute into a scenario starts a minute into the replay's: the replay says
    /// how long it waits instead of waiting in silence, and a SIGTERM is named SIGTERM (review finding: minutes
    /// without a word, then "interrupted (SIGINT)").
    @Test func aReplayThatWaitsSaysSoAndNamesTheSignalThatStopsIt() throws {
        let dir = temporaryDirectory("lbrec")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lines = [
            #"{"type":"header","format":"livebus-record","version":1,"t":60000,"since":"now","scenarioFinished":false,"daemon":{"scenario":"demo-120s","timeScale":20,"seed":1}}"#,
            #"{"type":"final","t":61000,"phones":[]}"#,
        ]
        try lines.joined(separator: "\n").write(toFile: dir + "/r.jsonl", atomically: true, encoding: .utf8)
        let (code, out) = try Self.shell(
            """
            \(Self.bin)/livebus replay \(dir)/r.jsonl --time-scale 20 2>\(dir)/err.txt &
            R=$!
            for i in $(seq 600); do grep -q "replay: waiting" \(dir)/err.txt && break; sleep 0.05; done
            kill -TERM $R; wait $R; echo "replay=$?"
            cat \(dir)/err.txt
            """
        )
        #expect(code == 0, "\(out)")
        #expect(
            out.contains(
                "until this daemon's scenario reaches where the recording starts (recorded --since now, 1m after"
            ),
            "\(out)"
        )
        #expect(out.contains("replay interrupted (SIGTERM)") && out.contains("replay=130"), "\(out)")
    }

    /// A malformed recording is exit 2 with FILE:LINE and what is wrong, before any daemon starts.
    @Test func malformedRecordingNamesTheLineAndField() throws {
        let dir = temporaryDirectory("lbrec")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let header =
            #"{"type":"header","format":"livebus-record","version":1,"daemon":{"scenario":"demo-120s","timeScale":20,"seed":1}}"#
        let final = #"{"type":"final","t":9000,"phones":[]}"#
        let cases: [(String, String)] = [
            (
                [header, #"{"type":"attach","t":5,"device":"iphone-16-pro"}"#, final].joined(separator: "\n"),
                ":2: session: missing"
            ),
            (
                [header, #"{"type":"attach","t":5,"session":"pro","posture":{"fold":1}}"#, final].joined(
                    separator: "\n"
                ), ":2: posture.foldState"
            ),
            (
                [header, "", #"{"type":"event","t":7,"topic":"orders/A1"#, final].joined(separator: "\n"),
                ":3: not JSON"
            ),
            ([header, #"{"type":"nap","t":1}"#, final].joined(separator: "\n"), #":2: type: unknown "nap""#),
            ([header, #"{"type":"command","t":-4,"command":"push","args":{}}"#].joined(separator: "\n"), ":2: t:"),
            ([header, #"{"type":"detach","t":4,"session":"pro"}"#].joined(separator: "\n"), ":2: no final line"),
            (
                header.replacingOccurrences(of: #""version":1"#, with: #""version":2"#),
                ":1: version: 2.0 is not supported"
            ),
            ([final, header].joined(separator: "\n"), ":1: the first line must be the header"),
            ([header, final, final].joined(separator: "\n"), ":3: a line after the final line"),
        ]
        for (i, (text, expected)) in cases.enumerated() {
            let path = "\(dir)/bad\(i).jsonl"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            do {
                _ = try Recording.parse(text, file: path)
                Issue.record("case \(i) was accepted")
            } catch {
                #expect(error.code == "invalidRecording")
                #expect(error.message.hasPrefix(path + ":"), "\(error.message)")
                #expect(error.message.contains(expected), "case \(i): \(error.message)")
            }
        }
        let (code, out) = try Self.shell("\(Self.bin)/livebus replay \(dir)/bad2.jsonl")
        #expect(code == 2)
        #expect(out.contains("error: \(dir)/bad2.jsonl:3: not JSON"), "\(out)")
    }

    /// The final state and its comparison, over the daemon's status data (pure).
    @Test func finalStateComesFromStatusEventsAndVerdictsAndTheDiffNamesEachField() throws {
        let status = try WireJSON.decode(
            JSONValue.self,
            from: Array(
                #"""
                {"serverTime": 10000, "sessions": [
                  {"name": "pro", "device": "iphone-16-pro", "appState": "background",
                   "posture": {"foldState": "flat", "orientation": "portrait"},
                   "lastSent": {"orders/A1": 3, "orders/A2": 1}}]}
                """#.utf8
            )
        )
        let events: [String: [UInt64: Recording.EventFacts]] = [
            "orders/A1": [3: .init(status: "delivering", staleDate: 9000, terminal: false)],
            "orders/A2": [1: .init(status: "delivered", staleDate: 5000, terminal: true)],
        ]
        let verdicts: [JSONValue] = [
            .object(["session": .string("pro"), "pushID": .string("p1"), "applied": .bool(true)]),
            .object([
                "session": .string("pro"), "pushID": .string("p2"), "applied": .bool(false),
                "reason": .string("staleTimestamp"),
            ]),
            .object(["session": .string("other"), "pushID": .string("p3"), "applied": .bool(true)]),
        ]
        let phones = Recording.phones(status: status, events: events, verdicts: verdicts)
        #expect(phones.count == 1)
        #expect(phones[0].activities["orders/A1"] == Recording.Activity(status: "delivering", stale: true))
        #expect(phones[0].activities["orders/A2"] == Recording.Activity(status: "delivered", stale: false))
        #expect(phones[0].verdicts == ["p1": "applied", "p2": "not applied: staleTimestamp"])
        // Written and read back: the same.
        let line = JSONValue.object(["type": .string("final"), "t": .number(1), "phones": Recording.json(phones)])
        let header =
            #"{"type":"header","format":"livebus-record","version":1,"daemon":{"scenario":null,"timeScale":1,"seed":3}}"#
        let text = header + "\n" + String(decoding: try WireJSON.encode(line), as: UTF8.self) + "\n"
        #expect(try Recording.parse(text, file: "f").final == phones)
        var other = phones
        other[0].appState = "foreground"
        other[0].activities["orders/A1"]?.stale = false
        other[0].verdicts["p2"] = "applied"
        other.append(other[0])
        other[1].name = "duo"
        #expect(
            Recording.diff(recorded: phones, replayed: other) == [
                "phone duo: not in the recording, but attached in the replay",
                "phone pro: app state: recorded background, replayed foreground",
                "phone pro: activity orders/A1: recorded delivering (stale), replayed delivering",
                "phone pro: push p2: recorded not applied: staleTimestamp, replayed applied",
            ]
        )
        #expect(Recording.diff(recorded: phones, replayed: phones).isEmpty)
    }
}
