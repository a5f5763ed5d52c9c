import Foundation
import LiveBusActivity
import LiveBusClient
import LiveBusWire
import Testing

@testable import LiveBusCLI

/// Issue 14, "The CLI in scripts and CI": each finding kept as a test over the real binaries (pipes, exit codes,
/// signals, the demo's directory), or over pure logic where it is pure (durations, doc references).
@Suite(.serialized)
struct E2ECLIScriptingTests {
    static let bin = E2ECLIGoldenTests.bin
    static let root = E2ECLIGoldenTests.root

    static func shell(_ script: String) throws -> (Int32, String) { try E2EReviewFindingsTests.shell(script) }

    /// A daemon on `$S` in the script's directory, its pid in `$DP`; `stop` ends it by pid.
    static func prelude(_ dir: String, timeScale: Int = 10) -> String {
        """
        set -u
        B=\(bin); S=\(dir)/b.sock
        $B/livebusd --socket $S --memory --scenario demo-120s --time-scale \(timeScale) 2>\(dir)/d.log &
        DP=$!
        for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
        stop() { kill $DP 2>/dev/null; wait $DP 2>/dev/null; }
        """
    }

    /// Text `watch` and text `attach` into a pipe: each line is flushed, so `| head -3` returns, and the closed pipe
    /// ends them with exit 0 and nothing on stderr (the `--json` mechanism, StandardStream).
    @Test func textWatchAndAttachFlushEveryLineAndEndQuietlyOnEPIPE() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            Self.prelude(dir)
                + """

                timeout 30 $B/livebus watch --socket $S 2>\(dir)/w.err | head -3 > \(dir)/w.out
                echo "watch=${PIPESTATUS[0]} lines=$(wc -l < \(dir)/w.out) err=$(wc -c < \(dir)/w.err)"
                timeout 30 $B/livebus attach --socket $S --name p 2>\(dir)/a.err | head -2 > \(dir)/a.out
                echo "attach=${PIPESTATUS[0]} lines=$(wc -l < \(dir)/a.out) err=$(wc -c < \(dir)/a.err)"
                stop
                """
        )
        #expect(code == 0, "\(text)")
        // 124 would be `timeout` ending a process that never noticed the reader was gone.
        #expect(text.contains("watch=0 lines=3 err=0"), "\(text)")
        #expect(text.contains("attach=0 lines=2 err=0"), "\(text)")
    }

    /// After the daemon's BYE `attach` ends (exit 0) instead of reconnecting; with `--no-reconnect` a `kill -9` of the
    /// daemon is exit 3 with a message, and the JSON log has an `error` line with `clientTime`.
    @Test func attachEndsAtByeAndALostConnectionIsNotASuccess() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            Self.prelude(dir)
                + """

                $B/livebus attach --socket $S --name lost --no-reconnect --json > \(dir)/lost.jsonl 2>\(dir)/lost.err &
                LP=$!
                sleep 1.5
                kill -9 $DP; wait $DP 2>/dev/null
                timeout 20 tail --pid=$LP -f /dev/null; wait $LP; echo "lost=$?"
                $B/livebusd --socket $S --memory --scenario demo-120s --time-scale 10 2>>\(dir)/d.log &
                DP=$!
                # The killed daemon's socket file is still there: wait until the new daemon answers, not for the file.
                for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
                $B/livebus attach --socket $S --name byer > /dev/null 2>\(dir)/bye.err &
                AP=$!
                sleep 1.5
                stop
                timeout 20 tail --pid=$AP -f /dev/null; wait $AP; echo "bye=$?"
                cat \(dir)/bye.err
                """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("lost=3"), "\(text)")
        #expect(text.contains("bye=0"), "\(text)")
        #expect(text.contains("daemon said bye"), "\(text)")
        let log = (try? String(contentsOfFile: dir + "/lost.jsonl", encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n").compactMap { try? WireJSON.decode(JSONValue.self, from: Array($0.utf8)) }
        let errors = lines.filter { $0["type"]?.stringValue == "error" }
        #expect(
            errors.contains { ($0["message"]?.stringValue ?? "").hasPrefix("connection lost") },
            "an error line for the lost connection: \(log)"
        )
        #expect(!errors.isEmpty && errors.allSatisfy { $0["clientTime"]?.doubleValue != nil }, "\(log)")
        #expect(lines.last?["error"]?["code"]?.stringValue == "connectionLost", "the final envelope: \(log)")
    }

    /// One rule for durations in both clients: a bare number is refused with both readings offered, a fraction of a
    /// millisecond is refused, and what was understood is echoed (`clock stepped +8h20m`).
    @Test func durationsNeedAUnitInBothClientsAndAreEchoed() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let py = Self.root.appendingPathComponent("tools/pyclient/livebus_client.py").path
        let (code, text) = try Self.shell(
            Self.prelude(dir)
                + """

                $B/livebus attach --socket $S --clock-skew 500 2>&1; echo "skew=$?"
                python3 \(py) attach --socket $S --clock-skew 500 2>&1; echo "pyskew=$?"
                $B/livebus fault add latency --latency 0.5 --socket $S 2>&1; echo "bare=$?"
                $B/livebus fault add latency --latency 0.5ms --socket $S 2>&1; echo "fraction=$?"
                $B/livebus attach --socket $S --name c --duration 20s --json > /dev/null 2>&1 &
                CP=$!
                for i in $(seq 100); do $B/livebus status --socket $S --json | grep -q '"name":"c"' && break; sleep 0.1; done
                $B/livebus clock c --step 30000 --socket $S 2>&1; echo "step=$?"
                $B/livebus clock c --step 8h20m --socket $S; echo "stepped=$?"
                $B/livebus fault add latency --session c --latency 200ms --jitter 1.5s --socket $S; echo "lat=$?"
                kill $CP; wait $CP
                stop
                """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "--clock-skew '500' has no unit: did you mean 500ms or 500s?", "skew=2", "pyskew=2",
            "--latency '0.5' has no unit: did you mean 0.5ms or 0.5s?", "bare=2",
            "--latency '0.5ms' is not a whole number of milliseconds", "fraction=2",
            "--step '30000' has no unit", "step=2", "clock stepped +8h20m on c", "stepped=0",
            "latency 200ms, jitter 1s500ms", "lat=0",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
        #expect(text.contains("did you mean 500ms or 500s?") && text.components(separatedBy: "500ms or").count >= 3)
    }

    /// Out-of-range pages and bad customers are usage errors (exit 2), from the CLI and from the daemon; nothing is
    /// clamped or created. Source: issue 14 review (`--limit 9223372036854775808` and `--customer ''` exited 0).
    @Test func orderPagesAndCustomersOutOfRangeAreRefused() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            Self.prelude(dir)
                + """

                $B/livebus order list --limit 9223372036854775808 --socket $S 2>&1; echo "limit=$?"
                $B/livebus order list --offset 9007199254740993 --socket $S 2>&1; echo "offset=$?"
                $B/livebus order create --customer '' --socket $S 2>&1; echo "empty=$?"
                $B/livebus order list --limit 5 --socket $S >/dev/null 2>&1; echo "fine=$?"
                stop
                """
        )
        #expect(code == 0, "\(text)")
        for want in ["limit=2", "offset=2", "empty=2", "fine=0", "out of range", "--customer must not be empty"] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
    }

    /// `f` and `h` on an iPhone 16 Pro are refused by the phone itself, with a message, and the phone stays on its one
    /// connection (no reconnect loop).
    @Test func postureKeysOnAPhoneThatCannotFoldAreRefusedLocally() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            Self.prelude(dir)
                + """

                (sleep 1; printf f; sleep 0.5; printf h; sleep 1.5; printf q) | timeout 30 $B/livebus attach --socket $S --name pro --device iphone-16-pro --json > \(dir)/pro.jsonl 2>\(dir)/pro.err
                echo "attach=$?"
                stop
                echo "attached=$(grep -c 'session attached.*session.name=pro' \(dir)/d.log) resumed=$(grep -c 'session resumed' \(dir)/d.log)"
                """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("attach=0") && text.contains("attached=1 resumed=0"), "\(text)")
        let log = (try? String(contentsOfFile: dir + "/pro.jsonl", encoding: .utf8)) ?? ""
        #expect(log.contains("posture refused: iPhone 16 Pro cannot be 'folded'"), "\(log)")
        #expect(log.contains("posture refused: iPhone 16 Pro cannot be 'half-opened'"), "\(log)")
    }

    /// `fault preset airplane --session a` refuses a's new connections only: another phone attaches as before.
    @Test func airplanePresetForOneSessionLeavesTheOthersFree() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            Self.prelude(dir)
                + """

                $B/livebus attach --socket $S --name a --duration 20s --json > /dev/null 2>&1 &
                AP=$!
                for i in $(seq 100); do $B/livebus status --socket $S --json | grep -q '"name":"a"' && break; sleep 0.1; done
                $B/livebus fault preset airplane --session a --socket $S; echo "preset=$?"
                $B/livebus attach --socket $S --name other --duration 1s --json > \(dir)/other.jsonl 2>&1; echo "other=$?"
                $B/livebus attach --socket $S --name a --no-reconnect --duration 1s 2>&1; echo "a-again=$?"
                $B/livebus fault list --socket $S --json > \(dir)/list.json
                $B/livebus fault remove airplane --socket $S; echo "removed=$?"
                $B/livebus attach --socket $S --name third --duration 1s --json > /dev/null 2>&1; echo "third=$?"
                kill $AP; wait $AP
                stop
                """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("preset=0") && text.contains("other=0") && text.contains("third=0"), "\(text)")
        #expect(text.contains("refused by its 'down' toxic 'airplane-down-down'"), "\(text)")
        #expect(!text.contains("a-again=0"), "a is still in airplane mode: \(text)")
        #expect(text.contains("removed 3 toxic(s)"), "\(text)")
        let other = (try? String(contentsOfFile: dir + "/other.jsonl", encoding: .utf8)) ?? ""
        #expect(other.contains("\"type\":\"update\""), "the other phone got its updates: \(other)")
        let list = (try? String(contentsOfFile: dir + "/list.json", encoding: .utf8)) ?? ""
        #expect(!list.contains("(daemon)"), "no daemon-wide toxic: \(list)")
        #expect(list.contains("airplane-down-down"), "\(list)")
    }

    /// A connection reset by a fault leaves an `error` line; every line has `clientTime`; a clock step of hours
    /// (stale, then ended in one tick) never logs `"type":"stale"` with `"stale":false`.
    @Test func clientLogsErrorLinesWithClientTimeAndTrueStaleLines() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            Self.prelude(dir, timeScale: 5)
                + """

                $B/livebus attach --socket $S --name x --duration 8s --json > \(dir)/x.jsonl 2>/dev/null &
                XP=$!
                for i in $(seq 100); do grep -q '"type":"update"' \(dir)/x.jsonl && break; sleep 0.1; done
                $B/livebus fault add reset_peer --session x --socket $S; echo "reset=$?"
                sleep 0.3
                $B/livebus fault remove --all --socket $S
                for i in $(seq 100); do $B/livebus status --socket $S --json | grep -q '"name":"x"' && break; sleep 0.1; done
                $B/livebus clock x --step 9h --socket $S; echo "step=$?"
                wait $XP
                stop
                """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("reset=0") && text.contains("step=0"), "\(text)")
        let log = (try? String(contentsOfFile: dir + "/x.jsonl", encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n").compactMap { try? WireJSON.decode(JSONValue.self, from: Array($0.utf8)) }
        #expect(lines.count > 3, "\(log)")
        let errors = lines.filter { $0["type"]?.stringValue == "error" }
        #expect(errors.contains { ($0["message"]?.stringValue ?? "").hasPrefix("connection lost") }, "\(log)")
        #expect(lines.allSatisfy { $0["clientTime"]?.doubleValue != nil }, "every line has clientTime: \(log)")
        let stale = lines.filter { $0["type"]?.stringValue == "stale" }
        #expect(stale.allSatisfy { $0["stale"]?.boolValue == true }, "\(stale)")
        #expect(lines.contains { $0["type"]?.stringValue == "ended" }, "the 9 h step ended the activity: \(log)")
    }

    /// Stray arguments are usage errors (2) for every command, and `push` needs `--order`.
    @Test func strayArgumentsAndPushWithoutOrderAreRefused() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = dir + "/none.sock"
        let cases: [[String]] = [
            ["attach", "extra"], ["status", "extra"], ["devices", "extra"], ["doctor", "extra"], ["watch", "extra"],
            ["demo", "extra"], ["order", "list", "extra"], ["order", "cancel", "A1", "extra"],
            ["posture", "a", "flat", "extra"], ["app-state", "a", "foreground", "extra"], ["profile", "a", "extra"],
            ["clock", "a", "extra"], ["explain", "p1", "extra"], ["backend", "stall", "A1", "extra"],
            ["fault", "list", "extra"], ["fault", "remove", "x", "extra"], ["simulate", "a", "extra"],
            ["layout", "extra", "--device", "iphone-16-pro"], ["help", "attach", "extra"],
        ]
        for argv in cases {
            let local = ["devices", "demo", "layout", "help"].contains(argv[0])
            let r = try E2ECLIGoldenTests.run(argv + (local ? [] : ["--socket", s]))
            #expect(r.exit == 2, "\(argv): exit \(r.exit) \(r.stderr)")
            #expect(r.stderr.contains("unexpected argument 'extra'"), "\(argv): \(r.stderr)")
        }
        let push = try E2ECLIGoldenTests.run(["push", "all", "-", "--socket", s], stdin: #"{"aps":{}}"#)
        #expect(push.exit == 2 && push.stderr.contains("needs --order ORDER-ID"), "\(push.stderr)")
    }

    /// `demo`: a bad `--scenario` is exit 2; Ctrl-C at 3 s is exit 130 with "interrupted" and no path to a deleted
    /// log; no `livebus-demo-*` directory is left after a success, a failure or a Ctrl-C.
    @Test func demoExitCodesAndNothingLeftBehind() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            """
            set -u
            B=\(Self.bin); export TMPDIR=\(dir)/tmp; mkdir -p $TMPDIR
            $B/livebus demo --scenario no-such-scenario > /dev/null 2>\(dir)/bad.err; echo "bad=$?"
            echo "after-bad=$(ls $TMPDIR | wc -l)"
            $B/livebus demo > /dev/null 2>\(dir)/int.err &
            P=$!
            sleep 3
            kill -INT $P; wait $P; echo "interrupted=$?"
            echo "after-int=$(ls $TMPDIR | wc -l)"
            $B/livebus demo --time-scale 60 > \(dir)/ok.out 2>&1; echo "ok=$?"
            echo "after-ok=$(ls $TMPDIR | wc -l)"
            cat \(dir)/int.err \(dir)/bad.err
            """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "bad=2", "after-bad=0", "interrupted=130", "after-int=0", "ok=0", "after-ok=0", "interrupted (SIGINT)",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
        let interrupted = (try? String(contentsOfFile: dir + "/int.err", encoding: .utf8)) ?? ""
        #expect(!interrupted.contains("livebus-demo-") && !interrupted.contains("did not reach"), "\(interrupted)")
        let ok = (try? String(contentsOfFile: dir + "/ok.out", encoding: .utf8)) ?? ""
        #expect(!ok.contains("livebus-demo-"), "no pointer into the removed directory: \(ok)")
    }
}

