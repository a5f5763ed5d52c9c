/// Per-session clock synchronisation: estimates the client clock's offset, drift and error bound from probe
/// exchanges, converts instants between the server's and the client's clock, and says when to probe next.
///
/// A pure state machine: no sockets, no clock. The session stamps PING/PONG (``ProbeSample``), calls
/// ``add(_:)``, converts every instant it pushes with ``toClient(_:now:)``, and arms a timer for
/// ``nextProbeDelayMilliseconds(isBackground:)``.
///
/// How it estimates: each sample bounds the offset at its midpoint by its one-way delays, which cannot be
/// negative: `t3 − t4 ≤ offset ≤ t2 − t1` (widened by the timestamp resolution). Modelling the offset as a line
/// (constant frequency within the tolerance), the lines every sample in the window allows form a convex set;
/// low-delay samples are its tight edges, so they dominate by construction, and high-delay ones barely matter.
/// The estimate is the centre of that set (offset at the newest sample, frequency), and the bound is the exact
/// worst case over it, so it covers the true error whenever the model holds. A sample that fits no allowed line is
/// held back as an outlier; if the next one agrees with it, the clock stepped and the window restarts from the two.
/// - Note: Source: RFC 5905 §8 (on-wire offset and delay), §10 (clock filter: prefer low delay; error bound =
///   δ/2 + dispersion growing with the frequency tolerance), §11.3 (step after confirmation), §13 (adaptive poll).
public struct ClockSync: Sendable {
    /// The tuning this instance runs with.
    public let configuration: ClockSyncConfiguration

    /// Accepted samples, oldest first (by server midpoint).
    private var window: [Bounded] = []
    /// A sample that did not fit the window, waiting for the next one to confirm a step or clear it.
    private var pending: Bounded?
    /// Samples accepted since the session started or the clock last stepped.
    private var epochSampleCount = 0
    /// Whether ``ClockSyncEvent/converged(_:)`` was reported in this epoch.
    private var hasConverged = false
    /// The current fit, if any sample was accepted.
    private var fit: Fit?

    /// Creates an estimator with no samples.
    /// - Parameter configuration: Tolerances, window and probe schedule.
    public init(configuration: ClockSyncConfiguration = .default) {
        self.configuration = configuration
    }

    // MARK: - Samples

    /// Adds one probe exchange and returns what changed.
    ///
    /// Refuses samples whose stamps contradict each other or whose round trip is too long; holds back a sample that
    /// fits no allowed clock line; declares a step when the next sample agrees with the held one.
    /// - Parameter sample: The four timestamps of one PING/PONG exchange.
    /// - Returns: Events in order: at most one of `sampleRejected`, `outlierRejected` or (`stepDetected`?,
    ///   `estimateUpdated`, `converged`?).
    /// - Note: Source: RFC 5905 §8, §10, §11.3.
    public mutating func add(_ sample: ProbeSample) -> [ClockSyncEvent] {
        defer { checkInvariants() }
        let resolution = configuration.timestampResolutionMilliseconds
        if sample.serverReceive < sample.serverSend || sample.clientSend < sample.clientReceive
            || Double(sample.roundTripMilliseconds) < -2 * resolution
        {
            return [.sampleRejected(sample, .causalityViolated)]
        }
        if sample.roundTripMilliseconds > configuration.maximumRoundTripMilliseconds {
            return [.sampleRejected(sample, .roundTripTooLong)]
        }
        let bounded = Bounded(sample, configuration: configuration)
        guard let current = fit else {
            window = [bounded]
            epochSampleCount = 1
            return refit(stepFrom: nil)
        }
        let all = Self.newestFirst(window + [bounded])
        if let candidate = Self.makeFit(newestFirst: all, configuration: configuration), !candidate.isStrained {
            pending = nil  // it was an outlier; reported when it arrived
            window = all.reversed()
            epochSampleCount += 1
            return refit(stepFrom: nil)
        }
        if let held = pending,
            Self.makeFit(newestFirst: Self.newestFirst([held, bounded]), configuration: configuration) != nil
        {
            // Two samples agree with each other and not with the window: the clock stepped (or its frequency
            // changed). Restart from the two; older samples would only pin the estimate to a line that no longer
            // holds.
            let x = current.x(ofMidpointTwice: bounded.midpointTwice)
            let from = current.base + current.aCentre + current.fCentre * x
            window = Self.newestFirst([held, bounded]).reversed()
            pending = nil
            epochSampleCount = 2
            hasConverged = false
            return refit(stepFrom: from)
        }
        pending = bounded
        return [.outlierRejected(sample)]
    }

