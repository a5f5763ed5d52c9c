import Foundation
import Testing

/// Findings of the 2026-12-02 fresh-user review against `livebusd` and `livebus`, over the real binaries.
@Suite(.serialized)
struct E2EFreshUserReviewCLITests {
    static let bin = E2ECLIGoldenTests.bin

    /// README's exit codes: a non-loopback `--apns`, a too-long socket path and an `--apns-socket` in a missing
    /// directory are usage or input errors (2); a socket a live daemon serves is 3.
    @Test func livebusdInputErrorsExitTwoAndATakenSocketThree() throws {
        let dir = temporaryDirectory("lbexit")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let long = dir + "/" + String(repeating: "s", count: 120) + ".sock"
        let (code, out) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/b.sock
            timeout 20 $B/livebusd --socket \(dir)/a.sock --memory --apns 10.0.0.1:8443 2>&1; echo "remote=$?"
            timeout 20 $B/livebusd --socket \(long) --memory 2>&1; echo "long=$?"
            timeout 20 $B/livebusd --socket \(dir)/c.sock --memory --apns-socket /nonexistent/x.sock 2>&1; echo "apnsdir=$?"
            $B/livebusd --socket $S --memory 2>/dev/null &
            DP=$!
            for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
            timeout 20 $B/livebusd --socket $S --memory 2>&1; echo "taken=$?"
            kill $DP; wait $DP 2>/dev/null
            """
        )
        #expect(code == 0)
        for want in ["not a loopback address", "remote=2", "long=2", "apnsdir=2", "already serving", "taken=3"] {
            #expect(out.contains(want), "want \(want) in:\n\(out)")
        }
    }
}

extension E2EFreshUserReviewCLITests {
    /// A command the daemon refuses (cancel of an order already delivered) is exit 2, as every input error.
    @Test func aRefusedAdminCommandExitsTwo() throws {
        let dir = temporaryDirectory("lbrefuse")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/b.sock
            $B/livebusd --socket $S --memory 2>/dev/null &
            DP=$!
            for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
            $B/livebus order create R1 --socket $S >/dev/null; echo "create=$?"
            for i in $(seq 100); do $B/livebus order cancel R1 --socket $S >/dev/null 2>&1 && echo "cancel=0" && break; sleep 0.05; done
            $B/livebus order cancel R1 --socket $S 2>&1; echo "again=$?"
            kill $DP; wait $DP 2>/dev/null
            """
        )
        #expect(code == 0)
        for want in ["create=0", "cancel=0", "already delivered or canceled", "again=2"] {
            #expect(out.contains(want), "want \(want) in:\n\(out)")
        }
    }
}

extension E2EFreshUserReviewCLITests {
    /// `livebus demo` whose private daemon is killed fails at once (exit 3), naming the signal.
    @Test func demoFailsAtOnceWhenItsDaemonDies() throws {
        let dir = temporaryDirectory("lbdemo")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin)
            TMPDIR=\(dir) timeout 120 $B/livebus demo --time-scale 1 --json > \(dir)/demo.out 2>&1 &
            DM=$!
            for i in $(seq 400); do grep -q '^{' \(dir)/demo.out 2>/dev/null && break; sleep 0.05; done
            D=$(pgrep -P $(pgrep -P $DM || echo $DM) -x livebusd || pgrep -P $DM -x livebusd)
            kill -9 $D
            wait $DM; echo "demo=$?"
            grep '"ok"' \(dir)/demo.out
            """
        )
        #expect(code == 0)
        for want in ["the demo's daemon was killed (SIGKILL)", "demo=3"] {
            #expect(out.contains(want), "want \(want) in:\n\(out)")
        }
    }
}

extension E2EFreshUserReviewCLITests {
    /// Finding 12's input checks: an empty payload file is "empty"; `record --out` names the system's reason;
    /// `replay` of a non-JSON file names no internal type; `explain p1x` is "not a push id"; an option before the
    /// command says options go after it; an unsigned duration's hint has unsigned examples; ranges use ASCII '-'.
    @Test func weakInputChecksSayWhatIsWrong() throws {
        let dir = temporaryDirectory("lbinput")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/b.sock
            $B/livebusd --socket $S --memory 2>/dev/null &
            DP=$!
            for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
            $B/livebus push pro /dev/null --order B1 --socket $S 2>&1; echo "empty=$?"
            $B/livebus record --out /nonexistent/x.jsonl --socket $S 2>&1; echo "record=$?"
            printf 'root:x:0:0\\n' > \(dir)/passwd
            $B/livebus replay \(dir)/passwd 2>&1; echo "replay=$?"
            $B/livebus explain p1x --socket $S 2>&1; echo "explain=$?"
            $B/livebus --socket $S status 2>&1; echo "order=$?"
            $B/livebus attach --duration 5x --socket $S 2>&1; echo "unit=$?"
            $B/livebus clock all --step 99h --socket $S 2>&1; echo "range=$?"
            $B/livebus attach --window 99999999999x1 --socket $S --duration 1s 2>&1; echo "window=$?"
            $B/livebus order create Q7 --customer '' --socket $S 2>&1; echo "customer=$?"
            kill $DP; wait $DP 2>/dev/null
            """
        )
        #expect(code == 0)
        for want in [
            "/dev/null is empty", "empty=2", "cannot write --out /nonexistent/x.jsonl: No such file or directory",
            "record=2", "passwd:1", "replay=2", "'p1x' is not a push id (p<n>", "explain=2",
            "'--socket' is an option; options go after the command", "order=2",
            "unknown unit 'x'; use ms, s, m or h (e.g. 90s, 1h)", "unit=2", "-24h … +24h", "range=2",
            "--window '99999999999x1' is out of range; each side is more than 0 and under 10000 points", "window=2",
            "--customer must not be empty", "customer=2",
        ] {
            #expect(out.contains(want), "want \(want) in:\n\(out)")
        }
        #expect(!out.contains("JSONValue") && !out.contains("−"), "\(out)")
    }
}

