/// The fault layer's only source of chance: SplitMix64, so a seed gives the same faults on every platform and
/// toolchain (Swift's own `random(in:using:)` may change its algorithm between releases, so it is not used).
///
/// - Note: Source: Steele, Lea, Flood, "Fast Splittable Pseudorandom Number Generators" (OOPSLA 2014);
///   constants from https://prng.di.unimi.it/splitmix64.c
public struct FaultRandom: RandomNumberGenerator, Sendable, Equatable {
    private var state: UInt64

    /// A generator seeded with `seed`.
    public init(seed: UInt64) { state = seed }

    /// A generator for one named purpose under `seed` (a toxic id, a session name), independent of the others.
    public init(seed: UInt64, label: String) {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a 64
        for byte in label.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        var mixer = FaultRandom(seed: seed ^ hash)
        state = mixer.next()
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform value in `0 ..< 1`.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// True with probability `p` (always false for 0, always true for 1).
    public mutating func chance(_ p: Double) -> Bool {
        if p <= 0 { return false }
        if p >= 1 { return true }
        return unit() < p
    }

    /// A uniform integer in `0 ..< upperBound` (0 when `upperBound` ≤ 1).
    public mutating func below(_ upperBound: Int) -> Int {
        guard upperBound > 1 else { return 0 }
        return Int(next() % UInt64(upperBound))
    }

    /// The elements of `items` in a random order (Fisher–Yates).
    public mutating func shuffled<T>(_ items: [T]) -> [T] {
        var result = items
        var i = result.count - 1
        while i > 0 {
            let j = below(i + 1)
            result.swapAt(i, j)
            i -= 1
        }
        return result
    }
}
