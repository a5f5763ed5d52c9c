import Foundation

/// The layout engine: a pure function from a posture, a screen declaration and content to named rects.
public enum LayoutEngine {
    /// Lays out one screen.
    ///
    /// Rules (all in window coordinates, points):
    /// - Regions: without a keep-out region (``ResolvedPosture/keepOutRegion``) everything uses the safe area.
    ///   With one, the safe area is split at it; when both sides are at least `minimumSideExtent`, the map (or
    ///   column content) takes the left/top side and the controls the right/bottom side, otherwise the larger side
    ///   is used alone. Column screens split by a vertical band use the wider side (ties: trailing).
    /// - Overlay screens: regular width (or a vertical split) → horizontal arrangement, cards in a column on the
    ///   right, focus area = the map region beside them; compact width → vertical arrangement, cards at the bottom,
    ///   focus area = the map minus header, toast, map buttons, sheet, card, keyboard and safe-area insets, measured
    ///   from those rects. Sheets sit in the card column above the card (above the keyboard when the text field
    ///   has focus); toasts at the top of the card column. Fitting area = focus area inset by
    ///   `fittingRatios` of its own size. The camera fits the markers into the fitting area.
    /// - Column screens: content ≤ 520 pt wide, centred; sheet and toast centred in the column.
    /// - Full-screen screens: content = the window; sheet and toast span the controls region.
    /// - Sheet height (field report 004): field + 16 + tags + (8 if at least one tag), clamped to the largest
    ///   detent.
    ///
    /// - Parameter input: posture, screen declaration, content and metrics.
    /// - Returns: rects, arrangement and reason, camera, presentations, truncations and invariant outcomes.
    /// - Note: Source: field report 000 (map/cards, focus and fitting area, screen layouts, reserved region),
    ///   field report 004 (content-fitting sheet), field report 001 (Dynamic Island boxes), DESIGN.md "Layout".
    public static func layout(_ input: LayoutInput) -> LayoutResult {
        guard input.layoutDirection == .rtl || input.dialog != nil else { return layoutLTR(input) }
        // Right to left: lay out left to right in a mirrored world (safe areas, hinge, bar and island flipped),
        // then flip every rect back, so the arrangement mirrors while the hardware stays put.
        var result: LayoutResult
        if input.layoutDirection == .rtl {
            var mirrored = input
            mirrored.posture = input.posture.mirrored
            mirrored.layoutDirection = .ltr
            mirrored.dialog = nil
            result = layoutLTR(mirrored)
            let w = input.posture.window.width
            for i in result.rects.indices { result.rects[i].rect = result.rects[i].rect.mirrored(in: w) }
            result.panes = result.panes.map { $0.mirrored(in: w) }
            if var toolbar = result.toolbar {
                toolbar.rect = toolbar.rect.mirrored(in: w)
                toolbar.edge = toolbar.edge == .left ? .right : .left
                for i in toolbar.items.indices { toolbar.items[i].rect = toolbar.items[i].rect.mirrored(in: w) }
                result.toolbar = toolbar
            }
            if let fitting = result.rect("fittingArea") {
                result.camera = MapCamera.fit(
                    markers: input.markers,
                    fittingArea: fitting,
                    mapRect: input.posture.window
                )
            }
            result.layoutDirection = .rtl
            // The toolbar is hardware-placed: name its real edge.
            if let edge = result.toolbar?.edge {
                let laidOut = edge == .left ? "right" : "left"
                result.reason = result.reason.replacingOccurrences(
                    of: "toolbar on the \(laidOut) edge",
                    with: "toolbar on the \(edge.rawValue) edge"
                )
            }
            result.reason =
                "right-to-left: the left-to-right arrangement mirrored, map and cards swap sides (left and right "
                + "below are before mirroring); " + result.reason
        } else {
            var plain = input
            plain.dialog = nil
            result = layoutLTR(plain)
        }
        if let dialog = input.dialog { placeDialog(dialog, in: &result) }
        result.invariants = Invariants.check(
            result,
            posture: input.posture,
            metrics: input.metrics.raisedToTouchTarget(platform: input.posture.device.platform)
        )
        return result
    }

    /// A modal dialog wholly in one sub-screen: the pane holding the card column (overlay) or the last pane
    /// (the controls), centred in it and clamped to it with the margin; a dialog larger than the pane is shrunk
    /// to it, with a note.
    static func placeDialog(_ size: Size, in r: inout LayoutResult) {
        let m = LayoutMetrics.standard
        let column = r.rect("cardColumn")
        let pane =
            column.flatMap { c in r.panes.first { $0.contains(Point(x: c.midX, y: c.midY)) } } ?? r.panes.last
            ?? r.rect("safeArea") ?? Rect(x: 0, y: 0, width: 0, height: 0)
        let room = pane.insetBy(dx: m.margin, dy: m.margin)
        let w = min(size.width, room.width)
        let h = min(size.height, room.height)
        let rect = Rect(x: room.midX - w / 2, y: room.midY - h / 2, width: w, height: h)
        r.rects.append(
            NamedRect(name: "dialog", role: .dialog, rect: rect.rounded, interactive: true, coversMap: false)
        )
        r.reason +=
            "; dialog \(format(w))x\(format(h)) centred in the sub-screen \(describe(pane)) on the card column's side"
        if w < size.width || h < size.height {
            r.reason += " (shrunk from \(format(size.width))x\(format(size.height)) to fit it)"
        }
    }

