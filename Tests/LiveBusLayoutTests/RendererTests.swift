import Foundation
import Testing

@testable import LiveBusLayout

struct RendererTests {
    static func example(_ fold: FoldState) throws -> (LayoutInput, LayoutResult) {
        try OfflineLayout.run(
            OfflineLayoutRequest(
                deviceID: "iphone-duo",
                foldState: fold,
                orientation: fold == .folded ? .portrait : .landscape,
                screen: .overlay,
                tags: 3
            ),
            catalog: testCatalog
        )
    }

    /// JSON carries every rect, the arrangement, the reason and the invariants, and decodes back to the same
    /// result. Source: LiveBus issue "Output".
    @Test func jsonRoundTrips() throws {
        let (_, r) = try Self.example(.halfOpened)
        let json = LayoutRenderer.json(r)
        #expect(json.contains("\"arrangement\" : \"horizontal\""))
        #expect(json.contains("\"reservedRegion\""))
        let back = try JSONDecoder().decode(LayoutResult.self, from: Data(json.utf8))
        #expect(back == r)
    }

    /// The SVG draws and labels every rect, the reserved region and the focus and fitting areas. Source: LiveBus
    /// issue "Output".
    @Test func svgLabelsEveryRect() throws {
        let (input, r) = try Self.example(.halfOpened)
        let svg = LayoutRenderer.svg(r, input: input)
        #expect(svg.hasPrefix("<svg"))
        #expect(svg.hasSuffix("</svg>\n"))
        for name in [
            "header", "card", "sheet", "toast", "mapButton.1", "focusArea", "fittingArea", "reservedRegion", "hinge",
            "cardColumn",
        ] {
            #expect(svg.contains(">\(name) ") || svg.contains(">\(name)<"), "\(name) is not labelled")
        }
    }

    /// The terminal picture is about 40 columns wide and a few lines high.
    @Test func textPictureIsCompact() throws {
        for fold in FoldState.allCases {
            let (_, r) = try Self.example(fold)
            let text = LayoutRenderer.text(r, width: 40)
            let lines = text.split(separator: "\n")
            #expect(lines.allSatisfy { $0.count <= 44 }, "\(text)")
            #expect(lines.count >= 8 && lines.count <= 32)
            #expect(text.contains("invariants: all"))
        }
        let (_, half) = try Self.example(.halfOpened)
        #expect(LayoutRenderer.text(half).contains("░"))
    }

