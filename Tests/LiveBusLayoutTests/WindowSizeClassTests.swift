import Testing

@testable import LiveBusLayout

/// Material window size classes beside Apple's size classes, and the platform's two-pane decision (issue 18).
struct WindowSizeClassTests {
    /// Breakpoints with inclusive lower bounds. Source: androidx `WindowSizeClass.kt` (600/840 dp width,
    /// 480/900 dp height), reference/posture-and-devices.md §1.2.
    @Test(arguments: [
        (599.0, WindowSizeClass.compact), (600, .medium), (839, .medium), (840, .expanded),
    ])
    func widthClasses(width: Double, expected: WindowSizeClass) {
        #expect(WindowSizeClass.width(width) == expected)
    }

    @Test(arguments: [
        (479.0, WindowSizeClass.compact), (480, .medium), (899, .medium), (900, .expanded),
    ])
    func heightClasses(height: Double, expected: WindowSizeClass) {
        #expect(WindowSizeClass.height(height) == expected)
    }

    /// Android: two panes only for an expanded width with a non-compact height (700×500 medium width, 880×450
    /// and 700×320 compact height stay single); a separating fold always splits. Apple: the size class decides.
    /// Source: Jetpack `calculatePaneScaffoldDirective`, Surface Duo `WindowState` ("large"), issue 18.
    @Test(arguments: [
        (700.0, 500.0, false, "width is only medium"),
        (900, 600, true, "expanded width x medium height"),
        (880, 450, false, "height is compact"),
        (700, 320, false, "width is only medium"),
    ])
    func androidTwoPaneDecision(width: Double, height: Double, twoPane: Bool, why: String) {
        let d = TwoPaneRule.decide(
            platform: "android",
            window: Size(width: width, height: height),
            horizontalSizeClass: .regular,
            separatingFold: nil
        )
        #expect(d.twoPane == twoPane)
        #expect(d.reason.contains(why), "\(d.reason)")
        let folded = TwoPaneRule.decide(
            platform: "android",
            window: Size(width: width, height: height),
            horizontalSizeClass: .regular,
            separatingFold: .vertical
        )
        #expect(folded.twoPane)
        #expect(folded.reason.hasPrefix("Jetpack rule: a separating vertical fold splits the window"))
        // Apple keeps its size class for the same windows.
        #expect(
            TwoPaneRule.decide(
                platform: "ios",
                window: Size(width: width, height: height),
                horizontalSizeClass: .regular,
                separatingFold: nil
            ).twoPane
        )
    }

    /// In the engine: a Pixel 9 Pro Fold (inner 882.87×851.69 dp in landscape, flat zero-width fold, not separating)
    /// gets one pane at 700×500 and 880×450 although Apple's threshold calls them regular, two panes full screen;
    /// both classifications come from the same window. Source: issue 18 (Defects: two-pane decision by width).
    @Test func engineFollowsJetpackOnAndroid() throws {
        for (w, h) in [(700.0, 500.0), (880, 450)] {
            let r = try layout("pixel-9-pro-fold", .flat, .landscape, window: Size(width: w, height: h))
            #expect(r.horizontalSizeClass == .regular)
            #expect(r.arrangement == .vertical, "\(w)x\(h): \(r.reason)")
            #expect(r.panes.count == 1)
            #expect(r.reason.contains("Jetpack rule"), "\(r.reason)")
        }
        let full = try layout("pixel-9-pro-fold", .flat, .landscape)
        #expect(full.windowWidthClass == .expanded && full.windowHeightClass == .medium)
        #expect(full.arrangement == .horizontal)
        #expect(full.panes.count == 2)
        #expect(full.reason.contains("Jetpack rule: 882.87x851.69 dp is expanded width x medium height: two panes"))
        // An iPad window of 700×500 is regular for Apple: two panes there.
        let ipad = try layout("ipad-air-11", .flat, .landscape, window: Size(width: 700, height: 500))
        #expect(ipad.arrangement == .horizontal)
        #expect(ipad.windowWidthClass == .medium && ipad.windowHeightClass == .medium)
    }

    /// The 1114×720 spanned Surface Duo with its 34-wide vertical hinge at x 540: two 540-wide panes, one each
    /// side of the hinge. Source: reference T3/T4 (pane1 540×720, pane2 1114 − 574 = 540), surface-duo-sdk.
    @Test func spannedSurfaceDuoGivesTwo540Panes() throws {
        let r = try layout("surface-duo", .flat, .portrait)
        #expect(r.rect("window") == Rect(x: 0, y: 0, width: 1114, height: 720))
        #expect(r.rect("hinge") == Rect(x: 540, y: 0, width: 34, height: 720))
        #expect(r.panes.map(\.width) == [540, 540])
        #expect(r.panes == [Rect(x: 0, y: 24, width: 540, height: 672), Rect(x: 574, y: 24, width: 540, height: 672)])
        #expect(r.arrangement == .horizontal)
        #expect(r.windowWidthClass == .expanded && r.windowHeightClass == .medium)
        #expect(r.failedInvariants.isEmpty, "\(r.failedInvariants)")
        let single = try layout("surface-duo", .folded)
        #expect(single.windowWidthClass == .compact && single.windowHeightClass == .medium)
        #expect(single.panes.count == 1)
    }
}