    /// The current estimate, or `nil` before the first accepted sample.
    public var estimate: ClockEstimate? {
        guard let fit else { return nil }
        return ClockEstimate(
            offsetMilliseconds: fit.base + fit.aCentre,
            driftPPM: fit.fCentre * 1e6,
            errorBoundMilliseconds: fit.region.largestDeviation(fromOffset: fit.aCentre, frequency: fit.fCentre, at: 0),
            driftErrorBoundPPM: (fit.region.frequencyRange.upper - fit.region.frequencyRange.lower) / 2 * 1e6,
            roundTripMilliseconds: window.map(\.roundTrip).min() ?? 0,
            reference: ServerInstant(millisecondsSinceEpoch: fit.reference),
            sampleCount: window.count
        )
    }

    /// Whether a sample is held back as a possible clock step (the next probe confirms or clears it).
    public var isStepSuspected: Bool { pending != nil }

    /// The samples in the window, oldest first.
    public var samples: [ProbeSample] { window.map(\.sample) }

    // MARK: - Conversion

    /// The estimated offset (client − server) at server instant `instant`, drift applied, ms; `nil` before the first
    /// accepted sample.
    /// - Parameter instant: Server clock instant.
    /// - Returns: The offset in ms.
    public func offsetMilliseconds(at instant: ServerInstant) -> Double? {
        guard let fit else { return nil }
        let x = fit.x(of: instant)
        return fit.base + fit.aCentre + fit.fCentre * x
    }

    /// The largest possible error of ``offsetMilliseconds(at:)`` at server instant `instant`, ms; `nil` before the
    /// first accepted sample. While a step is suspected it also covers the held sample being right.
    /// - Parameter instant: Server clock instant.
    /// - Returns: The error bound in ms (not rounded).
    public func errorBoundMilliseconds(at instant: ServerInstant) -> Double? {
        guard let fit else { return nil }
        let x = fit.x(of: instant)
        var bound = fit.region.largestDeviation(fromOffset: fit.aCentre, frequency: fit.fCentre, at: x)
        if let held = pending {
            let xHeld = fit.x(ofMidpointTwice: held.midpointTwice)
            let estimateAtHeld = fit.base + fit.aCentre + fit.fCentre * xHeld
            let disagreement = max(abs(held.upper - estimateAtHeld), abs(estimateAtHeld - held.lower))
            let tolerance = configuration.frequencyTolerancePPM * 1e-6
            bound = max(bound, disagreement + (tolerance + abs(fit.fCentre)) * abs(x - xHeld))
        }
        return bound
    }

    /// Converts a server instant to the client's clock, with the offset estimated at server time `now` (drift
    /// applied from the newest sample to `now`), and its uncertainty.
    ///
    /// The offset is taken at `now`, not at `instant`, so that the remaining time the client shows
    /// (`client − its own now`) is exact at push time and then departs from the truth only by the client clock's
    /// own rate error (drift · elapsed, 24 ms after 120 s at 200 ppm); the daemon re-converts on every push.
    /// - Parameters:
    ///   - instant: The server-clock instant to convert (ETA, stale date, dismissal date…), ms.
    ///   - now: The server's current time, ms.
    /// - Returns: The client-clock value, the original, and the error bound rounded up (including the rounding to
    ///   whole ms); `nil` before the first accepted sample.
    public func toClient(_ instant: ServerInstant, now: ServerInstant) -> ConvertedInstant? {
        guard let offset = offsetMilliseconds(at: now), let bound = errorBoundMilliseconds(at: now) else { return nil }
        return ConvertedInstant(
            client: instant.toClientClock(offsetMilliseconds: offset),
            server: instant,
            uncertaintyMilliseconds: Int(saturating: (bound + 0.5).rounded(.up))
        )
    }

