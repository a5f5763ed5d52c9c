import LiveBusFaults
import Testing

/// `drop`, `duplicate`, `corrupt`, `reorder`: whole frames only, by their probability, deterministic for a seed.
@Suite struct FrameToxicTests {
    @Test func dropWithProbabilityOneRemovesEveryFrame() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.drop, ToxicParams(probability: 1)), at: 0)
        for n in 0..<10 { #expect(pipeline.send(frame(UInt64(n)), isWholeFrame: true, at: Int64(n)).isEmpty) }
        #expect(pipeline.stats.framesDropped == 10)
    }

    @Test func dropIsDeterministicForASeedAndNearItsProbability() throws {
        func survivors(seed: UInt64) throws -> [UInt64] {
            var pipeline = FaultPipeline(seed: seed)
            try pipeline.add(spec(.drop, ToxicParams(probability: 0.3)), at: 0)
            return (0..<1000).flatMap { n in
                frames(in: written(pipeline.send(frame(UInt64(n)), isWholeFrame: true, at: 0))).map(sequenceOf)
            }
        }
        let a = try survivors(seed: 42)
        #expect(try survivors(seed: 42) == a)
        #expect(try survivors(seed: 43) != a)
        #expect((630...770).contains(a.count), "kept \(a.count) of 1000 at drop 0.3")
        #expect(a == a.sorted())
    }

    @Test func duplicateSendsTheFrameTwiceInARow() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.duplicate, ToxicParams(probability: 1)), at: 0)
        let out = frames(in: written(pipeline.send(frame(7), isWholeFrame: true, at: 0)))
        #expect(out == [frame(7), frame(7)])
    }

    @Test func corruptFlipsOneBitTheCRCCatchesAndNeverTheLengthOrCheckedHeader() throws {
        for seed in UInt64(0)..<300 {
            var pipeline = FaultPipeline(seed: seed)
            try pipeline.add(spec(.corrupt, ToxicParams(probability: 1)), at: 0)
            let original = frame(seed, body: "{\"state\":\"arriving\"}")
            let out = written(pipeline.send(original, isWholeFrame: true, at: 0))
            #expect(out.count == original.count)
            let differing = zip(out, original).map { ($0 ^ $1).nonzeroBitCount }.reduce(0, +)
            #expect(differing == 1)
            #expect(out[0..<8] == original[0..<8], "length, version, type and flags untouched")
            #expect(out[16..<20] == original[16..<20], "topicLength and reserved untouched")
            #expect(!crcMatches(out), "seed \(seed): the CRC must catch it")
        }
    }

    @Test func frameToxicsActOnPushMessagesUnlessToldOtherwise() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.drop, ToxicParams(probability: 1)), at: 0)
        let ping = frame(0, topic: "", body: "{\"t1\":5}", type: 0x08)
        let welcome = frame(0, topic: "", body: "{}", type: 0x02)
        #expect(written(pipeline.send(welcome, isWholeFrame: true, at: 0)) == welcome)
        #expect(written(pipeline.send(ping, isWholeFrame: true, at: 0)) == ping)
        #expect(pipeline.send(frame(1), isWholeFrame: true, at: 0).isEmpty, "EVENT dropped")
        #expect(pipeline.send(frame(2, type: 0x05), isWholeFrame: true, at: 0).isEmpty, "PUBLISH dropped")

        var probes = FaultPipeline(seed: 1)
        try probes.add(spec(.drop, ToxicParams(probability: 1, frameTypes: [0x08])), at: 0)
        #expect(probes.send(ping, isWholeFrame: true, at: 0).isEmpty, "PING dropped when asked")
        #expect(written(probes.send(frame(1), isWholeFrame: true, at: 0)) == frame(1))
    }

    @Test func reorderPermutesWithinTheWindowAndReleasesEverything() throws {
        for seed in UInt64(0)..<20 {
            var pipeline = FaultPipeline(seed: seed)
            try pipeline.add(spec(.reorder, ToxicParams(delayMs: 100, probability: 0.5, window: 3)), at: 0)
            let inputs = (0..<200).map { (atMs: Int64($0 * 5), bytes: frame(UInt64($0))) }
            let log = drive(&pipeline, inputs, until: 10_000)
            let order = frames(in: written(log.map(\.action))).map { Int(sequenceOf($0)) }
            #expect(order.sorted() == Array(0..<200), "every frame delivered once")
            #expect(order != Array(0..<200), "seed \(seed): something was reordered")
            for (position, n) in order.enumerated() { #expect(abs(position - n) < 3, "displacement within window") }
            #expect(!pipeline.isActive || pipeline.nextDeadlineMs == nil)
        }
    }

    @Test func reorderFlushesAHeldFrameAfterItsDelayWhenNothingFollows() throws {
        var pipeline = FaultPipeline(seed: 3)
        try pipeline.add(spec(.reorder, ToxicParams(delayMs: 40, probability: 1, window: 2)), at: 0)
        #expect(pipeline.send(frame(1), isWholeFrame: true, at: 10).isEmpty)
        #expect(pipeline.nextDeadlineMs == 50)
        #expect(pipeline.advance(to: 49).isEmpty)
        #expect(pipeline.advance(to: 50) == [.write(frame(1), atMs: 50)])
    }

    @Test func reorderWithWindowTwoShufflesEachPairAndIsDeterministic() throws {
        func order(seed: UInt64) throws -> [UInt64] {
            var pipeline = FaultPipeline(seed: seed)
            try pipeline.add(spec(.reorder, ToxicParams(probability: 1, window: 2)), at: 0)
            var out: [FaultAction] = []
            for n in 1...40 { out += pipeline.send(frame(UInt64(n)), isWholeFrame: true, at: 0) }
            return frames(in: written(out)).map(sequenceOf)
        }
        let a = try order(seed: 9)
        #expect(try order(seed: 9) == a)
        for pair in stride(from: 0, to: 40, by: 2) {
            #expect(Set(a[pair...pair + 1]) == [UInt64(pair + 1), UInt64(pair + 2)])
        }
        #expect(a != (1...40).map(UInt64.init), "some pair was swapped")
    }

    @Test func removingReorderReleasesHeldFramesInOrder() throws {
        var pipeline = FaultPipeline(seed: 3)
        try pipeline.add(spec(.reorder, ToxicParams(probability: 1, window: 3), id: "r"), at: 0)
        _ = pipeline.send(frame(1), isWholeFrame: true, at: 0)
        _ = pipeline.send(frame(2), isWholeFrame: true, at: 0)
        #expect(frames(in: written(pipeline.remove(id: "r", at: 5))).map(sequenceOf) == [1, 2])
        #expect(!pipeline.isActive)
    }
}
