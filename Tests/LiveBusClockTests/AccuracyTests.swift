import Testing

@testable import LiveBusClock

/// Drives one session the way the daemon does: probes on ``ClockSync/nextProbeDelayMilliseconds(isBackground:)``,
/// samples through a seeded ``SimulatedProbePath``, and checks the estimate against the simulated clock's truth at
/// every display tick.
struct SessionRun {
    var sync = ClockSync()
    var clock: SimulatedClientClock
    var path: SimulatedProbePath
    /// Largest |estimated − true offset| seen at display ticks, ms.
    var worstError = 0.0
    /// Ticks where the error exceeded the reported bound (must stay 0).
    var uncoveredTicks = 0
    /// Ticks where the error exceeded 25 ms.
    var ticksOver25 = 0
    /// Probe intervals used, ms.
    var intervals: [Int64] = []
    var events: [(Int64, ClockSyncEvent)] = []
    /// The last tick whose error exceeded 25 ms or its bound, true ms.
    var lastBadTick: Int64?
    /// Probes sent so far.
    var probeCount = 0
    /// A countdown target the daemon pushes converted (and re-pushes when ``ClockSync/needsReconversion(_:now:)``).
    var eta: ServerInstant?
    /// What the client holds for `eta`.
    var pushed: ConvertedInstant?
    /// How many times `eta` was pushed.
    var pushCount = 0
    /// Largest |remaining time the client shows − true remaining time| at checked ticks, ms.
    var worstDisplayedError: Int64 = 0
    /// Rewrites a sample before the estimator sees it (probe number, sample), e.g. to inject a spike.
    var corrupt: @Sendable (Int, ProbeSample) -> ProbeSample = { $1 }

    init(skew: Int64, driftPPM: Double, seed: UInt64, delays: ClosedRange<Int64> = 5...35) {
        clock = SimulatedClientClock(
            skewMilliseconds: skew,
            driftPPM: driftPPM,
            epoch: ServerInstant(millisecondsSinceEpoch: 0)
        )
        path = SimulatedProbePath(downstreamMilliseconds: delays, upstreamMilliseconds: delays, seed: seed)
    }

    /// Runs from `start` to `end` (true ms), checking every `tick` ms once the first sample is in.
    /// `actions` run at their true instant (before the tick there), e.g. a clock step.
    /// Ticks in `unchecked` (true ms) are not counted in the totals (between a step and its detection).
    mutating func run(
        from start: Int64,
        to end: Int64,
        tick: Int64 = 100,
        background: Bool = false,
        actions: [Int64: (inout SimulatedClientClock, inout SimulatedProbePath) -> Void] = [:],
        unchecked: Range<Int64>? = nil
    ) {
        var nextSend = start
        var inFlight: ProbeSample?
        var nextTick = start
        while nextTick <= end {
            if let s = inFlight, s.serverReceive.millisecondsSinceEpoch <= nextTick {
                for e in sync.add(s) { events.append((s.serverReceive.millisecondsSinceEpoch, e)) }
                let delay = sync.nextProbeDelayMilliseconds(isBackground: background)
                intervals.append(delay)
                nextSend = s.serverReceive.millisecondsSinceEpoch + delay
                inFlight = nil
            } else if inFlight == nil, nextSend <= nextTick {
                inFlight = corrupt(
                    probeCount,
                    path.exchange(at: ServerInstant(millisecondsSinceEpoch: nextSend), clock: clock)
                )
                probeCount += 1
            } else {
                if let action = actions[nextTick] { action(&clock, &path) }
                let now = ServerInstant(millisecondsSinceEpoch: nextTick)
                if let eta {
                    if pushed.map({ sync.needsReconversion($0, now: now) }) ?? true,
                        let fresh = sync.toClient(eta, now: now)
                    {
                        pushed = fresh
                        pushCount += 1
                    }
                    if let pushed, !(unchecked?.contains(nextTick) ?? false) {
                        let shown = clock.read(trueTime: now).milliseconds(to: pushed.client)
                        worstDisplayedError = max(worstDisplayedError, abs(shown - now.milliseconds(to: eta)))
                    }
                }
                if let estimated = sync.offsetMilliseconds(at: now), let bound = sync.errorBoundMilliseconds(at: now) {
                    let error = abs(estimated - clock.offsetMilliseconds(at: now))
                    if error > bound || error > 25 { lastBadTick = nextTick }
                    if !(unchecked?.contains(nextTick) ?? false) {
                        worstError = max(worstError, error)
                        if error > bound { uncoveredTicks += 1 }
                        if error > 25 { ticksOver25 += 1 }
                    }
                }
                nextTick += tick
            }
        }
    }
}