    /// The iPhone 16 Pro example shows the Live Activity presentations with their measured text.
    @Test func svgDrawsPresentations() throws {
        let (input, r) = try OfflineLayout.run(
            OfflineLayoutRequest(deviceID: "iphone-16-pro", tags: 2),
            catalog: testCatalog
        )
        let svg = LayoutRenderer.svg(r, input: input)
        for kind in PresentationKind.allCases { #expect(svg.contains(">\(kind.rawValue)<")) }
        #expect(svg.contains(">배달 중<"))
        #expect(svg.contains(">1:27<"))
    }

    /// The SVG title names the OS version, the arrangement, the OS rule that chose it and the toolbar, then the
    /// whole reason. Source: LiveBus issue 11 ("the SVG names the arrangement chosen and why").
    @Test func svgTitleNamesTheOSRule() throws {
        let (input, r) = try OfflineLayout.run(Self.examples["iphone-duo-flat-ios26.4"]!, catalog: testCatalog)
        let svg = Self.title(LayoutRenderer.svg(r, input: input))
        #expect(
            svg.contains(
                "iOS 26.4 · arrangement vertical (iOS 26.4 &lt; 27.1: ArrangementView unavailable, cards layered over "
                    + "the full-screen map (fallback)) · no vertical-edge toolbar why:"
            )
        )
        #expect(svg.contains(" why: iOS 26.4 &lt; 27.1: ArrangementView unavailable"))
        #expect(LayoutRenderer.svg(r, input: input).contains(">button.back<"))
        let (newInput, newest) = try Self.example(.flat)
        let split = Self.title(LayoutRenderer.svg(newest, input: newInput))
        #expect(
            split.contains(
                "· toolbar on the right edge: back (cancellationAction), close (cancellationAction), "
                    + "primaryAction (primaryAction) why:"
            )
        )
        let drawing = LayoutRenderer.svg(newest, input: newInput)
        #expect(drawing.contains(">toolbar.back<"))
        #expect(!drawing.contains(">button.back<"))
    }

    /// The title lines (above the drawing) joined with spaces, undoing the wrapping.
    static func title(_ svg: String) -> String {
        let head = svg.components(separatedBy: "<g transform").first ?? ""
        return head.components(separatedBy: "\n").compactMap { line -> String? in
            guard line.hasPrefix("<text"), let open = line.firstIndex(of: ">"), line.hasSuffix("</text>") else {
                return nil
            }
            return String(line[line.index(after: open)...].dropLast("</text>".count))
        }.joined(separator: " ")
    }

    static let examples: [String: OfflineLayoutRequest] = [
        "iphone-duo-flat": OfflineLayoutRequest(deviceID: "iphone-duo", orientation: .landscape, tags: 3),
        "iphone-duo-half-opened": OfflineLayoutRequest(
            deviceID: "iphone-duo",
            foldState: .halfOpened,
            orientation: .landscape,
            tags: 3
        ),
        "iphone-duo-folded": OfflineLayoutRequest(deviceID: "iphone-duo", foldState: .folded, tags: 3),
        "iphone-duo-flat-ios26.4": OfflineLayoutRequest(
            deviceID: "iphone-duo",
            orientation: .landscape,
            tags: 3,
            osVersion: OSVersion(26, 4)
        ),
        "galaxy-z-flip6-half-opened": OfflineLayoutRequest(deviceID: "galaxy-z-flip6", foldState: .halfOpened, tags: 3),
        // Issue 18: right to left, with a dialog in the card column's sub-screen.
        "iphone-duo-half-opened-rtl": {
            var r = OfflineLayoutRequest(
                deviceID: "iphone-duo",
                foldState: .halfOpened,
                orientation: .landscape,
                tags: 3
            )
            r.layoutDirection = .rtl
            r.dialog = Size(width: 270, height: 150)
            return r
        }(),
        "iphone-16-pro-flat": OfflineLayoutRequest(
            deviceID: "iphone-16-pro",
            tags: 5,
            liveActivity: LiveActivityContent(
                statusText: "배달 중",
                statusSymbol: "bicycle",
                timerText: "1:27",
                progress: 0.6,
                lastConfirmedText: "마지막 확인 12:03",
                staleLines: ["마지막 예상 기준", "업데이트를 기다리고 있어요"]
            )
        ),
    ]

    /// One SVG per fold state under docs/layouts/ (iPhone Duo flat, half-opened and folded; Flip6 tabletop;
    /// iPhone 16 Pro with its Live Activity presentations). They are golden files: set RECORD_LAYOUTS=1 to rewrite
    /// them. Source: LiveBus issue ("One SVG example per fold state").
    @Test(arguments: examples.keys.sorted())
    func committedSVGExamplesMatch(name: String) throws {
        let (input, r) = try OfflineLayout.run(Self.examples[name]!, catalog: testCatalog)
        #expect(r.failedInvariants.isEmpty)
        let svg = LayoutRenderer.svg(r, input: input)
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/layouts/\(name).svg")
        if ProcessInfo.processInfo.environment["RECORD_LAYOUTS"] == "1" {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try svg.write(to: url, atomically: true, encoding: .utf8)
            Issue.record("recorded \(url.path); run again without RECORD_LAYOUTS")
            return
        }
        let committed = try String(contentsOf: url, encoding: .utf8)
        #expect(committed == svg, "docs/layouts/\(url.lastPathComponent) is stale; rerun with RECORD_LAYOUTS=1")
    }
}
