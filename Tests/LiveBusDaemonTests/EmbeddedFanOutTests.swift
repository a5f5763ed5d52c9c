import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// The fan-out's kept state (FanOut.swift): subscriber lists by topic number that follow every subscription change
/// and close, per-session state by slot, and the conversion kept per session and server millisecond, which a new
/// clock estimate replaces at once. On the embedded daemon (virtual time: many events in one millisecond).
/// Source: ISSUE-15 "Fan-out lookup", "Encode once per event"; Protocol/CLOCKSYNC.md "Conversion rule".
@Suite struct EmbeddedFanOutTests {
    static let hour: Int64 = 3_600_000

    /// Events of `phone` since the last read, as (topic, sequence).
    static func events(_ phone: EmbeddedConnection) throws -> [String] {
        try phone.readOutboundFrames().filter { $0.type == .event }.map { "\($0.topic)#\($0.sequence)" }
    }

    /// Each subscriber gets each event once, in order; SUBSCRIBE, UNSUBSCRIBE and a close change who gets the next
    /// event of a topic already fanned out (its kept list is rebuilt), and a phone that left gets nothing.
    @Test func subscriberListsFollowSubscriptionsAndCloses() throws {
        let (bus, _) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let a = bus.connect()
        try a.attach(helloFrame(name: "a"))
        let b = bus.connect()
        try b.attach(helloFrame(name: "b"))
        try a.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
        try b.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/A1"])))
        _ = try a.readOutboundFrames()
        _ = try b.readOutboundFrames()

        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 1))
        try publisher.writeInbound(publishFrame(topic: "orders/B2", id: 2))
        #expect(try Self.events(a) == ["orders/A1#1", "orders/B2#1"])
        #expect(try Self.events(b) == ["orders/A1#1"])

        // b leaves orders/A1: the kept list of orders/A1 no longer names it.
        try b.writeInbound(frame(.unsubscribe, SubscribeBody(patterns: ["orders/A1"])))
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 3))
        #expect(try Self.events(a) == ["orders/A1#2"])
        #expect(try Self.events(b) == [])

        // c subscribes with a wildcard after orders/A1 was fanned out: it is caught up, then gets the next live one.
        let c = bus.connect()
        try c.attach(helloFrame(name: "c"))
        try c.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/*"])))
        let caughtUp = try c.readAllOutboundFrames()
        let replayed = caughtUp.filter { $0.type == .event }.map { "\($0.topic)#\($0.sequence)" }.sorted()
        #expect(replayed == ["orders/A1#1", "orders/A1#2", "orders/B2#1"])
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 4))
        #expect(try Self.events(a) == ["orders/A1#3"])
        #expect(try Self.events(c) == ["orders/A1#3"])

        // a closes: the next event of each topic reaches c only, and the daemon holds a's session no more.
        a.closeInbound()
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 5))
        try publisher.writeInbound(publishFrame(topic: "orders/B2", id: 6))
        #expect(try Self.events(c) == ["orders/A1#4", "orders/B2#2"])
        #expect(bus.engine.sessions.values.contains { $0.name == "a" } == false)
        #expect(try Self.events(b) == [])
    }

    /// Two phones on different clocks get the same event converted each into its own clock, also within one server
    /// millisecond; an answered probe replaces the kept conversion at once (same millisecond, new estimate).
    @Test func conversionIsPerSessionAndFollowsANewEstimateWithinAMillisecond() throws {
        let (bus, _) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let ahead = bus.connect()
        let (_, aheadHello) = try ahead.attach(
            helloFrame(name: "ahead", clientTime: bus.now.millisecondsSinceEpoch + Self.hour)
        )
        let behind = bus.connect()
        try behind.attach(helloFrame(name: "behind", clientTime: bus.now.millisecondsSinceEpoch - Self.hour))
        for p in [ahead, behind] {
            try p.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
            _ = try p.readOutboundFrames()
        }
        let body = eventBody()
        let eta = body.contentState.etaTarget
        // Before any probe answer: the HELLO's offset, with 1000 ms of uncertainty (PROTOCOL.md §5.1).
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 1, body))
        let t1 = try #require(try ahead.readOutboundFrames().first { $0.type == .event }?.trailer)
        let u1 = try #require(try behind.readOutboundFrames().first { $0.type == .event }?.trailer)
        #expect(t1.etaTarget == eta + Self.hour && t1.uncertaintyMs == 1000)
        #expect(u1.etaTarget == eta - Self.hour && u1.uncertaintyMs == 1000)

        // The ahead phone answers its PING: it is really 2 h ahead. No virtual time passes.
        let ping = try #require(aheadHello.first(.ping, as: PingBody.self))
        let t = ping.t1 + 2 * Self.hour
        try ahead.writeInbound(frame(.pong, PongBody(t1: ping.t1, t2: t, t3: t)))
        _ = try ahead.readOutboundFrames()
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 2, body))
        let t2 = try #require(try ahead.readOutboundFrames().first { $0.type == .event }?.trailer)
        let u2 = try #require(try behind.readOutboundFrames().first { $0.type == .event }?.trailer)
        #expect(t2.etaTarget == eta + 2 * Self.hour, "the probe's estimate, not the kept handshake offset")
        #expect(t2.uncertaintyMs < 1000)
        #expect(t2.timestamp == body.timestamp + 2 * Self.hour)
        #expect(u2.etaTarget == eta - Self.hour && u2.uncertaintyMs == 1000)
    }
}
