import LiveBusActivity
import LiveBusClock
import LiveBusSimulator
import Testing

/// The push payloads of reference/push-payloads.md, verbatim (T0 = 1767225600).
enum Payloads {
    /// The start used by P1 and P3: cooking, etaEnd T0+1200, timestamp T0 (a start push needs alert and attributes).
    static let start = """
        {"aps":{"timestamp":1767225600,"event":"start","content-state":{"status":"cooking","etaEnd":788919600},\
        "alert":{"title":"주문 접수","body":"조리를 시작했어요"},"attributes-type":"OrderAttributes","attributes":{"orderID":"A1001"}}}
        """
    /// P4's start: stale date T0−1800.
    static let startAlreadyStale = """
        {"aps":{"timestamp":1767225600,"event":"start","stale-date":1767223800,\
        "content-state":{"status":"cooking","etaEnd":788919600},\
        "alert":{"title":"주문 접수","body":"조리를 시작했어요"},"attributes-type":"OrderAttributes","attributes":{"orderID":"A1001"}}}
        """
    static let p1Update = """
        {"aps":{"timestamp":1767225660,"event":"update","content-state":{"status":"pickedUp","etaEnd":788919300}}}
        """
    static let p1Older = """
        {"aps":{"timestamp":1767225630,"event":"update","content-state":{"status":"cooking","etaEnd":788919600}}}
        """
    static let p1End = """
        {"aps":{"timestamp":1767225630,"event":"end","content-state":{"status":"delivered","etaEnd":788919300},"dismissal-date":1767225600}}
        """
    static let p2 = """
        {"aps":{"timestamp":1767258000,"event":"update","content-state":{"status":"delivering","etaEnd":788919000}}}
        """
    static let p3 = """
        {"aps":{"timestamp":1767225605,"event":"update","stale-date":1767225900,"content-state":{"status":"delivering","etaEnd":788919000}}}
        """

    /// P5: a valid update padded with an ignored key to `size` bytes.
    static func padded(to size: Int) -> String {
        let head =
            #"{"aps":{"timestamp":1767225605,"event":"update","content-state":{"status":"delivering","etaEnd":788919000}},"pad":""#
        let tail = "\"}"
        return head + String(repeating: "x", count: size - head.utf8.count - tail.utf8.count) + tail
    }
}

/// A board whose activity for A1001 was started from order creation with `payload` (a start push's content).
private func board(startedWith payload: String, skew: Skew = Skew()) -> ActivityBoard {
    var board = ActivityBoard(profile: DeviceProfile())
    let start = try! APNsPayload.parse(bytes(payload)).activityUpdate(orderID: "A1001", toClient: skew.toClient)
    let verdict = board.orderCreated(start, origin: .orderCreation, at: skew.client(0))
    precondition(verdict.applied, "\(verdict)")
    return board
}

struct PushScenarioTests {
    /// P1: an update stamped before the last applied one is ignored (the view still shows pickedUp); an end with an
    /// older timestamp is applied, and its past dismissal date removes the activity at once.
    /// Source: push-payloads.md P1; update(_:alertConfiguration:timestamp:); https://developer.apple.com/forums/thread/776165
    @Test func p1OlderUpdateIgnoredEndApplied() {
        var board = board(startedWith: Payloads.start)
        #expect(board.activity("A1001")?.etaTarget == client(1200))
        let update = board.push(bytes(Payloads.p1Update), orderID: "A1001", toClient: Skew().toClient, at: client(60))
        #expect(update.applied)
        #expect(board.activity("A1001")?.etaTarget == client(900))
        let older = board.push(bytes(Payloads.p1Older), orderID: "A1001", toClient: Skew().toClient, at: client(90))
        #expect(older.reason?.code == "olderTimestamp")
        #expect(board.activity("A1001")?.content.status == .pickedUp)
        #expect(ActivityView(activity: board.activity("A1001")!, at: client(90)).compactLeading == ["픽업 완료"])
        let end = board.push(bytes(Payloads.p1End), orderID: "A1001", toClient: Skew().toClient, at: client(120))
        #expect(end.applied)
        let activity = board.activity("A1001")
        #expect(activity?.state == .dismissed)
        #expect(activity?.dismissalPolicy == .immediate)
        #expect(activity?.content.status == .delivered)
        #expect(activity?.dismissedAt == client(120))
        #expect(activity?.lastAppliedTimestamp == server(60))
    }

    /// P2: a timestamp 9 hours ahead of the device's now is ignored.
    /// Source: push-payloads.md P2; https://developer.apple.com/forums/thread/776165
    @Test func p2NineHoursAheadIgnored() {
        var board = board(startedWith: Payloads.start)
        let verdict = board.push(bytes(Payloads.p2), orderID: "A1001", toClient: Skew().toClient, at: client(10))
        #expect(verdict.reason?.code == "timestampTooFarAhead")
        #expect(board.activity("A1001")?.content.status == .cooking)
    }

