import Testing

@testable import LiveBusLayout

/// Tabletop and stacked layouts (issue 18): the map's focus area used to be only the top-left quadrant and the
/// cards only the bottom-right; a folded Duo in landscape left a 97-pt map.
struct TabletopTests {
    /// Tabletop on every width: the focus area spans the whole top sub-screen (safe area, header excluded) and
    /// the card column the whole bottom one minus margins; nothing interactive crosses the reserved region.
    /// Source: LiveBus issue 18 (Tabletop); Samsung Flex mode (content on top, controls on the bottom half).
    @Test(arguments: [
        ("iphone-duo", Orientation.portrait), ("galaxy-z-flip6", .portrait), ("galaxy-z-fold6", .landscape),
        ("pixel-9-pro-fold", .landscape),
    ])
    func focusIsTheWholeTopAndCardsTheWholeBottom(deviceID: String, orientation: Orientation) throws {
        let p = try posture(deviceID, .halfOpened, orientation)
        let r = try layout(deviceID, .halfOpened, orientation, tags: 3, sheet: true, toast: true)
        let reserved = try #require(r.rect("reservedRegion"))
        let focus = try #require(r.rect("focusArea"))
        let column = try #require(r.rect("cardColumn"))
        let safe = p.safeRect
        #expect(r.arrangement == .tabletop, "\(r.reason)")
        #expect(focus.minX == safe.minX && focus.maxX == safe.maxX, "\(focus) vs \(safe)")
        #expect(abs(focus.maxY - reserved.minY) < 0.01)
        #expect(column.minX == safe.minX + 16 && column.maxX == safe.maxX - 16, "\(column) vs \(safe)")
        #expect(column.minY >= reserved.maxY)
        #expect(
            r.panes.count == 2 && r.panes[0].maxY <= reserved.minY + 0.01 && r.panes[1].minY >= reserved.maxY - 0.01
        )
        #expect(
            r.reason.contains("the map's focus area is the whole top sub-screen, the card column the whole bottom one")
        )
        #expect(r.failedInvariants.isEmpty, "\(r.failedInvariants)")
    }

    /// Stacked on a short landscape iPhone window (compact height): the cards go to a side column as in Apple
    /// Maps, so the map keeps its height (the folded Duo in landscape had a 97-pt focus area). Android keeps
    /// Jetpack's one pane for compact height. Source: LiveBus issue 18; Apple HIG Layout (compact height).
    @Test func compactHeightPutsCardsBeside() throws {
        let duo = try layout("iphone-duo", .folded, .landscape, tags: 3, sheet: true, toast: true, os: OSVersion(26, 4))
        #expect(duo.arrangement == .horizontal, "\(duo.reason)")
        let focus = try #require(duo.rect("focusArea"))
        #expect(focus.height > 300, "\(focus)")
        #expect(duo.reason.contains("compact height in landscape"))
        #expect(duo.failedInvariants.isEmpty, "\(duo.failedInvariants)")
        let se = try layout("iphone-se-3", .flat, .landscape, tags: 3, sheet: true, toast: true)
        #expect(se.arrangement == .horizontal && se.failedInvariants.isEmpty)
        let flip = try layout("galaxy-z-flip6", .flat, .landscape, tags: 3, sheet: true, toast: true)
        #expect(flip.arrangement == .vertical, "\(flip.reason)")
    }
}