/// Durations (README "Durations"): pure parsing, no process.
struct DurationRuleTests {
    @Test(
        arguments: [
            ("90s", 90_000), ("+90s", 90_000), ("-1h", -3_600_000), ("1h30m", 5_400_000), ("500ms", 500),
            ("1.5s", 1500), ("1s500ms", 1500), ("0", 0), ("8h20m", 30_000_000),
        ] as [(String, Int64)]
    )
    func readsDurationsWithUnits(_ text: String, _ ms: Int64) throws {
        #expect(try parseDuration(text, flag: "x") == ms)
    }

    @Test(arguments: ["500", "-90", "+30000", "0.5"])
    func refusesBareNumbersOfferingBothReadings(_ text: String) {
        let n = text.trimmingCharacters(in: CharacterSet(charactersIn: "+-"))
        let sign = text.hasPrefix("-") ? "-" : text.hasPrefix("+") ? "+" : ""
        do {
            let ms = try parseDuration(text, flag: "clock-skew")
            Issue.record("'\(text)' was read as \(ms) ms")
        } catch {
            #expect(error.exit == .usage)
            #expect(error.message.contains("did you mean \(sign)\(n)ms or \(sign)\(n)s?"), "\(error.message)")
        }
    }

    @Test func refusesAFractionOfAMillisecondInsteadOfRounding() {
        do {
            let ms = try parseDuration("0.5ms", flag: "latency", allowed: 0...86_400_000)
            Issue.record("0.5ms was read as \(ms) ms")
        } catch {
            #expect(error.message.contains("not a whole number of milliseconds"), "\(error.message)")
        }
    }

