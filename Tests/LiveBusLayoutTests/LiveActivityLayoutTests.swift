import Foundation
import Testing

@testable import LiveBusLayout

struct LiveActivityLayoutTests {
    static let delivering = LiveActivityContent(
        statusText: "배달 중",
        statusSymbol: "bicycle",
        timerText: "1:27",
        progress: 0.6,
        lastConfirmedText: "마지막 확인 12:03"
    )

    func presentations(
        _ id: String,
        _ content: LiveActivityContent = delivering,
        measurer: any TextMeasurer = ApproximateTextMeasurer()
    ) throws -> ([Presentation], [Truncation]) {
        LiveActivityLayout.layout(content, posture: try posture(id), measurer: measurer)
    }

    /// Compact leading holds the status in a 56×26 pt box snug against the camera; compact trailing the timer in a
    /// 44 pt box, trailing-aligned. Source: field report 001 (왼쪽 상태 영역 56×26pt, 오른쪽 타이머 영역 44pt);
    /// HIG (393 pt: 52.33×36.67 regions).
    @Test func compactBoxesOnIPhone16() throws {
        let (p, t) = try presentations("iphone-16")
        // The 56 pt status box is wider than the 52.33 pt region: drawn widened and reported (issue 16).
        #expect(
            t == [
                Truncation(
                    element: "compactLeading.statusBox",
                    text: "배달 중",
                    measured: 56,
                    available: 52.33,
                    axis: "width"
                )
            ]
        )
        #expect(try presentations("iphone-16-pro-max").1.isEmpty)
        let leading = try #require(p.first { $0.kind == .compactLeading })
        #expect(leading.frame == Rect(x: 77.5, y: 11.33, width: 56, height: 36.67))
        #expect(
            leading.elements.first { $0.name == "statusBox" }?.rect == Rect(x: 77.5, y: 16.67, width: 56, height: 26)
        )
        let trailing = try #require(p.first { $0.kind == .compactTrailing })
        #expect(trailing.frame == Rect(x: 259.5, y: 11.33, width: 52.33, height: 36.67))
        let timerBox = try #require(trailing.elements.first { $0.name == "timerBox" })
        #expect(timerBox.rect == Rect(x: 267.83, y: 11.33, width: 44, height: 36.67))
        let timer = try #require(trailing.elements.first { $0.name == "compactTrailing.timer" })
        #expect(timer.rect.maxX == timerBox.rect.maxX)
        let minimal = try #require(p.first { $0.kind == .minimal })
        #expect(minimal.elements.map(\.role) == [.icon])
        #expect(minimal.elements.first?.name == "icon:bicycle")
    }

    /// Expanded and Lock Screen widths come from the HIG table (371 pt on 393-pt phones; x = (393 − 371) / 2 = 11,
    /// T5), heights stay within 84…160 pt.
    @Test func expandedAndLockScreen() throws {
        let (p, _) = try presentations("iphone-16")
        let expanded = try #require(p.first { $0.kind == .expanded })
        #expect(expanded.frame.x == 11)
        #expect(expanded.frame.width == 371)
        #expect((84...160).contains(expanded.frame.height))
        #expect(
            Set(expanded.elements.map(\.name)).isSuperset(of: [
                "expanded.status", "expanded.timer", "expanded.progress", "expanded.lastConfirmed",
            ])
        )
        let lock = try #require(p.first { $0.kind == .lockScreen })
        #expect(lock.frame == Rect(x: 0, y: 0, width: 371, height: 90))
        let max = try #require(try presentations("iphone-16-pro-max").0.first { $0.kind == .expanded })
        #expect(max.frame.width == 408)
        #expect(max.frame.x == 16)
    }

    /// Text that does not fit is measured and reported, never hidden: a 5-character timer overflows the 44 pt box.
    /// Source: field report 001 (44pt는 … 더 긴 시간 표기 … 보장은 없다); LiveBus issue (report truncation).
    @Test func longTimerIsReportedTruncated() throws {
        var content = Self.delivering
        content.timerText = "12:34"
        let (_, t) = try presentations("iphone-16", content, measurer: FixedAdvanceMeasurer(advance: 10))
        let timer = try #require(t.first { $0.element == "compactTrailing.timer" })
        #expect(timer.measured == 50)
        #expect(timer.available == 44)
        #expect(timer.axis == "width")
        // The stand-in measurer also flags it (5 tabular glyphs at 15 pt semibold = 48 pt).
        let (_, approx) = try presentations("iphone-16", content)
        #expect(approx.first { $0.element == "compactTrailing.timer" }?.measured == 48)
        // A status longer than the 56 pt box is reported too.
        content.statusText = "픽업 대기 중입니다"
        let (_, long) = try presentations("iphone-16", content, measurer: FixedAdvanceMeasurer(advance: 12))
        #expect(long.first { $0.element == "compactLeading.status" }?.measured == 120)
    }

    /// Stale lines go on the Lock Screen; past 160 pt the overflowing line is reported. Source: field report 001
    /// (마지막 예상 기준, 업데이트를 기다리고 있어요, 마지막 확인 시각); HIG ("may truncate … exceeds 160 points").
    @Test func staleLinesOnLockScreen() throws {
        var content = Self.delivering
        content.staleLines = ["마지막 예상 기준", "업데이트를 기다리고 있어요", "이전 상태", "네 번째 줄"]
        let (p, t) = try presentations("iphone-16", content)
        let lock = try #require(p.first { $0.kind == .lockScreen })
        #expect(lock.frame.height == 160)
        #expect(lock.elements.filter { $0.name.hasPrefix("lockScreen.stale.") }.count == 4)
        #expect(t.map(\.element) == ["compactLeading.statusBox", "lockScreen.stale.4"])
        #expect(t.last?.measured == 178)
    }

    /// No Dynamic Island: no island presentations (iPad keeps its 425 pt Lock Screen; iPhone SE has none here).
    @Test func devicesWithoutIsland() throws {
        #expect(try presentations("iphone-se-3").0.isEmpty)
        let ipad = try presentations("ipad-mini").0
        #expect(ipad.map(\.kind) == [.lockScreen])
        #expect(ipad.first?.frame.width == 425)
    }

    /// Property: for 200 seeded random statuses and timers on every Dynamic Island device, a truncation is reported
    /// exactly when the measured text is wider than its box (56 pt status, 44 pt timer), and the drawn text never
    /// leaves its box. Source: LiveBus issue ("Measure text and report truncation instead of hiding it").
    @Test(arguments: ["iphone-16", "iphone-16-pro", "iphone-16-pro-max"])
    func truncationIsReportedExactlyWhenTextOverflows(deviceID: String) throws {
        var rng = SplitMix64(seed: stableSeed(deviceID))
        let syllables = Array("조리중픽업대기완료배달이전상태마지막확인")
        let measurer = ApproximateTextMeasurer()
        for _ in 0..<200 {
            let status = String(
                (0..<Int.random(in: 1...7, using: &rng)).map { _ in syllables.randomElement(using: &rng)! }
            )
            let minutes = Int.random(in: 0...180, using: &rng)
            let timer = "\(minutes):\(String(format: "%02d", Int.random(in: 0...59, using: &rng)))"
            var content = Self.delivering
            content.statusText = status
            content.timerText = timer
            let (p, t) = try presentations(deviceID, content)
            let statusWidth = measurer.measure(status, font: LiveActivityLayout.compactStatusFont).width
            let timerWidth = measurer.measure(timer, font: LiveActivityLayout.compactTimerFont).width
            #expect(t.contains { $0.element == "compactLeading.status" } == (statusWidth > 56.01), "\(status)")
            #expect(t.contains { $0.element == "compactTrailing.timer" } == (timerWidth > 44.01), "\(timer)")
            for presentation in p where presentation.kind == .compactLeading || presentation.kind == .compactTrailing {
                let box = try #require(presentation.elements.first { $0.role == .box })
                for e in presentation.elements where e.role == .text {
                    #expect(box.rect.contains(e.rect), "\(e.name) \(e.rect) leaves \(box.rect)")
                }
            }
        }
    }
}
