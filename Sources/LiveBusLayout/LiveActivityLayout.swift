import Foundation

/// Live Activity presentations: Dynamic Island compact leading/trailing, minimal, expanded, and the Lock Screen.
///
/// Boxes: compact leading holds the status text in a 56×26 pt box (one line); compact trailing holds the timer
/// in a 44 pt wide box, trailing-aligned, monospaced digits; minimal shows the status icon only; expanded shows
/// status, timer, progress and last confirmed time; the Lock Screen adds the stale lines. Text is measured with
/// the input's ``TextMeasurer`` and a ``Truncation`` is reported when it does not fit.
///
/// - Note: Source: field report 001 (56×26 pt status, 44 pt trailing timer with `monospacedDigit()`,
///   `frame(width: 44, alignment: .trailing)`, minimal = status icon, stale lines on the Lock Screen);
///   HIG Live Activities Specifications (compact 52.33/62.33 × 36.67, minimal 36.67–45, expanded and Lock Screen
///   84–160 pt high, 14 pt Lock Screen margin), `live-activities.md` §4.
public enum LiveActivityLayout {
    /// Status text box in the compact leading region (field report 001).
    public static let statusBox = Size(width: 56, height: 26)
    /// Timer box width in the compact trailing region (field report 001).
    public static let timerBoxWidth = 44.0
    /// Lock Screen margin (HIG: 14 pt).
    public static let lockScreenMargin = 14.0
    /// Fonts (engine choice; Apple does not publish the Live Activity fonts).
    public static let compactStatusFont = FontSpec(size: 12, weight: .semibold)
    /// Compact timer font.
    public static let compactTimerFont = FontSpec(size: 15, weight: .semibold, monospacedDigits: true)
    /// Expanded and Lock Screen headline font.
    public static let headlineFont = FontSpec(size: 17, weight: .semibold)
    /// Expanded and Lock Screen timer font.
    public static let timerFont = FontSpec(size: 17, weight: .semibold, monospacedDigits: true)
    /// Footnote font (last confirmed time, stale lines).
    public static let footnoteFont = FontSpec(size: 13)

