import LiveBusActivity
import LiveBusClock
import LiveBusSimulator
import Testing

struct StartIntentTests {
    /// The order-creation action starts the activity exactly once; a second creation of the same order does not.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("시작 의도는 주문을 생성한 동작에서 한 번만 얻는다").
    @Test func creationStartsExactlyOnce() {
        var board = ActivityBoard(profile: DeviceProfile())
        let first = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        #expect(first == .applied(source: ActivitySource.displayingLiveData))
        #expect(board.startIntent("A1001") == .started)
        let second = board.orderCreated(update(event: .start, at: 5), origin: .orderCreation, at: client(5))
        #expect(second.reason?.code == "alreadyStarted")
        #expect(second.source == ActivitySource.fieldReportStartIntent)
        #expect(board.startedActivityCount == 1)
        #expect(board.activity("A1001")?.startedAt == client(0))
    }

    /// Restoring a saved order, reconnecting, resuming or opening a link never starts an activity.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("저장된 주문을 복원하거나 링크로 주문을 열었다는 이유만으로 새 Activity를 만들지는 않는다").
    @Test(arguments: [StartOrigin.restore, .reconnect, .resume, .link])
    func otherOriginsNeverStart(origin: StartOrigin) {
        var board = ActivityBoard(profile: DeviceProfile())
        let verdict = board.orderCreated(update(event: .start, at: 0), origin: origin, at: client(0))
        #expect(verdict.reason?.code == "startNotFromOrderCreation")
        #expect(board.activity("A1001") == nil)
        #expect(board.startIntent("A1001") == nil)
        #expect(board.startedActivityCount == 0)
        #expect(board.nextDeadline == nil)

        var running = startedBoard()
        #expect(!running.orderCreated(update(event: .start, at: 9), origin: origin, at: client(9)).applied)
        #expect(running.startedActivityCount == 1)
        #expect(running.activities.count == 1)
    }