    static func layoutLTR(_ input: LayoutInput) -> LayoutResult {
        var builder = Builder(input)
        switch input.screen {
        case .overlay: builder.overlay()
        case .column: builder.columnOrFullScreen(fullScreen: false)
        case .fullScreen: builder.columnOrFullScreen(fullScreen: true)
        }
        let (presentations, truncations) = LiveActivityLayout.layout(
            input.liveActivity,
            posture: input.posture,
            measurer: input.measurer
        )
        builder.presentations = presentations
        // Each truncation names the box it was measured against (the text rect is clamped to it).
        builder.truncations += truncations.map { t in
            var t = t
            if t.box == nil, t.axis == "width" {
                t.box = presentations.lazy.flatMap(\.elements).first { $0.name == t.element }?.rect
            }
            return t
        }
        return builder.finish()
    }

    /// The fitting area: the focus area inset by ratios of the focus area's own size (never of the screen).
    ///
    /// - Parameters:
    ///   - focus: the focus area, window coordinates (points).
    ///   - ratios: insets as fractions of the focus area (top and bottom of its height, left and right of its width).
    /// - Returns: the fitting area, window coordinates (points).
    /// - Note: Source: field report 000 (`fittingArea: .ratio(.init(top: 0.03, left: 0.1, bottom: 0.03, right: 0.1))`,
    ///   replacing `UIScreen.heightExceptSafeArea * 0.03`…); T7 in posture-and-devices.md.
    public static func fittingArea(focus: Rect, ratios: EdgeInsets = LayoutMetrics.standard.fittingRatios) -> Rect {
        focus.inset(
            by: EdgeInsets(
                top: focus.height * ratios.top,
                left: focus.width * ratios.left,
                bottom: focus.height * ratios.bottom,
                right: focus.width * ratios.right
            )
        )
    }

    /// Content height of the tag editor sheet: `field + 16 + tagsHeight + (tags > 0 ? 8 : 0)`.
    ///
    /// - Parameters:
    ///   - tags: number of tags.
    ///   - sheetWidth: sheet width in points (chips wrap at it).
    ///   - metrics: element sizes.
    /// - Returns: (content height, tags height) in points.
    /// - Note: Source: field report 004 (`sheetHeight = fieldHeight + tagsHeight + (tags.isEmpty ? 0 : spacing)`,
    ///   `fieldHeight = geometry.size.height + 16`); T8 in posture-and-devices.md (52 → 68; 52 + 32 → 108).
    public static func sheetContentHeight(tags: Int, sheetWidth: Double, metrics: LayoutMetrics) -> (
        total: Double, tags: Double
    ) {
        let tagsHeight = self.tagsHeight(tags: tags, width: sheetWidth - 2 * metrics.margin, metrics: metrics)
        let total =
            metrics.textFieldHeight + metrics.textFieldPadding + tagsHeight + (tags > 0 ? metrics.tagsSpacing : 0)
        return (total, tagsHeight)
    }

    /// Height of `tags` chips wrapped in rows of `width` points.
    static func tagsHeight(tags: Int, width: Double, metrics: LayoutMetrics) -> Double {
        guard tags > 0 else { return 0 }
        let chip = metrics.tagChipSize
        let perRow = max(
            1,
            Int(((width + metrics.tagChipSpacing) / (chip.width + metrics.tagChipSpacing)).rounded(.down))
        )
        let rows = (tags + perRow - 1) / perRow
        return Double(rows) * chip.height + Double(rows - 1) * metrics.tagChipSpacing
    }
}

/// Regions of the safe area around the keep-out region.
struct Regions {
    /// Where the map focus (overlay) or the column content goes.
    var content: Rect
    /// Where the controls (cards, sheets, toasts) go.
    var controls: Rect
    /// The axis of the split, when the safe area is split in two.
    var split: HingeSpec.Axis?
    /// Why.
    var note: String
}

private struct Builder {
    let input: LayoutInput
    let posture: ResolvedPosture
    let m: LayoutMetrics
    var rects: [NamedRect] = []
    var arrangement: Arrangement = .column
    var reason = ""
    var camera: MapCamera?
    var sheetContentHeight: Double?
    var sheetLargestDetent: Double?
    var sheetScrolls = false
    var presentations: [Presentation] = []
    var truncations: [Truncation] = []
    var keyboard: Rect?
    /// The OS rule clause, on an unfolded iOS foldable.
    var osRule: String?
    /// True when the vertical-edge toolbar takes the screen buttons (a vertical bar in the window, iOS ≥ 27.1).
    let toolbarActive: Bool
    /// Buttons moved into the toolbar, in the order they were met.
    var movedButtons: [ScreenButton] = []
    var toolbar: Toolbar?
    /// Buttons left out because their place is smaller than the touch target (added to the reason).
    var hiddenButtons: [String] = []
    /// The panes (see ``LayoutResult/panes``).
    var panes: [Rect] = []