struct AccuracyTests {
    static let skews: [Int64] = [-3_600_000, -90_000, 0, 90_000, 3_600_000]
    static let drifts: [Double] = [-200, 0, 200]

    /// Task brief accuracy goal: skews −1 h…+1 h, drifts −200/0/+200 ppm, 20 ± 15 ms latency each way: for a whole
    /// 120 s demo the estimate is within 25 ms and its bound, and the remaining time the phone shows (pushed target,
    /// re-pushed when it moved by 5 ms, minus the phone's own clock) is within 15 ms of the true one.
    @Test(arguments: skews, drifts)
    func jitteredSessionStaysWithin25Milliseconds(skew: Int64, driftPPM: Double) {
        var run = SessionRun(skew: skew, driftPPM: driftPPM, seed: UInt64(bitPattern: skew) &+ UInt64(driftPPM + 1_000))
        run.eta = ServerInstant(millisecondsSinceEpoch: 900_000)
        run.run(from: 0, to: 120_000)
        #expect(run.uncoveredTicks == 0)
        #expect(run.ticksOver25 == 0)
        #expect(run.worstError < 15)
        // What the phone shows: the pushed target minus its own clock, against the true remaining time.
        #expect(run.worstDisplayedError <= 15)
        #expect(run.pushCount <= 10)
        #expect(run.events.allSatisfy { if case .outlierRejected = $0.1 { false } else { true } })
    }

    /// Task brief: after a +30 s step of the client's clock the estimate is back within 25 ms (and within its bound)
    /// in at most two probe intervals, and never leaves them again.
    @Test(arguments: drifts)
    func stepReconvergesWithinTwoProbeIntervals(driftPPM: Double) throws {
        var before = SessionRun(skew: 90_000, driftPPM: driftPPM, seed: 7)
        before.run(from: 0, to: 63_000)
        let intervalAtStep = try #require(before.intervals.last)
        #expect(intervalAtStep >= 4_000)
        var run = SessionRun(skew: 90_000, driftPPM: driftPPM, seed: 7)
        let stepAt: Int64 = 63_000
        run.run(
            from: 0,
            to: 180_000,
            actions: [stepAt: { clock, _ in clock.step(byMilliseconds: 30_000) }],
            unchecked: stepAt..<180_001
        )
        let lastBad = try #require(run.lastBadTick)
        #expect(lastBad >= stepAt)
        #expect(lastBad - stepAt <= 2 * intervalAtStep)
        let steps = run.events.filter { if case .stepDetected = $0.1 { true } else { false } }
        #expect(steps.count == 1)
    }

    /// Task brief (simulated clocks, `setDrift`): a frequency change of up to 400 ppm is absorbed by the 2 min
    /// window without the bound ever failing to cover the error or the error reaching 25 ms.
    @Test(arguments: [(200.0, -200.0), (-200.0, 200.0), (0.0, 200.0), (50.0, -50.0)])
    func frequencyChangeStaysCovered(change: (Double, Double)) {
        var run = SessionRun(skew: 90_000, driftPPM: change.0, seed: 11)
        let at = ServerInstant(millisecondsSinceEpoch: 100_000)
        run.run(from: 0, to: 400_000, actions: [100_000: { clock, _ in clock.setDrift(ppm: change.1, at: at) }])
        #expect(run.uncoveredTicks == 0)
        #expect(run.ticksOver25 == 0)
    }