    @Test func echoesReadBack() throws {
        for ms: Int64 in [30_000_000, 1500, 90_000, 1, -90_000, 0] {
            #expect(try parseDuration(signedSpokenDuration(ms), flag: "x") == ms)
        }
        #expect(signedSpokenDuration(30_000_000) == "+8h20m")
        #expect(spokenDuration(1500) == "1s500ms")
    }
}

/// What ships: verdicts cite sources in the repository or public addresses, and doc cross-references resolve.
struct ShippedReferenceTests {
    static let root = E2ECLIGoldenTests.root

    /// Every source string of a verdict (`ActivitySource`) is a public https address or a file of this repository
    /// with the section it names.
    @Test func verdictSourcesShipWithTheRepository() throws {
        let text = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/LiveBusActivity/Verdict.swift"),
            encoding: .utf8
        )
        let start = try #require(text.range(of: "enum ActivitySource"))
        let end = try #require(text[start.upperBound...].range(of: "\n}\n"))
        let body = text[start.upperBound..<end.lowerBound]
        let ns = String(body) as NSString
        let literals = try NSRegularExpression(pattern: #"=\s*"([^"]*)""#)
            .matches(in: String(body), range: NSRange(location: 0, length: ns.length))
            .map { ns.substring(with: $0.range(at: 1)) }
        #expect(literals.count > 5)
        for l in literals where !l.hasPrefix("https://") {
            #expect(!l.contains("reference/"), "a source outside the repository: \(l)")
            guard l.contains("/") && l.contains(".") else { continue }
            let path = String(l.split(separator: " ").first ?? "")
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path), "\(l)")
        }
        let protocolDoc = try String(
            contentsOf: Self.root.appendingPathComponent("Protocol/PROTOCOL.md"),
            encoding: .utf8
        )
        #expect(ActivitySource.fieldReportStartIntent.hasPrefix("Protocol/PROTOCOL.md §9.1"))
        #expect(protocolDoc.contains("### 9.1 Start-intent rules"))
    }

    /// `FAULTS.md §7` and every other `X.md … §N` in the README and Protocol docs names a section that exists.
    @Test func docCrossReferencesResolve() throws {
        let fm = FileManager.default
        let protocolDir = Self.root.appendingPathComponent("Protocol")
        let docs = try fm.contentsOfDirectory(atPath: protocolDir.path).filter { $0.hasSuffix(".md") }
        var sections: [String: Set<String>] = [:]
        for d in docs + ["README.md"] {
            let url = d == "README.md" ? Self.root.appendingPathComponent(d) : protocolDir.appendingPathComponent(d)
            let text = try String(contentsOf: url, encoding: .utf8)
            var set = Set<String>()
            for line in text.split(separator: "\n") where line.hasPrefix("#") {
                let words = line.drop { $0 == "#" }.split(separator: " ")
                if let n = words.first, n.first?.isNumber == true {
                    set.insert(String(n.hasSuffix(".") ? n.dropLast() : n))
                }
            }
            sections[d] = set
        }
        let pattern = try NSRegularExpression(pattern: #"([A-Z0-9_]+\.md)\]?(?:\([^)]*\))?`?\)?\s*§\s*(\d+(?:\.\d+)*)"#)
        var checked = 0
        for d in docs.map({ "Protocol/" + $0 }) + ["README.md", "tools/pyclient/README.md"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent(d), encoding: .utf8)
            let ns = text as NSString
            for m in pattern.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
                let doc = ns.substring(with: m.range(at: 1))
                let section = ns.substring(with: m.range(at: 2))
                guard let have = sections[doc] else { continue }
                checked += 1
                #expect(have.contains(section), "\(d) cites \(doc) §\(section), which does not exist")
            }
        }
        #expect(checked > 10)
        #expect(sections["FAULTS.md"]?.contains("7") == true)
    }
}

