import LiveBusClock
import Testing

@testable import LiveBusSimulator

/// Cancel paths: a cancel request that succeeds ends the order; one that fails never erases it (field report 001;
/// issue 3 "cancellations, including a cancel request that fails").
struct CancelTests {
    static let store = Coordinate(latitude: 37.5, longitude: 127.0)
    static let home = Coordinate(latitude: 37.51, longitude: 127.01)

    /// One order: created 0, cooking 1 min, stalled 5–7 min, picked up 10 min, delivering 11 min, delivered 20 min.
    static func scenario(cancelFailureProbability: Double = 0) -> Scenario {
        Scenario(
            name: "cancel",
            settings: ScenarioSettings(cancelFailureProbability: cancelFailureProbability),
            timeline: [
                TimelineEvent(
                    atMs: 0,
                    action: .createOrder(
                        OrderSpec(id: "K1", customerID: "C1", store: store, destination: home, etaAtMs: 1_200_000)
                    )
                ),
                TimelineEvent(
                    atMs: 60_000,
                    action: .setStatus(
                        orderID: "K1",
                        status: .cooking,
                        etaAtMs: nil,
                        progress: nil,
                        summary: nil,
                        arriveAtMs: nil
                    )
                ),
                TimelineEvent(atMs: 300_000, action: .stall(orderID: "K1", durationMs: 120_000)),
                TimelineEvent(
                    atMs: 600_000,
                    action: .setStatus(
                        orderID: "K1",
                        status: .pickedUp,
                        etaAtMs: nil,
                        progress: nil,
                        summary: nil,
                        arriveAtMs: nil
                    )
                ),
                TimelineEvent(
                    atMs: 660_000,
                    action: .setStatus(
                        orderID: "K1",
                        status: .delivering,
                        etaAtMs: nil,
                        progress: nil,
                        summary: nil,
                        arriveAtMs: nil
                    )
                ),
                TimelineEvent(
                    atMs: 1_200_000,
                    action: .setStatus(
                        orderID: "K1",
                        status: .delivered,
                        etaAtMs: nil,
                        progress: nil,
                        summary: nil,
                        arriveAtMs: nil
                    )
                ),
            ]
        )
    }

    func sim(_ p: Double = 0) -> DeliverySimulator {
        DeliverySimulator(scenario: Self.scenario(cancelFailureProbability: p), start: t0, timeScale: 1, seed: 9)
    }

    /// A cancel request while cooking succeeds: an `end` with status canceled, dismissal 5 min later, no stale date,
    /// relevance 0, priority 10; nothing more is published for the order and the simulator is finished.
    @Test func cancelWhileCookingSucceeds() throws {
        var s = sim()
        let (outcome, events) = s.cancelOrder(id: "K1", at: at(120_000))
        #expect(outcome == .canceled)
        #expect(events.map(\.event) == [.start, .update, .end])
        let end = try #require(events.last)
        #expect(end.contentState.status == .canceled)
        #expect(end.contentState.summary.ko == "주문 취소")
        #expect(rel(end.timestamp) == 120_000)
        #expect(rel(end.dismissalDate) == 420_000)
        #expect(end.staleDate == nil)
        #expect(end.relevanceScore == 0)
        #expect(end.priority == 10)
        #expect(end.contentState.progress == 0.15)  // a canceled order keeps its progress
        #expect(s.advance(to: at(10_000_000)).isEmpty)
        #expect(s.isFinished)
        #expect(s.nextDeadline == nil)
        #expect(s.cancelOrder(id: "K1", at: at(10_000_001)).0 == .alreadyTerminal)
    }

    /// Cancelling an order that does not exist says so.
    @Test func unknownOrder() {
        var s = sim()
        #expect(s.cancelOrder(id: "nope", at: at(0)).0 == .unknownOrder)
    }

    /// A cancel request while the backend is stalled fails and the order carries on to delivery.
    @Test func cancelDuringStallFailsAndOrderSurvives() throws {
        var s = sim()
        let (outcome, _) = s.cancelOrder(id: "K1", at: at(360_000))
        guard case .failed(let reason) = outcome else {
            Issue.record("expected failure, got \(outcome)")
            return
        }
        #expect(reason.contains("stalled"))
        #expect(s.orders().map(\.status) == [.cooking])
        let rest = s.advance(to: at(2_000_000))
        #expect(rest.last?.contentState.status == .delivered)
        #expect(s.cancelLog.map(\.byHand) == [true])
    }

    /// After pickup a cancel request fails ("the rider has already picked up the order").
    @Test func cancelAfterPickupFails() {
        var s = sim()
        let (outcome, events) = s.cancelOrder(id: "K1", at: at(630_000))
        #expect(outcome == .failed(reason: "the rider has already picked up the order"))
        #expect(events.last?.contentState.status == .pickedUp)
        #expect(s.orders().first?.status == .pickedUp)
    }

    /// With `cancelFailureProbability` 1 the store refuses every cancel request; the order is unchanged.
    @Test func scenarioCanMakeCancelRequestsFail() {
        var s = sim(1)
        let (outcome, _) = s.cancelOrder(id: "K1", at: at(120_000))
        #expect(
            outcome
                == .failed(
                    reason:
                        "the restaurant refused the cancel request (the scenario refuses a cancel with its cancelFailureProbability)"
                )
        )
        #expect(s.orders().first?.status == .cooking)
        #expect(s.isFinished == false)
    }

    /// Timeline cancel requests: B2001's fails (no event, logged with its reason, later delivered); B2002's succeeds
    /// (an `end` at 5 min, dismissal at 10 min). Protocol/scenarios/timeline-cancel-paths.json.
    @Test func timelineCancelPaths() throws {
        let scenario = try Scenario.load(contentsOf: scenariosDirectory() + "/timeline-cancel-paths.json")
        let (sim, events) = playAll(scenario)
        #expect(sim.cancelLog.map(\.orderID) == ["B2001", "B2002"])
        #expect(sim.cancelLog.map(\.outcome) == [.failed(reason: "the store already started cooking"), .canceled])
        #expect(
            sim.cancelLog.map(\.atMs) == [t0.millisecondsSinceEpoch + 240_000, t0.millisecondsSinceEpoch + 300_000]
        )
        #expect(events.filter { rel($0.timestamp) == 240_000 }.isEmpty)  // a failed request publishes nothing
        let end2 = try #require(events.last { $0.orderID == "B2002" })
        #expect(end2.event == .end && end2.contentState.status == .canceled)
        #expect(rel(end2.dismissalDate) == 600_000)
        let end1 = try #require(events.last { $0.orderID == "B2001" })
        #expect(end1.event == .end && end1.contentState.status == .delivered)
        #expect(sim.orders().map(\.customerID) == ["C0100", "C0100"])  // two concurrent orders, one customer
    }
}