    /// Task brief: in the background the session probes at a low rate (60 s) and stays within 25 ms and its bound;
    /// the window keeps 8 samples whatever their age, so the drift is still measured.
    @Test func backgroundProbingStaysCovered() {
        var run = SessionRun(skew: -90_000, driftPPM: 200, seed: 3)
        run.run(from: 0, to: 600_000, background: true)
        #expect(run.intervals.dropFirst(7).allSatisfy { $0 == 60_000 })
        #expect(run.uncoveredTicks == 0)
        #expect(run.ticksOver25 == 0)
        #expect(run.sync.estimate?.sampleCount == 8)
    }

    /// RFC 5905 §8: asymmetric paths (down 5–35 ms, up 20–60 ms) bias the offset by up to half the difference of the
    /// smallest one-way delays, which no exchange can see; the bound still covers it.
    @Test func asymmetricPathIsCovered() {
        var run = SessionRun(skew: 3_600_000, driftPPM: -200, seed: 3)
        run.path = SimulatedProbePath(downstreamMilliseconds: 5...35, upstreamMilliseconds: 20...60, seed: 5)
        run.run(from: 0, to: 120_000)
        #expect(run.uncoveredTicks == 0)
        #expect(run.ticksOver25 == 0)
    }

    /// Task brief: latency injected mid-session (1–2 ms, then 20 ± 15 ms each way) widens the samples but never
    /// breaks the bound.
    @Test func latencyInjectedMidSessionStaysCovered() {
        var run = SessionRun(skew: 0, driftPPM: 200, seed: 9, delays: 1...2)
        run.run(
            from: 0,
            to: 240_000,
            actions: [
                60_000: { _, path in
                    path.downstreamMilliseconds = 5...35
                    path.upstreamMilliseconds = 5...35
                }
            ]
        )
        #expect(run.uncoveredTicks == 0)
        #expect(run.ticksOver25 == 0)
    }

    /// RFC 5905 §10 popcorn spikes: every 7th PONG stamped 400 ms late on the client clock (a stalled client) is
    /// rejected, no step is declared, and the estimate stays within 25 ms and its bound.
    @Test func spikesAreRejectedWithoutSteps() {
        var run = SessionRun(skew: 90_000, driftPPM: -200, seed: 21)
        run.corrupt = { index, s in
            guard index % 7 == 6 else { return s }
            var spiked = s
            spiked.clientReceive = s.clientReceive.advanced(byMilliseconds: 400)
            spiked.clientSend = s.clientSend.advanced(byMilliseconds: 400)
            return spiked
        }
        run.run(from: 0, to: 240_000)
        let outliers = run.events.filter { if case .outlierRejected = $0.1 { true } else { false } }
        let steps = run.events.filter { if case .stepDetected = $0.1 { true } else { false } }
        #expect(outliers.count == run.probeCount / 7)
        #expect(steps.isEmpty)
        #expect(run.uncoveredTicks == 0)
        #expect(run.ticksOver25 == 0)
    }

    /// RFC 5905 §8 with integer stamps: on a local socket (0–1 ms each way) truncation to whole ms is as large as the
    /// delays; the timestamp resolution allowance keeps the bound covering the error.
    @Test(arguments: drifts)
    func localPathIsCoveredDespiteTruncation(driftPPM: Double) {
        var run = SessionRun(skew: -90_000, driftPPM: driftPPM, seed: 17, delays: 0...1)
        run.path.turnaroundMilliseconds = 0
        run.run(from: 0, to: 240_000)
        #expect(run.uncoveredTicks == 0)
        #expect(run.worstError < 3)
        #expect(run.events.allSatisfy { if case .outlierRejected = $0.1 { false } else { true } })
    }
}
