import LiveBusCore

/// The daemon's bus on an ``EmbeddedLoop``: every session state machine of `livebusd` (handshake, subscriptions,
/// catch-up, resume, clock probes, limits, faults, commands), driven in memory on virtual time, with no socket, no
/// thread and no real clock. An in-memory store unless ``DaemonOptions/dataDirectory`` is set.
///
/// ```swift
/// let bus = try EmbeddedDaemon(options: .embedded(scenario: "demo-120s"))
/// let phone = bus.connect()
/// try phone.writeInbound(helloFrame)
/// bus.advance(by: 1_000)
/// let frames = try phone.readOutboundFrames()
/// ```
public typealias EmbeddedDaemon = EmbeddedBus<Daemon>

extension EmbeddedBus where Engine == Daemon {
    /// Creates and starts a daemon on a new embedded loop (``Daemon/startEmbedded()``).
    /// - Parameters:
    ///   - options: What to serve and how (limits, scenario, timeouts); the socket path is not used.
    ///   - logger: Where the daemon's log lines go. Default: nowhere.
    ///   - loop: The loop; default a new one at virtual time 0 (server clock 2026-01-01T00:00:00Z).
    /// - Throws: ``DaemonError`` when the scenario or data directory cannot be loaded.
    public convenience init(
        options: DaemonOptions = .embedded(),
        logger: Logger = .none,
        loop: EmbeddedLoop = EmbeddedLoop()
    ) throws(DaemonError) {
        try self.init(loop: loop) { (loop) throws(DaemonError) -> Daemon in
            let d = Daemon(options: options, transport: loop, logger: logger, clock: loop.serverClock)
            try d.startEmbedded()
            return d
        }
    }
}

extension Daemon: BusEngine {}

extension DaemonOptions {
    /// Options for an embedded daemon (``EmbeddedDaemon``): no socket, no data directory, and by default no
    /// scenario; the limits' documented defaults (the connection cap is ``SessionLimits/maximumConnections`` alone:
    /// an embedded bus holds no descriptors).
    /// - Parameters:
    ///   - scenario: `demo-120s`, `random:K` or a timeline path; `nil` plays nothing.
    ///   - timeScale: Scenario speed-up.
    ///   - seed: Seed of every random choice.
    /// - Returns: The options.
    public static func embedded(scenario: String? = nil, timeScale: Double = 1, seed: UInt64 = 1) -> DaemonOptions {
        DaemonOptions(socketPath: "embedded", scenario: scenario, timeScale: timeScale, seed: seed)
    }
}
