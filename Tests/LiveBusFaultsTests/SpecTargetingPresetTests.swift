import Foundation
import LiveBusFaults
import Testing

/// Validation messages, Jepsen targeting, presets, and whole-run determinism.
@Suite struct SpecTargetingPresetTests {
    @Test(arguments: [
        (spec(.latency, ToxicParams(jitterMs: -5)), "latency: jitterMs -5 is out of range 0…600000 (milliseconds)"),
        (spec(.latency, toxicity: 1.5), "latency: toxicity 1.5 is out of range 0.0…1.0 (probability)"),
        (spec(.drop, ToxicParams(probability: 2)), "drop: probability 2.0 is out of range 0.0…1.0 (probability)"),
        (spec(.reorder, ToxicParams(window: 1)), "reorder: window 1 is out of range 2…64 (frames)"),
        (
            spec(.latency, ToxicParams(window: 3)),
            "latency: parameter window does not apply (accepted: latencyMs, jitterMs)"
        ),
        (spec(.down, ToxicParams(latencyMs: 3)), "down: parameter latencyMs does not apply (accepted: none)"),
        (spec(.limitData), "limit_data: parameter bytes is required (0…2147483647 bytes)"),
        (
            spec(.bandwidth, ToxicParams(rateKBps: 0)),
            "bandwidth: rateKBps 0.0 is out of range 0.001…1000000.0 (KB/s, 1 KB = 1000 bytes)"
        ),
        (
            spec(.slicer, ToxicParams(averageSize: 8, sizeVariation: 8)),
            "slicer: sizeVariation 8 is out of range 0…7 (bytes, below averageSize)"
        ),
        (
            spec(.partition, ToxicParams(durationMs: 0)),
            "partition: durationMs 0 is out of range 1…3600000 (milliseconds)"
        ),
        (spec(.latency, id: "a b"), "latency: id 'a b' should be 1–64 characters of A–Z a–z 0–9 _ . -"),
    ])
    func validationNamesTheParameterAndItsRange(_ toxic: ToxicSpec, _ message: String) {
        #expect(throws: FaultError(.invalidParameter, message)) { try toxic.validate() }
        var pipeline = FaultPipeline(seed: 1)
        #expect(throws: FaultError(.invalidParameter, message)) { try pipeline.add(toxic, at: 0) }
        #expect(pipeline.toxics.isEmpty)
    }