    /// The current estimate's conversion as plain numbers (``ClockConversionMap``): what ``toClient(_:now:)`` computes,
    /// for any `now`, until the next ``add(_:)``. `nil` before the first accepted sample, and when the estimate's
    /// polygon has more than ``ClockConversionMap/vertexCapacity`` vertices (convert with ``toClient(_:now:)`` then).
    public var conversionMap: ClockConversionMap? {
        guard let fit else { return nil }
        var held: (x: Double, disagreement: Double, slope: Double)?
        if let h = pending {
            let xHeld = fit.x(ofMidpointTwice: h.midpointTwice)
            let estimateAtHeld = fit.base + fit.aCentre + fit.fCentre * xHeld
            let disagreement = max(abs(h.upper - estimateAtHeld), abs(estimateAtHeld - h.lower))
            let tolerance = configuration.frequencyTolerancePPM * 1e-6
            held = (xHeld, disagreement, tolerance + abs(fit.fCentre))
        }
        return ClockConversionMap(
            offsetAtReference: fit.base + fit.aCentre,
            frequency: fit.fCentre,
            reference: fit.reference,
            aCentre: fit.aCentre,
            vertices: fit.region.vertices,
            held: held
        )
    }

    /// Converts a client-clock instant (for example a PONG's or a posture report's timestamp) to the server clock,
    /// with the offset estimated at server time `now`: the inverse of ``toClient(_:now:)``.
    /// - Parameters:
    ///   - instant: The client-clock instant, ms.
    ///   - now: The server's current time, ms.
    /// - Returns: The server-clock instant, or `nil` before the first accepted sample.
    public func toServer(_ instant: ClientInstant, now: ServerInstant) -> ServerInstant? {
        guard let offset = offsetMilliseconds(at: now) else { return nil }
        return ServerInstant(
            millisecondsSinceEpoch: instant.millisecondsSinceEpoch.saturatingSubtracting(Int64(saturating: offset))
        )
    }

    /// Whether an instant converted earlier should be converted and sent again: its client-clock value at `now`
    /// differs from the one sent by at least ``ClockSyncConfiguration/reconversionThresholdMilliseconds`` (the
    /// client's drift since the push, a better estimate, or a step).
    ///
    /// The client counts down on its own clock, which runs fast or slow by its drift (200 ppm: 24 ms in 120 s);
    /// re-sending bounds that part of the displayed error by the threshold.
    /// - Parameters:
    ///   - converted: What was sent, from ``toClient(_:now:)``.
    ///   - now: The server's current time, ms.
    /// - Returns: `true` when the session should re-send the instant's client-clock value; `false` before the
    ///   first accepted sample.
    public func needsReconversion(_ converted: ConvertedInstant, now: ServerInstant) -> Bool {
        guard let fresh = toClient(converted.server, now: now) else { return false }
        let moved = abs(converted.client.milliseconds(to: fresh.client))
        return moved >= configuration.reconversionThresholdMilliseconds
    }

    // MARK: - Probe schedule

