import Foundation
import LiveBusClock
import Testing

@testable import LiveBusSimulator

/// Orders created by hand while a scenario runs (`livebus order create`).
struct ManualOrderTests {
    static let store = Coordinate(latitude: 37.5, longitude: 127.0)
    static let home = Coordinate(latitude: 37.52, longitude: 127.02)

    func demo() throws -> DeliverySimulator {
        DeliverySimulator(scenario: try Scenario.builtIn(named: "demo-120s"), start: t0, timeScale: 1, seed: 5)
    }

    /// A created order gets one `start` at once and then a full, forward lifecycle to `delivered`.
    @Test func createdOrderRunsToDelivery() throws {
        var s = try demo()
        let events = try s.createOrder(
            OrderRequest(id: "X1", customerID: "C9", store: Self.store, destination: Self.home),
            at: at(1_000)
        )
        #expect(events.map(\.orderID) == ["A1001", "X1"])
        let start = try #require(events.last)
        #expect(start.event == .start && rel(start.timestamp) == 1_000)
        let eta = try #require(rel(start.contentState.etaTarget))
        #expect((20 * 60_000)...(45 * 60_000) ~= eta)  // a realistic first estimate
        let rest = s.advance(to: at(4 * 3_600_000)).filter { $0.orderID == "X1" }
        var statuses: [OrderStatus] = [.created]
        for e in rest where statuses.last != e.contentState.status { statuses.append(e.contentState.status) }
        #expect(statuses == [.created, .cooking, .awaitingPickup, .pickedUp, .delivering, .delivered])
        #expect(rest.filter { $0.event == .end }.count == 1)
        #expect(s.isFinished)
        let snapshot = try #require(s.orders().first { $0.id == "X1" })
        #expect(snapshot.customerID == "C9" && snapshot.store == Self.store && snapshot.destination == Self.home)
        #expect(snapshot.status == .delivered && snapshot.createdAt == at(1_000))
    }

    /// Ids are checked: an existing id, an id the timeline will still create, and an unsafe id are refused; without
    /// an id the simulator picks `M0001`.
    @Test func idsAreChecked() throws {
        var s = try demo()
        #expect {
            try s.createOrder(OrderRequest(id: "A1001"), at: t0)  // still to be created by the timeline
        } throws: { ($0 as? SimulatorError)?.code == .duplicateOrder }
        #expect {
            try s.createOrder(OrderRequest(id: "a/b"), at: t0)
        } throws: { ($0 as? SimulatorError)?.code == .invalidRequest }
        let made = try s.createOrder(OrderRequest(), at: at(10))
        #expect(made.last?.orderID == "M0001")
        #expect {
            try s.createOrder(OrderRequest(id: "M0001"), at: at(20))
        } throws: { ($0 as? SimulatorError)?.code == .duplicateOrder }
    }

    /// A federated daemon's simulator picks `<tag>-M0001`, … (PROTOCOL.md §5.8), skipping ids in use elsewhere in
    /// the federation; the same counter goes on, and a single daemon's ids stay `M0001`, ….
    @Test func federatedIDsCarryTheDaemonsTagAndSkipIDsTakenElsewhere() throws {
        var s = try demo()
        let tagged = try s.createOrder(OrderRequest(), at: at(10), idTag: "0a1b2c3d")
        #expect(tagged.last?.orderID == "0a1b2c3d-M0001")
        let skipped = try s.createOrder(
            OrderRequest(),
            at: at(20),
            idTag: "0a1b2c3d",
            takenElsewhere: { $0 == "0a1b2c3d-M0002" }
        )
        #expect(skipped.last?.orderID == "0a1b2c3d-M0003")
        var single = try demo()
        #expect(try single.createOrder(OrderRequest(), at: at(10)).last?.orderID == "M0001")
    }

    /// The tag is FNV-1a (32 bits) of the daemon id as 8 hex digits: stable, and distinct for distinct daemons.
    @Test func theFederationTagIsFNV1aOfTheDaemonID() {
        // FNV-1a's published test vectors: "" → 811c9dc5, "a" → e40c292c, "foobar" → bf9cf968.
        #expect(DeliverySimulator.federationTag(daemonID: "") == "811c9dc5")
        #expect(DeliverySimulator.federationTag(daemonID: "a") == "e40c292c")
        #expect(DeliverySimulator.federationTag(daemonID: "foobar") == "bf9cf968")
        let a = "3f0e6a52-1c1b-4a4e-9f3e-2b1f0c9d8e7a"
        let b = "3f0e6a52-1c1b-4a4e-9f3e-2b1f0c9d8e7b"
        #expect(DeliverySimulator.federationTag(daemonID: a) == DeliverySimulator.federationTag(daemonID: a))
        #expect(DeliverySimulator.federationTag(daemonID: a) != DeliverySimulator.federationTag(daemonID: b))
        #expect(DeliverySimulator.federationTag(daemonID: "memory-x").count == 8)
    }

    /// Out-of-range coordinates and oversized summaries are refused, and a refused request changes nothing.
    @Test func invalidRequestsChangeNothing() throws {
        var s = try demo()
        var reference = try demo()
        #expect {
            try s.createOrder(OrderRequest(store: Coordinate(latitude: 91, longitude: 0)), at: at(50_000))
        } throws: { ($0 as? SimulatorError)?.code == .invalidRequest }
        let huge = CustomerSummary(ko: String(repeating: "가", count: 1500), en: "x", detailKo: "", detailEn: "")
        #expect {
            try s.createOrder(OrderRequest(summary: huge), at: at(50_000))
        } throws: { ($0 as? SimulatorError)?.code == .contentStateTooLarge }
        #expect(s.advance(to: at(200_000)) == reference.advance(to: at(200_000)))
    }

    /// The simulator's seed decides manual orders: equal seeds give equal events.
    @Test func seedDecidesManualOrders() throws {
        func run(_ seed: UInt64) throws -> [OrderEvent] {
            var s = DeliverySimulator(
                scenario: Scenario(name: "empty", timeline: []),
                start: t0,
                timeScale: 1,
                seed: seed
            )
            var events = try s.createOrder(OrderRequest(), at: t0)
            events += s.advance(to: at(4 * 3_600_000))
            return events
        }
        #expect(try run(1) == run(1))
        #expect(try run(1) != run(2))
    }

    /// An empty scenario is finished at once and has no deadline.
    @Test func emptyScenario() {
        let s = DeliverySimulator(scenario: Scenario(name: "empty", timeline: []), start: t0, timeScale: 1, seed: 1)
        #expect(s.isFinished && s.nextDeadline == nil && s.orders().isEmpty)
    }
}
