import Testing

@testable import LiveBusLayout

struct ArrangementOSRuleTests {
    static let fallback = "ArrangementView unavailable, cards layered over the full-screen map (fallback)"
    static let split = "ArrangementView split, map on the left, cards in a column on the right"
    static let tabletopSplit = "ArrangementView split along the fold: map above it, cards below it"

    /// Unfolded iPhone Duo (inner screen, flat or half-opened, both orientations): from iOS 27.1 the split
    /// arrangement (map left, cards right); before, the wrapper's fallback layers the cards over the full-screen
    /// map as on a phone. The reason starts with the OS rule. Source: field report 000 (`if #available(iOS 27.1, *)
    /// { ArrangementView … } else { ZStack … }`); https://developer.apple.com/documentation/swiftui/arrangementview.
    @Test(arguments: [FoldState.flat, .halfOpened], [Orientation.landscape, .portrait])
    func unfoldedDuoFollowsTheOSVersion(fold: FoldState, orientation: Orientation) throws {
        for (os, splits) in [("26.4", false), ("27.0", false), ("27.0.9", false), ("27.1", true), ("27.2", true)] {
            let v = try #require(OSVersion(os))
            let r = try layout("iphone-duo", fold, orientation, sheet: true, toast: true, os: v)
            // Half-opened in portrait the fold is horizontal: the split is tabletop (map above the fold, cards
            // below it; issue 18), elsewhere map left and cards right.
            let tabletop = fold == .halfOpened && orientation == .portrait
            let split = tabletop ? Self.tabletopSplit : Self.split
            let rule = splits ? "iOS \(os) >= 27.1: \(split)" : "iOS \(os) < 27.1: \(Self.fallback)"
            #expect(r.osRule == rule)
            #expect(r.reason.hasPrefix(rule + "; "), "\(r.reason)")
            #expect(
                r.arrangement == (splits ? (tabletop ? .tabletop : .horizontal) : .vertical),
                "\(os) \(fold) \(orientation)"
            )
            #expect(r.osVersion == v)
            #expect(r.rect("map") == r.rect("window"))
            #expect(r.failedInvariants.isEmpty, "\(os): \(r.failedInvariants)")
        }
    }

    /// The fallback's numbers on the 951×669 inner screen in landscape: cards at the bottom, flat on the trailing
    /// side and 580 pt wide (regular width caps sheets, and so the card column holding them, issue 18); half-opened, the cards and the focus area stay wholly left of the reserved region (443.5…507.5).
    /// Source: field report 000 (ZStack fallback; reserved region "어느 한쪽에"); posture-and-devices.md §2 row 25.
    @Test func fallbackNumbersOnDuoLandscape() throws {
        let old = try #require(OSVersion("26.4"))
        let flat = try layout("iphone-duo", .flat, .landscape, tags: 3, sheet: true, toast: true, os: old)
        #expect(flat.rect("cardColumn") == Rect(x: 271, y: 72, width: 580, height: 581))
        #expect(flat.rect("card") == Rect(x: 271, y: 478.7, width: 580, height: 174.3))
        #expect(flat.rect("focusArea") == Rect(x: 0, y: 120, width: 867, height: 190.7))
        let half = try layout("iphone-duo", .halfOpened, .landscape, tags: 3, sheet: true, toast: true, os: old)
        #expect(half.rect("card") == Rect(x: 16, y: 478.7, width: 411.5, height: 174.3))
        #expect(half.rect("focusArea") == Rect(x: 0, y: 120, width: 443.5, height: 190.7))
        #expect(half.reason.contains("everything on the left side"))
        // From 27.1 the same screens split exactly as before the OS version existed.
        let now = try layout("iphone-duo", .flat, .landscape, sheet: true, toast: true, os: OSVersion(27, 1))
        #expect(now.rect("cardColumn") == Rect(x: 504.2, y: 8, width: 346.8, height: 645))
        #expect(now.rect("focusArea") == Rect(x: 0, y: 64, width: 488.2, height: 605))
    }

    /// Phones, iPads, Android foldables and the folded Duo have no OS rule: the same layout on 26.4 and 27.1.
    /// Source: LiveBus issue 11 (only the unfolded foldable changes); field report 000 (일반 iPhone에서는 기존의
    /// 레이아웃이 최대한 유지).
    @Test(arguments: [
        ("iphone-16-pro", FoldState.flat), ("ipad-air-11", .flat), ("galaxy-z-fold6", .flat),
        ("galaxy-z-fold6", .halfOpened), ("pixel-9-pro-fold", .flat), ("surface-duo-2", .flat), ("iphone-duo", .folded),
    ])
    func otherScreensIgnoreTheOSVersion(deviceID: String, fold: FoldState) throws {
        for orientation in Orientation.allCases {
            let old = try layout(deviceID, fold, orientation, sheet: true, os: OSVersion(26, 4), buttons: [])
            let now = try layout(deviceID, fold, orientation, sheet: true, os: OSVersion(27, 1), buttons: [])
            #expect(old.osRule == nil)
            #expect(now.osRule == nil)
            #expect(old.arrangement == now.arrangement)
            #expect(old.rects == now.rects.filter { $0.role != .toolbar })
        }
    }
}
