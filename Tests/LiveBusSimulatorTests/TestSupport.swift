import Foundation
import LiveBusClock

@testable import LiveBusSimulator

/// T0 of push-payloads.md: 2026-01-01T00:00:00Z in server milliseconds.
let t0 = ServerInstant(millisecondsSinceEpoch: 1_767_225_600_000)

/// `t0` plus `ms` server milliseconds.
func at(_ ms: Int64) -> ServerInstant { t0.advanced(byMilliseconds: ms) }

/// Server milliseconds from `t0`.
func rel(_ instant: ServerInstant?) -> Int64? { instant.map { t0.milliseconds(to: $0) } }

/// The directory `Protocol/scenarios` of the repository, found from this file's path.
func scenariosDirectory(file: String = #filePath) -> String {
    var url = URL(fileURLWithPath: file).resolvingSymlinksInPath()
    // When the tests run from a package whose Tests/… is a symlink, #filePath may be the link; resolve upwards.
    while url.path != "/" {
        url.deleteLastPathComponent()
        let candidate = url.appendingPathComponent("Protocol/scenarios")
        if FileManager.default.fileExists(atPath: candidate.path) { return candidate.path }
    }
    return "Protocol/scenarios"
}

/// Loads a timeline file from JSON text, for error tests.
func load(_ text: String) throws(ScenarioError) -> Scenario {
    try Scenario.load(json: Array(text.utf8), fileName: "t.json")
}

/// Plays `scenario` to the end (or until `limit` scenario ms) at time scale 1 from `t0`.
func playAll(_ scenario: Scenario, seed: UInt64 = 1, limitMs: Int64 = 24 * 3_600_000) -> (
    DeliverySimulator, [OrderEvent]
) {
    var sim = DeliverySimulator(scenario: scenario, start: t0, timeScale: 1, seed: seed)
    let events = sim.advance(to: at(limitMs))
    return (sim, events)
}