/// A posture the daemon refuses does not make the phone reconnect in a loop: it is undone to the posture the daemon
/// accepted, so the reconnect's HELLO is accepted (issue 14, "Posture keys on a phone that cannot fold").
struct RefusedPostureTests {
    @Test func aRefusedPostureIsUndoneAndThePhoneReconnectsOnce() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 20)
        defer { bus.shutdown() }
        let duo = bus.session("duo") { o in
            o.device = "iphone-duo"
            o.posture = PostureBody(foldState: "flat", orientation: "landscape")
        }
        var errors: [String] = []
        duo.onError = { errors.append($0) }
        duo.start()
        #expect(bus.run(timeoutMs: 5000) { duo.syncState == .live })
        // Not refused locally (the Duo can be flat): it goes to the daemon, which refuses the 1×1 window.
        var bad = duo.options.posture
        bad.windowWidth = 1
        bad.windowHeight = 1
        #expect(duo.change(posture: bad))
        _ = bus.run(timeoutMs: 4000) { false }
        #expect(errors.contains { $0.contains("invalidPosture") }, "\(errors)")
        #expect(duo.options.posture == PostureBody(foldState: "flat", orientation: "landscape"), "undone")
        #expect(duo.counters.reconnects == 1, "one reconnect, not a loop: \(duo.counters.reconnects) \(errors)")
        #expect(duo.syncState == .live)
        // A fold state the device lacks never leaves the phone.
        let pro = bus.session("pro") { o in o.device = "iphone-16-pro" }
        var proErrors: [String] = []
        pro.onError = { proErrors.append($0) }
        pro.start()
        #expect(bus.run(timeoutMs: 5000) { pro.syncState == .live })
        #expect(!pro.change(posture: PostureBody(foldState: "folded", orientation: "portrait")))
        #expect(
            proErrors.contains { $0.hasPrefix("posture refused: iPhone 16 Pro cannot be 'folded'") },
            "\(proErrors)"
        )
        #expect(pro.options.posture.foldState == "flat")
        pro.close()
        duo.close()
    }
}
