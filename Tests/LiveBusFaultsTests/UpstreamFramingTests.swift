import LiveBusFaults
import Testing

/// Upstream bytes arrive in arbitrary pieces: faults still act on whole frames and never cut one in two.
@Suite struct UpstreamFramingTests {
    /// A stream of frames of varied sizes.
    static let stream: [UInt8] = (0..<60).flatMap {
        frame(UInt64($0), body: String(repeating: "b", count: $0 * 7 % 50))
    }

    /// `stream` cut into pieces of 1…`maxPiece` bytes, seeded.
    static func pieces(_ bytes: [UInt8], seed: UInt64, maxPiece: Int = 17) -> [[UInt8]] {
        var random = FaultRandom(seed: seed)
        var result: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 1 + random.below(maxPiece))
            result.append(Array(bytes[start..<end]))
            start = end
        }
        return result
    }

    @Test func splitterFindsEveryBoundaryWhereverTheStreamIsCut() {
        let expected = frames(in: Self.stream)
        for cut in [1, 2, 3, 4, 5, 23, 24, 25, 1000] {
            var splitter = FrameSplitter()
            var rebuilt: [[UInt8]] = []
            var current: [UInt8] = []
            for piece in stride(from: 0, to: Self.stream.count, by: cut) {
                let chunk = Array(Self.stream[piece..<min(Self.stream.count, piece + cut)])
                for segment in splitter.split(chunk) {
                    #expect(segment.startsFrame == current.isEmpty)
                    current += segment.bytes
                    if segment.endsFrame {
                        rebuilt.append(current)
                        current = []
                    }
                }
            }
            #expect(rebuilt == expected, "cut every \(cut) bytes")
            #expect(splitter.isAtBoundary)
        }
    }

    @Test func aBadLengthPassesUnframedSoTheDaemonReportsIt() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.drop, ToxicParams(probability: 1), direction: .upstream), at: 0)
        let bad: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3]
        #expect(written(pipeline.send(bad, isWholeFrame: false, at: 0)) == bad)
        #expect(written(pipeline.send([9], isWholeFrame: false, at: 1)) == [9])
    }

    @Test func upstreamDropActsOnWholeFramesAcrossPieces() throws {
        for seed in UInt64(0)..<10 {
            var pipeline = FaultPipeline(seed: seed)
            try pipeline.add(spec(.drop, ToxicParams(probability: 0.4), direction: .upstream), at: 0)
            var out: [FaultAction] = []
            for piece in Self.pieces(Self.stream, seed: seed) {
                out += pipeline.send(piece, isWholeFrame: false, at: 0)
            }
            let received = frames(in: written(out))
            #expect(received.flatMap { $0 } == written(out), "nothing but whole frames")
            #expect(received.allSatisfy(crcMatches))
            let sequences = received.map(sequenceOf)
            #expect(sequences == sequences.sorted() && sequences.count < 60 && sequences.count > 20)
            #expect(!pipeline.isActive || pipeline.toxics.count == 1)
        }
    }

    @Test func upstreamCorruptIsCaughtByTheCRC() throws {
        var pipeline = FaultPipeline(seed: 4)
        try pipeline.add(spec(.corrupt, ToxicParams(probability: 1), direction: .upstream), at: 0)
        var out: [FaultAction] = []
        for piece in Self.pieces(Self.stream, seed: 4) { out += pipeline.send(piece, isWholeFrame: false, at: 0) }
        let received = frames(in: written(out))
        #expect(received.count == 60)
        #expect(received.allSatisfy { !crcMatches($0) })
    }

    @Test func aPartitionThatHealsMidFrameLeavesTheStreamDecodable() throws {
        for seed in UInt64(0)..<20 {
            var pipeline = FaultPipeline(seed: seed)
            try pipeline.add(spec(.latency, ToxicParams(latencyMs: 3, jitterMs: 2), direction: .upstream), at: 0)
            var out: [FaultAction] = []
            var now: Int64 = 0
            for (k, piece) in Self.pieces(Self.stream, seed: seed, maxPiece: 9).enumerated() {
                now += 1
                if k == 40 { out += try pipeline.add(spec(.partition, ToxicParams(durationMs: 97), id: "p"), at: now) }
                out += pipeline.send(piece, isWholeFrame: false, at: now)
                out += pipeline.advance(to: now)
            }
            out += pipeline.advance(to: now + 100)
            let bytes = written(out)
            let received = frames(in: bytes)
            #expect(received.flatMap { $0 } == bytes, "seed \(seed): whole frames only")
            #expect(received.allSatisfy(crcMatches))
            let sequences = received.map(sequenceOf)
            #expect(sequences == sequences.sorted() && sequences.count < 60)
            #expect(sequences.last == 59, "delivery resumed after healing")
        }
    }

    @Test func theUpstreamPipelineStaysActiveUntilTheFrameBeingReadIsComplete() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.latency, ToxicParams(latencyMs: 0), direction: .upstream, id: "l"), at: 0)
        let whole = frame(1)
        _ = pipeline.send(Array(whole[0..<10]), isWholeFrame: false, at: 0)
        _ = pipeline.remove(id: "l", at: 1)
        #expect(pipeline.isActive, "mid-frame")
        _ = pipeline.send(Array(whole[10...]), isWholeFrame: false, at: 2)
        #expect(!pipeline.isActive)
        var bypassed = FaultPipeline(seed: 1)
        bypassed.noteBypassed(Array(whole[0..<5]))
        #expect(bypassed.isActive, "a bypassed half frame is noted")
    }
}
