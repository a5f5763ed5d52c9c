import Foundation
import Testing

@testable import LiveBusCLI

/// Findings of a fresh-user review against `livebus` (issues 14 and 22), over the real binaries: near matches for
/// session, toxic, preset and posture names; `man --output` naming the path and the real reason; `config show`
/// refusing the values their commands refuse.
@Suite(.serialized)
struct E2EReviewFindingsCLITests {
    static let bin = E2ECLIGoldenTests.bin

    static func shell(_ script: String) throws -> (Int32, String) { try E2EReviewFindingsTests.shell(script) }

    @Test func didYouMeanForSessionsToxicsPresetsFaultsAndPostures() throws {
        let dir = temporaryDirectory("lbdym")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try Self.shell(
            """
            set -u
            B=\(Self.bin); S=\(dir)/b.sock
            $B/livebusd --socket $S --memory 2>/dev/null &
            DP=$!
            for i in $(seq 200); do $B/livebus status --socket $S >/dev/null 2>&1 && break; sleep 0.05; done
            timeout 60 $B/livebus attach --socket $S --name duo --device iphone-duo --json --duration 30s > \(dir)/duo.jsonl 2>&1 &
            AP=$!
            for i in $(seq 200); do grep -q '"start"' \(dir)/duo.jsonl 2>/dev/null && break; sleep 0.05; done
            $B/livebus posture Duo flat --socket $S; echo "session=$?"
            $B/livebus fault add latency --latency 10ms --session dou --socket $S; echo "faultsession=$?"
            $B/livebus fault add latncy --session duo --socket $S; echo "toxic=$?"
            $B/livebus fault preset airplan --session duo --socket $S; echo "preset=$?"
            $B/livebus fault add latency --latency 10ms --session duo --socket $S >/dev/null; echo "added=$?"
            $B/livebus fault remove latency_dwnstream --socket $S; echo "remove=$?"
            $B/livebus posture duo flatt --socket $S; echo "posture=$?"
            kill $AP $DP 2>/dev/null; wait $AP $DP 2>/dev/null
            """
        )
        #expect(code == 0)
        for want in [
            "no attached phone named 'Duo' (did you mean 'duo'?)", "session=2",
            "no attached phone named 'dou' (did you mean 'duo'?)", "faultsession=2",
            "'latncy' is not a toxic (did you mean 'latency'?)", "toxic=2",
            "no network preset 'airplan'", "did you mean 'airplane'?", "preset=2", "added=0",
            "no fault latency_dwnstream (did you mean 'latency_downstream'?)", "remove=2",
            "'flatt' is not a posture (did you mean 'flat'?)", "posture=2",
        ] {
            #expect(out.contains(want), "want \(want) in:\n\(out)")
        }
    }

    /// `man --output DIR` names the path that failed and the system's reason: a file in the way is "not a
    /// directory"; a directory the user cannot write is "Permission denied (EACCES)" (as a throw-away user when run
    /// as root); a missing one is created.
    @Test func manOutputNamesThePathAndTheRealReason() throws {
        let dir = temporaryDirectory("lbman")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try Self.shell(
            """
            B=\(Self.bin)
            touch \(dir)/afile
            $B/livebus man livebus --output \(dir)/afile/sub; echo "file=$?"
            $B/livebus man livebus --output \(dir)/afile; echo "self=$?"
            $B/livebus man livebusd --output \(dir)/new/deeper; echo "created=$?"
            test -s \(dir)/new/deeper/livebusd.8 && echo "written"
            """
        )
        #expect(code == 0)
        #expect(out.contains("error: \(dir)/afile is not a directory (ENOTDIR)") && out.contains("file=2"), "\(out)")
        #expect(out.contains("self=2"), "\(out)")
        #expect(!out.contains("NSCocoaErrorDomain") && !out.contains("File exists"), "\(out)")
        #expect(out.contains("\(dir)/new/deeper/livebusd.8") && out.contains("created=0") && out.contains("written"))
        guard let user = try OtherUser.make() else { return }
        chmod(dir, 0o755)
        mkdir("\(dir)/ro", 0o755)
        let denied = try user.run(user.binaries + "/livebus", ["man", "livebus", "--output", "\(dir)/ro"])
        #expect(denied.exit == 2)
        #expect(
            denied.stderr.contains("cannot write \(dir)/ro/livebus.1: Permission denied (EACCES)"),
            "\(denied.stderr)"
        )
        let nested = try user.run(user.binaries + "/livebus", ["man", "livebus", "--output", "\(dir)/ro/x/y"])
        #expect(
            nested.stderr.contains("cannot create directory \(dir)/ro/x: Permission denied (EACCES)"),
            "\(nested.stderr)"
        )
    }

    /// `config show` with a value its command refuses: the table, then exit 2 naming the file, line and key and
    /// what is accepted, the same words the command itself gives when the value is used.
    @Test func configShowRefusesWhatTheCommandRefuses() throws {
        let dir = temporaryDirectory("lbcfg")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, out) = try Self.shell(
            """
            B=\(Self.bin); unset LIVEBUS_CONFIG LIVEBUS_SOCKET LIVEBUS_POSTURE
            cd \(dir)
            printf '{\\n  "attach": {"posture": "sideways"},\\n  "daemon": {"sync": "fast"}\\n}\\n' > livebus.json
            $B/livebus config show > show.out 2> show.err; echo "show=$?"
            grep -c '^attach.posture' show.out | sed 's/^/table=/'
            cat show.err
            $B/livebusd --memory 2>&1 | head -2; echo "daemon=${PIPESTATUS[0]}"
            printf '{"attach": {"posture": "half-opened"}}' > livebus.json
            $B/livebus config show > /dev/null; echo "good=$?"
            """
        )
        #expect(code == 0)
        #expect(out.contains("show=2") && out.contains("table=1"), "\(out)")
        #expect(out.contains("error: 2 values are not accepted:"), "\(out)")
        #expect(
            out.contains(
                "\(dir)/livebus.json:2: attach.posture: --posture 'sideways' is not one of: flat, half-opened, folded"
            ),
            "\(out)"
        )
        #expect(out.contains("\(dir)/livebus.json:3: daemon.sync: --sync 'fast' is not one of: normal, full"), "\(out)")
        #expect(out.contains("daemon=2"), "livebusd refuses the same value when it uses it:\n\(out)")
        #expect(out.contains("good=0"), "\(out)")
    }
}
