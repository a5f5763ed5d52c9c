import LiveBusClock
import LiveBusCore
import LiveBusFaults
import LiveBusScheduler
import LiveBusWire

/// One client connection as the daemon sees it: handshake state, identity, posture, subscriptions, clock.
///
/// Loop-bound: used only on the daemon's loop thread.
final class Session {
    enum Phase: String {
        case awaitingHello, established, closed
    }

    let id: String
    /// The connection number (`id` is `s<number>`): the session's key in the daemon's topic index.
    let number: Int
    let connection: any BusConnection
    var decoder = FrameDecoder()
    var phase = Phase.awaitingHello
    /// The handshake's state machine (LiveBusCore): the daemon feeds it and carries out its actions.
    var handshake: SessionHandshake
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
    var probeTimer: (any BusTimer)?
    var probesSent = 0
    /// `t1` of the PING awaiting its PONG.
    var outstandingProbe: Int64?
    var lastProbeRoundTripMilliseconds: Double?
    var eventsSent = 0
    var connectedAt: ServerInstant
    var peerUID: UInt32?
    /// What the session's connection is sent under pressure: coalescing, terminal events, the slow-consumer limit.
    var outbox: Outbox
    /// Held events replaced by a newer one of their topic.
    var coalescedCount: Int { outbox.coalescedCount }
    /// This session's toxics (downstream and upstream pipelines), or `nil`.
    var faults: SessionFaults?
    var faultTimer: (any BusTimer)?
    var announceTimer: (any BusTimer)?
    /// Decides when an update may reach this phone (app state, push priority and budget, coalescing).
    var scheduler: RefreshScheduler?
    var schedulerTimer: (any BusTimer)?
    /// Low-power mode, frequent updates, Live Activities authorization, as the phone declared them.
    var profile = ProfileBody()
    /// Frame rate, queued replies, paced catch-up, liveness (Daemon+Limits.swift).
    let limits = SessionLimitState()

    /// PUBLISHes of this session staged in the loop turn's batch, whose ACKs wait for its commit.
    var pendingAcks = 0

    init(
        number: Int,
        connection: any BusConnection,
        now: ServerInstant,
        outbox limits: Outbox.Limits,
        handshake: SessionHandshake.Configuration
    ) {
        self.outbox = Outbox(limits: limits)
        self.handshake = SessionHandshake(handshake)
        self.id = handshake.sessionID
        self.number = number
        self.connection = connection
        self.name = "s\(number)"
        self.connectedAt = now
    }

    /// Told when ``patterns`` change (the daemon keeps its topic → subscribers index current).
    var onPatternsChanged: ((Session) -> Void)?
    /// The session's subscriptions (LiveBusCore's value): its patterns, compiled once per change.
    private(set) var subscriptions = SessionSubscriptions()
    /// The session's topic patterns (SUBSCRIBE), in the order subscribed; setting them replaces them all (resume).
    var patterns: [String] {
        get { subscriptions.patterns }
        set {
            subscriptions = SessionSubscriptions(patterns: newValue)
            onPatternsChanged?(self)
        }
    }

    /// Adds a SUBSCRIBE's patterns (``SessionSubscriptions/subscribe(_:limit:)``).
    /// - Returns: The SUBSCRIBE's patterns, compiled.
    /// - Throws: ``WireError`` as ``SessionSubscriptions/subscribe(_:limit:)``; nothing changes then.
    func subscribe(_ new: [String], limit: Int) throws(WireError) -> [CompiledPattern] {
        let compiled = try subscriptions.subscribe(new, limit: limit)
        onPatternsChanged?(self)
        return compiled
    }

    /// Removes an UNSUBSCRIBE's patterns.
    func unsubscribe(_ gone: [String]) {
        if subscriptions.unsubscribe(gone) { onPatternsChanged?(self) }
    }

    /// Whether one of the session's patterns matches `topic`.
    func isSubscribed(to topic: String) -> Bool { subscriptions.matches(topic) }

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
