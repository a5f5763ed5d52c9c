import Foundation
import LiveBusClient
import LiveBusCore
@testable import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// What a ``FlakyStore`` is told and what it saw; shared by the test and the store the daemon holds.
final class StoreSwitch: @unchecked Sendable {  // @unchecked: used only on the test's loop thread.
    /// Refuse every write while `true`.
    var full = false
    /// Refuse this many more writes, then accept.
    var failuresLeft = 0
    /// Commits refused and accepted.
    var refusals = 0
    var commits = 0
    /// The simulator state of the last accepted commit.
    var lastState: Data?
}

/// A memory store that refuses writes with SQLITE_FULL (code 13) on demand: a full disk without the disk.
final class FlakyStore: ForwardingEventStore {
    let inner = MemoryEventStore()
    let control: StoreSwitch
    static let full = StoreError("database or disk is full", resultCode: 13)

    init(control: StoreSwitch) { self.control = control }

    var isDurable: Bool { false }

    func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        if control.full || control.failuresLeft > 0 {
            control.failuresLeft = max(0, control.failuresLeft - 1)
            control.refusals += 1
            completion(.failure(Self.full))
            return
        }
        control.commits += 1
        if let state = batch.simulatorState { control.lastState = state }
        inner.commit(batch, completion: completion)
    }
}

/// The held-events queue on its own, with a store that fails N times and a virtual clock.
/// Source: issue 14 "Data loss on a full disk".
struct HeldEventsTests {
    static func item(_ status: String, topic: String = "orders/A") -> HeldEvents.Item {
        var b = GoldenVectorsForTests.event
        b.contentState.status = status
        return (topic, b)
    }

    @Test func refusedEventsAreHeldInOrderAndStoredOnceTheStoreTakesWrites() {
        let control = StoreSwitch()
        let store: any EventStore = FlakyStore(control: control)
        var held = HeldEvents()
        control.failuresLeft = 3
        // The first refusal starts the degraded period.
        guard
            case .held(let e, began: true) = held.publish(
                [Self.item("cooking")],
                simulatorState: nil,
                store: store,
                nowMs: 1000
            )
        else {
            Issue.record("the first refusal did not start the degraded period")
            return
        }
        #expect(StoreCondition(e) == .full)
        #expect(held.isDegraded && held.count == 1)
        // Later events queue behind without trying the store: they cannot overtake.
        guard
            case .held(_, began: false) = held.publish(
                [Self.item("pickedUp"), Self.item("cooking", topic: "orders/B")],
                simulatorState: nil,
                store: store,
                nowMs: 1100
            )
        else {
            Issue.record("a later event was not held behind the first")
            return
        }
        #expect(control.refusals == 1)
        #expect(held.count == 3)
        // Two failed retries, then the store takes everything in one commit, in order.
        for t in [1200, 1400] as [Int64] {
            if case .stored = held.retry(simulatorState: Data("s".utf8), store: store, nowMs: t) {
                Issue.record("stored while the store refuses")
            }
        }
        #expect(held.degradation?.failedAttempts == 3)
        guard
            case .stored(let stored, let recovery) = held.retry(
                simulatorState: Data("s9".utf8),
                store: store,
                nowMs: 1800
            )
        else {
            Issue.record("not stored once the store takes writes")
            return
        }
        #expect(stored.map(\.topic) == ["orders/A", "orders/A", "orders/B"])
        #expect(stored.map(\.sequence) == [1, 2, 1])
        #expect(stored.map(\.body.contentState.status) == ["cooking", "pickedUp", "cooking"])
        #expect(recovery == HeldEvents.Recovery(heldEvents: 3, heldMilliseconds: 800, failedAttempts: 3))
        #expect(control.commits == 1 && control.lastState == Data("s9".utf8))
        #expect(!held.isDegraded && held.count == 0)
        // Nothing skipped, no number reused: the next event takes the next sequence.
        guard
            case .stored(let next, nil) = held.publish(
                [Self.item("delivered")],
                simulatorState: nil,
                store: store,
                nowMs: 1900
            )
        else {
            Issue.record("a healthy store did not store at once")
            return
        }
        #expect(next.map(\.sequence) == [3])
    }

