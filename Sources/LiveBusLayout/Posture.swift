/// How far a foldable is opened.
///
/// - Note: Source: Jetpack WindowManager `FoldingFeature.State` (FLAT, HALF_OPENED),
///   https://developer.android.com/reference/kotlin/androidx/window/layout/FoldingFeature.State ; `folded` selects
///   the cover (outer) screen; field report 000 (iPhone Duo "반접힘").
public enum FoldState: String, Codable, Sendable, CaseIterable {
    /// Completely open (or a device that does not fold).
    case flat
    /// Opened at an angle: the fold is separating and the reserved region applies.
    case halfOpened = "half-opened"
    /// Closed: the cover or outer screen is active.
    case folded
}

/// Device orientation. Landscape is the portrait frame turned a quarter turn counter-clockwise (the portrait top
/// edge becomes the left edge).
public enum Orientation: String, Codable, Sendable, CaseIterable {
    /// Upright hold (the catalog's `portrait` size).
    case portrait
    /// Turned a quarter turn.
    case landscape
}

/// Apple size class.
///
/// - Note: Source: HIG Layout, https://developer.apple.com/design/human-interface-guidelines/layout
public enum SizeClass: String, Codable, Sendable, CaseIterable {
    /// Constrained space.
    case compact
    /// Expansive space.
    case regular
}

/// What a posture gives the layout engine: a device, a fold state, an orientation, a window and a keyboard.
public struct Posture: Codable, Sendable, Equatable, Hashable {
    /// Catalog device id, e.g. `iphone-duo`.
    public var deviceID: String
    /// Fold state; `flat` for devices that do not fold.
    public var foldState: FoldState
    /// Device orientation.
    public var orientation: Orientation
    /// Window size in points, placed at the screen's top-left corner; nil = the whole screen.
    public var windowSize: Size?
    /// Height of the software keyboard in points, from the window's bottom edge (0 = hidden).
    public var keyboardHeight: Double
    /// The OS version the session runs; decides the arrangement API and the vertical-edge toolbar on iOS
    /// foldables. JSON key `osVersion` (text such as `"26.4"`); absent = ``OSVersion/newest``.
    public var osVersion: OSVersion

    /// Creates a posture.
    ///
    /// - Parameters:
    ///   - deviceID: catalog id.
    ///   - foldState: fold state (`flat` for devices that do not fold).
    ///   - orientation: device orientation.
    ///   - windowSize: window size in points; nil = the whole screen.
    ///   - keyboardHeight: keyboard height in points (0 = hidden).
    ///   - osVersion: the OS version the session runs; defaults to ``OSVersion/newest``.
    public init(
        deviceID: String,
        foldState: FoldState = .flat,
        orientation: Orientation = .portrait,
        windowSize: Size? = nil,
        keyboardHeight: Double = 0,
        osVersion: OSVersion = .newest
    ) {
        self.deviceID = deviceID
        self.foldState = foldState
        self.orientation = orientation
        self.windowSize = windowSize
        self.keyboardHeight = keyboardHeight
        self.osVersion = osVersion
    }

    private enum CodingKeys: String, CodingKey {
        case deviceID, foldState, orientation, windowSize, keyboardHeight, osVersion
    }

    /// Decodes a posture; a missing `osVersion` means ``OSVersion/newest`` (postures written before it existed).
    ///
    /// - Parameter decoder: the decoder.
    /// - Throws: `DecodingError` when a field is missing or malformed.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        deviceID = try c.decode(String.self, forKey: .deviceID)
        foldState = try c.decode(FoldState.self, forKey: .foldState)
        orientation = try c.decode(Orientation.self, forKey: .orientation)
        windowSize = try c.decodeIfPresent(Size.self, forKey: .windowSize)
        keyboardHeight = try c.decode(Double.self, forKey: .keyboardHeight)
        osVersion = try c.decodeIfPresent(OSVersion.self, forKey: .osVersion) ?? .newest
    }
}

