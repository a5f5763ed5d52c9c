/// One session's two pipelines, with toxics routed to the direction(s) they act on (`partition` to both).
public struct SessionFaults: Sendable {
    /// Daemon → client: every frame the daemon writes to the session.
    public var downstream: FaultPipeline
    /// Client → daemon: every chunk the daemon reads from the session.
    public var upstream: FaultPipeline

    /// The user's seed the pipelines derive from (`fault add --seed`) for a toxic without a seed of its own.
    public let seed: UInt64
    /// The session's name, which every toxic's generator derives from with its seed.
    public let session: String

    /// Pipelines seeded from the user's `seed` and the session's name (`FaultTargeting.pipelineSeed`).
    public init(seed: UInt64, session: String) {
        self.seed = seed
        self.session = session
        downstream = FaultPipeline(
            seed: FaultTargeting.pipelineSeed(seed: seed, session: session, direction: .downstream)
        )
        upstream = FaultPipeline(seed: FaultTargeting.pipelineSeed(seed: seed, session: session, direction: .upstream))
    }

    /// The session's toxics, each once, downstream first, in the order added.
    public var toxics: [ToxicSpec] {
        var seen = Set<String>()
        return (downstream.toxics + upstream.toxics).filter { seen.insert($0.id).inserted }
    }

    /// False when both pipelines can be bypassed.
    public var isActive: Bool { downstream.isActive || upstream.isActive }

    /// The earlier of the two pipelines' deadlines (monotonic milliseconds).
    public var nextDeadlineMs: Int64? { [downstream.nextDeadlineMs, upstream.nextDeadlineMs].compactMap { $0 }.min() }

    /// Adds `spec` to the pipeline(s) it acts on, both or neither. Its generators derive from `spec.seed` (else
    /// ``seed``), the session's name and the direction, and the toxic's id.
    /// - Returns: the actions due by `nowMs` in each direction.
    /// - Throws: `FaultError` `.invalidParameter` (including `down`, which is daemon-wide: keep it in the daemon's list
    ///   and ask `FaultPipeline.refusesConnections(_:)`), `.duplicateToxic`.
    public mutating func add(_ spec: ToxicSpec, at nowMs: Int64) throws(FaultError) -> (
        down: [FaultAction], up: [FaultAction]
    ) {
        guard spec.kind != .down else {
            throw FaultError(
                .invalidParameter,
                "down: refuses new connections daemon-wide; it is not added to a session"
            )
        }
        try spec.validate()
        let directions = FaultDirection.allCases.filter { spec.appliesTo($0) }
        for direction in directions {
            let pipeline = direction == .downstream ? downstream : upstream
            if let other = pipeline.toxics.first(where: { $0.id == spec.id || $0.kind == spec.kind }) {
                throw FaultError(
                    .duplicateToxic,
                    "\(spec.kind.rawValue): this session already has toxic '\(other.id)' (\(other.kind.rawValue))"
                        + " in this direction; remove it first"
                )
            }
        }
        var down: [FaultAction] = []
        var up: [FaultAction] = []
        // A toxic with its own seed (its `fault add --seed`) draws from that seed, not the session's first one.
        func pipelineSeed(_ d: FaultDirection) -> UInt64? {
            spec.seed.map { FaultTargeting.pipelineSeed(seed: $0, session: session, direction: d) }
        }
        if spec.appliesTo(.downstream) {
            down = try downstream.add(spec, seed: pipelineSeed(.downstream), at: nowMs)
        }
        if spec.appliesTo(.upstream) { up = try upstream.add(spec, seed: pipelineSeed(.upstream), at: nowMs) }
        return (down, up)
    }

    /// Removes the toxic `id` from both pipelines (see `FaultPipeline.remove(id:at:)`).
    public mutating func remove(id: String, at nowMs: Int64) -> (down: [FaultAction], up: [FaultAction]) {
        (downstream.remove(id: id, at: nowMs), upstream.remove(id: id, at: nowMs))
    }

    /// Removes every toxic from both pipelines.
    public mutating func removeAll(at nowMs: Int64) -> (down: [FaultAction], up: [FaultAction]) {
        (downstream.removeAll(at: nowMs), upstream.removeAll(at: nowMs))
    }
}
