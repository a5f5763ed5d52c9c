/// What the CLI's offline `layout` command asks for: device, posture, orientation, window, screen, tags.
public struct OfflineLayoutRequest: Codable, Sendable, Equatable {
    /// Catalog device id.
    public var deviceID: String
    /// Fold state.
    public var foldState: FoldState
    /// Orientation.
    public var orientation: Orientation
    /// Window size in points; nil = full screen.
    public var windowSize: Size?
    /// Screen declaration.
    public var screen: ScreenLayout
    /// Tags in the tag editor sheet.
    public var tags: Int
    /// Show the tag editor sheet.
    public var showSheet: Bool
    /// Show a toast.
    public var showToast: Bool
    /// Text field focused (the sheet sits above the keyboard).
    public var textFieldFocused: Bool
    /// Keyboard height in points.
    public var keyboardHeight: Double
    /// Order markers; defaults to ``OfflineLayoutRequest/sampleMarkers``.
    public var markers: [MapMarker]
    /// Live Activity content; defaults to ``OfflineLayoutRequest/sampleLiveActivity``.
    public var liveActivity: LiveActivityContent?
    /// The OS version the session runs; defaults to ``OSVersion/newest``.
    public var osVersion: OSVersion
    /// Reading direction; defaults to left to right.
    public var layoutDirection: LayoutDirection = .ltr
    /// A modal dialog of this size (points) to place in the card column's sub-screen, or nil.
    public var dialog: Size? = nil

    /// Creates a request; everything but the device has a default.
    public init(
        deviceID: String,
        foldState: FoldState = .flat,
        orientation: Orientation = .portrait,
        windowSize: Size? = nil,
        screen: ScreenLayout = .overlay,
        tags: Int = 0,
        showSheet: Bool = true,
        showToast: Bool = true,
        textFieldFocused: Bool = false,
        keyboardHeight: Double = 0,
        markers: [MapMarker] = OfflineLayoutRequest.sampleMarkers,
        liveActivity: LiveActivityContent? = OfflineLayoutRequest.sampleLiveActivity,
        osVersion: OSVersion = .newest
    ) {
        self.osVersion = osVersion
        self.deviceID = deviceID
        self.foldState = foldState
        self.orientation = orientation
        self.windowSize = windowSize
        self.screen = screen
        self.tags = tags
        self.showSheet = showSheet
        self.showToast = showToast
        self.textFieldFocused = textFieldFocused
        self.keyboardHeight = keyboardHeight
        self.markers = markers
        self.liveActivity = liveActivity
    }

    /// A delivery in Seoul (Gangnam): store, rider, two route points, customer.
    public static let sampleMarkers: [MapMarker] = [
        MapMarker(kind: .store, latitude: 37.4979, longitude: 127.0276),
        MapMarker(kind: .route, latitude: 37.4990, longitude: 127.0320),
        MapMarker(kind: .rider, latitude: 37.5006, longitude: 127.0361),
        MapMarker(kind: .route, latitude: 37.5030, longitude: 127.0420),
        MapMarker(kind: .customer, latitude: 37.5045, longitude: 127.0490),
    ]

    /// Field report 001's delivering state: `배달 중` with 1:27 left.
    public static let sampleLiveActivity = LiveActivityContent(
        statusText: "배달 중",
        statusSymbol: "bicycle",
        timerText: "1:27",
        progress: 0.6,
        lastConfirmedText: "마지막 확인 12:03"
    )
}

/// The offline layout the CLI wraps: resolve the posture, lay out, return both for the renderers.
public enum OfflineLayout {
    /// Resolves the request's posture against the catalog and lays it out.
    ///
    /// - Parameters:
    ///   - request: device, fold state, orientation, window, screen, tags and content.
    ///   - catalog: the device catalog (usually ``DeviceCatalog/bundled()``).
    ///   - measurer: text measurer for Live Activity text.
    /// - Returns: the input (for ``LayoutRenderer/svg(_:input:)``) and the result.
    /// - Throws: ``LayoutError`` from ``resolve(_:in:)`` when the posture is impossible.
    public static func run(
        _ request: OfflineLayoutRequest,
        catalog: DeviceCatalog,
        measurer: any TextMeasurer = ApproximateTextMeasurer()
    ) throws(LayoutError) -> (input: LayoutInput, result: LayoutResult) {
        let posture = Posture(
            deviceID: request.deviceID,
            foldState: request.foldState,
            orientation: request.orientation,
            windowSize: request.windowSize,
            keyboardHeight: request.keyboardHeight,
            osVersion: request.osVersion
        )
        let resolved = try resolve(posture, in: catalog)
        let input = LayoutInput(
            posture: resolved,
            screen: request.screen,
            tags: request.tags,
            textFieldFocused: request.textFieldFocused,
            markers: request.markers,
            showSheet: request.showSheet,
            showToast: request.showToast,
            liveActivity: request.liveActivity,
            measurer: measurer
        )
        var directed = input
        directed.layoutDirection = request.layoutDirection
        directed.dialog = request.dialog
        return (directed, LayoutEngine.layout(directed))
    }
}

