import Foundation
import LiveBusAPNs
import LiveBusActivity
import LiveBusClock
import LiveBusLayout
import LiveBusLoop
import LiveBusSimulator
import LiveBusWire

/// The sync state a client shows: connecting, catching up, live, degraded, disconnected (PROTOCOL.md §5.3, §5.9).
public enum SyncState: String, Sendable, Codable {
    case connecting
    case catchingUp
    case live
    /// Connected, but the daemon lost its federation (SYNC `degraded`): the replica may be behind; it is kept.
    case degraded
    case disconnected
    case closed

    /// What a client shows: its connection's own state, unless it is connected (`catchingUp` or `live`) to a
    /// daemon whose last SYNC said `degraded` (shown `degraded`) or `catchingUp` (shown `catchingUp`). `daemon` is
    /// `nil` when no SYNC came on this connection: a daemon without federation (always live) or an older one.
    /// - Parameters:
    ///   - connection: `connecting`, `catchingUp`, `live`, `disconnected` or `closed`.
    ///   - daemon: The state of the connection's last SYNC frame.
    /// - Returns: The state to show.
    public static func shown(connection: SyncState, daemon: DaemonSyncState?) -> SyncState {
        guard connection == .catchingUp || connection == .live else { return connection }
        switch daemon {
        case .degraded?: return .degraded
        case .catchingUp?: return .catchingUp
        case .live?, nil: return connection
        }
    }
}

/// One update the client applied (or refused), as written to the JSON-lines log.
public struct AppliedUpdate: Sendable, Codable, Equatable {
    /// `update` for events, `stale`/`fresh`/`ended`/`dismissed` for activity transitions.
    public var type: String
    /// The session's name.
    public var session: String
    /// The topic, e.g. `orders/A1001`.
    public var topic: String
    /// The order id.
    public var order: String
    /// The topic sequence number.
    public var seq: UInt64
    /// `start`, `update` or `end`.
    public var event: String
    /// Status identifier, e.g. `cooking`.
    public var status: String
    /// Countdown target in the client's clock, ms since the Unix epoch.
    public var etaTarget: Int64
    /// Target − client now, ms, never negative.
    public var remainingMs: Int64
    /// Whether the activity is stale after this update.
    public var stale: Bool
    /// Whether the activity rules applied it.
    public var applied: Bool
    /// Why not, when not applied (Apple's rule code).
    public var reason: String?
    /// The client's clock when applied, ms since the Unix epoch.
    public var clientTime: Int64
    /// Uncertainty of the converted instants, ms.
    public var uncertaintyMs: Int
    /// The event's timestamp in the client's clock (ms since the Unix epoch), when the line is an event.
    public var eventTime: Int64? = nil
    /// `replay`, `snapshot` or nil for live events.
    public var delivery: String?

    private enum CodingKeys: String, CodingKey {
        case type, session, topic, order, seq, event, status, etaTarget, remainingMs, stale, applied, reason, clientTime
        case uncertaintyMs, eventTime, delivery
    }

    /// Writes every field, `null` included, so each log line has the same keys (PROTOCOL.md §10).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(session, forKey: .session)
        try c.encode(topic, forKey: .topic)
        try c.encode(order, forKey: .order)
        try c.encode(seq, forKey: .seq)
        try c.encode(event, forKey: .event)
        try c.encode(status, forKey: .status)
        try c.encode(etaTarget, forKey: .etaTarget)
        try c.encode(remainingMs, forKey: .remainingMs)
        try c.encode(stale, forKey: .stale)
        try c.encode(applied, forKey: .applied)
        try c.encode(reason, forKey: .reason)
        try c.encode(clientTime, forKey: .clientTime)
        try c.encode(uncertaintyMs, forKey: .uncertaintyMs)
        try c.encode(eventTime, forKey: .eventTime)
        try c.encode(delivery, forKey: .delivery)
    }
}

/// A push token the phone's app received (ActivityKit's `pushToStartTokenUpdates` / `pushTokenUpdates`), as written
/// to the JSON-lines log (`"type": "pushToken"`, PROTOCOL.md §10), so a backend engineer can copy it (issue 17).
public struct PushTokenEvent: Sendable, Codable, Equatable {
    /// Always `pushToken`.
    public var type = "pushToken"
    /// The session's name.
    public var session: String
    /// `pushToStart` (one per app, iOS 17.2+) or `activity` (one per activity, for its updates and end).
    public var kind: String
    /// The app's bundle id: send with `apns-topic: <bundleID>.push-type.liveactivity`.
    public var bundleID: String
    /// The activity's order id (`activity` tokens), else `nil`.
    public var order: String?
    /// The broadcast channel the activity listens on, if any.
    public var channel: String?
    /// 64 lower-case hex characters (32 bytes): the path `/3/device/<token>`.
    public var token: String
    /// The client's clock when the app got it, ms since the Unix epoch.
    public var clientTime: Int64
}

/// What the client holds for one topic.
public struct TopicReplica: Sendable {
    /// Last sequence applied.
    public var sequence: UInt64 = 0
    /// The latest event body (server instants plus this client's converted ones).
    public var body: EventBody?
    /// Events that arrived ahead of a gap, waiting for the missing ones (sequence → frame).
    var pending: [UInt64: (Frame, EventBody)] = [:]
    /// When a RESEND was last asked for (loop milliseconds), to avoid asking again at once.
    var resendAskedAt: UInt64?
}