/// A hinge or fold band placed in window coordinates.
public struct HingePlacement: Codable, Sendable, Equatable {
    /// Hinge or fold.
    public var kind: HingeSpec.Kind
    /// `vertical` when the band runs top to bottom in the current orientation (book), `horizontal` (tabletop).
    public var axis: HingeSpec.Axis
    /// The band in window coordinates (points); zero thickness for a flat fold.
    public var rect: Rect
    /// True when content under the band is hidden (a physical hinge or a band with thickness).
    ///
    /// - Note: Source: `HardwareFoldingFeature.kt` occlusionType (FULL iff the bounds have width and height),
    ///   androidx/androidx@8e6dba3bf264ba9832a39390115c107003035ee4.
    public var isOccluding: Bool
    /// True when the band splits the window in two (a hinge always; a fold when half-opened).
    ///
    /// - Note: Source: `HardwareFoldingFeature.kt` isSeparating (`HINGE → true; FOLD && HALF_OPENED → true`).
    public var isSeparating: Bool
}

/// The screen a posture uses.
public struct ActiveScreen: Codable, Sendable, Equatable {
    /// Screen name from the catalog (`main`, `cover`, `outer`, `inner`, `single`, `spanned`).
    public var name: String
    /// Size in the posture's orientation (points; dp on Android).
    public var size: Size
}

/// A posture checked against the catalog, with everything the layout engine needs in window coordinates.
public struct ResolvedPosture: Codable, Sendable, Equatable {
    /// The posture as given.
    public var posture: Posture
    /// The catalog device.
    public var device: Device
    /// The active screen: its name (`main`, `cover`, `inner`…) and size in this orientation (points).
    public var screen: ActiveScreen
    /// The window in screen coordinates (points); its origin is always (0, 0).
    public var window: Rect
    /// Safe-area insets of the window (points), the screen's insets clipped to the window.
    public var safeArea: EdgeInsets
    /// Width size class.
    public var horizontalSizeClass: SizeClass
    /// Height size class.
    public var verticalSizeClass: SizeClass
    /// Why these size classes (rule and numbers).
    public var sizeClassReason: String
    /// Hinge or fold band crossing the window, if any, with its kind, axis and flags.
    public var hingePlacement: HingePlacement?
    /// The reserved (division) region: the hinge band plus the catalog margin on each side, clipped to the window.
    /// Present only when half-opened.
    ///
    /// - Note: Source: field report 000 (reserved region, "콘텐츠는 reserved region을 가로지르지 않고 어느 한쪽에");
    ///   Apple `GeometryProxy.reservedRegions(kind: .division)`; margin default in `devices.json` `defaults`.
    public var reservedRegion: Rect?
    /// The Dynamic Island resting cutout in window coordinates, if the screen has one and it lies in the window.
    public var dynamicIsland: Rect?
    /// Keyboard height in points (0 = hidden).
    public var keyboardHeight: Double
    /// The system's vertical bar (iPhone Duo) in window coordinates: the strip along the catalog's side edge, when
    /// the screen uses it in this orientation and the window reaches it. Geometry only: whether the toolbar uses
    /// it depends on the OS version (see ``LayoutResult/toolbar``).
    public var verticalBar: Rect?

    /// The OS version the session runs.
    public var osVersion: OSVersion { posture.osVersion }
    /// The bar's edge, when ``verticalBar`` is present.
    public var verticalBarEdge: VerticalBarSpec.Edge?

    /// Name of the active screen.
    public var screenName: String { screen.name }
    /// Size of the active screen in this orientation (points).
    public var screenSize: Size { screen.size }
    /// The hinge or fold band in window coordinates (zero thickness for a flat fold), if it crosses the window.
    public var hinge: Rect? { hingePlacement?.rect }

    /// The window minus the safe-area insets.
    public var safeRect: Rect { window.inset(by: safeArea) }

    /// The same posture flipped left to right in its window (safe-area insets, hinge, reserved region, Dynamic
    /// Island and vertical bar), for laying out right to left.
    var mirrored: ResolvedPosture {
        var p = self
        let w = window.width
        p.safeArea = EdgeInsets(top: safeArea.top, left: safeArea.right, bottom: safeArea.bottom, right: safeArea.left)
        p.hingePlacement?.rect = hingePlacement.map { $0.rect.mirrored(in: w) } ?? Rect(x: 0, y: 0, width: 0, height: 0)
        p.reservedRegion = reservedRegion?.mirrored(in: w)
        p.dynamicIsland = dynamicIsland?.mirrored(in: w)
        p.verticalBar = verticalBar?.mirrored(in: w)
        p.verticalBarEdge = verticalBarEdge.map { $0 == .left ? .right : .left }
        return p
    }

