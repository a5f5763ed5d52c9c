import LiveBusClock
import Testing

@testable import LiveBusSimulator

/// `random --orders K --seed N`: seeded, realistic, many customers with concurrent orders, occasional hazards
/// (delivery-reality.md §4).
struct RandomScenarioTests {
    /// Equal seeds give equal scenarios; different seeds differ.
    @Test func seeded() {
        #expect(Scenario.random(orders: 40, seed: 1) == Scenario.random(orders: 40, seed: 1))
        #expect(Scenario.random(orders: 40, seed: 1) != Scenario.random(orders: 40, seed: 2))
        #expect(Scenario.random(orders: 40, seed: 1).name == "random-40-seed-1")
        #expect(Scenario.random(orders: -3, seed: 1).timeline.isEmpty)
    }

    struct Summary {
        var totalsMinutes: [Double] = []
        var orders = 0
        var canceled = 0
        var stalls = 0
        var failingCancels = 0
        var laterRevisions = 0
        var earlierRevisions = 0
        var customers: [String: Int] = [:]
    }

    static func summarize(_ scenario: Scenario) -> Summary {
        var s = Summary()
        var created: [String: Int64] = [:]
        var eta: [String: Int64] = [:]
        for e in scenario.timeline {
            switch e.action {
            case .createOrder(let spec):
                s.orders += 1
                created[spec.id] = e.atMs
                eta[spec.id] = spec.etaAtMs
                s.customers[spec.customerID, default: 0] += 1
            case .setStatus(let id, let status, let newEta, _, _, _):
                if status == .delivered { s.totalsMinutes.append(Double(e.atMs - created[id]!) / 60_000) }
                if status == .canceled { s.canceled += 1 }
                if let newEta { eta[id] = newEta }
            case .reviseEta(let id, let newEta, _):
                if newEta > eta[id]! { s.laterRevisions += 1 } else { s.earlierRevisions += 1 }
                eta[id] = newEta
            case .stall: s.stalls += 1
            case .cancelRequest(_, let succeeds, _):
                if succeeds { s.canceled += 1 } else { s.failingCancels += 1 }
            case .riderPosition: break
            }
        }
        return s
    }

    /// Over 3000 orders: median placed → delivered about 31 min and p90 about 45 min, as the table's Monte Carlo check
    /// (median 30.8, p90 44.9); about 2–4 % canceled, about 5 % stalled, some failing cancel requests, and ETA
    /// revisions in both directions.
    @Test func realisticAtScale() {
        let s = Self.summarize(Scenario.random(orders: 3000, seed: 2026))
        let totals = s.totalsMinutes.sorted()
        let median = totals[totals.count / 2]
        let p90 = totals[totals.count * 9 / 10]
        #expect((30.0...33.5).contains(median), "median \(median)")
        #expect((43.5...48.5).contains(p90), "p90 \(p90)")
        let cancelShare = Double(s.canceled) / Double(s.orders)
        #expect((0.018...0.036).contains(cancelShare), "cancel share \(cancelShare)")
        let stallShare = Double(s.stalls) / Double(s.orders)
        #expect((0.04...0.06).contains(stallShare), "stall share \(stallShare)")
        #expect(s.failingCancels > 20)
        #expect(s.laterRevisions > 100 && s.earlierRevisions > 100)
        #expect(s.orders == 3000 && s.customers.count < 3000 && s.customers.values.contains(3))
    }

    /// Played through the simulator, 150 orders each get exactly one `start` and one `end`, statuses only move
    /// forward, timestamps never decrease, every content state is within 4 KB, and several customers have
    /// overlapping orders.
    @Test func playsCleanly() {
        let scenario = Scenario.random(orders: 150, seed: 8)
        let (sim, events) = playAll(scenario)
        #expect(sim.isFinished)
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        var byOrder: [String: [OrderEvent]] = [:]
        for e in events { byOrder[e.orderID, default: []].append(e) }
        #expect(byOrder.count == 150)
        for (id, list) in byOrder {
            #expect(list.first?.event == .start && list.filter { $0.event == .start }.count == 1, "\(id)")
            #expect(list.last?.event == .end && list.filter { $0.event == .end }.count == 1, "\(id)")
            let ranks = list.map(\.contentState.status.rank)
            #expect(zip(ranks, ranks.dropFirst()).allSatisfy { $0 <= $1 }, "\(id)")
            #expect(list.allSatisfy { $0.contentState.encodedSize <= ContentState.maximumEncodedBytes })
            #expect(list.allSatisfy { e in e.staleDate.map { $0 > e.timestamp } ?? (e.event == .end) }, "\(id)")
        }
        let snapshots = sim.orders()
        let overlapping = Dictionary(grouping: snapshots, by: \.customerID).values.filter { orders in
            orders.count > 1
                && orders.contains { a in
                    orders.contains { b in
                        a.id != b.id && a.createdAt < b.lastEvent.timestamp && b.createdAt < a.lastEvent.timestamp
                    }
                }
        }
        #expect(overlapping.count >= 5)
    }
}
