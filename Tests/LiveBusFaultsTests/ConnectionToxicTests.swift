import LiveBusFaults
import Testing

/// `timeout`, `reset_peer`, `partition`, `down`, toxicity.
@Suite struct ConnectionToxicTests {
    @Test func timeoutZeroBlackholesUntilRemovedAndLosesWhatWasSent() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.timeout, ToxicParams(timeoutMs: 0), id: "t"), at: 0)
        #expect(pipeline.isBlackholed)
        #expect(pipeline.send(frame(1), isWholeFrame: true, at: 5).isEmpty)
        #expect(pipeline.nextDeadlineMs == nil, "never closes")
        #expect(pipeline.advance(to: 1_000_000).isEmpty)
        #expect(pipeline.remove(id: "t", at: 2000).isEmpty, "nothing is released")
        #expect(pipeline.send(frame(2), isWholeFrame: true, at: 2001) == [.write(frame(2), atMs: 2001)])
        #expect(pipeline.stats.bytesBlackholed == frame(1).count)
    }

    @Test func timeoutDiscardsBytesInFlightButFinishesAFramePartlyWritten() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.slicer, ToxicParams(averageSize: 10, sizeVariation: 0, delayUs: 10_000)), at: 0)
        let first = frame(1)
        var out = pipeline.send(first, isWholeFrame: true, at: 0)
        out += pipeline.send(frame(2), isWholeFrame: true, at: 0)
        #expect(written(out) == Array(first.prefix(10)))
        out += try pipeline.add(spec(.timeout), at: 5)
        out += drive(&pipeline, [], until: 10_000).map(\.action)
        #expect(written(out) == first, "the rest of frame 1, none of frame 2: the stream stays decodable")
    }

    @Test func timeoutWithMillisecondsClosesThen() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.latency, ToxicParams(latencyMs: 50)), at: 0)
        _ = pipeline.send(frame(1), isWholeFrame: true, at: 0)
        try pipeline.add(spec(.timeout, ToxicParams(timeoutMs: 300)), at: 10)
        #expect(pipeline.nextDeadlineMs == 310)
        #expect(pipeline.advance(to: 309).isEmpty, "frame 1 was in flight: discarded")
        #expect(pipeline.advance(to: 310) == [.closeGracefully(atMs: 310)])
        #expect(pipeline.isClosed)
    }

    @Test func resetPeerLetsDataThroughUntilItResets() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.resetPeer, ToxicParams(timeoutMs: 200)), at: 100)
        #expect(pipeline.send(frame(1), isWholeFrame: true, at: 150) == [.write(frame(1), atMs: 150)])
        #expect(pipeline.advance(to: 299).isEmpty)
        #expect(pipeline.send(frame(2), isWholeFrame: true, at: 300) == [.reset(atMs: 300)])
        #expect(pipeline.send(frame(3), isWholeFrame: true, at: 301).isEmpty)
        #expect(pipeline.close(at: 302).isEmpty)
    }

    @Test func resetPeerZeroResetsAtOnceAndDiscardsWhatIsInFlight() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.latency, ToxicParams(latencyMs: 50)), at: 0)
        _ = pipeline.send(frame(1), isWholeFrame: true, at: 0)
        #expect(try pipeline.add(spec(.resetPeer), at: 10) == [.reset(atMs: 10)])
        #expect(pipeline.stats.bytesDiscarded == frame(1).count)
    }

    @Test func partitionBlackholesForItsDurationThenHealsItself() throws {
        let partition = spec(.partition, ToxicParams(durationMs: 1000), id: "p")
        #expect(partition.appliesTo(.downstream) && partition.appliesTo(.upstream))
        var down = FaultPipeline(seed: 1)
        var up = FaultPipeline(seed: 2)
        try down.add(partition, at: 0)
        try up.add(partition, at: 0)
        #expect(down.send(frame(1), isWholeFrame: true, at: 10).isEmpty)
        #expect(up.send(frame(1), isWholeFrame: false, at: 10).isEmpty)
        #expect(down.nextDeadlineMs == 1000)
        #expect(down.advance(to: 1000).isEmpty)
        #expect(down.toxics.isEmpty && !down.isActive)
        #expect(down.send(frame(2), isWholeFrame: true, at: 1001) == [.write(frame(2), atMs: 1001)])
        _ = up.advance(to: 1000)
        #expect(up.send(frame(2), isWholeFrame: false, at: 1000) == [.write(frame(2), atMs: 1000)])
    }

    @Test func downRefusesNewConnections() {
        #expect(FaultPipeline.refusesConnections([spec(.down)]))
        #expect(!FaultPipeline.refusesConnections([spec(.latency)]))
        #expect(FaultPipeline.refusesConnections(NetworkPreset.airplane.toxics))
    }

    @Test func toxicityIsDrawnOncePerPipelineAndRepeatsForASeed() throws {
        func activeCount(seed: UInt64) throws -> Int {
            (0..<400).reduce(0) { count, session in
                var pipeline = FaultPipeline(seed: seed &+ UInt64(session))
                _ = try? pipeline.add(spec(.drop, ToxicParams(probability: 1), toxicity: 0.25), at: 0)
                return count + (pipeline.activeToxicIDs.isEmpty ? 0 : 1)
            }
        }
        let n = try activeCount(seed: 77)
        #expect(try activeCount(seed: 77) == n)
        #expect((70...130).contains(n), "\(n) of 400 sessions affected at toxicity 0.25")

        var unaffected = FaultPipeline(seed: 1)
        try unaffected.add(spec(.drop, ToxicParams(probability: 1), toxicity: 0), at: 0)
        for n in 0..<20 {
            #expect(
                !unaffected.send(frame(UInt64(n)), isWholeFrame: true, at: 0).isEmpty,
                "a toxicity-0 toxic never acts"
            )
        }
    }

    @Test func aToxicsChancesDoNotDependOnOtherToxics() throws {
        func survivors(extra: Bool) throws -> [UInt64] {
            var pipeline = FaultPipeline(seed: 11)
            if extra { try pipeline.add(spec(.latency, ToxicParams(latencyMs: 0, jitterMs: 5)), at: 0) }
            try pipeline.add(spec(.drop, ToxicParams(probability: 0.5), id: "drop"), at: 0)
            let log = drive(&pipeline, (0..<100).map { (atMs: Int64($0 * 20), bytes: frame(UInt64($0))) }, until: 5000)
            return frames(in: written(log.map(\.action))).map(sequenceOf)
        }
        #expect(try survivors(extra: true) == survivors(extra: false))
    }
}

