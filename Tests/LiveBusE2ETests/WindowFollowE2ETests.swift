import Foundation
import Testing

/// Windows that follow the fold, over real processes: `livebusd`, an attached phone and `livebus posture`
/// (issue 18).
@Suite(.serialized)
struct E2EWindowFollowTests {
    /// An iPhone Duo attached with a 626×890 window folds (the window fits the outer screen with a note, where
    /// the daemon used to answer invalidPosture), unfolds full screen, takes a pinned split-view width that is
    /// clamped on the outer screen with a note, and `--window full` clears it; `posture --keyboard` raises the
    /// keyboard and the phone shows the tag sheet riding on it (its SVG has keyboard, sheet and text field).
    @Test func duoWindowFollowsTheFold() throws {
        let dir = temporaryDirectory("lbw")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(E2EReviewFindingsTests.bin); S=\(dir)/b.sock
            $B/livebusd --socket $S --memory --scenario demo-120s --time-scale 5 2>/dev/null &
            D=$!
            for i in $(seq 100); do [ -S $S ] && break; sleep 0.05; done
            $B/livebus attach --socket $S --name d --device iphone-duo --window 626x890 --duration 120s --svg-dir \(dir)/svg --json > \(dir)/d.jsonl 2>/dev/null &
            A=$!
            for i in $(seq 100); do $B/livebus status --socket $S --json 2>/dev/null | grep -q '"name":"d"' && break; sleep 0.05; done
            sleep 0.5
            window() { $B/livebus status --socket $S --json | python3 -c 'import json,sys; d=json.load(sys.stdin); p=[s for s in d["data"]["sessions"] if s["name"]=="d"][0]["posture"]; print(p["foldState"], p.get("windowWidth"), p.get("windowHeight"), p.get("splitViewWidth"))'; }
            $B/livebus posture d folded --socket $S; echo "fold=$?"
            sleep 0.5; echo "after fold: $(window)"
            $B/livebus posture d flat --split-width 600 --socket $S; echo "pin=$?"
            sleep 0.5; echo "after pin: $(window)"
            $B/livebus posture d folded --socket $S; echo "fold pinned=$?"
            sleep 0.5; echo "after pinned fold: $(window)"
            $B/livebus posture d folded --window full --socket $S; echo "full=$?"
            sleep 0.5; echo "after full: $(window)"
            $B/livebus posture d folded --keyboard 250 --socket $S >/dev/null; echo "keyboard=$?"
            sleep 0.5
            last=$(ls \(dir)/svg | sort | tail -1)
            grep -cE '>(keyboard|sheet|textField) ' \(dir)/svg/$last | sed 's/^/keyboardSheet=/'
            kill $A $D 2>/dev/null; wait $A $D 2>/dev/null
            grep -c '"invariantsHeld":false' \(dir)/d.jsonl | sed 's/^/failedLayouts=/'
            grep -c '"type":"layout"' \(dir)/d.jsonl | sed 's/^/layouts=/'
            """
        )
        #expect(code == 0, "\(text)")
        let layouts = text.split(separator: "\n").first { $0.hasPrefix("layouts=") }
        #expect(layouts != nil && layouts != "layouts=0", "the phone logged its layouts:\n\(text)")
        for want in [
            "fold=0", "note: d: window 626x890 followed the screen: full screen on the outer screen (466x678 pt)",
            "after fold: folded None None None",
            "pin=0", "after pin: flat 600 951 600",
            "fold pinned=0",
            "note: d: pinned split-view width 600 clamped to 466, the width of the outer screen (466x678 pt)",
            "after pinned fold: folded 466 678 600",
            "full=0", "after full: folded None None None", "failedLayouts=0", "keyboard=0", "keyboardSheet=3",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
    }
}