    /// Lays out every presentation the active screen supports.
    ///
    /// - Parameters:
    ///   - content: the Live Activity content; nil returns nothing.
    ///   - posture: the resolved posture (its screen's Dynamic Island and Live Activity sizes).
    ///   - measurer: measures each string.
    /// - Returns: presentations (Dynamic Island ones in portrait screen coordinates, the Lock Screen one at
    ///   origin 0,0) and the truncations found.
    public static func layout(
        _ content: LiveActivityContent?,
        posture: ResolvedPosture,
        measurer: any TextMeasurer
    ) -> ([Presentation], [Truncation]) {
        guard let content,
            let screen = posture.device.screen(for: posture.posture.foldState),
            let spec = screen.liveActivity
        else { return ([], []) }
        var presentations: [Presentation] = []
        var truncations: [Truncation] = []
        let boxes = content.boxes ?? .fieldReport
        let statusBox = Size(width: boxes.statusWidth, height: Self.statusBox.height)
        let timerBoxWidth = boxes.timerWidth
        let compactStatusFont = boxes.statusFont
        let compactTimerFont = boxes.timerFont
        let expandedStatusFont = boxes.expandedStatusFont ?? headlineFont
        let expandedTimerFont = boxes.expandedTimerFont ?? timerFont
        let lockStatusFont = boxes.lockScreenStatusFont ?? headlineFont
        let lockTimerFont = boxes.lockScreenTimerFont ?? timerFont

        func text(
            _ element: String,
            _ string: String,
            _ font: FontSpec,
            box: Rect,
            trailing: Bool = false
        ) -> NamedRect {
            let extent = measurer.measure(string, font: font)
            if extent.width > box.width + 0.01 {
                truncations.append(
                    Truncation(
                        element: element,
                        text: string,
                        measured: extent.width.roundedToHundredths,
                        available: box.width.roundedToHundredths,
                        axis: "width"
                    )
                )
            }
            let width = min(extent.width, box.width)
            let height = min(extent.lineHeight, box.height)
            let x = trailing ? box.maxX - width : box.minX
            return NamedRect(
                name: element,
                role: .text,
                rect: Rect(x: x, y: box.midY - height / 2, width: width, height: height).rounded,
                interactive: false,
                coversMap: false,
                text: string
            )
        }

        if let island = screen.dynamicIsland, let leading = spec.compactLeading, let trailing = spec.compactTrailing {
            let cutout = island.cutout
            let height = leading.height
            let top = cutout.midY - height / 2
            // Compact leading: at least the published region, widened to the 56 pt status box, snug to the camera.
            // A box wider than the region the system gives overflows it: reported (issue 16), drawn widened.
            for (element, box, region, text) in [
                ("compactLeading.statusBox", statusBox.width, leading.width, content.statusText),
                ("compactTrailing.timerBox", timerBoxWidth, trailing.width, content.timerText),
            ] where box > region + 0.01 {
                truncations.append(
                    Truncation(
                        element: element,
                        text: text,
                        measured: box.roundedToHundredths,
                        available: region.roundedToHundredths,
                        axis: "width"
                    )
                )
            }
            let leadWidth = max(leading.width, statusBox.width)
            let leadFrame = Rect(x: cutout.minX - leadWidth, y: top, width: leadWidth, height: height)
            let statusFrame = Rect(
                x: leadFrame.maxX - statusBox.width,
                y: leadFrame.midY - statusBox.height / 2,
                width: statusBox.width,
                height: statusBox.height
            )
            presentations.append(
                Presentation(
                    kind: .compactLeading,
                    frame: leadFrame.rounded,
                    elements: [
                        NamedRect(
                            name: "statusBox",
                            role: .box,
                            rect: statusFrame.rounded,
                            interactive: false,
                            coversMap: false
                        ),
                        text("compactLeading.status", content.statusText, compactStatusFont, box: statusFrame),
                    ]
                )
            )
            let trailWidth = max(trailing.width, timerBoxWidth)
            let trailFrame = Rect(x: cutout.maxX, y: top, width: trailWidth, height: height)
            let timerFrame = Rect(
                x: trailFrame.maxX - timerBoxWidth,
                y: trailFrame.minY,
                width: timerBoxWidth,
                height: trailFrame.height
            )
            presentations.append(
                Presentation(
                    kind: .compactTrailing,
                    frame: trailFrame.rounded,
                    elements: [
                        NamedRect(
                            name: "timerBox",
                            role: .box,
                            rect: timerFrame.rounded,
                            interactive: false,
                            coversMap: false
                        ),
                        text(
                            "compactTrailing.timer",
                            content.timerText,
                            compactTimerFont,
                            box: timerFrame,
                            trailing: true
                        ),
                    ]
                )
            )
            if let minimal = spec.minimal {
                let frame = Rect(x: cutout.maxX, y: top, width: minimal.width, height: minimal.height)
                presentations.append(
                    Presentation(
                        kind: .minimal,
                        frame: frame.rounded,
                        elements: [
                            NamedRect(
                                name: "icon:\(content.statusSymbol)",
                                role: .icon,
                                rect: frame.insetBy(dx: 6, dy: 6).rounded,
                                interactive: false,
                                coversMap: false
                            )
                        ]
                    )
                )
            }
            if let expanded = spec.expanded {
                let width = expanded.width
                let frame0 = Rect(x: (screen.portrait.width - width) / 2, y: cutout.minY, width: width, height: 0)
                let m = lockScreenMargin
                let side = (width - cutout.width) / 2 - m - 4
                let row = Rect(x: frame0.minX + m, y: frame0.minY, width: side, height: height)
                let trailingRow = Rect(x: frame0.maxX - m - side, y: frame0.minY, width: side, height: height)
                var elements = [
                    text("expanded.status", content.statusText, expandedStatusFont, box: row),
                    text("expanded.timer", content.timerText, expandedTimerFont, box: trailingRow, trailing: true),
                ]
                let progress = Rect(x: frame0.minX + m, y: row.maxY + 12, width: width - 2 * m, height: 6)
                elements.append(
                    NamedRect(
                        name: "expanded.progress",
                        role: .progress,
                        rect: progress.rounded,
                        interactive: false,
                        coversMap: false
                    )
                )
                let last = Rect(x: frame0.minX + m, y: progress.maxY + 8, width: width - 2 * m, height: 18)
                elements.append(text("expanded.lastConfirmed", content.lastConfirmedText, footnoteFont, box: last))
                let needed = last.maxY + m - frame0.minY
                let frame = Rect(
                    x: frame0.minX,
                    y: frame0.minY,
                    width: width,
                    height: clampHeight(needed, expanded, "expanded", &truncations)
                )
                presentations.append(Presentation(kind: .expanded, frame: frame.rounded, elements: elements))
            }
        }

        // Lock Screen.
        let ls = spec.lockScreen
        let m = lockScreenMargin
        let inner = ls.width - 2 * m
        let statusRow = Rect(x: m, y: m, width: inner * 0.6, height: 22)
        let timerRow = Rect(x: m + inner * 0.6 + 8, y: m, width: inner * 0.4 - 8, height: 22)
        var elements = [
            text("lockScreen.status", content.statusText, lockStatusFont, box: statusRow),
            text("lockScreen.timer", content.timerText, lockTimerFont, box: timerRow, trailing: true),
        ]
        let progress = Rect(x: m, y: statusRow.maxY + 8, width: inner, height: 6)
        elements.append(
            NamedRect(
                name: "lockScreen.progress",
                role: .progress,
                rect: progress.rounded,
                interactive: false,
                coversMap: false
            )
        )
        var y = progress.maxY + 8
        elements.append(
            text(
                "lockScreen.lastConfirmed",
                content.lastConfirmedText,
                footnoteFont,
                box: Rect(x: m, y: y, width: inner, height: 18)
            )
        )
        y += 18
        let maxHeight = ls.maxHeight ?? .infinity
        for (i, line) in content.staleLines.enumerated() {
            y += 4
            let box = Rect(x: m, y: y, width: inner, height: 18)
            elements.append(text("lockScreen.stale.\(i + 1)", line, footnoteFont, box: box))
            if box.maxY + m > maxHeight + 0.01 {
                truncations.append(
                    Truncation(
                        element: "lockScreen.stale.\(i + 1)",
                        text: line,
                        measured: (box.maxY + m).roundedToHundredths,
                        available: maxHeight,
                        axis: "height"
                    )
                )
            }
            y += 18
        }
        let height = min(max(y + m, ls.height), maxHeight)
        presentations.append(
            Presentation(
                kind: .lockScreen,
                frame: Rect(x: 0, y: 0, width: ls.width, height: height).rounded,
                elements: elements
            )
        )
        return (presentations, truncations)
    }

