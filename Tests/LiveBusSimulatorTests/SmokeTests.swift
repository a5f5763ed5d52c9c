import Foundation
import LiveBusClock
import Testing

@testable import LiveBusSimulator

@Test func smokeDemo() throws {
    let s = try Scenario.builtIn(named: "demo-120s")
    var sim = DeliverySimulator(
        scenario: s,
        start: ServerInstant(millisecondsSinceEpoch: 1_000_000),
        timeScale: 10,
        seed: 1
    )
    let evs = sim.advance(to: ServerInstant(millisecondsSinceEpoch: 1_100_000))
    for e in evs {
        print(
            e.timestamp.millisecondsSinceEpoch - 1_000_000,
            e.event,
            e.contentState.status,
            "eta",
            e.contentState.etaTarget.millisecondsSinceEpoch - 1_000_000,
            "stale",
            (e.staleDate?.millisecondsSinceEpoch ?? 0) - 1_000_000,
            "p",
            e.contentState.progress,
            "rel",
            e.relevanceScore,
            "prio",
            e.priority,
            e.contentState.riderPosition.map { "\($0.latitude),\($0.longitude)" } ?? "-",
            e.dismissalDate.map { $0.millisecondsSinceEpoch - 1_000_000 } ?? 0
        )
    }
    #expect(sim.isFinished)
    let r = Scenario.random(orders: 30, seed: 7)
    var sim2 = DeliverySimulator(scenario: r, start: ServerInstant(millisecondsSinceEpoch: 0), timeScale: 1, seed: 1)
    let e2 = sim2.advance(to: ServerInstant(millisecondsSinceEpoch: 10_000_000))
    print("random events", e2.count, "timeline", r.timeline.count, "finished", sim2.isFinished)
    var counts: [String: Int] = [:]
    for e in e2 where e.event == .end { counts[e.contentState.status.rawValue, default: 0] += 1 }
    print(counts, sim2.cancelLog)
    for o in sim2.orders().prefix(5) { print(o.id, o.customerID, o.status, o.createdAt, o.lastEvent.timestamp) }
}
