import Foundation

/// The simulator's only source of chance: xoshiro256** seeded through SplitMix64.
///
/// Its whole state is four words, saved with the simulator (as hex strings, so no JSON reader can round them),
/// so a restored simulator draws exactly the numbers the original would have drawn.
/// - Note: Source: Blackman & Vigna, "Scrambled linear pseudorandom number generators" (xoshiro256**, SplitMix64),
///   https://prng.di.unimi.it/
public struct SimulationRNG: RandomNumberGenerator, Sendable, Hashable, Codable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    /// Creates a generator whose sequence is fixed by `seed`.
    ///
    /// - Parameter seed: Any 64-bit value; equal seeds give equal sequences.
    public init(seed: UInt64) {
        var sm = seed
        func splitMix() -> UInt64 {
            sm &+= 0x9E37_79B9_7F4A_7C15
            var z = sm
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = splitMix()
        s1 = splitMix()
        s2 = splitMix()
        s3 = splitMix()
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = (s3 << 45) | (s3 >> 19)
        return result
    }

    /// A uniform value in [0, 1) with 53 random bits.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// A uniform value in [`low`, `high`).
    public mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * unit() }

    /// `true` with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { unit() < p }

    /// A standard normal value (Box–Muller, one draw of two uniforms per call).
    public mutating func standardNormal() -> Double {
        let u1 = max(unit(), 0x1.0p-53)
        let u2 = unit()
        return (-2 * Foundation.log(u1)).squareRoot() * Foundation.cos(2 * Double.pi * u2)
    }

    /// A lognormal value LN(median, σ), clamped to `range` when given.
    ///
    /// - Parameters:
    ///   - median: The median (e^μ) in the caller's unit.
    ///   - sigma: The log-standard deviation σ.
    ///   - range: Clamp bounds, or `nil` for none.
    /// - Returns: `median · e^(σ·z)` for a standard normal z, clamped.
    /// - Note: Source: ../shared/reference/delivery-reality.md §4 ("LN(m, σ) means lognormal with median m").
    public mutating func logNormal(median: Double, sigma: Double, clampedTo range: ClosedRange<Double>? = nil)
        -> Double
    {
        let value = median * Foundation.exp(sigma * standardNormal())
        guard let range else { return value }
        return min(max(value, range.lowerBound), range.upperBound)
    }

    /// A triangular value with the given minimum, mode and maximum (inverse CDF).
    ///
    /// - Parameters:
    ///   - low: The minimum.
    ///   - mode: The most likely value.
    ///   - high: The maximum.
    /// - Returns: A value in [`low`, `high`].
    public mutating func triangular(_ low: Double, _ mode: Double, _ high: Double) -> Double {
        let u = unit()
        let split = (mode - low) / (high - low)
        if u < split { return low + ((high - low) * (mode - low) * u).squareRoot() }
        return high - ((high - low) * (high - mode) * (1 - u)).squareRoot()
    }

    private enum CodingKeys: String, CodingKey { case state }

    /// Decodes the four state words from hex strings.
    ///
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError.dataCorrupted` when the state is not four 64-bit hex words, or all zero.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let words = try c.decode([String].self, forKey: .state).compactMap { UInt64($0, radix: 16) }
        guard words.count == 4, words.contains(where: { $0 != 0 }) else {
            throw DecodingError.dataCorruptedError(
                forKey: .state,
                in: c,
                debugDescription: "expected four non-zero 64-bit hex words"
            )
        }
        (s0, s1, s2, s3) = (words[0], words[1], words[2], words[3])
    }

    /// Encodes the four state words as hex strings.
    ///
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: Whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode([s0, s1, s2, s3].map { String($0, radix: 16) }, forKey: .state)
    }
}
