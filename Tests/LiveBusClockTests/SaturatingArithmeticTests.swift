import Foundation
import Testing

@testable import LiveBusClock

/// Arithmetic on instants cannot trap: the helpers saturate at the ends of `Int64`, and probe samples, the clock
/// estimate and conversions with stamps at ±2^63 give an answer (a rejection, a clamped instant) instead of an
/// overflow trap. Source: issue 14 "Crashes" (PONG t2 = −2^63; t2 = −1 with t3 = 2^63 − 1; conversions near 2^63).
struct SaturatingArithmeticTests {
    @Test func helpersClampAtTheEndsOfInt64() {
        #expect(Int64.max.saturatingAdding(1) == .max)
        #expect(Int64.min.saturatingAdding(-1) == .min)
        #expect(Int64(5).saturatingAdding(-7) == -2)
        #expect(Int64.min.saturatingSubtracting(1) == .min)
        #expect(Int64.max.saturatingSubtracting(-1) == .max)
        #expect(Int64(-1).saturatingSubtracting(.max) == .min)
        #expect(Int64(3).saturatingSubtracting(5) == -2)
        #expect(Int64.max.saturatingMultiplied(by: 2) == .max)
        #expect(Int64.max.saturatingMultiplied(by: -2) == .min)
        #expect(Int64(-4).saturatingMultiplied(by: 3) == -12)
        #expect(Int64(saturating: 1e30) == .max)
        #expect(Int64(saturating: -1e30) == .min)
        #expect(Int64(saturating: .infinity) == .max)
        #expect(Int64(saturating: .nan) == 0)
        #expect(Int64(saturating: 2.5) == 3)
        #expect(Int(saturating: -.infinity) == .min)
    }

    @Test func instantsSaturate() {
        let top = ServerInstant(millisecondsSinceEpoch: .max - 1)
        #expect(top.advanced(byMilliseconds: 10).millisecondsSinceEpoch == .max)
        #expect(ServerInstant(millisecondsSinceEpoch: .min).milliseconds(to: top) == .max)
        #expect(ClientInstant(millisecondsSinceEpoch: .min).advanced(byMilliseconds: -1).millisecondsSinceEpoch == .min)
        #expect(top.toClientClock(offsetMilliseconds: 3_600_000).millisecondsSinceEpoch == .max)
        #expect(top.toClientClock(offsetMilliseconds: .nan).millisecondsSinceEpoch == .max - 1)
    }

    static func sample(t1: Int64, t2: Int64, t3: Int64, t4: Int64) -> ProbeSample {
        ProbeSample(
            serverSend: ServerInstant(millisecondsSinceEpoch: t1),
            clientReceive: ClientInstant(millisecondsSinceEpoch: t2),
            clientSend: ClientInstant(millisecondsSinceEpoch: t3),
            serverReceive: ServerInstant(millisecondsSinceEpoch: t4)
        )
    }

    /// The issue's two PONGs, offered straight to the estimator (the wire refuses them first; this is the second
    /// line of defence): each is rejected, nothing traps, and a good sample afterwards is used.
    @Test func extremeProbeSamplesAreRejectedWithoutTrapping() {
        let now: Int64 = 1_800_000_000_000
        var sync = ClockSync()
        for s in [
            Self.sample(t1: now, t2: .min, t3: now, t4: now + 20),
            Self.sample(t1: now, t2: -1, t3: .max, t4: now + 20),
            Self.sample(t1: .min, t2: .max, t3: .max, t4: .max),
        ] {
            _ = s.offsetMilliseconds
            _ = s.serverMidpointMilliseconds
            let events = sync.add(s)
            #expect(events.count == 1, "\(events)")
            if case .sampleRejected = events.first {} else { Issue.record("accepted \(s): \(events)") }
        }
        #expect(Self.sample(t1: now, t2: -1, t3: .max, t4: now + 20).roundTripMilliseconds == 20 - Int64.max)
        let good = sync.add(Self.sample(t1: now, t2: now + 5_010, t3: now + 5_011, t4: now + 20))
        #expect(good.contains { if case .estimateUpdated = $0 { true } else { false } }, "\(good)")
    }

    /// A sample far from zero but consistent (client 2^62 ms ahead) is fitted, and converting instants near 2^63
    /// through it clamps instead of trapping.
    @Test func conversionNearTheTopOfInt64Clamps() {
        let now: Int64 = 1_800_000_000_000
        let ahead: Int64 = 1 << 62
        var sync = ClockSync()
        _ = sync.add(Self.sample(t1: now, t2: now + ahead + 10, t3: now + ahead + 11, t4: now + 20))
        let c = sync.toClient(
            ServerInstant(millisecondsSinceEpoch: .max - 5),
            now: ServerInstant(millisecondsSinceEpoch: now)
        )
        #expect(c?.client.millisecondsSinceEpoch == .max)
        let back = sync.toServer(
            ClientInstant(millisecondsSinceEpoch: .min + 5),
            now: ServerInstant(millisecondsSinceEpoch: now)
        )
        #expect(back?.millisecondsSinceEpoch == .min)
    }
}