    /// Material width class of the same window (dp; points on Apple devices, informative there).
    public var windowWidthClass: WindowSizeClass { .width(window.width) }
    /// Material height class of the same window (dp; points on Apple devices, informative there).
    public var windowHeightClass: WindowSizeClass { .height(window.height) }

    /// The region interactive content must avoid: the reserved region when half-opened, otherwise an occluding
    /// hinge (Surface Duo's physical hinge hides content even when flat).
    ///
    /// - Note: Source: `FoldingFeature.OcclusionType.FULL`: "Fully occluded areas should always be avoided when
    ///   placing interactive UI elements and text", https://developer.android.com/reference/kotlin/androidx/window/layout/FoldingFeature.OcclusionType
    public var keepOutRegion: Rect? {
        if let reservedRegion { return reservedRegion }
        if let hingePlacement, hingePlacement.isOccluding { return hingePlacement.rect }
        return nil
    }
}

/// Checks a posture against the catalog and places the screen, window, safe area, hinge, reserved region and
/// Dynamic Island in window coordinates, and derives the size classes.
///
/// Size classes: `apple-fixed` devices use the screen's per-orientation table (HIG Layout: iPhone landscape is
/// per model); `apple-ipad` devices are regular × regular unless the window is narrower than
/// `defaults.iPadRegularWidthFrom`; `threshold` devices compare the window with `defaults.regularWidthFrom` and
/// `defaults.regularHeightFrom` (Android Medium and wider = regular). The window size is the same flat and
/// half-opened on iPhone Duo, so only the reserved region tells the two apart.
///
/// - Parameters:
///   - posture: the device id, fold state, orientation, window (points) and keyboard height (points).
///   - catalog: the device catalog.
/// - Returns: the resolved posture.
/// - Throws: ``LayoutError`` with code `unknown-device`, `unsupported-fold-state`, `window-too-large`,
///   `window-too-small` or `invalid-keyboard-height`; each message lists what is valid.
/// - Note: Source: HIG Layout (size classes), `WindowSizeClass.kt` (600/480 dp), field report 000.
public func resolve(_ posture: Posture, in catalog: DeviceCatalog) throws(LayoutError) -> ResolvedPosture {
    let device = try catalog.device(posture.deviceID)
    guard let screen = device.screen(for: posture.foldState) else {
        let reason =
            switch posture.foldState {
            case .halfOpened: "it has no hinge or fold"
            case .folded: "it has no cover or outer screen"
            case .flat: "it has no main screen"
            }
        throw LayoutError(
            .unsupportedFoldState,
            "\(device.name) (\(device.id)) cannot be \(posture.foldState.rawValue): \(reason); valid fold states: "
                + device.supportedFoldStates.map(\.rawValue).joined(separator: ", ")
        )
    }
    let screenSize = screen.size(in: posture.orientation)
    // The window's origin in screen coordinates (a status bar above it), from the device file; everything below
    // is converted from screen to window coordinates by subtracting it.
    let origin = screen.windowOrigin?[posture.orientation] ?? Point(x: 0, y: 0)
    let roomSize = Size(width: screenSize.width - origin.x, height: screenSize.height - origin.y)
    let windowSize = posture.windowSize ?? roomSize
    let sizeText = "\(format(screenSize.width))x\(format(screenSize.height))"
    if windowSize.width > roomSize.width + Rect.tolerance || windowSize.height > roomSize.height + Rect.tolerance {
        throw LayoutError(
            .windowTooLarge,
            "window \(format(windowSize.width))x\(format(windowSize.height)) is larger than the \(screen.name) screen "
                + "of \(device.name) in \(posture.orientation.rawValue) (\(sizeText) \(device.unit)); "
                + "valid windows: width \(format(catalog.defaults.minimumWindowEdge))...\(format(screenSize.width)), "
                + "height \(format(catalog.defaults.minimumWindowEdge))...\(format(screenSize.height))"
        )
    }
    let minimum = catalog.defaults.minimumWindowEdge
    if windowSize.width < minimum || windowSize.height < minimum || !windowSize.width.isFinite
        || !windowSize.height.isFinite
    {
        throw LayoutError(
            .windowTooSmall,
            "window \(format(windowSize.width))x\(format(windowSize.height)) is smaller than the engine minimum; "
                + "valid windows: width \(format(minimum))...\(format(screenSize.width)), "
                + "height \(format(minimum))...\(format(screenSize.height)) \(device.unit)"
        )
    }
    if !(posture.keyboardHeight >= 0) || posture.keyboardHeight > windowSize.height * 0.4 {
        throw LayoutError(
            .invalidKeyboardHeight,
            "keyboard height \(format(posture.keyboardHeight)) is outside 0...\(format(windowSize.height * 0.4)) "
                + "(at most 40% of the window height)"
        )
    }
    let window = Rect(size: windowSize)
    func toWindow(_ r: Rect) -> Rect { Rect(x: r.x - origin.x, y: r.y - origin.y, width: r.width, height: r.height) }
    let screenRect = toWindow(Rect(size: screenSize))
    let screenSafe = screenRect.inset(by: screen.safeArea[posture.orientation])
    let clippedSafe = window.intersection(screenSafe) ?? Rect(x: 0, y: 0, width: 0, height: 0)
    let safeArea = EdgeInsets(
        top: clippedSafe.minY - window.minY,
        left: clippedSafe.minX - window.minX,
        bottom: window.maxY - clippedSafe.maxY,
        right: window.maxX - clippedSafe.maxX
    )

    let (horizontal, vertical, reason) = sizeClasses(
        device: device,
        screen: screen,
        orientation: posture.orientation,
        window: windowSize,
        defaults: catalog.defaults
    )

    var hinge: HingePlacement?
    var reserved: Rect?
    if let spec = screen.hinge {
        let thickness = posture.foldState == .halfOpened ? spec.halfOpenedWidth : spec.flatWidth
        let band = toWindow(
            hingeBand(spec, thickness: thickness, portrait: screen.portrait, orientation: posture.orientation)
        )
        let axis = bandAxis(spec, orientation: posture.orientation)
        if crossesWindow(band, axis: axis, window: window) {
            hinge = HingePlacement(
                kind: spec.kind,
                axis: axis,
                rect: clip(band, to: window).rounded,
                isOccluding: thickness > 0,
                isSeparating: spec.kind == .hinge || posture.foldState == .halfOpened
            )
            if posture.foldState == .halfOpened {
                let m = catalog.defaults.reservedRegionMargin
                let grown =
                    axis == .vertical
                    ? Rect(x: band.x - m, y: band.y, width: band.width + 2 * m, height: band.height)
                    : Rect(x: band.x, y: band.y - m, width: band.width, height: band.height + 2 * m)
                reserved = window.intersection(grown)?.rounded
            }
        }
    }

    var island: Rect?
    if let spec = screen.dynamicIsland {
        let r = toWindow(rotate(spec.cutout, portrait: screen.portrait, orientation: posture.orientation))
        if window.contains(r) { island = r.rounded }
    }

    var bar: Rect?
    var barEdge: VerticalBarSpec.Edge?
    if let spec = screen.verticalBar, spec.orientations.contains(posture.orientation) {
        let strip = toWindow(
            spec.edge == .right
                ? Rect(x: screenSize.width - spec.width, y: 0, width: spec.width, height: screenSize.height)
                : Rect(x: 0, y: 0, width: spec.width, height: screenSize.height)
        )
        if window.contains(strip) {
            bar = strip.rounded
            barEdge = spec.edge
        }
    }

    return ResolvedPosture(
        posture: posture,
        device: device,
        screen: ActiveScreen(name: screen.name, size: screenSize),
        window: window,
        safeArea: safeArea,
        horizontalSizeClass: horizontal,
        verticalSizeClass: vertical,
        sizeClassReason: reason,
        hingePlacement: hinge,
        reservedRegion: reserved,
        dynamicIsland: island,
        keyboardHeight: posture.keyboardHeight,
        verticalBar: bar,
        verticalBarEdge: barEdge
    )
}