/// A simulated phone on the bus: connects, handshakes, answers clock probes on its own (skewed) clock, keeps a
/// replica per topic, applies each (topic, sequence) once and in order, runs the Live Activity rules and the stale
/// timer, and reconnects with its resume token.
///
/// Loop-bound: create and use it on the loop's thread.
public final class ClientSession {
    /// The options it was made with (posture and app state follow changes).
    public private(set) var options: ClientOptions
    let loop: EventLoop
    private let trueClock: any ServerClock
    /// This phone's clock over true time.
    public private(set) var clock: SimulatedClientClock
    private var connection: Connection?
    private var decoder = FrameDecoder()
    /// The sync state shown: ``SyncState/shown(connection:daemon:)`` of the connection's and the daemon's.
    public private(set) var syncState = SyncState.connecting {
        didSet {
            guard oldValue != syncState else { return }
            if syncState == .live { lastLive = now() }
            onSyncState?(syncState)
        }
    }
    /// The connection's own sync state (never `degraded`).
    private var connectionState = SyncState.connecting {
        didSet { syncState = SyncState.shown(connection: connectionState, daemon: daemonSync?.state) }
    }
    /// The daemon's last SYNC on this connection (PROTOCOL.md §5.9), `nil` when none came: a daemon without
    /// federation, which is always live, sends none. Its `since` is on this phone's clock.
    public private(set) var daemonSync: SyncBody? {
        didSet { syncState = SyncState.shown(connection: connectionState, daemon: daemonSync?.state) }
    }
    /// When the session was last live, client clock.
    public private(set) var lastLive: ClientInstant?
    /// The session id and name from WELCOME.
    public private(set) var sessionID: String?
    /// The session's name (given or assigned).
    public private(set) var name: String
    private var resumeToken: String?
    /// Replicas by topic.
    public private(set) var replicas: [String: TopicReplica] = [:]
    /// The Live Activities of this phone.
    public private(set) var board: ActivityBoard
    /// The last schema relayed by the daemon with a push, with its text (parsed once, not per push).
    private var relayedSchemaCache: (text: String, schema: ActivitySchema)?

    /// The daemon's activity schema (`livebusd --activity-schema`) relayed with a push.
    private func relayedSchema(_ text: String) throws(ActivitySchemaError) -> ActivitySchema {
        if let cached = relayedSchemaCache, cached.text == text { return cached.schema }
        let schema = try ActivitySchema.parse(Array(text.utf8), file: "livebusd --activity-schema")
        relayedSchemaCache = (text, schema)
        return schema
    }
    private var staleTimer: LoopTimer?
    private var reconnectTimer: LoopTimer?
    private var reconnectAttempt = 0
    /// When the current connection's WELCOME arrived (loop clock, ms), `nil` before it.
    private var welcomedAt: UInt64?
    private var userClosed = false
    private var catchingUpTopics: Set<String> = []
    private var rng = ClockSimulationRandom(seed: 0x5EED)
    /// Duplicates ignored, gaps repaired, snapshots applied.
    public private(set) var counters = (duplicates: 0, gapsRepaired: 0, snapshots: 0, reconnects: 0, reconversions: 0)

    /// Each applied (or refused) event and each activity transition.
    public var onUpdate: ((AppliedUpdate) -> Void)?
    /// Sync state changes.
    public var onSyncState: ((SyncState) -> Void)?
    /// ERROR frames and connection failures, as text for people.
    public var onError: ((String) -> Void)?
    /// How a session ended without ``close(reason:)``: the daemon's BYE, a connection lost with reconnecting off, or a
    /// HELLO refused for good.
    public enum Ending: Sendable, Equatable {
        /// The daemon said BYE (its reason), then closed.
        case bye(String)
        /// The connection ended without a BYE (the daemon crashed or was killed, a fault reset it) and
        /// ``ClientOptions/reconnect`` is off; what happened.
        case lost(String)
        /// The daemon refused a HELLO with a fatal ERROR that retrying cannot fix
        /// (``ClientSession/endsTheSession(refusal:attached:)``): the ERROR, whose message says what to do. The
        /// session does not reconnect, whether ``ClientSession/onEnded`` is set or not.
        case refused(ErrorBody)
    }
    /// Called once when the session ends by itself (see ``Ending``). When it is set, a BYE ends the session instead of
    /// reconnecting (`livebus attach` ends there, as its help says); when it is not, the session reconnects after a BYE.
    public var onEnded: ((Ending) -> Void)?

    /// The names of the fatal HELLO refusals that retrying cannot fix: the phone as described (`unknownDevice`,
    /// `invalidPosture`, `invalidBody`), its resume (`invalidTopic`, and `tooManySubscriptions`: its patterns with
    /// the session's record past `--max-subscriptions`, PROTOCOL.md §5.3) or the client itself (`unsupportedVersion`,
    /// `notPermitted`, `duplicateHello`, `handshakeRequired`). The same set as the Python client's `_INPUT_ERRORS`
    /// (tools/pyclient/livebus_client.py). Source: PROTOCOL.md §6, "A refused HELLO".
    public static let unretryableRefusals: Set<String> = [
        WireError.Code.unknownDevice.name, WireError.Code.invalidPosture.name, WireError.Code.invalidBody.name,
        WireError.Code.invalidTopic.name, WireError.Code.notPermitted.name, WireError.Code.unsupportedVersion.name,
        WireError.Code.duplicateHello.name, WireError.Code.handshakeRequired.name,
        WireError.Code.tooManySubscriptions.name,
    ]