    init(_ input: LayoutInput) {
        self.input = input
        self.posture = input.posture
        self.m = input.metrics.raisedToTouchTarget(platform: input.posture.device.platform)
        self.toolbarActive = posture.verticalBar != nil && posture.osVersion >= OSVersion.arrangementAPI
        let window = posture.window
        rects.append(NamedRect(name: "window", role: .window, rect: window, interactive: false, coversMap: false))
        rects.append(
            NamedRect(name: "safeArea", role: .safeArea, rect: posture.safeRect, interactive: false, coversMap: false)
        )
        if input.textFieldFocused && input.showSheet && posture.keyboardHeight > 0 {
            keyboard = Rect(
                x: window.minX,
                y: window.maxY - posture.keyboardHeight,
                width: window.width,
                height: posture.keyboardHeight
            )
        }
    }

    mutating func add(
        _ name: String,
        _ role: RectRole,
        _ rect: Rect,
        interactive: Bool,
        covers: Bool,
        in container: String? = nil
    ) {
        rects.append(
            NamedRect(
                name: name,
                role: role,
                rect: rect.rounded,
                interactive: interactive,
                coversMap: covers,
                container: container
            )
        )
    }

    /// The platform's smallest touch target (44 pt, 48 dp on Android).
    var touchTarget: Double { m.minimumTouchTarget(platform: posture.device.platform) }

    /// Draws a screen button at `rect` inside `container`, or hands it to the vertical-edge toolbar when that is
    /// active. Buttons the input does not list are skipped; one that cannot be the platform's touch target (its
    /// parent is too small) is left out with a note in the reason, never drawn smaller.
    /// - Returns: true when the button was drawn in the screen.
    @discardableResult
    mutating func button(_ kind: ScreenButton, _ rect: Rect, in container: String?) -> Bool {
        let name = "button.\(kind.rawValue)"
        guard input.buttons.contains(kind), !movedButtons.contains(kind), !rects.contains(where: { $0.name == name })
        else { return false }
        if toolbarActive {
            movedButtons.append(kind)
            return false
        }
        let r = rect.rounded
        guard r.width >= touchTarget - 0.01, r.height >= touchTarget - 0.01 else {
            hiddenButtons.append(
                "\(kind.rawValue) button not shown: its place \(describe(r)) is smaller than the "
                    + "\(format(touchTarget)) \(posture.device.unit) touch target"
            )
            return false
        }
        add(name, .button, rect, interactive: true, covers: true, in: container)
        return true
    }

    /// On an unfolded iOS foldable (the active screen has a hinge or fold): is the split arrangement available?
    /// `ArrangementView` exists from iOS 27.1; before, the wrapper layers the cards over the full-screen map.
    ///
    /// - Note: Source: field report 000 (`if #available(iOS 27.1, *) { ArrangementView … } else { ZStack … }`);
    ///   https://developer.apple.com/documentation/swiftui/arrangementview (iOS 27.1).
    func arrangementAPI() -> (applies: Bool, available: Bool) {
        let unfoldedFoldable =
            posture.device.platform == "ios"
            && posture.device.screen(for: posture.posture.foldState)?.hinge != nil
        guard unfoldedFoldable else { return (false, true) }
        return (true, posture.osVersion >= OSVersion.arrangementAPI)
    }

    /// Splits the safe area at the keep-out region.
    func regions(preferSingleSideForVertical: Bool) -> Regions {
        let safe = posture.safeRect
        guard let keep = posture.keepOutRegion, keep.intersects(safe), let axis = posture.hingePlacement?.axis else {
            return Regions(content: safe, controls: safe, split: nil, note: "no reserved region in the window")
        }
        let first: Rect
        let second: Rect
        if axis == .vertical {
            first = Rect(minX: safe.minX, minY: safe.minY, maxX: max(safe.minX, keep.minX), maxY: safe.maxY)
            second = Rect(minX: min(safe.maxX, keep.maxX), minY: safe.minY, maxX: safe.maxX, maxY: safe.maxY)
        } else {
            first = Rect(minX: safe.minX, minY: safe.minY, maxX: safe.maxX, maxY: max(safe.minY, keep.minY))
            second = Rect(minX: safe.minX, minY: min(safe.maxY, keep.maxY), maxX: safe.maxX, maxY: safe.maxY)
        }
        let extent = { (r: Rect) in axis == .vertical ? r.width : r.height }
        let bandName = posture.reservedRegion != nil ? "reserved region" : "occluding hinge"
        let bothFit = extent(first) >= m.minimumSideExtent && extent(second) >= m.minimumSideExtent
        if bothFit && !(preferSingleSideForVertical && axis == .vertical) {
            let names = axis == .vertical ? ("left", "right") : ("top", "bottom")
            return Regions(
                content: first,
                controls: second,
                split: axis,
                note: "\(bandName) \(axis.rawValue) at \(describe(keep)): content on the \(names.0) side, "
                    + "controls on the \(names.1) side"
            )
        }
        let single = extent(second) >= extent(first) - 0.01 ? second : first  // ties go trailing
        let which =
            axis == .vertical ? (single == second ? "right" : "left") : (single == second ? "bottom" : "top")
        let why =
            bothFit
            ? "column content stays wholly on the wider side"
            : "the other side is narrower than \(format(m.minimumSideExtent)) pt"
        return Regions(
            content: single,
            controls: single,
            split: nil,
            note: "\(bandName) \(axis.rawValue) at \(describe(keep)): everything on the \(which) side (\(why))"
        )
    }

