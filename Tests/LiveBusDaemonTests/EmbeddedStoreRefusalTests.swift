import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A memory store that refuses every write with SQLITE_FULL (code 13) while `full`: a full disk without the disk.
final class RefusingStore: ForwardingEventStore, @unchecked Sendable {  // @unchecked: the test's one thread only.
    let inner = MemoryEventStore()
    var full = true

    var isDurable: Bool { false }

    func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        guard !full else {
            completion(.failure(StoreError("database or disk is full", resultCode: 13)))
            return
        }
        inner.commit(batch, completion: completion)
    }
}

/// A PUBLISH the store refuses is answered with a non-fatal `storeUnavailable` ERROR carrying its topic and id; the
/// publisher keeps its connection and publishes again once the store takes writes (PROTOCOL.md §5.7; review
/// finding 8: it was a fatal `internalError`).
@Suite struct EmbeddedStoreRefusalTests {
    @Test func aRefusedBatchIsAnsweredStoreUnavailableForEachPublishAndTheConnectionIsKept() throws {
        let (bus, _) = try embeddedDaemon()
        let store = RefusingStore()
        bus.engine.store = store
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        // Two PUBLISHes in one read: one batch, refused whole; each gets its own ERROR, in order.
        try publisher.writeInbound([publishFrame(topic: "orders/A1", id: 3), publishFrame(topic: "orders/B1", id: 4)])
        let refused = try publisher.readOutboundFrames()
        #expect(refused.types == [.error, .error], "\(refused.types)")
        #expect(refused.map(\.sequence) == [3, 4] && refused.map(\.topic) == ["orders/A1", "orders/B1"])
        for e in refused.errors {
            #expect(e.code == WireError.Code.storeUnavailable.rawValue && e.name == "storeUnavailable", "\(e)")
            #expect(!e.fatal)
            #expect(e.message.contains("the daemon's store refuses writes"), "\(e.message)")
            #expect(e.message.contains("database or disk is full"), "\(e.message)")
            #expect(e.message.contains("then publish it again"), "\(e.message)")
        }
        #expect(!publisher.isClosed)
        #expect(bus.engine.held.isDegraded)
        store.full = false
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 5))
        let ack = try publisher.readOutboundFrames()
        #expect(ack.types == [.ack] && ack.first?.sequence == 5, "\(ack.types)")
        #expect(ack.first(.ack, as: AckBody.self)?.sequence == 1, "a refused PUBLISH took no sequence")
        #expect(!bus.engine.held.isDegraded)
    }

    /// `storeUnavailable` is in `Protocol/errors.json` as code 19 (the test of the whole table is GoldenVectorTests).
    @Test func storeUnavailableIsCodeNineteen() {
        #expect(WireError.Code.storeUnavailable.rawValue == 19)
        #expect(WireError.Code.all.contains(.storeUnavailable))
    }
}
