import Testing

@testable import LiveBusLayout

/// The keyboard as a layout input (issue 18): the tag sheet rides on the keyboard, drops the home-indicator
/// inset, and the keyboard–text-field gap is the same with 0 and 3 tags (report 004's keyboard gap).
struct KeyboardTests {
    /// Every single-screen phone and foldable posture in portrait, keyboard at 40% of the window: the sheet's
    /// bottom is the keyboard's top on overlay and column screens, and the field's distance to the keyboard is
    /// `textFieldPadding` (16 pt) with 0 and with 3 tags. Source: field report 004 (`geometry.size.height + 16`),
    /// LiveBus issue 18.
    @Test(arguments: ["iphone-se-3", "iphone-16-pro", "iphone-16-pro-max", "galaxy-z-flip6", "pixel-9-pro-fold"])
    func sheetRidesOnTheKeyboard(deviceID: String) throws {
        for screen in [ScreenLayout.overlay, .column, .fullScreen] {
            var gaps: [Double] = []
            for tags in [0, 3] {
                let p = try posture(deviceID)
                let keyboard = (0.4 * p.window.height).rounded(.down)
                let r = try layout(
                    deviceID,
                    screen: screen,
                    keyboard: keyboard,
                    tags: tags,
                    focused: true,
                    sheet: true,
                    toast: true
                )
                let kb = try #require(r.rect("keyboard"))
                let sheet = try #require(r.rect("sheet"))
                let field = try #require(r.rect("textField"))
                #expect(
                    abs(sheet.maxY - kb.minY) < 0.01,
                    "\(deviceID) \(screen) \(tags): sheet \(sheet) keyboard \(kb)"
                )
                // The home-indicator inset is under the keyboard, not added above it.
                #expect(kb.minY < p.safeRect.maxY)
                gaps.append((kb.minY - field.maxY).roundedToHundredths)
                #expect(r.failedInvariants.isEmpty, "\(deviceID) \(screen) \(tags): \(r.failedInvariants)")
            }
            #expect(gaps == [16, 16], "\(deviceID) \(screen): \(gaps)")
        }
    }

    /// `layout --keyboard` words: a height gives the focused field and the keyboard; a bad word is refused.
    @Test func offlineRequestTakesTheKeyboard() throws {
        let req = try OfflineLayoutRequest.parse(
            device: "iphone-16-pro",
            foldState: "flat",
            orientation: "portrait",
            window: "full",
            screen: "overlay",
            tags: "3",
            keyboard: "336"
        )
        #expect(req.keyboardHeight == 336 && req.textFieldFocused)
        let (_, r) = try OfflineLayout.run(req, catalog: testCatalog)
        #expect(r.rect("keyboard") == Rect(x: 0, y: 538, width: 402, height: 336))
        #expect(r.rect("sheet")?.maxY == 538)
        #expect(throws: LayoutError.self) {
            try OfflineLayoutRequest.parse(
                device: "iphone-16-pro",
                foldState: "flat",
                orientation: "portrait",
                window: "full",
                screen: "overlay",
                tags: "0",
                keyboard: "tall"
            )
        }
    }
}
