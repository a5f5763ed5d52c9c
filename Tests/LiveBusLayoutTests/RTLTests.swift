import Testing

@testable import LiveBusLayout

/// Right-to-left layout and dialogs (issue 18).
struct RTLTests {
    static func rtl(
        _ id: String,
        _ fold: FoldState = .flat,
        _ orientation: Orientation = .portrait,
        screen: ScreenLayout = .overlay,
        dialog: Size? = nil,
        direction: LayoutDirection = .rtl,
        os: OSVersion = .newest
    ) throws -> LayoutResult {
        var input = LayoutInput(
            posture: try posture(id, fold, orientation, os: os),
            screen: screen,
            tags: 3,
            markers: OfflineLayoutRequest.sampleMarkers,
            showSheet: true,
            showToast: true
        )
        input.layoutDirection = direction
        input.dialog = dialog
        return LayoutEngine.layout(input)
    }

    /// Unequal panes: the half-opened iPhone Duo in landscape (fold band 443.5…507.5, vertical bar 84 pt on the
    /// right). Left to right the map pane is 0…443.5 and the cards pane 507.5…867; right to left the panes swap
    /// sides (map 507.5…867, cards 0…443.5) while the bar, the reserved region and the safe area stay where the
    /// hardware puts them. Source: LiveBus issue 18 (RTL pane order with unequal panes); Surface Duo WindowState
    /// ("RTL swaps which is pane 1").
    @Test func unequalPanesSwapSides() throws {
        let ltr = try Self.rtl("iphone-duo", .halfOpened, .landscape, direction: .ltr, os: OSVersion(27, 1))
        let rtl = try Self.rtl("iphone-duo", .halfOpened, .landscape, os: OSVersion(27, 1))
        #expect(ltr.panes.map { [$0.minX, $0.maxX] } == [[0, 443.5], [507.5, 867]])
        #expect(rtl.panes.map { [$0.minX, $0.maxX] } == [[507.5, 867], [0, 443.5]])
        #expect(rtl.rect("reservedRegion") == ltr.rect("reservedRegion"))
        #expect(rtl.rect("safeArea") == ltr.rect("safeArea"))
        for r in [ltr, rtl] { #expect(r.failedInvariants.isEmpty, "\(r.layoutDirection): \(r.failedInvariants)") }
        // 27.1: the split, mirrored: cards in the left pane, focus in the right one; the toolbar stays on the
        // physical right edge.
        let split = try Self.rtl("iphone-duo", .halfOpened, .landscape, os: OSVersion(27, 1))
        let column = try #require(split.rect("cardColumn"))
        let focus = try #require(split.rect("focusArea"))
        #expect(split.arrangement == .horizontal)
        #expect(column.maxX <= 443.5 && focus.minX >= 507.5, "\(column) \(focus)")
        #expect(split.toolbar?.edge == .right && split.toolbar?.rect.minX == 867)
        #expect(split.invariants.contains { $0.name == "cardColumnOnLeftInRTL" && $0.holds })
        #expect(split.reason.hasPrefix("right-to-left: "))
        #expect(split.failedInvariants.isEmpty, "\(split.failedInvariants)")
    }

    /// On a phone right to left: the back button at the right end of the header, the close button at the left
    /// end of the text field's row, the map buttons on the left. Source: UIKit/Android RTL mirroring.
    @Test func controlsMirrorOnAPhone() throws {
        let ltr = try Self.rtl("iphone-16-pro", direction: .ltr)
        let r = try Self.rtl("iphone-16-pro")
        let header = try #require(r.rect("header"))
        let back = try #require(r.rect("button.back"))
        #expect(back.maxX == header.maxX - 4)
        let field = try #require(r.rect("textField"))
        let close = try #require(r.rect("button.close"))
        #expect(close.maxX + 8 == field.minX)
        #expect(r.rect("mapButton.1")?.minX == 16)
        #expect(r.rect("dynamicIsland") == ltr.rect("dynamicIsland"))
        #expect(r.failedInvariants.isEmpty, "\(r.failedInvariants)")
    }

    /// A dialog of given size sits wholly in one sub-screen, on the card column's side (the left pane right to
    /// left), and is shrunk to a sub-screen smaller than it. Source: LiveBus issue 18 (Dialogs).
    @Test func dialogsStayInTheCardColumnsSubScreen() throws {
        let size = Size(width: 300, height: 200)
        let ltr = try Self.rtl("iphone-duo", .halfOpened, .landscape, dialog: size, direction: .ltr)
        let rtl = try Self.rtl("iphone-duo", .halfOpened, .landscape, dialog: size)
        let a = try #require(ltr.rect("dialog"))
        let b = try #require(rtl.rect("dialog"))
        #expect(a.minX >= 507.5 && a.maxX <= 867 && a.size == size)
        #expect(b.minX >= 0 && b.maxX <= 443.5 && b.size == size)
        let flip = try Self.rtl("galaxy-z-flip6", .halfOpened, dialog: size, direction: .ltr)
        let reserved = try #require(flip.rect("reservedRegion"))
        #expect(try #require(flip.rect("dialog")).minY >= reserved.maxY)
        let huge = try Self.rtl("iphone-16-pro", dialog: Size(width: 900, height: 300), direction: .ltr)
        #expect(abs((huge.rect("dialog")?.width ?? 0) - 370) < 0.01, "\(String(describing: huge.rect("dialog")))")
        #expect(huge.reason.contains("shrunk from 900x300"))
        for r in [ltr, rtl, flip, huge] {
            #expect(r.invariants.contains { $0.name == "dialogInOneSubScreen" && $0.holds })
            #expect(r.failedInvariants.isEmpty, "\(r.failedInvariants)")
        }
    }
}
