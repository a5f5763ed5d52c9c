import Testing

@testable import LiveBusLayout

struct LayoutRuleTests {
    /// Column screens: content at most 520 pt, centred (T6: iPad mini 744 → 112…632). Source: field report 000
    /// (`.column` 본문을 최대 520pt 너비로 중앙에 정렬); posture-and-devices.md T6.
    @Test func columnIsAtMost520Centred() throws {
        let mini = try layout("ipad-mini", screen: .column)
        #expect(mini.rect("column") == Rect(x: 112, y: 24, width: 520, height: 1089))
        #expect(mini.arrangement == .column)
        let se = try layout("iphone-se-3", screen: .column)
        #expect(se.rect("column") == Rect(x: 0, y: 20, width: 375, height: 647))
    }

    /// Half-opened, the 520 pt column that straddled the fold moves wholly to one side (the wider; ties go
    /// trailing). Source: T6 (Duo 215.5…735.5 straddles 475.5; Surface Duo 297…817 straddles the hinge).
    @Test func columnMovesOffTheReservedRegion() throws {
        let duo = try layout("iphone-duo", .halfOpened, .landscape, screen: .column)
        #expect(duo.rect("column") == Rect(x: 0, y: 0, width: 443.5, height: 669))
        let surface = try layout("surface-duo-2", .flat, screen: .column)
        #expect(surface.rect("column") == Rect(x: 572.8, y: 24, width: 520, height: 708.8))
        #expect(surface.reason.contains("everything on the right side"))
    }

