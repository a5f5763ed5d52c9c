import Foundation
import Testing

@testable import LiveBusLayout

/// A user's own device (`--device-file`), the catalog's geometry validator and foldables with no fold rect
/// (issue 18).
struct DeviceFileTests {
    /// A book foldable with a 24 pt status bar above the window (windowOrigin y 24) and a 20 pt hinge at x 400.
    static func device(_ edit: (inout [String: Any]) -> Void = { _ in }) -> Data {
        var screen: [String: Any] = [
            "name": "inner", "usedWhen": ["flat", "half-opened"],
            "portrait": ["width": 800, "height": 900], "scale": 2,
            "safeArea": [
                "portrait": ["top": 24, "left": 0, "bottom": 20, "right": 0],
                "landscape": ["top": 24, "left": 0, "bottom": 20, "right": 0],
            ],
            "hinge": [
                "kind": "hinge", "axisInPortrait": "vertical", "centerInPortrait": 400, "flatWidth": 20,
                "halfOpenedWidth": 20,
            ],
            "windowOrigin": ["portrait": ["x": 0, "y": 24], "landscape": ["x": 0, "y": 24]],
            "sources": [
                "portrait": ["mark": "estimate", "ref": "test device"],
                "scale": ["mark": "estimate", "ref": "test device"],
                "safeArea": ["mark": "estimate", "ref": "test device"],
                "hinge": ["mark": "estimate", "ref": "test device"],
            ],
        ]
        var device: [String: Any] = [
            "id": "my-fold", "name": "My Fold", "platform": "android", "unit": "dp", "sizeClassRule": "threshold",
        ]
        edit(&screen)
        device["screens"] = [screen]
        return try! JSONSerialization.data(withJSONObject: device)
    }

    /// The device loads like a catalog device; the window starts below the status bar, and the hinge, safe area
    /// and reserved region are converted from screen to window coordinates (y − 24). Source: issue 18.
    /// A device file missing a field names the field by its JSON path, not Foundation's debug description (review
    /// finding: "DecodingError.keyNotFound: Key 'name' not found in keyed decoding container…").
    @Test func aDeviceFileMissingAFieldNamesIt() {
        do {
            _ = try testCatalog.adding(deviceFile: Data(#"{"id":"x"}"#.utf8))
            Issue.record("a device without a name was accepted")
        } catch {
            #expect(error.message.hasSuffix("'name' is missing"), "\(error.message)")
            #expect(!error.message.contains("CodingKeys") && !error.message.contains("DecodingError"))
        }
    }

    @Test func ownDeviceWithWindowOrigin() throws {
        let (catalog, id) = try testCatalog.adding(deviceFile: Self.device())
        #expect(id == "my-fold")
        let p = try resolve(Posture(deviceID: id, foldState: .halfOpened), in: catalog)
        #expect(p.window == Rect(x: 0, y: 0, width: 800, height: 876))
        #expect(p.hinge == Rect(x: 390, y: 0, width: 20, height: 876))
        #expect(p.safeArea == EdgeInsets(top: 0, left: 0, bottom: 20, right: 0))
        #expect(p.reservedRegion == Rect(x: 378, y: 0, width: 44, height: 876))
        let r = LayoutEngine.layout(LayoutInput(posture: p, screen: .overlay, showSheet: true, showToast: true))
        #expect(r.panes.map(\.width) == [378, 378])
        #expect(r.failedInvariants.isEmpty, "\(r.failedInvariants)")
        // A window larger than the room below the status bar is refused with the valid range.
        #expect(throws: LayoutError.self) {
            try resolve(Posture(deviceID: id, windowSize: Size(width: 800, height: 900)), in: catalog)
        }
    }

    /// Impossible geometry is refused naming the field and the reason. Source: issue 18 (the catalog validator
    /// checks no geometry).
    @Test func impossibleGeometryIsRefused() {
        let cases: [(String, (inout [String: Any]) -> Void, String)] = [
            (
                "hinge outside",
                { (s: inout [String: Any]) in
                    s["hinge"] = [
                        "kind": "fold", "axisInPortrait": "vertical", "centerInPortrait": 900, "flatWidth": 0,
                        "halfOpenedWidth": 0,
                    ]
                }, "field 'hinge.centerInPortrait'"
            ),
            (
                "negative width", { (s: inout [String: Any]) in s["portrait"] = ["width": -10, "height": 900] },
                "field 'portrait.width': -10 is not a width"
            ),
            (
                "hinge thicker",
                { (s: inout [String: Any]) in
                    s["hinge"] = [
                        "kind": "hinge", "axisInPortrait": "vertical", "centerInPortrait": 400, "flatWidth": 900,
                        "halfOpenedWidth": 900,
                    ]
                }, "field 'hinge.flatWidth': 900 is as thick as the screen's width (800) or thicker"
            ),
            (
                "negative inset",
                { (s: inout [String: Any]) in
                    s["safeArea"] = [
                        "portrait": ["top": -1, "left": 0, "bottom": 0, "right": 0],
                        "landscape": ["top": 0, "left": 0, "bottom": 0, "right": 0],
                    ]
                }, "field 'safeArea.portrait.top': -1 is negative"
            ),
            (
                "origin outside",
                { (s: inout [String: Any]) in
                    s["windowOrigin"] = ["portrait": ["x": 0, "y": 2000], "landscape": ["x": 0, "y": 0]]
                }, "field 'windowOrigin.portrait'"
            ),
        ]
        for (name, edit, message) in cases {
            do {
                _ = try testCatalog.adding(deviceFile: Self.device(edit))
                Issue.record("\(name) was accepted")
            } catch {
                #expect(error.code == .catalogInvalid, "\(name)")
                #expect(
                    error.message.contains("device 'my-fold' screen 'inner' \(message)"),
                    "\(name): \(error.message)"
                )
            }
        }
    }

    /// "Foldable with no fold rect": half-opened without a hinge is accepted with `noFoldRect`, laid out as flat
    /// (no band, no reserved region); without the flag it is refused with what to give.
    @Test func foldableWithNoFoldRect() throws {
        let withFlag = Self.device { s in
            s["hinge"] = nil
            s["noFoldRect"] = true
        }
        let (catalog, id) = try testCatalog.adding(deviceFile: withFlag)
        let p = try resolve(Posture(deviceID: id, foldState: .halfOpened), in: catalog)
        #expect(p.hinge == nil && p.reservedRegion == nil)
        let r = LayoutEngine.layout(LayoutInput(posture: p, screen: .overlay))
        #expect(r.failedInvariants.isEmpty)
        do {
            _ = try testCatalog.adding(deviceFile: Self.device { s in s["hinge"] = nil })
            Issue.record("half-opened without hinge accepted")
        } catch {
            #expect(error.message.contains("'noFoldRect': true for a foldable that reports no fold rect"))
        }
        // Malformed JSON names the decoder's problem.
        #expect(throws: LayoutError.self) { try testCatalog.adding(deviceFile: Data("{\"id\": 3}".utf8)) }
    }

    /// Every bundled device passes the geometry validator (the bundle itself is validated at load).
    @Test func bundledDevicesHavePossibleGeometry() {
        for d in testCatalog.devices {
            for s in d.screens { #expect(DeviceCatalog.geometryProblem(s) == nil, "\(d.id) \(s.name)") }
        }
    }
}
