import LiveBusActivity
import LiveBusClock
import LiveBusSimulator
import Testing

/// (dismissal date seconds after the end, expected removal seconds after T0): 30 min → the date wins; 6 h → 4 h wins.
private let afterDateCases: [(Int64, Int64)] = [(30 * 60, 100 + 30 * 60), (6 * 3600, 100 + 4 * 3600)]

struct ActivityBoardTests {
    /// An update stamped before the last applied one is ignored; the view keeps the newer content.
    /// Source: https://developer.apple.com/documentation/activitykit/activity/update(_:alertconfiguration:timestamp:)
    @Test func olderTimestampIsIgnored() {
        var board = startedBoard()
        #expect(board.apply(update(at: 60, status: .pickedUp), at: client(60)).applied)
        let verdict = board.apply(update(at: 30, status: .cooking), at: client(90))
        #expect(!verdict.applied)
        #expect(verdict.reason?.code == "olderTimestamp")
        #expect(
            verdict.reason?.appleWords
                == "If this is older than a previous update or push payload, the system ignores this update."
        )
        #expect(verdict.source == ActivitySource.updateTimestamp)
        #expect(board.activity("A1001")?.content.status == .pickedUp)
        #expect(board.activity("A1001")?.lastAppliedTimestamp == server(60))
    }

    /// An update with the same timestamp as the last applied one is not older, so it is applied.
    /// Source: update(_:alertConfiguration:timestamp:) ("older than a previous update").
    @Test func equalTimestampIsApplied() {
        var board = startedBoard()
        #expect(board.apply(update(at: 0, status: .awaitingPickup), at: client(5)).applied)
        #expect(board.activity("A1001")?.content.status == .awaitingPickup)
    }

    /// A timestamp more than 8 hours after the device's now is dropped; exactly 8 hours is still applied.
    /// Source: https://developer.apple.com/forums/thread/776165 (DTS: "timestamps beyond 8 hours ... will also be dropped").
    @Test func timestampMoreThanEightHoursAheadIsIgnored() {
        var board = startedBoard()
        let ahead = board.apply(update(at: 10 + 8 * 3600, ms: 1), at: client(10))
        #expect(ahead.reason?.code == "timestampTooFarAhead")
        #expect(ahead.source == ActivitySource.dtsTimestamps)
        #expect(board.apply(update(at: 10 + 8 * 3600, status: .pickedUp), at: client(10)).applied)
        #expect(board.activity("A1001")?.content.status == .pickedUp)
    }

    /// An end is applied even when its timestamp is older than the last applied update.
    /// Source: https://developer.apple.com/forums/thread/776165 (end applied with the same past timestamp).
    @Test func endIsAppliedWithAnOlderTimestamp() {
        var board = startedBoard()
        #expect(board.apply(update(at: 60, status: .delivering), at: client(60)).applied)
        let end = board.apply(update(event: .end, at: 30, status: .delivered), at: client(120))
        #expect(end.applied)
        let activity = board.activity("A1001")
        #expect(activity?.state == .ended)
        #expect(activity?.content.status == .delivered)
        #expect(activity?.lastAppliedTimestamp == server(60))
        #expect(activity?.endCause == .app)
    }

    /// Nothing is applied after the activity ended or was dismissed.
    /// Source: https://developer.apple.com/documentation/activitykit/activity/update(_:) ("ignores attempts to update a Live Activity that ended").
    @Test func nothingIsAppliedAfterEndOrDismissal() {
        var board = startedBoard()
        #expect(board.apply(update(event: .end, at: 60, status: .delivered), at: client(60)).applied)
        let afterEnd = board.apply(update(at: 70, status: .delivering), at: client(70))
        #expect(afterEnd.reason?.code == "activityEnded")
        #expect(afterEnd.source == ActivitySource.update)
        let secondEnd = board.apply(update(event: .end, at: 80, status: .canceled), at: client(80))
        #expect(secondEnd.reason?.code == "activityEnded")
        #expect(board.activity("A1001")?.content.status == .delivered)
        board.userDismissed(orderID: "A1001", at: client(90))
        #expect(board.apply(update(at: 100), at: client(100)).reason?.code == "activityEnded")
        #expect(board.activity("A1001")?.state == .dismissed)
    }

    /// A content state over 4 KB is refused; exactly 4096 bytes is accepted.
    /// Source: https://developer.apple.com/documentation/activitykit/activityattributes/contentstate
    @Test func contentStateOverFourKilobytesIsRefused() {
        var board = startedBoard()
        let tooLarge = board.apply(update(at: 10, contentStateByteCount: 4097), at: client(10))
        #expect(tooLarge.reason?.code == "contentStateTooLarge")
        #expect(board.apply(update(at: 10, status: .pickedUp, contentStateByteCount: 4096), at: client(10)).applied)
    }

    /// Default dismissal policy: the ended activity stays on the lock screen exactly 4 hours, then is dismissed.
    /// Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy/default
    @Test func defaultDismissalRemovesAfterFourHours() {
        var board = startedBoard()
        #expect(board.apply(update(event: .end, at: 100, status: .delivered), at: client(100)).applied)
        #expect(board.activity("A1001")?.dismissalPolicy == .default)
        #expect(board.nextDeadline == client(100 + 4 * 3600))
        #expect(board.tick(at: client(100 + 4 * 3600, ms: -1)).isEmpty)
        #expect(board.activity("A1001")?.state == .ended)
        let transitions = board.tick(at: client(100 + 4 * 3600))
        #expect(transitions == [ActivityTransition(orderID: "A1001", kind: .dismissed, at: client(100 + 4 * 3600))])
        #expect(board.activity("A1001")?.state == .dismissed)
        #expect(board.nextDeadline == nil)
    }

    /// A dismissal date at or before the end removes the activity at once (immediate policy).
    /// Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy/immediate
    @Test func pastDismissalDateIsImmediate() {
        var board = startedBoard()
        #expect(board.apply(update(event: .end, at: 100, dismissal: 100), at: client(100)).applied)
        #expect(board.activity("A1001")?.state == .dismissed)
        #expect(board.activity("A1001")?.dismissalPolicy == .immediate)
        #expect(board.activity("A1001")?.dismissedAt == client(100))
    }

    /// after(date): removed at the date or 4 hours after the end, whichever comes first.
    /// Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy/after(_:)
    @Test(arguments: afterDateCases)
    func afterDateDismissal(offsetSeconds: Int64, expectedRemovalSeconds: Int64) {
        var board = startedBoard()
        let end = update(event: .end, at: 100, dismissal: 100 + offsetSeconds)
        #expect(board.apply(end, at: client(100)).applied)
        #expect(board.activity("A1001")?.dismissalPolicy == .after(client(100 + offsetSeconds)))
        #expect(board.nextDeadline == client(expectedRemovalSeconds))
        #expect(board.tick(at: client(expectedRemovalSeconds, ms: -1)).isEmpty)
        #expect(
            board.tick(at: client(expectedRemovalSeconds))
                == [ActivityTransition(orderID: "A1001", kind: .dismissed, at: client(expectedRemovalSeconds))]
        )
    }

    /// The system ends an activity 8 hours after its start and removes it from the lock screen at 12 hours.
    /// Source: https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities ("Understand constraints")
    @Test func systemEndsAtEightHoursAndRemovesAtTwelve() {
        var board = startedBoard()
        #expect(board.nextDeadline == client(8 * 3600))
        #expect(board.tick(at: client(8 * 3600, ms: -1)).isEmpty)
        #expect(board.activity("A1001")?.state == .active)
        #expect(
            board.tick(at: client(8 * 3600)) == [
                ActivityTransition(orderID: "A1001", kind: .ended, at: client(8 * 3600))
            ]
        )
        let ended = board.activity("A1001")
        #expect(ended?.state == .ended)
        #expect(ended?.endCause == .systemTimeLimit)
        #expect(board.nextDeadline == client(12 * 3600))
        #expect(board.apply(update(at: 8 * 3600 + 5), at: client(8 * 3600 + 5)).reason?.code == "activityEnded")
        #expect(
            board.tick(at: client(12 * 3600)) == [
                ActivityTransition(orderID: "A1001", kind: .dismissed, at: client(12 * 3600))
            ]
        )
    }

    /// A late tick applies every missed deadline in time order, each stamped with its own instant.
    /// Source: ActivityState transitions, https://developer.apple.com/documentation/activitykit/activitystate
    @Test func lateTickCatchesUpInOrder() {
        var board = startedBoard(stale: 600)
        let transitions = board.tick(at: client(13 * 3600))
        #expect(
            transitions == [
                ActivityTransition(orderID: "A1001", kind: .becameStale, at: client(600)),
                ActivityTransition(orderID: "A1001", kind: .ended, at: client(8 * 3600)),
                ActivityTransition(orderID: "A1001", kind: .dismissed, at: client(12 * 3600)),
            ]
        )
    }

    /// Transitions caught up by an apply are not lost: the next tick returns them.
    /// Source: STYLE.md habit 5 (a state machine returns every change).
    @Test func transitionsCaughtUpByApplyAreReturnedByTick() {
        var board = startedBoard(stale: 300)
        #expect(board.apply(update(at: 200, status: .pickedUp, stale: 250), at: client(400)).applied)
        #expect(board.activity("A1001")?.state == .stale)
        #expect(
            board.tick(at: client(401)) == [ActivityTransition(orderID: "A1001", kind: .becameStale, at: client(300))]
        )
        #expect(board.tick(at: client(402)).isEmpty)
        var second = startedBoard(stale: 300)
        _ = second.apply(update(at: 100, stale: 900), at: client(350))
        #expect(
            second.tick(at: client(350)) == [ActivityTransition(orderID: "A1001", kind: .becameStale, at: client(300))]
        )
        #expect(second.activity("A1001")?.state == .active)
    }

    /// A person's dismissal is final: later updates, starts and retries never revive it.
    /// Source: https://github.com/jerryfane/herdrup/pull/258 (update to a swiped-away activity is dropped); field report 001.
    @Test func userDismissedIsNeverRevived() {
        var board = startedBoard()
        #expect(
            board.userDismissed(orderID: "A1001", at: client(30))
                == [ActivityTransition(orderID: "A1001", kind: .dismissed, at: client(30))]
        )
        #expect(board.activity("A1001")?.endCause == .person)
        #expect(board.apply(update(at: 40, status: .delivering), at: client(40)).reason?.code == "activityEnded")
        #expect(
            board.orderCreated(update(event: .start, at: 50), origin: .orderCreation, at: client(50)).reason?.code
                == "alreadyStarted"
        )
        #expect(board.retryStart(orderID: "A1001", at: client(60)).reason?.code == "alreadyStarted")
        for origin in [StartOrigin.restore, .reconnect, .resume, .link] {
            #expect(!board.orderCreated(update(event: .start, at: 70), origin: origin, at: client(70)).applied)
        }
        #expect(board.activity("A1001")?.state == .dismissed)
        #expect(board.startedActivityCount == 1)
        #expect(board.userDismissed(orderID: "A1001", at: client(80)).isEmpty)
    }

    /// The Dynamic Island shows the highest relevance score; ties go to the first started.
    /// Source: https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities ("Configure the Live Activity")
    @Test func relevanceScorePicksTheDynamicIslandActivity() {
        var board = ActivityBoard(profile: DeviceProfile())
        _ = board.orderCreated(update("A1", event: .start, at: 0), origin: .orderCreation, at: client(0))
        _ = board.orderCreated(update("A2", event: .start, at: 1), origin: .orderCreation, at: client(1))
        #expect(board.dynamicIslandActivity?.orderID == "A1")
        _ = board.apply(update("A2", at: 2, relevance: 100), at: client(2))
        _ = board.apply(update("A1", at: 2, relevance: 50), at: client(2))
        #expect(board.dynamicIslandActivity?.orderID == "A2")
        #expect(board.activities.map(\.orderID) == ["A2", "A1"])
        _ = board.apply(update("A2", event: .end, at: 3), at: client(3))
        #expect(board.dynamicIslandActivity?.orderID == "A1")
    }

    /// An update to an order this client never created gets `noActivity`.
    /// Source: reference/field-reports/001_df7ae4e21a8ebe10.txt (activities start only from order creation).
    @Test func updateForUnknownOrderIsRefused() {
        var board = ActivityBoard(profile: DeviceProfile())
        #expect(board.apply(update("B9", at: 0), at: client(0)).reason?.code == "noActivity")
        #expect(board.activities.isEmpty)
    }
}

struct LocalEndTests {
    /// Ending locally with each dismissal policy: default → 4 h, immediate → at once, after(date) → the date.
    /// Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy
    @Test func endWithPolicy() {
        var board = startedBoard()
        #expect(board.end(update(at: 50, status: .delivered), dismissalPolicy: .default, at: client(50)).applied)
        #expect(board.activity("A1001")?.removalInstant == client(50 + 4 * 3600))

        var immediate = startedBoard()
        #expect(immediate.end(update(at: 50), dismissalPolicy: .immediate, at: client(50)).applied)
        #expect(immediate.activity("A1001")?.state == .dismissed)

        var after = startedBoard()
        #expect(after.end(update(at: 50), dismissalPolicy: .after(client(950)), at: client(50)).applied)
        #expect(after.activity("A1001")?.removalInstant == client(950))
        #expect(after.activity("A1001")?.state == .ended)

        var pastDate = startedBoard()
        #expect(pastDate.end(update(at: 50), dismissalPolicy: .after(client(10)), at: client(50)).applied)
        #expect(pastDate.activity("A1001")?.state == .dismissed)
    }
}