    /// How long to wait before sending the next probe, ms after the newest sample (or now, before any).
    ///
    /// A burst (``ClockSyncConfiguration/burstCount`` probes, ``ClockSyncConfiguration/burstIntervalMilliseconds``
    /// apart) after the handshake and after a step; the same short delay to confirm or clear a suspected step; in
    /// the background ``ClockSyncConfiguration/backgroundIntervalMilliseconds``; otherwise the longest interval,
    /// doubling from ``ClockSyncConfiguration/minimumIntervalMilliseconds`` up to
    /// ``ClockSyncConfiguration/maximumIntervalMilliseconds``, over which the error bound grows by at most
    /// ``ClockSyncConfiguration/intervalBoundGrowthMilliseconds``: short while the frequency is uncertain, long
    /// once it is known.
    /// - Parameter isBackground: Whether the client app is in the background (it reports its app state).
    /// - Returns: The delay in ms.
    /// - Note: Source: RFC 5905 §13 (poll interval between MINPOLL and MAXPOLL, shortened while unstable); the
    ///   burst is NTP's `iburst`.
    public func nextProbeDelayMilliseconds(isBackground: Bool) -> Int64 {
        guard let fit, pending == nil, epochSampleCount >= configuration.burstCount else {
            return configuration.burstIntervalMilliseconds
        }
        if isBackground { return configuration.backgroundIntervalMilliseconds }
        let atReference = fit.region.largestDeviation(fromOffset: fit.aCentre, frequency: fit.fCentre, at: 0)
        var chosen = configuration.minimumIntervalMilliseconds
        var candidate = configuration.minimumIntervalMilliseconds
        while candidate <= configuration.maximumIntervalMilliseconds {
            let grown = fit.region.largestDeviation(
                fromOffset: fit.aCentre,
                frequency: fit.fCentre,
                at: Double(candidate)
            )
            guard grown - atReference <= configuration.intervalBoundGrowthMilliseconds else { break }
            chosen = candidate
            candidate *= 2
        }
        return chosen
    }

    /// The instant to send the next probe: ``nextProbeDelayMilliseconds(isBackground:)`` after `lastAnswer`, the
    /// server instant the last PONG arrived (or the handshake completed). The session arms its timer for it.
    /// - Parameters:
    ///   - lastAnswer: When the last PONG arrived (t4), or the handshake completed, server clock.
    ///   - isBackground: Whether the client app is in the background.
    /// - Returns: The deadline, server clock.
    public func nextProbeDeadline(after lastAnswer: ServerInstant, isBackground: Bool) -> ServerInstant {
        lastAnswer.advanced(byMilliseconds: nextProbeDelayMilliseconds(isBackground: isBackground))
    }

    // MARK: - Fitting

    /// Recomputes the fit from the window (after pruning it) and reports the change.
    private mutating func refit(stepFrom: Double?) -> [ClockSyncEvent] {
        prune()
        guard let newFit = Self.makeFit(newestFirst: Self.newestFirst(window), configuration: configuration) else {
            return []  // unreachable: the window was just checked to fit, and fewer samples fit too
        }
        fit = newFit
        var events: [ClockSyncEvent] = []
        guard let estimate else { return events }
        if let stepFrom { events.append(.stepDetected(fromOffset: stepFrom, toOffset: estimate.offsetMilliseconds)) }
        events.append(.estimateUpdated(estimate))
        if !hasConverged, estimate.errorBoundMilliseconds <= configuration.convergedErrorBoundMilliseconds {
            hasConverged = true
            events.append(.converged(estimate))
        }
        return events
    }

    /// Debug builds check after each mutation that the window is ordered, within its limit, and fitted.
    private func checkInvariants() {
        assert(zip(window, window.dropFirst()).allSatisfy { $0.midpointTwice <= $1.midpointTwice }, "window order")
        assert(window.count <= configuration.windowSampleLimit, "window limit")
        assert(window.isEmpty == (fit == nil), "fit matches window")
    }

    /// Drops the oldest samples beyond the window's count, and those beyond its span unless too few would be left.
    private mutating func prune() {
        guard let newest = window.last?.midpointTwice else { return }
        if window.count > configuration.windowSampleLimit {
            window.removeFirst(window.count - configuration.windowSampleLimit)
        }
        let spanTwice = 2 * configuration.windowSpanMilliseconds
        var drop = 0
        while window.count - drop > configuration.windowMinimumSamples,
            newest.saturatingSubtracting(window[drop].midpointTwice) > spanTwice
        {
            drop += 1
        }
        window.removeFirst(drop)
    }

