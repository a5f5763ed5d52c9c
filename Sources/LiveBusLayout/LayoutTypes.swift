/// What a screen declares about its own layout; sheets and toasts that know nothing of the screen align by it.
///
/// - Note: Source: field report 000 (screenLayout: `.column` 본문 최대 520pt 중앙 정렬 (default), `.fullScreen`
///   intro/splash, `.overlay` map in the background, sheets and toasts in the same column).
public enum ScreenLayout: String, Codable, Sendable, CaseIterable {
    /// Content at most 520 pt wide, centred.
    case column
    /// The screen uses everything.
    case fullScreen
    /// The map in the background, overlay cards on top.
    case overlay
}

/// How a map screen arranges its cards against the focus area.
///
/// - Note: Source: field report 000 ("vertical 정렬": cards below the focus area; "horizontal 정렬": cards beside it).
public enum Arrangement: String, Codable, Sendable {
    /// Cards at the bottom, focus area above them (compact width).
    case vertical
    /// Map on the left, cards in a column on the right (regular width).
    case horizontal
    /// Tabletop (a horizontal fold, half-opened): the map's focus area is the whole top sub-screen, the card
    /// column the whole bottom one (LiveBus issue 18; Samsung Flex mode; Jetpack tabletop = two vertical
    /// partitions).
    case tabletop
    /// A `column` screen.
    case column
    /// A `fullScreen` screen.
    case fullScreen
}

/// The reading direction the screen is laid out for.
///
/// - Note: Source: UIKit `UIUserInterfaceLayoutDirection`, Android `View.LAYOUT_DIRECTION_RTL`; LiveBus issue 18.
public enum LayoutDirection: String, Codable, Sendable, CaseIterable {
    /// Left to right: map on the left, cards on the right.
    case ltr
    /// Right to left: the arrangement mirrored (map on the right, cards on the left; back at the right end of the
    /// header, close at the left end of the field's row); the hardware (safe areas, hinge, vertical bar, Dynamic
    /// Island) stays where it is.
    case rtl
}

/// What a named rect is.
public enum RectRole: String, Codable, Sendable {
    /// The window.
    case window
    /// The window minus the safe-area insets.
    case safeArea
    /// The map view (background of overlay screens).
    case map
    /// The map screen's header.
    case header
    /// An overlay card.
    case card
    /// The column that holds cards, sheets and toasts on overlay screens (a guide, covers nothing).
    case cardColumn
    /// A map button (my location, reserve…).
    case mapButton
    /// The pin fixed at the focus area's centre.
    case pin
    /// A bottom sheet.
    case sheet
    /// The text field inside the sheet.
    case textField
    /// The tag list inside the sheet (scrolls when the sheet is clamped).
    case tags
    /// A toast.
    case toast
    /// The software keyboard (system UI).
    case keyboard
    /// The content column of a `column` screen.
    case column
    /// The content of a `fullScreen` screen.
    case content
    /// Where the map keeps markers visible: the map minus everything covering it.
    case focusArea
    /// The focus area inset by ratios of its own size; the camera fits markers into it.
    case fittingArea
    /// The hinge or fold band.
    case hinge
    /// The reserved (division) region.
    case reservedRegion
    /// The Dynamic Island cutout.
    case dynamicIsland
    /// A Live Activity box (status box, timer box).
    case box
    /// A measured line of text in a Live Activity presentation.
    case text
    /// A progress bar.
    case progress
    /// An icon.
    case icon
    /// A button drawn inside the screen (back, close, primary action); name `button.<kind>`.
    case button
    /// The system toolbar on a vertical edge (system UI, in the safe-area inset).
    case toolbar
    /// A button placed in the vertical-edge toolbar; name `toolbar.<kind>`.
    case toolbarItem
    /// A modal dialog (an alert of given size), placed wholly in the card column's sub-screen; what lies under
    /// it is inert while it shows.
    case dialog
}

/// A screen button that the vertical-edge toolbar takes over on iPhone Duo from iOS 27.1.
///
/// - Note: Source: field report 000 ("툴바가 화면 측면에 세로로 배치되면, 뒤로 가기와 같은 버튼은 화면 내부가 아닌
///   시스템 툴바에 위치해야 합니다"; `BackButton(...).adaptiveStyle(.back, placement: .cancellationAction)`); LiveBus
///   issue 11 (back, close, the primary action).
public enum ScreenButton: String, Codable, Sendable, CaseIterable {
    /// Back: in the map header (overlay) or at the top of the column (column and full-screen screens).
    case back
    /// Close: at the top trailing corner of the sheet, when a sheet is shown.
    case close
    /// The primary action: at the bottom of the card (overlay) or of the column (column and full-screen screens).
    case primaryAction

