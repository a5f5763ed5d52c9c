import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// SYNC frames (PROTOCOL.md §5.9) from the daemon's federation sync state, on the embedded daemon: the observations
/// a federated daemon takes from its NATS link are fed directly (no NATS, virtual time). Who gets SYNC (only clients
/// whose HELLO asked), when (after WELCOME and at each change), and its `since` on each phone's own clock.
@Suite struct EmbeddedFederationSyncTests {
    typealias O = FederationSync.Observation
    static func asks(_ h: inout HelloBody) { h.features = [HelloBody.syncFeature] }

    static func syncs(_ frames: [Frame]) -> [SyncBody] {
        frames.filter { $0.type == .sync }.compactMap { try? WireJSON.decode(SyncBody.self, from: $0.body) }
    }

    @Test func aDaemonWithoutFederationSendsNoSyncEvenToAPhoneThatAsks() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        let (welcome, frames) = try phone.attach(helloFrame(name: "solo", configure: Self.asks))
        #expect(welcome != nil)
        #expect(!frames.types.contains(.sync), "\(frames.types)")
        bus.advance(by: 5_000)
        #expect(!(try phone.readOutboundFrames()).types.contains(.sync))
    }

    @Test func phonesThatAskAreToldDegradedCatchingUpLiveOnTheirOwnClocksAndKeepTheirSession() throws {
        let (bus, log) = try embeddedDaemon()
        let d = bus.engine
        d.federationSync = FederationSync(link: .connected, nowMilliseconds: bus.now.millisecondsSinceEpoch)
        // A phone 90 s fast that asks, and an older client that does not.
        let fast = bus.connect()
        let (_, first) = try fast.attach(
            helloFrame(name: "fast", clientTime: bus.now.millisecondsSinceEpoch + 90_000, configure: Self.asks)
        )
        #expect(first.types.prefix(2) == [.welcome, .sync], "\(first.types)")
        #expect(Self.syncs(first).map(\.state) == [.live])
        let old = bus.connect()
        let (_, oldFirst) = try old.attach(helloFrame(name: "old", clientTime: bus.now.millisecondsSinceEpoch))
        #expect(!oldFirst.types.contains(.sync))

        bus.advance(by: 1_000)
        _ = try fast.readOutboundFrames()
        let lostAt = bus.now.millisecondsSinceEpoch
        d.takeFederationSync(
            O(link: .lost("reconnecting"), appliedStreamSequence: 4, streamReads: 1, streamLastSequence: 4)
        )
        bus.run()  // the turn's output is flushed at its end
        let degraded = Self.syncs(try fast.readOutboundFrames())
        #expect(degraded.map(\.state) == [.degraded])
        // `since` is on the phone's clock: the server instant + its 90 s (the handshake's offset, ±1 s stated).
        let sinceOffset = (degraded.first?.since ?? 0) - lostAt
        #expect(abs(sinceOffset - 90_000) <= 50, "since − server instant = \(sinceOffset) ms")
        #expect(degraded.first.map { $0.uncertaintyMs >= 0 } == true)
        #expect(degraded.first?.reason?.contains("federationUnavailable") == true)
        #expect(!(try old.readOutboundFrames()).types.contains(.sync))
        #expect(log.lines("federation sync state", "state=degraded", "clients_told=1").count == 1)

        // Told once: the same loss seen again says nothing.
        d.takeFederationSync(O(link: .lost("closed"), appliedStreamSequence: 4, streamReads: 1, streamLastSequence: 4))
        bus.run()  // the turn's output is flushed at its end
        #expect(Self.syncs(try fast.readOutboundFrames()).isEmpty)

        // A phone that attaches while degraded is told at once, after its WELCOME.
        let late = bus.connect()
        let (_, lateFirst) = try late.attach(helloFrame(name: "late", configure: Self.asks))
        #expect(Self.syncs(lateFirst).map(\.state) == [.degraded])

        bus.advance(by: 4_000)
        d.takeFederationSync(O(link: .connected, appliedStreamSequence: 4, streamReads: 1, streamLastSequence: 4))
        bus.run()  // the turn's output is flushed at its end
        d.takeFederationSync(O(link: .connected, appliedStreamSequence: 5, streamReads: 2, streamLastSequence: 7))
        #expect(Self.syncs(try fast.readOutboundFrames()).map(\.state) == [.catchingUp])
        d.takeFederationSync(O(link: .connected, appliedStreamSequence: 7, streamReads: 2, streamLastSequence: 7))
        bus.run()  // the turn's output is flushed at its end
        let back = Self.syncs(try fast.readOutboundFrames())
        #expect(back.map(\.state) == [.live])
        #expect(back.first?.reason == nil)
        #expect(Self.syncs(try late.readOutboundFrames()).map(\.state) == [.catchingUp, .live])
        #expect(!fast.isClosed && !old.isClosed && !late.isClosed)
        #expect(!(try old.readOutboundFrames()).types.contains(.sync))
    }

    @Test func aClientSendingSyncIsRefusedAsMalformed() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "odd"))
        try phone.writeInbound(frame(.sync, SyncBody(state: .live, since: 1, uncertaintyMs: 0)))
        let frames = try phone.readOutboundFrames()
        #expect(frames.errors.map(\.name) == ["malformedFrame"])
        #expect(frames.errors.first?.message.contains("SYNC is sent by the daemon") == true)
    }
}
