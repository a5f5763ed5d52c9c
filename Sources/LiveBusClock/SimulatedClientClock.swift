/// A simulated phone clock over a true (server-synchronised) time source:
/// `reading = true + skew + drift · (true − epoch) + steps`, rounded to whole milliseconds.
///
/// Phones' clocks are wrong by seconds to hours, run fast or slow by tens to hundreds of ppm, and get stepped
/// (NITZ, NTP, the user). This value type reproduces all three deterministically.
/// - Note: Source: Jepsen clock nemesis (`bump`, `strobe`), ../shared/reference/faults-sync-libuv.md §1.4.
public struct SimulatedClientClock: Sendable, Equatable {
    /// Offset (client − true) at `epoch`, steps included, ms.
    public private(set) var skewMilliseconds: Double
    /// Rate error, ppm (positive: runs fast).
    public private(set) var driftPPM: Double
    /// The true instant the drift is measured from.
    public private(set) var epoch: ServerInstant

    /// Creates a clock.
    /// - Parameters:
    ///   - skewMilliseconds: Offset (client − true) at `epoch`, ms.
    ///   - driftPPM: Rate error, ppm.
    ///   - epoch: True instant from which drift accumulates.
    public init(skewMilliseconds: Int64, driftPPM: Double, epoch: ServerInstant) {
        self.skewMilliseconds = Double(skewMilliseconds)
        self.driftPPM = driftPPM
        self.epoch = epoch
    }

    /// The exact offset (client − true) at true instant `trueTime`, ms, before rounding.
    /// - Parameter trueTime: True (server) time.
    /// - Returns: `skew + drift · 1e-6 · (trueTime − epoch)`.
    public func offsetMilliseconds(at trueTime: ServerInstant) -> Double {
        skewMilliseconds + driftPPM * 1e-6 * Double(epoch.milliseconds(to: trueTime))
    }

    /// What the client clock reads at true instant `trueTime` (whole ms), its offset rounded to the nearest ms.
    /// - Parameter trueTime: True (server) time.
    /// - Returns: The client reading.
    public func read(trueTime: ServerInstant) -> ClientInstant {
        ClientInstant(
            millisecondsSinceEpoch: trueTime.millisecondsSinceEpoch + Int64(offsetMilliseconds(at: trueTime).rounded())
        )
    }

    /// What the client clock reads at a true instant with sub-millisecond precision, truncated to whole ms as a
    /// clock read is. Use it when the true time source has microseconds (`clock_gettime`).
    /// - Parameter trueMilliseconds: True (server) time, ms since the Unix epoch, fractional.
    /// - Returns: The client reading.
    public func read(trueMilliseconds: Double) -> ClientInstant {
        let whole = trueMilliseconds.rounded(.down)
        let offset = skewMilliseconds + driftPPM * 1e-6 * (trueMilliseconds - Double(epoch.millisecondsSinceEpoch))
        // Sum the fractional parts apart from the large whole ms so that no precision is lost, then truncate.
        let fraction = (trueMilliseconds - whole) + offset
        return ClientInstant(millisecondsSinceEpoch: Int64(whole) + Int64((fraction + 1e-9).rounded(.down)))
    }

    /// Steps the clock (as NTP or the user would), from now on.
    /// - Parameter byMilliseconds: Step, ms (positive: forward).
    public mutating func step(byMilliseconds: Int64) {
        skewMilliseconds += Double(byMilliseconds)
    }

    /// Changes the rate from true instant `at` on, without a jump in the reading there.
    /// - Parameters:
    ///   - ppm: New rate error, ppm.
    ///   - at: True instant of the change.
    public mutating func setDrift(ppm: Double, at: ServerInstant) {
        skewMilliseconds = offsetMilliseconds(at: at)
        epoch = at
        driftPPM = ppm
    }
}

/// A seeded pseudo-random generator (SplitMix64) for simulations and tests: same seed, same stream.
/// - Note: Source: Steele, Lea, Flood, "Fast Splittable Pseudorandom Number Generators" (OOPSLA 2014).
public struct ClockSimulationRandom: RandomNumberGenerator, Sendable, Equatable {
    private var state: UInt64

    /// Creates a generator.
    /// - Parameter seed: Any value; equal seeds give equal streams.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    /// - Returns: A uniformly distributed value.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A simulated network path for probes: one-way delays drawn uniformly (continuous, in ms) from seeded ranges, and a
/// fixed client turnaround. Produces the ``ProbeSample`` a real PING/PONG would against a ``SimulatedClientClock``,
/// with real quantization: true times have sub-millisecond parts and every stamp is truncated to whole ms.
public struct SimulatedProbePath: Sendable, Equatable {
    /// Daemon → client delay range, ms.
    public var downstreamMilliseconds: ClosedRange<Int64>
    /// Client → daemon delay range, ms.
    public var upstreamMilliseconds: ClosedRange<Int64>
    /// Time between the client receiving PING and sending PONG, ms.
    public var turnaroundMilliseconds: Int64
    /// The delay generator.
    public var random: ClockSimulationRandom

    /// Creates a path.
    /// - Parameters:
    ///   - downstreamMilliseconds: Daemon → client delay range, ms.
    ///   - upstreamMilliseconds: Client → daemon delay range, ms.
    ///   - turnaroundMilliseconds: Client turnaround, ms.
    ///   - seed: Seed of the delay generator.
    public init(
        downstreamMilliseconds: ClosedRange<Int64>,
        upstreamMilliseconds: ClosedRange<Int64>,
        turnaroundMilliseconds: Int64 = 1,
        seed: UInt64
    ) {
        self.downstreamMilliseconds = downstreamMilliseconds
        self.upstreamMilliseconds = upstreamMilliseconds
        self.turnaroundMilliseconds = turnaroundMilliseconds
        self.random = ClockSimulationRandom(seed: seed)
    }

    /// Runs one exchange: PING is stamped `serverSend` (it left somewhere within that ms); the client stamps with
    /// `clock`.
    /// - Parameters:
    ///   - serverSend: t1, the server's stamp (true time truncated to whole ms).
    ///   - clock: The client's clock.
    /// - Returns: The sample the daemon would record.
    public mutating func exchange(at serverSend: ServerInstant, clock: SimulatedClientClock) -> ProbeSample {
        let sentTrue = Double(serverSend.millisecondsSinceEpoch) + Double.random(in: 0..<1, using: &random)
        let down = Double.random(
            in: Double(downstreamMilliseconds.lowerBound)...Double(downstreamMilliseconds.upperBound),
            using: &random
        )
        let up = Double.random(
            in: Double(upstreamMilliseconds.lowerBound)...Double(upstreamMilliseconds.upperBound),
            using: &random
        )
        let receivedTrue = sentTrue + down
        let answeredTrue = receivedTrue + Double(turnaroundMilliseconds)
        return ProbeSample(
            serverSend: serverSend,
            clientReceive: clock.read(trueMilliseconds: receivedTrue),
            clientSend: clock.read(trueMilliseconds: answeredTrue),
            serverReceive: ServerInstant(millisecondsSinceEpoch: Int64((answeredTrue + up).rounded(.down)))
        )
    }
}
