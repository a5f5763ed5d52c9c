import Testing

@testable import LiveBusLayout

struct PostureTests {
    struct SizeClassCase: Sendable, CustomTestStringConvertible {
        var device: String
        var fold: FoldState
        var orientation: Orientation
        var window: Size?
        var horizontal: SizeClass
        var vertical: SizeClass
        var testDescription: String {
            "\(device) \(fold.rawValue) \(orientation.rawValue) \(window.map { "\($0.width)x\($0.height)" } ?? "full")"
        }
    }

    static let sizeClassCases: [SizeClassCase] = [
        // HIG Layout: iPhone portrait compact × regular; landscape per model.
        .init(
            device: "iphone-se-3",
            fold: .flat,
            orientation: .landscape,
            window: nil,
            horizontal: .compact,
            vertical: .compact
        ),
        .init(
            device: "iphone-16",
            fold: .flat,
            orientation: .portrait,
            window: nil,
            horizontal: .compact,
            vertical: .regular
        ),
        .init(
            device: "iphone-16",
            fold: .flat,
            orientation: .landscape,
            window: nil,
            horizontal: .compact,
            vertical: .compact
        ),
        .init(
            device: "iphone-16-pro",
            fold: .flat,
            orientation: .landscape,
            window: nil,
            horizontal: .compact,
            vertical: .compact
        ),
        .init(
            device: "iphone-16-pro-max",
            fold: .flat,
            orientation: .landscape,
            window: nil,
            horizontal: .regular,
            vertical: .compact
        ),
        // iPad: regular × regular full screen; multitasking windows narrower than 678 pt are compact.
        .init(
            device: "ipad-mini",
            fold: .flat,
            orientation: .portrait,
            window: nil,
            horizontal: .regular,
            vertical: .regular
        ),
        .init(
            device: "ipad-mini",
            fold: .flat,
            orientation: .portrait,
            window: Size(width: 414, height: 1133),
            horizontal: .compact,
            vertical: .regular
        ),
        .init(
            device: "ipad-mini",
            fold: .flat,
            orientation: .landscape,
            window: Size(width: 561.5, height: 744),
            horizontal: .compact,
            vertical: .regular
        ),
        .init(
            device: "ipad-mini",
            fold: .flat,
            orientation: .landscape,
            window: Size(width: 803, height: 744),
            horizontal: .regular,
            vertical: .regular
        ),
        .init(
            device: "ipad-air-11",
            fold: .flat,
            orientation: .landscape,
            window: Size(width: 585, height: 820),
            horizontal: .compact,
            vertical: .regular
        ),
        .init(
            device: "ipad-air-11",
            fold: .flat,
            orientation: .landscape,
            window: Size(width: 850, height: 820),
            horizontal: .regular,
            vertical: .regular
        ),
        // Android: 600/480 dp threshold. Fold6 main is Android "Medium" (707 dp) yet regular here.
        .init(
            device: "galaxy-z-fold6",
            fold: .flat,
            orientation: .portrait,
            window: nil,
            horizontal: .regular,
            vertical: .regular
        ),
        .init(
            device: "galaxy-z-fold6",
            fold: .folded,
            orientation: .portrait,
            window: nil,
            horizontal: .compact,
            vertical: .regular
        ),
        .init(
            device: "galaxy-z-flip6",
            fold: .flat,
            orientation: .landscape,
            window: nil,
            horizontal: .regular,
            vertical: .compact
        ),
        .init(
            device: "galaxy-z-flip6",
            fold: .folded,
            orientation: .portrait,
            window: nil,
            horizontal: .compact,
            vertical: .compact
        ),
        .init(
            device: "surface-duo-2",
            fold: .folded,
            orientation: .portrait,
            window: nil,
            horizontal: .compact,
            vertical: .regular
        ),
        .init(
            device: "surface-duo-2",
            fold: .flat,
            orientation: .portrait,
            window: nil,
            horizontal: .regular,
            vertical: .regular
        ),
        .init(
            device: "pixel-9-pro-fold",
            fold: .halfOpened,
            orientation: .portrait,
            window: nil,
            horizontal: .regular,
            vertical: .regular
        ),
        // iPhone Duo: outer compact (× regular portrait, × compact landscape), inner regular × regular.
        .init(
            device: "iphone-duo",
            fold: .folded,
            orientation: .portrait,
            window: nil,
            horizontal: .compact,
            vertical: .regular
        ),
        .init(
            device: "iphone-duo",
            fold: .folded,
            orientation: .landscape,
            window: nil,
            horizontal: .compact,
            vertical: .compact
        ),
        .init(
            device: "iphone-duo",
            fold: .halfOpened,
            orientation: .landscape,
            window: nil,
            horizontal: .regular,
            vertical: .regular
        ),
    ]

