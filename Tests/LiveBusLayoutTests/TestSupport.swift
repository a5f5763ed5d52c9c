import Testing

@testable import LiveBusLayout

/// The bundled catalog, loaded once for all tests.
let testCatalog: DeviceCatalog = {
    do {
        return try DeviceCatalog.bundled()
    } catch {
        fatalError("bundled catalog: \(error)")
    }
}()

/// Resolves a posture on the bundled catalog.
func posture(
    _ id: String,
    _ fold: FoldState = .flat,
    _ orientation: Orientation = .portrait,
    window: Size? = nil,
    keyboard: Double = 0,
    os: OSVersion = .newest
) throws -> ResolvedPosture {
    try resolve(
        Posture(
            deviceID: id,
            foldState: fold,
            orientation: orientation,
            windowSize: window,
            keyboardHeight: keyboard,
            osVersion: os
        ),
        in: testCatalog
    )
}

/// Lays out a screen on the bundled catalog.
func layout(
    _ id: String,
    _ fold: FoldState = .flat,
    _ orientation: Orientation = .portrait,
    screen: ScreenLayout = .overlay,
    window: Size? = nil,
    keyboard: Double = 0,
    tags: Int = 0,
    focused: Bool = false,
    sheet: Bool = false,
    toast: Bool = false,
    markers: [MapMarker] = OfflineLayoutRequest.sampleMarkers,
    liveActivity: LiveActivityContent? = nil,
    measurer: any TextMeasurer = ApproximateTextMeasurer(),
    os: OSVersion = .newest,
    buttons: [ScreenButton] = ScreenButton.allCases
) throws -> LayoutResult {
    let p = try posture(id, fold, orientation, window: window, keyboard: keyboard, os: os)
    return LayoutEngine.layout(
        LayoutInput(
            posture: p,
            screen: screen,
            tags: tags,
            textFieldFocused: focused,
            markers: markers,
            showSheet: sheet,
            showToast: toast,
            liveActivity: liveActivity,
            buttons: buttons,
            measurer: measurer
        )
    )
}

/// A measurer with a fixed advance per character, to test truncation logic independently of any font.
struct FixedAdvanceMeasurer: TextMeasurer {
    var advance: Double
    var fontDescription: String { "fixed \(advance) pt per character" }
    func measure(_ text: String, font: FontSpec) -> TextExtent {
        TextExtent(width: Double(text.count) * advance, lineHeight: font.size * 1.2)
    }
}
