import Testing

@testable import LiveBusClock

/// ``ClockConversionMap`` gives what ``ClockSync/toClient(_:now:)`` gives, to the bit, for every estimate it is built
/// from: the EVENT trailer's instants and uncertainty (PROTOCOL.md §5.1) do not depend on which path converted them.
struct ClockConversionMapTests {
    /// A small deterministic generator (the test needs no real randomness, only many different estimates).
    private struct Mix {
        var state: UInt64
        mutating func next(_ range: ClosedRange<Int64>) -> Int64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let span = UInt64(range.upperBound - range.lowerBound + 1)
            return range.lowerBound + Int64((state >> 33) % span)
        }
    }

    private func exchange(t1: Int64, down: Int64, up: Int64, offset: Int64, turnaround: Int64) -> ProbeSample {
        ProbeSample(
            serverSend: ServerInstant(millisecondsSinceEpoch: t1),
            clientReceive: ClientInstant(millisecondsSinceEpoch: t1 + down + offset),
            clientSend: ClientInstant(millisecondsSinceEpoch: t1 + down + turnaround + offset),
            serverReceive: ServerInstant(millisecondsSinceEpoch: t1 + down + turnaround + up)
        )
    }

    private func expectSame(_ sync: ClockSync, at ms: Int64, _ note: Comment) {
        let now = ServerInstant(millisecondsSinceEpoch: ms)
        guard let full = sync.toClient(ServerInstant(millisecondsSinceEpoch: 0), now: now) else {
            #expect(sync.conversionMap == nil, note)
            return
        }
        // An estimate of more vertices than the map holds has no map: the caller converts through toClient.
        guard let map = sync.conversionMap else { return }
        let (offset, uncertainty) = map.conversion(at: now)
        #expect(offset == full.client.millisecondsSinceEpoch, note)
        #expect(uncertainty == full.uncertaintyMilliseconds, note)
    }

    /// Before any sample there is nothing to convert with.
    @Test func noMapBeforeTheFirstSample() {
        #expect(ClockSync().conversionMap == nil)
    }

    /// Many estimates (drifting clocks, asymmetric delays, held outliers and steps), each evaluated at many instants
    /// after its newest sample: the map and toClient agree on the offset and the uncertainty every time.
    @Test func agreesWithToClientForEveryEstimate() {
        var mix = Mix(state: 15)
        var mapped = 0
        var held = 0
        for run in 0..<40 {
            var sync = ClockSync()
            var t1: Int64 = 1_700_000_000_000 + Int64(run) * 1_000_000
            var offset = mix.next(-50_000...50_000)
            let driftPPM = mix.next(-300...300)
            for _ in 0..<24 {
                t1 += mix.next(50...20_000)
                if mix.next(0...15) == 0 { offset += mix.next(-30_000...30_000) }  // a step (or an outlier)
                let drifted = offset + (t1 - 1_700_000_000_000) * driftPPM / 1_000_000
                _ = sync.add(
                    exchange(
                        t1: t1,
                        down: mix.next(0...40),
                        up: mix.next(0...40),
                        offset: drifted,
                        turnaround: mix.next(0...5)
                    )
                )
                if sync.conversionMap != nil { mapped += 1 }
                if sync.isStepSuspected { held += 1 }
                for _ in 0..<8 {
                    expectSame(sync, at: t1 + mix.next(-2_000...600_000), "run \(run) at \(t1)")
                }
            }
        }
        // The map is the common case, and the held-sample term was exercised.
        #expect(mapped > 40 * 24 / 2)
        #expect(held > 0)
    }

    /// The map's roundings (no libm) give what `Int64(saturating:)` and `.rounded(.up)` give, at the halves, next to
    /// them, at the 2⁵² edge, beyond it, and for NaN and the infinities.
    @Test func roundingsMatchTheSaturatingConversions() {
        var values: [Double] = [
            0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994, 1e-300, -1e-300,
            0x1p52 - 0.5, -(0x1p52 - 0.5), 0x1p52, -0x1p52, 0x1p53 + 2, 1e19, -1e19, .nan, .infinity, -.infinity,
            .greatestFiniteMagnitude, 123_456.75, -123_456.25,
        ]
        var mix = Mix(state: 7)
        for _ in 0..<2_000 {
            let whole = Double(mix.next(-10_000_000...10_000_000))
            values.append(whole + Double(mix.next(0...1_000)) / 1_000)
            values.append((whole + 0.5).nextUp)
            values.append((whole + 0.5).nextDown)
        }
        for v in values {
            #expect(ClockConversionMap.roundedToNearest(v) == Int64(saturating: v), "\(v)")
            #expect(ClockConversionMap.roundedUp(v) == Int64(saturating: v.rounded(.up)), "\(v)")
        }
    }
}
