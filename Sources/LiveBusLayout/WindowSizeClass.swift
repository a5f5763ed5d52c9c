/// Material window size class on one axis (Jetpack WindowManager `WindowWidthSizeClass` /
/// `WindowHeightSizeClass`), computed from the same window as Apple's size classes.
///
/// Breakpoints, lower bounds inclusive: width compact < 600 dp ≤ medium < 840 dp ≤ expanded; height compact <
/// 480 dp ≤ medium < 900 dp ≤ expanded. On Apple devices the window is in points and the class is informative
/// (Apple's own size classes decide there).
///
/// - Note: Source: `androidx/androidx@12fc14420d6281f87188333f16dfeb3a16b14bf2
///   window/window-core/src/commonMain/kotlin/androidx/window/core/layout/WindowSizeClass.kt`
///   (`WIDTH_DP_MEDIUM_LOWER_BOUND = 600`, `WIDTH_DP_EXPANDED_LOWER_BOUND = 840`, `HEIGHT_DP_MEDIUM_LOWER_BOUND = 480`,
///   `HEIGHT_DP_EXPANDED_LOWER_BOUND = 900`, `>=` bucketing); reference/posture-and-devices.md §1.2.
public enum WindowSizeClass: String, Codable, Sendable, CaseIterable, Comparable {
    /// Width < 600 dp, height < 480 dp.
    case compact
    /// Width 600 ..< 840 dp, height 480 ..< 900 dp.
    case medium
    /// Width ≥ 840 dp, height ≥ 900 dp.
    case expanded

    /// Width at or above which the class is medium (dp).
    public static let widthMediumFrom = 600.0
    /// Width at or above which the class is expanded (dp).
    public static let widthExpandedFrom = 840.0
    /// Height at or above which the class is medium (dp).
    public static let heightMediumFrom = 480.0
    /// Height at or above which the class is expanded (dp).
    public static let heightExpandedFrom = 900.0

    /// The width class of a window `dp` wide.
    ///
    /// - Parameter dp: window width in dp (points on Apple devices).
    /// - Returns: compact, medium or expanded.
    public static func width(_ dp: Double) -> WindowSizeClass {
        dp >= widthExpandedFrom ? .expanded : dp >= widthMediumFrom ? .medium : .compact
    }

    /// The height class of a window `dp` tall.
    ///
    /// - Parameter dp: window height in dp (points on Apple devices).
    /// - Returns: compact, medium or expanded.
    public static func height(_ dp: Double) -> WindowSizeClass {
        dp >= heightExpandedFrom ? .expanded : dp >= heightMediumFrom ? .medium : .compact
    }

    /// Order: compact < medium < expanded.
    public static func < (a: WindowSizeClass, b: WindowSizeClass) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// Whether a window shows two panes (map and card column side by side), decided by the platform's own rule.
///
/// - Android (Jetpack): a separating fold splits the window in two along it; otherwise two panes only when the
///   width class is expanded and the height class is not compact (medium width keeps one pane,
///   `calculatePaneScaffoldDirective`: Compact/Medium → 1 partition, Expanded → 2; Surface Duo `WindowState`
///   "large" = Expanded width and non-Compact height).
/// - Apple: regular horizontal size class (and, on an unfolded iOS foldable, ArrangementView from iOS 27.1).
///
/// - Note: Source: `androidx/androidx@a9b06aaf32dbcf83aa12e3f8185a109d14fbe8e9
///   compose/material3/adaptive/adaptive-layout/src/commonMain/kotlin/androidx/compose/material3/adaptive/layout/PaneScaffoldDirective.kt`;
///   `microsoft/surface-duo-compose-sdk@17769ca638e5cab086e0532f407585bdeb0fd26e
///   WindowState/library/src/main/java/com/microsoft/device/dualscreen/windowstate/WindowState.kt`; Apple HIG Layout
///   (size classes); reference/posture-and-devices.md §1.3, §1.4.
public enum TwoPaneRule {
    /// The decision and why.
    ///
    /// - Parameters:
    ///   - platform: `ios` or `android`.
    ///   - window: the window size (dp on Android, points on Apple devices).
    ///   - horizontalSizeClass: Apple's width size class of the same window.
    ///   - separatingFold: the axis of a separating fold or hinge crossing the window, if any.
    /// - Returns: true for two panes, with the rule and numbers that decided it.
    public static func decide(
        platform: String,
        window: Size,
        horizontalSizeClass: SizeClass,
        separatingFold: HingeSpec.Axis?
    ) -> (twoPane: Bool, reason: String) {
        guard platform == "android" else {
            return (
                horizontalSizeClass == .regular,
                horizontalSizeClass == .regular
                    ? "Apple rule: regular width size class" : "Apple rule: compact width size class"
            )
        }
        let w = WindowSizeClass.width(window.width)
        let h = WindowSizeClass.height(window.height)
        let classes =
            "\(format(window.width))x\(format(window.height)) dp is \(w.rawValue) width x \(h.rawValue) height"
        if let separatingFold {
            return (true, "Jetpack rule: a separating \(separatingFold.rawValue) fold splits the window (\(classes))")
        }
        if w == .expanded && h != .compact {
            return (true, "Jetpack rule: \(classes): two panes")
        }
        let why = w != .expanded ? "width is only \(w.rawValue)" : "height is compact"
        return (false, "Jetpack rule: \(classes): one pane (\(why))")
    }
}
