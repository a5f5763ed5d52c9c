/// The kind of a fault ("toxic"), named as toxiproxy names it where toxiproxy has it.
///
/// Byte-stream toxics (`latency`, `bandwidth`, `slicer`, `slow_close`, `limit_data`) and connection toxics
/// (`timeout`, `reset_peer`, `down`) follow toxiproxy; frame toxics (`drop`, `duplicate`, `reorder`, `corrupt`) are
/// ours, because a stream socket never loses bytes but a push network loses, repeats and reorders messages;
/// `partition` is Jepsen's.
///
/// - Note: Source: `shared/reference/faults-sync-libuv.md` §1.1 (toxiproxy `f48fd7f`), §1.4 (Jepsen).
public enum ToxicKind: String, Codable, CaseIterable, Sendable {
    case latency
    case bandwidth
    case slicer
    case slowClose = "slow_close"
    case limitData = "limit_data"
    case timeout
    case resetPeer = "reset_peer"
    case down
    case drop
    case duplicate
    case reorder
    case corrupt
    case partition

    /// True for the toxics that act on whole frames only (`drop`, `duplicate`, `reorder`, `corrupt`).
    public var isFrameToxic: Bool {
        switch self {
        case .drop, .duplicate, .reorder, .corrupt: return true
        default: return false
        }
    }

    /// The parameters this kind accepts, as `ToxicParams` member names.
    public var parameterNames: [String] {
        switch self {
        case .latency: return ["latencyMs", "jitterMs"]
        case .bandwidth: return ["rateKBps"]
        case .slicer: return ["averageSize", "sizeVariation", "delayUs"]
        case .slowClose: return ["delayMs"]
        case .limitData: return ["bytes"]
        case .timeout, .resetPeer: return ["timeoutMs"]
        case .down: return []
        case .drop, .duplicate, .corrupt: return ["probability", "frameTypes"]
        case .reorder: return ["probability", "window", "delayMs", "frameTypes"]
        case .partition: return ["durationMs"]
        }
    }
}

/// Which way the bytes flow through a toxic.
///
/// toxiproxy's `downstream` is server → client and `upstream` client → server; for LiveBus the server is the daemon.
public enum FaultDirection: String, Codable, CaseIterable, Sendable {
    /// Daemon → client: frames the daemon writes to the session.
    case downstream = "down"
    /// Client → daemon: bytes the daemon reads from the session.
    case upstream = "up"
}

/// A toxic's parameters; each kind reads the members listed in `ToxicKind.parameterNames` and ignores none:
/// a member set for a kind that does not take it is an error (`ToxicSpec.validate()`).
///
/// Unset members take the defaults in `ToxicParams.Defaults` (documented in `Protocol/FAULTS.md`).
public struct ToxicParams: Codable, Sendable, Equatable {
    /// `latency`: added delay in milliseconds (toxiproxy `latency`).
    public var latencyMs: Int64?
    /// `latency`: ± spread in milliseconds (toxiproxy `jitter`); the delay is drawn in `latency-jitter ..< latency+jitter`.
    public var jitterMs: Int64?
    /// `bandwidth`: rate in KB/s, 1 KB = 1000 bytes (toxiproxy `rate`, which sleeps `len` ms / `rate`).
    public var rateKBps: Double?
    /// `slicer`: average piece size in bytes (toxiproxy `average_size`).
    public var averageSize: Int?
    /// `slicer`: ± variation of a piece's size in bytes (toxiproxy `size_variation`).
    public var sizeVariation: Int?
    /// `slicer`: delay between pieces in **microseconds** (toxiproxy `delay`, µs).
    public var delayUs: Int64?
    /// `slow_close`: delay of a close in milliseconds (toxiproxy `delay`); `reorder`: the longest a held frame waits.
    public var delayMs: Int64?
    /// `limit_data`: bytes delivered before the connection is closed (toxiproxy `bytes`).
    public var bytes: Int64?
    /// `timeout`, `reset_peer`: milliseconds after the toxic is added (toxiproxy `timeout`); `timeout` 0 = never close.
    public var timeoutMs: Int64?
    /// `drop`, `duplicate`, `corrupt`, `reorder`: probability per whole frame, 0…1.
    public var probability: Double?
    /// `reorder`: a held frame is overtaken by 1…`window`−1 later frames.
    public var window: Int?
    /// `partition`: milliseconds the session stays blackholed in both directions before it heals by itself.
    public var durationMs: Int64?
    /// Frame toxics: the frame type codes (PROTOCOL.md §3, byte 5) the toxic acts on; unset = PUBLISH and EVENT
    /// (5, 6), the push messages, since a reliable stream loses no other frame. Other frames pass untouched.
    public var frameTypes: [UInt8]?

