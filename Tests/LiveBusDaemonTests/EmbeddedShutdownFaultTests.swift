import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A shutdown while a phone has downstream toxics delivers what they hold, the BYE among them, before the close
/// (FAULTS.md §2: "a close the daemon asks for comes after every byte in flight"; fresh-user review 2026-12-03,
/// finding 4: under `latency 500ms` the phone never got its BYE and reconnected forever). Virtual time.
@Suite struct EmbeddedShutdownFaultTests {
    /// An embedded daemon with phone `lat` attached and `toxic` added to it by an admin.
    static func daemon(toxic: [String: JSONValue]) throws -> (EmbeddedDaemon, EmbeddedConnection) {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        _ = try phone.attach(helloFrame(name: "lat"))
        let admin = bus.connect(peerUserID: getuid())
        _ = try admin.attach(helloFrame(role: .admin, device: nil))
        try admin.writeInbound(
            frame(
                .command,
                sequence: 1,
                CommandBody(command: "fault.add", args: ["session": .string("lat"), "toxic": .object(toxic)])
            )
        )
        bus.run()
        let result = try admin.readAllOutboundFrames().first { $0.type == .result && $0.sequence == 1 }
        let body = try result.map { try WireJSON.decode(ResultBody.self, from: $0.body) }
        #expect(body?.ok == true, "\(String(describing: body))")
        _ = try phone.readAllOutboundFrames()
        return (bus, phone)
    }

    @Test func theByeComesThroughTheLatencyToxicBeforeTheClose() throws {
        let (bus, phone) = try Self.daemon(toxic: [
            "kind": .string("latency"), "params": .object(["latencyMs": .number(500)]),
        ])
        bus.engine.shutdown(reason: "daemon shutting down")
        var frames: [Frame] = []
        bus.advance(by: 100)
        frames += try phone.readAllOutboundFrames()
        #expect(!frames.contains { $0.type == .bye }, "the BYE waits for the toxic's 500 ms")
        #expect(!phone.isClosed, "the connection stays open for the bytes in flight")
        for _ in 0..<10 {
            bus.advance(by: 100)
            frames += try phone.readAllOutboundFrames()
        }
        let bye = frames.first { $0.type == .bye }.flatMap { try? WireJSON.decode(ByeBody.self, from: $0.body) }
        #expect(bye?.reason == "daemon shutting down", "\(frames.map(\.type))")
        #expect(phone.isClosed, "closed after the BYE")
    }

    /// A toxic that holds the bytes longer than the shutdown waits: the session is closed at the bound.
    @Test func theDrainIsBounded() throws {
        let (bus, phone) = try Self.daemon(toxic: [
            "kind": .string("latency"), "params": .object(["latencyMs": .number(600_000)]),
        ])
        bus.engine.shutdown(reason: "daemon shutting down")
        for _ in 0..<40 { bus.advance(by: 100) }
        #expect(!phone.isClosed, "still draining after 4 s")
        for _ in 0..<20 { bus.advance(by: 100) }
        #expect(phone.isClosed, "closed once the drain time (5 s) is over")
    }
}