    // MARK: - Overlay (map) screens

    /// A full-width card column narrowed to the platform's sheet width on regular width, kept on the trailing
    /// side (the sheets it holds must not outgrow the cap).
    func capped(_ column: Rect) -> Rect {
        let cap = m.sheetMaxWidth(platform: posture.device.platform)
        guard posture.horizontalSizeClass == .regular, column.width > cap else { return column }
        return Rect(x: column.maxX - cap, y: column.y, width: cap, height: column.height)
    }

    mutating func overlay() {
        let window = posture.window
        add("map", .map, window, interactive: false, covers: false)
        let api = arrangementAPI()
        let fallback = api.applies && !api.available
        // The fallback layers the cards over the map as on a phone: on one side of a vertical reserved region.
        let regions = regions(preferSingleSideForVertical: fallback)
        // Two panes by the platform's rule: Apple's size class; on Android Jetpack's window size classes (a
        // separating fold splits the window through `regions` in any case).
        let rule = TwoPaneRule.decide(
            platform: posture.device.platform,
            window: window.size,
            horizontalSizeClass: posture.horizontalSizeClass,
            separatingFold: nil
        )
        let android = posture.device.platform == "android"
        let regular = rule.twoPane && !fallback
        var mapSide = regions.content
        let controlArea = regions.controls
        var column: Rect
        var colTop: Double
        let colBottom = controlArea.maxY - m.margin
        var why: [String] = []

        switch regions.split {
        case .vertical?:
            arrangement = .horizontal
            let width = min(controlArea.width - 2 * m.margin, m.cardColumnMaxWidth)
            column = Rect(x: controlArea.maxX - m.margin - width, y: 0, width: width, height: 0)
            colTop = controlArea.minY + m.gap
            why.append("split by a vertical band: map on the left, card column on the right of it")
        case .horizontal?:
            // Tabletop: the focus area is the whole top sub-screen and the card column the whole bottom one (minus
            // the safe areas and margins), on every width: the fold is the division (Samsung Flex mode, Jetpack's
            // tabletop = two vertical partitions).
            colTop = controlArea.minY + m.gap
            arrangement = fallback ? .vertical : .tabletop
            column = Rect(x: controlArea.minX + m.margin, y: 0, width: controlArea.width - 2 * m.margin, height: 0)
            why.append(
                fallback
                    ? "fallback, tabletop split: map above the fold, cards layered below it"
                    : "tabletop split: the map's focus area is the whole top sub-screen, the card column the whole "
                        + "bottom one"
            )
        case nil:
            let region = regions.content
            // Apple compact height (an iPhone or the folded Duo in landscape): the cards go to a side column as in
            // Apple Maps, so the short window keeps a usable map; Android keeps Jetpack's single pane.
            let compactHeight =
                !android && !fallback && posture.verticalSizeClass == .compact
                && posture.posture.orientation == .landscape
            if (regular || compactHeight) && region.width >= m.cardColumnMinWidth + m.minimumMapWidth + 3 * m.margin {
                arrangement = .horizontal
                let width = min(m.cardColumnWidth(in: region.width), region.width - m.minimumMapWidth - 3 * m.margin)
                column = Rect(x: region.maxX - m.margin - width, y: 0, width: width, height: 0)
                mapSide = Rect(minX: region.minX, minY: region.minY, maxX: column.minX - m.margin, maxY: region.maxY)
                colTop = region.minY + m.gap
                why.append(
                    (android
                        ? rule.reason
                        : regular
                            ? "regular width (\(posture.sizeClassReason))"
                            : "compact height in landscape (\(posture.sizeClassReason))")
                        + ": map on the left, card column on the right"
                )
            } else {
                arrangement = .vertical
                column = capped(Rect(x: region.minX + m.margin, y: 0, width: region.width - 2 * m.margin, height: 0))
                colTop = 0
                why.append(
                    fallback
                        ? "cards at the bottom, layered over the full-screen map"
                        : regular
                            ? "regular width but the region (\(format(region.width)) pt) is too narrow for a map beside a card column: cards at the bottom"
                            : android
                                ? "\(rule.reason): cards at the bottom"
                                : "compact width (\(posture.sizeClassReason)): cards at the bottom"
                )
            }
        }
        if column.width > 0, posture.horizontalSizeClass == .regular, arrangement == .vertical,
            abs(column.width - m.sheetMaxWidth(platform: posture.device.platform)) < 0.01
        {
            why.append(
                "card column at most \(format(column.width)) \(posture.device.unit) wide on regular width "
                    + "(the sheet's cap), on the trailing side"
            )
        }
        switch regions.split {
        case .some: panes = [regions.content, regions.controls]
        case nil where arrangement == .horizontal:
            let region = regions.content
            panes = [
                Rect(minX: region.minX, minY: region.minY, maxX: mapSide.maxX, maxY: region.maxY),
                Rect(minX: mapSide.maxX, minY: region.minY, maxX: region.maxX, maxY: region.maxY),
            ]
        case nil: panes = [regions.content]
        }
        why.append(regions.note)
        if api.applies {
            let v = posture.osVersion
            let minimum = OSVersion.arrangementAPI
            osRule =
                api.available
                ? "iOS \(v) >= \(minimum): ArrangementView "
                    + (arrangement == .horizontal
                        ? "split, map on the left, cards in a column on the right"
                        : arrangement == .tabletop
                            ? "split along the fold: map above it, cards below it"
                            : "available, but the window is too narrow to split: cards at the bottom")
                : "iOS \(v) < \(minimum): ArrangementView unavailable, cards layered over the full-screen map (fallback)"
            why.insert(osRule!, at: 0)
        }

        // Header: at the top of the map side, shrunk on short windows but never below the back button's touch
        // target.
        let header = Rect(
            x: mapSide.minX + m.margin,
            y: mapSide.minY + m.gap,
            width: mapSide.width - 2 * m.margin,
            height: min(m.headerHeight, max(0.12 * mapSide.height, m.buttonSize))
        )
        add("header", .header, header, interactive: true, covers: true)
        let backSide = m.buttonSize
        button(
            .back,
            Rect(x: header.minX + 4, y: header.midY - backSide / 2, width: backSide, height: backSide),
            in: "header"
        )
        if arrangement == .vertical && regions.split == nil {
            colTop = header.maxY + m.gap
        }
        column.y = colTop
        column.height = max(0, colBottom - colTop)
        add("cardColumn", .cardColumn, column, interactive: false, covers: false)

        let avail = column.height
        var topLimit = colTop
        var movedToastBottom: Double?
        if input.showToast {
            let height = min(m.toastHeight, 0.12 * avail)
            var t = Rect(x: column.minX, y: colTop, width: column.width, height: height)
            if let keyboard, t.maxY > keyboard.minY - m.gap, regions.split == .horizontal {
                // The keyboard covers the top of the lower side: the toast moves above the fold, same column.
                let top = (arrangement != .horizontal ? header.maxY : regions.content.minY) + m.gap
                t = Rect(x: column.minX, y: top, width: column.width, height: min(m.toastHeight, 0.12 * mapSide.height))
                movedToastBottom = t.maxY
                why.append("toast moved above the fold: the keyboard covers the lower side")
            } else {
                topLimit = t.maxY + m.gap
            }
            add("toast", .toast, t, interactive: true, covers: true)
        }
        let cardShare = arrangement == .vertical && regions.split == nil ? 0.3 : 0.4
        // The card keeps room for its primary action's touch target when the column allows it.
        let primaryRoom = input.buttons.contains(.primaryAction) && !toolbarActive ? m.buttonSize + 2 * m.gap : 0
        let cardHeight = min(m.cardHeight, max(cardShare * avail, min(primaryRoom, 0.5 * avail)))
        let card = Rect(x: column.minX, y: colBottom - cardHeight, width: column.width, height: cardHeight).rounded
        add("card", .card, card, interactive: true, covers: true)
        let primaryHeight = min(m.primaryButtonHeight, max(0, card.height - 2 * m.gap))
        button(
            .primaryAction,
            Rect(
                x: card.minX + m.margin,
                y: card.maxY - m.gap - primaryHeight,
                width: max(0, card.width - 2 * m.margin),
                height: primaryHeight
            ),
            in: "card"
        )
        // The sheet rides on the keyboard: its bottom is the keyboard's top (the keyboard covers the home-indicator
        // inset, so no inset or gap stays between them); without a keyboard it sits a gap above the card.
        var anchor = card.minY - m.gap
        if let keyboard { anchor = min(anchor, keyboard.minY) }
        // Map buttons keep the platform's touch target; where they do not fit they are hidden (never shrunk).
        let buttonSize = m.mapButtonSize
        let focusInColumn = arrangement == .vertical && regions.split == nil
        var buttonsReserve = buttonSize + m.gap
        var focusReserve = focusInColumn ? m.minimumFocusShare * avail : 0
        var stackTop = anchor + m.gap
        var showButtons = true
        if input.showSheet {
            // Crowded (short window, keyboard up): the sheet's text field wins over the map buttons, then over the
            // focus area's preferred share (it keeps `crowdedFocusHeight`).
            let minimumSheet = min(
                m.textFieldHeight + m.textFieldPadding,
                LayoutEngine.sheetContentHeight(tags: input.tags, sheetWidth: column.width, metrics: m).total
            )
            if anchor - topLimit - buttonsReserve - focusReserve < minimumSheet {
                showButtons = false
                buttonsReserve = 0
                why.append("map buttons hidden: the sheet needs the room")
            }
            if focusInColumn && anchor - topLimit - focusReserve < minimumSheet {
                focusReserve = min(focusReserve, m.crowdedFocusHeight)
            }
            if anchor - topLimit - focusReserve < minimumSheet, movedToastBottom == nil,
                rects.contains(where: { $0.name == "toast" })
            {
                // Still crowded: the text field wins over the toast too.
                rects.removeAll { $0.name == "toast" }
                topLimit = colTop
                why.append("toast hidden: the sheet needs the room")
            }
            var largest = max(0, anchor - topLimit - buttonsReserve - focusReserve)
            var bottom = anchor
            var moved = false
            if largest < minimumSheet, regions.split == .horizontal {
                // Tabletop with the keyboard filling the lower side: the sheet moves above the fold (same column),
                // like Flutter's DisplayFeatureSubScreen picking the other sub-screen.
                let altBottom = min(regions.content.maxY - m.gap, (keyboard?.minY ?? .infinity) - m.gap)
                let altTop = max(header.maxY, movedToastBottom ?? 0) + m.gap
                let altLargest = max(0, altBottom - altTop - m.crowdedFocusHeight)
                if altLargest > largest {
                    bottom = altBottom
                    largest = altLargest
                    moved = true
                    why.append("sheet moved above the fold: the keyboard leaves no room below it")
                }
            }
            let band = capped(column)
            let sheet = JourneySheet.place(
                builder: &self,
                x: band.minX,
                width: band.width,
                bottom: bottom,
                largest: largest
            )
            if !moved { stackTop = sheet.minY }
        }
        let buttonsTop = stackTop - m.gap - buttonSize
        if !showButtons {
            // Already explained.
        } else if buttonsTop >= topLimit - Rect.tolerance {
            for i in 0..<m.mapButtonCount {
                let x = column.maxX - Double(i + 1) * buttonSize - Double(i) * m.gap
                guard x >= column.minX - Rect.tolerance else { break }
                let b = Rect(x: x, y: buttonsTop, width: buttonSize, height: buttonSize)
                add("mapButton.\(i + 1)", .mapButton, b, interactive: true, covers: true)
            }
        } else {
            why.append("map buttons hidden: no room above the card stack")
        }

        // Focus area: the map side minus what covers it, measured from the rects placed above (field report 000:
        // covered frames, not fixed numbers). A coverer in the lower half cuts from the bottom, else from the top.
        var focus = Rect(minX: mapSide.minX, minY: mapSide.minY, maxX: mapSide.maxX, maxY: mapSide.maxY)
        // The keyboard first: it covers the bottom edge, and what rides on it is then judged against the map
        // above it.
        let coverers = (keyboard.map { [$0] } ?? []) + rects.filter(\.coversMap).map(\.rect)
        for c in coverers where c.intersects(focus) {
            if c.midY > focus.midY {
                focus = Rect(minX: focus.minX, minY: focus.minY, maxX: focus.maxX, maxY: max(focus.minY, c.minY))
            } else {
                focus = Rect(minX: focus.minX, minY: min(c.maxY, focus.maxY), maxX: focus.maxX, maxY: focus.maxY)
            }
        }
        add("focusArea", .focusArea, focus, interactive: false, covers: false)
        let fitting = LayoutEngine.fittingArea(focus: focus, ratios: m.fittingRatios)
        add("fittingArea", .fittingArea, fitting, interactive: false, covers: false)
        let pin = Rect(
            x: focus.midX - min(m.pinSize.width, focus.width) / 2,
            y: focus.midY - min(m.pinSize.height, focus.height) / 2,
            width: min(m.pinSize.width, focus.width),
            height: min(m.pinSize.height, focus.height)
        )
        add("pin", .pin, pin, interactive: false, covers: false)
        camera = MapCamera.fit(markers: input.markers, fittingArea: fitting.rounded, mapRect: window)
        reason = why.joined(separator: "; ")
    }