    /// Fitting area = focus area inset by 0.03/0.1/0.03/0.1 of the focus area itself. Source: field report 000;
    /// T7: focus (0,0,402,500) → (40.2, 15, 321.6, 470).
    @Test func fittingAreaUsesRatiosOfTheFocusArea() throws {
        #expect(
            LayoutEngine.fittingArea(focus: Rect(x: 0, y: 0, width: 402, height: 500)).rounded
                == Rect(x: 40.2, y: 15, width: 321.6, height: 470)
        )
        // In a real layout, the insets follow the focus area, not the screen.
        let r = try layout("iphone-16-pro", toast: true)
        let focus = try #require(r.rect("focusArea"))
        let fitting = try #require(r.rect("fittingArea"))
        #expect(focus == Rect(x: 0, y: 182, width: 402, height: 410))
        #expect(fitting == Rect(x: 40.2, y: 194.3, width: 321.6, height: 385.4))
    }

    /// Compact width: cards at the bottom; the focus area is the map minus header, toast, map buttons, sheet and
    /// card, measured from their rects ("vertical 정렬"). Source: field report 000.
    @Test func verticalArrangementOnAPhone() throws {
        let r = try layout("iphone-16-pro", tags: 0, sheet: true, toast: true)
        #expect(r.arrangement == .vertical)
        #expect(r.rect("header") == Rect(x: 16, y: 70, width: 370, height: 56))
        #expect(r.rect("toast") == Rect(x: 16, y: 134, width: 370, height: 48))
        #expect(r.rect("card") == Rect(x: 16, y: 644, width: 370, height: 180))
        #expect(r.rect("sheet") == Rect(x: 16, y: 568, width: 370, height: 68))
        #expect(r.rect("mapButton.1") == Rect(x: 342, y: 516, width: 44, height: 44))
        #expect(r.rect("mapButton.2") == Rect(x: 290, y: 516, width: 44, height: 44))
        #expect(r.rect("focusArea") == Rect(x: 0, y: 182, width: 402, height: 334))
        // Without the sheet the focus area grows down to the buttons above the card.
        let plain = try layout("iphone-16-pro")
        #expect(plain.rect("focusArea") == Rect(x: 0, y: 126, width: 402, height: 466))
    }

    /// Regular width (iPhone Duo unfolded): map on the left, cards in a column on the right; the focus area is the
    /// map beside the cards; half-opened the column stays on the right of the fold and the focus area stops at the
    /// reserved region. Source: field report 000 (지도를 왼쪽에, 오버레이 카드를 오른쪽에; "horizontal 정렬").
    @Test func horizontalArrangementOnDuo() throws {
        let flat = try layout("iphone-duo", .flat, .landscape, sheet: true, toast: true)
        #expect(flat.arrangement == .horizontal)
        #expect(flat.rect("cardColumn") == Rect(x: 504.2, y: 8, width: 346.8, height: 645))
        #expect(flat.rect("focusArea") == Rect(x: 0, y: 64, width: 488.2, height: 605))
        #expect(flat.rect("card") == Rect(x: 504.2, y: 473, width: 346.8, height: 180))
        let half = try layout("iphone-duo", .halfOpened, .landscape, sheet: true, toast: true)
        #expect(half.arrangement == .horizontal)
        #expect(half.rect("cardColumn") == Rect(x: 523.5, y: 8, width: 327.5, height: 645))
        #expect(half.rect("focusArea") == Rect(x: 0, y: 64, width: 443.5, height: 605))
        #expect(half.failedInvariants.isEmpty)
        // The card column is right of the fold (475.5) in both postures.
        for r in [flat, half] { #expect(try #require(r.rect("cardColumn")).minX > 475.5) }
        // Folded: compact outer screen, cards at the bottom.
        let folded = try layout("iphone-duo", .folded, sheet: true)
        #expect(folded.arrangement == .vertical)
        #expect(folded.rect("card") == Rect(x: 16, y: 485, width: 350, height: 177))
    }

    /// Half-opened tabletop (Flip6): no interactive element crosses the reserved region; map focus above the
    /// fold, cards, sheet and toast below. Source: field report 000 (reserved region); Samsung Flex mode.
    @Test func tabletopKeepsControlsBelowTheFold() throws {
        let r = try layout("galaxy-z-flip6", .halfOpened, sheet: true, toast: true)
        let reserved = try #require(r.rect("reservedRegion"))
        for e in r.rects where e.interactive {
            #expect(!e.rect.intersects(reserved), "\(e.name)")
        }
        #expect(try #require(r.rect("card")).minY >= reserved.maxY)
        #expect(try #require(r.rect("sheet")).minY >= reserved.maxY)
        #expect(try #require(r.rect("focusArea")).maxY <= reserved.minY)
        #expect(r.invariants.first { $0.name == "noInteractiveAcrossReservedRegion" }?.holds == true)
    }

    /// Surface Duo 2 flat: the physical hinge hides content, so the map and the card column sit on either side.
    /// Source: FoldingFeature.OcclusionType.FULL; posture-and-devices.md T4 (panes 540 | 540 around the hinge).
    @Test func occludingHingeSplitsEvenFlat() throws {
        let r = try layout("surface-duo-2", .flat, sheet: true, toast: true)
        #expect(r.arrangement == .horizontal)
        #expect(r.rect("focusArea") == Rect(x: 0, y: 88, width: 537.6, height: 644.8))
        #expect(try #require(r.rect("cardColumn")).minX >= 564)
    }

    /// A screen's declaration reaches its sheets and toasts: overlay → in the card column above the card;
    /// column → centred in the column; fullScreen → across the controls region, at most 580 pt wide and centred on
    /// regular width (issue 18: 1180 pt on an iPad in landscape was the defect). Source: field report 000
    /// (screenLayout propagated through the environment to sheets and toasts); iOS form sheet ~580 pt [3rd-party].
    @Test func sheetsAndToastsFollowTheScreenDeclaration() throws {
        let overlay = try layout("ipad-air-11", .flat, .landscape, sheet: true, toast: true)
        let column = try #require(overlay.rect("cardColumn"))
        let sheet = try #require(overlay.rect("sheet"))
        #expect(sheet.minX == column.minX && sheet.width == column.width)
        let card = try #require(overlay.rect("card"))
        #expect(sheet.maxY == card.minY - 8)
        #expect(try #require(overlay.rect("toast")).minX == column.minX)
        let columnScreen = try layout("ipad-air-11", .flat, .landscape, screen: .column, sheet: true, toast: true)
        #expect(columnScreen.rect("sheet")?.minX == 330)
        #expect(columnScreen.rect("sheet")?.width == 520)
        #expect(columnScreen.rect("toast")?.midX == 590)
        let full = try layout("ipad-air-11", .flat, .landscape, screen: .fullScreen, sheet: true, toast: true)
        #expect(full.rect("content") == Rect(x: 0, y: 0, width: 1180, height: 820))
        #expect(full.rect("sheet")?.width == 580)
        #expect(full.rect("sheet")?.midX == 590)
        #expect(full.failedInvariants.isEmpty, "\(full.failedInvariants)")
        // Compact width keeps the full-width sheet (iPhone portrait).
        let phone = try layout("iphone-16-pro", screen: .fullScreen, sheet: true)
        #expect(phone.rect("sheet")?.width == 402)
    }

    /// Content-fitting sheet: field + 16 + tags + (8 if any tag), recomputed as tags are added or removed.
    /// Source: field report 004; T8 (52 → 68; 52 + 32 → 108).
    @Test(arguments: [(0, 68.0), (1, 108.0), (3, 108.0), (5, 148.0), (9, 188.0)])
    func sheetFitsItsContent(tags: Int, height: Double) throws {
        #expect(LayoutEngine.sheetContentHeight(tags: tags, sheetWidth: 370, metrics: .standard).total == height)
        let r = try layout("iphone-16-pro", tags: tags, sheet: true)
        #expect(r.rect("sheet")?.height == height)
        #expect(r.sheetContentHeight == height)
        #expect(r.sheetScrolls == false)
    }

    /// The sheet is clamped to the largest detent the window allows; its content then scrolls.
    /// Source: field report 004 (presentationDetents), LiveBus issue (clamped to the largest detent).
    @Test func sheetClampsToLargestDetent() throws {
        let r = try layout("iphone-16-pro", tags: 40, sheet: true)
        #expect(r.sheetContentHeight == 628)
        #expect(r.sheetLargestDetent == 346.5)
        #expect(r.rect("sheet")?.height == 346.5)
        #expect(r.sheetScrolls)
        let tags = try #require(r.rect("tags"))
        let tagsHeight: Double = 346.5 - 68 - 8  // the largest detent less the header and the gap
        #expect(tags.height == tagsHeight)
    }

    /// With the text field focused the sheet sits above the keyboard height given in the posture.
    /// Source: field report 004 (키보드와 입력 필드); LiveBus issue.
    @Test func focusedSheetSitsAboveKeyboard() throws {
        let r = try layout("iphone-16-pro", keyboard: 336, tags: 1, focused: true, sheet: true)
        #expect(r.rect("keyboard") == Rect(x: 0, y: 538, width: 402, height: 336))
        // The sheet rides on the keyboard (issue 18): its bottom is the keyboard top, 538.
        #expect(r.rect("sheet") == Rect(x: 16, y: 430, width: 370, height: 108))
        // The field ends a gap before the close button at the trailing end of its row (issue 18: the close button
        // sat over the field).
        #expect(r.rect("textField") == Rect(x: 32, y: 470, width: 286, height: 52))
        #expect(r.rect("button.close") == Rect(x: 326, y: 474, width: 44, height: 44))
        let column = try layout("iphone-16-pro", screen: .column, keyboard: 336, focused: true, sheet: true)
        #expect(column.rect("sheet")?.maxY == 538)
    }

    /// Tabletop with the keyboard filling the lower side: the toast and the sheet move above the fold, still in
    /// the column and clear of the reserved region. Source: field report 000 (reserved region); Flutter
    /// DisplayFeatureSubScreen (posture-and-devices.md §4: pick the other sub-screen).
    @Test func keyboardInTabletopMovesSheetAndToastAboveTheFold() throws {
        let r = try layout(
            "iphone-duo",
            .halfOpened,
            .portrait,
            screen: .column,
            window: Size(width: 588, height: 709.5),
            keyboard: 230,
            tags: 7,
            focused: true,
            sheet: true,
            toast: true
        )
        let reserved = try #require(r.rect("reservedRegion"))
        #expect(reserved == Rect(x: 0, y: 443.5, width: 588, height: 64))
        // The toast sits below the back button (92…136), the sheet above the primary action (385.5…435.5).
        #expect(r.rect("button.back") == Rect(x: 38, y: 92, width: 44, height: 44))
        #expect(r.rect("toast") == Rect(x: 34, y: 144, width: 520, height: 43.14))
        #expect(r.rect("button.primaryAction") == Rect(x: 50, y: 385.5, width: 488, height: 50))
        let sheet = try #require(r.rect("sheet"))
        #expect(sheet.maxY == 377.5)
        #expect(sheet.minX == 34 && sheet.width == 520)
        #expect(r.reason.contains("sheet moved above the fold"))
        #expect(r.failedInvariants.isEmpty)
    }

    /// Map camera: refit on every posture change and every rider move. Source: LiveBus issue (map camera).
    @Test func cameraRefitsOnPostureChangeAndRiderMove() throws {
        let flat = try layout("iphone-duo", .flat, .landscape)
        let half = try layout("iphone-duo", .halfOpened, .landscape)
        #expect(flat.camera != half.camera)
        var moved = OfflineLayoutRequest.sampleMarkers
        moved[2].latitude += 0.004
        let riderMoved = try layout("iphone-duo", .flat, .landscape, markers: moved)
        #expect(riderMoved.camera != flat.camera)
        for r in [flat, half, riderMoved] {
            #expect(r.invariants.first { $0.name == "markersInsideFittingArea" }?.holds == true)
        }
    }
}