    /// Parameters with every member unset (all defaults).
    public init(
        latencyMs: Int64? = nil,
        jitterMs: Int64? = nil,
        rateKBps: Double? = nil,
        averageSize: Int? = nil,
        sizeVariation: Int? = nil,
        delayUs: Int64? = nil,
        delayMs: Int64? = nil,
        bytes: Int64? = nil,
        timeoutMs: Int64? = nil,
        probability: Double? = nil,
        window: Int? = nil,
        durationMs: Int64? = nil,
        frameTypes: [UInt8]? = nil
    ) {
        self.latencyMs = latencyMs
        self.jitterMs = jitterMs
        self.rateKBps = rateKBps
        self.averageSize = averageSize
        self.sizeVariation = sizeVariation
        self.delayUs = delayUs
        self.delayMs = delayMs
        self.bytes = bytes
        self.timeoutMs = timeoutMs
        self.probability = probability
        self.window = window
        self.durationMs = durationMs
        self.frameTypes = frameTypes
    }

    /// Defaults for unset members. toxiproxy's own defaults are 0 for every attribute; where 0 would make the toxic a
    /// no-op we chose a value that shows the fault ([ours]); frame probabilities follow Jepsen's 20 % packet defaults.
    public enum Defaults {
        /// `latency` default, milliseconds [ours; toxiproxy 0].
        public static let latencyMs: Int64 = 100
        /// `jitter` default, milliseconds [toxiproxy 0].
        public static let jitterMs: Int64 = 0
        /// `bandwidth` default, KB/s [ours; toxiproxy 0 = unlimited].
        public static let rateKBps: Double = 100
        /// `slicer` average piece, bytes [ours; toxiproxy 0].
        public static let averageSize = 64
        /// `slicer` variation, bytes [ours; toxiproxy 0].
        public static let sizeVariation = 16
        /// `slicer` delay between pieces, microseconds [ours; toxiproxy 0].
        public static let delayUs: Int64 = 1000
        /// `slow_close` delay, milliseconds [ours; toxiproxy 0].
        public static let slowCloseDelayMs: Int64 = 1000
        /// `timeout` / `reset_peer` default, milliseconds [toxiproxy 0: blackhole / reset at once].
        public static let timeoutMs: Int64 = 0
        /// Frame toxic probability [Jepsen `:packet` default 20 %, faults-sync-libuv.md §1.4].
        public static let probability = 0.2
        /// `reorder` window, frames [ours].
        public static let window = 3
        /// `reorder` longest hold, milliseconds [ours; Jepsen adds 50 ms of delay to reorder].
        public static let reorderDelayMs: Int64 = 100
        /// `partition` duration, milliseconds [ours; Jepsen's default nemesis interval is 10 s].
        public static let durationMs: Int64 = 10_000
        /// Frame toxics act on PUBLISH (5) and EVENT (6) frames [ours].
        public static let frameTypes: [UInt8] = [5, 6]
    }

    /// These parameters with every member `kind` takes (``ToxicKind/parameterNames``) and leaves unset given its
    /// default (``Defaults``): what the toxic acts with, as `livebus fault add` and `fault list` report it
    /// (`limit_data`'s `bytes` has no default and stays as given).
    public func effective(for kind: ToxicKind) -> ToxicParams {
        var p = self
        for name in kind.parameterNames {
            switch name {
            case "latencyMs": p.latencyMs = p.latencyMs ?? Defaults.latencyMs
            case "jitterMs": p.jitterMs = p.jitterMs ?? Defaults.jitterMs
            case "rateKBps": p.rateKBps = p.rateKBps ?? Defaults.rateKBps
            case "averageSize": p.averageSize = p.averageSize ?? Defaults.averageSize
            case "sizeVariation": p.sizeVariation = p.sizeVariation ?? Defaults.sizeVariation
            case "delayUs": p.delayUs = p.delayUs ?? Defaults.delayUs
            case "delayMs":
                p.delayMs = p.delayMs ?? (kind == .reorder ? Defaults.reorderDelayMs : Defaults.slowCloseDelayMs)
            case "timeoutMs": p.timeoutMs = p.timeoutMs ?? Defaults.timeoutMs
            case "probability": p.probability = p.probability ?? Defaults.probability
            case "window": p.window = p.window ?? Defaults.window
            case "durationMs": p.durationMs = p.durationMs ?? Defaults.durationMs
            case "frameTypes": p.frameTypes = p.frameTypes ?? Defaults.frameTypes
            default: break
            }
        }
        return p
    }