extension E2EFreshUserReviewCLITests {
    /// Completing `livebus clock ` offers attached phones, not a recorder's session.
    @Test func completionOffersPhonesOnly() throws {
        let dir = temporaryDirectory("lbcompl")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/b.sock
            $B/livebusd --socket $S --memory 2>/dev/null &
            DP=$!
            for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
            timeout 60 $B/livebus attach --socket $S --name pa --json --duration 30s > \(dir)/pa.jsonl 2>&1 &
            AP=$!
            timeout 60 $B/livebus record --out \(dir)/r.jsonl --duration 30s --socket $S 2>/dev/null &
            RP=$!
            for i in $(seq 400); do
              $B/livebus status --socket $S -j > \(dir)/st.json 2>/dev/null
              grep -q '"record-' \(dir)/st.json && grep -q '"pa"' \(dir)/st.json && break
              sleep 0.05
            done
            grep -q '"record-' \(dir)/st.json && echo "recorder attached"
            echo "offered: $($B/livebus __complete clock --socket $S "" | tr '\\n' ' ')"
            kill $AP $RP $DP 2>/dev/null; wait $AP $RP $DP 2>/dev/null
            """
        )
        #expect(code == 0)
        #expect(out.contains("recorder attached"), "\(out)")
        #expect(out.contains("offered: pa all current"), "\(out)")
        #expect(!out.contains("offered: record-") && !out.contains(" record-"), "\(out)")
    }
}

extension E2EFreshUserReviewCLITests {
    /// `--apns` with a port out of range says the range; a dashboard page directory without index.html is refused
    /// before the daemon starts listening.
    @Test func portRangeAndDashboardRootBeforeListening() throws {
        let dir = temporaryDirectory("lbports")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(Self.bin)
            timeout 20 $B/livebusd --socket \(dir)/a.sock --memory --apns 127.0.0.1:99999 2>&1; echo "apns=$?"
            timeout 20 $B/livebusd --socket \(dir)/b.sock --memory --http 127.0.0.1:8421 --http-root \(dir) 2>&1; echo "root=$?"
            """
        )
        #expect(code == 0)
        for want in ["port 99999 is out of range; give a port in 0 … 65535", "apns=2", "no index.html there", "root=2"]
        {
            #expect(out.contains(want), "want \(want) in:\n\(out)")
        }
        #expect(!out.contains("listening"), "\(out)")
    }

    /// `--http HOST:0` picks a free port, as `--apns HOST:0` does, and prints the port chosen.
    @Test func httpPortZeroPicksAFreePort() throws {
        let dir = temporaryDirectory("lbhttp0")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try E2EReviewFindingsTests.shell(
            """
            B=\(Self.bin)
            $B/livebusd --socket \(dir)/b.sock --memory --http 127.0.0.1:0 > \(dir)/out.txt 2>/dev/null &
            DP=$!
            for i in $(seq 200); do grep -q '^dashboard: ' \(dir)/out.txt && break; sleep 0.05; done
            cat \(dir)/out.txt
            kill $DP; wait $DP 2>/dev/null
            """
        )
        #expect(code == 0)
        #expect(out.contains("dashboard: http://127.0.0.1:") && !out.contains("127.0.0.1:0/"), "\(out)")
    }
}

extension E2EFreshUserReviewCLITests {
    /// `config show` resolves the data directory next to the socket and says which settings it shows.
    @Test func configShowResolvesTheDataDirectory() throws {
        let r = try E2ECLIGoldenTests.run(["config", "show", "--socket", "/tmp/lbcfg/bus.sock"])
        #expect(r.exit == 0, "\(r.stderr)")
        #expect(r.stdout.contains("daemon.dataDir             /tmp/lbcfg/bus.sock.d  (default)"), "\(r.stdout)")
        #expect(r.stdout.contains("--federate* endpoints are livebusd flags only"), "\(r.stdout)")
    }
}
