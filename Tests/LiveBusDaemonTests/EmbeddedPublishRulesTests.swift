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

    /// A PUBLISH body that does not decode at all is refused alone too (new-user review 2026-12-03: each of these
    /// closed the publisher's connection with a fatal ERROR, and a pipelining publisher lost its other PUBLISHes'
    /// answers): empty, cut short, not an object, a field of the wrong type, a member name twice (the first
    /// `event` says `end`, the last `update`: two readers would disagree on what was published).
    @Test func undecodableBodiesGetANonFatalErrorNamingWhatIsWrong() throws {
        let (bus, _) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let good = try EventJSON.encode(eventBody())
        let text = String(decoding: good, as: UTF8.self)
        let duplicated = text.replacingOccurrences(
            of: "\"event\":\"update\"",
            with: "\"event\":\"end\",\"event\":\"update\""
        )
        #expect(duplicated != text)
        let cases: [(String, [UInt8], String)] = [
            ("empty", [], "PUBLISH body is empty"),
            ("cut short", Array(good.prefix(40)), "is not a valid JSON object"),
            ("an array", Array("[1,2]".utf8), "expected '{' at byte 0"),
            ("event a number", Array("{\"event\":1}".utf8), "field 'event' should be a string"),
            ("event twice", Array(duplicated.utf8), "field 'event' appears twice"),
        ]
        var id: UInt64 = 0
        for (what, body, words) in cases {
            id += 1
            // Each refusal pipelined with a good PUBLISH behind it: ERROR, then ACK, on the same connection.
            try publisher.writeInbound([
                Frame(type: .publish, sequence: id, topic: Self.topic, body: body),
                publishFrame(topic: Self.topic, id: id + 100),
            ])
            let frames = try publisher.readOutboundFrames()
            #expect(frames.types == [.error, .ack], "\(what): \(frames.types)")
            #expect(frames.first?.sequence == id && frames.first?.topic == Self.topic, "\(what)")
            let e = try #require(frames.errors.first, "\(what)")
            #expect(e.name == "invalidBody" && !e.fatal, "\(what): \(e)")
            #expect(e.message.contains(words), "\(what): \(e.message)")
            #expect(!publisher.isClosed, "\(what): the connection stays open")
        }
        #expect(
            bus.engine.store.latest(topic: Self.topic)?.sequence == UInt64(cases.count),
            "only the good ones stored"
        )
    }

    /// A session that is not a publisher still gets the fatal `notPermitted` for a PUBLISH, whatever its body.
    @Test func aPhonesPublishIsStillNotPermittedWhateverItsBody() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "p"))
        try phone.writeInbound(Frame(type: .publish, sequence: 1, topic: Self.topic, body: Array("nope".utf8)))
        let frames = try phone.readOutboundFrames()
        #expect(frames.errors.first.map { $0.name == "notPermitted" && $0.fatal } == true, "\(frames.errors)")
    }

    /// The wire's statuses are the simulator's: a status the daemon's own backend emits is never refused.
    @Test func theAllowedStatusesAreTheSimulatorsOrderStatuses() {
        #expect(PublishRules.statuses == OrderStatus.allCases.map(\.rawValue))
        #expect(PublishRules.maximumContentStateBytes == ContentState.maximumEncodedBytes)
    }
}