    @Test func retryBacksOffFrom100MillisecondsTo2Seconds() {
        let control = StoreSwitch()
        control.full = true
        let store: any EventStore = FlakyStore(control: control)
        var held = HeldEvents()
        _ = held.publish([Self.item("cooking")], simulatorState: nil, store: store, nowMs: 0)
        var delays: [Int64] = [held.retryDelayMilliseconds]
        for t in 1...6 {
            _ = held.retry(simulatorState: nil, store: store, nowMs: Int64(t))
            delays.append(held.retryDelayMilliseconds)
        }
        #expect(delays == [100, 200, 400, 800, 1600, 2000, 2000])
    }

    @Test func aCommandIsStoredNowOrNotAtAllAndAnEmptyRetryStillProbesTheStore() {
        let control = StoreSwitch()
        control.full = true
        let store: any EventStore = FlakyStore(control: control)
        var held = HeldEvents()
        let r = held.storeNow([Self.item("created")], simulatorState: Data("s".utf8), store: store, nowMs: 5)
        guard case .failure = r else {
            Issue.record("a refused command reported success")
            return
        }
        #expect(held.isDegraded && held.count == 0)
        // With nothing held, the retry still writes (the simulator state) and so still fails while full.
        _ = held.retry(simulatorState: Data("s".utf8), store: store, nowMs: 10)
        #expect(held.isDegraded && control.refusals == 2)
        control.full = false
        guard
            case .stored(let stored, let recovery?) = held.retry(
                simulatorState: Data("s".utf8),
                store: store,
                nowMs: 30
            )
        else {
            Issue.record("the retry did not end the degraded period")
            return
        }
        #expect(stored.isEmpty && recovery.heldEvents == 0 && recovery.heldMilliseconds == 25)
        #expect(store.latest(topic: "orders/A") == nil)
    }

    @Test func aCommandNeverOvertakesHeldEventsAndPublishesEndAPeriodOnlyWithNothingHeld() {
        let control = StoreSwitch()
        control.full = true
        let store: any EventStore = FlakyStore(control: control)
        var held = HeldEvents()
        _ = held.publish([Self.item("cooking")], simulatorState: nil, store: store, nowMs: 0)
        control.full = false
        // Held events came first: a command is refused without trying, and nothing held is touched.
        guard
            case .failure = held.storeNow(
                [Self.item("created", topic: "orders/B")],
                simulatorState: nil,
                store: store,
                nowMs: 1
            )
        else {
            Issue.record("a command overtook held events")
            return
        }
        #expect(control.commits == 0 && held.count == 1)
        // A publish stored elsewhere does not end the period while events are held.
        let early = held.noteStored(nowMs: 2)
        #expect(early == nil && held.isDegraded)
        _ = held.retry(simulatorState: nil, store: store, nowMs: 3)
        #expect(!held.isDegraded)
        // A refused publish starts a period with nothing held; a stored one ends it.
        let began = held.noteRefused(FlakyStore.full, nowMs: 10)
        let again = held.noteRefused(FlakyStore.full, nowMs: 11)
        #expect(began && !again)
        #expect(!held.canProbe(simulatorState: nil) && held.canProbe(simulatorState: Data("s".utf8)))
        #expect(
            held.noteStored(nowMs: 15) == HeldEvents.Recovery(heldEvents: 0, heldMilliseconds: 5, failedAttempts: 2)
        )
        #expect(!held.isDegraded)
    }

    @Test func conditionsFollowSQLiteResultCodes() {
        #expect(StoreCondition(StoreError("x", resultCode: 13)) == .full)
        #expect(StoreCondition(StoreError("x", resultCode: 10 | (3 << 8))) == .ioError)  // SQLITE_IOERR_WRITE
        #expect(StoreCondition(StoreError("x", resultCode: 19)) == .storeError)  // SQLITE_CONSTRAINT
        #expect(StoreCondition(StoreError("x")) == .storeError)
    }

    @Test func theLimitIsReachedAtLimitEvents() {
        let control = StoreSwitch()
        control.full = true
        let store: any EventStore = FlakyStore(control: control)
        var held = HeldEvents(limit: 3)
        _ = held.publish([Self.item("a"), Self.item("b")], simulatorState: nil, store: store, nowMs: 0)
        #expect(!held.isFull)
        _ = held.publish([Self.item("c")], simulatorState: nil, store: store, nowMs: 0)
        #expect(held.isFull)
    }

    /// The real SQLite store says SQLITE_FULL when its database cannot grow (`PRAGMA max_page_count`, which fails
    /// exactly as a full disk does), stores nothing of the refused transaction, and numbers on without a hole once
    /// it may grow again. Source: https://www.sqlite.org/pragma.html#pragma_max_page_count
    @Test func sqliteStoreRefusesWithSQLiteFullAndNumbersOnWithoutHole() throws {
        let dir = temporaryDirectory("lbh")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try SQLiteStore(directory: dir)
        _ = try store.append(topic: "orders/A", body: Self.item("created").body)
        let pages = try #require(store.pageCount())
        store.limitPages(pages)
        var big = Self.item("cooking").body
        big.contentState.summary.en = String(repeating: "x", count: 64 * 1024)
        do {
            _ = try store.commit([("orders/A", big), ("orders/A", big)], simulatorState: Data("s".utf8))
            Issue.record("a database at its page limit took 128 KiB")
        } catch {
            let e = try #require(error as? StoreError)
            #expect(StoreCondition(e) == .full, "\(e.message) code \(e.resultCode ?? -1)")
        }
        #expect(store.latest(topic: "orders/A")?.sequence == 1)
        #expect(store.simulatorState() == nil)
        store.limitPages(1_073_741_823)
        #expect(try store.commit([("orders/A", big)], simulatorState: nil).map(\.sequence) == [2])
        #expect(store.events(topic: "orders/A", from: 1)?.map(\.sequence) == [1, 2])
    }
}

