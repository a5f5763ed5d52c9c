import LiveBusClock
import LiveBusScheduler
import Testing

/// The refresh gate's fast path and its ring log (ISSUE-15 item 4): a foreground phone with nothing pending passes
/// straight through with the same decisions as the full path; anything pending takes the full path.
struct RefreshGateFastPathTests {
    /// The fast path decides exactly what ``RefreshScheduler/offer(_:at:)`` decides for a foreground app, explain
    /// log included.
    @Test func foregroundFastPathMatchesTheFullPath() {
        var fast = makeScheduler(state: .foreground)
        var full = makeScheduler(state: .foreground)
        var fastSent: [Sent] = []
        var fullSent: [Sent] = []
        for seq in UInt64(1)...30 {
            let u = update(seq, topic: seq.isMultiple(of: 3) ? "orders/B" : "orders/A", priority: seq % 2 == 0 ? 5 : 10)
            if let d = fast.passThrough(u, at: at(Int64(seq))) {
                fastSent.append(Sent(d))
            } else {
                Issue.record("seq \(seq)")
            }
            fullSent += full.offer(u, at: at(Int64(seq))).sent
        }
        #expect(fastSent == fullSent)
        #expect(fast.explain(last: 64) == full.explain(last: 64))
        #expect(fast.status(at: at(30)) == full.status(at: at(30)))
    }

    /// With the caller's topic numbers the fast path decides as without them, and a number that names another topic
    /// (a caller's mistake) changes nothing but the cost: each topic keeps its own last sequence.
    @Test func slotNumbersDecideAsTopicNames() {
        var named = makeScheduler(state: .foreground)
        var slotted = makeScheduler(state: .foreground)
        for seq in UInt64(1)...40 {
            let topic = ["orders/A", "orders/B", "orders/C"][Int(seq % 3)]
            let u = update(seq, topic: topic)
            // Slot of the topic, except every 7th call, which names the slot of another topic.
            let slot = seq.isMultiple(of: 7) ? Int((seq + 1) % 3) : Int(seq % 3)
            let a = named.passThrough(u, at: at(Int64(seq))).map(Sent.init)
            let b = slotted.passThrough(u, slot: slot, at: at(Int64(seq))).map(Sent.init)
            #expect(a == b, "seq \(seq)")
            // A repeat is refused on both paths (the full path records the discard).
            #expect(slotted.passThrough(u, slot: Int(seq % 3), at: at(Int64(seq))) == nil)
            _ = named.passThrough(u, at: at(Int64(seq)))
        }
        #expect(named.status(at: at(40)) == slotted.status(at: at(40)))
        #expect(slotted.lastDeliveredSequence(topic: "orders/A") == 39)
        #expect(slotted.lastDeliveredSequence(topic: "orders/D") == nil)
    }

    /// An update already received, a backgrounded app or a queued entry: the fast path steps aside.
    @Test func anythingPendingTakesTheFullPath() {
        var s = makeScheduler(state: .foreground)
        #expect(s.passThrough(update(2), at: at(2)) != nil)
        #expect(s.passThrough(update(2), at: at(3)) == nil, "already received: the full path records the discard")
        #expect(s.passThrough(update(1), at: at(3)) == nil, "older: the full path decides")
        var b = makeScheduler(state: .background)
        #expect(b.passThrough(update(1), at: at(1)) == nil)
        _ = b.offer(update(1, priority: 5), at: at(1))
        _ = b.setAppState(.foreground, at: at(2))
        #expect(b.passThrough(update(2), at: at(3)) != nil, "foreground again with the queue flushed")
    }

    /// Once the ring is full, the fast path rewrites its oldest entry in place when that one is a live-stream delivery
    /// too: the log still reads exactly as the full path's, with other decisions (discards) between, and
    /// ``RefreshScheduler/passesThrough(_:slot:at:)`` decides and records as ``RefreshScheduler/passThrough(_:at:)``.
    @Test func aFullRingRewrittenInPlaceReadsAsTheFullPath() {
        var fast = makeScheduler(state: .foreground)
        var bool = makeScheduler(state: .foreground)
        var full = makeScheduler(state: .foreground)
        for seq in UInt64(1)...300 {
            let u = update(seq, topic: seq.isMultiple(of: 3) ? "orders/B" : "orders/A")
            let slot = seq.isMultiple(of: 3) ? 1 : 0
            let passed = fast.passThrough(u, slot: slot, at: at(Int64(seq)))
            let passes = bool.passesThrough(u, slot: slot, at: at(Int64(seq)))
            #expect(passed != nil, "seq \(seq)")
            #expect(passes, "seq \(seq)")
            _ = full.offer(u, at: at(Int64(seq)))
            if seq.isMultiple(of: 7) {  // a repeat: the fast path steps aside, the full path records a discard
                let again = fast.passThrough(u, at: at(Int64(seq)))
                let againPasses = bool.passesThrough(u, slot: 0, at: at(Int64(seq)))
                #expect(again == nil)
                #expect(!againPasses)
                _ = fast.offer(u, at: at(Int64(seq)))
                _ = bool.offer(u, at: at(Int64(seq)))
                _ = full.offer(u, at: at(Int64(seq)))
            }
        }
        #expect(fast.explain(last: 64).count == 64)
        #expect(fast.explain(last: 64) == full.explain(last: 64))
        #expect(bool.explain(last: 64) == full.explain(last: 64))
        #expect(fast.status(at: at(300)) == full.status(at: at(300)))
        #expect(bool.status(at: at(300)) == full.status(at: at(300)))
    }

    /// The explain log is a ring: after 200 decisions it holds the newest 64, oldest first.
    @Test func theExplainLogKeepsTheNewestDecisionsInOrder() {
        var s = makeScheduler(state: .foreground)
        for seq in UInt64(1)...200 { _ = s.passThrough(update(seq), at: at(Int64(seq))) }
        let log = s.explain(last: 100)
        #expect(log.count == 64)
        #expect(log.compactMap(\.sequence) == Array(137...200))
        #expect(s.explain(last: 3).compactMap(\.sequence) == [198, 199, 200])
        #expect(s.explain(last: 0).isEmpty)
    }
}
