import Testing

@testable import LiveBusClock

struct SimulatedClientClockTests {
    /// Task brief (simulated client clocks): reading = true + skew + drift · (true − epoch), here −1 h and +200 ppm
    /// read 24 ms fast after 120 s.
    @Test func skewAndDriftAddUp() {
        let clock = SimulatedClientClock(
            skewMilliseconds: -3_600_000,
            driftPPM: 200,
            epoch: ServerInstant(millisecondsSinceEpoch: 1_000_000)
        )
        #expect(
            clock.read(trueTime: ServerInstant(millisecondsSinceEpoch: 1_000_000)).millisecondsSinceEpoch == -2_600_000
        )
        #expect(
            clock.read(trueTime: ServerInstant(millisecondsSinceEpoch: 1_120_000)).millisecondsSinceEpoch == -2_479_976
        )
        #expect(clock.offsetMilliseconds(at: ServerInstant(millisecondsSinceEpoch: 1_120_000)) == -3_599_976)
    }

    /// Task brief: a clock step at runtime moves every later reading by the step (Jepsen clock `bump`).
    @Test func stepMovesLaterReadings() {
        var clock = SimulatedClientClock(
            skewMilliseconds: 90_000,
            driftPPM: 0,
            epoch: ServerInstant(millisecondsSinceEpoch: 0)
        )
        clock.step(byMilliseconds: 30_000)
        #expect(clock.read(trueTime: ServerInstant(millisecondsSinceEpoch: 5_000)).millisecondsSinceEpoch == 125_000)
        #expect(clock.skewMilliseconds == 120_000)
    }

    /// Task brief: changing the drift preserves continuity: no jump at the change, the new rate after it.
    @Test func setDriftPreservesContinuity() {
        var clock = SimulatedClientClock(
            skewMilliseconds: 0,
            driftPPM: 200,
            epoch: ServerInstant(millisecondsSinceEpoch: 0)
        )
        let change = ServerInstant(millisecondsSinceEpoch: 60_000)
        let before = clock.read(trueTime: change)
        clock.setDrift(ppm: -200, at: change)
        #expect(clock.read(trueTime: change) == before)
        #expect(before.millisecondsSinceEpoch == 60_012)
        #expect(clock.read(trueTime: ServerInstant(millisecondsSinceEpoch: 120_000)).millisecondsSinceEpoch == 120_000)
    }

    /// STYLE.md habit 6: chance is a parameter; the same seed gives the same probe delays.
    @Test func probePathIsReproducible() {
        let clock = SimulatedClientClock(
            skewMilliseconds: 500,
            driftPPM: 0,
            epoch: ServerInstant(millisecondsSinceEpoch: 0)
        )
        var first = SimulatedProbePath(downstreamMilliseconds: 5...35, upstreamMilliseconds: 5...35, seed: 42)
        var second = SimulatedProbePath(downstreamMilliseconds: 5...35, upstreamMilliseconds: 5...35, seed: 42)
        for i in 0..<20 {
            let at = ServerInstant(millisecondsSinceEpoch: Int64(i) * 1_000)
            let a = first.exchange(at: at, clock: clock)
            #expect(a == second.exchange(at: at, clock: clock))
            #expect((10...70).contains(a.roundTripMilliseconds))
            #expect(a.clientSend.millisecondsSinceEpoch - a.clientReceive.millisecondsSinceEpoch == 1)
        }
    }
}
