import Testing

@testable import LiveBusLayout

struct ToolbarTests {
    /// Where the Duo has its vertical bar (outer display both orientations, inner display in landscape) and the OS
    /// is 27.1 or later, the 84 pt toolbar on the right edge takes back, close and the primary action: back and
    /// close as cancellation actions first below the status cluster, then the primary action; none stays in the
    /// screen. Source: field report 000 (`.adaptiveStyle(.back, placement: .cancellationAction)`; buttons in the
    /// system toolbar, not inside the screen); https://dev.classmethod.jp/en/articles/ios27-1-iphone-duo-vertical-bar/
    /// (outer display and inner landscape; inner portrait keeps horizontal bars);
    /// https://developer.apple.com/documentation/swiftui/environmentvalues/toolbarverticaledge (iOS 27.1).
    @Test(arguments: [
        (FoldState.folded, Orientation.portrait, Rect(x: 382, y: 0, width: 84, height: 678), 402.0),
        (.folded, .landscape, Rect(x: 594, y: 0, width: 84, height: 466), 614.0),
        (.flat, .landscape, Rect(x: 867, y: 0, width: 84, height: 669), 887.0),
        (.halfOpened, .landscape, Rect(x: 867, y: 0, width: 84, height: 669), 887.0),
    ])
    func duoToolbarTakesTheButtons(fold: FoldState, orientation: Orientation, bar: Rect, itemX: Double) throws {
        let r = try layout("iphone-duo", fold, orientation, sheet: true, toast: true)
        let toolbar = try #require(r.toolbar)
        #expect(toolbar.edge == .right)
        #expect(toolbar.rect == bar)
        #expect(toolbar.items.map(\.name) == ["toolbar.back", "toolbar.close", "toolbar.primaryAction"])
        #expect(toolbar.items.map(\.placement) == [.cancellationAction, .cancellationAction, .primaryAction])
        #expect(
            toolbar.items.map(\.rect) == [
                Rect(x: itemX, y: 44, width: 44, height: 44),
                Rect(x: itemX, y: 96, width: 44, height: 44),
                Rect(x: itemX, y: 148, width: 44, height: 44),
            ]
        )
        #expect(r.rects(.button).isEmpty)
        #expect(r.rects(.toolbarItem).map(\.name) == toolbar.items.map(\.name))
        #expect(
            r.reason.hasSuffix("iOS 27.1 >= 27.1: toolbar on the right edge, back, close, primaryAction moved into it")
        )
        #expect(r.failedInvariants.isEmpty, "\(r.failedInvariants)")
        #expect(r.invariants.contains { $0.name == "noButtonDrawnTwice" && $0.holds })
        #expect(r.invariants.contains { $0.name == "noToolbarItemInReservedRegion" && $0.holds })
    }

    /// The placement of each button the report names: back → cancellation action (report), close → cancellation
    /// action, primary action → primary action. Source: field report 000; SwiftUI `ToolbarItemPlacement`.
    @Test func placements() {
        #expect(ScreenButton.back.placement == .cancellationAction)
        #expect(ScreenButton.close.placement == .cancellationAction)
        #expect(ScreenButton.primaryAction.placement == .primaryAction)
    }

    /// Before iOS 27.1, on the inner screen in portrait (horizontal bars), on phones without a vertical bar, and in
    /// a window that does not reach the bar, the buttons stay where they were: back in the header, close on the
    /// sheet, the primary action at the bottom of the card. Source: field report 000 (the wrapper keeps the old
    /// result before iOS 27); LiveBus issue 11.
    @Test(arguments: [
        ("iphone-duo", FoldState.folded, Orientation.portrait, "26.4", nil as Size?),
        ("iphone-duo", .flat, .landscape, "27.0", nil),
        ("iphone-duo", .flat, .portrait, "27.1", nil),
        ("iphone-duo", .folded, .portrait, "27.1", Size(width: 380, height: 678)),
        ("iphone-16-pro", .flat, .portrait, "27.1", nil),
        ("galaxy-z-fold6", .folded, .portrait, "27.1", nil),
    ])
    func buttonsStayInTheScreen(deviceID: String, fold: FoldState, orientation: Orientation, os: String, window: Size?)
        throws
    {
        let r = try layout(
            deviceID,
            fold,
            orientation,
            window: window,
            sheet: true,
            toast: true,
            os: try #require(OSVersion(os))
        )
        #expect(r.toolbar == nil)
        #expect(r.rects(.toolbarItem).isEmpty)
        #expect(r.rects(.button).map(\.name) == ["button.back", "button.primaryAction", "button.close"])
        let header = try #require(r.rect("header"))
        let card = try #require(r.rect("card"))
        let sheet = try #require(r.rect("sheet"))
        #expect(header.contains(try #require(r.rect("button.back"))))
        #expect(card.contains(try #require(r.rect("button.primaryAction"))))
        #expect(sheet.contains(try #require(r.rect("button.close"))))
        #expect(r.failedInvariants.isEmpty, "\(r.failedInvariants)")
    }

    /// Exact in-screen rects on the folded Duo before 27.1 (outer 466×678, trailing bar inset 84). Source: field
    /// report 000; HIG 44 pt hit target.
    @Test func inScreenButtonNumbers() throws {
        let r = try layout("iphone-duo", .folded, sheet: true, toast: true, os: OSVersion(26, 4))
        #expect(r.rect("button.back") == Rect(x: 20, y: 14, width: 44, height: 44))
        #expect(r.rect("button.primaryAction") == Rect(x: 32, y: 604, width: 318, height: 50))
        // Close at the trailing end of the text field's row (issue 18), not over the field at the sheet's corner.
        #expect(r.rect("button.close") == Rect(x: 306, y: 413, width: 44, height: 44))
        #expect(r.rect("textField") == Rect(x: 32, y: 409, width: 266, height: 52))
        #expect(r.reason.hasSuffix("iOS 26.4 < 27.1: no vertical-edge toolbar, buttons stay in the screen"))
        // Column screens: back at the top of the column, the primary action at its bottom.
        let column = try layout("iphone-16-pro", screen: .column)
        #expect(column.rect("button.back") == Rect(x: 4, y: 70, width: 44, height: 44))
        #expect(column.rect("button.primaryAction") == Rect(x: 16, y: 782, width: 370, height: 50))
    }

    /// The invariants fail when a button is drawn twice or a toolbar item falls in the reserved region (checked on
    /// doctored results, so the checks can fail). Source: LiveBus issue 11 (invariants).
    @Test func invariantsCatchDuplicatesAndReservedRegion() throws {
        let p = try posture("iphone-duo", .halfOpened, .landscape)
        var r = try layout("iphone-duo", .halfOpened, .landscape, sheet: true)
        r.rects.append(
            NamedRect(
                name: "button.back",
                role: .button,
                rect: Rect(x: 20, y: 14, width: 44, height: 44),
                interactive: true,
                coversMap: true
            )
        )
        var toolbar = try #require(r.toolbar)
        toolbar.items[0].rect = Rect(x: 887, y: 300, width: 44, height: 44)
        toolbar.rect = Rect(x: 430, y: 0, width: 84, height: 669)
        toolbar.items[1].rect = Rect(x: 450, y: 300, width: 44, height: 44)
        r.toolbar = toolbar
        let outcomes = Invariants.check(r, posture: p, metrics: .standard)
        let twice = try #require(outcomes.first { $0.name == "noButtonDrawnTwice" })
        #expect(!twice.holds)
        #expect(twice.detail == "back drawn 2 times: toolbar.back, button.back")
        let reserved = try #require(outcomes.first { $0.name == "noToolbarItemInReservedRegion" })
        #expect(!reserved.holds)
        #expect(
            reserved.detail
                == "toolbar.back (887, 300, 44x44) leaves the toolbar (430, 0, 84x669); "
                + "toolbar.close (450, 300, 44x44) intersects the reserved region (443.5, 0, 64x669); "
                + "toolbar.primaryAction (887, 148, 44x44) leaves the toolbar (430, 0, 84x669)"
        )
    }

    /// `buttons: []` draws no button and leaves an empty toolbar. Source: LiveBus issue 11 (the toolbar lists its
    /// items).
    @Test func noButtonsNoItems() throws {
        let r = try layout("iphone-duo", .flat, .landscape, buttons: [])
        #expect(r.toolbar?.items == [])
        #expect(r.rects(.button).isEmpty)
        #expect(r.reason.hasSuffix("toolbar on the right edge, no buttons moved into it"))
    }
}
