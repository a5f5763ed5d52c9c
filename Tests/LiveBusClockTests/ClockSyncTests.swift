import Testing

@testable import LiveBusClock

/// Textbook arithmetic: no frequency tolerance, no timestamp resolution slack.
private let exact = ClockSyncConfiguration(frequencyTolerancePPM: 0, timestampResolutionMilliseconds: 0)

/// One exchange against a client whose clock is `offset` ms ahead: PING leaves at `t1`, takes `down` ms, the client
/// turns around in `turnaround` ms, PONG takes `up` ms.
private func sample(t1: Int64, down: Int64, up: Int64, offset: Int64, turnaround: Int64 = 2) -> ProbeSample {
    ProbeSample(
        serverSend: ServerInstant(millisecondsSinceEpoch: t1),
        clientReceive: ClientInstant(millisecondsSinceEpoch: t1 + down + offset),
        clientSend: ClientInstant(millisecondsSinceEpoch: t1 + down + turnaround + offset),
        serverReceive: ServerInstant(millisecondsSinceEpoch: t1 + down + turnaround + up)
    )
}

private func server(_ ms: Int64) -> ServerInstant { ServerInstant(millisecondsSinceEpoch: ms) }

struct ClockSyncTests {
    /// RFC 5905 §8/§10: one symmetric sample gives θ exactly and an error bound of δ/2.
    @Test func oneSymmetricSampleGivesThetaAndHalfTheDelay() throws {
        var sync = ClockSync(configuration: exact)
        let events = sync.add(sample(t1: 1_000, down: 10, up: 10, offset: 5_000))
        let estimate = try #require(sync.estimate)
        #expect(
            estimate
                == ClockEstimate(
                    offsetMilliseconds: 5_000,
                    driftPPM: 0,
                    errorBoundMilliseconds: 10,
                    driftErrorBoundPPM: 0,
                    roundTripMilliseconds: 20,
                    reference: server(1_011),
                    sampleCount: 1
                )
        )
        #expect(events == [.estimateUpdated(estimate), .converged(estimate)])
    }

    /// RFC 5905 §10: the bound adds the timestamp resolution (2 ms) and the frequency tolerance (500 ppm) over half
    /// the exchange, (22 + 1) / 2 ms: 10 + 2 + 0.00575 ms.
    @Test func defaultBoundAddsResolutionAndFrequencyTolerance() throws {
        var sync = ClockSync()
        _ = sync.add(sample(t1: 1_000, down: 10, up: 10, offset: 5_000))
        let estimate = try #require(sync.estimate)
        #expect(estimate.offsetMilliseconds == 5_000)
        #expect(abs(estimate.errorBoundMilliseconds - 12.005_75) < 1e-9)
        #expect(estimate.driftPPM == 0)
        #expect(estimate.driftErrorBoundPPM == 500)
    }

    /// RFC 5905 §8: asymmetric delay biases one sample by half the difference (here 14 ms), inside its bound δ/2;
    /// a second sample skewed the other way intersects it to the truth ± 2 ms.
    @Test func asymmetricDelaysIntersectToTheTruth() throws {
        var sync = ClockSync(configuration: exact)
        _ = sync.add(sample(t1: 1_000, down: 30, up: 2, offset: 5_000, turnaround: 1))
        let first = try #require(sync.estimate)
        #expect(first.offsetMilliseconds == 5_014)
        #expect(first.errorBoundMilliseconds == 16)
        _ = sync.add(sample(t1: 1_100, down: 2, up: 30, offset: 5_000, turnaround: 1))
        let second = try #require(sync.estimate)
        #expect(second.offsetMilliseconds == 5_000)
        #expect(second.errorBoundMilliseconds == 2)
        #expect(second.sampleCount == 2)
        #expect(second.roundTripMilliseconds == 32)
    }

    /// RFC 5905 §10 clock filter: low-delay samples decide; the offset interval is the truth minus the smallest
    /// downstream delay to the truth plus the smallest upstream delay.
    @Test func lowDelaySamplesDominate() throws {
        var sync = ClockSync(configuration: exact)
        let delays: [(Int64, Int64)] = [(40, 40), (25, 5), (5, 30), (60, 10), (12, 12), (35, 35), (300, 400)]
        for (i, d) in delays.enumerated() {
            _ = sync.add(sample(t1: 1_000 + Int64(i) * 500, down: d.0, up: d.1, offset: 1_234))
        }
        let estimate = try #require(sync.estimate)
        #expect(estimate.offsetMilliseconds == 1_234)
        #expect(estimate.errorBoundMilliseconds == 5)
        #expect(estimate.roundTripMilliseconds == 24)
        #expect(estimate.sampleCount == 7)
    }

    /// Task brief (drift): at +200 ppm a pure offset decays by 24 ms over 120 s; the window's minimax fit finds the
    /// frequency (probes every 2 s, fixed 10 ms delays: every line within ±12 ms of the truth over 120 s, so the
    /// drift bound is 24 ms / 120 s = 200 ppm), and the bound stays honest when extrapolating.
    @Test func driftIsEstimatedOverTheWindow() throws {
        var sync = ClockSync()
        let clock = SimulatedClientClock(skewMilliseconds: 90_000, driftPPM: 200, epoch: server(0))
        var path = SimulatedProbePath(downstreamMilliseconds: 10...10, upstreamMilliseconds: 10...10, seed: 1)
        for i in 0...60 {
            _ = sync.add(path.exchange(at: server(Int64(i) * 2_000), clock: clock))
        }
        let estimate = try #require(sync.estimate)
        #expect(estimate.reference == server(120_010))
        #expect(estimate.sampleCount == 61)
        #expect(abs(estimate.driftPPM - 200) < 1)
        #expect(abs(estimate.driftErrorBoundPPM - 200) < 1)
        #expect(abs(estimate.offsetMilliseconds - clock.offsetMilliseconds(at: estimate.reference)) < 0.6)
        #expect(estimate.errorBoundMilliseconds < 12.1)
        #expect(sync.samples.count == 61)
        // A target pushed at the reference has moved 4 ms on the client clock 20 s later (kept), 6 ms 30 s later
        // (re-sent: the threshold is 5 ms).
        let pushed = try #require(sync.toClient(server(900_000), now: estimate.reference))
        #expect(!sync.needsReconversion(pushed, now: server(140_010)))
        #expect(sync.needsReconversion(pushed, now: server(150_010)))
        // The estimate alone extrapolates the same way as the estimator.
        #expect(
            abs(estimate.offsetMilliseconds(at: server(180_010)) - sync.offsetMilliseconds(at: server(180_010))!) < 1e-6
        )
        // 60 s later (24 ms of drift since the last sample at 200 ppm, none of it seen) still right within a ms;
        // the bound has grown by the drift bound · 60 s and covers it.
        let later = server(180_010)
        let error = try #require(sync.offsetMilliseconds(at: later)) - clock.offsetMilliseconds(at: later)
        #expect(abs(error) < 1)
        let bound = try #require(sync.errorBoundMilliseconds(at: later))
        #expect(bound >= abs(error))
        #expect(bound < 24.1)
    }

    /// RFC 5905 §10 with a known line: offsets 1 000 + 1 ms every 5 s (200 ppm), 10 ms each way, 25 samples over
    /// 120 s. Every allowed line stays within 10 + s ms of the truth at every sample (s = 500 ppm · 21 ms / 2 =
    /// 0.005 25 ms), so the bound at the newest sample is 10.005 25 ms and the drift bound 2 · 10.005 25 / 120 000.
    @Test func driftOfAKnownLineHasExactBounds() throws {
        var sync = ClockSync(configuration: ClockSyncConfiguration(timestampResolutionMilliseconds: 0))
        for k in 0...24 {
            _ = sync.add(sample(t1: Int64(k) * 5_000, down: 10, up: 10, offset: 1_000 + Int64(k), turnaround: 0))
        }
        let estimate = try #require(sync.estimate)
        #expect(estimate.reference == server(120_010))
        #expect(abs(estimate.offsetMilliseconds - 1_024) < 1e-9)
        #expect(abs(estimate.driftPPM - 200) < 1e-6)
        #expect(abs(estimate.errorBoundMilliseconds - 10.005_25) < 1e-9)
        #expect(abs(estimate.driftErrorBoundPPM - 2 * 10.005_25 / 120_000 * 1e6) < 1e-6)
        #expect(estimate.roundTripMilliseconds == 20)
    }

    /// Without probes spanning enough time the frequency tolerance (500 ppm) caps the drift; the estimate stays
    /// within the truth's bound but extrapolation is pessimistic: a burst cannot measure drift.
    @Test func burstAloneCannotMeasureDrift() throws {
        var sync = ClockSync()
        let clock = SimulatedClientClock(skewMilliseconds: 0, driftPPM: 200, epoch: server(0))
        var path = SimulatedProbePath(downstreamMilliseconds: 10...10, upstreamMilliseconds: 10...10, seed: 1)
        for i in 0..<8 { _ = sync.add(path.exchange(at: server(Int64(i) * 200), clock: clock)) }
        let estimate = try #require(sync.estimate)
        #expect(estimate.driftErrorBoundPPM == 500)
        #expect(abs(estimate.driftPPM) < 1e-9)
    }

    /// RFC 5905 §11.3: a +30 s step is held back once (popcorn), then confirmed by the next sample; the window
    /// restarts at the new offset. While it is held the reported bound covers the step.
    @Test func stepIsConfirmedByTheNextSample() throws {
        var sync = ClockSync(configuration: exact)
        for i in 0..<10 { _ = sync.add(sample(t1: Int64(i) * 1_000, down: 10, up: 10, offset: 5_000)) }
        let stepped = sample(t1: 10_000, down: 10, up: 10, offset: 35_000)
        #expect(sync.add(stepped) == [.outlierRejected(stepped)])
        #expect(sync.isStepSuspected)
        #expect(sync.offsetMilliseconds(at: server(10_011)) == 5_000)
        #expect(sync.errorBoundMilliseconds(at: server(10_011)) == 30_010)
        #expect(sync.nextProbeDelayMilliseconds(isBackground: true) == 200)
        let events = sync.add(sample(t1: 10_200, down: 10, up: 10, offset: 35_000))
        let estimate = try #require(sync.estimate)
        #expect(estimate.offsetMilliseconds == 35_000)
        #expect(estimate.errorBoundMilliseconds == 10)
        #expect(estimate.sampleCount == 2)
        #expect(
            events == [
                .stepDetected(fromOffset: 5_000, toOffset: 35_000), .estimateUpdated(estimate), .converged(estimate),
            ]
        )
        #expect(!sync.isStepSuspected)
    }

    /// RFC 5905 §10 popcorn spike: a lone sample that fits no allowed offset is dropped when the next one fits the
    /// window again; the estimate never moves towards it.
    @Test func loneOutlierIsDropped() throws {
        var sync = ClockSync(configuration: exact)
        for i in 0..<5 { _ = sync.add(sample(t1: Int64(i) * 1_000, down: 10, up: 10, offset: 5_000)) }
        let spike = sample(t1: 5_000, down: 10, up: 10, offset: 5_500)
        #expect(sync.add(spike) == [.outlierRejected(spike)])
        let events = sync.add(sample(t1: 6_000, down: 10, up: 10, offset: 5_000))
        let estimate = try #require(sync.estimate)
        #expect(events == [.estimateUpdated(estimate)])
        #expect(estimate.offsetMilliseconds == 5_000)
        #expect(estimate.sampleCount == 6)
        #expect(!sync.isStepSuspected)
    }

    /// Two different outliers in a row do not make a step: each only replaces the held one.
    @Test func disagreeingOutliersDoNotStep() throws {
        var sync = ClockSync(configuration: exact)
        for i in 0..<5 { _ = sync.add(sample(t1: Int64(i) * 1_000, down: 10, up: 10, offset: 5_000)) }
        let first = sample(t1: 5_000, down: 10, up: 10, offset: 9_000)
        let second = sample(t1: 5_200, down: 10, up: 10, offset: 1_000)
        #expect(sync.add(first) == [.outlierRejected(first)])
        #expect(sync.add(second) == [.outlierRejected(second)])
        #expect(sync.estimate?.offsetMilliseconds == 5_000)
    }

    /// RFC 5905 §8: stamps out of causal order, or a round trip over the limit, are refused outright.
    @Test func impossibleOrLooseSamplesAreRefused() {
        var sync = ClockSync()
        let backwards = ProbeSample(
            serverSend: server(1_000),
            clientReceive: ClientInstant(millisecondsSinceEpoch: 2_000),
            clientSend: ClientInstant(millisecondsSinceEpoch: 2_001),
            serverReceive: server(999)
        )
        #expect(sync.add(backwards) == [.sampleRejected(backwards, .causalityViolated)])
        let turnedBack = ProbeSample(
            serverSend: server(1_000),
            clientReceive: ClientInstant(millisecondsSinceEpoch: 2_000),
            clientSend: ClientInstant(millisecondsSinceEpoch: 1_990),
            serverReceive: server(1_020)
        )
        #expect(sync.add(turnedBack) == [.sampleRejected(turnedBack, .causalityViolated)])
        let negativeDelay = sample(t1: 1_000, down: 10, up: 10, offset: 0, turnaround: 30)
        let shrunk = ProbeSample(
            serverSend: negativeDelay.serverSend,
            clientReceive: negativeDelay.clientReceive,
            clientSend: negativeDelay.clientSend,
            serverReceive: server(1_025)
        )
        #expect(sync.add(shrunk) == [.sampleRejected(shrunk, .causalityViolated)])
        let loose = sample(t1: 1_000, down: 3_000, up: 3_000, offset: 0)
        #expect(sync.add(loose) == [.sampleRejected(loose, .roundTripTooLong)])
        #expect(sync.estimate == nil)
        #expect(sync.toClient(server(5), now: server(5)) == nil)
    }

    /// Task brief: every pushed instant carries its client-clock value and its uncertainty in whole ms (bound plus
    /// rounding, rounded up), and the server value for logs; toServer inverts it.
    @Test func conversionCarriesValueUncertaintyAndOriginal() throws {
        var sync = ClockSync(configuration: exact)
        _ = sync.add(sample(t1: 1_000, down: 10, up: 10, offset: -3_600_000))
        let eta = server(1_800_000)
        let converted = try #require(sync.toClient(eta, now: server(1_011)))
        #expect(
            converted
                == ConvertedInstant(
                    client: ClientInstant(millisecondsSinceEpoch: -1_800_000),
                    server: eta,
                    uncertaintyMilliseconds: 11
                )
        )
        #expect(sync.toServer(converted.client, now: server(1_011)) == eta)
    }

    /// RFC 5905 §13 and the task brief: a burst of 8 probes 200 ms apart after the handshake, then intervals that
    /// lengthen as the frequency becomes known, 60 s in the background.
    @Test func probeScheduleBurstsThenAdapts() {
        var sync = ClockSync()
        #expect(sync.nextProbeDelayMilliseconds(isBackground: false) == 200)
        var t: Int64 = 0
        var delays: [Int64] = []
        for _ in 0..<18 {  // 1.4 s of burst, then 500 ppm · 8 s = 4 ms of growth
            let s = sample(t1: t, down: 5, up: 5, offset: 42)
            _ = sync.add(s)
            let delay = sync.nextProbeDelayMilliseconds(isBackground: false)
            delays.append(delay)
            t = s.serverReceive.millisecondsSinceEpoch + delay
        }
        // Burst of 8; then ±500 ppm allows 8 s (4 ms of growth); once the window spans ~56 s the drift bound is
        // 14 ms / 56 s = 250 ppm and 16 s fits.
        #expect(
            delays == [200, 200, 200, 200, 200, 200, 200] + Array(repeating: 8_000, count: 7) + [
                16_000, 16_000, 16_000, 16_000,
            ]
        )
        #expect(sync.nextProbeDelayMilliseconds(isBackground: true) == 60_000)
        #expect(sync.nextProbeDeadline(after: server(100_000), isBackground: true) == server(160_000))
        #expect(sync.nextProbeDeadline(after: server(100_000), isBackground: false) == server(116_000))
    }

    /// Samples that agree only within a sliver (under an eighth of the timestamp resolution) betray a broken line
    /// model and are held back like a sample that does not fit; 1 ms more of overlap and they are accepted.
    @Test func barelyAgreeingSamplesAreHeldBack() {
        var strained = ClockSync()
        _ = strained.add(sample(t1: 1_000, down: 10, up: 10, offset: 5_000))
        let sliver = sample(t1: 1_100, down: 10, up: 10, offset: 5_024)
        #expect(strained.add(sliver) == [.outlierRejected(sliver)])
        var fine = ClockSync()
        _ = fine.add(sample(t1: 1_000, down: 10, up: 10, offset: 5_000))
        _ = fine.add(sample(t1: 1_100, down: 10, up: 10, offset: 5_023))
        #expect(fine.estimate?.sampleCount == 2)
        #expect(!fine.isStepSuspected)
    }
}
