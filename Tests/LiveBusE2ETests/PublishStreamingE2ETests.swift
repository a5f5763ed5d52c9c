import Foundation
import LiveBusWire
import Testing

@testable import LiveBusCLI

/// Findings of a fresh-user review of `livebus publish` and `watch` (2026-12-03), over the real binaries: publish
/// read its whole input before sending anything and printed nothing until the end; a daemon killed mid-publish was
/// reported as "closed the connection after a refusal" (exit 1); `watch` ended silently with 0 when the daemon died;
/// a topic over 255 bytes waited for a timeout; every bad line was "not a JSON object". No assertion here is on a
/// wall-clock duration: a read from a pipe waits for a line (`read -t` only guards against a hang).
@Suite(.serialized)
struct PublishStreamingE2ETests {
    static let bin = E2ECLIGoldenTests.bin
    static let event =
        #"{"contentState":{"etaTarget":1767226800000,"lastConfirmed":1767225600000,"progress":0.25,"status":"cooking","summary":{"en":"Cooking","ko":"조리 중"}},"event":"update","priority":10,"relevanceScore":50,"staleDate":1767225900000,"timestamp":1767225600000}"#

    /// The first ACK's line is read from publish's stdout (a pipe) while its input (a FIFO) is still open and
    /// unfinished; the second line follows the second event; EOF ends it with 0. SIGTERM with the input open prints
    /// what was stored and exits 130. `| head -1` ends quietly (exit 0, nothing on stderr).
    @Test func streamsEachAckWhileTheInputIsOpenAndStopsOnSIGTERM() throws {
        let dir = temporaryDirectory("lbstream")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/bus.sock; D=\(dir); E='\(Self.event)'
            $B/livebusd --socket $S --memory 2>/dev/null &
            DP=$!
            for i in $(seq 200); do [ -S $S ] && break; sleep 0.05; done
            mkfifo $D/in $D/out
            exec 3<>$D/in
            $B/livebus publish orders/P1 $D/in --socket $S > $D/out 2>$D/err 3>&- &
            P=$!
            exec 4<$D/out
            echo "$E" >&3
            read -r -t 60 first <&4; echo "first: $first"
            kill -0 $P 2>/dev/null && echo "running with the input open"
            echo "$E" >&3
            read -r -t 60 second <&4; echo "second: $second"
            exec 3>&-
            wait $P; echo "eof=$?"
            exec 4<&-
            # SIGTERM while the input is open: the verdicts came, they are said, exit 130.
            exec 3<>$D/in
            $B/livebus publish orders/P2 $D/in --socket $S > $D/out 2>$D/err 3>&- &
            P=$!
            exec 4<$D/out
            echo "$E" >&3
            read -r -t 60 first <&4; echo "term first: $first"
            kill -TERM $P; wait $P; echo "term=$?"
            sed 's/^/term err: /' $D/err
            exec 3>&- 4<&-
            # A reader that leaves after one line.
            for i in $(seq 3000); do echo "$E"; done | $B/livebus publish orders/P3 --socket $S 2>$D/err | head -1
            echo "head=${PIPESTATUS[1]} stderr=$(wc -c < $D/err)"
            kill $DP; wait $DP
            """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "first: orders/P1 #1 stored (\(dir)/in:1)", "running with the input open",
            "second: orders/P1 #2 stored (\(dir)/in:2)", "eof=0", "term first: orders/P2 #1 stored (\(dir)/in:1)",
            "term=130", "term err: error: publish interrupted (SIGTERM): 1 stored", "orders/P3 #1 stored",
            "head=0 stderr=0",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
    }

    /// kill -9 of the daemon mid-publish: a lost connection (exit 3) saying how many were acknowledged, with
    /// `reason: connectionLost` in --json; not the fatal refusal's message, which a real one (messageRateTooHigh)
    /// still gives (exit 1, `reason: refused`). `watch` says the daemon closed the connection and exits 3; after
    /// the daemon's BYE (SIGTERM) it says so and exits 0.
    @Test func aKilledDaemonIsALostConnectionNotARefusal() throws {
        let dir = temporaryDirectory("lblost")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/bus.sock; D=\(dir); E='\(Self.event)'
            start() {
              rm -f $S; $B/livebusd --socket $S "$@" 2>/dev/null &
              DP=$!
              for i in $(seq 200); do [ -S $S ] && break; sleep 0.05; done
            }
            watchers() { $B/livebus status --socket $S --json | grep -q '"sessionCount":1'; }
            start --data-dir $D/data
            $B/livebus watch --socket $S --topic 'orders/>' > $D/watch.out 2>$D/watch.err &
            W=$!
            for i in $(seq 200); do watchers && break; sleep 0.05; done
            mkfifo $D/in $D/out
            exec 3<>$D/in
            $B/livebus publish orders/L1 $D/in --socket $S > $D/out 2>$D/err 3>&- &
            P=$!
            exec 4<$D/out
            for n in 1 2 3; do echo "$E" >&3; read -r -t 60 line <&4; done
            kill -9 $DP; wait $DP 2>/dev/null
            wait $P; echo "lost=$?"
            sed 's/^/lost err: /' $D/err
            wait $W; echo "watch=$?"
            sed 's/^/watch err: /' $D/watch.err
            exec 3>&- 4<&-
            # --json: the reason is in the envelope.
            start --data-dir $D/data
            # Nothing acknowledged was lost: the topic goes on at #4.
            echo "$E" | $B/livebus publish orders/L1 --socket $S
            $B/livebus watch --socket $S --topic 'orders/J1' --json > $D/watch.out 2>/dev/null &
            W=$!
            for i in $(seq 200); do watchers && break; sleep 0.05; done
            exec 3<>$D/in
            $B/livebus publish orders/J1 $D/in --socket $S --json > $D/json.out 2>/dev/null 3>&- &
            P=$!
            echo "$E" >&3; echo "$E" >&3
            for i in $(seq 600); do [ "$(grep -c '"orders/J1"' $D/watch.out)" -ge 2 ] && break; sleep 0.05; done
            kill -9 $DP; wait $DP 2>/dev/null
            wait $P; echo "json=$?"
            exec 3>&-
            python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("json: ok=%s code=%s reason=%s" % (d["ok"], d["error"]["code"], d["data"]["reason"]))' $D/json.out
            wait $W
            # The daemon's BYE ends watch with 0 and a word.
            start --data-dir $D/data
            $B/livebus watch --socket $S > /dev/null 2>$D/watch.err &
            W=$!
            for i in $(seq 200); do watchers && break; sleep 0.05; done
            kill -TERM $DP; wait $DP
            wait $W; echo "bye=$?"
            sed 's/^/bye err: /' $D/watch.err
            # A real fatal refusal is one, not a lost connection.
            start --memory --max-frames-per-second 2 --limit-grace 100ms
            for i in $(seq 200); do echo "$E"; done | $B/livebus publish orders/R1 --socket $S 2>$D/err >/dev/null
            echo "refused=$?"
            sed 's/^/refused err: /' $D/err
            kill $DP; wait $DP
            """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "lost=3", "lost err: error: the connection to the daemon was lost without a refusal", "3 stored",
            "nothing from line 4 on is known to be stored", "orders/L1 #4 stored (standard input:1)", "watch=3",
            "watch err: error: the daemon closed the connection (", "json=3",
            "json: ok=False code=connectionLost reason=connectionLost", "bye=0",
            "bye err: watch: the daemon closed the connection (BYE: ", "refused=1",
            "refused err: error: the daemon refused the publisher (messageRateTooHigh",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
        #expect(!text.contains("after a refusal"), "\(text)")
    }