private func sizeClasses(
    device: Device,
    screen: DeviceScreen,
    orientation: Orientation,
    window: Size,
    defaults: CatalogDefaults
) -> (SizeClass, SizeClass, String) {
    switch device.sizeClassRule {
    case .appleFixed:
        let pair = screen.sizeClasses?[orientation] ?? SizeClassPair(horizontal: .compact, vertical: .regular)
        return (
            pair.horizontal, pair.vertical,
            "Apple per-model rule: \(device.name) \(screen.name) screen in \(orientation.rawValue) is "
                + "\(pair.horizontal.rawValue) width x \(pair.vertical.rawValue) height"
        )
    case .appleIPad:
        let regular = window.width >= defaults.iPadRegularWidthFrom
        return (
            regular ? .regular : .compact, .regular,
            "Apple iPad rule: window width \(format(window.width)) pt "
                + (regular ? ">=" : "<") + " \(format(defaults.iPadRegularWidthFrom)) pt, height always regular"
        )
    case .threshold:
        let h: SizeClass = window.width >= defaults.regularWidthFrom ? .regular : .compact
        let v: SizeClass = window.height >= defaults.regularHeightFrom ? .regular : .compact
        return (
            h, v,
            "threshold rule: width \(format(window.width)) dp "
                + (h == .regular ? ">=" : "<")
                + " \(format(defaults.regularWidthFrom)), height \(format(window.height)) dp "
                + (v == .regular ? ">=" : "<") + " \(format(defaults.regularHeightFrom))"
        )
    }
}