    // MARK: - Column and full-screen screens

    mutating func columnOrFullScreen(fullScreen: Bool) {
        let regions = regions(preferSingleSideForVertical: true)
        var why: [String] = []
        let content = regions.content
        let controls = regions.controls
        var band: (x: Double, width: Double)
        if fullScreen {
            arrangement = .fullScreen
            add("content", .content, posture.window, interactive: false, covers: false)
            band = (controls.minX, controls.width)
            let cap = m.sheetMaxWidth(platform: posture.device.platform)
            if posture.horizontalSizeClass == .regular && controls.width > cap {
                band = ((controls.midX - cap / 2).roundedToHundredths, cap)
                why.append(
                    "fullScreen: content uses the whole window; on regular width sheets and toasts are at most "
                        + "\(format(cap)) \(posture.device.unit) wide, centred in the controls region"
                )
            } else {
                why.append("fullScreen: content uses the whole window; sheets and toasts span the controls region")
            }
        } else {
            arrangement = .column
            let width = min(m.columnMaxWidth, content.width)
            let column = Rect(
                x: (content.midX - width / 2).roundedToHundredths,
                y: content.minY,
                width: width,
                height: content.height
            )
            add("column", .column, column, interactive: true, covers: false)
            band = (column.minX, column.width)
            why.append("column: content \(format(width)) pt wide (at most \(format(m.columnMaxWidth))), centred")
        }
        panes = regions.split != nil ? [content, controls] : [content]
        why.append(regions.note)
        let holder =
            fullScreen
            ? content.insetBy(dx: m.margin, dy: 0)
            : Rect(x: band.x, y: content.minY, width: band.width, height: content.height)
        let parent: String? = fullScreen ? nil : "column"
        let side = m.buttonSize
        let back = Rect(x: holder.minX + 4, y: holder.minY + m.gap, width: side, height: side)
        let backDrawn = button(.back, back, in: parent)
        let primaryHeight = min(m.primaryButtonHeight, max(0, holder.height - side - 3 * m.gap))
        let primary = Rect(
            x: holder.minX + m.margin,
            y: holder.maxY - m.gap - primaryHeight,
            width: max(0, holder.width - 2 * m.margin),
            height: primaryHeight
        )
        let primaryDrawn = button(.primaryAction, primary, in: parent)
        // The toast and the sheet stay clear of the back button (below it) and of the primary action (above it).
        let gap = m.gap
        func belowBack(_ top: Double, _ x: Double, _ width: Double) -> Double {
            guard backDrawn, back.maxX > x, back.minX < x + width, back.maxY + gap > top, back.minY < top + 1
            else { return top }
            return back.maxY + gap
        }
        let sheetTop = belowBack(controls.minY + m.sheetTopGap, band.x, band.width)
        var topLimit = sheetTop
        var movedToastBottom: Double?
        var toastRect: Rect?
        if input.showToast {
            let x = band.x + (fullScreen ? m.margin : 0)
            let width = band.width - (fullScreen ? 2 * m.margin : 0)
            var toast = Rect(
                x: x,
                y: belowBack(controls.minY + m.gap, x, width),
                width: width,
                height: min(m.toastHeight, 0.12 * controls.height)
            )
            if let keyboard, toast.maxY > keyboard.minY - m.gap, regions.split != nil {
                // The keyboard covers the top of the lower side: the toast moves above the fold.
                toast.y = belowBack(content.minY + m.gap, x, width)
                toast.height = min(m.toastHeight, 0.12 * content.height)
                movedToastBottom = toast.maxY
                why.append("toast moved above the fold: the keyboard covers the lower side")
            } else {
                topLimit = max(topLimit, toast.maxY + m.gap)
            }
            toastRect = toast
        }
        if input.showSheet {
            var bottom = controls.maxY
            if primaryDrawn, primary.maxX > band.x, primary.minX < band.x + band.width, primary.minY < bottom {
                bottom = primary.minY - m.gap
            }
            if let keyboard { bottom = min(bottom, keyboard.minY) }
            var largest = max(0, bottom - topLimit)
            let minimumSheet = min(
                m.textFieldHeight + m.textFieldPadding,
                LayoutEngine.sheetContentHeight(tags: input.tags, sheetWidth: band.width, metrics: m).total
            )
            if largest < minimumSheet, movedToastBottom == nil, toastRect != nil {
                // Crowded (short window, keyboard up): the sheet's text field wins over the toast.
                toastRect = nil
                topLimit = sheetTop
                largest = max(0, bottom - topLimit)
                why.append("toast hidden: the sheet needs the room")
            }
            if largest < minimumSheet, regions.split != nil {
                // The keyboard fills the lower side: the sheet moves above the fold.
                var altBottom = min(content.maxY, (keyboard?.minY ?? .infinity))
                if primaryDrawn, primary.minY < altBottom, primary.maxY > content.minY {
                    altBottom = primary.minY - m.gap
                }
                let altTop = belowBack(
                    max(content.minY + m.sheetTopGap, (movedToastBottom ?? 0) + m.gap),
                    band.x,
                    band.width
                )
                let altLargest = max(0, altBottom - altTop)
                if altLargest > largest {
                    bottom = altBottom
                    largest = altLargest
                    why.append("sheet moved above the fold: the keyboard leaves no room below it")
                }
            }
            if let toastRect { add("toast", .toast, toastRect, interactive: true, covers: true, in: parent) }
            toastRect = nil
            _ = JourneySheet.place(
                builder: &self,
                x: band.x,
                width: band.width,
                bottom: bottom,
                largest: largest,
                in: parent
            )
        }
        if let toastRect { add("toast", .toast, toastRect, interactive: true, covers: true, in: parent) }
        reason = why.joined(separator: "; ")
    }