    @Test func oneToxicPerKindAndIDPerPipeline() throws {
        var pipeline = FaultPipeline(seed: 1)
        try pipeline.add(spec(.latency, id: "slow"), at: 0)
        #expect(throws: FaultError.self) { try pipeline.add(spec(.latency, id: "slower"), at: 0) }
        #expect(throws: FaultError.self) { try pipeline.add(spec(.drop, id: "slow"), at: 0) }
        do {
            try pipeline.add(spec(.latency, id: "x"), at: 0)
        } catch {
            #expect(error.code == .duplicateToxic)
            #expect(
                error.message
                    == "latency: this session already has toxic 'slow' (latency) in this direction; remove it first"
            )
        }
    }

    @Test func defaultIDsFollowToxiproxy() {
        #expect(ToxicSpec(kind: .latency).id == "latency_downstream")
        #expect(ToxicSpec(kind: .slowClose, direction: .upstream).id == "slow_close_upstream")
    }

    @Test func specsRoundTripThroughJSON() throws {
        for preset in NetworkPreset.allCases {
            let data = try JSONEncoder().encode(preset.toxics)
            #expect(try JSONDecoder().decode([ToxicSpec].self, from: data) == preset.toxics)
        }
        let json = #"{"id":"l","kind":"slow_close","direction":"up","toxicity":1,"params":{"delayMs":5}}"#
        let decoded = try JSONDecoder().decode(ToxicSpec.self, from: Data(json.utf8))
        #expect(decoded == ToxicSpec(id: "l", kind: .slowClose, direction: .upstream, params: ToxicParams(delayMs: 5)))
    }

    @Test func targetCountsFollowJepsen() {
        // n:           0  1  2  3  4  5  6  7
        let minority = [0, 0, 1, 1, 2, 2, 3, 3]
        let majority = [0, 1, 2, 2, 3, 3, 4, 4]
        for n in 0..<8 {
            let names = (0..<n).map { "phone\($0)" }
            #expect(FaultTargeting.choose(scope: .minority, among: names, seed: 5).count == minority[n])
            #expect(FaultTargeting.choose(scope: .majority, among: names, seed: 5).count == majority[n])
            #expect(FaultTargeting.choose(scope: .all, among: names, seed: 5) == names.sorted())
            #expect(FaultTargeting.choose(scope: .one, among: names, seed: 5).count == min(1, n))
        }
    }

    @Test func targetsRepeatForASeedWhateverTheListOrder() {
        let names = ["ipad", "iphone-a", "iphone-b", "fold", "watch"]
        let picked = FaultTargeting.choose(scope: .majority, among: names, seed: 12)
        #expect(FaultTargeting.choose(scope: .majority, among: names.reversed(), seed: 12) == picked)
        let picks = Set((0..<40).map { FaultTargeting.choose(scope: .minority, among: names, seed: $0) })
        #expect(picks.count > 5, "different seeds pick different minorities")
        #expect(FaultTargeting.choose(scope: .session("fold"), among: names, seed: 0) == ["fold"])
        #expect(FaultTargeting.choose(scope: .session("nope"), among: names, seed: 0).isEmpty)
        #expect(
            FaultTargeting.pipelineSeed(seed: 1, session: "fold", direction: .downstream)
                != FaultTargeting.pipelineSeed(seed: 1, session: "fold", direction: .upstream)
        )
    }

    @Test func presetsAreValidAndAddUpPerDirection() throws {
        for preset in NetworkPreset.allCases {
            var down = FaultPipeline(seed: 1)
            var up = FaultPipeline(seed: 1)
            for toxic in preset.toxics where toxic.kind != .down {
                if toxic.appliesTo(.downstream) { try down.add(toxic, at: 0) }
                if toxic.appliesTo(.upstream) { try up.add(toxic, at: 0) }
            }
            #expect(down.isActive && up.isActive, "\(preset.rawValue)")
            #expect(try NetworkPreset.named(preset.rawValue) == preset)
        }
        #expect(throws: FaultError.self) { try NetworkPreset.named("5g") }
        #expect(NetworkPreset.threeG.toxics.map(\.id).contains("3g-bandwidth-down"))
    }

    @Test func aWholeRunRepeatsForASeed() throws {
        func run(seed: UInt64) throws -> [FaultAction] {
            var pipeline = FaultPipeline(seed: seed)
            for toxic in NetworkPreset.lossy.toxics where toxic.appliesTo(.downstream) {
                try pipeline.add(toxic, at: 0)
            }
            try pipeline.add(spec(.corrupt, ToxicParams(probability: 0.05)), at: 0)
            try pipeline.add(spec(.slicer, ToxicParams(averageSize: 20, sizeVariation: 5, delayUs: 300)), at: 0)
            let inputs = (0..<300).map { (atMs: Int64($0 * 3), bytes: frame(UInt64($0))) }
            return drive(&pipeline, inputs, until: 100_000).map(\.action)
        }
        let a = try run(seed: 2026)
        #expect(try run(seed: 2026) == a)
        #expect(try run(seed: 2027) != a)
    }
}

/// Each toxic's own seed and effective parameters (fresh-user review 2026-12-03, finding 7).
@Suite struct ToxicSeedAndDefaultsTests {
    /// A toxic added later with its own seed draws as it would on a session whose first seed was that one: the seed
    /// reported for it is the one it acts with.
    @Test func aLaterToxicDrawsFromItsOwnSeed() throws {
        var drops: [[Bool]] = []
        for first in [UInt64(42), 7] {
            var f = SessionFaults(seed: first, session: "p")
            _ = try f.add(ToxicSpec(kind: .latency, params: ToxicParams(latencyMs: 0)), at: 0)
            var drop = ToxicSpec(kind: .drop, params: ToxicParams(probability: 0.5))
            drop.seed = 7
            _ = try f.add(drop, at: 0)
            var kept: [Bool] = []
            for i in 0..<64 {
                let out = f.downstream.send(frame(UInt64(i + 1)), isWholeFrame: true, at: Int64(i))
                kept.append(out.contains { if case .write = $0 { true } else { false } })
            }
            drops.append(kept)
        }
        #expect(drops[0] == drops[1], "the drop toxic's chances follow its seed 7, not the session's first seed")
        #expect(drops[0].contains(true) && drops[0].contains(false))
    }

    @Test func effectiveParametersFillEveryDefault() {
        #expect(
            ToxicParams().effective(for: .reorder)
                == ToxicParams(delayMs: 100, probability: 0.2, window: 3, frameTypes: [5, 6])
        )
        #expect(ToxicParams().effective(for: .slowClose) == ToxicParams(delayMs: 1000))
        #expect(ToxicParams(latencyMs: 500).effective(for: .latency) == ToxicParams(latencyMs: 500, jitterMs: 0))
        #expect(ToxicParams().effective(for: .down) == ToxicParams())
        #expect(ToxicParams(bytes: 10).effective(for: .limitData) == ToxicParams(bytes: 10))
    }
}
