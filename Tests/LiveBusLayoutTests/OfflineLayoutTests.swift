import Testing

@testable import LiveBusLayout

struct OfflineLayoutTests {
    /// The CLI words parse into a request; the offline layout resolves and lays it out. Source: LiveBus issue
    /// "Output" (device, posture, orientation, window WxH, screen, tags N → JSON and SVG).
    @Test func parsesCommandLineWords() throws {
        let request = try OfflineLayoutRequest.parse(
            device: "iphone-duo",
            foldState: "half-opened",
            orientation: "landscape",
            window: "951x669",
            screen: "overlay",
            tags: "3"
        )
        #expect(request.windowSize == Size(width: 951, height: 669))
        #expect(request.foldState == .halfOpened)
        let (_, r) = try OfflineLayout.run(request, catalog: testCatalog)
        #expect(r.arrangement == .horizontal)
        #expect(r.failedInvariants.isEmpty)
        #expect(try OfflineLayoutRequest.parseWindow("full") == nil)
        #expect(try OfflineLayoutRequest.parseWindow("561.5x744") == Size(width: 561.5, height: 744))
    }

    /// `--os` reaches the layout: 26.4 gets the fallback on the unfolded Duo, the default (newest) the split; an
    /// unparseable version is rejected with `invalid-os-version`. Source: LiveBus issue 11 ("`livebus layout` and
    /// `livebus attach` take the OS version into account"); field report 000.
    @Test func osVersionWord() throws {
        let words = { (os: String?) throws(LayoutError) -> OfflineLayoutRequest in
            if let os {
                return try OfflineLayoutRequest.parse(
                    device: "iphone-duo",
                    foldState: "flat",
                    orientation: "landscape",
                    window: "full",
                    screen: "overlay",
                    tags: "0",
                    os: os
                )
            }
            return try OfflineLayoutRequest.parse(
                device: "iphone-duo",
                foldState: "flat",
                orientation: "landscape",
                window: "full",
                screen: "overlay",
                tags: "0"
            )
        }
        let old = try words("26.4")
        #expect(old.osVersion == OSVersion(26, 4))
        let (_, fallback) = try OfflineLayout.run(old, catalog: testCatalog)
        #expect(fallback.arrangement == .vertical)
        #expect(
            fallback.osRule
                == "iOS 26.4 < 27.1: ArrangementView unavailable, cards layered over the full-screen map (fallback)"
        )
        #expect(fallback.toolbar == nil)
        let newest = try words(nil)
        #expect(newest.osVersion == .newest)
        let (_, split) = try OfflineLayout.run(newest, catalog: testCatalog)
        #expect(split.arrangement == .horizontal)
        #expect(split.toolbar?.items.count == 3)
        #expect(
            throws: LayoutError(
                .invalidOSVersion,
                "OS version '27,1' is not MAJOR.MINOR[.PATCH]; give e.g. 26.4 or 27.1 (ArrangementView and the vertical-edge toolbar need 27.1), or 'newest' for 27.1"
            )
        ) {
            try words("27,1")
        }
    }

    /// Bad words are rejected with the valid values listed.
    @Test(arguments: [
        ("fold", "open", "fold state 'open' is not valid; valid: flat, half-opened, folded"),
        ("orientation", "upside", "orientation 'upside' is not valid; valid: portrait, landscape"),
        ("screen", "modal", "screen 'modal' is not valid; valid: column, fullScreen, overlay"),
        ("tags", "-1", "tags '-1' is not a count"),
        ("window", "951*669", "window '951*669' is not WxH"),
    ])
    func rejectsBadWords(field: String, word: String, message: String) {
        do {
            _ = try OfflineLayoutRequest.parse(
                device: "iphone-16",
                foldState: field == "fold" ? word : "flat",
                orientation: field == "orientation" ? word : "portrait",
                window: field == "window" ? word : "full",
                screen: field == "screen" ? word : "overlay",
                tags: field == "tags" ? word : "0"
            )
            Issue.record("accepted \(word)")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
    }

    /// Every documented iPad multitasking width resolves, gets Apple's size class (compact below 678 pt) and lays
    /// out with every invariant holding. Source: posture-and-devices.md §1.5 (multitasking widths).
    @Test(arguments: ["ipad-mini", "ipad-air-11"])
    func documentedMultitaskingWindows(deviceID: String) throws {
        let device = try testCatalog.device(deviceID)
        let screen = try #require(device.screen(for: .flat))
        let widths = try #require(screen.windowWidths)
        for orientation in Orientation.allCases {
            let height = screen.size(in: orientation).height
            for width in widths[orientation] {
                for layoutKind in ScreenLayout.allCases {
                    let r = try layout(
                        deviceID,
                        .flat,
                        orientation,
                        screen: layoutKind,
                        window: Size(width: width, height: height),
                        sheet: true,
                        toast: true
                    )
                    #expect(r.horizontalSizeClass == (width >= 678 ? .regular : .compact))
                    #expect(r.failedInvariants.isEmpty, "\(width) \(orientation) \(layoutKind): \(r.failedInvariants)")
                    if layoutKind == .overlay {
                        #expect(r.arrangement == (width >= 678 ? .horizontal : .vertical))
                    }
                }
            }
        }
    }
}
