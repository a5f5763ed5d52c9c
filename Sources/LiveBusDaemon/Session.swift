import LiveBusClock
import LiveBusFaults
import LiveBusScheduler
import LiveBusLoop
import LiveBusWire

/// One client connection as the daemon sees it: handshake state, identity, posture, subscriptions, clock.
///
/// Loop-bound: used only on the daemon's loop thread.
final class Session {
    enum Phase: String {
        case awaitingHello, established, closed
    }

    let id: String
    let connection: Connection
    var decoder = FrameDecoder()
    var phase = Phase.awaitingHello
    var role = ClientRole.session
    var name: String
    var client = ""
    var device: String?
    var posture: PostureBody?
    var appState = "foreground"
    var os: String?
    var resumeToken = ""
    /// Topic → highest sequence written to this session.
    var lastSent: [String: UInt64] = [:]
    /// Topic → the ETA target as last converted for this session (to re-send after steps and drift).
    var lastConverted: [String: ConvertedInstant] = [:]
    /// Topic → highest sequence the client acknowledged.
    var lastAcked: [String: UInt64] = [:]
    var clock = ClockSync()
    /// Offset (client − server, ms) seen in HELLO; used until the first probe converges.
    var handshakeOffsetMilliseconds: Double = 0
    var probeTimer: LoopTimer?
    var probesSent = 0
    /// `t1` of the PING awaiting its PONG.
    var outstandingProbe: Int64?
    var lastProbeRoundTripMilliseconds: Double?
    var eventsSent = 0
    var connectedAt: ServerInstant
    var peerUID: UInt32?
    /// Topic → newest event held back while the connection is congested (coalesced: newest wins).
    var held: [String: StoredEvent] = [:]
    var coalescedCount = 0
    /// This session's toxics (downstream and upstream pipelines), or `nil`.
    var faults: SessionFaults?
    var faultTimer: LoopTimer?
    var announceTimer: LoopTimer?
    /// Decides when an update may reach this phone (app state, push priority and budget, coalescing).
    var scheduler: RefreshScheduler?
    var schedulerTimer: LoopTimer?
    /// Low-power mode, frequent updates, Live Activities authorization, as the phone declared them.
    var profile = ProfileBody()
    /// Frame rate, queued replies, paced catch-up, liveness (Daemon+Limits.swift).
    let limits = SessionLimitState()

    init(id: String, connection: Connection, now: ServerInstant) {
        self.id = id
        self.connection = connection
        self.name = id
        self.connectedAt = now
    }

    /// Topic → whether a pattern matches; patterns are matched once per topic, not once per event.
    private var matchCache: [String: Bool] = [:]
    /// The session's topic patterns (SUBSCRIBE); changing them clears the match cache.
    var patterns: [String] = [] {
        didSet { matchCache.removeAll(keepingCapacity: true) }
    }

    func isSubscribed(to topic: String) -> Bool {
        if let hit = matchCache[topic] { return hit }
        let m = patterns.contains { Topic.matches(pattern: $0, topic: topic) }
        if matchCache.count > 100_000 { matchCache.removeAll(keepingCapacity: true) }
        matchCache[topic] = m
        return m
    }

    /// Converts a server instant into this session's clock, keeping the full conversion.
    func convert(_ s: ServerInstant, now: ServerInstant) -> ConvertedInstant {
        if let c = clock.toClient(s, now: now) { return c }
        return ConvertedInstant(
            client: s.toClientClock(offsetMilliseconds: handshakeOffsetMilliseconds),
            server: s,
            uncertaintyMilliseconds: 1000
        )
    }
}
