import Foundation
import Testing

/// `livebus publish`: what a backend does, from the shell (review finding: the README's federation section spoke
/// of a PUBLISH no command of ours could send). Real processes: a daemon, a watcher and the command.
/// Source: Protocol/PROTOCOL.md §5.1 (PUBLISH → ACK), README "Command reference".
@Suite(.serialized)
struct PublishCommandE2ETests {
    static let bin = E2ECLIGoldenTests.bin

    /// One body, then NDJSON with a refused line: each stored event prints its sequence (a subscriber receives it),
    /// the refusal names the line and the daemon's code and exits 1; `--json` says ok false; a line that is not
    /// JSON is exit 2 before anything is sent; no daemon is exit 3.
    @Test func publishesFromAFileOrStdinAndNamesEachVerdict() throws {
        let dir = temporaryDirectory("lbpub")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let event =
            #"{"contentState":{"etaTarget":1767226800000,"lastConfirmed":1767225600000,"progress":0.25,"status":"cooking","summary":{"en":"Cooking","ko":"조리 중"}},"event":"update","priority":10,"relevanceScore":50,"staleDate":1767225900000,"timestamp":1767225600000}"#
        try (event + "\n").write(toFile: dir + "/ev.json", atomically: true, encoding: .utf8)
        try "\(event)\n\n{\"event\":\"update\"}\n\(event)\n".write(
            toFile: dir + "/evs.ndjson",
            atomically: true,
            encoding: .utf8
        )
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/bus.sock; D=\(dir)
            $B/livebusd --socket $S --memory 2>/dev/null &
            for i in $(seq 200); do [ -S $S ] && break; sleep 0.05; done
            timeout 20 $B/livebus watch --socket $S --json --topic 'orders/>' > $D/watch.out 2>/dev/null &
            W=$!
            for i in $(seq 200); do $B/livebus status --socket $S --json | grep -q '"sessionCount":1' && break; sleep 0.05; done
            $B/livebus publish orders/P1 $D/ev.json --socket $S; echo "one=$?"
            $B/livebus publish orders/P1 - --socket $S < $D/evs.ndjson 2>$D/err.txt; echo "ndjson=$?"
            sed 's/^/err: /' $D/err.txt
            $B/livebus publish orders/P1 $D/evs.ndjson --socket $S --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print("json ok=%s lines=%s" % (d["ok"], [e["line"] for e in d["data"]["events"]][:2]))'
            echo 'not json' | $B/livebus publish orders/P1 --socket $S 2>/dev/null; echo "notjson=$?"
            $B/livebus publish orders/P1 $D/ev.json --socket $D/none.sock 2>/dev/null; echo "nodaemon=$?"
            for i in $(seq 100); do [ "$(grep -c '"orders/P1"' $D/watch.out)" -ge 3 ] && break; sleep 0.05; done
            [ "$(grep -c '"orders/P1"' $D/watch.out)" -ge 3 ] && echo "watched three or more"
            kill $W 2>/dev/null
            pkill -f "livebusd --socket $S"
            """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "orders/P1 #1 stored (\(dir)/ev.json:1)", "one=0", "orders/P1 #2 stored (standard input:1)",
            "err: error: standard input:3: refused: invalidBody: PUBLISH body: field 'timestamp' is missing",
            "ndjson=1", "json ok=False lines=[1, 3]", "notjson=2", "nodaemon=3", "watched three or more",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
    }
}

/// README "Your own Live Activity", as written: the app source in Examples/Ride imports to ride.json's content state
/// (but `arrives_at`'s decoder setting, which the README says is added by hand), the payload without `plate` is
/// not applied (keyNotFound), the one stamped now is applied with its lint (review finding: the example's files
/// were not in the repository).
@Suite(.serialized)
struct ReadmeRideExampleE2ETests {
    @Test func theRideExampleRunsAsTheReadmeSays() throws {
        let dir = temporaryDirectory("lbride")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(E2ECLIGoldenTests.bin); S=\(dir)/bus.sock
            cd "$B/../.."
            $B/livebus schema import Examples/Ride/RideAttributes.swift --output \(dir)/my.json >/dev/null; echo "import=$?"
            python3 -c '
            import json, sys
            a = json.load(open(sys.argv[1])); b = json.load(open("Protocol/activity-schemas/ride.json"))
            strip = lambda cs: [{k: v for k, v in f.items() if k != "dateDecoding"} for f in cs]
            print("same content state:", strip(a["contentState"]) == strip(b["contentState"]) and a["types"] == b["types"])
            ' \(dir)/my.json
            $B/livebusd --socket $S --memory --scenario demo-120s --activity-schema Protocol/activity-schemas/ride.json 2>/dev/null &
            for i in $(seq 200); do [ -S $S ] && break; sleep 0.05; done
            $B/livebus attach --socket $S --name rider --duration 20s --json >/dev/null 2>&1 &
            for i in $(seq 200); do $B/livebus status --socket $S --json | grep -q '"name":"rider"' && break; sleep 0.05; done
            $B/livebus push rider Examples/Ride/ride-update-no-plate.json --order A1001 --socket $S
            sed "s/1767225600/$(($(date +%s) + 1))/" Examples/Ride/ride-update.json | $B/livebus push rider - --order A1001 --socket $S
            pkill -f "livebus attach --socket $S"; pkill -f "livebusd --socket $S"
            """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "import=0", "same content state: True", "not applied: keyNotFound",
            "aps.content-state.driver.plate: keyNotFound", "applied (Mina is 5 min away, active)",
            "lint unixSecondsInReferenceDate aps.content-state.pickup_at",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
    }
}
