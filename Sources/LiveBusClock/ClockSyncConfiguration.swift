/// Tuning of ``ClockSync``: tolerances that make the error bound honest, the window, and the probe schedule.
///
/// Every duration is in milliseconds; frequencies are in parts per million.
/// - Note: Source: RFC 5905 §7.2 (frequency tolerance PHI, MAXDIST), §10 (clock filter window), §13 (poll
///   interval adapts between a minimum and maximum).
public struct ClockSyncConfiguration: Sendable, Equatable {
    /// Largest client clock frequency error the bound assumes, ppm (phone crystals: tens of ppm; the demo: ±200).
    /// Any client whose clock drifts faster breaks the bound's guarantee.
    public var frequencyTolerancePPM: Double
    /// How far one timestamp may be from the exact instant because of integer milliseconds (truncation or
    /// rounding on either side), ms. Added to each sample's interval on both sides.
    public var timestampResolutionMilliseconds: Double
    /// Samples with a larger round trip δ are refused (``ProbeSampleRejection/roundTripTooLong``), ms.
    public var maximumRoundTripMilliseconds: Int64
    /// Most samples kept in the window; the oldest go first.
    public var windowSampleLimit: Int
    /// Samples older than this (server time before the newest sample) leave the window, unless fewer than
    /// `windowMinimumSamples` would be left, ms. Longer spans measure the frequency better; shorter ones let a
    /// frequency change (temperature, or a simulated `setDrift`) pass sooner: the line fitted across a change is
    /// off by up to about the change · span / 4 before the samples contradict it.
    public var windowSpanMilliseconds: Int64
    /// Samples kept whatever their age, so that slow (background) probing still measures the frequency.
    public var windowMinimumSamples: Int
    /// The error bound at or below which ``ClockSyncEvent/converged(_:)`` is reported, ms.
    public var convergedErrorBoundMilliseconds: Double
    /// Probes in the burst right after the handshake (and after a step).
    public var burstCount: Int
    /// Delay between burst probes, and before the probe that confirms or clears a suspected step, ms.
    public var burstIntervalMilliseconds: Int64
    /// Shortest delay between regular foreground probes, ms.
    public var minimumIntervalMilliseconds: Int64
    /// Longest delay between regular foreground probes, ms.
    public var maximumIntervalMilliseconds: Int64
    /// How much the error bound may grow by extrapolation before the next probe, ms. The foreground interval is the
    /// longest power-of-two multiple of the minimum whose growth stays within this.
    public var intervalBoundGrowthMilliseconds: Double
    /// Delay between probes while the client app is in the background, ms.
    public var backgroundIntervalMilliseconds: Int64
    /// How far a converted instant's client-clock value may move before ``ClockSync/needsReconversion(_:now:)``
    /// asks for it to be sent again, ms.
    public var reconversionThresholdMilliseconds: Int64

    /// Creates a configuration; every parameter defaults to the value in ``default``.
    /// - Parameters:
    ///   - frequencyTolerancePPM: Largest client frequency error assumed, ppm.
    ///   - timestampResolutionMilliseconds: Timestamp quantization allowance, ms.
    ///   - maximumRoundTripMilliseconds: Largest δ accepted, ms.
    ///   - windowSampleLimit: Most samples kept.
    ///   - windowSpanMilliseconds: Oldest sample kept, ms before the newest.
    ///   - windowMinimumSamples: Samples kept whatever their age.
    ///   - convergedErrorBoundMilliseconds: Bound that counts as converged, ms.
    ///   - burstCount: Probes in a burst.
    ///   - burstIntervalMilliseconds: Delay between burst probes, ms.
    ///   - minimumIntervalMilliseconds: Shortest foreground interval, ms.
    ///   - maximumIntervalMilliseconds: Longest foreground interval, ms.
    ///   - intervalBoundGrowthMilliseconds: Allowed bound growth between probes, ms.
    ///   - backgroundIntervalMilliseconds: Background interval, ms.
    ///   - reconversionThresholdMilliseconds: Movement that makes a converted instant worth re-sending, ms.
    public init(
        frequencyTolerancePPM: Double = 500,
        timestampResolutionMilliseconds: Double = 2,
        maximumRoundTripMilliseconds: Int64 = 5_000,
        windowSampleLimit: Int = 64,
        windowSpanMilliseconds: Int64 = 120_000,
        windowMinimumSamples: Int = 8,
        convergedErrorBoundMilliseconds: Double = 25,
        burstCount: Int = 8,
        burstIntervalMilliseconds: Int64 = 200,
        minimumIntervalMilliseconds: Int64 = 1_000,
        maximumIntervalMilliseconds: Int64 = 16_000,
        intervalBoundGrowthMilliseconds: Double = 4,
        backgroundIntervalMilliseconds: Int64 = 60_000,
        reconversionThresholdMilliseconds: Int64 = 5
    ) {
        self.frequencyTolerancePPM = frequencyTolerancePPM
        self.timestampResolutionMilliseconds = timestampResolutionMilliseconds
        self.maximumRoundTripMilliseconds = maximumRoundTripMilliseconds
        self.windowSampleLimit = windowSampleLimit
        self.windowSpanMilliseconds = windowSpanMilliseconds
        self.windowMinimumSamples = windowMinimumSamples
        self.convergedErrorBoundMilliseconds = convergedErrorBoundMilliseconds
        self.burstCount = burstCount
        self.burstIntervalMilliseconds = burstIntervalMilliseconds
        self.minimumIntervalMilliseconds = minimumIntervalMilliseconds
        self.maximumIntervalMilliseconds = maximumIntervalMilliseconds
        self.intervalBoundGrowthMilliseconds = intervalBoundGrowthMilliseconds
        self.backgroundIntervalMilliseconds = backgroundIntervalMilliseconds
        self.reconversionThresholdMilliseconds = reconversionThresholdMilliseconds
    }

    /// 500 ppm tolerance (RFC 5905's PHI-era MAXFREQ), 2 ms timestamp resolution, up to 64 samples over 2 min (at least 8), a burst
    /// of 8 probes 200 ms apart, then 1–16 s in the foreground and 60 s in the background; converted instants re-sent once they move by 5 ms.
    public static let `default` = ClockSyncConfiguration()
}