    private static func clampHeight(
        _ needed: Double,
        _ size: PresentationSize,
        _ element: String,
        _ truncations: inout [Truncation]
    ) -> Double {
        let maxHeight = size.maxHeight ?? .infinity
        if needed > maxHeight + 0.01 {
            truncations.append(
                Truncation(
                    element: element,
                    text: "",
                    measured: needed.roundedToHundredths,
                    available: maxHeight,
                    axis: "height"
                )
            )
        }
        return min(max(needed, size.height), maxHeight)
    }
}

/// The compact leading status box and compact trailing timer box, with their fonts: the field report's by default,
/// or an app's activity schema presentation (`Protocol/ACTIVITY-SCHEMA.md`: `width`, `style`).
public struct LiveActivityBoxes: Codable, Sendable, Equatable {
    /// Status box width in the compact leading region, points.
    public var statusWidth: Double
    /// Timer box width in the compact trailing region, points.
    public var timerWidth: Double
    /// The status text's font.
    public var statusFont: FontSpec
    /// The timer's font (monospaced digits).
    public var timerFont: FontSpec
    /// The expanded presentation's status and timer fonts; `nil`: 17 pt semibold (``LiveActivityLayout``).
    public var expandedStatusFont: FontSpec? = nil
    /// The expanded presentation's timer font; `nil`: 17 pt semibold, monospaced digits.
    public var expandedTimerFont: FontSpec? = nil
    /// The lock screen's status font; `nil`: 17 pt semibold.
    public var lockScreenStatusFont: FontSpec? = nil
    /// The lock screen's timer font; `nil`: 17 pt semibold, monospaced digits.
    public var lockScreenTimerFont: FontSpec? = nil

