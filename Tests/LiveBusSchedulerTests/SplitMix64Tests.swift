import LiveBusScheduler
import Testing

struct SplitMix64Tests {
    /// SplitMix64 matches the reference implementation (prng.di.unimi.it/splitmix64.c) for seed 0.
    @Test func matchesReferenceOutput() {
        var g = SplitMix64(seed: 0)
        #expect(g.next() == 0xE220_A839_7B1D_CDAF)
        #expect(g.next() == 0x6E78_9E6A_A1B9_65F4)
    }

    /// Bounded draws stay in 0...upperBound, and 0 for a non-positive bound.
    @Test(arguments: [Int64(0), 1, 999, 300_000])
    func boundedDrawsStayInRange(upperBound: Int64) {
        var g = SplitMix64(seed: 99)
        for _ in 0..<1000 {
            let v = g.milliseconds(upTo: upperBound)
            #expect(v >= 0 && v <= upperBound)
        }
        #expect(g.milliseconds(upTo: -5) == 0)
    }
}
