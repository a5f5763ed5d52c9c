import LiveBusWire

/// The per-session resource limits and the connection cap, with their documented defaults
/// (`Protocol/PROTOCOL.md` §5.6, `livebusd --help`). Past a limit a session is first slowed (the daemon stops
/// reading it), then, if it stays there for ``graceMilliseconds``, cut with the limit's code.
///
/// Sources: the field's usual limits — NATS `max_subscriptions`, `max_connections`, `ping_interval` and slow
/// consumers; MQTT 5 reason codes "Message rate too high" (0x96) and "Keep Alive timeout" (0x8D); Redis
/// `client-output-buffer-limit` (a cap on queued replies).
public struct SessionLimits: Sendable, Equatable {
    /// Frames a session may send per second, sustained (token bucket). Default 20 000: above the 11.4 k PUBLISH/s
    /// a durable daemon sustains (BENCHMARKS.md), far below a flood (2.4 M PINGs in 15 s is 160 k/s).
    public var framesPerSecond: Int = 20_000
    /// Frames a session may send at once after being quiet (the bucket's size). Default: one second's worth.
    public var frameBurst: Int = 20_000
    /// Topic patterns one session may hold (SUBSCRIBE). Default 1 000.
    public var maximumSubscriptions: Int = 1_000
    /// Bytes of replies (PONG, ACK, RESULT, UPTODATE, ERROR) queued to a session above which the daemon stops
    /// reading it until they drain to half. Default 65 536.
    public var maximumReplyBytes: Int = 64 * 1024
    /// How long a session may stay slowed by the frame rate or by its queued replies before it is cut,
    /// milliseconds (monotonic). Default 5 000.
    public var graceMilliseconds: Int64 = 5_000
    /// Frames handled per session per loop turn; the rest wait for the next turn, in order. Default 64.
    public var framesPerTurn: Int = 64
    /// Frames handled per loop turn for a session of role `publisher` or `admin` (``framesPerTurn(for:)``).
    /// Everything one turn reads is one store batch (group commit), so this caps a pipelining publisher's
    /// transaction: at 64 frames a turn a publisher got at most 64 rows per commit. The CPU-time budget
    /// (``turnBudgetMicroseconds``) still bounds the turn, so other sessions are served between a publisher's
    /// turns as before. Default 1 024. Phones and observers keep ``framesPerTurn``.
    public var publisherFramesPerTurn: Int = 1_024
    /// CPU time one session's frames may take per loop turn (the loop thread's), microseconds: past it the rest waits for the
    /// next turn even if ``framesPerTurn`` is not used up (a PUBLISH to a durable store costs far more than a PING).
    /// Counted from the turn's second frame (a read of one frame reads no CPU clock). Default 1 000.
    public var turnBudgetMicroseconds: Int64 = 1_000
    /// A connection that has not completed HELLO after this long is cut (`handshakeTimeout`), milliseconds.
    /// Default 10 000.
    public var handshakeTimeoutMilliseconds: Int64 = 10_000
    /// A session from which nothing at all arrived for this long is cut (`idleTimeout`), milliseconds. The daemon
    /// sends a keepalive PING after half of it; any frame, a PONG included, counts. Default 180 000 (three times the
    /// 60 s probe interval of a backgrounded phone).
    public var idleTimeoutMilliseconds: Int64 = 180_000
    /// Open connections accepted at most; `nil`: the descriptor limit (`RLIMIT_NOFILE`) minus a reserve
    /// (``connectionCap(descriptorLimit:)``).
    public var maximumConnections: Int?
    /// Bytes of catch-up (replay and snapshot) kept queued to a session: the next events are written when the
    /// phone drained below this mark. They count apart from the live coalescing and slow-consumer limits.
    /// Default 262 144.
    public var catchUpWindowBytes: Int = 256 * 1024

    /// Creates limits with the documented defaults.
    public init() {}

