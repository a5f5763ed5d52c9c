import Testing

@testable import LiveBusLayout

/// The window follows the screen on every fold change unless a split-view width is pinned (issue 18).
struct WindowFollowTests {
    static let pixel = try! testCatalog.device("pixel-9-pro-fold")
    static let duo = try! testCatalog.device("iphone-duo")

    /// Unfolding from a 411×797 window on the Pixel 9 Pro Fold's outer screen (412×922 dp). Unpinned, the window
    /// follows the inner screen (full screen, expanded: two panes, the Android bug "window size not updated after
    /// unfold" fixed); pinned as a split-view width, it keeps 411 and takes the inner screen's height. Source:
    /// LiveBus issue 18 (Done when: unfolding from a pinned 411×797 window).
    @Test(arguments: [
        (
            nil as Double?, nil as Size?,
            "window 411x797 followed the screen: full screen on the inner screen (851.69x882.87 dp)"
        ),
        (
            411.0, Size(width: 411, height: 882.87),
            "pinned split-view width 411 kept on the inner screen (851.69x882.87 dp)"
        ),
    ])
    func unfoldingFrom411x797(pin: Double?, window: Size?, note: String) throws {
        let out = WindowFollow.next(
            device: Self.pixel,
            from: (.folded, .portrait),
            window: Size(width: 411, height: 797),
            splitViewWidth: pin,
            to: (.flat, .portrait)
        )
        #expect(out.window == window)
        #expect(out.splitViewWidth == pin)
        #expect(out.note == note)
        let resolved = try posture("pixel-9-pro-fold", .flat, window: out.window)
        let r = try layout("pixel-9-pro-fold", .flat, window: out.window)
        if pin == nil {
            #expect(resolved.window.size == Size(width: 851.69, height: 882.87))
            #expect(r.windowWidthClass == .expanded && r.arrangement == .horizontal)
        } else {
            #expect(r.windowWidthClass == .compact && r.arrangement == .vertical)
        }
    }

    /// A pinned width larger than the new screen is clamped, with a note; the pin stays, so unfolding again
    /// restores it.
    @Test func pinnedWidthIsClampedOnANarrowerScreen() {
        let folded = WindowFollow.next(
            device: Self.pixel,
            from: (.flat, .portrait),
            window: Size(width: 700, height: 882.87),
            splitViewWidth: 700,
            to: (.folded, .portrait)
        )
        #expect(folded.window == Size(width: 412, height: 922))
        #expect(folded.note == "pinned split-view width 700 clamped to 412, the width of the outer screen (412x922 dp)")
        let unfolded = WindowFollow.next(
            device: Self.pixel,
            from: (.folded, .portrait),
            window: folded.window,
            splitViewWidth: folded.splitViewWidth,
            to: (.flat, .portrait)
        )
        #expect(unfolded.window == Size(width: 700, height: 882.87))
        let fresh = WindowFollow.pinned(device: Self.pixel, posture: (.folded, .portrait), width: 500)
        #expect(fresh.window == Size(width: 412, height: 922))
        #expect(fresh.note?.hasPrefix("pinned split-view width 500 clamped to 412") == true)
    }

    /// Folding an iPhone Duo whose window is 626×890 fits the window to the outer screen (it used to be refused
    /// as invalidPosture); flat ↔ half-opened keeps the window (same inner screen).
    @Test func foldingTheDuoFitsTheOuterScreen() throws {
        let window = Size(width: 626, height: 890)
        let out = WindowFollow.next(
            device: Self.duo,
            from: (.flat, .portrait),
            window: window,
            splitViewWidth: nil,
            to: (.folded, .portrait)
        )
        #expect(out.window == nil)
        #expect(out.note == "window 626x890 followed the screen: full screen on the outer screen (466x678 pt)")
        #expect(throws: LayoutError.self) { try posture("iphone-duo", .folded, window: window) }
        #expect(try posture("iphone-duo", .folded, window: out.window).window.size == Size(width: 466, height: 678))
        let half = WindowFollow.next(
            device: Self.duo,
            from: (.flat, .portrait),
            window: window,
            splitViewWidth: nil,
            to: (.halfOpened, .portrait)
        )
        #expect(half.window == window && half.note == nil)
        // Rotating changes the screen's size: an unpinned window follows it too.
        let rotated = WindowFollow.next(
            device: Self.duo,
            from: (.flat, .portrait),
            window: window,
            splitViewWidth: nil,
            to: (.flat, .landscape)
        )
        #expect(rotated.window == nil && rotated.note != nil)
        // No window, no pin: nothing to say.
        let none = WindowFollow.next(
            device: Self.duo,
            from: (.flat, .portrait),
            window: nil,
            splitViewWidth: nil,
            to: (.folded, .portrait)
        )
        #expect(none == WindowFollow.Outcome(window: nil, splitViewWidth: nil, note: nil))
    }
}
