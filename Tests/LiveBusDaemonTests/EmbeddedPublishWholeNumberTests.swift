import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A PUBLISH whose integers are written as whole numbers with a fraction or an exponent (`"priority":10.0`,
/// `"timestamp":1.7672256e12`) is acknowledged, and the EVENT a phone gets carries the integer form: the same bytes
/// as the canonical body (fresh-user review 2026-12-03, finding 4; PROTOCOL.md §3).
@Suite struct EmbeddedPublishWholeNumberTests {
    @Test func wholeNumbersArePublishedInTheIntegerForm() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "p"))
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
        _ = try phone.readOutboundFrames()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let canonical = try EventJSON.encode(eventBody())
        let text = String(decoding: canonical, as: UTF8.self)
            .replacingOccurrences(of: "\"priority\":10", with: "\"priority\":10.0")
            .replacingOccurrences(of: "\"timestamp\":1767225600000", with: "\"timestamp\":1.7672256e12")
        #expect(text.contains("10.0") && text.contains("e12"))
        try publisher.writeInbound(Frame(type: .publish, sequence: 1, topic: "orders/W1", body: Array(text.utf8)))
        #expect(try publisher.readOutboundFrames().types == [.ack])
        let events = try phone.readOutboundFrames().filter { $0.type == .event }
        #expect(events.map(\.body) == [canonical])
        #expect(bus.engine.store.latest(topic: "orders/W1")?.body.priority == 10)
    }
}