    /// Whether a fatal ERROR that answered a HELLO (before any WELCOME on its connection) ends the session rather than
    /// being retried with backoff: one of ``unretryableRefusals``, on the first connection or any reconnect (a resume
    /// refused so would be refused again for the whole resume window), or `rejected` (a name in use or reserved, §4.2)
    /// before the session was ever attached; after that, `rejected` is retried: the reservation ends with the other
    /// session's resume window. `resumeRejected` attaches as a new session; everything else (`shuttingDown`,
    /// `tooManyConnections`, `connectionsRefused`, `internalError`, …) is retried. Source: PROTOCOL.md §6, "A refused HELLO".
    /// - Parameters:
    ///   - refusal: The ERROR's `name` (`Protocol/errors.json`).
    ///   - attached: Whether a WELCOME came on an earlier connection of the session.
    /// - Returns: `true` when the session must end with ``Ending/refused(_:)``.
    public static func endsTheSession(refusal: String, attached: Bool) -> Bool {
        unretryableRefusals.contains(refusal) || (refusal == WireError.Code.rejected.name && !attached)
    }

    /// The HELLO refusals that are retried with backoff even before the session was ever attached, by `livebus
    /// attach` too: `connectionsRefused`, a `down` toxic that refuses new connections until it is removed
    /// (FAULTS.md §6: "backoff until the toxic is removed, then attach or resume"). The Python client retries every
    /// refusal outside its `_INPUT_ERRORS`, this one included. Source: PROTOCOL.md §6, "A refused HELLO".
    public static let transientRefusals: Set<String> = [WireError.Code.connectionsRefused.name]
    /// The reason of the daemon's BYE on the current connection, until it closes.
    private var byeReason: String?
    /// The posture the daemon accepted last (HELLO's, then each POSTURE sent while the connection stayed open): a
    /// posture the daemon refuses (`invalidPosture`) is undone to it, so the reconnect's HELLO does not repeat the
    /// refused one (no reconnect loop).
    private var acceptedPosture: PostureBody?
    /// Called after WELCOME.
    public var onWelcome: ((WelcomeBody) -> Void)?
    /// Called after a posture, app-state or profile change requested from outside was applied.
    public var onExternalChange: ((PostureChangeBody) -> Void)?
    /// Called after each layout (attach, posture change, update) with its log record, input and result.
    public var onLayout: ((AppliedLayout, LayoutInput, LayoutResult) -> Void)?
    /// The latest layout.
    public private(set) var layout: (input: LayoutInput, result: LayoutResult)?
    /// Called with each push verdict (`livebus push`).
    public var onPushVerdict: ((JSONValue) -> Void)?
    /// Called with each push token the app receives: its push-to-start token after each WELCOME, an activity's
    /// token when the activity starts (issue 17).
    public var onPushToken: ((PushTokenEvent) -> Void)?
    /// The app's bundle id (profile `bundleID`, default `com.example.delivery`).
    public var bundleID: String { profile.bundleID ?? LiveBusPushTokens.defaultBundleID }

    /// Reports the push token of `kind` (`pushToStart`, or `activity` for `order`).
    private func reportPushToken(kind: String, order: String? = nil, channel: String? = nil, token: String) {
        onPushToken?(
            PushTokenEvent(
                session: name,
                kind: kind,
                bundleID: bundleID,
                order: order,
                channel: channel,
                token: token,
                clientTime: now().millisecondsSinceEpoch
            )
        )
    }
    /// The device settings that change outcomes.
    public private(set) var profile = ProfileBody()
    /// Client − server offset seen at WELCOME, ms (until events carry a better one).
    private var welcomeOffsetMilliseconds: Int64 = 0

    /// Creates a session; nothing happens until ``start()``.
    /// - Parameters:
    ///   - loop: The loop it runs on.
    ///   - options: Device, posture, app state, clock skew and drift, topics.
    ///   - trueClock: The host's wall clock, taken as true time; the phone's clock is derived from it.
    public init(loop: EventLoop, options: ClientOptions, trueClock: any ServerClock) {
        self.loop = loop
        self.options = options
        self.trueClock = trueClock
        self.name = options.name ?? "?"
        clock = SimulatedClientClock(
            skewMilliseconds: options.clockSkewMilliseconds,
            driftPPM: options.clockDriftPPM,
            epoch: trueClock.now()
        )
        profile = options.profile
        board = ActivityBoard(
            profile: DeviceProfile(
                authorization: ClientSession.authorization(options.profile.liveActivities),
                appInForeground: options.appState == "foreground"
            )
        )
    }

    /// This phone's clock now.
    public func now() -> ClientInstant {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let trueMs = trueClock.now().millisecondsSinceEpoch
        // Sub-millisecond true time keeps the simulated clock's rounding honest.
        let frac = Double(ts.tv_nsec % 1_000_000) / 1_000_000
        return clock.read(trueMilliseconds: Double(trueMs) + frac)
    }

