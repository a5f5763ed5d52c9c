/// A seeded pseudo-random generator (SplitMix64): the scheduler's only source of chance.
///
/// The same seed always gives the same sequence, on every platform.
///
/// - Note: Source: Steele, Lea, Flood, "Fast Splittable Pseudorandom Number Generators" (OOPSLA 2014);
///   constants from https://prng.di.unimi.it/splitmix64.c
public struct SplitMix64: RandomNumberGenerator, Sendable, Equatable, Hashable {
    private var state: UInt64

    /// Creates a generator from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0...upperBound` milliseconds (0 when `upperBound` ≤ 0).
    public mutating func milliseconds(upTo upperBound: Int64) -> Int64 {
        guard upperBound > 0 else { return 0 }
        return Int64(next() % (UInt64(upperBound) + 1))
    }
}