/// Axis of the band in the given orientation (a quarter turn swaps it).
private func bandAxis(_ spec: HingeSpec, orientation: Orientation) -> HingeSpec.Axis {
    guard orientation == .landscape else { return spec.axisInPortrait }
    return spec.axisInPortrait == .vertical ? .horizontal : .vertical
}

/// The hinge band in screen coordinates of the orientation (full screen length, `thickness` wide).
private func hingeBand(_ spec: HingeSpec, thickness: Double, portrait: Size, orientation: Orientation) -> Rect {
    let portraitBand =
        spec.axisInPortrait == .vertical
        ? Rect(x: spec.centerInPortrait - thickness / 2, y: 0, width: thickness, height: portrait.height)
        : Rect(x: 0, y: spec.centerInPortrait - thickness / 2, width: portrait.width, height: thickness)
    return rotate(portraitBand, portrait: portrait, orientation: orientation)
}

/// Maps a rect from portrait screen coordinates to the orientation's screen coordinates.
/// Landscape turns the device a quarter turn counter-clockwise: (x, y) → (y, W − x).
func rotate(_ r: Rect, portrait: Size, orientation: Orientation) -> Rect {
    guard orientation == .landscape else { return r }
    return Rect(x: r.y, y: portrait.width - (r.x + r.width), width: r.height, height: r.width)
}

/// True when the band's centre line lies strictly inside the window (a fold at the window edge splits nothing).
private func crossesWindow(_ band: Rect, axis: HingeSpec.Axis, window: Rect) -> Bool {
    axis == .vertical
        ? band.midX > window.minX && band.midX < window.maxX
        : band.midY > window.minY && band.midY < window.maxY
}

/// Clips a band to the window, keeping zero-thickness bands (which have no area).
private func clip(_ band: Rect, to window: Rect) -> Rect {
    Rect(
        minX: max(band.minX, window.minX),
        minY: max(band.minY, window.minY),
        maxX: min(band.maxX, window.maxX),
        maxY: min(band.maxY, window.maxY)
    )
}

/// A number with at most two decimals and no trailing zeros, for messages.
func format(_ value: Double) -> String {
    let r = value.roundedToHundredths
    if r == r.rounded() { return String(Int(r)) }
    var s = String(r)
    while s.hasSuffix("0") { s.removeLast() }
    return s
}