    /// A push stamped 2 hours ahead (within Apple's 8 hours) is applied, but its verdict warns that later updates
    /// stamped before then will be ignored, and they are; an update stamped at the phone's now gets no warning.
    /// Source: review finding (a push stamped hours ahead silently turned every later update into olderTimestamp);
    /// https://developer.apple.com/documentation/activitykit/activity/update(_:alertconfiguration:timestamp:)
    @Test func farAheadTimestampAppliedWithAWarning() {
        var board = startedBoard()
        #expect(board.apply(update(at: 10, status: .cooking), at: client(10)).warning == nil)
        let ahead = board.apply(update(at: 20 + 2 * 3600, status: .pickedUp), at: client(20))
        #expect(ahead.applied)
        #expect(ahead.warning?.contains("2 h 0 min ahead") == true)
        #expect(ahead.warning?.contains("olderTimestamp") == true)
        #expect(ahead.json.hasSuffix(#","warning":"\#(ahead.warning!)"}"#))
        #expect(board.apply(update(at: 30, status: .delivering), at: client(30)).reason?.code == "olderTimestamp")
        // Within a minute ahead (clock uncertainty, a sender slightly fast): no warning.
        #expect(board.apply(update(at: 20 + 2 * 3600 + 50, status: .delivering), at: client(7240)).warning == nil)
    }

    /// P3: with no further pushes the activity is active at T0+299 and stale at T0+300; the status stays delivering,
    /// the timer counts to etaEnd = T0+600 and then shows 0:00 (in a skewed client clock too).
    /// Source: push-payloads.md P3; https://developer.apple.com/documentation/activitykit/activitycontent/staledate
    @Test(arguments: [Int64(0), 83_250, -37_125])
    func p3StaleDateReached(skewMilliseconds: Int64) {
        let skew = Skew(skewMilliseconds: skewMilliseconds)
        var board = board(startedWith: Payloads.start, skew: skew)
        #expect(board.push(bytes(Payloads.p3), orderID: "A1001", toClient: skew.toClient, at: skew.client(5)).applied)
        #expect(board.nextDeadline == skew.client(300))
        #expect(board.tick(at: skew.client(299)).isEmpty)
        #expect(board.activity("A1001")?.state == .active)
        #expect(
            board.tick(at: skew.client(300)) == [
                ActivityTransition(orderID: "A1001", kind: .becameStale, at: skew.client(300))
            ]
        )
        let activity = board.activity("A1001")!
        #expect(activity.state == .stale)
        #expect(activity.content.status == .delivering)
        let view = ActivityView(activity: activity, at: skew.client(300))
        #expect(view.showsStaleLines)
        #expect(view.countdown == "5:00")
        #expect(ActivityView(activity: activity, at: skew.client(599)).countdown == "0:01")
        #expect(ActivityView(activity: activity, at: skew.client(600)).countdown == "0:00")
        #expect(ActivityView(activity: activity, at: skew.client(700)).countdown == "0:00")
        _ = board.tick(at: skew.client(700))
        #expect(board.activity("A1001")?.content.status == .delivering)
    }

    /// P4: a stale date already past when the activity starts makes it stale from the start.
    /// Source: push-payloads.md P4; https://github.com/nalu-development/nalu/pull/222
    @Test func p4StaleFromTheStart() {
        let board = board(startedWith: Payloads.startAlreadyStale)
        #expect(board.activity("A1001")?.state == .stale)
        #expect(board.activity("A1001")?.staleDate == client(-1800))
        #expect(board.nextDeadline == client(8 * 3600))
    }

    /// P5: a payload over 4096 bytes is rejected (413 PayloadTooLarge); 4096 bytes exactly is accepted; a content
    /// state over 4 KB is rejected as too large.
    /// Source: push-payloads.md P5; https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
    @Test func p5Oversized() {
        var board = board(startedWith: Payloads.start)
        let tooLarge = Payloads.padded(to: 4097)
        #expect(tooLarge.utf8.count == 4097)
        let verdict = board.push(bytes(tooLarge), orderID: "A1001", toClient: Skew().toClient, at: client(5))
        #expect(verdict.reason?.code == "payloadTooLarge")
        #expect(verdict.reason?.appleWords == "PayloadTooLarge")
        #expect(verdict.source == ActivitySource.sendingRequests)
        #expect(board.activity("A1001")?.content.status == .cooking)
        #expect(
            board.push(bytes(Payloads.padded(to: 4096)), orderID: "A1001", toClient: Skew().toClient, at: client(5))
                .applied
        )
        #expect(board.activity("A1001")?.content.status == .delivering)
        let bigContent = update(at: 6, status: .pickedUp, contentStateByteCount: 4097)
        #expect(board.apply(bigContent, at: client(6)).reason?.code == "contentStateTooLarge")
    }

    /// A push that cannot be read gets a verdict naming the field.
    /// Source: issue text ("Bad payloads are rejected with the field named").
    @Test func malformedPushVerdictNamesTheField() {
        var board = board(startedWith: Payloads.start)
        let payload =
            #"{"aps":{"timestamp":1767225605,"event":"update","content-state":{"status":"delivering","etaEnd":"soon"}}}"#
        let verdict = board.push(bytes(payload), orderID: "A1001", toClient: Skew().toClient, at: client(5))
        #expect(verdict.reason?.code == "typeMismatch")
        #expect(verdict.reason?.message.hasPrefix("aps.content-state.etaEnd: ") == true)
        #expect(board.activity("A1001")?.content.status == .cooking)
        let broken = #"{"aps":{"timestamp":1767225605,"event":"update","content-state":{"status":"delivering",}}"#
        let syntax = board.push(bytes(broken), orderID: "A1001", toClient: Skew().toClient, at: client(5))
        #expect(syntax.reason?.code == "malformedPayload")
    }
}