    /// The member names that are set, in declaration order.
    public var setNames: [String] {
        var names: [String] = []
        if latencyMs != nil { names.append("latencyMs") }
        if jitterMs != nil { names.append("jitterMs") }
        if rateKBps != nil { names.append("rateKBps") }
        if averageSize != nil { names.append("averageSize") }
        if sizeVariation != nil { names.append("sizeVariation") }
        if delayUs != nil { names.append("delayUs") }
        if delayMs != nil { names.append("delayMs") }
        if bytes != nil { names.append("bytes") }
        if timeoutMs != nil { names.append("timeoutMs") }
        if probability != nil { names.append("probability") }
        if window != nil { names.append("window") }
        if durationMs != nil { names.append("durationMs") }
        if frameTypes != nil { names.append("frameTypes") }
        return names
    }
}

/// One toxic as the user asked for it: what, which way, how likely, with which parameters.
public struct ToxicSpec: Codable, Sendable, Equatable {
    /// A name unique within a session and direction, `[A-Za-z0-9_.-]`, 1–64 characters (toxiproxy `name`).
    public var id: String
    /// What the toxic does.
    public var kind: ToxicKind
    /// Which way it acts. `partition` acts on both directions whatever this says (`appliesTo(_:)`).
    public var direction: FaultDirection
    /// Probability, 0…1, that the toxic applies to a given session's pipeline; drawn once when it is added
    /// (toxiproxy draws `rand.Float32() < toxicity` once per link).
    public var toxicity: Double
    /// The kind's parameters.
    public var params: ToxicParams
    /// The seed of the `fault add` that added this toxic (its `--seed`, else the daemon's): its toxicity draw and
    /// per-frame chances derive from it, the session's name and the direction (``SessionFaults/add(_:at:)``);
    /// `nil`: the session's seed.
    public var seed: UInt64?

    /// A toxic; `id` defaults to toxiproxy's `<type>_<stream>` naming (`latency_downstream`).
    public init(
        id: String? = nil,
        kind: ToxicKind,
        direction: FaultDirection = .downstream,
        toxicity: Double = 1,
        params: ToxicParams = ToxicParams(),
        seed: UInt64? = nil
    ) {
        self.id = id ?? "\(kind.rawValue)_\(direction == .downstream ? "downstream" : "upstream")"
        self.kind = kind
        self.direction = direction
        self.toxicity = toxicity
        self.params = params
        self.seed = seed
    }

    private enum CodingKeys: String, CodingKey { case id, kind, direction, toxicity, params, seed }

