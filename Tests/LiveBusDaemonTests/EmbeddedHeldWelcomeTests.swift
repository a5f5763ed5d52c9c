import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A durable store whose commits complete when the test says (a federated store waits for JetStream's
/// acknowledgement): in memory otherwise.
final class DeferredStore: ForwardingEventStore, @unchecked Sendable {  // @unchecked: the test's one thread only.
    let inner = MemoryEventStore()
    private var pending: [(StoreBatch, (Result<[StoredEvent], StoreError>) -> Void)] = []
    /// Resume records of the batches committed so far.
    private(set) var committedRecords: [ResumeRecord] = []
    var isDurable: Bool { true }
    var waiting: Int { pending.count }

    func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        pending.append((batch, completion))
    }

    /// Completes every waiting commit: stored, or refused with `refusal`.
    func complete(refusing refusal: StoreError? = nil) {
        let now = pending
        pending.removeAll()
        for (batch, completion) in now {
            if let refusal {
                completion(.failure(refusal))
            } else {
                committedRecords += batch.resumeRecords
                inner.commit(batch, completion: completion)
            }
        }
    }
}

/// A durable store that commits at once, in the call (as SQLite does): in memory.
final class ImmediateDurableStore: ForwardingEventStore, @unchecked Sendable {  // @unchecked: the test's one thread.
    let inner = MemoryEventStore()
    var isDurable: Bool { true }

    func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        inner.commit(batch, completion: completion)
    }
}

/// A new session's WELCOME follows the commit of its resume record, so the token it gives is known to every later
/// daemon: before, a federated daemon wrote WELCOME at once and a kill -9 before JetStream stored the record left
/// the phone with a token the restarted daemon refused (`resumeRejected`: it attached again and applied every update
/// a second time; FederationE2ETests' `phonesOnEveryDaemonFollowTheDemoToDelivered` under load). What the client
/// pipelined after its HELLO is answered after the WELCOME. Source: PROTOCOL.md §4.1, §5.7 "Group commit".
@Suite struct EmbeddedHeldWelcomeTests {
    /// An embedded daemon on a ``DeferredStore`` and a phone whose HELLO (`h1`) it has read.
    static func phoneOnADeferredStore() throws -> (EmbeddedDaemon, EmbeddedLog, DeferredStore, EmbeddedConnection) {
        let (bus, log) = try embeddedDaemon()
        let store = DeferredStore()
        bus.engine.store = store
        let phone = bus.connect()
        try phone.writeInbound(helloFrame(name: "h1"))
        return (bus, log, store, phone)
    }

    @Test func aNewSessionsWelcomeWaitsForItsRecordsCommit() throws {
        let (bus, _) = try embeddedDaemon()
        let store = DeferredStore()
        bus.engine.store = store
        let phone = bus.connect()
        // HELLO and SUBSCRIBE in one write, as a pipelining client sends them.
        try phone.writeInbound([helloFrame(name: "h1"), frame(.subscribe, SubscribeBody(patterns: ["orders/>"]))])
        bus.advance(by: 10)
        #expect(try phone.readOutboundFrames().isEmpty, "WELCOME before its record was stored")
        #expect(store.waiting == 1)
        store.complete()
        bus.advance(by: 10)
        let frames = try phone.readAllOutboundFrames()
        let welcome = try #require(frames.first(.welcome, as: WelcomeBody.self))
        #expect(frames.first?.type == .welcome, "\(frames.types)")
        #expect(store.committedRecords.map(\.token).contains(welcome.resumeToken))
        // The SUBSCRIBE was answered after it: its closing UPTODATE (no topic exists yet).
        #expect(frames.contains { $0.type == .upToDate && $0.topic.isEmpty }, "\(frames.types)")
    }

    @Test func aRefusedRecordStillWelcomesThePhone() throws {
        let (bus, log, store, phone) = try Self.phoneOnADeferredStore()
        bus.advance(by: 10)
        store.complete(refusing: StoreError("federationUnavailable: NATS is not connected"))
        bus.advance(by: 10)
        let frames = try phone.readAllOutboundFrames()
        #expect(frames.first?.type == .welcome && !phone.isClosed, "\(frames.types)")
        #expect(!log.lines("WELCOME sent before its resume record was stored").isEmpty)
    }

    /// A store that does not answer (a frozen NATS node) holds a WELCOME for at most
    /// ``Daemon/welcomeHoldMilliseconds``; its serverTime is the time it is written.
    @Test func aStoreThatDoesNotAnswerDelaysTheWelcomeBoundedly() throws {
        let (bus, log, store, phone) = try Self.phoneOnADeferredStore()
        bus.advance(by: Daemon.welcomeHoldMilliseconds - 1)
        #expect(try phone.readOutboundFrames().isEmpty)
        bus.advance(by: 1)
        let welcome = try #require(try phone.readAllOutboundFrames().first(.welcome, as: WelcomeBody.self))
        #expect(welcome.serverTime == bus.now.millisecondsSinceEpoch)
        #expect(!log.lines("has not answered in 1000 ms").isEmpty)
        store.complete()  // late: nothing more is sent twice
        bus.advance(by: 10)
        #expect(try phone.readAllOutboundFrames().filter { $0.type == .welcome }.isEmpty)
    }

