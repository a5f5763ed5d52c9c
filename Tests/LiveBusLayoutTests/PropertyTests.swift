import Foundation
import Testing

@testable import LiveBusLayout

/// SplitMix64: a seeded generator so every property case can be replayed from its printed inputs.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// FNV-1a of a string, to derive a stable seed per case.
func stableSeed(_ s: String) -> UInt64 {
    var h: UInt64 = 0xCBF2_9CE4_8422_2325
    for b in s.utf8 {
        h ^= UInt64(b)
        h = h &* 0x100_0000_01B3
    }
    return h
}

struct PropertyTests {
    static let catalog = try! DeviceCatalog.bundled()
    /// 200 by default; set LAYOUT_PROPERTY_WINDOWS for a deeper run.
    static let windowsPerCase = Int(ProcessInfo.processInfo.environment["LAYOUT_PROPERTY_WINDOWS"] ?? "") ?? 200

    /// OS versions sampled per window: before, at and after iOS 27.1 (ArrangementView, vertical-edge toolbar).
    static let osVersions = ["26.0", "26.4", "27.0", "27.1", "27.1.1", "27.2"].compactMap { OSVersion($0) }

    /// Every catalog device × fold state × orientation × 200 seeded windows (each with a seeded OS version) × every
    /// screen layout: rects inside
    /// the window (interactive ones inside the safe area), nothing interactive across the reserved region, focus
    /// area non-empty and clear of covering rects, fitting area inside it, card column on the right in the
    /// horizontal arrangement, sheets and toasts in the card column, column ≤ 520 pt; each screen button drawn at most
    /// once, in the toolbar exactly when the vertical bar is in the window on iOS ≥ 27.1, toolbar items clear of the
    /// reserved region; an unfolded iOS foldable before 27.1 never splits. Source: LiveBus issue "Posture" (Done
    /// when, property tests), issue 11 (OS versions); field report 000.
    @Test(arguments: catalog.devices.map(\.id))
    func invariantsHoldForRandomWindows(deviceID: String) throws {
        let device = try Self.catalog.device(deviceID)
        var checked = 0
        for fold in device.supportedFoldStates {
            for orientation in Orientation.allCases {
                let screen = device.screen(for: fold)!.size(in: orientation)
                var rng = SplitMix64(seed: stableSeed("\(deviceID)/\(fold.rawValue)/\(orientation.rawValue)"))
                var osRng = SplitMix64(seed: stableSeed("\(deviceID)/\(fold.rawValue)/\(orientation.rawValue)/os"))
                let minimum = Self.catalog.defaults.minimumWindowEdge
                for i in 0..<Self.windowsPerCase {
                    let size =
                        i == 0
                        ? screen
                        : Size(
                            width: (Double.random(in: minimum...screen.width, using: &rng) * 2).rounded(.down) / 2,
                            height: (Double.random(in: minimum...screen.height, using: &rng) * 2).rounded(.down) / 2
                        )
                    let focused = Bool.random(using: &rng)
                    let keyboard =
                        focused ? (Double.random(in: 0...(0.4 * size.height), using: &rng)).rounded(.down) : 0
                    let os = Self.osVersions.randomElement(using: &osRng)!
                    let posture = Posture(
                        deviceID: deviceID,
                        foldState: fold,
                        orientation: orientation,
                        windowSize: size,
                        keyboardHeight: keyboard,
                        osVersion: os
                    )
                    let resolved = try resolve(posture, in: Self.catalog)
                    let tags = Int.random(in: 0...14, using: &rng)
                    let showSheet = Bool.random(using: &rng)
                    let showToast = Bool.random(using: &rng)
                    let riderShift = Double.random(in: -0.01...0.01, using: &rng)
                    var markers = OfflineLayoutRequest.sampleMarkers
                    markers[2].latitude += riderShift
                    for screenLayout in ScreenLayout.allCases {
                        let input = LayoutInput(
                            posture: resolved,
                            screen: screenLayout,
                            tags: tags,
                            textFieldFocused: focused,
                            markers: markers,
                            showSheet: showSheet,
                            showToast: showToast
                        )
                        let result = LayoutEngine.layout(input)
                        let problems =
                            Self.independentChecks(result, resolved)
                            + result.failedInvariants.map { "\($0.name): \($0.detail)" }
                        checked += 1
                        if !problems.isEmpty {
                            Issue.record(
                                """
                                layout broke for Posture(deviceID: "\(deviceID)", foldState: .\(fold), \
                                orientation: .\(orientation), windowSize: Size(width: \(size.width), height: \(size.height)), \
                                keyboardHeight: \(keyboard), osVersion: OSVersion("\(os)")!), screen: .\(screenLayout), tags: \(tags), \
                                textFieldFocused: \(focused), showSheet: \(showSheet), showToast: \(showToast), \
                                riderShift: \(riderShift)
                                \(problems.joined(separator: "\n"))
                                """
                            )
                            return
                        }
                    }
                }
            }
        }
        #expect(checked == device.supportedFoldStates.count * 2 * Self.windowsPerCase * 3)
    }

