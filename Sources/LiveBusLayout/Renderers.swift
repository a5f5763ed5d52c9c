import Foundation

/// Draws a layout result as JSON, SVG, or a small terminal picture.
public enum LayoutRenderer {
    /// The result as pretty-printed JSON with sorted keys (stable for golden files).
    ///
    /// - Parameter r: the layout result.
    /// - Returns: UTF-8 JSON text ending in a newline.
    public static func json(_ r: LayoutResult) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(r), let text = String(data: data, encoding: .utf8) else {
            return "{}\n"
        }
        return text + "\n"
    }

    /// An SVG drawing: the screen, window, safe-area insets, Dynamic Island, hinge and reserved region, every
    /// rect labelled, the focus and fitting areas, the camera's markers, and the Live Activity presentations
    /// below the screen. One SVG unit = one point.
    ///
    /// - Parameters:
    ///   - r: the layout result.
    ///   - input: the input it came from (screen size, safe area).
    /// - Returns: a standalone SVG document.
    public static func svg(_ r: LayoutResult, input: LayoutInput) -> String {
        let p = input.posture
        let pad = 24.0
        let screen = Rect(size: p.screenSize)
        let presentationHeight = r.presentations.map(\.frame.height).max().map { $0 + 40 } ?? 0
        let slot = { (p: Presentation) in max(p.frame.width, Double(p.kind.rawValue.count) * 5.5) + 16 }
        let width = max(screen.width, r.presentations.reduce(0) { $0 + slot($1) }, 640) + 2 * pad
        // The arrangement chosen and why (the OS rule first), wrapped to the drawing width at about 5.6 pt a
        // character of 10 pt text.
        let whyLines = wrap("why: " + r.reason, width: max(40, Int((width - 2 * pad) / 5.6)))
        let os = p.device.platform == "ios" ? "iOS \(r.osVersion)" : "\(p.device.platform) (iOS version rules not used)"
        let toolbarText =
            r.toolbar.map { t in
                "toolbar on the \(t.edge.rawValue) edge: "
                    + (t.items.isEmpty
                        ? "no items"
                        : t.items.map { "\($0.button.rawValue) (\($0.placement.rawValue))" }
                            .joined(separator: ", "))
            } ?? "no vertical-edge toolbar"
        let osLines = wrap(
            "\(os) · arrangement \(r.arrangement.rawValue)" + (r.osRule.map { " (\($0))" } ?? "") + " · \(toolbarText)",
            width: max(40, Int((width - 2 * pad) / 6.2))
        )
        // Failed invariants, in red under the reason; their rects are outlined in red in the drawing.
        let failedLines = r.failedInvariants.flatMap {
            wrap("FAILED \($0.name): \($0.detail)", width: max(40, Int((width - 2 * pad) / 5.6)))
        }
        let offenders = Set(r.failedInvariants.flatMap { $0.offenders ?? [] })
        let textLines: Double = 14 * Double(osLines.count) + 13 * Double(whyLines.count + failedLines.count)
        let titleHeight: Double = 41 + textLines
        let height = screen.height + 2 * pad + titleHeight + presentationHeight
        var s = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(n(width))" height="\(n(height))" \
            viewBox="0 0 \(n(width)) \(n(height))" font-family="sans-serif" font-size="10">

            """
        s += "<rect x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"#ffffff\"/>\n"
        s += text(
            pad,
            18,
            "\(r.deviceName) · \(r.screenName) screen · \(r.foldState.rawValue) · \(r.orientation.rawValue) · window \(n(p.window.width))x\(n(p.window.height)) \(p.device.unit)",
            size: 13,
            weight: "bold"
        )
        s += text(
            pad,
            34,
            "\(r.screenLayout.rawValue) · \(r.arrangement.rawValue) · \(r.horizontalSizeClass.rawValue) width x \(r.verticalSizeClass.rawValue) height (Material \(r.windowWidthClass.rawValue) x \(r.windowHeightClass.rawValue)) · \(r.panes.count) pane\(r.panes.count == 1 ? "" : "s")\(r.layoutDirection == .rtl ? " · right to left" : "") · invariants \(r.invariants.filter(\.holds).count)/\(r.invariants.count) hold",
            size: 11
        )
        for (i, line) in osLines.enumerated() {
            s += text(pad, 49 + 14 * Double(i), line, size: 11)
        }
        let whyTop = 49 + 14 * Double(osLines.count)
        for (i, line) in whyLines.enumerated() {
            s += text(pad, whyTop + 13 * Double(i), line, size: 10)
        }
        let failedTop = whyTop + 13 * Double(whyLines.count)
        for (i, line) in failedLines.enumerated() {
            s += text(pad, failedTop + 13 * Double(i), line, size: 10, color: "#d00000")
        }
        s += "<g transform=\"translate(\(n(pad)) \(n(pad + titleHeight)))\">\n"
        s += rect(screen, fill: "#f4f4f4", stroke: "#999999", dash: "6 3", extra: "")
        s += rect(p.window, fill: "#ffffff", stroke: "#222222", dash: nil, extra: "")
        var labels = ""
        for nr in r.rects {
            s += draw(nr)
            labels += labelFor(nr)
        }
        // Safe-area insets, hatched over everything but labels.
        let safe = p.safeRect
        for inset in insetStrips(window: p.window, safe: safe) {
            s += rect(inset, fill: "#7f7f7f", stroke: nil, dash: nil, extra: " fill-opacity=\"0.25\"")
        }
        if let camera = r.camera {
            for (i, point) in camera.markerPoints.enumerated() {
                let kind = i < input.markers.count ? input.markers[i].kind.rawValue : "marker"
                s +=
                    "<circle cx=\"\(n(point.x))\" cy=\"\(n(point.y))\" r=\"4\" fill=\"#d62728\"><title>\(escape(kind))</title></circle>\n"
            }
        }
        for nr in r.rects where offenders.contains(nr.name) {
            s += rect(nr.rect, fill: "none", stroke: "#d00000", dash: nil, extra: " stroke-width=\"3\"")
        }
        s += labels
        s += "</g>\n"
        // Presentations.
        var x = pad
        let y = pad + titleHeight + screen.height + 32
        for presentation in r.presentations {
            let f = presentation.frame
            s += "<g transform=\"translate(\(n(x - f.x)) \(n(y - f.y)))\">\n"
            s += rect(
                f,
                fill: presentation.kind == .lockScreen ? "#e8e8ee" : "#000000",
                stroke: "#444444",
                dash: nil,
                extra: " rx=\"\(presentation.kind == .lockScreen ? 12 : f.height / 2)\""
            )
            for e in presentation.elements {
                let color =
                    offenders.contains(e.name) ? "#d00000" : presentation.kind == .lockScreen ? "#1f4e9a" : "#ffd166"
                s += rect(e.rect, fill: "none", stroke: color, dash: e.role == .box ? "2 2" : nil, extra: "")
                if let string = e.text {
                    let ink = presentation.kind == .lockScreen ? "#111111" : "#ffffff"
                    s +=
                        "<text x=\"\(n(e.rect.minX))\" y=\"\(n(e.rect.maxY - 3))\" "
                        + "font-size=\"\(n(min(12, e.rect.height * 0.8)))\" fill=\"\(ink)\">\(escape(string))</text>\n"
                }
            }
            s += text(f.x, f.y - 6, presentation.kind.rawValue, size: 9)
            s += "</g>\n"
            x += slot(presentation)
        }
        s += "</svg>\n"
        return s
    }

    /// A compact terminal picture: the window scaled to `width` columns, box-drawn rects with a one-letter tag,
    /// `░` for the reserved region, `·` for the focus area, then a legend and the arrangement.
    ///
    /// - Parameters:
    ///   - r: the layout result.
    ///   - width: columns (about 40).
    /// - Returns: lines joined with newlines.
    public static func text(_ r: LayoutResult, width: Int = 40) -> String {
        guard let window = r.rect("window"), window.width > 0, window.height > 0 else { return "" }
        let cols = max(12, width)
        let rows = min(24, max(6, Int((Double(cols) * window.height / window.width / 2).rounded())))
        var grid = Array(repeating: Array(repeating: Character(" "), count: cols), count: rows)
        func cell(_ r: Rect) -> (Int, Int, Int, Int) {
            let x0 = Int((r.minX / window.width * Double(cols)).rounded(.down))
            let x1 = Int((r.maxX / window.width * Double(cols)).rounded(.up)) - 1
            let y0 = Int((r.minY / window.height * Double(rows)).rounded(.down))
            let y1 = Int((r.maxY / window.height * Double(rows)).rounded(.up)) - 1
            return (max(0, x0), max(0, y0), min(cols - 1, max(x0, x1)), min(rows - 1, max(y0, y1)))
        }
        func fill(_ r: Rect, _ c: Character) {
            let (x0, y0, x1, y1) = cell(r)
            guard x0 <= x1, y0 <= y1 else { return }
            for y in y0...y1 { for x in x0...x1 { grid[y][x] = c } }
        }
        if let focus = r.rect("focusArea") { fill(focus, "·") }
        if let reserved = r.rect("reservedRegion") { fill(reserved, "░") }
        var legend: [String] = []
        let tags: [RectRole: Character] = [
            .header: "H", .card: "C", .sheet: "S", .toast: "T", .mapButton: "B", .keyboard: "K", .column: "L",
            .toolbar: "V",
        ]
        for nr in r.rects {
            guard let tag = tags[nr.role], !nr.rect.isEmpty else { continue }
            let (x0, y0, x1, y1) = cell(nr.rect)
            if x1 - x0 >= 1 && y1 - y0 >= 1 {
                for x in x0...x1 {
                    grid[y0][x] = "─"
                    grid[y1][x] = "─"
                }
                for y in y0...y1 {
                    grid[y][x0] = "│"
                    grid[y][x1] = "│"
                }
                grid[y0][x0] = "┌"
                grid[y0][x1] = "┐"
                grid[y1][x0] = "└"
                grid[y1][x1] = "┘"
                grid[y0 + (y1 - y0) / 2][x0 + 1] = tag
            } else {
                fill(nr.rect, tag)
            }
            let entry = "\(tag) \(nr.role.rawValue)"
            if !legend.contains(entry) { legend.append(entry) }
        }
        var lines = ["┏" + String(repeating: "━", count: cols) + "┓"]
        lines += grid.map { "┃" + String($0) + "┃" }
        lines.append("┗" + String(repeating: "━", count: cols) + "┛")
        var footer = [
            "\(r.deviceName) \(r.screenName) \(r.foldState.rawValue) \(r.orientation.rawValue) "
                + "\(format(window.width))x\(format(window.height))",
            "\(r.screenLayout.rawValue) → \(r.arrangement.rawValue); · focus ░ reserved",
            legend.joined(separator: "  "),
        ]
        if r.osRule != nil || r.toolbar != nil {
            footer.append(
                "iOS \(r.osVersion)"
                    + (r.toolbar.map { " · toolbar \($0.edge.rawValue): \($0.items.count) items" } ?? "")
            )
        }
        let failed = r.failedInvariants
        footer.append(
            failed.isEmpty
                ? "invariants: all \(r.invariants.count) hold" : "FAILED: " + failed.map(\.name).joined(separator: ", ")
        )
        footer += failed.map { "✗ \($0.name): \($0.detail)" }
        for line in footer { lines += wrap(line, width: cols + 2) }
        return lines.joined(separator: "\n")
    }

    /// Splits a line at spaces so no piece exceeds `width` characters (a longer word stays whole).
    static func wrap(_ line: String, width: Int) -> [String] {
        var out: [String] = []
        var current = ""
        for word in line.split(separator: " ", omittingEmptySubsequences: false) {
            if current.isEmpty {
                current = String(word)
            } else if current.count + 1 + word.count <= width {
                current += " " + word
            } else {
                out.append(current)
                current = String(word)
            }
        }
        out.append(current)
        return out
    }

    // MARK: - SVG helpers

    private static func draw(_ nr: NamedRect) -> String {
        let r = nr.rect
        switch nr.role {
        case .window, .safeArea, .cardColumn:
            return nr.role == .cardColumn ? rect(r, fill: "none", stroke: "#8c564b", dash: "2 4", extra: "") : ""
        case .map:
            return rect(r, fill: "#dcebd0", stroke: nil, dash: nil, extra: "")
        case .focusArea:
            return rect(r, fill: "#1f77b4", stroke: "#1f77b4", dash: "6 3", extra: " fill-opacity=\"0.10\"")
        case .fittingArea:
            return rect(r, fill: "none", stroke: "#1f77b4", dash: "1 3", extra: "")
        case .reservedRegion:
            return rect(r, fill: "#d62728", stroke: "#d62728", dash: nil, extra: " fill-opacity=\"0.25\"")
        case .hinge:
            return r.width <= 0 || r.height <= 0
                ? "<line x1=\"\(n(r.minX))\" y1=\"\(n(r.minY))\" x2=\"\(n(r.maxX))\" y2=\"\(n(r.maxY))\" stroke=\"#333333\" stroke-width=\"1\"/>\n"

                : rect(r, fill: "#333333", stroke: nil, dash: nil, extra: "")
        case .dynamicIsland:
            return rect(r, fill: "#000000", stroke: nil, dash: nil, extra: " rx=\"\(n(r.height / 2))\"")
        case .keyboard:
            return rect(r, fill: "#777777", stroke: "#555555", dash: nil, extra: " fill-opacity=\"0.6\"")
        case .pin:
            return rect(r, fill: "#d62728", stroke: nil, dash: nil, extra: " rx=\"6\"")
        case .content:
            return rect(r, fill: "#f0e6ff", stroke: "#9467bd", dash: nil, extra: "")
        case .toolbar:
            return rect(r, fill: "#d9e2f2", stroke: "#5b6f99", dash: nil, extra: "")
        case .toolbarItem:
            return rect(r, fill: "#ffffff", stroke: "#5b6f99", dash: nil, extra: " rx=\"\(n(r.width / 2))\"")
        case .button:
            return rect(r, fill: "#fff4d6", stroke: "#b8860b", dash: nil, extra: " rx=\"6\"")
        default:
            return rect(r, fill: "#ffffff", stroke: "#444444", dash: nil, extra: " fill-opacity=\"0.92\" rx=\"6\"")

        }
    }

    /// The label drawn on top of every shape (none for the window, safe area, island and pin).
    private static func labelFor(_ nr: NamedRect) -> String {
        switch nr.role {
        case .window, .safeArea, .dynamicIsland, .pin: ""
        case .map: text(nr.rect.minX + 4, nr.rect.maxY - 4, "map", size: 9)
        case .fittingArea: label(nr, dy: 22)
        default: label(nr)
        }
    }

    private static func insetStrips(window: Rect, safe: Rect) -> [Rect] {
        [
            Rect(minX: window.minX, minY: window.minY, maxX: window.maxX, maxY: safe.minY),
            Rect(minX: window.minX, minY: safe.maxY, maxX: window.maxX, maxY: window.maxY),
            Rect(minX: window.minX, minY: safe.minY, maxX: safe.minX, maxY: safe.maxY),
            Rect(minX: safe.maxX, minY: safe.minY, maxX: window.maxX, maxY: safe.maxY),
        ].filter { !$0.isEmpty }
    }

    /// Labels a rect with its name and size: inside its top-left corner; small rects get a small label above;
    /// the sheet is labelled at its top-right, the card column below its bottom, the hinge at its bottom.
    private static func label(_ nr: NamedRect, dy: Double = 12) -> String {
        let r = nr.rect
        let full = "\(nr.name) \(format(r.width))x\(format(r.height))"
        switch nr.role {
        case .sheet:
            return "<text x=\"\(n(r.maxX - 4))\" y=\"\(n(r.minY + 12))\" font-size=\"10\" text-anchor=\"end\" "
                + "fill=\"#222222\">\(escape(full))</text>\n"
        case .cardColumn:
            return "<text x=\"\(n(r.maxX))\" y=\"\(n(r.maxY + 10))\" font-size=\"8\" text-anchor=\"end\" "
                + "fill=\"#222222\">\(escape(full))</text>\n"
        case .column, .content:
            return text(r.minX + 4, r.maxY - 4, full, size: 10)
        case .hinge:
            return text(r.minX, r.maxY + 10, full, size: 8)
        case .reservedRegion:
            return text(r.minX, r.minY - 3, full, size: 8)
        default:
            if r.width < 100 || r.height < 16 {
                return text(r.minX, r.minY - 2, nr.name, size: 7)
            }
            return text(r.minX + 4, r.minY + dy, full, size: 10)
        }
    }

    private static func rect(_ r: Rect, fill: String, stroke: String?, dash: String?, extra: String) -> String {
        var s =
            "<rect x=\"\(n(r.x))\" y=\"\(n(r.y))\" width=\"\(n(max(0, r.width)))\" height=\"\(n(max(0, r.height)))\" fill=\"\(fill)\""
        if let stroke { s += " stroke=\"\(stroke)\"" }
        if let dash { s += " stroke-dasharray=\"\(dash)\"" }
        return s + extra + "/>\n"
    }

    private static func text(
        _ x: Double,
        _ y: Double,
        _ string: String,
        size: Double,
        weight: String = "normal",
        color: String = "#222222"
    ) -> String {
        "<text x=\"\(n(x))\" y=\"\(n(y))\" font-size=\"\(n(size))\" font-weight=\"\(weight)\" fill=\"\(color)\">\(escape(string))</text>\n"
    }

    private static func n(_ v: Double) -> String { format(v) }

    private static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