extension OfflineLayoutRequest {
    /// Builds a request from the CLI's words: `layout DEVICE POSTURE ORIENTATION WxH|full SCREEN TAGS [OS]`.
    ///
    /// - Parameters:
    ///   - device: catalog id (checked later by ``OfflineLayout/run(_:catalog:measurer:)``).
    ///   - foldState: `flat`, `half-opened` or `folded`.
    ///   - orientation: `portrait` or `landscape`.
    ///   - window: `WxH` in points (e.g. `951x669`, decimals allowed) or `full`.
    ///   - screen: `overlay`, `column` or `fullScreen`.
    ///   - tags: a count ≥ 0.
    ///   - os: the OS version, `MAJOR[.MINOR[.PATCH]]` (e.g. `26.4`, `27.1`) or `newest` (the default).
    ///   - keyboard: the software keyboard's height in points (`0`, the default, = hidden); above 0 the sheet's
    ///     text field has focus and the sheet rides on the keyboard.
    /// - Returns: the request with the default sheet, toast, markers and Live Activity content.
    /// - Throws: ``LayoutError`` with code `invalid-argument`, naming the word and listing the valid values, or
    ///   `invalid-os-version` for an unparseable OS version.
    public static func parse(
        device: String,
        foldState: String,
        orientation: String,
        window: String,
        screen: String,
        tags: String,
        os: String = "newest",
        keyboard: String = "0"
    ) throws(LayoutError) -> OfflineLayoutRequest {
        let version = try OSVersion.parse(os)
        guard let keyboardHeight = Double(keyboard), keyboardHeight >= 0, keyboardHeight.isFinite else {
            throw LayoutError(
                .invalidArgument,
                "keyboard '\(keyboard)' is not a height; give the keyboard's height in points, 0 or more (0 = hidden)"
            )
        }
        guard let fold = FoldState(rawValue: foldState) else {
            throw invalid("fold state", foldState, FoldState.allCases.map(\.rawValue))
        }
        guard let turn = Orientation(rawValue: orientation) else {
            throw invalid("orientation", orientation, Orientation.allCases.map(\.rawValue))
        }
        guard let layout = ScreenLayout(rawValue: screen) else {
            throw invalid("screen", screen, ScreenLayout.allCases.map(\.rawValue))
        }
        guard let count = Int(tags), count >= 0 else {
            throw LayoutError(.invalidArgument, "tags '\(tags)' is not a count; give a whole number 0 or more")
        }
        return OfflineLayoutRequest(
            deviceID: device,
            foldState: fold,
            orientation: turn,
            windowSize: try parseWindow(window),
            screen: layout,
            tags: count,
            textFieldFocused: keyboardHeight > 0,
            keyboardHeight: keyboardHeight,
            osVersion: version
        )
    }

    /// Parses `WxH` (points, e.g. `951x669` or `561.5x744`) or `full` (nil: the whole screen).
    ///
    /// - Parameter text: the word.
    /// - Returns: the size, or nil for `full`.
    /// - Throws: ``LayoutError`` with code `invalid-argument`.
    public static func parseWindow(_ text: String) throws(LayoutError) -> Size? {
        if text == "full" { return nil }
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Double(parts[0]), let h = Double(parts[1]), w.isFinite, h.isFinite else {
            throw LayoutError(
                .invalidArgument,
                "window '\(text)' is not WxH; give the window in points like 951x669 or 561.5x744, or 'full'"
            )
        }
        return Size(width: w, height: h)
    }

    private static func invalid(_ what: String, _ word: String, _ valid: [String]) -> LayoutError {
        LayoutError(.invalidArgument, "\(what) '\(word)' is not valid; valid: \(valid.joined(separator: ", "))")
    }
}

extension OSVersion {
    /// Parses a session's declared OS version (`attach --os`, the handshake's `os` field, a scenario file, or
    /// `layout --os`).
    ///
    /// - Parameter text: `MAJOR[.MINOR[.PATCH]]` such as `26.4` or `27.1.2` (an `iOS ` prefix is accepted), or
    ///   `newest` / `latest` (or an empty string) for ``OSVersion/newest``.
    /// - Returns: the version.
    /// - Throws: ``LayoutError`` with code `invalid-os-version`, saying what to give instead.
    public static func parse(_ text: String) throws(LayoutError) -> OSVersion {
        let trimmed = String(String(text.drop(while: \.isWhitespace).reversed()).drop(while: \.isWhitespace).reversed())
        if ["", "newest", "latest"].contains(trimmed.lowercased()) { return .newest }
        guard let v = OSVersion(trimmed) else {
            throw LayoutError(
                .invalidOSVersion,
                "OS version '\(text)' is not MAJOR.MINOR[.PATCH]; give e.g. 26.4 or 27.1 (ArrangementView and the "
                    + "vertical-edge toolbar need \(OSVersion.arrangementAPI)), or 'newest' for \(OSVersion.newest)"
            )
        }
        return v
    }
}