    // MARK: - Decorations and invariants

    mutating func finish() -> LayoutResult {
        placeToolbar()
        if !hiddenButtons.isEmpty { reason += "; " + hiddenButtons.joined(separator: "; ") }
        if let keyboard { add("keyboard", .keyboard, keyboard, interactive: false, covers: true) }
        if let hinge = posture.hinge { add("hinge", .hinge, hinge, interactive: false, covers: false) }
        if let reserved = posture.reservedRegion {
            add("reservedRegion", .reservedRegion, reserved, interactive: false, covers: false)
        }
        if let island = posture.dynamicIsland {
            add("dynamicIsland", .dynamicIsland, island, interactive: false, covers: false)
        }
        var result = LayoutResult(
            deviceID: posture.device.id,
            deviceName: posture.device.name,
            screenName: posture.screenName,
            foldState: posture.posture.foldState,
            orientation: posture.posture.orientation,
            screenLayout: input.screen,
            horizontalSizeClass: posture.horizontalSizeClass,
            verticalSizeClass: posture.verticalSizeClass,
            windowWidthClass: posture.windowWidthClass,
            windowHeightClass: posture.windowHeightClass,
            panes: panes.map(\.rounded),
            rects: rects,
            arrangement: arrangement,
            reason: reason,
            osVersion: posture.osVersion,
            osRule: osRule,
            toolbar: toolbar,
            camera: camera,
            sheetContentHeight: sheetContentHeight,
            sheetLargestDetent: sheetLargestDetent,
            sheetScrolls: sheetScrolls,
            presentations: presentations,
            truncations: truncations,
            invariants: [],
            textMeasurer: input.measurer.fontDescription
        )
        result.invariants = Invariants.check(result, posture: posture, metrics: m)
        return result
    }
}