    /// Size classes follow Apple's per-model rules on Apple devices and the documented 600/480 dp threshold on the
    /// others. Source: HIG Layout; androidx WindowSizeClass.kt; posture-and-devices.md §1.5, §6.
    @Test(arguments: sizeClassCases)
    func sizeClasses(_ c: SizeClassCase) throws {
        let p = try posture(c.device, c.fold, c.orientation, window: c.window)
        #expect(p.horizontalSizeClass == c.horizontal)
        #expect(p.verticalSizeClass == c.vertical)
    }

    /// iPhone Duo: the window is 951×669 flat and half-opened; only the posture adds the reserved region (40 pt
    /// division + 12 pt margin each side at the 475.5 pt fold). Source: posture-and-devices.md §1.7, §2 row 25.
    @Test func duoHalfOpenedAddsReservedRegionWithSameWindow() throws {
        let flat = try posture("iphone-duo", .flat, .landscape)
        let half = try posture("iphone-duo", .halfOpened, .landscape)
        #expect(flat.window == half.window)
        #expect(flat.window == Rect(x: 0, y: 0, width: 951, height: 669))
        #expect(flat.reservedRegion == nil)
        #expect(flat.hingePlacement?.rect == Rect(x: 475.5, y: 0, width: 0, height: 669))
        #expect(flat.hingePlacement?.isSeparating == false)
        #expect(flat.hingePlacement?.isOccluding == false)
        #expect(half.hingePlacement?.rect == Rect(x: 455.5, y: 0, width: 40, height: 669))
        #expect(half.hingePlacement?.isSeparating == true)
        #expect(half.reservedRegion == Rect(x: 443.5, y: 0, width: 64, height: 669))
        #expect(half.safeArea == EdgeInsets(top: 0, left: 0, bottom: 0, right: 84))
        let portrait = try posture("iphone-duo", .halfOpened, .portrait)
        #expect(portrait.hingePlacement?.axis == .horizontal)
        #expect(portrait.reservedRegion == Rect(x: 0, y: 443.5, width: 669, height: 64))
        // The same window therefore gets a different layout from the posture alone.
        let a = LayoutEngine.layout(LayoutInput(posture: flat, screen: .column))
        let b = LayoutEngine.layout(LayoutInput(posture: half, screen: .column))
        #expect(a.rect("column") == Rect(x: 173.5, y: 0, width: 520, height: 669))
        #expect(b.rect("column") == Rect(x: 0, y: 0, width: 443.5, height: 669))
    }

    /// A physical hinge (Surface Duo 2, 26.4 dp at x 537.6) occludes even flat, so it is the keep-out region;
    /// half-opened adds the 12 pt margins. A quarter turn makes it horizontal. Source: HardwareFoldingFeature.kt;
    /// posture-and-devices.md §2 row 18.
    @Test func surfaceDuoHinge() throws {
        let flat = try posture("surface-duo-2", .flat, .portrait)
        #expect(flat.hingePlacement?.rect == Rect(x: 537.6, y: 0, width: 26.4, height: 756.8))
        #expect(flat.hingePlacement?.isOccluding == true)
        #expect(flat.hingePlacement?.isSeparating == true)
        #expect(flat.reservedRegion == nil)
        #expect(flat.keepOutRegion == flat.hinge)
        let half = try posture("surface-duo-2", .halfOpened, .portrait)
        #expect(half.reservedRegion?.rounded == Rect(x: 525.6, y: 0, width: 50.4, height: 756.8))
        let landscape = try posture("surface-duo-2", .flat, .landscape)
        #expect(landscape.hingePlacement?.axis == .horizontal)
        #expect(landscape.hingePlacement?.rect.rounded == Rect(x: 0, y: 537.6, width: 756.8, height: 26.4))
        // A window that ends before the hinge has none.
        let narrow = try posture("surface-duo-2", .halfOpened, .portrait, window: Size(width: 500, height: 700))
        #expect(narrow.hinge == nil)
        #expect(narrow.reservedRegion == nil)
    }

