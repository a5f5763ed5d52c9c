import Foundation
import LiveBusCore
import LiveBusSimulator
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A PUBLISH whose values PROTOCOL.md §5.1 does not allow is refused alone: a non-fatal ERROR `invalidBody` with
/// its topic and request id, the connection kept, nothing stored or numbered (new-user review 2026-12-03, finding
/// 2). On the embedded daemon: no socket, no sleep.
@Suite struct EmbeddedPublishRulesTests {
    static let topic = "orders/P1"

    /// The refusals the review met, each as (what it changes, the words its ERROR must hold).
    static let refused: [(String, @Sendable (inout EventBody) -> Void, String)] = [
        (
            "start exploded",
            {
                $0.event = "start"
                $0.contentState.status = "exploded"
            }, "'contentState.status' is 'exploded'"
        ),
        ("update exploded", { $0.contentState.status = "exploded" }, "not one of created, cooking"),
        ("progress 7", { $0.contentState.progress = 7 }, "'contentState.progress' is 7, outside 0…1"),
        ("priority 7", { $0.priority = 7 }, "'priority' is 7, not 10"),
        (
            "20 KB", { $0.contentState.summary.ko = String(repeating: "x", count: 20_000) },
            "over the 4096-byte limit"
        ),
    ]

    @Test func refusedPublishesGetANonFatalErrorAndTheNextValidOneGetsSequenceOne() throws {
        let (bus, log) = try embeddedDaemon()
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "p"))
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
        _ = try phone.readOutboundFrames()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        var id: UInt64 = 0
        for (what, change, words) in Self.refused {
            var body = eventBody()
            change(&body)
            id += 1
            try publisher.writeInbound(publishFrame(topic: Self.topic, id: id, body))
            let frames = try publisher.readOutboundFrames()
            #expect(frames.types == [.error], "\(what): \(frames.types)")
            let error = try #require(frames.first, "\(what)")
            #expect(error.sequence == id && error.topic == Self.topic, "\(what): the ERROR carries the PUBLISH's id")
            let e = try #require(frames.errors.first)
            #expect(e.code == WireError.Code.invalidBody.rawValue && !e.fatal, "\(what): \(e)")
            #expect(e.message.contains(words), "\(what): \(e.message)")
            #expect(!publisher.isClosed, "\(what): the connection stays open")
        }
        // Not canonical (whitespace): the general reader's path refuses it the same way.
        var spaced = Array(String(decoding: try EventJSON.encode(eventBody(status: "exploded")), as: UTF8.self).utf8)
        spaced.insert(UInt8(ascii: " "), at: 0)
        id += 1
        try publisher.writeInbound(Frame(type: .publish, sequence: id, topic: Self.topic, body: spaced))
        let general = try publisher.readOutboundFrames()
        #expect(general.errors.first.map { !$0.fatal && $0.message.contains("'exploded'") } == true, "\(general)")
        #expect(try phone.readOutboundFrames().filter { $0.type == .event }.isEmpty, "nothing reached the phone")
        #expect(bus.engine.store.latest(topic: Self.topic) == nil, "nothing was stored")
        #expect(!log.lines("publish refused", "code=invalidBody", "topic=\(Self.topic)").isEmpty)
        // The next valid PUBLISH takes sequence 1: a refusal took none.
        id += 1
        try publisher.writeInbound(publishFrame(topic: Self.topic, id: id))
        let ack = try publisher.readOutboundFrames()
        #expect(ack.types == [.ack] && ack.first?.sequence == id, "\(ack.types)")
        #expect(ack.first(.ack, as: AckBody.self)?.sequence == 1)
        #expect(try phone.readOutboundFrames().filter { $0.type == .event }.map(\.sequence) == [1])
    }

    /// Pipelined in one read, a refusal between two good PUBLISHes is answered in order: ACK, ERROR, ACK, and the
    /// good ones take consecutive sequences.
    @Test func aRefusalBetweenPipelinedPublishesIsAnsweredInOrder() throws {
        let (bus, _) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        var bad = eventBody()
        bad.priority = 7
        try publisher.writeInbound([
            publishFrame(topic: Self.topic, id: 10),
            publishFrame(topic: Self.topic, id: 11, bad),
            publishFrame(topic: Self.topic, id: 12),
        ])
        let frames = try publisher.readOutboundFrames()
        #expect(frames.types == [.ack, .error, .ack], "\(frames.types)")
        #expect(frames.map(\.sequence) == [10, 11, 12])
        let acks = frames.filter { $0.type == .ack }.compactMap { try? WireJSON.decode(AckBody.self, from: $0.body) }
        #expect(acks.map(\.sequence) == [1, 2])
        #expect(!publisher.isClosed)
    }

    /// The wire's statuses are the simulator's: a status the daemon's own backend emits is never refused.
    @Test func theAllowedStatusesAreTheSimulatorsOrderStatuses() {
        #expect(PublishRules.statuses == OrderStatus.allCases.map(\.rawValue))
        #expect(PublishRules.maximumContentStateBytes == ContentState.maximumEncodedBytes)
    }
}
