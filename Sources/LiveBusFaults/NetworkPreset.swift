/// Network presets: shortcuts for lists of toxics, named like RocketSim's Network Speed Control profiles.
///
/// Names follow RocketSim (`airplane`, `3g`, `edge`, `very-bad`; devtools-anchors.md §1.5) plus our `lossy`. Our
/// references give no numbers for these profiles, so every value is ours ([ours] in `Protocol/FAULTS.md`); the
/// bandwidths are the kbit/s figures commonly quoted for Apple's Network Link Conditioner profiles converted to
/// toxiproxy's KB/s (1 KB = 1000 bytes, so kbit/s ÷ 8), and are unverified against a primary source.
public enum NetworkPreset: String, CaseIterable, Sendable {
    /// A slow 3G cell: 100 ms each way, ≈780 kbit/s down, ≈330 kbit/s up.
    case threeG = "3g"
    /// EDGE: 400 ms down / 440 ms up, ≈240 kbit/s down, ≈200 kbit/s up.
    case edge
    /// A push network on a bad day: 50 ± 20 ms, 10 % of frames dropped, 2 % duplicated, 10 % reordered (window 3).
    case lossy
    /// A very bad network: 500 ± 100 ms each way, 1000 kbit/s, 10 % of frames dropped.
    case veryBad = "very-bad"
    /// Airplane mode: nothing gets through either way, the connection stays open, new connections are refused.
    case airplane

    /// The preset's toxics, ids `<preset>-<kind>-<down|up>`; the CLI adds them to each targeted session's pipelines
    /// (`down` goes to the daemon's own list, see `FaultPipeline.refusesConnections(_:)`).
    public var toxics: [ToxicSpec] {
        switch self {
        case .threeG:
            return [
                toxic(.latency, .downstream, ToxicParams(latencyMs: 100)),
                toxic(.latency, .upstream, ToxicParams(latencyMs: 100)),
                toxic(.bandwidth, .downstream, ToxicParams(rateKBps: 97.5)),
                toxic(.bandwidth, .upstream, ToxicParams(rateKBps: 41.25)),
            ]
        case .edge:
            return [
                toxic(.latency, .downstream, ToxicParams(latencyMs: 400)),
                toxic(.latency, .upstream, ToxicParams(latencyMs: 440)),
                toxic(.bandwidth, .downstream, ToxicParams(rateKBps: 30)),
                toxic(.bandwidth, .upstream, ToxicParams(rateKBps: 25)),
            ]
        case .lossy:
            return [
                toxic(.latency, .downstream, ToxicParams(latencyMs: 50, jitterMs: 20)),
                toxic(.latency, .upstream, ToxicParams(latencyMs: 50, jitterMs: 20)),
                toxic(.drop, .downstream, ToxicParams(probability: 0.1)),
                toxic(.duplicate, .downstream, ToxicParams(probability: 0.02)),
                toxic(.reorder, .downstream, ToxicParams(probability: 0.1, window: 3)),
            ]
        case .veryBad:
            return [
                toxic(.latency, .downstream, ToxicParams(latencyMs: 500, jitterMs: 100)),
                toxic(.latency, .upstream, ToxicParams(latencyMs: 500, jitterMs: 100)),
                toxic(.bandwidth, .downstream, ToxicParams(rateKBps: 125)),
                toxic(.bandwidth, .upstream, ToxicParams(rateKBps: 125)),
                toxic(.drop, .downstream, ToxicParams(probability: 0.1)),
            ]
        case .airplane:
            return [
                toxic(.timeout, .downstream, ToxicParams(timeoutMs: 0)),
                toxic(.timeout, .upstream, ToxicParams(timeoutMs: 0)),
                toxic(.down, .downstream, ToxicParams()),
            ]
        }
    }

    /// The preset named `name`.
    /// - Throws: `FaultError` `.unknownPreset`, listing the names.
    public static func named(_ name: String) throws(FaultError) -> NetworkPreset {
        guard let preset = NetworkPreset(rawValue: name) else {
            let names = allCases.map(\.rawValue).joined(separator: ", ")
            throw FaultError(.unknownPreset, "no network preset '\(name)' (presets: \(names))")
        }
        return preset
    }

    private func toxic(_ kind: ToxicKind, _ direction: FaultDirection, _ params: ToxicParams) -> ToxicSpec {
        ToxicSpec(
            id: "\(rawValue)-\(kind.rawValue)-\(direction.rawValue)",
            kind: kind,
            direction: direction,
            params: params
        )
    }
}
