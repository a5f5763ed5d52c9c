import Foundation
import LiveBusFederation
import LiveBusScheduler

/// How `livebusd` runs. Every field has a command-line flag of the same name.
public struct DaemonOptions: Sendable {
    /// Unix socket path (at most 107 bytes).
    public var socketPath: String
    /// Where the daemon keeps its state (SQLite, WAL); `nil` keeps it in memory only.
    public var dataDirectory: String?
    /// Discard the data directory's state at start (explicitly; a mismatch is never reset silently).
    public var fresh: Bool = false
    /// fsync every commit, i.e. once per store batch (a loop turn's group commit): durable across power loss, not only
    /// across a crash of the daemon.
    public var fullSync: Bool = false
    /// `demo-120s`, `random:K` or a timeline file path; `nil` plays nothing.
    public var scenario: String?
    /// Scenario speed-up: 10 plays a 120 s scenario in 12 s.
    public var timeScale: Double
    /// Seed of every random choice.
    public var seed: UInt64
    /// Largest frame accepted, bytes.
    public var maximumFrameSize: Int
    /// Outstanding bytes to one session above which non-terminal events are coalesced (newest wins).
    public var coalesceThresholdBytes: Int
    /// Outstanding bytes to one session above which it is disconnected as a slow consumer.
    public var slowConsumerLimitBytes: Int
    /// Events kept per topic for replay.
    public var replayLogCapacity: Int
    /// How long a disconnected session may resume, milliseconds (real time, from its disconnect or from the start
    /// of a daemon that found its record in the data directory); its name is reserved for it until then. Default 10
    /// minutes. Flag `--resume-window`.
    public var resumeWindowMilliseconds: Int64 = 600_000
    /// The background scheduler's rules (budgets, refresh windows). Durations are in scenario time: the daemon
    /// divides them by ``timeScale``, so a scenario hour's budget is spent in 6 real minutes at 10×.
    public var scheduler: SchedulerConfig
    /// Per-session limits (frame rate, subscriptions, queued replies, timeouts, catch-up window) and the connection
    /// cap, with their documented defaults (``SessionLimits``).
    public var limits = SessionLimits()
    /// The app's activity schema file text (`--activity-schema`), already checked by ``ActivitySchema/parse(_:file:)``;
    /// relayed with every push to phones that have none of their own, so that they judge it with this schema.
    /// `nil`: phones use their own (default: the built-in delivery schema).
    public var activitySchemaText: String?
    /// The APNs-compatible HTTP/2 endpoint (`--apns`, `--apns-socket`, …; Daemon+APNs.swift). Default: none.
    public var apns = APNsOptions()
    /// Federation through NATS JetStream (`--federate`, Daemon+Federation.swift): the JetStream store instead of
    /// SQLite, shared with every daemon on the same stream. `nil`: no federation.
    public var federation: FederationOptions?
    /// `--federate-optional`: start although NATS cannot be reached (publishes are refused with
    /// `federationUnavailable` until it is), instead of exiting with the reason.
    public var federationOptional = false

    /// Creates options with the documented defaults.
    public init(
        socketPath: String,
        dataDirectory: String? = nil,
        scenario: String? = nil,
        timeScale: Double = 1,
        seed: UInt64 = 1,
        maximumFrameSize: Int = 65536,
        coalesceThresholdBytes: Int = 256 * 1024,
        slowConsumerLimitBytes: Int = 4 * 1024 * 1024,
        replayLogCapacity: Int = 1024,
        scheduler: SchedulerConfig = .default
    ) {
        self.socketPath = socketPath
        self.dataDirectory = dataDirectory
        self.scenario = scenario
        self.timeScale = timeScale
        self.seed = seed
        self.maximumFrameSize = maximumFrameSize
        self.coalesceThresholdBytes = coalesceThresholdBytes
        self.slowConsumerLimitBytes = slowConsumerLimitBytes
        self.replayLogCapacity = replayLogCapacity
        self.scheduler = scheduler
    }
}