    /// A topic over 255 bytes is refused before anything is sent (exit 2), not waited on until --timeout; a bad
    /// line after good ones stops there with its own message once the earlier ones are stored; `watch --topic`
    /// counts the published topics.
    @Test func refusesALongTopicAtOnceAndNamesEachBadLine() throws {
        let dir = temporaryDirectory("lbtopic")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let long = "orders/" + String(repeating: "a", count: 300)
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/bus.sock; D=\(dir); E='\(Self.event)'
            $B/livebusd --socket $S --memory 2>/dev/null &
            DP=$!
            for i in $(seq 200); do [ -S $S ] && break; sleep 0.05; done
            echo "$E" | $B/livebus publish \(long) --socket $S --timeout 30s; echo "long=$?"
            printf '%s\\n%s\\n{"a":1e400}\\n%s\\n' "$E" "$E" "$E" | $B/livebus publish orders/B1 --socket $S; echo "bad=$?"
            echo "$E" | $B/livebus publish orders/B2 --socket $S >/dev/null
            echo "$E" | $B/livebus publish orders/B3 --socket $S >/dev/null
            $B/livebus watch --socket $S --topic nothing/here --duration 100ms; echo "watch=$?"
            kill $DP; wait $DP
            """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "error: topic is 307 bytes; at most 255", "long=2", "orders/B1 #1 stored", "orders/B1 #2 stored",
            "standard input, line 3: number 1e400 is out of range",
            "the 2 event(s) before it were sent (2 stored), nothing after it", "bad=2",
            "--topic 'nothing/here' matches none of the 3 current topics", "watch=0",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
        #expect(!text.contains("orders/B1 #3"), "nothing after the bad line is sent:\n\(text)")
    }
}

/// The input of `livebus publish`, as it arrives: each cause of a bad line has its own message and line number.
struct PublishInputTests {
    static func run(_ text: [UInt8], chunk: Int = 7) -> [PublishInput.Output] {
        var input = PublishInput(maximumBodyBytes: 60_000)
        var out: [PublishInput.Output] = []
        var i = 0
        while i < text.count {
            let piece = Array(text[i..<min(i + chunk, text.count)])
            piece.withUnsafeBytes { out += input.append($0) }
            i += chunk
        }
        return out + input.finish()
    }

    static func problem(_ text: String) -> String? { problem(Array(text.utf8)) }

    static func problem(_ bytes: [UInt8]) -> String? {
        for o in run(bytes) { if case .problem(let p) = o { return "line \(p.line): \(p.message)" } }
        return nil
    }

    @Test func eachCauseHasItsOwnMessage() {
        let ok = #"{"event":"update"}"#
        var utf8 = Array("\(ok)\n{\"a\":\"".utf8) + [0xFF] + Array("\"}\n".utf8)
        #expect(Self.problem(utf8) == "line 2: not valid UTF-8 at byte 7")
        utf8 = Array("{\"a\":\"\u{00E9}".utf8).dropLast() + Array("\"}".utf8)  // a cut two-byte sequence
        #expect(Self.problem(utf8)?.hasPrefix("line 1: not valid UTF-8 at byte 7") == true)
        #expect(Self.problem("\(ok)\n\(ok)\n{\"event\":\"upd") == "line 3: ends inside a string")
        #expect(
            Self.problem("\(ok)\n{\"a\":1e400}\n").map { $0.hasPrefix("line 2: number 1e400 is out of range") } == true
        )
        #expect(
            Self.problem("{\n \"a\": 1\n}\n{\n \"a\": 2\n}\n")
                == "line 4: not one JSON object per line (NDJSON); a pretty-printed object spans lines — use `jq -c`"
        )
        #expect(
            Self.problem("\(ok)\n{\n \"a\": 2\n}\n")
                == "line 2: not one JSON object per line (NDJSON); a pretty-printed object spans lines — use `jq -c`"
        )
        #expect(Self.problem("\(ok)\n[1]\n")?.hasPrefix("line 2: an array, not a JSON object") == true)
        #expect(Self.problem("not json\n") == "line 1: not JSON: unexpected 'n' at byte 1")
        #expect(Self.problem("\(ok) \(ok)\n")?.hasPrefix("line 1: a second JSON value at byte 20") == true)
        #expect(Self.problem("\(ok)\n{\"a\":1,") == "line 2: ends inside an object")
    }

    @Test func bodiesComeOutWithTheirLinesAcrossChunks() {
        let ok = #"{"event":"update","n":"조리 중"}"#
        let out = Self.run(Array("\(ok)\n\n  \n\(ok)\r\n\(ok)".utf8), chunk: 3)
        #expect(out.count == 3 && !out.contains { if case .problem = $0 { true } else { false } }, "\(out)")
        #expect(out.map { if case .item(let i) = $0 { i.line } else { 0 } } == [1, 4, 5])
        // One pretty-printed object (the file `jq .` writes) is one body, from line 1.
        let pretty = Self.run(Array("{\n  \"event\": \"update\",\n  \"n\": [1, 2]\n}\n".utf8))
        #expect(pretty.count == 1)
        if case .item(let i)? = pretty.first { #expect(i.line == 1) }
    }

    @Test func aLineLongerThanAFrameFailsWithoutReadingItAll() {
        var input = PublishInput(maximumBodyBytes: 100)
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64)
        var out: [PublishInput.Output] = []
        for _ in 0..<4 { chunk.withUnsafeBytes { out += input.append($0) } }
        #expect(out.count == 1, "\(out)")
        if case .problem(let p)? = out.first { #expect(p.line == 1 && p.message.contains("longer than 100 bytes")) }
    }
}

/// `livebus status` text: one unit rule for milliseconds (whole; a tenth only below 1 ms), as the rest of the CLI.
struct StatusMillisecondsTests {
    @Test func clockFiguresAreWholeMillisecondsUnlessBelowOne() {
        let status = JSONValue.object([
            "socket": .string("/tmp/x.sock"), "timeScale": .number(1), "uptimeMs": .number(1000),
            "sessions": .array([
                .object([
                    "id": .string("s1"), "name": .string("duo"), "role": .string("phone"),
                    "appState": .string("foreground"),
                    "eventsSent": .number(3),
                    "clock": .object([
                        "offsetMs": .number(-30000.0), "errorBoundMs": .number(2.4), "driftPPM": .number(0),
                        "roundTripMs": .number(0.34),
                    ]),
                ])
            ]),
            "sessionCount": .number(1), "orders": .array([]),
        ])
        let text = StatusText.render(status)
        #expect(text.contains("clock offset -30000 ms ±2 ms, drift +0.0 ppm, rtt 0.3 ms"), "\(text)")
        #expect(StatusText.milliseconds(90_000.4, signed: true) == "+90000 ms")
        #expect(StatusText.milliseconds(0) == "0 ms")
    }
}
