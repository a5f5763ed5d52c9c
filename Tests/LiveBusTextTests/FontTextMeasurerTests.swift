import LiveBusLayout
import LiveBusText
import Testing

struct FontTextMeasurerTests {
    static let measurer: FontTextMeasurer? = try? FontTextMeasurer()

    /// NanumGothic (fonts-nanum) loads through FreeType and is described as a stand-in for Apple's font.
    @Test func loadsTheDebianHangulFont() throws {
        let m = try #require(Self.measurer, "install fonts-nanum")
        #expect(m.fontDescription == "FreeType+HarfBuzz NanumGothic.ttf/NanumGothicBold.ttf as a stand-in for SF Pro")
    }

    /// A missing font is a typed error that says what to install.
    @Test func missingFontIsReported() {
        do {
            _ = try FontTextMeasurer(regularPath: "/nonexistent.ttf")
            Issue.record("loaded a missing font")
        } catch {
            #expect(error.code == .fontUnreadable)
            #expect(error.message.contains("fonts-nanum"))
        }
    }

    /// Widths scale with the point size, bold is wider than regular, Hangul syllables are full-width, and
    /// tabular digits make "1111" as wide as "0000". Source: FreeType/HarfBuzz shaping; field report 001
    /// (`monospacedDigit()`).
    @Test func shapesHangulAndDigits() throws {
        let m = try #require(Self.measurer)
        let w12 = m.measure("배달 중", font: FontSpec(size: 12)).width
        let w24 = m.measure("배달 중", font: FontSpec(size: 24)).width
        #expect(abs(w24 - 2 * w12) < 0.2)
        #expect(m.measure("배달 중", font: FontSpec(size: 12, weight: .bold)).width >= w12)
        let syllable = m.measure("배", font: FontSpec(size: 10)).width
        #expect(syllable > 8 && syllable <= 10.5)
        let tab = FontSpec(size: 15, weight: .semibold, monospacedDigits: true)
        #expect(m.measure("1111", font: tab).width == m.measure("0000", font: tab).width)
        #expect(m.measure("", font: tab).width == 0)
        #expect(m.measure("1:27", font: tab).lineHeight > 15)
    }

    /// Field report 001's compact boxes measured with the real font: the four status texts fit the 56 pt box
    /// at 12 pt semibold, "1:27" fits the 44 pt timer box; the outcome is printed for the report.
    @Test func fieldReportStatusTextsFitTheCompactBox() throws {
        let m = try #require(Self.measurer)
        for status in ["조리 중", "픽업 대기", "픽업 완료", "배달 중"] {
            let w = m.measure(status, font: LiveActivityLayout.compactStatusFont).width
            print("status \(status): \(w) pt of \(LiveActivityLayout.statusBox.width)")
            #expect(w <= LiveActivityLayout.statusBox.width)
        }
        let timer = m.measure("1:27", font: LiveActivityLayout.compactTimerFont).width
        print("timer 1:27: \(timer) pt of \(LiveActivityLayout.timerBoxWidth)")
        #expect(timer <= LiveActivityLayout.timerBoxWidth)
    }
}

struct FontLayoutIntegrationTests {
    /// The layout engine reports truncations measured with the font engine and names the measurer in the result.
    /// Source: field report 001 (44 pt timer "no guarantee for longer times"); LiveBus issue (text measurement).
    @Test func layoutUsesTheFontMeasurer() throws {
        let m = try #require(FontTextMeasurerTests.measurer)
        let catalog = try DeviceCatalog.bundled()
        var request = OfflineLayoutRequest(deviceID: "iphone-16")
        request.liveActivity?.timerText = "12:34:56"
        let (_, r) = try OfflineLayout.run(request, catalog: catalog, measurer: m)
        #expect(r.textMeasurer == m.fontDescription)
        let timer = try #require(r.truncations.first { $0.element == "compactTrailing.timer" })
        print("timer 12:34:56 measured \(timer.measured) of \(timer.available)")
        #expect(timer.available == 44)
        #expect(timer.measured == 63.66)
        // Besides the timer, the iPhone 16's 52.33 pt compact leading region is narrower than the 56 pt status box.
        #expect(r.truncations.map(\.element) == ["compactLeading.statusBox", "compactTrailing.timer"])
    }

    /// Overflow in the Dynamic Island on a 393-pt-wide phone (iPhone 16): `2:20:13` does not fit the 44 pt trailing
    /// box, `12:34` does; the 56 pt status box overflows the 52.33 pt compact leading region, and fits the Pro Max's
    /// 62.33 pt one. Measured with FreeType + HarfBuzz.
    /// Source: field report 001 (44 pt timer, 56 pt status box), HIG compact 52.33/62.33 pt, issue 16.
    @Test func overflowOfTheTimerAndTheStatusBox() throws {
        let m = try #require(FontTextMeasurerTests.measurer)
        let catalog = try DeviceCatalog.bundled()
        var request = OfflineLayoutRequest(deviceID: "iphone-16")
        request.liveActivity?.timerText = "2:20:13"
        let (input, long) = try OfflineLayout.run(request, catalog: catalog, measurer: m)
        #expect(input.posture.screenSize.width == 393)
        let timer = try #require(long.truncations.first { $0.element == "compactTrailing.timer" })
        #expect(timer.text == "2:20:13")
        #expect(timer.available == 44)
        #expect(timer.measured > 44)
        let box = try #require(long.truncations.first { $0.element == "compactLeading.statusBox" })
        #expect(box.measured == 56 && box.available == 52.33)
        let svg = LiveActivityLayout.svgWithOverflow(LayoutRenderer.svg(long, input: input), long.truncations)
        #expect(svg.contains("overflow compactTrailing.timer &quot;2:20:13&quot;: \(timer.measured) pt in 44.0 pt"))
        request.liveActivity?.timerText = "12:34"
        let (_, short) = try OfflineLayout.run(request, catalog: catalog, measurer: m)
        #expect(!short.truncations.contains { $0.element.contains("timer") })
        var proMax = OfflineLayoutRequest(deviceID: "iphone-16-pro-max")
        proMax.liveActivity?.timerText = "12:34"
        let (_, wide) = try OfflineLayout.run(proMax, catalog: catalog, measurer: m)
        #expect(wide.truncations.isEmpty)
        // A schema's wider timer box (60 pt) fits 2:20:13.
        request.liveActivity?.timerText = "2:20:13"
        var boxes = LiveActivityBoxes.fieldReport
        boxes.timerWidth = 60
        request.liveActivity?.boxes = boxes
        let (_, roomy) = try OfflineLayout.run(request, catalog: catalog, measurer: m)
        #expect(!roomy.truncations.contains { $0.element == "compactTrailing.timer" })
        #expect(roomy.truncations.contains { $0.element == "compactTrailing.timerBox" })
    }
}
