import LiveBusActivity
import LiveBusClock
import Testing

/// Push-to-start on the board (ActivityKit, iOS 17.2+): a start push starts an activity in any app state.
struct PushToStartTests {
    static func start(alert: Bool = true, type: String = "OrderAttributes", event: String = "start") -> [UInt8] {
        let etaEnd = (t0Milliseconds / 1000) - 978_307_200 + 1200
        let a = alert ? #","alert":{"title":"Order","body":"Cooking"}"# : ""
        return Array(
            #"{"aps":{"timestamp":\#(t0Milliseconds / 1000),"event":"\#(event)","content-state":{"status":"cooking","etaEnd":\#(etaEnd)},"attributes-type":"\#(type)","attributes":{"orderID":"S1"}\#(a)}}"#
                .utf8
        )
    }

    /// A backgrounded app's activity starts from a start push (an order-created start would be refused with
    /// `visibility` in the background); the activity shows the pushed state.
    @Test func aStartPushStartsAnActivityInTheBackground() {
        var board = ActivityBoard(profile: DeviceProfile(appInForeground: false))
        let v = board.pushToStart(Self.start(), orderID: "S1", toClient: Skew().toClient, at: client(1))
        #expect(v.applied, "\(v)")
        #expect(board.activity("S1")?.content.status == .cooking)
        #expect(board.activity("S1")?.state == .active)
        // Later updates reach it like any activity's.
        let etaEnd = (t0Milliseconds / 1000) - 978_307_200 + 600
        let u = board.push(
            Array(
                #"{"aps":{"timestamp":\#(t0Milliseconds / 1000 + 5),"event":"update","content-state":{"status":"pickedUp","etaEnd":\#(etaEnd)}}}"#
                    .utf8
            ),
            orderID: "S1",
            toClient: Skew().toClient,
            at: client(6)
        )
        #expect(u.applied && board.activity("S1")?.content.status == .pickedUp)
    }

    /// What starts nothing: no alert (Apple: required for start), an update sent to the push-to-start token, an
    /// attributes-type that is not the app's, Live Activities turned off, a second start for the same id.
    @Test func whatStartsNothing() {
        var board = ActivityBoard(profile: DeviceProfile(appInForeground: false))
        let noAlert = board.pushToStart(
            Self.start(alert: false),
            orderID: "S1",
            toClient: Skew().toClient,
            at: client(1)
        )
        #expect(!noAlert.applied && noAlert.reason?.code == "malformedPayload" && "\(noAlert)".contains("aps.alert"))
        let update = board.pushToStart(
            Self.start(event: "update"),
            orderID: "S1",
            toClient: Skew().toClient,
            at: client(1)
        )
        #expect(update.reason == .pushToStartNeedsStartEvent)
        let type = board.pushToStart(Self.start(type: "Other"), orderID: "S1", toClient: Skew().toClient, at: client(1))
        #expect(type.reason == .attributesTypeMismatch)
        #expect(board.activity("S1") == nil)
        let first = board.pushToStart(Self.start(), orderID: "S1", toClient: Skew().toClient, at: client(1))
        #expect(first.applied)
        let twice = board.pushToStart(Self.start(), orderID: "S1", toClient: Skew().toClient, at: client(2))
        #expect(twice.reason == .alreadyStarted)
        var denied = ActivityBoard(profile: DeviceProfile(authorization: .denied))
        let refused = denied.pushToStart(Self.start(), orderID: "S1", toClient: Skew().toClient, at: client(1))
        #expect(refused.reason == .denied)
    }
}
