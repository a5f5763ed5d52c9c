import Foundation
import LiveBusCore
import LiveBusWire
import Testing

/// The in-memory store against the core's store conformance suite (the SQLite store runs the same checks in
/// LiveBusDaemonTests). Source: ISSUE-15 item 2.
struct MemoryStoreConformanceTests {
    @Test(arguments: StoreConformance.checks)
    func memoryStore(_ check: StoreConformance.Check) throws {
        try check.run(StoreConformance.Harness(open: { MemoryEventStore(logCapacity: $0) }))
    }

    /// A batch with an event that cannot be encoded stores nothing of the batch and takes no sequence.
    @Test func aBatchIsAllOrNothing() throws {
        let store = MemoryEventStore()
        var bad = StoreConformance.event("x")
        bad.relevanceScore = Double.nan  // JSON cannot encode NaN
        let good = StoreConformance.event("ok")
        var result: Result<[StoredEvent], StoreError>?
        store.commit(StoreBatch(events: [("t/a", good), ("t/a", bad)], meta: [("k", "v")])) { result = $0 }
        #expect(throws: StoreError.self) { try result?.get() }
        #expect(store.latest(topic: "t/a") == nil)
        #expect(store.meta("k") == nil)
        store.commit(StoreBatch(events: [("t/a", good)])) { result = $0 }
        #expect(try result?.get().map(\.sequence) == [1])
    }
}

/// The group commit of one loop turn: staged events and their waiters come out together, in order, once.
struct GroupCommitTests {
    @Test func takesEverythingStagedAsOneBatchInOrder() {
        var turn = GroupCommit<Int>()
        #expect(turn.isEmpty)
        turn.append(("t/a", StoreConformance.event("1")), waiter: 10)
        turn.append(("t/b", StoreConformance.event("2")), waiter: 11)
        turn.saveResume(ResumeRecord(token: "k", name: "a", patterns: [], lastSent: [:]))
        turn.saveResume(ResumeRecord(token: "k", name: "a", patterns: ["x"], lastSent: [:]))
        turn.setMeta("m", "v")
        #expect(turn.eventCount == 2)
        let (batch, waiters) = turn.take(nowMilliseconds: 42)
        #expect(batch.events.map(\.topic) == ["t/a", "t/b"])
        #expect(waiters == [10, 11])
        #expect(batch.resumeRecords.map(\.patterns) == [["x"]])
        #expect(batch.meta.map(\.key) == ["m"])
        #expect(batch.nowMilliseconds == 42)
        #expect(turn.isEmpty)
        #expect(turn.take(nowMilliseconds: 43).batch.isEmpty)
        turn.saveResume(ResumeRecord(token: "a", name: "a", patterns: [], lastSent: [:]))
        turn.saveResume(ResumeRecord(token: "b", name: "b", patterns: [], lastSent: [:]))
        turn.removeResume(token: "a")
        let removal = turn.take(nowMilliseconds: 44).batch
        #expect(removal.resumeRecords.map(\.token) == ["b"] && removal.removedResumeTokens == ["a"])
        turn.removeResume(token: "c")
        turn.saveResume(ResumeRecord(token: "c", name: "c", patterns: [], lastSent: [:]))
        let saved = turn.take(nowMilliseconds: 45).batch
        #expect(saved.resumeRecords.map(\.token) == ["c"] && saved.removedResumeTokens.isEmpty)
    }

    /// One batch through a store: one commit for many appends, sequences in staging order.
    @Test func oneTurnIsOneCommit() throws {
        let store = MemoryEventStore()
        var turn = GroupCommit<Int>()
        for i in 0..<100 { turn.append(("t/\(i % 3)", StoreConformance.event("\(i)")), waiter: i) }
        let (batch, waiters) = turn.take(nowMilliseconds: 0)
        var commits = 0
        var stored: [StoredEvent] = []
        store.commit(batch) {
            commits += 1
            stored = (try? $0.get()) ?? []
        }
        #expect(commits == 1)
        #expect(stored.count == waiters.count)
        #expect(stored.filter { $0.topic == "t/0" }.map(\.sequence) == Array(1...34))
    }
}
