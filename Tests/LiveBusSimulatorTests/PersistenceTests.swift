import Foundation
import LiveBusClock
import Testing

@testable import LiveBusSimulator

/// `savedState()` / `init(restoring:)`: after kill -9 the daemon restores the simulator and it carries on where it
/// was (issue 7 "the simulator carries on where it was").
struct PersistenceTests {
    /// A simulator restored mid-run emits exactly what the original emits, including for orders created by hand
    /// afterwards (the random generator's state is saved too).
    @Test func restoredSimulatorCarriesOn() throws {
        var original = DeliverySimulator(
            scenario: Scenario.random(orders: 25, seed: 3),
            start: t0,
            timeScale: 4,
            seed: 11
        )
        let firstHalf = original.advance(to: at(5 * 60_000))
        #expect(!firstHalf.isEmpty)
        var restored = try DeliverySimulator(restoring: try original.savedState())
        #expect(restored.nextDeadline == original.nextDeadline)
        #expect(restored.orders() == original.orders())
        let a = try original.createOrder(OrderRequest(customerID: "C-late"), at: at(6 * 60_000))
        let b = try restored.createOrder(OrderRequest(customerID: "C-late"), at: at(6 * 60_000))
        #expect(a == b)
        let restA = original.advance(to: at(3 * 3_600_000))
        let restB = restored.advance(to: at(3 * 3_600_000))
        #expect(restA == restB)
        #expect(restA.count > 100)
        #expect(original.isFinished && restored.isFinished)
        #expect(
            original.cancelOrder(id: "R0001", at: at(3 * 3_600_000)).0
                == restored.cancelOrder(id: "R0001", at: at(3 * 3_600_000)).0
        )
    }

    /// A damaged saved state (time scale 0, an order twice) is refused with `corruptState`, never a trap (a repeated
    /// order id trapped in `Dictionary(uniqueKeysWithValues:)`; a zero time scale divided by zero). Source: issue 14.
    @Test func damagedStateIsRefusedNotTrapped() throws {
        var sim = DeliverySimulator(scenario: Scenario.random(orders: 3, seed: 3), start: t0, timeScale: 4, seed: 11)
        _ = sim.advance(to: at(60_000))
        let saved = try JSONSerialization.jsonObject(with: try sim.savedState()) as! [String: Any]
        var zeroScale = saved
        zeroScale["timeScale"] = 0
        var twice = saved
        let orders = saved["orders"] as! [Any]
        twice["orders"] = orders + [orders[0]]
        for bad in [zeroScale, twice] {
            let data = try JSONSerialization.data(withJSONObject: bad)
            do throws(SimulatorError) {
                _ = try DeliverySimulator(restoring: data)
                Issue.record("a damaged state was restored")
            } catch {
                #expect(error.code == .corruptState, "\(error)")
            }
        }
    }

    /// Far instants map to clamped instants, never a trap.
    @Test func clockMappingSaturates() {
        let slow = DeliverySimulator(scenario: Scenario.random(orders: 1, seed: 3), start: t0, timeScale: 0.25, seed: 1)
        #expect(slow.serverInstant(atScenarioMs: .max).millisecondsSinceEpoch == .max)
        let sim = DeliverySimulator(scenario: Scenario.random(orders: 1, seed: 3), start: t0, timeScale: 4, seed: 11)
        #expect(sim.scenarioMs(at: ServerInstant(millisecondsSinceEpoch: .max)) == .max)
        #expect(sim.scenarioMs(at: ServerInstant(millisecondsSinceEpoch: .min)) == 0)
    }

    /// Saving is deterministic: equal simulators give equal bytes.
    @Test func savedStateIsDeterministic() throws {
        var a = DeliverySimulator(scenario: try Scenario.builtIn(named: "demo-120s"), start: t0, timeScale: 10, seed: 1)
        var b = DeliverySimulator(scenario: try Scenario.builtIn(named: "demo-120s"), start: t0, timeScale: 10, seed: 1)
        _ = a.advance(to: at(7_000))
        _ = b.advance(to: at(7_000))
        #expect(try a.savedState() == b.savedState())
    }

    /// Garbage and other format versions are refused with `corruptState`, never a silent reset.
    @Test func corruptStateIsRefused() throws {
        #expect {
            try DeliverySimulator(restoring: Data("not json".utf8))
        } throws: { ($0 as? SimulatorError)?.code == .corruptState }
        let sim = DeliverySimulator(
            scenario: try Scenario.builtIn(named: "demo-120s"),
            start: t0,
            timeScale: 10,
            seed: 1
        )
        let json = String(decoding: try sim.savedState(), as: UTF8.self)
            .replacingOccurrences(of: "\"formatVersion\":1", with: "\"formatVersion\":99")
        #expect {
            try DeliverySimulator(restoring: Data(json.utf8))
        } throws: { error in
            guard let e = error as? SimulatorError else { return false }
            return e.code == .corruptState && e.message.contains("99")
        }
    }
}