    /// Zero-width folds: flat → no reserved region; half-opened → the 24 pt band (12 + 12) around the fold.
    /// Source: posture-and-devices.md §1.1 (zero-width fold separating when half-opened), T2.
    @Test func zeroWidthFoldReservedRegion() throws {
        let flip = try posture("galaxy-z-flip6", .halfOpened, .portrait)
        #expect(flip.hingePlacement?.axis == .horizontal)
        #expect(flip.reservedRegion?.rounded == Rect(x: 0, y: 490.86, width: 411.43, height: 24))
        let fold = try posture("galaxy-z-fold6", .halfOpened, .portrait)
        #expect(fold.reservedRegion?.rounded == Rect(x: 341.52, y: 0, width: 24, height: 822.86))
        #expect(try posture("galaxy-z-fold6", .flat, .portrait).keepOutRegion == nil)
    }

    /// The Dynamic Island cutout is centred at y 11 in portrait and turns with the device. Source: T5,
    /// DynamicIslandUtilities (126×37.33 at y 11).
    @Test func dynamicIslandPlacement() throws {
        #expect(try posture("iphone-16").dynamicIsland == Rect(x: 133.5, y: 11, width: 126, height: 37.33))
        #expect(try posture("iphone-16-pro").dynamicIsland == Rect(x: 138, y: 11, width: 126, height: 37.33))
        #expect(
            try posture("iphone-16", .flat, .landscape).dynamicIsland
                == Rect(x: 11, y: 133.5, width: 37.33, height: 126)
        )
        #expect(try posture("iphone-se-3").dynamicIsland == nil)
    }

    /// Safe-area insets are the screen's insets clipped to the window (iPad Slide Over keeps 24/20).
    @Test func safeAreaClippedToWindow() throws {
        let p = try posture("ipad-air-11", .flat, .portrait, window: Size(width: 320, height: 1180))
        #expect(p.safeArea == EdgeInsets(top: 24, left: 0, bottom: 20, right: 0))
        let short = try posture("iphone-16", .flat, .portrait, window: Size(width: 393, height: 400))
        #expect(short.safeArea == EdgeInsets(top: 59, left: 0, bottom: 0, right: 0))
    }

    struct RejectCase: Sendable, CustomTestStringConvertible {
        var posture: Posture
        var code: LayoutError.Code
        var mentions: [String]
        var testDescription: String { "\(posture.deviceID) \(posture.foldState.rawValue) → \(code)" }
    }

    static let rejectCases: [RejectCase] = [
        .init(
            posture: Posture(deviceID: "iphone-16", foldState: .halfOpened),
            code: .unsupportedFoldState,
            mentions: [
                "iPhone 16 (iphone-16) cannot be half-opened: it has no hinge or fold", "valid fold states: flat",
            ]
        ),
        .init(
            posture: Posture(deviceID: "ipad-mini", foldState: .folded),
            code: .unsupportedFoldState,
            mentions: ["no cover or outer screen", "valid fold states: flat"]
        ),
        .init(
            posture: Posture(deviceID: "iphone-16", windowSize: Size(width: 400, height: 852)),
            code: .windowTooLarge,
            mentions: [
                "window 400x852 is larger than the main screen of iPhone 16 in portrait (393x852 pt)",
                "width 320...393",
            ]
        ),
        .init(
            posture: Posture(
                deviceID: "iphone-duo",
                foldState: .folded,
                orientation: .landscape,
                windowSize: Size(width: 678, height: 467)
            ),
            code: .windowTooLarge,
            mentions: ["outer screen", "height 320...466"]
        ),
        .init(
            posture: Posture(deviceID: "ipad-mini", windowSize: Size(width: 200, height: 600)),
            code: .windowTooSmall,
            mentions: ["window 200x600", "width 320...744"]
        ),
        .init(
            posture: Posture(deviceID: "pixel-10"),
            code: .unknownDevice,
            mentions: ["unknown device id 'pixel-10'", "pixel-9-pro-fold"]
        ),
        .init(
            posture: Posture(deviceID: "iphone-16", keyboardHeight: 400),
            code: .invalidKeyboardHeight,
            mentions: ["keyboard height 400 is outside 0...340.8"]
        ),
    ]

    /// Impossible postures are rejected with a specific error that lists what is valid. Source: LiveBus issue
    /// "Posture" (impossible postures).
    @Test(arguments: rejectCases)
    func impossiblePosturesAreRejected(_ c: RejectCase) {
        do {
            _ = try resolve(c.posture, in: testCatalog)
            Issue.record("accepted \(c.posture)")
        } catch {
            #expect(error.code == c.code)
            for m in c.mentions { #expect(error.message.contains(m), "\(error.message)") }
        }
    }
}