    /// Where the toolbar puts it: back → cancellation action (field report 000); close dismisses the sheet, also a
    /// cancellation action; the primary action → primary action (SwiftUI `ToolbarItemPlacement`).
    public var placement: ToolbarPlacement {
        switch self {
        case .back, .close: .cancellationAction
        case .primaryAction: .primaryAction
        }
    }
}

/// A toolbar item placement (SwiftUI `ToolbarItemPlacement` names).
///
/// - Note: Source: https://developer.apple.com/documentation/swiftui/toolbaritemplacement ; field report 000
///   (`placement: .cancellationAction`).
public enum ToolbarPlacement: String, Codable, Sendable, CaseIterable {
    /// Cancels or leaves (back, close); first in the bar, below the status cluster.
    case cancellationAction
    /// The screen's primary action; after the cancellation actions.
    case primaryAction
}

/// One button in the vertical-edge toolbar.
public struct ToolbarItem: Codable, Sendable, Equatable {
    /// `toolbar.<button>`, e.g. `toolbar.back`.
    public var name: String
    /// Which screen button moved here.
    public var button: ScreenButton
    /// Its placement.
    public var placement: ToolbarPlacement
    /// Window coordinates, points.
    public var rect: Rect
}

/// The system toolbar on a vertical edge of the screen, with the buttons moved into it.
///
/// - Note: Source: field report 000 (iOS 27 분기: toolbar on the vertical edge, buttons move to it);
///   https://developer.apple.com/documentation/swiftui/environmentvalues/toolbarverticaledge (iOS 27.1);
///   https://dev.classmethod.jp/en/articles/ios27-1-iphone-duo-vertical-bar/ (outer display and inner landscape).
public struct Toolbar: Codable, Sendable, Equatable {
    /// The side edge it runs along.
    public var edge: VerticalBarSpec.Edge
    /// The bar, window coordinates (points).
    public var rect: Rect
    /// Its items, top to bottom: cancellation actions, then primary actions.
    public var items: [ToolbarItem]
}

/// A rect with a name, in window coordinates (points).
public struct NamedRect: Codable, Sendable, Equatable {
    /// Unique name, e.g. `card`, `mapButton.1`.
    public var name: String
    /// What it is.
    public var role: RectRole
    /// Window coordinates, points, rounded to 1/100.
    public var rect: Rect
    /// True for elements people touch or read (buttons, cards, sheets, toasts, text fields, column content).
    public var interactive: Bool
    /// True when it covers the map (the focus area must avoid it).
    public var coversMap: Bool
    /// The text drawn in it, for measured text (Live Activity presentations); nil otherwise.
    public var text: String?
    /// The rect this one is drawn inside by design (a button in the header, the text field in the sheet), by name;
    /// nil when it stands alone. Only a declared container may overlap an interactive rect (invariant
    /// `noInteractivePartialOverlap`); JSON key `container`, absent when nil.
    public var container: String?

    /// Creates a named rect.
    public init(
        name: String,
        role: RectRole,
        rect: Rect,
        interactive: Bool,
        coversMap: Bool,
        text: String? = nil,
        container: String? = nil
    ) {
        self.name = name
        self.role = role
        self.rect = rect
        self.interactive = interactive
        self.coversMap = coversMap
        self.text = text
        self.container = container
    }
}

/// The outcome of one checked invariant.
public struct InvariantOutcome: Codable, Sendable, Equatable {
    /// Invariant name, e.g. `noInteractiveAcrossReservedRegion`.
    public var name: String
    /// True when it held.
    public var holds: Bool
    /// What was checked, or what broke it (names and rects).
    public var detail: String
    /// Names of the rects that broke it (drawn in red in the SVG); nil when it held. JSON key `offenders`.
    public var offenders: [String]?

    /// Creates an outcome.
    public init(name: String, holds: Bool, detail: String, offenders: [String]? = nil) {
        self.name = name
        self.holds = holds
        self.detail = detail
        self.offenders = offenders
    }
}

