import Foundation
import Testing

/// `--device-file` over real processes: `livebus layout`, `livebusd` and `livebus attach` take a user's own
/// device in the catalog's format, validated the same way (issue 18).
@Suite(.serialized)
struct E2EDeviceFileTests {
    static let device = """
        {"id": "my-fold", "name": "My Fold", "platform": "android", "unit": "dp", "sizeClassRule": "threshold",
         "screens": [{"name": "inner", "usedWhen": ["flat", "half-opened"], "portrait": {"width": 800, "height": 900},
          "scale": 2,
          "safeArea": {"portrait": {"top": 24, "left": 0, "bottom": 20, "right": 0},
                       "landscape": {"top": 24, "left": 0, "bottom": 20, "right": 0}},
          "hinge": {"kind": "hinge", "axisInPortrait": "vertical", "centerInPortrait": 400, "flatWidth": 20,
                    "halfOpenedWidth": 20},
          "windowOrigin": {"portrait": {"x": 0, "y": 24}, "landscape": {"x": 0, "y": 24}},
          "sources": {"portrait": {"mark": "estimate", "ref": "mine"}, "scale": {"mark": "estimate", "ref": "mine"},
                      "safeArea": {"mark": "estimate", "ref": "mine"}, "hinge": {"mark": "estimate", "ref": "mine"}}}]}
        """

    @Test func ownDeviceInLayoutDaemonAndAttach() throws {
        let dir = temporaryDirectory("lbf")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.device.write(toFile: dir + "/my.json", atomically: true, encoding: .utf8)
        let bad = Self.device.replacingOccurrences(of: "\"centerInPortrait\": 400", with: "\"centerInPortrait\": 950")
        try bad.write(toFile: dir + "/bad.json", atomically: true, encoding: .utf8)
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(E2EReviewFindingsTests.bin); S=\(dir)/b.sock
            $B/livebus layout --device-file \(dir)/my.json --posture half-opened --json | python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; r={x["name"]: x["rect"] for x in d["rects"]}; h=r["hinge"]; w=r["window"]; print("layout", d["deviceID"], w["height"], h["x"], h["y"], h["height"], len(d["panes"]))'
            $B/livebus layout --device-file \(dir)/bad.json 2>\(dir)/bad.txt; echo "bad=$?"
            grep -c "field 'hinge.centerInPortrait'" \(dir)/bad.txt | sed 's/^/named=/'
            $B/livebusd --socket $S --memory --device-file \(dir)/my.json 2>/dev/null &
            D=$!
            for i in $(seq 100); do [ -S $S ] && break; sleep 0.05; done
            $B/livebus attach --socket $S --name f --device-file \(dir)/my.json --duration 4s --json > \(dir)/f.jsonl 2>\(dir)/f.err &
            A=$!
            sleep 1.5
            $B/livebus posture f half-opened --socket $S >/dev/null; echo "posture=$?"
            sleep 0.5
            $B/livebus status --socket $S --json | python3 -c 'import json,sys; d=json.load(sys.stdin); s=[s for s in d["data"]["sessions"] if s["name"]=="f"][0]; print("status", s["device"], s["posture"]["foldState"])'
            wait $A; echo "attach=$?"
            kill $D 2>/dev/null; wait $D 2>/dev/null
            grep -c '"type":"layout"' \(dir)/f.jsonl | sed 's/^/layouts=/'
            grep -c '"invariantsHeld":false' \(dir)/f.jsonl | sed 's/^/failed=/'
            """
        )
        #expect(code == 0, "\(text)")
        for want in [
            "layout my-fold 876 390 0 876 2", "bad=2", "named=1", "posture=0", "status my-fold half-opened",
            "attach=0", "failed=0",
        ] {
            #expect(text.contains(want), "want \(want) in:\n\(text)")
        }
        #expect(!text.contains("layouts=0"), "\(text)")
    }
}
