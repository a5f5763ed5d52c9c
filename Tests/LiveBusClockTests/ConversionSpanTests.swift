import Testing

@testable import LiveBusClock

/// ``ClockSync/conversionSpan(at:)``: the whole-ms offset and uncertainty a caller may keep, and for how long.
struct ConversionSpanTests {
    /// What ``ClockSync/toClient(_:now:)`` applies at `now`: the offset added to instant 0 and the uncertainty.
    private func direct(_ sync: ClockSync, _ ms: Int64) -> (Int64, Int)? {
        let now = ServerInstant(millisecondsSinceEpoch: ms)
        guard let c = sync.toClient(ServerInstant(millisecondsSinceEpoch: 0), now: now) else { return nil }
        return (c.client.millisecondsSinceEpoch, c.uncertaintyMilliseconds)
    }

    /// Every millisecond of every span agrees with ``ClockSync/toClient(_:now:)``, for drifting clocks (±300 ppm),
    /// windows of 1–12 samples, and a held outlier (a suspected step, whose bound grows differently); spans are
    /// not all empty (the cache is worth keeping) and never longer than the cap.
    @Test func everyMillisecondOfASpanAgreesWithToClient() throws {
        var random = ClockSimulationRandom(seed: 15)
        var longest: Int64 = 0
        var longestFar: Int64 = 0
        var checked = 0
        for round in 0..<24 {
            let drift = Double(Int(random.next() % 601)) - 300
            // Every third round: a server clock of 2025 and a client counting from its boot (a monotonic clock), so
            // the offset is about −1.76e12 ms and the floating-point margin matters.
            let epoch: Int64 = round % 3 == 0 ? 1_764_000_000_000 : 1_000_000
            let skew = Int64(random.next() % 20_000) - 10_000 - (round % 3 == 0 ? epoch - 86_400_000 : 0)
            let clock = SimulatedClientClock(
                skewMilliseconds: skew,
                driftPPM: drift,
                epoch: ServerInstant(millisecondsSinceEpoch: epoch)
            )
            var path = SimulatedProbePath(
                downstreamMilliseconds: 1...20,
                upstreamMilliseconds: 1...20,
                turnaroundMilliseconds: 1,
                seed: UInt64(round) + 1
            )
            var sync = ClockSync()
            var t = epoch
            for _ in 0..<(1 + Int(random.next() % 12)) {
                _ = sync.add(path.exchange(at: ServerInstant(millisecondsSinceEpoch: t), clock: clock))
                t += 2_000 + Int64(random.next() % 30_000)
            }
            if round % 4 == 3 {
                // A sample 500 ms off the line: held back, widening the bound.
                var s = path.exchange(at: ServerInstant(millisecondsSinceEpoch: t), clock: clock)
                s = ProbeSample(
                    serverSend: s.serverSend,
                    clientReceive: ClientInstant(millisecondsSinceEpoch: s.clientReceive.millisecondsSinceEpoch + 500),
                    clientSend: ClientInstant(millisecondsSinceEpoch: s.clientSend.millisecondsSinceEpoch + 500),
                    serverReceive: s.serverReceive
                )
                _ = sync.add(s)
                #expect(sync.isStepSuspected)
                t += 100
            }
            var now = t
            let end = t + 20_000
            while now < end {
                let span = try #require(sync.conversionSpan(at: ServerInstant(millisecondsSinceEpoch: now)))
                #expect(span.validThrough >= now)
                #expect(span.validThrough - now <= ClockSync.maximumConversionSpanMilliseconds)
                longest = max(longest, span.validThrough - now)
                if round % 3 == 0 { longestFar = max(longestFar, span.validThrough - now) }
                for ms in now...span.validThrough {
                    let d = try #require(direct(sync, ms))
                    #expect(d.0 == span.offset && d.1 == span.uncertainty, "at \(ms), span from \(now)")
                    checked += 1
                }
                now = span.validThrough + 1 + Int64(random.next() % 50)
            }
        }
        #expect(checked > 100_000)
        #expect(longest >= 100)
        #expect(longestFar >= 100, "spans with a far client clock")
    }

    /// Before the first sample there is nothing to keep: `nil`, as ``ClockSync/toClient(_:now:)``.
    @Test func nilBeforeTheFirstSample() {
        #expect(ClockSync().conversionSpan(at: ServerInstant(millisecondsSinceEpoch: 5)) == nil)
    }
}