    /// Connects (and later reconnects) to the daemon.
    public func start() {
        userClosed = false
        connect()
    }

    /// Says BYE and closes; no reconnect.
    public func close(reason: String = "client exit") {
        userClosed = true
        reconnectTimer?.cancel()
        staleTimer?.cancel()
        relayoutTimer?.cancel()
        relayoutTimer = nil
        if let c = connection {
            send(.bye, body: ByeBody(reason: reason))
            c.closeAfterFlush()
        }
        connection = nil
        connectionState = .closed
    }

    /// Moves the phone to another daemon (a federated daemon on another host, README "More than one machine"): drops
    /// the connection without BYE and connects to `socketPath`, resuming with its token and the sequences it applied.
    /// - Parameter socketPath: The other daemon's socket.
    public func move(to socketPath: String) {
        options.socketPath = socketPath
        reconnectTimer?.cancel()
        if let c = connection {
            c.onClose = nil
            connection = nil
            c.close()
        }
        userClosed = false
        connect()
    }

    private func connect() {
        connectionState = .connecting
        Connection.connect(loop: loop, path: options.socketPath) { [weak self] result in
            guard let self, !self.userClosed else {
                if case .success(let c) = result { c.close() }
                return
            }
            switch result {
            case .failure(let e):
                self.onError?("cannot connect to \(self.options.socketPath): \(e)")
                self.scheduleReconnect()
            case .success(let c):
                self.connected(c)
            }
        }
    }

    private func connected(_ c: Connection) {
        // Before anything is sent: the daemon must run as this user (or root), not as an impostor that bound the
        // path first (SO_PEERCRED; issue 14). Not retried: another user's socket stays theirs.
        if let e = c.checkPeer(path: options.socketPath) {
            c.close()
            userClosed = true
            connectionState = .closed
            onError?("cannot connect to \(options.socketPath): \(e.message)")
            return
        }
        connection = c
        byeReason = nil
        welcomedAt = nil  // an ERROR before this connection's WELCOME refuses its HELLO (also after move(to:))
        acceptedPosture = options.posture
        decoder = FrameDecoder()
        c.onRead = { [unowned self] bytes in self.received(bytes) }
        c.onClose = { [weak self] error in self?.disconnected(error) }
        do { try c.startReading() } catch {
            disconnected(error)
            return
        }
        // Its patterns too: a daemon killed before it stored the SUBSCRIBE resumes an older record (§5.3).
        let resume = resumeToken.map {
            ResumeBody(token: $0, topics: replicas.mapValues(\.sequence), patterns: options.patterns)
        }
        send(
            .hello,
            body: HelloBody(
                client: options.clientName,
                role: .session,
                name: options.name,
                device: options.device,
                posture: options.posture,
                appState: options.appState,
                os: options.os,
                clientTime: now().millisecondsSinceEpoch,
                resume: resume,
                profile: profile,
                features: [HelloBody.syncFeature]
            )
        )
    }

