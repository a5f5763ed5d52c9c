import LiveBusFaults
import Testing

/// `latency`, `bandwidth`, `slicer`, `limit_data`, `slow_close` on a virtual clock.
@Suite struct StreamToxicTests {
    @Test func latencyDelaysByItsMilliseconds() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.latency, ToxicParams(latencyMs: 100)), at: 0)
        #expect(pipeline.send(frame(1), isWholeFrame: true, at: 10).isEmpty)
        #expect(pipeline.nextDeadlineMs == 110)
        #expect(pipeline.advance(to: 109).isEmpty)
        #expect(pipeline.advance(to: 110) == [.write(frame(1), atMs: 110)])
        #expect(pipeline.nextDeadlineMs == nil)
    }

    @Test func jitterNeverReordersFramesSentCloseTogether() throws {
        var pipeline = FaultPipeline(seed: 5)
        try pipeline.add(spec(.latency, ToxicParams(latencyMs: 100, jitterMs: 80)), at: 0)
        let log = drive(&pipeline, (0..<300).map { (atMs: Int64($0), bytes: frame(UInt64($0))) }, until: 10_000)
        let out = writes(log.map(\.action))
        let sent: [UInt64] = (0..<300).map { UInt64($0) }
        let received: [UInt64] = out.map { sequenceOf($0.bytes) }
        #expect(received == sent, "order kept")
        #expect(out.map(\.atMs) == out.map(\.atMs).sorted())
        for entry in log { if case .write(_, let atMs) = entry.action { #expect(atMs == entry.executedAtMs) } }
    }

    @Test func jitterSpreadsDelaysOverLatencyPlusOrMinusJitter() throws {
        var pipeline = FaultPipeline(seed: 5)
        try pipeline.add(spec(.latency, ToxicParams(latencyMs: 100, jitterMs: 80)), at: 0)
        let log = drive(&pipeline, (0..<300).map { (atMs: Int64($0 * 200), bytes: frame(UInt64($0))) }, until: 100_000)
        let delays = writes(log.map(\.action)).enumerated().map { $0.element.atMs - Int64($0.offset * 200) }
        #expect(delays.count == 300)
        #expect(delays.allSatisfy { (20..<180).contains($0) })
        #expect(delays.min()! < 40 && delays.max()! > 160, "the whole range is used: \(delays.min()!)…\(delays.max()!)")
    }

    @Test func removingLatencyDoesNotLetLaterBytesOvertake() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.latency, ToxicParams(latencyMs: 100), id: "l"), at: 0)
        _ = pipeline.send(frame(1), isWholeFrame: true, at: 0)
        #expect(pipeline.remove(id: "l", at: 10).isEmpty)
        #expect(pipeline.isActive, "bytes in flight keep the pipeline in the path")
        #expect(pipeline.send(frame(2), isWholeFrame: true, at: 20).isEmpty)
        #expect(pipeline.advance(to: 100) == [.write(frame(1), atMs: 100), .write(frame(2), atMs: 100)])
        #expect(!pipeline.isActive)
    }

    @Test func bandwidthWritesEachHundredMillisecondSliceWhenItHasBeenTransmitted() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.bandwidth, ToxicParams(rateKBps: 10)), at: 0)
        let bytes = [UInt8](repeating: 7, count: 2500)
        #expect(pipeline.send(bytes, isWholeFrame: false, at: 0).isEmpty)
        let log = drive(&pipeline, [], until: 1000)
        #expect(writes(log.map(\.action)).map(\.atMs) == [100, 200, 250])
        #expect(writes(log.map(\.action)).map(\.bytes.count) == [1000, 1000, 500])
        #expect(pipeline.send([1], isWholeFrame: false, at: 250).isEmpty, "one byte at 10 KB/s takes 0.1 ms")
        #expect(pipeline.advance(to: 251) == [.write([1], atMs: 251)])
    }

    @Test func slicerCutsPiecesOfAverageAndVariationWithTheDelayBetween() throws {
        var pipeline = FaultPipeline(seed: 2)
        try pipeline.add(spec(.slicer, ToxicParams(averageSize: 10, sizeVariation: 4, delayUs: 2000)), at: 0)
        let original = frame(1, body: String(repeating: "x", count: 200))
        let log = drive(&pipeline, [(atMs: 5, bytes: original)], until: 1000)
        let out = writes(log.map(\.action))
        #expect(out.flatMap(\.bytes) == original)
        for piece in out.dropLast() { #expect((6...14).contains(piece.bytes.count)) }
        for (k, piece) in out.enumerated() { #expect(piece.atMs == 5 + Int64(2 * k)) }
    }

    @Test func limitDataDeliversExactlyItsBytesThenCloses() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.limitData, ToxicParams(bytes: 50)), at: 0)
        let a = frame(1)
        var out = pipeline.send(a, isWholeFrame: true, at: 0)
        out += pipeline.send(frame(2), isWholeFrame: true, at: 1)
        out += pipeline.send(frame(3), isWholeFrame: true, at: 2)
        #expect(written(out) == Array((a + frame(2)).prefix(50)))
        #expect(out.last == .closeGracefully(atMs: 1))
        #expect(pipeline.isClosed)
        #expect(pipeline.stats.bytesDiscarded == a.count * 3 - 50)
    }

    @Test func closeComesAfterBytesInFlightAndSlowCloseDelaysIt() throws {
        var plain = FaultPipeline(seed: 1)
        try plain.add(spec(.latency, ToxicParams(latencyMs: 30)), at: 0)
        _ = plain.send(frame(1), isWholeFrame: true, at: 0)
        #expect(plain.close(at: 10).isEmpty)
        #expect(plain.advance(to: 30) == [.write(frame(1), atMs: 30), .closeGracefully(atMs: 30)])

        var slow = FaultPipeline(seed: 1)
        try slow.add(spec(.slowClose, ToxicParams(delayMs: 500)), at: 0)
        #expect(slow.send(frame(1), isWholeFrame: true, at: 0) == [.write(frame(1), atMs: 0)])
        #expect(slow.close(at: 10).isEmpty)
        #expect(slow.send(frame(2), isWholeFrame: true, at: 20).isEmpty, "nothing after a close")
        #expect(slow.nextDeadlineMs == 510)
        #expect(slow.advance(to: 510) == [.closeGracefully(atMs: 510)])
        #expect(slow.nextDeadlineMs == nil)
    }

    @Test func noToxicsMeansInactiveAndImmediate() {
        var pipeline = FaultPipeline(seed: 1)
        #expect(!pipeline.isActive)
        #expect(pipeline.send(frame(1), isWholeFrame: true, at: 3) == [.write(frame(1), atMs: 3)])
        #expect(pipeline.close(at: 4) == [.closeGracefully(atMs: 4)])
    }
}

/// Cost: a large backlog behind `bandwidth` drains in linear time.
@Suite struct PipelineCostTests {
    @Test func aMegabyteBehindASlowLinkDrainsInOrder() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.bandwidth, ToxicParams(rateKBps: 0.5)), at: 0)
        let frames = (0..<1000).map { frame(UInt64($0), body: String(repeating: "z", count: 1000)) }
        var out: [FaultAction] = []
        for f in frames { out += pipeline.send(f, isWholeFrame: true, at: 0) }
        #expect(out.isEmpty)
        out = pipeline.advance(to: 10_000_000)
        #expect(written(out) == frames.flatMap { $0 })
        #expect(writes(out).count == 1000 * 21, "each 1033-byte frame in 50-byte slices (100 ms at 0.5 KB/s)")
        #expect(writes(out).last?.atMs == 2_066_000, "1 033 000 bytes at 500 bytes/s")
        #expect(pipeline.nextDeadlineMs == nil)
    }
}
