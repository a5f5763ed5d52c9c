/// ``ClockSync/toClient(_:now:)``'s arithmetic for one estimate, hoisted into plain numbers: what the daemon evaluates
/// for every EVENT it converts, without copying the estimator (its sample window, its polygon's vertex array) or
/// unwrapping its fit twice per conversion.
///
/// Built by ``ClockSync/conversionMap`` from the current fit (and the sample held back as a possible step); valid
/// until the estimator next changes (``ClockSync/add(_:)``). ``conversion(at:)`` performs the same floating-point
/// operations, in the same order, on the same values as ``ClockSync/toClient(_:now:)``, so it gives the same offset
/// and uncertainty to the bit: the EVENT's trailer (PROTOCOL.md §5.1) does not change.
///
/// A value of plain numbers (no reference, no array): copying or reading it retains nothing. Source: ISSUE-15
/// "Encode once per event" (the per-session trailer), BENCHMARKS.md "Profiles of 2026-12-03 (fan-out)".
public struct ClockConversionMap: Sendable, Equatable {
    /// Most polygon vertices a map holds inline; an estimate with more has no map (the caller converts through
    /// ``ClockSync/toClient(_:now:)``).
    public static let vertexCapacity = 8

    /// `base + aCentre`: the offset at the reference, ms.
    private var offsetAtReference: Double
    /// The estimate's frequency (`fCentre`), ms per ms.
    private var frequency: Double
    /// The reference instant as a `Double`, server ms since the Unix epoch.
    private var reference: Double
    /// Per vertex, `v.a − aCentre` (ms) and `v.f − fCentre` (ms per ms).
    private var vertexOffsets: InlineArray<8, Double>
    private var vertexFrequencies: InlineArray<8, Double>
    /// Vertices in use (1…``vertexCapacity``).
    private var vertexCount: Int
    /// Whether a sample is held back as a possible step (its term below then widens the bound).
    private var hasHeld: Bool
    /// The held sample's server midpoint relative to the reference (ms), its disagreement with the estimate there
    /// (ms), and the bound's growth per ms away from it (`tolerance + |fCentre|`).
    private var heldX: Double
    private var heldDisagreement: Double
    private var heldSlope: Double

    init?(
        offsetAtReference: Double,
        frequency: Double,
        reference: Int64,
        aCentre: Double,
        vertices: [FeasibleRegion.Vertex],
        held: (x: Double, disagreement: Double, slope: Double)?
    ) {
        guard !vertices.isEmpty, vertices.count <= Self.vertexCapacity else { return nil }
        self.offsetAtReference = offsetAtReference
        self.frequency = frequency
        self.reference = Double(reference)
        vertexOffsets = InlineArray(repeating: 0)
        vertexFrequencies = InlineArray(repeating: 0)
        for (i, v) in vertices.enumerated() {
            vertexOffsets[i] = v.a - aCentre
            vertexFrequencies[i] = v.f - frequency
        }
        vertexCount = vertices.count
        hasHeld = held != nil
        heldX = held?.x ?? 0
        heldDisagreement = held?.disagreement ?? 0
        heldSlope = held?.slope ?? 0
    }

    /// The conversion at server instant `now`: the offset to add to any server instant (whole ms, rounded as
    /// ``ServerInstant/toClientClock(offsetMilliseconds:)`` rounds it) and the uncertainty (ms, rounded up with the
    /// rounding to whole ms included), as ``ClockSync/toClient(_:now:)`` gives them.
    /// - Parameter now: The server's current time.
    /// - Returns: The offset (ms, client − server) and the uncertainty (ms).
    /// - Complexity: O(``vertexCapacity``), no allocation, no reference counting, no call into libm.
    public func conversion(at now: ServerInstant) -> (offset: Int64, uncertainty: Int) {
        let x = Double(now.millisecondsSinceEpoch) - reference
        let offset = offsetAtReference + frequency * x
        var bound = 0.0
        for i in 0..<vertexCount {
            bound = max(bound, abs(vertexOffsets[i] + vertexFrequencies[i] * x))
        }
        if hasHeld { bound = max(bound, heldDisagreement + heldSlope * abs(x - heldX)) }
        return (Self.roundedToNearest(offset), Int(Self.roundedUp(bound + 0.5)))
    }

    /// `Int64(saturating: v)` (to nearest, halves away from zero) without a call into libm: below 2⁵² in magnitude
    /// the truncation and the fraction `v − trunc(v)` are exact, so the result is the same to the bit; beyond (and
    /// NaN) the saturating conversion itself.
    @inline(__always)
    static func roundedToNearest(_ v: Double) -> Int64 {
        guard abs(v) < 0x1p52 else { return Int64(saturating: v) }
        var t = Int64(v)  // toward zero
        let fraction = v - Double(t)
        if fraction >= 0.5 { t += 1 } else if fraction <= -0.5 { t -= 1 }
        return t
    }

    /// `Int64(saturating: v.rounded(.up))` without a call into libm (exact below 2⁵² in magnitude, as above).
    @inline(__always)
    static func roundedUp(_ v: Double) -> Int64 {
        guard abs(v) < 0x1p52 else { return Int64(saturating: v.rounded(.up)) }
        var t = Int64(v)  // toward zero
        if Double(t) < v { t += 1 }
        return t
    }

    public static func == (l: Self, r: Self) -> Bool {
        guard
            l.offsetAtReference == r.offsetAtReference && l.frequency == r.frequency && l.reference == r.reference
                && l.vertexCount == r.vertexCount && l.hasHeld == r.hasHeld && l.heldX == r.heldX
                && l.heldDisagreement == r.heldDisagreement && l.heldSlope == r.heldSlope
        else { return false }
        for i in 0..<l.vertexCount
        where l.vertexOffsets[i] != r.vertexOffsets[i] || l.vertexFrequencies[i] != r.vertexFrequencies[i] {
            return false
        }
        return true
    }
}