    private func disconnected(_ error: LoopError?) {
        connection = nil
        // The backoff starts over only after a connection that held (5 s past WELCOME): one closed at once (a
        // reset_peer or limit_data toxic that every new connection meets) keeps backing off instead of looping.
        if let w = welcomedAt, loop.nowMilliseconds - w >= 5000 { reconnectAttempt = 0 }
        welcomedAt = nil
        guard !userClosed else { return }
        connectionState = .disconnected
        if let reason = byeReason {
            byeReason = nil
            if let onEnded {
                userClosed = true
                onEnded(.bye(reason))
                return
            }
        } else {
            // Every lost connection leaves an `error` line, an EOF (kill -9 of the daemon, a reset_peer toxic)
            // included, not only a failed read.
            let what = error.map { "\($0)" } ?? "the daemon closed the connection without BYE"
            onError?("connection lost: \(what)")
            if !options.reconnect, let onEnded {
                userClosed = true
                onEnded(.lost("connection to the daemon lost: \(what)"))
                return
            }
        }
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        guard options.reconnect, !userClosed else {
            connectionState = .disconnected
            return
        }
        // Exponential backoff with full jitter, capped (AWS Architecture Blog, "Exponential Backoff And Jitter").
        let cap: Double = 5000
        let base: Double = 100
        let ceiling = min(cap, base * pow(2, Double(reconnectAttempt)))
        let delay = UInt64(Double.random(in: ceiling / 2...ceiling, using: &rng))
        reconnectAttempt += 1
        reconnectTimer?.cancel()
        reconnectTimer = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.counters.reconnects += 1
            self.connect()
        }
    }

    /// ACK of an applied event: topic and sequence in the header, empty body (PROTOCOL.md §3).
    private func sendAck(sequence: UInt64, topic: String) {
        connection?.write { buf in
            try? Frame.encode(
                type: .ack,
                flags: [],
                sequence: sequence,
                topic: Array(topic.utf8),
                bodyParts: [],
                into: &buf
            )
        }
    }

    func send(_ type: FrameType, sequence: UInt64 = 0, topic: String = "", body: some Encodable) {
        guard let c = connection, let bytes = try? WireJSON.encode(body) else { return }
        c.write { buf in try? Frame.encode(type: type, sequence: sequence, topic: topic, body: bytes, into: &buf) }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        decoder.append(bytes)
        while connection != nil {
            let f: Frame?
            do { f = try decoder.next() } catch {
                onError?("bad frame from daemon: \(error)")
                connection?.close()
                return
            }
            guard let f else { return }
            handle(f)
        }
    }

    private func handle(_ f: Frame) {
        switch f.type {
        case .welcome:
            guard let w = try? WireJSON.decode(WelcomeBody.self, from: f.body) else { return }
            sessionID = w.session
            name = w.name
            daemonSync = nil  // a federated daemon says its state right after WELCOME; no SYNC means live
            welcomeOffsetMilliseconds = now().millisecondsSinceEpoch.saturatingSubtracting(w.serverTime)
            if layout == nil { relayout(trigger: "attach") }
            let wasResumed = resumeToken != nil && w.resumed
            resumeToken = w.resumeToken
            welcomedAt = loop.nowMilliseconds
            onWelcome?(w)
            reportPushToken(
                kind: "pushToStart",
                token: LiveBusPushTokens.pushToStartToken(phone: name, bundleID: bundleID)
            )
            if wasResumed {
                connectionState = .catchingUp
                catchingUpTopics = Set(replicas.keys)
                if catchingUpTopics.isEmpty { becomeLive() }
            } else {
                connectionState = .catchingUp
                send(.subscribe, body: SubscribeBody(patterns: options.patterns))
                // Existing topics answer with UPTODATE; with none yet, we are live once the daemon answered a probe.
            }
        case .ping:
            guard let p = try? WireJSON.decode(PingBody.self, from: f.body) else { return }
            let t2 = now().millisecondsSinceEpoch
            send(.pong, body: PongBody(t1: p.t1, t2: t2, t3: now().millisecondsSinceEpoch))
            if connectionState == .catchingUp && catchingUpTopics.isEmpty { becomeLive() }
        case .event:
            guard var body = try? EventJSON.decode(f.body), let trailer = f.trailer else {
                onError?("undecodable EVENT on \(f.topic) seq \(f.sequence)")
                return
            }
            // v2: the converted instants travel in the trailer (PROTOCOL.md §5.1); they are range-checked too.
            body.client = ClientInstantsBody(trailer)
            do { try body.validate() } catch {
                onError?("undecodable EVENT on \(f.topic) seq \(f.sequence): \(error)")
                return
            }
            receiveEvent(f, body)
        case .upToDate:
            if f.topic.isEmpty {
                // The SUBSCRIBE's catch-up is complete.
                if catchingUpTopics.isEmpty { becomeLive() }
                return
            }
            catchingUpTopics.remove(f.topic)
            if let u = try? WireJSON.decode(UpToDateBody.self, from: f.body),
                (replicas[f.topic]?.sequence ?? 0) < u.sequence
            {
                requestResend(topic: f.topic, force: true)
                return
            }
            if catchingUpTopics.isEmpty { becomeLive() }
        case .error:
            if let e = try? WireJSON.decode(ErrorBody.self, from: f.body) {
                // A refusal of this connection's HELLO (no WELCOME on it yet) that retrying cannot fix ends the
                // session, closed before `onError` hears of it: no reconnect, no resume refused again and again.
                let ends =
                    e.fatal && welcomedAt == nil && Self.endsTheSession(refusal: e.name, attached: sessionID != nil)
                if ends { endRefused() }
                onError?("daemon error \(e.name) (\(e.code)): \(e.message)")
                if ends {
                    onEnded?(.refused(e))
                    return
                }
                if e.name == WireError.Code.invalidPosture.name, welcomedAt != nil, let good = acceptedPosture,
                    good != options.posture
                {
                    // The daemon refused a posture change: back to the one it accepted, so the reconnect does not
                    // send the refused posture again (and again).
                    onError?("posture refused; back to \(good.foldState) \(good.orientation)")
                    options.posture = good
                    relayout(trigger: "posture")
                }
                if e.name == WireError.Code.resumeRejected.name {
                    resumeToken = nil
                    replicas.removeAll()
                }
            }
        case .sync:
            // The daemon's federation state (PROTOCOL.md §5.9): shown over a live connection, the replica kept.
            do { daemonSync = try WireJSON.decode(SyncBody.self, from: f.body) } catch {
                onError?("undecodable SYNC: \(error)")
            }
        case .bye:
            let reason = (try? WireJSON.decode(ByeBody.self, from: f.body))?.reason ?? "?"
            byeReason = reason
            onError?("daemon said bye: \(reason)")
        case .posture:
            // A change requested from outside (`livebus posture`, `livebus app-state`): apply it and report back.
            guard let b = try? WireJSON.decode(PostureChangeBody.self, from: f.body) else { return }
            change(posture: b.posture, appState: b.appState, profile: b.profile)
            onExternalChange?(b)
        case .command:
            guard let c = try? WireJSON.decode(CommandBody.self, from: f.body) else { return }
            send(.result, sequence: f.sequence, body: runCommand(c))
        default:
            break
        }
    }

    /// Ends the session after a HELLO refusal that retrying cannot fix: no BYE (the daemon closes), no reconnect.
    private func endRefused() {
        userClosed = true
        reconnectTimer?.cancel()
        staleTimer?.cancel()
        relayoutTimer?.cancel()
        relayoutTimer = nil
        if let c = connection {
            c.onClose = nil
            connection = nil
            c.close()
        }
        connectionState = .closed
    }

    private func becomeLive() {
        connectionState = .live
        if syncState == .live { lastLive = now() }
    }

    private func receiveEvent(_ f: Frame, _ body: EventBody) {
        var r = replicas[f.topic, default: TopicReplica()]
        defer { replicas[f.topic] = r }
        if f.flags.contains(.reconvert) && f.sequence == r.sequence {
            // Same event, instants re-expressed for this phone's clock: update the countdown and stale date.
            counters.reconversions += 1
            apply(f, body, replica: &r)
            return
        }
        if f.sequence <= r.sequence {
            counters.duplicates += 1
            return
        }
        let isJump = f.flags.contains(.snapshot)
        if f.sequence > r.sequence + 1 && !isJump {
            // A gap: hold this one, ask for what is missing.
            r.pending[f.sequence] = (f, body)
            replicas[f.topic] = r
            requestResend(topic: f.topic, force: false)
            r = replicas[f.topic]!
            return
        }
        if isJump { counters.snapshots += 1 }
        apply(f, body, replica: &r)
        // Drain anything held that is now in order.
        while let next = r.pending.removeValue(forKey: r.sequence + 1) {
            counters.gapsRepaired += 1
            apply(next.0, next.1, replica: &r)
        }
        r.pending = r.pending.filter { $0.key > r.sequence }
        if syncState == .live { lastLive = now() }
    }

    private func requestResend(topic: String, force: Bool) {
        // A topic never seen (every event of it lost) resends from its first sequence.
        var r = replicas[topic, default: TopicReplica()]
        let t = loop.nowMilliseconds
        if !force, let asked = r.resendAskedAt, t - asked < 500 { return }
        r.resendAskedAt = t
        replicas[topic] = r
        send(.resend, topic: topic, body: ResendBody(fromSequence: r.sequence + 1))
    }

    private func apply(_ f: Frame, _ body: EventBody, replica r: inout TopicReplica) {
        // What came due before this update (a stale date that passed while it was in flight, caught up by the board)
        // is reported first, under the sequence shown then: reported after it, it would be labelled with this
        // update's sequence and look like a stale mark before this update's stale date.
        replicas[f.topic] = r
        tick(rearm: false)
        r.sequence = f.sequence
        r.body = body
        let nowC = now()
        let c = body.client
        let update = PhoneMirror.activityUpdate(topic: f.topic, body: body, reconvert: f.flags.contains(.reconvert))
        let orderID = update.orderID
        let verdict: Verdict
        if update.event == .start && board.activity(orderID) == nil {
            // A replayed start of an order this phone already knew is a resume (it never starts an activity); of one
            // it never heard of (created while it was disconnected), the creation itself, as on a fresh attach.
            let origin: StartOrigin =
                f.flags.contains(.replay) && resumeToken != nil && counters.reconnects > 0
                    && board.startIntent(orderID) != nil
                ? .resume : .orderCreation
            verdict = board.orderCreated(update, origin: origin, at: nowC)
            if verdict.applied { reportActivityToken(orderID) }
        } else {
            verdict = board.apply(update, at: nowC)
        }
        let activity = board.activity(orderID)
        let delivery: String? =
            f.flags.contains(.reconvert)
            ? "reconvert" : f.flags.contains(.snapshot) ? "snapshot" : f.flags.contains(.replay) ? "replay" : nil
        onUpdate?(
            AppliedUpdate(
                type: f.flags.contains(.reconvert) ? "reconvert" : "update",
                session: name,
                topic: f.topic,
                order: orderID,
                seq: f.sequence,
                event: body.event,
                status: body.contentState.status,
                etaTarget: update.etaTarget.millisecondsSinceEpoch,
                remainingMs: max(0, nowC.milliseconds(to: update.etaTarget)),
                stale: activity?.state == .stale,
                applied: verdict.applied,
                reason: verdict.reason?.code,
                clientTime: nowC.millisecondsSinceEpoch,
                uncertaintyMs: c?.uncertaintyMs ?? 0,
                eventTime: update.timestampInClientClock.millisecondsSinceEpoch,
                delivery: delivery
            )
        )
        sendAck(sequence: f.sequence, topic: f.topic)
        armStaleTimer()
        scheduleRelayout()
    }

    /// Runs the activity rules' timers (stale date, dismissal, system limits) at the board's next deadline.
    private func armStaleTimer() {
        staleTimer?.cancel()
        staleTimer = nil
        guard let deadline = board.nextDeadline else { return }
        let remaining = Double(now().milliseconds(to: deadline))
        // The phone's clock runs (1 + drift) as fast as true time: convert to a real delay.
        let realDelay = remaining / (1 + clock.driftPPM / 1_000_000)
        // Clamped to 0 … 10^15 ms (no trap on a deadline ±2^63 away or a non-finite quotient).
        let delay = realDelay.isNaN ? 0 : UInt64(min(max(0, realDelay.rounded(.up)), 1e15))
        staleTimer = loop.schedule(after: delay) { [weak self] in self?.tick() }
    }

    /// Applies the board's due transitions now.
    public func tick() { tick(rearm: true) }

    private func tick(rearm: Bool) {
        let nowC = now()
        for t in board.tick(at: nowC) { report(t, at: nowC) }
        if rearm { armStaleTimer() }
    }

    /// Reports the push token of the activity of `orderID` (``LiveBusPushTokens/activityToken(phone:order:)``),
    /// listening on the profile's channels.
    private func reportActivityToken(_ orderID: String) {
        reportPushToken(
            kind: "activity",
            order: orderID,
            channel: profile.channels?.first,
            token: LiveBusPushTokens.activityToken(phone: name, order: orderID)
        )
    }

    private func report(_ t: ActivityTransition, at nowC: ClientInstant) {
        guard let a = board.activity(t.orderID) else { return }
        if t.kind == .started { reportActivityToken(t.orderID) }
        let topic = "orders/\(t.orderID)"
        onUpdate?(
            AppliedUpdate(
                type: t.kind == .becameStale ? "stale" : t.kind.rawValue,
                session: name,
                topic: topic,
                order: t.orderID,
                seq: replicas[topic]?.sequence ?? 0,
                event: "transition",
                status: a.content.status.rawValue,
                etaTarget: a.etaTarget.millisecondsSinceEpoch,
                remainingMs: max(0, nowC.milliseconds(to: a.etaTarget)),
                // The state this transition made: a `stale` line says stale: true even when a later transition of
                // the same tick (a big clock step: stale, then ended) already left that state.
                stale: t.kind == .becameStale || (t.kind != .ended && t.kind != .dismissed && a.state == .stale),
                applied: true,
                reason: nil,
                clientTime: nowC.millisecondsSinceEpoch,
                uncertaintyMs: replicas[topic]?.body?.client?.uncertaintyMs ?? 0,
                delivery: nil
            )
        )
    }

    /// Changes posture, app state and/or device settings, and tells the daemon at once.
    /// - Returns: false, changing nothing and saying why through ``onError``, when `posture` is a fold state the
    ///   device does not have (a posture key on an iPhone 16 Pro): refused here rather than sent for the daemon to
    ///   refuse (Protocol/DEVICES.md lists each device's fold states).
    @discardableResult
    public func change(posture: PostureBody? = nil, appState: String? = nil, profile newProfile: ProfileBody? = nil)
        -> Bool
    {
        if let posture, let why = Self.refusal(posture, device: options.device) {
            onError?("posture refused: \(why)")
            return false
        }
        if let posture {
            if connection != nil, options.posture != posture { acceptedPosture = options.posture }
            options.posture = posture
        }
        if let p = newProfile {
            if let v = p.lowPowerMode { profile.lowPowerMode = v }
            if let v = p.frequentUpdates { profile.frequentUpdates = v }
            if let v = p.liveActivities { profile.liveActivities = v }
            var d = board.profile
            d.authorization = ClientSession.authorization(profile.liveActivities)
            board.profile = d
        }
        if let appState {
            options.appState = appState
            var p = board.profile
            p.appInForeground = appState == "foreground"
            board.profile = p
        }
        send(.posture, body: PostureChangeBody(posture: posture, appState: appState, profile: newProfile))
        if posture != nil { relayout(trigger: "posture") }
        return true
    }

    /// Why `posture` is impossible on `device` (a fold state it does not have), or nil when it is possible or the
    /// device or catalog is unknown here (the daemon then decides).
    static func refusal(_ posture: PostureBody, device: String) -> String? {
        guard let catalog = try? DeviceCatalog.bundled(), let d = try? catalog.device(device) else { return nil }
        guard let fold = FoldState(rawValue: posture.foldState), d.screen(for: fold) != nil else {
            let valid = d.supportedFoldStates.map(\.rawValue).joined(separator: ", ")
            return "\(d.name) cannot be '\(posture.foldState)'; its fold states are: \(valid)"
        }
        return nil
    }

    private var relayoutTimer: LoopTimer?

    /// Updates change the content (status, timer, rider position, map camera): lay out again within 100 ms,
    /// coalescing bursts, so a phone spends its time on layout only as often as a screen would redraw.
    private func scheduleRelayout() {
        guard relayoutTimer == nil else { return }
        relayoutTimer = loop.schedule(after: 100) { [weak self] in
            guard let self else { return }
            self.relayoutTimer = nil
            self.relayout(trigger: "update")
        }
    }

    /// Lays the phone out again now (a posture change triggers it at once, before the daemon answers).
    public func relayout(trigger: String) {
        switch PhoneLayout.compute(self) {
        case .success(let (input, result)):
            layout = (input, result)
            onLayout?(PhoneLayout.record(self, result, trigger: trigger), input, result)
        case .failure(let e):
            onError?("layout: \(e)")
        }
    }

    static func authorization(_ s: String?) -> LiveActivitiesAuthorization {
        switch s {
        case "denied": .denied
        case "activitiesDisabled", "disabled": .activitiesDisabled
        default: .authorized
        }
    }

    /// Client − server offset in ms, from the newest event's converted timestamp, else from WELCOME.
    var offsetMilliseconds: Int64 {
        let newest = replicas.values.compactMap(\.body).max { $0.timestamp < $1.timestamp }
        if let b = newest, let c = b.client { return c.timestamp.saturatingSubtracting(b.timestamp) }
        return welcomeOffsetMilliseconds
    }

    /// Runs a command relayed by the daemon (clock fault, push, start-intent simulation) and answers it.
    func runCommand(_ c: CommandBody) -> ResultBody {
        switch c.command {
        case "session.clock":
            if let step = c.args["stepMs"]?.int64Value { stepClock(byMilliseconds: step) }
            if let ppm = c.args["driftPPM"]?.doubleValue {
                clock.setDrift(ppm: ppm, at: trueClock.now())
                options.clockDriftPPM = ppm
                armStaleTimer()
            }
            return ResultBody(ok: true, data: .object(["clientTime": .number(Double(now().millisecondsSinceEpoch))]))
        case "session.simulate":
            let nowC = now()
            if let ms = c.args["notReadyMs"]?.int64Value { board.simulateNotReady(forMilliseconds: ms, at: nowC) }
            if let n = c.args["startFailures"]?.int64Value { board.simulateStartFailures(Int(n)) }
            armStaleTimer()
            return ResultBody(ok: true, data: .object([:]))
        case "push":
            guard let order = c.args["order"]?.stringValue, let payload = c.args["payload"]?.stringValue else {
                return ResultBody(
                    ok: false,
                    error: ResultErrorBody(code: "invalidArguments", message: "push needs order and payload")
                )
            }
            let offset = offsetMilliseconds
            let nowC = now()
            board.schema = options.activitySchema ?? .delivery
            if options.activitySchema == nil, let text = c.args["activitySchema"]?.stringValue {
                do {
                    board.schema = try relayedSchema(text)
                } catch {
                    return ResultBody(
                        ok: false,
                        error: ResultErrorBody(code: "invalidActivitySchema", message: error.description)
                    )
                }
            }
            let toClient = { (t: ServerInstant) in
                ClientInstant(millisecondsSinceEpoch: t.millisecondsSinceEpoch.saturatingAdding(offset))
            }
            let pushToStart = c.args["pushToStart"]?.boolValue == true
            let verdict =
                pushToStart
                ? board.pushToStart(Array(payload.utf8), orderID: order, toClient: toClient, at: nowC)
                : board.push(Array(payload.utf8), orderID: order, toClient: toClient, at: nowC)
            if pushToStart, verdict.applied {
                // `input-push-token: 1`: the new activity gets its own token (pushTokenUpdates); a channel-only one
                // has none, and says which channel it listens on.
                if let token = c.args["pushToken"]?.stringValue {
                    reportPushToken(
                        kind: "activity",
                        order: order,
                        channel: c.args["channel"]?.stringValue,
                        token: token
                    )
                }
            }
            armStaleTimer()
            var data: [String: JSONValue] = [
                "pushID": c.args["pushID"] ?? .null,
                "session": .string(name),
                "order": .string(order),
                "applied": .bool(verdict.applied),
                "source": .string(verdict.source),
            ]
            if let r = verdict.reason {
                data["reason"] = .string(r.code)
                data["appleWords"] = r.appleWords.map { .string($0) } ?? .null
                data["message"] = .string(r.message)
            }
            if let w = verdict.warning { data["warning"] = .string(w) }
            if let removal = verdict.removalAt { data["removalAt"] = .number(Double(removal.millisecondsSinceEpoch)) }
            if !verdict.lints.isEmpty {
                data["lints"] = .array(
                    verdict.lints.map { lint in
                        var o: [String: JSONValue] = [
                            "code": .string(lint.code.rawValue), "field": .string(lint.field),
                            "message": .string(lint.message),
                        ]
                        if let s = lint.suggested { o["suggested"] = .string(s) }
                        return .object(o)
                    }
                )
            }
            if let a = board.activity(order) {
                data["state"] = .string(a.state.rawValue)
                data["status"] = .string(
                    board.schema.readsAsDelivery
                        ? a.content.status.rawValue
                        : (a.fields.value(at: board.schema.presentation.statusText)?.text ?? "")
                )
            }
            onPushVerdict?(.object(data))
            if let a = board.activity(order) {
                let topic = "orders/\(order)"
                onUpdate?(
                    AppliedUpdate(
                        type: "push",
                        session: name,
                        topic: topic,
                        order: order,
                        seq: replicas[topic]?.sequence ?? 0,
                        event: "push",
                        status: a.content.status.rawValue,
                        etaTarget: a.etaTarget.millisecondsSinceEpoch,
                        remainingMs: max(0, nowC.milliseconds(to: a.etaTarget)),
                        stale: a.state == .stale,
                        applied: verdict.applied,
                        reason: verdict.reason?.code,
                        clientTime: nowC.millisecondsSinceEpoch,
                        uncertaintyMs: 0,
                        delivery: nil
                    )
                )
            }
            return ResultBody(ok: true, data: .object(data))
        default:
            return ResultBody(
                ok: false,
                error: ResultErrorBody(code: "unknownCommand", message: "unknown command \(c.command)")
            )
        }
    }

    /// Steps this phone's clock by `milliseconds` (a clock fault).
    public func stepClock(byMilliseconds ms: Int64) {
        clock.step(byMilliseconds: ms)
        armStaleTimer()
        // As an iOS app hears UIApplication.significantTimeChangeNotification: tell the daemon, which probes at once.
        send(.posture, body: PostureChangeBody(clockChanged: true))
    }
}

/// An empty JSON object body (`{}`).
public struct EmptyBody: Codable, Sendable {
    /// Creates it.
    public init() {}
}