/// Content of a Live Activity as the client shows it.
public struct LiveActivityContent: Codable, Sendable, Equatable {
    /// Short status, e.g. `조리 중`, `배달 중` (compact leading, one line).
    public var statusText: String
    /// Status icon name (minimal presentation), e.g. `bicycle`.
    public var statusSymbol: String
    /// Countdown text, e.g. `1:27`.
    public var timerText: String
    /// Progress 0…1.
    public var progress: Double
    /// Last confirmed time, e.g. `마지막 확인 12:03`.
    public var lastConfirmedText: String
    /// Lines shown when the content is stale, e.g. `마지막 예상 기준`, `업데이트를 기다리고 있어요`.
    public var staleLines: [String]
    /// The compact boxes and fonts from the app's activity schema; `nil`: ``LiveActivityBoxes/fieldReport``.
    public var boxes: LiveActivityBoxes? = nil

    /// Creates Live Activity content.
    public init(
        statusText: String,
        statusSymbol: String,
        timerText: String,
        progress: Double,
        lastConfirmedText: String,
        staleLines: [String] = []
    ) {
        self.statusText = statusText
        self.statusSymbol = statusSymbol
        self.timerText = timerText
        self.progress = progress
        self.lastConfirmedText = lastConfirmedText
        self.staleLines = staleLines
    }
}

/// A Live Activity presentation.
public enum PresentationKind: String, Codable, Sendable, CaseIterable {
    /// Dynamic Island compact, leading side (status text).
    case compactLeading
    /// Dynamic Island compact, trailing side (timer).
    case compactTrailing
    /// Dynamic Island minimal (status icon).
    case minimal
    /// Dynamic Island expanded.
    case expanded
    /// Lock Screen.
    case lockScreen
}

/// One laid-out presentation. Dynamic Island presentations are in portrait screen coordinates; the Lock Screen
/// presentation is in its own coordinates (origin at its top-left).
public struct Presentation: Codable, Sendable, Equatable {
    /// Which presentation.
    public var kind: PresentationKind
    /// Its frame (points).
    public var frame: Rect
    /// Its elements (status, timer, progress, lastConfirmed, stale.N, icon), same coordinates as `frame`.
    public var elements: [NamedRect]
}

/// Text that does not fit its box: reported, never hidden.
public struct Truncation: Codable, Sendable, Equatable {
    /// Presentation or screen element, e.g. `compactTrailing.timer`.
    public var element: String
    /// The text.
    public var text: String
    /// Measured width (points), or needed height for a presentation that outgrows its maximum.
    public var measured: Double
    /// Available width (points), or the maximum height.
    public var available: Double
    /// `width` or `height`.
    public var axis: String
    /// The box the text was measured against, in its presentation's coordinates (points); nil when not known.
    public var box: Rect? = nil
}

