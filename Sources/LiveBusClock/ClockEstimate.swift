/// A session's clock estimate: the client clock's offset from the server clock, its drift, and honest error bounds.
///
/// The offset at server instant `t` is `offsetMilliseconds + driftPPM · 1e-6 · (t − reference)` (client − server,
/// ms). The true offset is guaranteed to lie within `errorBoundMilliseconds` of it at `reference` and within
/// `errorBoundMilliseconds + driftErrorBoundPPM · 1e-6 · |t − reference|` elsewhere, as long as every probe's
/// one-way delays were non-negative, timestamps were within the configured resolution, and the client's frequency
/// stayed constant and within the configured tolerance (``ClockSync/errorBoundMilliseconds(at:)`` is tighter).
/// - Note: Source: RFC 5905 §10 "Clock Filter Algorithm" (error bound = δ/2 + dispersion growing with time and
///   the frequency tolerance), applied here to the exact set of (offset, frequency) lines all samples allow.
public struct ClockEstimate: Sendable, Equatable, Codable {
    /// Client clock minus server clock at `reference`, ms.
    public var offsetMilliseconds: Double
    /// Client clock rate minus server clock rate, parts per million (positive: the client clock runs fast).
    public var driftPPM: Double
    /// Largest possible error of `offsetMilliseconds` at `reference`, ms.
    public var errorBoundMilliseconds: Double
    /// Largest possible error of `driftPPM`, parts per million.
    public var driftErrorBoundPPM: Double
    /// Smallest round-trip delay δ among the samples in the window, ms (RFC 5905 §8).
    public var roundTripMilliseconds: Double
    /// The server instant the offset and bound refer to: the midpoint (t1 + t4) / 2 of the newest sample, ms.
    public var reference: ServerInstant
    /// Samples in the window the estimate is computed from.
    public var sampleCount: Int

    /// Creates an estimate. ``ClockSync`` computes them; tests and logs may build them directly.
    /// - Parameters:
    ///   - offsetMilliseconds: Client minus server at `reference`, ms.
    ///   - driftPPM: Client rate minus server rate, ppm.
    ///   - errorBoundMilliseconds: Largest possible offset error at `reference`, ms.
    ///   - driftErrorBoundPPM: Largest possible drift error, ppm.
    ///   - roundTripMilliseconds: Smallest round-trip delay in the window, ms.
    ///   - reference: Server instant the offset refers to.
    ///   - sampleCount: Samples in the window.
    public init(
        offsetMilliseconds: Double,
        driftPPM: Double,
        errorBoundMilliseconds: Double,
        driftErrorBoundPPM: Double = 0,
        roundTripMilliseconds: Double,
        reference: ServerInstant,
        sampleCount: Int
    ) {
        self.offsetMilliseconds = offsetMilliseconds
        self.driftPPM = driftPPM
        self.errorBoundMilliseconds = errorBoundMilliseconds
        self.driftErrorBoundPPM = driftErrorBoundPPM
        self.roundTripMilliseconds = roundTripMilliseconds
        self.reference = reference
        self.sampleCount = sampleCount
    }

    /// The estimated offset (client − server) at server instant `instant`, drift applied, ms.
    /// - Parameter instant: Server clock instant.
    /// - Returns: `offsetMilliseconds + driftPPM · 1e-6 · (instant − reference)`.
    public func offsetMilliseconds(at instant: ServerInstant) -> Double {
        offsetMilliseconds + driftPPM * 1e-6 * Double(reference.milliseconds(to: instant))
    }
}

/// A server instant converted to one client's clock, with its uncertainty. The server value is kept for logs.
public struct ConvertedInstant: Sendable, Equatable, Codable {
    /// The instant on the client's clock, ms since the Unix epoch as that client's clock reads it.
    public var client: ClientInstant
    /// The original instant on the server's clock (for logs), ms since the Unix epoch.
    public var server: ServerInstant
    /// How far `client` may be from the exact conversion, ms (error bound, rounded up, rounding included).
    public var uncertaintyMilliseconds: Int

    /// Creates a converted instant.
    /// - Parameters:
    ///   - client: Client clock value, ms.
    ///   - server: Original server clock value, ms.
    ///   - uncertaintyMilliseconds: Error bound of `client`, ms.
    public init(client: ClientInstant, server: ServerInstant, uncertaintyMilliseconds: Int) {
        self.client = client
        self.server = server
        self.uncertaintyMilliseconds = uncertaintyMilliseconds
    }
}

/// Why ``ClockSync`` refused a probe sample outright.
public enum ProbeSampleRejection: String, Sendable, Equatable, Codable {
    /// t4 < t1 or t3 < t2, or the round trip δ is negative beyond the timestamp resolution: the stamps cannot come
    /// from one exchange (a clock was stepped mid-probe, or the PONG was matched to the wrong PING).
    case causalityViolated
    /// δ exceeds ``ClockSyncConfiguration/maximumRoundTripMilliseconds``: the sample is too loose to help.
    case roundTripTooLong
}

/// What adding a sample did, for logs and for the session (which re-converts instants after a step).
public enum ClockSyncEvent: Sendable, Equatable {
    /// The error bound fell to ``ClockSyncConfiguration/convergedErrorBoundMilliseconds`` or below, for the first
    /// time since the session started or since the last step.
    case converged(ClockEstimate)
    /// A sample was accepted and the estimate changed.
    case estimateUpdated(ClockEstimate)
    /// The client clock's offset no longer fits the window: two consecutive samples agreed on a new offset
    /// (a clock step, or a changed frequency). The window restarted from them. Offsets are client − server, ms,
    /// at the newest sample.
    case stepDetected(fromOffset: Double, toOffset: Double)
    /// The sample does not fit the window (its interval misses every allowed offset). It is held back; if the next
    /// sample agrees with it, a step is declared, otherwise it is dropped as an outlier.
    /// - Note: Source: RFC 5905 §10 popcorn-spike suppression; §11.3 step after a confirming sample.
    case outlierRejected(ProbeSample)
    /// The sample was refused outright.
    case sampleRejected(ProbeSample, ProbeSampleRejection)
}
