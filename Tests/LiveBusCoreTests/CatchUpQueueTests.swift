import LiveBusCore
import Testing

/// The catch-up queue's state machine: repeats join a job not started, started jobs take no repeats, topics being
/// caught up are known until their last job ends, compaction keeps the running numbers right. Source: issue 14
/// "Floods and resource limits"; Protocol/PROTOCOL.md §5.3.
@Suite struct CatchUpQueueTests {
    @Test func repeatsJoinTheJobNotStartedFromTheLowerSequence() {
        var q = CatchUpQueue()
        let joined1 = q.enqueue(topic: "a", after: 5)
        #expect(!joined1)
        let joined2 = q.enqueue(topic: "a", after: 3)
        #expect(joined2)
        let joined3 = q.enqueue(topic: "a", after: 9)
        #expect(joined3)
        let joined4 = q.enqueue(topic: nil, after: 0)
        #expect(!joined4)
        let joined5 = q.enqueue(topic: nil, after: 0)
        #expect(!joined5, "each SUBSCRIBE's UPTODATE is its own job")
        #expect(q.count == 3)
        #expect(q.current?.topic == "a" && q.current?.after == 3)
        #expect(q.isCatchingUp(topic: "a") && !q.isCatchingUp(topic: "b"))
    }

    @Test func aStartedJobTakesNoRepeatsAndTheTopicStaysCaughtUpUntilItsLastJob() {
        var q = CatchUpQueue()
        q.enqueue(topic: "a", after: 0)
        q.startCurrent()
        let joined6 = q.enqueue(topic: "a", after: 7)
        #expect(!joined6, "a new job once the first started")
        #expect(q.count == 2)
        q.finishCurrent()
        #expect(q.isCatchingUp(topic: "a"))
        #expect(q.current?.after == 7 && q.current?.started == false)
        q.finishCurrent()
        #expect(!q.isCatchingUp(topic: "a") && !q.hasWork && q.current == nil)
    }

    @Test func progressIsKeptAndCompactionKeepsJoiningRight() {
        var q = CatchUpQueue()
        for i in 0..<3000 { q.enqueue(topic: "t\(i)", after: 0) }
        for _ in 0..<2000 { q.finishCurrent() }  // compacts past 1024
        #expect(q.count == 1000 && q.current?.topic == "t2000")
        let joined7 = q.enqueue(topic: "t2500", after: 0)
        #expect(joined7, "running numbers survive compaction")
        let joined8 = q.enqueue(topic: "t10", after: 0)
        #expect(!joined8, "a finished topic queues anew")
        var job = q.current!
        q.startCurrent()
        job.started = true
        job.index = 4
        q.updateCurrent(job)
        #expect(q.current?.index == 4 && q.current?.started == true)
        q.removeAll()
        #expect(!q.hasWork && q.count == 0 && !q.isCatchingUp(topic: "t2500"))
    }
}