extension Builder {
    /// Places the vertical-edge toolbar and the buttons moved into it: cancellation actions first below the status
    /// cluster, then primary actions, each 44 pt and centred in the bar, stepping past the keep-out region.
    ///
    /// - Note: Source: field report 000 (back → `.cancellationAction` in the system toolbar on the vertical edge);
    ///   https://github.com/berkaycatak/adaptive_platform_ui/releases/tag/v1.0.1 [3rd-party, measured]: the strip
    ///   reads from the top "status cluster, back button, toolbar items, tab bar".
    mutating func placeToolbar() {
        let v = posture.osVersion
        let minimum = OSVersion.arrangementAPI
        guard let bar = posture.verticalBar, let edge = posture.verticalBarEdge else { return }
        guard toolbarActive else {
            reason += "; iOS \(v) < \(minimum): no vertical-edge toolbar, buttons stay in the screen"
            return
        }
        add("toolbar", .toolbar, bar, interactive: false, covers: false)
        let ordered =
            movedButtons.filter { $0.placement == .cancellationAction }
            + movedButtons.filter { $0.placement == .primaryAction }
        var items: [ToolbarItem] = []
        var y = bar.minY + m.toolbarStatusHeight
        let side = min(m.buttonSize, bar.width)
        for kind in ordered {
            var r = Rect(x: bar.midX - side / 2, y: y, width: side, height: side)
            if let keep = posture.keepOutRegion, r.intersects(keep) { r.y = keep.maxY + m.gap }
            guard bar.contains(r) else {
                reason += "; toolbar full: \(kind.rawValue) not shown"
                continue
            }
            let name = "toolbar.\(kind.rawValue)"
            items.append(ToolbarItem(name: name, button: kind, placement: kind.placement, rect: r.rounded))
            add(name, .toolbarItem, r, interactive: false, covers: false)
            y = r.maxY + m.gap
        }
        toolbar = Toolbar(edge: edge, rect: bar, items: items)
        let moved = ordered.isEmpty ? "no buttons" : ordered.map(\.rawValue).joined(separator: ", ")
        reason += "; iOS \(v) >= \(minimum): toolbar on the \(edge.rawValue) edge, \(moved) moved into it"
    }
}