/// Tunable sizes of the map screen elements, in points.
public struct LayoutMetrics: Codable, Sendable, Equatable {
    /// Outer margin.
    public var margin: Double = 16
    /// Gap between stacked elements.
    public var gap: Double = 8
    /// Header height.
    public var headerHeight: Double = 56
    /// Overlay card content height.
    public var cardHeight: Double = 180
    /// Toast height.
    public var toastHeight: Double = 48
    /// Map button side.
    public var mapButtonSize: Double = 44
    /// Number of map buttons.
    public var mapButtonCount: Int = 2
    /// Pin width and height.
    public var pinSize = Size(width: 24, height: 36)
    /// Column screens: content width cap (field report 000: 520 pt).
    public var columnMaxWidth: Double = 520
    /// Card column width bounds in the horizontal arrangement.
    public var cardColumnMinWidth: Double = 280
    /// Card column width upper bound in the horizontal arrangement.
    public var cardColumnMaxWidth: Double = 400
    /// Card column share of the region width in the horizontal arrangement.
    public var cardColumnShare: Double = 0.4
    /// Narrowest map beside the card column for the horizontal arrangement.
    public var minimumMapWidth: Double = 200
    /// Smallest side of a split (either side of the reserved region) the engine uses.
    public var minimumSideExtent: Double = 200
    /// Share of the column region kept for the focus area in the vertical arrangement.
    public var minimumFocusShare: Double = 0.15
    /// Focus height kept in the vertical arrangement when a sheet with a focused field crowds the window.
    public var crowdedFocusHeight: Double = 16
    /// Sheet text field height (field report 004 measures it; T8 uses 52).
    public var textFieldHeight: Double = 52
    /// Padding added under the field (field report 004: `geometry.size.height + 16`).
    public var textFieldPadding: Double = 16
    /// VStack spacing between tags and field, added only when there is a tag (field report 004: 8).
    public var tagsSpacing: Double = 8
    /// Tag chip size.
    public var tagChipSize = Size(width: 88, height: 32)
    /// Space between chips and rows.
    public var tagChipSpacing: Double = 8
    /// Space left above the largest detent on column and full-screen sheets.
    public var sheetTopGap: Double = 10
    /// Fitting-area insets as ratios of the focus area (field report 000: top 0.03, left 0.1, bottom 0.03, right 0.1).
    public var fittingRatios = EdgeInsets(top: 0.03, left: 0.1, bottom: 0.03, right: 0.1)
    /// Side of a screen or toolbar button (HIG minimum hit target 44 pt).
    public var buttonSize: Double = 44
    /// Height of the primary action button.
    public var primaryButtonHeight: Double = 50
    /// Top of the vertical bar kept for the status cluster before the first toolbar item [estimate].
    public var toolbarStatusHeight: Double = 44
    /// Smallest touch target on Apple platforms, points (HIG: "hit targets of at least 44x44 pt").
    public var appleMinimumTouchTarget: Double = 44
    /// Smallest touch target on Android, dp (Accessibility Test Framework `TouchTargetSizeCheck`: 48x48 dp).
    public var materialMinimumTouchTarget: Double = 48
    /// Widest sheet on a regular-width (Apple) or medium-or-wider (Android) window: iOS form sheet about 580 pt
    /// [3rd-party, https://fudong.dev/en/blog/swiftui-bottomsheet-ipad-form-factor].
    public var appleSheetMaxWidth: Double = 580
    /// Widest bottom sheet on Android: `BottomSheetDefaults.SheetMaxWidth = 640.dp` [official, androidx
    /// `compose/material3/material3/src/commonMain/kotlin/androidx/compose/material3/SheetDefaults.kt`].
    public var materialSheetMaxWidth: Double = 640

    /// The standard metrics.
    public static let standard = LayoutMetrics()

    /// The platform's smallest touch target: 48 dp on `android`, else 44 pt.
    ///
    /// - Parameter platform: the catalog platform (`ios` or `android`).
    /// - Returns: the side in points (dp on Android).
    /// - Note: Source: Apple HIG (44x44 pt); Accessibility Test Framework for Android `TouchTargetSizeCheck` (48x48
    ///   dp), reference/durability-federation-apns.md "Touch targets and window classes".
    public func minimumTouchTarget(platform: String) -> Double {
        platform == "android" ? materialMinimumTouchTarget : appleMinimumTouchTarget
    }

    /// The platform's widest sheet: 640 dp on `android`, else 580 pt.
    ///
    /// - Parameter platform: the catalog platform (`ios` or `android`).
    /// - Returns: the width in points (dp on Android).
    public func sheetMaxWidth(platform: String) -> Double {
        platform == "android" ? materialSheetMaxWidth : appleSheetMaxWidth
    }

    /// These metrics with every button at least the platform's touch target.
    func raisedToTouchTarget(platform: String) -> LayoutMetrics {
        var m = self
        let side = minimumTouchTarget(platform: platform)
        m.buttonSize = max(m.buttonSize, side)
        m.mapButtonSize = max(m.mapButtonSize, side)
        m.primaryButtonHeight = max(m.primaryButtonHeight, side)
        return m
    }

    /// Creates the standard metrics; change fields as needed.
    public init() {}
}

/// Everything the engine lays out.
public struct LayoutInput: Sendable {
    /// The resolved posture (device, window, safe area, size classes, reserved region, keyboard).
    public var posture: ResolvedPosture
    /// The screen's declared layout.
    public var screen: ScreenLayout
    /// Number of tags in the tag editor sheet.
    public var tags: Int
    /// True when the sheet's text field has focus (the sheet then sits above the keyboard).
    public var textFieldFocused: Bool
    /// Order markers (store, customer, rider, route points).
    public var markers: [MapMarker]
    /// Show the tag editor sheet.
    public var showSheet: Bool
    /// Show a toast.
    public var showToast: Bool
    /// Live Activity content, laid out when the screen has a Dynamic Island or Lock Screen sizes.
    public var liveActivity: LiveActivityContent?
    /// The screen's buttons (back, close, primary action); the vertical-edge toolbar takes them over where it
    /// exists. `close` is drawn only with a sheet.
    public var buttons: [ScreenButton]
    /// Element sizes.
    public var metrics: LayoutMetrics
    /// Text measurer for Live Activity text.
    public var measurer: any TextMeasurer
    /// Reading direction (``LayoutDirection``); default left to right.
    public var layoutDirection: LayoutDirection = .ltr
    /// A modal dialog of this size (points) to place, or nil.
    public var dialog: Size?