/// `SessionFaults` routes toxics to the right pipelines.
@Suite struct SessionFaultsTests {
    @Test func partitionGoesToBothDirectionsOthersToTheirOwn() throws {
        var session = SessionFaults(seed: 7, session: "fold")
        _ = try session.add(spec(.latency, direction: .upstream), at: 0)
        _ = try session.add(spec(.partition, ToxicParams(durationMs: 50), id: "p"), at: 0)
        #expect(session.downstream.toxics.map(\.id) == ["p"])
        #expect(session.upstream.toxics.map(\.id) == ["latency_upstream", "p"])
        #expect(session.toxics.map(\.id) == ["p", "latency_upstream"])
        #expect(session.nextDeadlineMs == 50)
        _ = session.downstream.advance(to: 50)
        _ = session.upstream.advance(to: 50)
        #expect(session.toxics.map(\.id) == ["latency_upstream"])
        _ = session.remove(id: "latency_upstream", at: 60)
        #expect(!session.isActive)
    }

    @Test func aConflictInEitherDirectionAddsNothing() throws {
        var session = SessionFaults(seed: 7, session: "fold")
        _ = try session.add(spec(.timeout, direction: .upstream, id: "t"), at: 0)
        #expect(throws: FaultError.self) { try session.add(spec(.partition, id: "t"), at: 0) }
        #expect(session.downstream.toxics.isEmpty)
        #expect(throws: FaultError.self) { try session.add(spec(.down), at: 0) }
    }

    @Test func sessionsWithTheSameSeedButOtherNamesDrawDifferently() throws {
        let affected = (0..<200).filter { n in
            var session = SessionFaults(seed: 3, session: "phone\(n)")
            _ = try? session.add(spec(.drop, toxicity: 0.5), at: 0)
            return !session.downstream.activeToxicIDs.isEmpty
        }
        #expect((70...130).contains(affected.count))
    }
}