/// The tag editor sheet of field report 004.
private enum JourneySheet {
    /// Places the sheet with its bottom at `bottom`, clamped to `largest`; returns the sheet rect.
    ///
    /// Inside it: the text field `textFieldPadding` above the bottom, the tag rows above the field, and the close
    /// button at the trailing end of the field's row (the field ends a gap before it), so the close button overlaps
    /// neither the field nor the tags. Where the vertical-edge toolbar takes the close button, the field spans the
    /// sheet.
    static func place(
        builder: inout Builder,
        x: Double,
        width: Double,
        bottom: Double,
        largest: Double,
        in container: String? = nil
    ) -> Rect {
        let m = builder.m
        let (content, tagsHeight) = LayoutEngine.sheetContentHeight(
            tags: builder.input.tags,
            sheetWidth: width,
            metrics: m
        )
        let height = min(content, largest)
        builder.sheetContentHeight = content.roundedToHundredths
        builder.sheetLargestDetent = largest.roundedToHundredths
        builder.sheetScrolls = content > largest + Rect.tolerance
        let sheet = Rect(x: x, y: bottom - height, width: width, height: height)
        builder.add("sheet", .sheet, sheet, interactive: true, covers: true, in: container)
        let fieldHeight = min(m.textFieldHeight, height)
        var field = Rect(
            x: x + m.margin,
            y: max(sheet.minY, sheet.maxY - m.textFieldPadding - m.textFieldHeight),
            width: max(0, width - 2 * m.margin),
            height: fieldHeight
        )
        // The close button at the trailing end of the field's row, vertically centred on the field and kept inside
        // the sheet.
        let closeSide = m.buttonSize
        let close = Rect(
            x: sheet.maxX - m.margin - closeSide,
            y: max(sheet.minY, min(field.midY - closeSide / 2, sheet.maxY - closeSide)),
            width: closeSide,
            height: min(closeSide, sheet.height)
        )
        builder.add("textField", .textField, field, interactive: true, covers: true, in: "sheet")
        let fieldIndex = builder.rects.count - 1
        if builder.button(.close, close, in: "sheet") {
            field.width = max(0, close.minX - m.gap - field.minX)
            builder.rects[fieldIndex].rect = field.rounded
        }
        if builder.input.tags > 0 {
            let visible = max(0, min(tagsHeight, field.minY - m.tagsSpacing - sheet.minY))
            let tags = Rect(
                x: x + m.margin,
                y: field.minY - m.tagsSpacing - visible,
                width: max(0, width - 2 * m.margin),
                height: visible
            )
            builder.add("tags", .tags, tags, interactive: true, covers: true, in: "sheet")
        }
        return sheet
    }
}

/// `(x, y, w×h)` with two decimals.
func describe(_ r: Rect) -> String {
    "(\(format(r.x)), \(format(r.y)), \(format(r.width))x\(format(r.height)))"
}

extension LayoutMetrics {
    /// Card column width in the horizontal arrangement: `cardColumnShare` of the region, within the bounds.
    func cardColumnWidth(in regionWidth: Double) -> Double {
        min(max(regionWidth * cardColumnShare, cardColumnMinWidth), cardColumnMaxWidth)
    }
}