    /// Decodes `{"id"?, "kind", "direction"?, "toxicity"?, "params"?, "seed"?}` with
    /// ``init(id:kind:direction:toxicity:params:seed:)``'s defaults for what is absent.
    /// - Throws: `DecodingError` when `kind` is missing or unknown, or a member has the wrong type.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decodeIfPresent(String.self, forKey: .id),
            kind: try c.decode(ToxicKind.self, forKey: .kind),
            direction: try c.decodeIfPresent(FaultDirection.self, forKey: .direction) ?? .downstream,
            toxicity: try c.decodeIfPresent(Double.self, forKey: .toxicity) ?? 1,
            params: try c.decodeIfPresent(ToxicParams.self, forKey: .params) ?? ToxicParams(),
            seed: try c.decodeIfPresent(UInt64.self, forKey: .seed)
        )
    }

    /// This toxic as `livebus fault add` and `fault list` report it: its parameters with the defaults filled in
    /// (``ToxicParams/effective(for:)``) and its seed (`defaultSeed` when it has none of its own).
    public func reported(defaultSeed: UInt64) -> ToxicSpec {
        var t = self
        t.params = params.effective(for: kind)
        t.seed = seed ?? defaultSeed
        return t
    }

    /// True when the toxic belongs in the pipeline of `direction`: its own direction, or both for `partition`.
    public func appliesTo(_ direction: FaultDirection) -> Bool {
        kind == .partition || self.direction == direction
    }

    /// Checks the id, toxicity and every parameter against its valid range.
    ///
    /// - Throws: `FaultError` with code `.invalidParameter`; the message names the parameter, its value and range,
    ///   e.g. `latency: jitterMs -5 is out of range 0…600000 (milliseconds)`.
    public func validate() throws(FaultError) {
        guard !id.isEmpty, id.count <= 64,
            id.unicodeScalars.allSatisfy({ $0.isASCII && (Self.idCharacters.contains(Character($0))) })
        else {
            throw FaultError(
                .invalidParameter,
                "\(kind.rawValue): id '\(id)' should be 1–64 characters of A–Z a–z 0–9 _ . -"
            )
        }
        try check("toxicity", toxicity, 0...1, "probability")
        for name in params.setNames where !kind.parameterNames.contains(name) {
            let accepted = kind.parameterNames.isEmpty ? "none" : kind.parameterNames.joined(separator: ", ")
            throw FaultError(
                .invalidParameter,
                "\(kind.rawValue): parameter \(name) does not apply (accepted: \(accepted))"
            )
        }
        let p = params
        if let v = p.latencyMs { try check("latencyMs", v, Limits.milliseconds, "milliseconds") }
        if let v = p.jitterMs { try check("jitterMs", v, Limits.milliseconds, "milliseconds") }
        if let v = p.rateKBps { try check("rateKBps", v, Limits.rateKBps, "KB/s, 1 KB = 1000 bytes") }
        if let v = p.averageSize { try check("averageSize", Int64(v), 1...65_536, "bytes") }
        if let v = p.sizeVariation {
            let average = Int64(p.averageSize ?? ToxicParams.Defaults.averageSize)
            try check("sizeVariation", Int64(v), 0...(average - 1), "bytes, below averageSize")
        }
        if let v = p.delayUs { try check("delayUs", v, 0...10_000_000, "microseconds") }
        if let v = p.delayMs { try check("delayMs", v, Limits.milliseconds, "milliseconds") }
        if let v = p.bytes { try check("bytes", v, 0...Int64(Int32.max), "bytes") }
        if kind == .limitData, p.bytes == nil {
            throw FaultError(.invalidParameter, "limit_data: parameter bytes is required (0…\(Int32.max) bytes)")
        }
        if let v = p.timeoutMs { try check("timeoutMs", v, Limits.timeoutMs, "milliseconds, 0 = never") }
        if let v = p.probability { try check("probability", v, 0...1, "probability") }
        if let v = p.window { try check("window", Int64(v), 2...64, "frames") }
        if let v = p.durationMs { try check("durationMs", v, Limits.durationMs, "milliseconds") }
        if let v = p.frameTypes {
            guard !v.isEmpty, !v.contains(0) else {
                throw FaultError(
                    .invalidParameter,
                    "\(kind.rawValue): frameTypes should list 1 or more frame type codes 1…255 (PROTOCOL.md §3)"
                )
            }
        }
    }

    /// The accepted range of each timed or rated parameter (the daemon checks them here; `livebus fault add`
    /// checks its flags against the same ranges before it connects).
    public enum Limits {
        /// `latencyMs`, `jitterMs`, `delayMs`: milliseconds.
        public static let milliseconds: ClosedRange<Int64> = 0...600_000
        /// `timeoutMs`: milliseconds, 0 = never.
        public static let timeoutMs: ClosedRange<Int64> = 0...3_600_000
        /// `durationMs`: milliseconds.
        public static let durationMs: ClosedRange<Int64> = 1...3_600_000
        /// `rateKBps`: KB/s, 1 KB = 1000 bytes.
        public static let rateKBps: ClosedRange<Double> = 0.001...1_000_000
    }

    private static let idCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")

    private func check(_ name: String, _ value: Int64, _ range: ClosedRange<Int64>, _ unit: String) throws(FaultError) {
        guard range.contains(value) else {
            throw FaultError(
                .invalidParameter,
                "\(kind.rawValue): \(name) \(value) is out of range \(range.lowerBound)…\(range.upperBound) (\(unit))"
            )
        }
    }

    private func check(_ name: String, _ value: Double, _ range: ClosedRange<Double>, _ unit: String)
        throws(FaultError)
    {
        guard value.isFinite, range.contains(value) else {
            throw FaultError(
                .invalidParameter,
                "\(kind.rawValue): \(name) \(value) is out of range \(range.lowerBound)…\(range.upperBound) (\(unit))"
            )
        }
    }
}

/// An error of the fault layer: a code to branch on and a message that says what to change.
public struct FaultError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case invalidParameter, duplicateToxic, unknownPreset }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        /// A parameter, the id or the toxicity is out of range, missing, or does not apply to the kind.
        public static let invalidParameter = Code(.invalidParameter)
        /// The pipeline already holds a toxic with this id, or of this kind.
        public static let duplicateToxic = Code(.duplicateToxic)
        /// No network preset has this name.
        public static let unknownPreset = Code(.unknownPreset)
        /// The code's name, e.g. `invalidParameter`.
        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A sentence naming the parameter and its valid range, or the conflicting toxic.
    public var message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
