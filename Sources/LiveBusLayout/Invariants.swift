/// The invariants every layout is checked against; outcomes go into ``LayoutResult/invariants``.
///
/// - Note: Source: field report 000 (reserved region, focus/fitting area, card column on the right, sheets and
///   toasts in the card column, 520 pt column), the LiveBus issue "Posture" (property list).
enum Invariants {
    static func check(_ r: LayoutResult, posture: ResolvedPosture, metrics: LayoutMetrics) -> [InvariantOutcome] {
        var out: [InvariantOutcome] = []
        let window = posture.window
        let safe = posture.safeRect
        let interactive = r.rects.filter(\.interactive).filter { !$0.rect.isEmpty && $0.role != .dialog }

        func outcome(_ name: String, _ offenders: [String], _ ok: String, names: [String] = []) {
            out.append(
                InvariantOutcome(
                    name: name,
                    holds: offenders.isEmpty,
                    detail: offenders.isEmpty ? ok : offenders.joined(separator: "; "),
                    offenders: offenders.isEmpty
                        ? nil
                        : names.isEmpty
                            ? offenders.compactMap { $0.split(separator: " ").first.map(String.init) }.filter { n in
                                r.rects.contains { $0.name == n }
                            } : names
                )
            )
        }

        // No two interactive rects partly overlap: two that share area must be one inside the other, and the inner
        // one must name the outer one (or a rect inside it) as its container. Source: LiveBus issue 18.
        var overlaps: [String] = []
        var overlapNames: [String] = []
        func declared(_ inner: NamedRect, in outer: NamedRect) -> Bool {
            var next = inner.container
            var hops = 0
            while let name = next, hops < 8 {
                if name == outer.name { return true }
                next = r.rects.first { $0.name == name }?.container
                hops += 1
            }
            return false
        }
        for (i, a) in interactive.enumerated() {
            for b in interactive[(i + 1)...] where a.rect.intersects(b.rect) {
                let ok =
                    (declared(a, in: b) && b.rect.contains(a.rect)) || (declared(b, in: a) && a.rect.contains(b.rect))
                guard !ok else { continue }
                let shared = a.rect.intersection(b.rect).map(describe) ?? ""
                let how =
                    declared(a, in: b) || declared(b, in: a)
                    ? "leaves its declared container" : "and no containment is declared"
                overlaps.append(
                    "\(a.name) \(describe(a.rect)) overlaps \(b.name) \(describe(b.rect)) at \(shared) \(how)"
                )
                overlapNames += [a.name, b.name]
            }
        }
        outcome(
            "noInteractivePartialOverlap",
            overlaps,
            "no two interactive rects partly overlap; rects inside others declare their container",
            names: overlapNames
        )

        // A dialog is modal (what lies under it is inert) and sits wholly in one sub-screen, clear of the
        // keep-out region and inside the safe area.
        for d in r.rects where d.role == .dialog {
            var bad: [String] = []
            if !r.panes.contains(where: { $0.contains(d.rect) }) {
                bad.append(
                    "dialog \(describe(d.rect)) is not wholly in one sub-screen (\(r.panes.map(describe).joined(separator: ", ")))"
                )
            }
            if let keep = posture.keepOutRegion, d.rect.intersects(keep) {
                bad.append("dialog \(describe(d.rect)) crosses the keep-out region \(describe(keep))")
            }
            if !safe.contains(d.rect) { bad.append("dialog \(describe(d.rect)) leaves the safe area") }
            outcome(
                "dialogInOneSubScreen",
                bad,
                "dialog \(describe(d.rect)) wholly in one sub-screen",
                names: ["dialog"]
            )
        }

        // Touch targets: buttons, map buttons, toolbar items and the text field at least the platform minimum.
        let minimum = metrics.minimumTouchTarget(platform: posture.device.platform)
        let unit = posture.device.unit
        let small = r.rects.filter { [.button, .mapButton, .toolbarItem, .textField].contains($0.role) }.filter {
            $0.rect.width < minimum - 0.005 || $0.rect.height < minimum - 0.005
        }
        outcome(
            "touchTargetsAtLeastMinimum",
            small.map {
                "\($0.name) is \(format($0.rect.width))x\(format($0.rect.height)) \(unit), under the "
                    + "\(format(minimum))x\(format(minimum)) \(unit) minimum"
            },
            "every button, map button, toolbar item and text field is at least \(format(minimum))x\(format(minimum)) "
                + "\(unit) (\(posture.device.platform == "android" ? "Material" : "Apple HIG"))",
            names: small.map(\.name)
        )

        // Text is drawn inside its box at the measured size: where it does not fit it is truncated to the box and
        // reported (``LayoutResult/truncations``) with the box and the text's measured width, never drawn past the
        // box or widened silently.
        var textProblems: [String] = []
        var textNames: [String] = []
        for p in r.presentations {
            for e in p.elements where e.text != nil && !p.frame.contains(e.rect) {
                textProblems.append(
                    "\(e.name) \(describe(e.rect)) is drawn outside its presentation \(describe(p.frame))"
                )
                textNames.append(e.name)
            }
        }
        let textElements: [(Presentation, NamedRect)] =
            r.truncations.isEmpty
            ? [] : r.presentations.flatMap { p in p.elements.filter { $0.text != nil }.map { (p, $0) } }
        let isText = { (name: String) in textElements.contains { $0.1.name == name } }
        for t in r.truncations where t.axis == "width" && isText(t.element) {
            guard let box = t.box else {
                textProblems.append("\(t.element) '\(t.text)' is truncated but the truncation names no box")
                textNames.append(t.element)
                continue
            }
            if let drawn = textElements.first(where: { $0.1.name == t.element })?.1.rect, !box.contains(drawn) {
                textProblems.append("\(t.element) \(describe(drawn)) is drawn past its box \(describe(box))")
                textNames.append(t.element)
            }
        }
        let reported = r.truncations.filter { $0.axis == "width" && isText($0.element) }.map { t in
            "\(t.element) '\(t.text)' \(format(t.measured)) pt in "
                + (t.box.map { "its box \(describe($0))" } ?? "") + " of \(format(t.available)) pt"
        }
        outcome(
            "textInsideItsBox",
            textProblems,
            "every text drawn inside its box at the measured size (\(r.textMeasurer)); "
                + (reported.isEmpty ? "none truncated" : "truncated and reported: " + reported.joined(separator: ", ")),
            names: textNames
        )

        // Sheets on regular width stay at most the platform's sheet width.
        if r.horizontalSizeClass == .regular {
            let cap = metrics.sheetMaxWidth(platform: posture.device.platform)
            let wide = r.rects.filter { $0.role == .sheet && $0.rect.width > cap + 0.005 }
            outcome(
                "sheetAtMostMaxWidthOnRegularWidth",
                wide.map { "\($0.name) is \(format($0.rect.width)) \(unit) wide, over the \(format(cap)) \(unit) cap" },
                "sheets at most \(format(cap)) \(unit) wide on regular width",
                names: wide.map(\.name)
            )
        }

        outcome(
            "insideWindow",
            r.rects.filter { !$0.rect.isEmpty && !window.contains($0.rect) }.map {
                "\($0.name) \(describe($0.rect)) leaves the window \(describe(window))"
            },
            "every rect lies inside the window \(describe(window))"
        )
        outcome(
            "interactiveInsideSafeArea",
            interactive.filter { !safe.contains($0.rect) }.map {
                "\($0.name) \(describe($0.rect)) leaves the safe area \(describe(safe))"
            },
            "every interactive rect lies inside the safe area \(describe(safe))"
        )
        if let keep = posture.keepOutRegion {
            outcome(
                "noInteractiveAcrossReservedRegion",
                interactive.filter { $0.rect.intersects(keep) }.map {
                    "\($0.name) \(describe($0.rect)) intersects \(describe(keep))"
                },
                "no interactive rect intersects the keep-out region \(describe(keep)); each sits wholly on one side"
            )
        }

        if r.screenLayout == .overlay, let focus = r.rect("focusArea"), let fitting = r.rect("fittingArea") {
            outcome(
                "focusAreaNonEmpty",
                focus.width >= 1 && focus.height >= 1 ? [] : ["focus area \(describe(focus)) is empty"],
                "focus area \(describe(focus))"
            )
            var coverers = r.rects.filter(\.coversMap).filter { $0.rect.intersects(focus) }.map {
                "focus area intersects \($0.name) \(describe($0.rect))"
            }
            if let keep = posture.keepOutRegion, keep.intersects(focus) {
                coverers.append("focus area intersects the keep-out region \(describe(keep))")
            }
            if !safe.contains(focus) { coverers.append("focus area leaves the safe area \(describe(safe))") }
            outcome(
                "focusAreaDisjointFromCovering",
                coverers,
                "focus area is clear of every covering rect and the safe-area insets"
            )
            outcome(
                "fittingAreaInsideFocusArea",
                focus.contains(fitting) ? [] : ["fitting area \(describe(fitting)) leaves \(describe(focus))"],
                "fitting area \(describe(fitting)) inside the focus area"
            )
            if let column = r.rect("cardColumn") {
                if r.arrangement == .horizontal && r.layoutDirection == .ltr {
                    outcome(
                        "cardColumnOnRight",
                        column.minX >= focus.maxX - Rect.tolerance && column.midX > focus.midX
                            ? []
                            : ["card column \(describe(column)) is not right of the focus area \(describe(focus))"],
                        "card column \(describe(column)) right of the focus area"
                    )
                } else if r.arrangement == .horizontal {
                    outcome(
                        "cardColumnOnLeftInRTL",
                        column.maxX <= focus.minX + Rect.tolerance && column.midX < focus.midX
                            ? []
                            : ["card column \(describe(column)) is not left of the focus area \(describe(focus))"],
                        "right to left: card column \(describe(column)) left of the focus area (mirrored)"
                    )
                }
                let misplaced = r.rects.filter { [.sheet, .toast].contains($0.role) }.filter {
                    $0.rect.minX < column.minX - Rect.tolerance || $0.rect.maxX > column.maxX + Rect.tolerance
                }
                outcome(
                    "sheetsAndToastsInCardColumn",
                    misplaced.map { "\($0.name) \(describe($0.rect)) outside the card column \(describe(column))" },
                    "sheets and toasts align with the card column"
                )
            }
            if let camera = r.camera, camera.zoom > MapCamera.zoomRange.lowerBound {
                let outside = camera.markerPoints.enumerated().filter { !fitting.contains($0.element, slack: 0.01) }
                outcome(
                    "markersInsideFittingArea",
                    outside.map {
                        "marker \($0.offset) at (\(format($0.element.x)), \(format($0.element.y))) is outside"
                    },
                    "every marker inside the fitting area at zoom \(format(camera.zoom))"
                )
            }
        }
        if r.screenLayout == .column, let column = r.rect("column") {
            var bad: [String] = []
            if column.width > metrics.columnMaxWidth + Rect.tolerance {
                bad.append("column \(describe(column)) is wider than \(format(metrics.columnMaxWidth))")
            }
            for e in r.rects where [.sheet, .toast].contains(e.role) {
                if e.rect.width > metrics.columnMaxWidth + Rect.tolerance || abs(e.rect.midX - column.midX) > 0.01 {
                    bad.append("\(e.name) \(describe(e.rect)) is not centred in the column")
                }
            }
            outcome(
                "columnAtMost520AndCentred",
                bad,
                "column \(format(column.width)) pt, sheets and toasts centred in it"
            )
        }
        if let keyboard = r.rect("keyboard") {
            outcome(
                "toastsClearOfKeyboard",
                r.rects.filter { $0.role == .toast && $0.rect.intersects(keyboard) }.map {
                    "\($0.name) \(describe($0.rect)) is under the keyboard \(describe(keyboard))"
                },
                "toasts clear of the keyboard"
            )
        }
        // Screen buttons: each drawn at most once, in the screen or in the vertical-edge toolbar (field report 000:
        // the toolbar takes the button over, it does not copy it).
        let drawn = r.rects.filter { [.button, .toolbarItem].contains($0.role) }
        outcome(
            "noButtonDrawnTwice",
            ScreenButton.allCases.compactMap { kind in
                let copies = drawn.filter { $0.name.split(separator: ".").last.map(String.init) == kind.rawValue }
                return copies.count > 1
                    ? "\(kind.rawValue) drawn \(copies.count) times: " + copies.map(\.name).joined(separator: ", ")
                    : nil
            },
            "each screen button drawn at most once (\(drawn.map(\.name).joined(separator: ", ")))"
        )
        if let toolbar = r.toolbar {
            var bad: [String] = []
            for item in toolbar.items {
                if let keep = posture.keepOutRegion, item.rect.intersects(keep) {
                    bad.append("\(item.name) \(describe(item.rect)) intersects the reserved region \(describe(keep))")
                }
                if !toolbar.rect.contains(item.rect) {
                    bad.append("\(item.name) \(describe(item.rect)) leaves the toolbar \(describe(toolbar.rect))")
                }
            }
            outcome(
                "noToolbarItemInReservedRegion",
                bad,
                "toolbar items inside the toolbar \(describe(toolbar.rect)) and clear of the reserved region"
            )
        }
        if let sheet = r.rect("sheet"), let field = r.rect("textField") {
            var bad: [String] = []
            if !sheet.contains(field) {
                bad.append("text field \(describe(field)) leaves the sheet \(describe(sheet))")
            }
            if let kb = r.rect("keyboard"), sheet.intersects(kb) {
                bad.append("sheet \(describe(sheet)) overlaps the keyboard \(describe(kb))")
            }
            outcome("sheetHoldsTextFieldAboveKeyboard", bad, "text field inside the sheet, sheet above the keyboard")
        }
        return out
    }
}