    /// Every catalog device × fold state × orientation × screen layout × keyboard (hidden, 30% of the window with
    /// the field focused) × tag count (0, 1, 3, 14) × reading direction (a dialog with 3 tags), full screen, with
    /// the sheet and the toast shown: every
    /// invariant holds (no partial overlap of interactive rects, touch targets at the platform minimum, text fits,
    /// sheet width cap, and the report-000 rules). Source: LiveBus issue 18 (Done when, property tests).
    @Test(arguments: catalog.devices.map(\.id))
    func invariantsHoldForEveryPostureKeyboardAndTagCount(deviceID: String) throws {
        let device = try Self.catalog.device(deviceID)
        var checked = 0
        for fold in device.supportedFoldStates {
            for orientation in Orientation.allCases {
                let screen = device.screen(for: fold)!.size(in: orientation)
                for keyboard in [0, (0.3 * screen.height).rounded(.down)] {
                    let resolved = try resolve(
                        Posture(
                            deviceID: deviceID,
                            foldState: fold,
                            orientation: orientation,
                            keyboardHeight: keyboard
                        ),
                        in: Self.catalog
                    )
                    for tags in [0, 1, 3, 14] {
                        for (screenLayout, direction) in ScreenLayout.allCases.flatMap({ l in
                            LayoutDirection.allCases.map { (l, $0) }
                        }) {
                            var input = LayoutInput(
                                posture: resolved,
                                screen: screenLayout,
                                tags: tags,
                                textFieldFocused: keyboard > 0,
                                markers: OfflineLayoutRequest.sampleMarkers,
                                showSheet: true,
                                showToast: true,
                                liveActivity: OfflineLayoutRequest.sampleLiveActivity
                            )
                            input.layoutDirection = direction
                            input.dialog = tags == 3 ? Size(width: 270, height: 150) : nil
                            let result = LayoutEngine.layout(input)
                            checked += 1
                            let problems =
                                Self.independentChecks(result, resolved)
                                + result.failedInvariants.map { "\($0.name): \($0.detail)" }
                            #expect(
                                problems.isEmpty,
                                "\(deviceID) \(fold) \(orientation) keyboard \(keyboard) tags \(tags) \(screenLayout) \(direction): \(problems.joined(separator: "\n"))"
                            )
                        }
                    }
                }
            }
        }
        #expect(checked == device.supportedFoldStates.count * 2 * 2 * 4 * 3 * 2)
    }

    /// Checks recomputed here from the rects, independent of the engine's own invariant list.
    static func independentChecks(_ r: LayoutResult, _ p: ResolvedPosture) -> [String] {
        var problems: [String] = []
        // Interactive rects: two that share area are one inside the other with the inner naming its container
        // chain up to the outer one (issue 18).
        // (A dialog is modal: what lies under it is inert, so it is not compared.)
        let live = r.rects.filter { $0.interactive && !$0.rect.isEmpty && $0.role != .dialog }
        func chain(_ e: NamedRect) -> [String] {
            var names: [String] = []
            var next = e.container
            while let n = next, names.count < 8 {
                names.append(n)
                next = r.rects.first { $0.name == n }?.container
            }
            return names
        }
        for (i, a) in live.enumerated() {
            for b in live[(i + 1)...] where a.rect.intersects(b.rect) {
                let aInB = chain(a).contains(b.name) && b.rect.contains(a.rect)
                let bInA = chain(b).contains(a.name) && a.rect.contains(b.rect)
                if !aInB && !bInA { problems.append("\(a.name) \(a.rect) partly overlaps \(b.name) \(b.rect)") }
            }
        }
        // Touch targets: 44 pt on iOS, 48 dp on Android (issue 18).
        let minimum = p.device.platform == "android" ? 48.0 : 44.0
        for e in r.rects where [.button, .mapButton, .toolbarItem, .textField].contains(e.role) {
            if e.rect.width < minimum - 0.005 || e.rect.height < minimum - 0.005 {
                problems.append("\(e.name) \(e.rect) under the \(minimum) touch target")
            }
        }
        // Text: drawn inside its presentation; a truncated text names its box and stays in it.
        for p in r.presentations {
            for e in p.elements where e.text != nil && !p.frame.contains(e.rect) {
                problems.append("\(e.name) \(e.rect) outside its presentation \(p.frame)")
            }
        }
        for t in r.truncations where t.axis == "width" {
            let drawn = r.presentations.flatMap(\.elements).first { $0.name == t.element && $0.text != nil }
            if let drawn, t.box.map({ !$0.contains(drawn.rect) }) ?? true {
                problems.append(
                    "truncated \(t.element) drawn at \(drawn.rect) outside its box \(String(describing: t.box))"
                )
            }
        }
        let window = p.window
        let safe = p.safeRect
        for nr in r.rects where !nr.rect.isEmpty && !window.contains(nr.rect) {
            problems.append("\(nr.name) \(nr.rect) outside window")
        }
        let interactive = r.rects.filter { $0.interactive && !$0.rect.isEmpty }
        for nr in interactive where !safe.contains(nr.rect) {
            problems.append("\(nr.name) \(nr.rect) outside safe area \(safe)")
        }
        if let keep = p.keepOutRegion {
            for nr in interactive where nr.rect.intersects(keep) {
                problems.append("\(nr.name) \(nr.rect) crosses the reserved region \(keep)")
            }
        }
        // Screen buttons and the vertical-edge toolbar (issue 11).
        let toolbarExpected = p.verticalBar != nil && p.osVersion >= OSVersion(27, 1)
        if (r.toolbar != nil) != toolbarExpected {
            problems.append(
                "toolbar \(r.toolbar == nil ? "missing" : "present") on iOS \(p.osVersion), bar \(String(describing: p.verticalBar))"
            )
        }
        let buttons = r.rects.filter { $0.role == .button || $0.role == .toolbarItem }
        for kind in ScreenButton.allCases {
            let copies = buttons.filter { $0.name.hasSuffix(".\(kind.rawValue)") }
            if copies.count > 1 { problems.append("\(kind) drawn \(copies.count) times") }
        }
        if toolbarExpected && r.rects.contains(where: { $0.role == .button }) {
            problems.append("a button stayed in the screen although the toolbar is there")
        }
        if let toolbar = r.toolbar {
            if toolbar.items.map(\.name) != r.rects.filter({ $0.role == .toolbarItem }).map(\.name) {
                problems.append("toolbar items and toolbarItem rects differ")
            }
            for item in toolbar.items {
                if !toolbar.rect.contains(item.rect) { problems.append("\(item.name) outside the toolbar") }
                if let keep = p.keepOutRegion, item.rect.intersects(keep) {
                    problems.append("\(item.name) in the reserved region")
                }
            }
        }
        let unfoldedIOSFoldable =
            p.device.platform == "ios" && p.device.screen(for: p.posture.foldState)?.hinge != nil
        if r.screenLayout == .overlay && unfoldedIOSFoldable && p.osVersion < OSVersion(27, 1) {
            if r.arrangement == .horizontal || r.arrangement == .tabletop { problems.append("split before iOS 27.1") }
            if r.osRule?.hasPrefix("iOS \(p.osVersion) < 27.1: ArrangementView unavailable") != true {
                problems.append("no OS rule in \(r.reason)")
            }
        }
        if p.posture.foldState == .halfOpened && p.hinge != nil && p.reservedRegion == nil {
            problems.append("half-opened with a hinge in the window but no reserved region")
        }
        if p.posture.foldState != .halfOpened && p.reservedRegion != nil {
            problems.append("reserved region present while \(p.posture.foldState)")
        }
        switch r.screenLayout {
        case .overlay:
            guard let focus = r.rect("focusArea"), let fitting = r.rect("fittingArea"),
                let column = r.rect("cardColumn")
            else { return problems + ["overlay without focus, fitting area or card column"] }
            if focus.width < 1 || focus.height < 1 { problems.append("focus area \(focus) empty") }
            for nr in r.rects where nr.coversMap && nr.rect.intersects(focus) {
                problems.append("focus area \(focus) intersects \(nr.name) \(nr.rect)")
            }
            if let keep = p.keepOutRegion, keep.intersects(focus) {
                problems.append("focus area crosses reserved region")
            }
            if !safe.contains(focus) { problems.append("focus area \(focus) outside safe area") }
            if !focus.contains(fitting) { problems.append("fitting \(fitting) outside focus \(focus)") }
            // Right of the focus area left to right, left of it right to left (mirrored, issue 18).
            if r.arrangement == .horizontal && r.layoutDirection == .ltr && !(column.minX >= focus.maxX) {
                problems.append("card column \(column) not right of focus \(focus)")
            }
            if r.arrangement == .horizontal && r.layoutDirection == .rtl && !(column.maxX <= focus.minX) {
                problems.append("card column \(column) not left of focus \(focus) right to left")
            }
            for nr in r.rects where nr.role == .sheet || nr.role == .toast {
                if nr.rect.minX < column.minX - 1e-6 || nr.rect.maxX > column.maxX + 1e-6 {
                    problems.append("\(nr.name) \(nr.rect) outside card column \(column)")
                }
            }
            if let camera = r.camera {
                for point in camera.markerPoints where !fitting.contains(point, slack: 0.01) {
                    problems.append("marker \(point) outside fitting area \(fitting)")
                }
            } else {
                problems.append("no camera")
            }
        case .column:
            guard let column = r.rect("column") else { return problems + ["column screen without column"] }
            if column.width > 520 { problems.append("column \(column) wider than 520") }
            for nr in r.rects where nr.role == .sheet || nr.role == .toast {
                if nr.rect.width > 520 || abs(nr.rect.midX - column.midX) > 0.01 {
                    problems.append("\(nr.name) \(nr.rect) not centred in column \(column)")
                }
            }
        case .fullScreen:
            if r.rect("content") != window { problems.append("fullScreen content is not the window") }
        }
        if let sheet = r.rect("sheet"), let content = r.sheetContentHeight {
            if sheet.height > content + 0.01 { problems.append("sheet \(sheet) taller than its content \(content)") }
            if sheet.height < 1 { problems.append("sheet \(sheet) has no height") }
            if let kb = r.rect("keyboard"), sheet.intersects(kb) { problems.append("sheet overlaps keyboard") }
        }
        if let kb = r.rect("keyboard"), let toast = r.rect("toast"), toast.intersects(kb) {
            problems.append("toast \(toast) under the keyboard \(kb)")
        }
        return problems
    }
}