    /// Creates boxes (points).
    public init(statusWidth: Double, timerWidth: Double, statusFont: FontSpec, timerFont: FontSpec) {
        self.statusWidth = statusWidth
        self.timerWidth = timerWidth
        self.statusFont = statusFont
        self.timerFont = timerFont
    }

    /// Field report 001: a 56 pt status box and a 44 pt timer box.
    public static let fieldReport = LiveActivityBoxes(
        statusWidth: LiveActivityLayout.statusBox.width,
        timerWidth: LiveActivityLayout.timerBoxWidth,
        statusFont: LiveActivityLayout.compactStatusFont,
        timerFont: LiveActivityLayout.compactTimerFont
    )

    /// The font of a SwiftUI text style at the default (Large) Dynamic Type size, or `nil` for an unknown name.
    /// - Parameters:
    ///   - style: A `Font.TextStyle` name (`caption`, `headline`, …).
    ///   - monospacedDigits: Tabular digits (timers).
    /// - Returns: The font: largeTitle 34, title 28, title2 22, title3 20, headline 17 semibold, body 17, callout 16,
    ///   subheadline 15, footnote 13, caption 12, caption2 11 pt.
    /// - Note: Source: https://developer.apple.com/design/human-interface-guidelines/typography#Specifications
    ///   (iOS Dynamic Type sizes, Large).
    public static func font(textStyle style: String, monospacedDigits: Bool = false) -> FontSpec? {
        let sizes: [String: (Double, FontWeight)] = [
            "largeTitle": (34, .regular), "title": (28, .regular), "title2": (22, .regular), "title3": (20, .regular),
            "headline": (17, .semibold), "body": (17, .regular), "callout": (16, .regular),
            "subheadline": (15, .regular), "footnote": (13, .regular), "caption": (12, .regular),
            "caption2": (11, .regular),
        ]
        guard let (size, weight) = sizes[style] else { return nil }
        return FontSpec(size: size, weight: weight, monospacedDigits: monospacedDigits)
    }
}

extension LiveActivityLayout {
    /// One line per text or box wider than its space: `overflow compactTrailing.timer "2:20:13": 55.2 pt in 44 pt`.
    /// - Parameter truncations: The layout's truncations.
    /// - Returns: The lines (empty when everything fits).
    public static func overflowLines(_ truncations: [Truncation]) -> [String] {
        truncations.map { t in
            "overflow \(t.element) \"\(t.text)\": \(t.measured) pt in \(t.available) pt (\(t.axis))"
        }
    }

    /// The SVG with the overflow lines drawn in red under the drawing (before `</svg>`), so that a reader of the
    /// picture sees what does not fit.
    /// - Parameters:
    ///   - svg: An SVG document from ``LayoutRenderer/svg(_:input:)``.
    ///   - truncations: The layout's truncations.
    /// - Returns: The SVG, unchanged when nothing overflows.
    public static func svgWithOverflow(_ svg: String, _ truncations: [Truncation]) -> String {
        let lines = overflowLines(truncations)
        guard !lines.isEmpty, let end = svg.range(of: "</svg>", options: .backwards) else { return svg }
        var text = ""
        for (index, line) in lines.enumerated() {
            let escaped = line.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: "\"", with: "&quot;")
            text +=
                "<text class=\"overflow\" x=\"8\" y=\"\(14 + index * 14)\" font-size=\"11\" fill=\"#d00\">\(escaped)</text>\n"
        }
        return svg.replacingCharacters(in: end, with: text + "</svg>")
    }
}