    /// Creates a layout input.
    public init(
        posture: ResolvedPosture,
        screen: ScreenLayout,
        tags: Int = 0,
        textFieldFocused: Bool = false,
        markers: [MapMarker] = [],
        showSheet: Bool = false,
        showToast: Bool = false,
        liveActivity: LiveActivityContent? = nil,
        buttons: [ScreenButton] = ScreenButton.allCases,
        metrics: LayoutMetrics = .standard,
        measurer: any TextMeasurer = ApproximateTextMeasurer()
    ) {
        self.buttons = buttons
        self.posture = posture
        self.screen = screen
        self.tags = tags
        self.textFieldFocused = textFieldFocused
        self.markers = markers
        self.showSheet = showSheet
        self.showToast = showToast
        self.liveActivity = liveActivity
        self.metrics = metrics
        self.measurer = measurer
    }
}

/// The layout: named rects, the arrangement and why, the camera, Live Activity presentations, truncations and
/// the invariants checked.
public struct LayoutResult: Codable, Sendable, Equatable {
    /// Catalog device id.
    public var deviceID: String
    /// Device display name.
    public var deviceName: String
    /// Active screen name.
    public var screenName: String
    /// Fold state.
    public var foldState: FoldState
    /// Orientation.
    public var orientation: Orientation
    /// The screen's declared layout.
    public var screenLayout: ScreenLayout
    /// Width size class.
    public var horizontalSizeClass: SizeClass
    /// Height size class.
    public var verticalSizeClass: SizeClass
    /// Material width class of the same window (``WindowSizeClass``).
    public var windowWidthClass: WindowSizeClass
    /// Material height class of the same window (``WindowSizeClass``).
    public var windowHeightClass: WindowSizeClass
    /// The panes, window coordinates (points): one, or two beside each other (map and card column) or above
    /// each other (tabletop), in reading order (leading first).
    public var panes: [Rect]
    /// The reading direction it was laid out for.
    public var layoutDirection: LayoutDirection = .ltr
    /// Named rects in window coordinates (points), drawing order.
    public var rects: [NamedRect]
    /// Chosen arrangement.
    public var arrangement: Arrangement
    /// Why (the OS rule first when one applies, then size classes, reserved region, sizes).
    public var reason: String
    /// The OS version the layout was made for.
    public var osVersion: OSVersion
    /// The OS rule that decided the arrangement on an unfolded iOS foldable, e.g. `iOS 26.4 < 27.1: ArrangementView
    /// unavailable, cards layered over the full-screen map (fallback)`; nil where no OS rule applies.
    public var osRule: String?
    /// The vertical-edge toolbar and the buttons moved into it; nil where the device has no vertical bar in this
    /// orientation, the window does not reach it, or the OS predates it.
    public var toolbar: Toolbar?
    /// Map camera fitted to the markers (overlay screens with markers).
    public var camera: MapCamera?
    /// Tag editor sheet: content height (field report 004 formula), points.
    public var sheetContentHeight: Double?
    /// Tag editor sheet: the largest detent the window allows, points.
    public var sheetLargestDetent: Double?
    /// True when the sheet was clamped and its content scrolls.
    public var sheetScrolls: Bool
    /// Live Activity presentations.
    public var presentations: [Presentation]
    /// Text that does not fit (reported, not hidden).
    public var truncations: [Truncation]
    /// Invariants checked and their outcome.
    public var invariants: [InvariantOutcome]
    /// The text measurer used.
    public var textMeasurer: String

    /// The rect with this name, if present.
    public func rect(_ name: String) -> Rect? {
        rects.first { $0.name == name }?.rect
    }

    /// The rects with this role.
    public func rects(_ role: RectRole) -> [NamedRect] {
        rects.filter { $0.role == role }
    }

    /// The invariants that failed.
    public var failedInvariants: [InvariantOutcome] { invariants.filter { !$0.holds } }
}