/// A daemon (in this process) on a store that refuses writes for a while: the phone's events are held, then arrive
/// in order with no gap, and `status` says degraded meanwhile.
@Suite(.serialized)
struct DaemonFullStoreTests {
    @Test func simulatorEventsRefusedByTheStoreReachThePhoneInOrderOnceItTakesWrites() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 40)
        let control = StoreSwitch()
        bus.daemon.store = FlakyStore(control: control)
        var applied: [AppliedUpdate] = []
        let phone = bus.session("p")
        phone.onUpdate = { u in if u.type == "update" { applied.append(u) } }
        phone.start()
        // Refuse writes from 0.5 s until the simulator has emitted delivered (held, not shown).
        #expect(bus.run(timeoutMs: 10_000) { !applied.isEmpty })
        let startTimer = bus.loop.schedule(after: 500) { control.full = true }
        var degradedSeen: JSONValue = .null
        #expect(
            bus.run(timeoutMs: 20_000) {
                if bus.daemon.held.isDegraded, degradedSeen == .null {
                    degradedSeen = bus.daemon.statusData()["degraded"] ?? .null
                }
                return bus.daemon.simulator?.isFinished == true && control.full
            }
        )
        startTimer.cancel()
        #expect(applied.last?.status != "delivered", "delivered reached the phone while the store refused it")
        let degraded = bus.daemon.statusData()["degraded"]
        #expect(degraded?["condition"]?.stringValue == "full")
        #expect((degraded?["heldEvents"]?.doubleValue ?? 0) > 0)
        #expect(degradedSeen != .null)
        // `order list` says what phones were told, not the simulator's state ahead of it: while events are held,
        // each order's status and sequence are those of its last stored event (e2e-federation-faults saw
        // "delivered" at the sequence of a held "delivering").
        let views = bus.daemon.orderViews()
        #expect(!views.isEmpty)
        for v in views {
            let stored = bus.daemon.store.latest(topic: v.topic)
            #expect(v.sequence == stored?.sequence && v.status == stored?.body.contentState.status, "\(v)")
        }
        #expect(views.contains { $0.status != "delivered" }, "order list shows held events: \(views.map(\.status))")
        control.full = false
        #expect(bus.run(timeoutMs: 10_000) { applied.last?.status == "delivered" })
        #expect(bus.daemon.orderViews().map(\.status).contains("delivered"))
        #expect(bus.daemon.statusData()["degraded"] == .null)
        let seqs = applied.map(\.seq)
        #expect(seqs == Array(1...UInt64(max(1, seqs.count))), "sequences \(seqs)")
        var statuses: [String] = []
        for x in applied where statuses.last != x.status { statuses.append(x.status) }
        #expect(statuses == E2EDaemonTests.fullSequence)
        let log = bus.logLines.lines
        #expect(log.contains { $0.hasPrefix("warning degraded: the store refuses writes") })
        #expect(log.contains { $0.hasPrefix("warning degraded period over") && !$0.contains("(\"held\", \"0\")") })
        phone.close()
        bus.shutdown()
    }

    /// At the held-events limit the simulator waits instead of emitting events that could not be kept, and catches up
    /// in order once the store takes writes.
    @Test func atTheHeldLimitTheSimulatorWaitsAndLosesNothing() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 40)
        let control = StoreSwitch()
        bus.daemon.store = FlakyStore(control: control)
        bus.daemon.held = HeldEvents(limit: 3)
        var applied: [AppliedUpdate] = []
        let phone = bus.session("p")
        phone.onUpdate = { u in if u.type == "update" { applied.append(u) } }
        phone.start()
        #expect(bus.run(timeoutMs: 10_000) { !applied.isEmpty })
        control.full = true
        #expect(bus.run(timeoutMs: 10_000) { bus.daemon.held.isFull })
        let heldAtLimit = bus.daemon.held.count
        bus.run(timeoutMs: 1000) { false }
        #expect(bus.daemon.held.count == heldAtLimit, "the simulator went on past the limit")
        #expect(bus.daemon.statusData()["degraded"]?["simulatorPaused"] == .bool(true))
        #expect(bus.daemon.simulator?.isFinished == false)
        control.full = false
        #expect(bus.run(timeoutMs: 15_000) { applied.last?.status == "delivered" })
        let seqs = applied.map(\.seq)
        #expect(seqs == Array(1...UInt64(max(1, seqs.count))), "sequences \(seqs)")
        var statuses: [String] = []
        for x in applied where statuses.last != x.status { statuses.append(x.status) }
        #expect(statuses == E2EDaemonTests.fullSequence)
        phone.close()
        bus.shutdown()
    }

    /// A publisher's refused PUBLISH gets a non-fatal `storeUnavailable` ERROR with its topic and id, takes no
    /// sequence and keeps its connection (review finding 8: it was a fatal `internalError`); it makes the daemon
    /// degraded too (with no simulator there is nothing to retry with, so it stays degraded), and the next stored
    /// PUBLISH, on the same connection, ends it and gets sequence 1.
    @Test func aRefusedPublishMakesTheDaemonDegradedUntilAPublishIsStored() throws {
        let bus = try TestBus(scenario: nil)
        let control = StoreSwitch()
        control.full = true
        bus.daemon.store = FlakyStore(control: control)
        func publishFrame(_ status: String, id: UInt64) -> Frame {
            var body = GoldenVectorsForTests.event
            body.contentState.status = status
            return Frame(type: .publish, sequence: id, topic: "orders/P1", body: try! WireJSON.encode(body))
        }
        var peer: RawPeer?
        RawPeer.connect(bus) { p in
            peer = p
            p.send(hello(role: .publisher, device: nil))
            p.send(publishFrame("cooking", id: 7))
        }
        bus.run(timeoutMs: 5000) { peer?.frames.contains { $0.type == .ack || $0.type == .error } ?? false }
        let refusedFrame = peer?.frames.first { $0.type == .error }
        #expect(refusedFrame?.sequence == 7 && refusedFrame?.topic == "orders/P1", "the ERROR carries the PUBLISH's id")
        let refused = peer?.errors.first
        #expect(refused?.name == "storeUnavailable" && refused?.code == 19, "\(String(describing: refused))")
        #expect(refused?.fatal == false)
        #expect(refused?.message.contains("database or disk is full") == true)
        #expect(refused?.message.contains("the daemon's store refuses writes") == true)
        #expect(refused?.message.contains("then publish it again") == true)
        #expect(bus.daemon.statusData()["degraded"]?["condition"]?.stringValue == "full")
        bus.run(timeoutMs: 2500) { false }
        #expect(peer?.closed == false, "the publisher's connection is kept")
        #expect(bus.daemon.held.isDegraded, "degraded cleared without a write")
        control.full = false
        peer?.send(publishFrame("pickedUp", id: 8))
        bus.run(timeoutMs: 5000) { peer?.frames.contains { $0.type == .ack } ?? false }
        let ack = peer?.frames.first { $0.type == .ack }
        #expect(ack?.sequence == 8)
        #expect(ack.flatMap { try? WireJSON.decode(AckBody.self, from: $0.body) }?.sequence == 1)
        #expect(bus.daemon.statusData()["degraded"] == .null)
        let log = bus.logLines.lines
        #expect(log.contains { $0.hasPrefix("warning degraded: the store refuses writes") })
        #expect(log.contains { $0.hasPrefix("warning degraded period over") })
        peer?.connection.close()
        bus.shutdown()
    }
}