    /// A start requested while the client is not ready is kept and applied at the instant it becomes ready.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("네이티브 준비가 늦으면 시작 의도를 유지하다가 준비 뒤 적용한다").
    @Test func notReadyThenReady() {
        var board = ActivityBoard(profile: DeviceProfile())
        board.simulateNotReady(forMilliseconds: 1500, at: client(0))
        #expect(board.nextDeadline == nil)
        let verdict = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0, ms: 100))
        #expect(verdict.reason?.code == "startPendingUntilReady")
        #expect(board.startIntent("A1001") == .pendingUntilReady)
        #expect(board.nextDeadline == client(1, ms: 500))
        #expect(board.tick(at: client(1, ms: 499)).isEmpty)
        #expect(board.activity("A1001") == nil)
        #expect(
            board.tick(at: client(1, ms: 500)) == [
                ActivityTransition(orderID: "A1001", kind: .started, at: client(1, ms: 500))
            ]
        )
        #expect(board.activity("A1001")?.startedAt == client(1, ms: 500))
        #expect(board.startIntent("A1001") == .started)
        #expect(board.startedActivityCount == 1)
        #expect(board.nextDeadline == client(1, ms: 500).advanced(byMilliseconds: 8 * hourMilliseconds))
    }

    /// A cancel request that fails while the client is not ready keeps the created order and its start intent:
    /// exactly one start once ready (the field report's regression: 0 starts before the fix, 1 after).
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("수정 전에는 시작 0회로 실패했고, 수정 뒤에는 1회로 통과했다").
    @Test func cancelFailureWhileNotReadyStartsExactlyOnce() {
        var board = ActivityBoard(profile: DeviceProfile())
        board.simulateNotReady(forMilliseconds: 2000, at: client(0))
        _ = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        board.cancelRequestFailed(orderID: "A1001", at: client(0, ms: 800))
        #expect(board.cancelFailureCount("A1001") == 1)
        #expect(board.startIntent("A1001") == .pendingUntilReady)
        var started: [ActivityTransition] = []
        for milliseconds in stride(from: Int64(0), through: 5000, by: 250) {
            started += board.tick(at: client(0, ms: milliseconds)).filter { $0.kind == .started }
        }
        #expect(started == [ActivityTransition(orderID: "A1001", kind: .started, at: client(2))])
        #expect(board.startedActivityCount == 1)
        #expect(board.activities.count == 1)
        #expect(!board.orderCreated(update(event: .start, at: 6), origin: .reconnect, at: client(6)).applied)
        #expect(board.startedActivityCount == 1)
    }

    /// A failed start keeps the created order; a retry starts it once.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("표시가 실패했다고 이미 만들어진 주문을 없애거나 ... 다시 시도할 수 있게 했다").
    @Test func failedStartKeepsTheOrderAndCanBeRetried() {
        var board = ActivityBoard(profile: DeviceProfile())
        board.simulateStartFailures(1)
        let failed = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        #expect(failed.reason?.code == "simulatedStartFailure")
        #expect(board.startIntent("A1001") == .failed(.simulatedStartFailure))
        #expect(board.activity("A1001") == nil)
        let kept = board.apply(update(at: 10, status: .pickedUp), at: client(10))
        #expect(kept.reason?.code == "keptForPendingStart")
        #expect(board.retryStart(orderID: "A1001", at: client(20)).applied)
        #expect(board.activity("A1001")?.content.status == .pickedUp)
        #expect(board.activity("A1001")?.startedAt == client(20))
        #expect(board.retryStart(orderID: "A1001", at: client(30)).reason?.code == "alreadyStarted")
        #expect(board.startedActivityCount == 1)
    }

    /// Authorization and foreground rules refuse a start with Apple's `ActivityAuthorizationError` case.
    /// Source: https://developer.apple.com/documentation/activitykit/activityauthorizationerror ; .../visibility
    @Test(arguments: [
        (DeviceProfile(authorization: .denied), "denied"),
        (DeviceProfile(authorization: .activitiesDisabled), "denied"),
        (DeviceProfile(authorization: .unentitled), "unentitled"),
        (DeviceProfile(appInForeground: false), "visibility"),
    ])
    func profileRefusesStart(profile: DeviceProfile, code: String) {
        var board = ActivityBoard(profile: profile)
        let verdict = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        #expect(!verdict.applied)
        #expect(verdict.reason?.code == code)
        #expect(verdict.reason?.appleWords != nil)
        #expect(
            verdict.source.hasPrefix("https://developer.apple.com/documentation/activitykit/activityauthorizationerror")
        )
        #expect(board.activity("A1001") == nil)
        board.profile = DeviceProfile()
        #expect(board.retryStart(orderID: "A1001", at: client(3)).applied)
        #expect(board.startedActivityCount == 1)
    }

    /// A background start fails with Apple's visibility words.
    /// Source: https://developer.apple.com/documentation/activitykit/activityauthorizationerror/visibility
    @Test func backgroundStartUsesApplesWords() {
        var board = ActivityBoard(profile: DeviceProfile(appInForeground: false))
        let verdict = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        #expect(
            verdict.reason?.appleWords == "The app tried to start the Live Activity while it was in the background."
        )
        #expect(verdict.source == ActivitySource.visibilityError)
    }

    /// A start whose content state is over 4 KB fails with attributesTooLarge.
    /// Source: https://developer.apple.com/documentation/activitykit/activityauthorizationerror/attributestoolarge
    @Test func oversizedStartFails() {
        var board = ActivityBoard(profile: DeviceProfile())
        let start = update(event: .start, at: 0, contentStateByteCount: 4097)
        #expect(board.orderCreated(start, origin: .orderCreation, at: client(0)).reason?.code == "attributesTooLarge")
    }

    /// The device's ongoing-activity limit refuses a further start with globalMaximumExceeded.
    /// Source: https://developer.apple.com/documentation/activitykit/activityauthorizationerror/globalmaximumexceeded
    @Test func ongoingLimit() {
        var board = ActivityBoard(profile: DeviceProfile(maximumOngoingActivities: 1))
        #expect(board.orderCreated(update("A1", event: .start, at: 0), origin: .orderCreation, at: client(0)).applied)
        let second = board.orderCreated(update("A2", event: .start, at: 1), origin: .orderCreation, at: client(1))
        #expect(second.reason?.code == "globalMaximumExceeded")
        _ = board.apply(update("A1", event: .end, at: 2), at: client(2))
        #expect(board.retryStart(orderID: "A2", at: client(3)).applied)
    }

    /// Updates that arrive while the start is pending are kept and shown when it starts; older ones are ignored.
    /// Source: field report 001 (start intent kept); update(_:alertConfiguration:timestamp:) (older ignored).
    @Test func updatesWhilePendingAreKept() {
        var board = ActivityBoard(profile: DeviceProfile())
        board.simulateNotReady(forMilliseconds: 10_000, at: client(0))
        _ = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        #expect(
            board.apply(update(at: 5, status: .awaitingPickup), at: client(5)).reason?.code == "keptForPendingStart"
        )
        #expect(board.apply(update(at: 3, status: .cooking), at: client(6)).reason?.code == "olderTimestamp")
        _ = board.tick(at: client(10))
        #expect(board.activity("A1001")?.content.status == .awaitingPickup)
        #expect(board.activity("A1001")?.lastAppliedTimestamp == server(5))
    }

    /// An order that ends while its start is pending never starts an activity.
    /// Source: HIG Live Activities ("Always end a Live Activity immediately when the task or event ends").
    @Test func orderEndedWhilePendingNeverStarts() {
        var board = ActivityBoard(profile: DeviceProfile())
        board.simulateNotReady(forMilliseconds: 10_000, at: client(0))
        _ = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        let end = board.apply(update(event: .end, at: 4, status: .canceled), at: client(4))
        #expect(end.reason?.code == "orderEndedBeforeStart")
        #expect(board.startIntent("A1001") == .orderEnded)
        #expect(board.nextDeadline == nil)
        #expect(board.tick(at: client(20)).isEmpty)
        #expect(board.activity("A1001") == nil)
    }

    /// A pending start that meets a background app when ready fails with visibility and is kept for a retry.
    /// Source: https://developer.apple.com/documentation/activitykit/activityauthorizationerror/visibility
    @Test func pendingStartInBackgroundFails() {
        var board = ActivityBoard(profile: DeviceProfile())
        board.simulateNotReady(forMilliseconds: 1000, at: client(0))
        _ = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(0))
        board.profile.appInForeground = false
        #expect(
            board.tick(at: client(1))
                == [ActivityTransition(orderID: "A1001", kind: .startFailed, at: client(1), reason: .visibility)]
        )
        board.profile.appInForeground = true
        #expect(board.retryStart(orderID: "A1001", at: client(2)).applied)
    }

    /// A start push is not a way to start here: only the order-creation action starts an activity.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt
    @Test func startEventThroughApplyNeverStarts() {
        var board = ActivityBoard(profile: DeviceProfile())
        #expect(board.apply(update(event: .start, at: 0), at: client(0)).reason?.code == "pushToStartNotSupported")
        var running = startedBoard()
        #expect(running.apply(update(event: .start, at: 5), at: client(5)).reason?.code == "alreadyStarted")
        #expect(running.startedActivityCount == 1)
    }
}

struct ReadinessTests {
    /// Ending a "not ready" period early (0 ms) applies the pending start at that instant.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt (start intent kept until ready).
    @Test func readyAgainAppliesPendingStart() {
        var board = ActivityBoard(profile: DeviceProfile())
        board.simulateNotReady(forMilliseconds: 60_000, at: client(0))
        _ = board.orderCreated(update(event: .start, at: 0), origin: .orderCreation, at: client(1))
        #expect(!board.isReady(at: client(2)))
        board.simulateNotReady(forMilliseconds: 0, at: client(2))
        #expect(board.isReady(at: client(2)))
        #expect(board.tick(at: client(2)) == [ActivityTransition(orderID: "A1001", kind: .started, at: client(2))])
        #expect(board.startedActivityCount == 1)
    }
}
