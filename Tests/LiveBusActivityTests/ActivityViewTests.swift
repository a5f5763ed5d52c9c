import LiveBusActivity
import LiveBusClock
import LiveBusSimulator
import Testing

/// T0 is 09:00 in Korea (UTC+9).
private let koreaOffsetMinutes = 540

struct ActivityViewTests {
    /// Active, Korean: status on the compact leading side, m:ss on the trailing side, status icon in minimal,
    /// countdown and progress on the lock screen, no stale lines.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt (상태 문구 56×26 pt, 타이머 44 pt; 진행률은 잠금화면).
    @Test func activeKorean() {
        var board = startedBoard()
        _ = board.apply(update(at: 5, status: .delivering, eta: 600), at: client(5))
        let view = ActivityView(
            activity: board.activity("A1001")!,
            at: client(355),
            utcOffsetMinutes: koreaOffsetMinutes
        )
        #expect(view.compactLeading == ["배달 중"])
        #expect(view.compactTrailing == "4:05")
        #expect(view.minimal == "bicycle")
        #expect(view.expanded == ["배달 중", "도착까지 4:05", "라이더가 배달 중이에요"])
        #expect(view.lockScreen == ["배달 중", "도착까지 4:05", "라이더가 배달 중이에요", "진행률 25%"])
        #expect(!view.showsStaleLines)
        #expect(!view.showsLastEstimateLine)
        #expect(view.remainingMilliseconds == 245_000)
    }

    /// Stale, Korean: the compact mark 이전 상태; expanded and lock screen add 마지막 예상 기준,
    /// 업데이트를 기다리고 있어요 and the last confirmed time (local time).
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt; https://developer.apple.com/documentation/widgetkit/activityviewcontext/isstale
    @Test func staleKorean() {
        var board = startedBoard()
        _ = board.apply(update(at: 305, status: .delivering, eta: 900, stale: 600), at: client(305))
        _ = board.tick(at: client(600))
        let view = ActivityView(
            activity: board.activity("A1001")!,
            at: client(600),
            utcOffsetMinutes: koreaOffsetMinutes
        )
        #expect(view.compactLeading == ["배달 중", "이전 상태"])
        #expect(view.compactTrailing == "5:00")
        #expect(
            view.expanded == [
                "배달 중", "도착까지 5:00", "라이더가 배달 중이에요", "마지막 예상 기준", "업데이트를 기다리고 있어요",
                "마지막 확인 09:05",
            ]
        )
        #expect(
            view.lockScreen == [
                "배달 중", "도착까지 5:00", "라이더가 배달 중이에요", "진행률 25%", "마지막 예상 기준",
                "업데이트를 기다리고 있어요", "마지막 확인 09:05",
            ]
        )
    }

    /// Stale, English wording.
    /// Source: issue text ("previous status", "based on last estimate", "waiting for an update").
    @Test func staleEnglish() {
        let board = startedBoard(stale: -10)
        let view = ActivityView(activity: board.activity("A1001")!, at: client(0), language: .english)
        #expect(view.compactLeading == ["Cooking", "Previous status"])
        #expect(
            view.expanded == [
                "Cooking", "Arriving in 20:00", "Restaurant is preparing your order", "Based on last estimate",
                "Waiting for an update", "Last confirmed 00:00",
            ]
        )
    }

    /// At zero the countdown shows 0:00 and the "based on last estimate" line; the status does not change by itself.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("시간이 다 됐다는 이유만으로 전달 완료를 만들어내지 않았다").
    @Test func zeroShowsLastEstimateAndKeepsStatus() {
        var board = startedBoard()
        _ = board.apply(update(at: 5, status: .delivering, eta: 600), at: client(5))
        #expect(board.tick(at: client(601)).isEmpty)
        let view = ActivityView(activity: board.activity("A1001")!, at: client(601))
        #expect(view.compactLeading == ["배달 중"])
        #expect(view.compactTrailing == "0:00")
        #expect(view.showsLastEstimateLine)
        #expect(view.expanded == ["배달 중", "도착까지 0:00", "라이더가 배달 중이에요", "마지막 예상 기준"])
        #expect(view.remainingMilliseconds == 0)
        #expect(board.activity("A1001")?.content.status == .delivering)
    }

    /// Ended: gone from the Dynamic Island, final status on the lock screen; dismissed: nothing.
    /// Source: HIG Live Activities ("immediately removes it from the Dynamic Island"); ActivityState.dismissed.
    @Test func endedAndDismissed() {
        var board = startedBoard()
        _ = board.apply(update(event: .end, at: 700, status: .delivered), at: client(700))
        let ended = ActivityView(
            activity: board.activity("A1001")!,
            at: client(701),
            utcOffsetMinutes: koreaOffsetMinutes
        )
        #expect(ended.compactLeading.isEmpty)
        #expect(ended.compactTrailing == nil)
        #expect(ended.minimal == nil)
        #expect(ended.expanded.isEmpty)
        #expect(ended.lockScreen == ["배달 완료", "배달이 완료되었어요", "마지막 확인 09:11"])
        // The end's timestamp is T0+700: it leaves the lock screen 4 h later (PROTOCOL.md §9.7).
        #expect(ended.removalAt == client(700 + 14_400))
        board.userDismissed(orderID: "A1001", at: client(800))
        let dismissed = ActivityView(activity: board.activity("A1001")!, at: client(801))
        #expect(dismissed.lockScreen.isEmpty)
        #expect(dismissed.countdown == nil)
    }

    /// The status text comes from the content state's customer summary (the server's wording), not a fixed table.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("기존 서버 응답에서 얻은 고객용 요약을 사용한다").
    @Test func usesTheServersSummary() {
        var board = startedBoard()
        var custom = update(at: 5, status: .awaitingPickup)
        custom.content.summary = CustomerSummary(
            ko: "픽업 대기",
            en: "Rider en route",
            detailKo: "곧 도착해요",
            detailEn: "Almost there"
        )
        _ = board.apply(custom, at: client(5))
        let view = ActivityView(activity: board.activity("A1001")!, at: client(5), language: .english)
        #expect(view.compactLeading == ["Rider en route"])
        #expect(view.expanded == ["Rider en route", "Arriving in 19:55", "Almost there"])
    }

    /// Time of day in the client's time zone, across midnight and before the epoch.
    /// Source: our formatting (HH:mm, 24-hour).
    @Test(arguments: [
        (Int64(0), 0, "00:00"),
        (t0Milliseconds, 540, "09:00"),
        (t0Milliseconds + 59_999, 0, "00:00"),
        (t0Milliseconds - 60_000, 0, "23:59"),
        (-60_000, 0, "23:59"),
        (t0Milliseconds, -300, "19:00"),
    ])
    func timeOfDay(milliseconds: Int64, offset: Int, expected: String) {
        let instant = ClientInstant(millisecondsSinceEpoch: milliseconds)
        #expect(ActivityView.timeOfDay(instant, utcOffsetMinutes: offset) == expected)
    }
}
