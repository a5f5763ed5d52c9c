import LiveBusCore
import LiveBusWire
import Testing

/// The session outbox (ISSUE-15 item 1; PROTOCOL.md §5.5): coalescing under pressure, the newest state of a topic
/// wins, terminal events and catch-ups are never held, a slow consumer is cut off past its limit.
struct OutboxTests {
    static let limits = Outbox.Limits(coalesceThresholdBytes: 1000, slowConsumerLimitBytes: 5000)

    static func event(_ seq: UInt64, topic: String = "orders/A", status: String = "cooking") throws -> StoredEvent {
        try StoredEvent(topic: topic, sequence: seq, body: StoreConformance.event(status))
    }

    @Test func belowTheThresholdEverythingIsWrittenAndAJumpIsASnapshot() throws {
        var o = Outbox(limits: Self.limits)
        #expect(o.offer(try Self.event(1), flags: [], lastSent: 0, queuedBytes: 0) == .write([]))
        #expect(o.offer(try Self.event(1), flags: [], lastSent: 1, queuedBytes: 0) == .alreadySent)
        #expect(o.offer(try Self.event(3), flags: [], lastSent: 1, queuedBytes: 0) == .write(.snapshot))
        #expect(o.offer(try Self.event(5), flags: .replay, lastSent: 4, queuedBytes: 0) == .write(.replay))
        #expect(o.offer(try Self.event(7), flags: .replay, lastSent: 5, queuedBytes: 0) == .write(.replay))
        let terminal = try Self.event(8, status: "delivered")
        #expect(o.offer(terminal, flags: [], lastSent: 7, queuedBytes: 0) == .write(.terminal))
    }

    /// A threshold of 0 does not turn coalescing off: past `queued > 0` bytes, any backlog, a live update is held.
    /// Why `livebusd --coalesce-bytes 0` is refused (review finding (g)).
    @Test func aZeroThresholdCoalescesBehindAnyBacklog() throws {
        var o = Outbox(limits: Outbox.Limits(coalesceThresholdBytes: 0, slowConsumerLimitBytes: 5000))
        #expect(o.offer(try Self.event(1), flags: [], lastSent: 0, queuedBytes: 0) == .write([]))
        #expect(o.offer(try Self.event(2), flags: [], lastSent: 1, queuedBytes: 1) == .held)
        #expect(o.hasHeld)
    }

    /// The fan-out's overload, given `isTerminal` read once per event, decides as the plain one does, for terminal
    /// and other events, under pressure and not.
    @Test func terminalKnownAheadDecidesAsThePlainOffer() throws {
        for status in ["cooking", "delivered", "canceled"] {
            for queued in [0, 2000, 6000] {
                for (seq, last) in [(1, 0), (3, 1), (2, 2)] as [(UInt64, UInt64)] {
                    let e = try Self.event(seq, status: status)
                    var plain = Outbox(limits: Self.limits)
                    var known = Outbox(limits: Self.limits)
                    let a = plain.offer(e, flags: [], lastSent: last, queuedBytes: queued)
                    let b = known.offer(e, flags: [], lastSent: last, queuedBytes: queued, isTerminal: e.isTerminal)
                    #expect(a == b, "\(status), \(queued) bytes queued, seq \(seq) after \(last)")
                    #expect(plain.held.keys.sorted() == known.held.keys.sorted())
                }
            }
        }
    }

    @Test func underPressureTheNewestStateOfEachTopicIsHeldAndDrainedByTopic() throws {
        var o = Outbox(limits: Self.limits)
        #expect(o.offer(try Self.event(2, topic: "orders/B"), flags: [], lastSent: 1, queuedBytes: 2000) == .held)
        #expect(o.offer(try Self.event(2), flags: [], lastSent: 1, queuedBytes: 2000) == .held)
        #expect(o.offer(try Self.event(3), flags: [], lastSent: 1, queuedBytes: 2000) == .held)
        #expect(o.coalescedCount == 1)
        // Terminal events and catch-ups are never held.
        let end = try Self.event(4, topic: "orders/C", status: "canceled")
        #expect(o.offer(end, flags: [], lastSent: 0, queuedBytes: 2000) == .write([.terminal, .snapshot]))
        #expect(
            o.offer(try Self.event(9, topic: "orders/D"), flags: .replay, lastSent: 8, queuedBytes: 2000)
                == .write(.replay)
        )
        let drained = o.drain()
        #expect(drained.map(\.topic) == ["orders/A", "orders/B"])
        #expect(drained.map(\.sequence) == [3, 2])
        #expect(o.drain().isEmpty)
        #expect(o.held.isEmpty)
    }

    @Test func aNewerWrittenEventDropsTheOlderHeldOneOfItsTopic() throws {
        var o = Outbox(limits: Self.limits)
        _ = o.offer(try Self.event(2), flags: [], lastSent: 1, queuedBytes: 2000)
        #expect(o.offer(try Self.event(3), flags: [], lastSent: 1, queuedBytes: 0) == .write(.snapshot))
        #expect(o.held.isEmpty)
    }

    @Test func pastTheLimitTheSessionIsASlowConsumer() throws {
        var o = Outbox(limits: Self.limits)
        guard case .slowConsumer(let e) = o.offer(try Self.event(1), flags: [], lastSent: 0, queuedBytes: 5001) else {
            Issue.record("not cut off past the limit")
            return
        }
        #expect(e.code == .slowConsumer)
        #expect(e.message.contains("5001 bytes queued") && e.message.contains("limit 5000"))
    }
}
