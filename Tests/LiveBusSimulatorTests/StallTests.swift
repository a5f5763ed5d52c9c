import LiveBusClock
import Testing

@testable import LiveBusSimulator

/// Backend stalls: no news for a while, then what was held is published in order (issue 3 "backend stalls").
struct StallTests {
    /// A whole-backend stall (16–19 min) holds every order: nothing is published, the held ETA revision of D3001 comes
    /// out first at 19 min, then the one due at 19 min, then a confirming update for D3002, which had nothing held.
    /// Protocol/scenarios/timeline-stall-recover.json.
    @Test func wholeBackendStallHoldsAndReleasesInOrder() throws {
        let scenario = try Scenario.load(contentsOf: scenariosDirectory() + "/timeline-stall-recover.json")
        let (_, events) = playAll(scenario)
        let minute: Int64 = 60_000
        #expect(events.filter { rel($0.timestamp)! > 16 * minute && rel($0.timestamp)! < 19 * minute }.isEmpty)
        let lastBefore = try #require(events.last { rel($0.timestamp)! <= 16 * minute && $0.orderID == "D3001" })
        #expect(lastBefore.staleDate! < at(19 * minute))  // the stale date passes during the stall
        let recovery = events.filter { rel($0.timestamp) == 19 * minute }
        #expect(recovery.map(\.orderID) == ["D3001", "D3001", "D3002"])
        #expect(recovery.map { rel($0.contentState.etaTarget) } == [27 * minute, 26 * minute, 40 * minute])
        #expect(recovery.map(\.priority) == [10, 10, 5])
        #expect(recovery[2].contentState.status == .cooking)
        #expect(recovery[2].contentState.lastConfirmed == at(19 * minute))
    }

    /// A stall of one order holds a status change due during it; other orders are unaffected.
    @Test func orderStallHoldsStatusChange() throws {
        let spec = { (id: String) in
            OrderSpec(
                id: id,
                customerID: "C1",
                store: Coordinate(latitude: 37.5, longitude: 127.0),
                destination: Coordinate(latitude: 37.51, longitude: 127.0),
                etaAtMs: 600_000
            )
        }
        let cooking = { (id: String, at: Int64) in
            TimelineEvent(
                atMs: at,
                action: .setStatus(
                    orderID: id,
                    status: .cooking,
                    etaAtMs: nil,
                    progress: nil,
                    summary: nil,
                    arriveAtMs: nil
                )
            )
        }
        let scenario = Scenario(
            name: "s",
            timeline: [
                TimelineEvent(atMs: 0, action: .createOrder(spec("P1"))),
                TimelineEvent(atMs: 0, action: .createOrder(spec("P2"))),
                TimelineEvent(atMs: 1_000, action: .stall(orderID: "P1", durationMs: 9_000)),
                cooking("P1", 5_000),
                cooking("P2", 5_000),
            ]
        )
        var sim = DeliverySimulator(scenario: scenario, start: t0, timeScale: 1, seed: 1)
        #expect(sim.advance(to: at(5_000)).map(\.orderID) == ["P1", "P2", "P2"])
        #expect(sim.nextDeadline == at(10_000))
        let released = sim.advance(to: at(10_000))
        #expect(released.map(\.orderID) == ["P1"])
        #expect(released.first?.contentState.status == .cooking)
        #expect(rel(released.first?.timestamp) == 10_000)
    }

    /// During a whole-backend stall an order created meanwhile, and what happens to it meanwhile, are held and then
    /// published in order; an order created by hand during the stall starts when the stall ends.
    @Test func creationDuringWholeBackendStallIsHeldWithItsActions() throws {
        let spec = OrderSpec(
            id: "G1",
            customerID: "C1",
            store: Coordinate(latitude: 37.5, longitude: 127.0),
            destination: Coordinate(latitude: 37.51, longitude: 127.0),
            etaAtMs: 600_000
        )
        let scenario = Scenario(
            name: "g",
            timeline: [
                TimelineEvent(atMs: 0, action: .stall(orderID: nil, durationMs: 10_000)),
                TimelineEvent(atMs: 2_000, action: .createOrder(spec)),
                TimelineEvent(
                    atMs: 3_000,
                    action: .setStatus(
                        orderID: "G1",
                        status: .cooking,
                        etaAtMs: nil,
                        progress: nil,
                        summary: nil,
                        arriveAtMs: nil
                    )
                ),
                TimelineEvent(atMs: 4_000, action: .stall(orderID: "G1", durationMs: 1_000)),
            ]
        )
        var sim = DeliverySimulator(scenario: scenario, start: t0, timeScale: 1, seed: 1)
        #expect(sim.advance(to: at(9_999)).isEmpty)
        let manual = try sim.createOrder(OrderRequest(id: "H1"), at: at(5_000))
        #expect(manual.isEmpty)  // held: the backend is not answering
        let released = sim.advance(to: at(10_000))
        #expect(released.map(\.orderID) == ["G1", "G1", "H1"])
        #expect(released.map(\.event) == [.start, .update, .start])
        #expect(released.map { rel($0.timestamp) } == [10_000, 10_000, 10_000])
        #expect(sim.orders().map(\.status) == [.cooking, .created])
    }
}