    /// Frames a session of `role` may have handled in one loop turn: ``publisherFramesPerTurn`` for publishers and
    /// admin tools (their frames are PUBLISHes and COMMANDs, batched per turn), ``framesPerTurn`` for phones and
    /// observers (and before HELLO names the role). At least 1.
    /// - Parameter role: The session's role from HELLO.
    /// - Returns: The frame budget of one turn.
    public func framesPerTurn(for role: ClientRole) -> Int {
        switch role {
        case .publisher, .admin: return max(1, publisherFramesPerTurn)
        case .session, .observer: return max(1, framesPerTurn)
        }
    }

    /// Descriptors kept for everything but connections: SQLite's database, WAL and shared memory, the data
    /// directory's lock, the loop's own (epoll, eventfd, signals), logs. At most half the limit.
    public static func descriptorReserve(descriptorLimit: Int) -> Int { min(64, max(0, descriptorLimit / 2)) }

    /// The default connection cap: the descriptor limit minus ``descriptorReserve(descriptorLimit:)``, at least 1.
    public static func connectionCap(descriptorLimit: Int) -> Int {
        max(1, descriptorLimit - descriptorReserve(descriptorLimit: descriptorLimit))
    }

    /// The connection cap in force: ``maximumConnections`` when set, else ``connectionCap(descriptorLimit:)``.
    /// - Throws: a message naming the flag when ``maximumConnections`` is above what the descriptors allow (the
    ///   connections past it would be dropped by the kernel's `EMFILE` without a word).
    public func effectiveConnectionCap(descriptorLimit: Int) throws(DaemonError) -> Int {
        let allowed = SessionLimits.connectionCap(descriptorLimit: descriptorLimit)
        guard let m = maximumConnections else { return allowed }
        guard m >= 1 else { throw DaemonError("--max-connections \(m) must be at least 1") }
        guard m <= allowed else {
            throw DaemonError(
                "--max-connections \(m) is above what the descriptor limit allows (RLIMIT_NOFILE \(descriptorLimit) minus \(SessionLimits.descriptorReserve(descriptorLimit: descriptorLimit)) reserved = \(allowed)); raise `ulimit -n` or lower --max-connections"
            )
        }
        return m
    }
}

/// What the liveness sweep does with one connection. Pure: the instants are monotonic milliseconds.
public enum LivenessVerdict: Sendable, Equatable {
    /// Nothing to do.
    case ok
    /// Send a keepalive PING (half the idle timeout passed in silence).
    case sendKeepalive
    /// No HELLO within the handshake timeout.
    case handshakeTimedOut
    /// Nothing received within the idle timeout.
    case idleTimedOut

    /// The verdict for one connection.
    /// - Parameters:
    ///   - established: Whether HELLO completed.
    ///   - acceptedMs: When the connection was accepted.
    ///   - lastReceivedMs: When bytes last arrived from it.
    ///   - keepaliveSentMs: When the last keepalive PING was sent, or `nil`.
    ///   - nowMs: Now.
    ///   - limits: The timeouts.
    /// - Returns: what to do with the connection now.
    public static func of(
        established: Bool,
        acceptedMs: Int64,
        lastReceivedMs: Int64,
        keepaliveSentMs: Int64?,
        nowMs: Int64,
        limits: SessionLimits
    ) -> LivenessVerdict {
        guard established else {
            return nowMs - acceptedMs > limits.handshakeTimeoutMilliseconds ? .handshakeTimedOut : .ok
        }
        let silent = nowMs - lastReceivedMs
        if silent > limits.idleTimeoutMilliseconds { return .idleTimedOut }
        // `<=`: an answer in the same millisecond as the PING (the loop caches its clock per turn) counts as one.
        if silent > limits.idleTimeoutMilliseconds / 2, (keepaliveSentMs ?? .min) <= lastReceivedMs {
            return .sendKeepalive
        }
        return .ok
    }
}