    /// A store that answers in the call released the WELCOME already: no hold timer is armed for it (before, every
    /// connect armed one, kept it ``Daemon/welcomeHoldMilliseconds`` and fired it for nothing).
    @Test func aStoreThatAnswersAtOnceArmsNoHoldTimer() throws {
        let (bus, _) = try embeddedDaemon()
        bus.engine.store = ImmediateDurableStore()
        bus.advance(by: 1)
        let phone = bus.connect()
        let helloAt = bus.loop.nowMilliseconds
        try phone.writeInbound(helloFrame(name: "h1"))
        bus.advance(by: 1)
        #expect(try phone.readAllOutboundFrames().first?.type == .welcome)
        let hold = bus.loop.pendingTimers.filter { $0.deadline == helloAt + Daemon.welcomeHoldMilliseconds }
        #expect(hold.isEmpty, "a WELCOME hold timer for a record already stored")
    }

    @Test func aResumedSessionIsWelcomedAtOnce() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        let token = try #require(try phone.attach(helloFrame(name: "h1")).0?.resumeToken)
        phone.closeInbound()
        let store = DeferredStore()
        bus.engine.store = store
        let again = bus.connect()
        let (w, _) = try again.attach(helloFrame(name: "h1", resume: ResumeBody(token: token, topics: [:])))
        #expect(w?.resumed == true)
    }
}

/// A connect (HELLO, then SUBSCRIBE) costs one store transaction, not two: the SUBSCRIBE's resume record, which a
/// resume's `patterns` repeat, goes with the next batch (the next phone's HELLO), or alone at most
/// ``Daemon/deferredRecordMilliseconds`` later. Before, each SUBSCRIBE committed a batch of its own (issue 15,
/// BENCHMARKS.md "Profiles of 2026-12-03 (connect path)"). Source: PROTOCOL.md §5.3.
@Suite struct EmbeddedDeferredRecordTests {
    /// A phone welcomed on a ``DeferredStore`` (its HELLO's batch committed), then subscribed to `orders/>`.
    static func subscribedPhone() throws -> (EmbeddedDaemon, DeferredStore, String) {
        let (bus, log, store, phone) = try EmbeddedHeldWelcomeTests.phoneOnADeferredStore()
        _ = log
        bus.advance(by: 1)
        #expect(store.waiting == 1)
        store.complete()
        bus.advance(by: 1)
        let token = try #require(try phone.readAllOutboundFrames().first(.welcome, as: WelcomeBody.self)).resumeToken
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
        bus.advance(by: 1)
        return (bus, store, token)
    }

    @Test func aSubscribesRecordGoesWithTheNextPhonesBatch() throws {
        let (bus, store, token) = try Self.subscribedPhone()
        #expect(store.waiting == 0, "the SUBSCRIBE committed a batch of its own")
        let other = bus.connect()
        try other.writeInbound(helloFrame(name: "h2"))
        bus.advance(by: 1)
        #expect(store.waiting == 1)
        store.complete()
        bus.advance(by: 1)
        #expect(store.committedRecords.last { $0.token == token }?.patterns == ["orders/>"])
        #expect(store.committedRecords.contains { $0.name == "h2" })
        #expect(try other.readAllOutboundFrames().first?.type == .welcome)
        bus.advance(by: Daemon.deferredRecordMilliseconds * 2)
        #expect(store.waiting == 0, "the record was committed twice")
    }

    @Test func aSubscribesRecordAloneIsStoredWithinTheDeferral() throws {
        let (bus, store, token) = try Self.subscribedPhone()
        bus.advance(by: Daemon.deferredRecordMilliseconds - 2)
        #expect(store.waiting == 0)
        bus.advance(by: 2)
        #expect(store.waiting == 1, "the SUBSCRIBE's record was never stored")
        store.complete()
        #expect(store.committedRecords.last { $0.token == token }?.patterns == ["orders/>"])
    }

    @Test func aShutdownStoresTheDeferredRecord() throws {
        let (bus, store, token) = try Self.subscribedPhone()
        bus.engine.shutdown(reason: "test")
        #expect(store.waiting == 1, "the SUBSCRIBE's record was lost at shutdown")
        store.complete()
        #expect(store.committedRecords.last { $0.token == token }?.patterns == ["orders/>"])
    }
}
