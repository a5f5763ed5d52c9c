import Foundation
import LiveBusCore
import LiveBusFaults
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// `fault.add` and `fault.list` report each toxic's own seed and its effective parameters, defaults filled in
/// (FAULTS.md §1: "Without `--seed` the daemon picks one and prints it in the result and in `fault list`";
/// fresh-user review 2026-12-03, finding 7: no seed in the result, one seed per session in the list, `{}` for
/// defaults, reorder's `delayMs` missing).
@Suite struct EmbeddedFaultReportTests {
    @Test func addAndListReportEachToxicsSeedAndEffectiveParameters() throws {
        let (bus, _) = try embeddedDaemon { $0.seed = 42 }
        let phone = bus.connect()
        _ = try phone.attach(helloFrame(name: "p"))
        let admin = bus.connect(peerUserID: getuid())
        _ = try admin.attach(helloFrame(role: .admin, device: nil))
        func command(_ id: UInt64, _ name: String, _ args: [String: JSONValue]) throws -> JSONValue? {
            try admin.writeInbound(frame(.command, sequence: id, CommandBody(command: name, args: args)))
            bus.run()
            let r = try admin.readAllOutboundFrames().first { $0.type == .result && $0.sequence == id }
                .map { try WireJSON.decode(ResultBody.self, from: $0.body) }
            #expect(r?.ok == true, "\(String(describing: r))")
            return r?.data
        }
        // No --seed: the daemon's (42) is in the result, with every default parameter.
        let first = try #require(try command(1, "fault.add", ["toxic": .object(["kind": .string("reorder")])]))
        #expect(first["seed"] == .number(42), "\(first)")
        guard case .array(let toxics)? = first["toxics"], let reorder = toxics.first else {
            Issue.record("no toxics in \(first)")
            return
        }
        #expect(reorder["seed"] == .number(42))
        #expect(
            reorder["params"]
                == .object([
                    "probability": .number(0.2), "window": .number(3), "delayMs": .number(100),
                    "frameTypes": .array([.number(5), .number(6)]),
                ]),
            "\(reorder)"
        )
        let second = try #require(
            try command(
                2,
                "fault.add",
                ["seed": .number(7), "toxic": .object(["kind": .string("latency"), "params": .object([:])])]
            )
        )
        #expect(second["seed"] == .number(7), "\(second)")
        let list = try #require(try command(3, "fault.list", [:]))
        guard case .array(let entries) = list, case .array(let listed)? = entries.first?["toxics"] else {
            Issue.record("no toxics listed: \(list)")
            return
        }
        let byKind = Dictionary(uniqueKeysWithValues: listed.map { ($0["kind"]?.stringValue ?? "?", $0) })
        #expect(byKind["reorder"]?["seed"] == .number(42), "\(listed)")
        #expect(byKind["latency"]?["seed"] == .number(7), "the second toxic's own seed: \(listed)")
        #expect(
            byKind["latency"]?["params"] == .object(["latencyMs": .number(100), "jitterMs": .number(0)]),
            "\(listed)"
        )
    }
}