    private static func newestFirst(_ samples: [Bounded]) -> [Bounded] {
        samples.sorted { $0.midpointTwice > $1.midpointTwice }
    }

    /// Fits samples (newest first): the set of lines all of them allow, or `nil` if there is none.
    private static func makeFit(newestFirst samples: [Bounded], configuration: ClockSyncConfiguration) -> Fit? {
        guard let newest = samples.first else { return nil }
        let reference = newest.midpointTwice >> 1  // floor
        let base = (newest.lower + newest.upper) / 2
        func x(_ s: Bounded) -> Double { Double(s.midpointTwice) / 2 - Double(reference) }
        var region = FeasibleRegion(
            lower: newest.lower - base,
            upper: newest.upper - base,
            x: x(newest),
            maximumFrequency: configuration.frequencyTolerancePPM * 1e-6
        )
        for s in samples.dropFirst() {
            guard let next = region.clipped(lower: s.lower - base, upper: s.upper - base, x: x(s)) else { return nil }
            region = next
        }
        let a = region.range(at: 0)
        let f = region.frequencyRange
        // Every sample's interval is widened by the timestamp resolution on both sides, while the actual rounding
        // error is smaller (≤ 1.5 ms of the default 2): lines within a fraction of it around the truth always fit.
        // A set thinner than an eighth of the resolution means the samples barely agree: the line model no longer
        // holds (the frequency changed), and the sample is treated like one that does not fit.
        let strainFloor = configuration.timestampResolutionMilliseconds / 8
        return Fit(
            region: region,
            base: base,
            reference: reference,
            aCentre: (a.lower + a.upper) / 2,
            fCentre: (f.lower + f.upper) / 2,
            isStrained: (a.upper - a.lower) / 2 < strainFloor
        )
    }
}

/// A sample with the offset interval it allows at its server midpoint.
private struct Bounded: Sendable {
    var sample: ProbeSample
    /// t1 + t4 (twice the server midpoint), ms since the Unix epoch.
    var midpointTwice: Int64
    /// Smallest offset the sample allows: t3 − t4 minus slack, ms.
    var lower: Double
    /// Largest offset the sample allows: t2 − t1 plus slack, ms.
    var upper: Double
    /// δ, ms.
    var roundTrip: Double

    init(_ sample: ProbeSample, configuration: ClockSyncConfiguration) {
        self.sample = sample
        let t1 = sample.serverSend.millisecondsSinceEpoch
        let t4 = sample.serverReceive.millisecondsSinceEpoch
        midpointTwice = t1.saturatingAdding(t4)
        // The offset is bounded at t2 and t3, not at the midpoint: allow the frequency tolerance over half the
        // exchange (plus a ms of quantization), on top of the timestamp resolution.
        let slack =
            configuration.timestampResolutionMilliseconds + configuration.frequencyTolerancePPM * 1e-6
            * (Double(t4) - Double(t1) + 1) / 2
        // In Double: differences of two arbitrary Int64 stamps may not fit in an Int64.
        lower = Double(sample.clientSend.millisecondsSinceEpoch) - Double(t4) - slack
        upper = Double(sample.clientReceive.millisecondsSinceEpoch) - Double(t1) + slack
        roundTrip = Double(sample.roundTripMilliseconds)
    }
}

/// The allowed lines and the estimate chosen among them.
private struct Fit: Sendable {
    var region: FeasibleRegion
    /// Offset the region's `a` is relative to, ms.
    var base: Double
    /// The reference instant (x = 0), server ms since the Unix epoch.
    var reference: Int64
    /// Centre of the offset range at the reference, relative to `base`, ms.
    var aCentre: Double
    /// Centre of the frequency range, ms per ms.
    var fCentre: Double
    /// Whether the samples barely agree (the offset range at the reference is under an eighth of the resolution).
    var isStrained: Bool

    func x(of instant: ServerInstant) -> Double { Double(instant.millisecondsSinceEpoch) - Double(reference) }
    func x(ofMidpointTwice m: Int64) -> Double { Double(m) / 2 - Double(reference) }
}
