import LiveBusActivity
import LiveBusClient
import LiveBusClock
import LiveBusCore
import LiveBusLayout
import LiveBusSimulator
import LiveBusWire

/// A phone's sync state with the daemon (the Swift client's `SyncState`).
public enum TestSyncState: String, Sendable {
    /// HELLO sent, no WELCOME yet.
    case connecting
    /// Subscribed or resumed; the catch-up is not complete.
    case catchingUp
    /// Caught up; events arrive as they are published.
    case live
    /// The connection is closed (``TestPhone/disconnect()``).
    case disconnected
}

/// One event frame a phone received, and what its Activity rules made of it.
public struct ReceivedEvent: Sendable, Equatable {
    /// The topic, e.g. `orders/A1001`.
    public var topic: String
    /// The topic sequence number the daemon gave it.
    public var sequence: UInt64
    /// `replay` (catch-up or resume), `snapshot`, `reconvert`, or nil for a live event.
    public var delivery: String?
    /// `applied`, `duplicate` (already applied, ignored), `held` (ahead of a gap) or Apple's reason code.
    public var verdict: String
    /// The phone's clock when it arrived, ms since the Unix epoch.
    public var clientTime: Int64
}

/// One simulated phone on a ``TestBus``: a session of the daemon (its own connection, clock, replica per topic),
/// its Live Activities (Apple's rules), what it shows and its layout.
public final class TestPhone {
    /// The phone's session name.
    public let name: String
    /// Its catalog device id.
    public let device: String
    /// Its fold state; ``change(fold:orientation:)`` changes it.
    public private(set) var fold: FoldState
    /// Its orientation.
    public private(set) var orientation: Orientation
    /// Its clock minus true time, ms.
    public let clockSkewMilliseconds: Int64
    /// The OS version it lays out for.
    public let os: OSVersion
    /// The language of its Live Activity text.
    public let language: ActivityLanguage
    /// Its Live Activities (`LiveBusActivity`'s rules).
    public private(set) var board = ActivityBoard(profile: DeviceProfile())
    /// Every verdict of an event it applied or refused, in order (applied or Apple's reason).
    public private(set) var verdicts: [(orderID: String, verdict: Verdict)] = []
    /// Every EVENT frame it received, in order, duplicates included.
    public private(set) var received: [ReceivedEvent] = []
    /// Its sync state.
    public private(set) var syncState = TestSyncState.connecting
    /// The session id the daemon gave it (`s3`), once welcomed.
    public private(set) var sessionID: String?
    /// The last sequence applied, by topic.
    public private(set) var sequences: [String: UInt64] = [:]
    /// Duplicates ignored, gaps repaired, resumes accepted by the daemon.
    public private(set) var counters = (duplicates: 0, gapsRepaired: 0, resumes: 0)
    /// The ERROR frames the daemon sent it (`name: message`).
    public private(set) var errors: [String] = []
    private unowned let bus: TestBus
    private let osName: String?
    private var connection: EmbeddedConnection?
    private var resumeToken: String?
    private var appState = "foreground"
    private var catchingUp: Set<String> = []
    private var pending: [String: [UInt64: (Frame, EventBody)]] = [:]

    init(
        bus: TestBus,
        name: String,
        device: String,
        fold: FoldState,
        orientation: Orientation,
        clockSkewMilliseconds: Int64,
        os: OSVersion,
        osName: String?,
        language: ActivityLanguage
    ) {
        self.bus = bus
        self.name = name
        self.device = device
        self.fold = fold
        self.orientation = orientation
        self.clockSkewMilliseconds = clockSkewMilliseconds
        self.os = os
        self.osName = osName
        self.language = language
    }

    /// The phone's clock now (true time + skew), ms since the Unix epoch.
    public var clientNow: ClientInstant { ClientInstant(millisecondsSinceEpoch: bus.now + clockSkewMilliseconds) }

    // MARK: - The session

    func connect() {
        let c = bus.daemon.connect()
        connection = c
        syncState = .connecting
        let resume = resumeToken.map { ResumeBody(token: $0, topics: sequences) }
        bus.send(
            c,
            .hello,
            HelloBody(
                client: "livebus-testing/0.1",
                role: .session,
                name: name,
                device: device,
                posture: PostureBody(foldState: fold.rawValue, orientation: orientation.rawValue),
                appState: appState,
                os: osName,
                clientTime: clientNow.millisecondsSinceEpoch,
                resume: resume
            )
        )
    }

    /// Closes the phone's connection (airplane mode, a tunnel): the daemon keeps its session for resume; what is
    /// published meanwhile waits in the daemon.
    public func disconnect() {
        connection?.closeInbound()
        connection = nil
        syncState = .disconnected
        bus.pump()
    }

    /// Connects again with the resume token and the last sequence of each topic: the daemon replays what was missed,
    /// each event once (a fresh session when the token has expired).
    public func reconnect() {
        guard connection == nil else { return }
        connect()
        bus.pump()
    }

    /// Reads and handles what the daemon wrote; true when there was something.
    func readAndHandle() -> Bool {
        guard let c = connection else { return false }
        if c.isClosed {
            connection = nil
            syncState = .disconnected
            return false
        }
        let frames: [Frame]
        do { frames = try c.readOutboundFrames() } catch {
            errors.append("badFrame: \(error)")
            c.closeInbound()
            connection = nil
            syncState = .disconnected
            return true
        }
        for f in frames { handle(f) }
        return !frames.isEmpty
    }

    private func send(_ type: FrameType, sequence: UInt64 = 0, topic: String = "", _ body: some Encodable) {
        guard let c = connection else { return }
        bus.send(c, type, sequence: sequence, topic: topic, body)
    }

    private func handle(_ f: Frame) {
        switch f.type {
        case .welcome:
            guard let w = try? WireJSON.decode(WelcomeBody.self, from: f.body) else { return }
            sessionID = w.session
            let resumed = resumeToken != nil && w.resumed
            resumeToken = w.resumeToken
            syncState = .catchingUp
            if resumed {
                counters.resumes += 1
                catchingUp = Set(sequences.keys)
                if catchingUp.isEmpty { syncState = .live }
            } else {
                sequences = [:]
                send(.subscribe, SubscribeBody(patterns: ["orders/>"]))
            }
        case .ping:
            guard let p = try? WireJSON.decode(PingBody.self, from: f.body) else { return }
            let t = clientNow.millisecondsSinceEpoch
            send(.pong, PongBody(t1: p.t1, t2: t, t3: t))
        case .event:
            guard var body = try? EventJSON.decode(f.body), let trailer = f.trailer else {
                errors.append("undecodable EVENT on \(f.topic) seq \(f.sequence)")
                return
            }
            body.client = ClientInstantsBody(trailer)
            do { try body.validate() } catch {
                errors.append("undecodable EVENT on \(f.topic) seq \(f.sequence): \(error)")
                return
            }
            receive(f, body)
        case .upToDate:
            if f.topic.isEmpty {
                if catchingUp.isEmpty { syncState = .live }
                return
            }
            catchingUp.remove(f.topic)
            if let u = try? WireJSON.decode(UpToDateBody.self, from: f.body),
                sequences[f.topic, default: 0] < u.sequence
            {
                send(.resend, topic: f.topic, ResendBody(fromSequence: sequences[f.topic, default: 0] + 1))
                return
            }
            if catchingUp.isEmpty { syncState = .live }
        case .error:
            if let e = try? WireJSON.decode(ErrorBody.self, from: f.body) {
                errors.append("\(e.name): \(e.message)")
                if e.name == WireError.Code.resumeRejected.name {
                    resumeToken = nil
                    sequences = [:]
                }
            }
        case .command:
            guard let c = try? WireJSON.decode(CommandBody.self, from: f.body) else { return }
            send(.result, sequence: f.sequence, run(c))
        default:
            break
        }
    }

    private static func delivery(_ f: Frame) -> String? {
        f.flags.contains(.reconvert)
            ? "reconvert" : f.flags.contains(.snapshot) ? "snapshot" : f.flags.contains(.replay) ? "replay" : nil
    }

    /// Each (topic, sequence) once and in order; a gap holds what is ahead and asks for the rest (RESEND).
    private func receive(_ f: Frame, _ body: EventBody) {
        let last = sequences[f.topic, default: 0]
        let record = { (verdict: String) in
            self.received.append(
                ReceivedEvent(
                    topic: f.topic,
                    sequence: f.sequence,
                    delivery: Self.delivery(f),
                    verdict: verdict,
                    clientTime: self.clientNow.millisecondsSinceEpoch
                )
            )
        }
        if f.flags.contains(.reconvert) && f.sequence == last {
            record(apply(f, body))
            return
        }
        if f.sequence <= last {
            counters.duplicates += 1
            record("duplicate")
            return
        }
        if f.sequence > last + 1 && !f.flags.contains(.snapshot) {
            pending[f.topic, default: [:]][f.sequence] = (f, body)
            record("held")
            send(.resend, topic: f.topic, ResendBody(fromSequence: last + 1))
            return
        }
        record(apply(f, body))
        while let next = pending[f.topic]?.removeValue(forKey: sequences[f.topic, default: 0] + 1) {
            counters.gapsRepaired += 1
            _ = apply(next.0, next.1)
        }
        pending[f.topic] = pending[f.topic]?.filter { $0.key > sequences[f.topic, default: 0] }
    }

    /// Applies an event with the Activity rules (in the phone's clock: the daemon's converted instants), ACKs it.
    private func apply(_ f: Frame, _ body: EventBody) -> String {
        tick()
        sequences[f.topic] = f.sequence
        let orderID = f.topic.split(separator: "/").last.map(String.init) ?? f.topic
        let update = PhoneMirror.activityUpdate(topic: f.topic, body: body, reconvert: f.flags.contains(.reconvert))
        let verdict: Verdict
        if update.event == .start && board.activity(orderID) == nil {
            // A replayed start of an order this phone already knew is a resume; of one it never heard of, the
            // creation itself (the Swift client's rule).
            let origin: StartOrigin =
                f.flags.contains(.replay) && counters.resumes > 0 && board.startIntent(orderID) != nil
                ? .resume : .orderCreation
            verdict = board.orderCreated(update, origin: origin, at: clientNow)
        } else {
            verdict = board.apply(update, at: clientNow)
        }
        verdicts.append((orderID, verdict))
        // ACK: topic and sequence in the header, empty body (PROTOCOL.md §3).
        try? connection?.writeInbound(Frame(type: .ack, sequence: f.sequence, topic: f.topic, body: []))
        return verdict.applied ? "applied" : verdict.reason?.code ?? "refused"
    }

    /// The next instant a board timer falls due, true clock ms, or nil.
    var nextDeadline: Int64? { board.nextDeadline.map { $0.millisecondsSinceEpoch - clockSkewMilliseconds } }

    func tick() { _ = board.tick(at: clientNow) }

    /// Runs a command the daemon relays (a push); anything else is refused with `unknownCommand`.
    private func run(_ c: CommandBody) -> ResultBody {
        guard c.command == "push" else {
            return ResultBody(
                ok: false,
                error: ResultErrorBody(
                    code: "unknownCommand",
                    message: "a TestPhone runs push only, not \(c.command)"
                )
            )
        }
        guard let order = c.args["order"]?.stringValue, let payload = c.args["payload"]?.stringValue else {
            return ResultBody(
                ok: false,
                error: ResultErrorBody(code: "invalidArguments", message: "push needs order and payload")
            )
        }
        let offset = clockSkewMilliseconds
        let verdict = board.push(
            Array(payload.utf8),
            orderID: order,
            toClient: { ClientInstant(millisecondsSinceEpoch: $0.millisecondsSinceEpoch + offset) },
            at: clientNow
        )
        verdicts.append((order, verdict))
        var data: [String: JSONValue] = [
            "pushID": c.args["pushID"] ?? .null, "session": .string(name), "order": .string(order),
            "applied": .bool(verdict.applied), "source": .string(verdict.source),
        ]
        if let r = verdict.reason {
            data["reason"] = .string(r.code)
            data["message"] = .string(r.message)
        }
        if let a = board.activity(order) { data["state"] = .string(a.state.rawValue) }
        return ResultBody(ok: true, data: .object(data))
    }

    // MARK: - What the phone shows

    /// Whether the app is in the foreground (an activity starts only from the foreground, Apple's rule); default
    /// true. Setting it tells the daemon (POSTURE `appState`), whose background refresh scheduling follows.
    public var appInForeground: Bool {
        get { board.profile.appInForeground }
        set {
            board.profile.appInForeground = newValue
            appState = newValue ? "foreground" : "background"
            send(.posture, PostureChangeBody(appState: appState))
            bus.pump()
        }
    }

    /// The order's Live Activity, or nil when it never started here.
    public func activity(_ orderID: String) -> Activity? { board.activity(orderID) }

    /// What the order's activity shows now (Dynamic Island texts, Lock Screen lines, countdown), or nil.
    public func view(_ orderID: String) -> ActivityView? {
        board.activity(orderID).map { ActivityView(activity: $0, at: clientNow, language: language) }
    }

    /// The status the order's activity shows, or nil.
    public func status(_ orderID: String) -> OrderStatus? { board.activity(orderID)?.content.status }

    /// Whether the order's activity shows stale (its stale date passed without a fresh update).
    public func isStale(_ orderID: String) -> Bool { board.activity(orderID)?.state == .stale }

    /// The countdown shown, ms (`etaTarget − the phone's now`, both on the phone's clock, never negative), or nil.
    public func remainingMilliseconds(_ orderID: String) -> Int64? { view(orderID)?.remainingMilliseconds }

    /// The countdown's target on the phone's clock (the daemon's conversion of the server's `etaTarget`), ms since
    /// the Unix epoch, or nil.
    public func etaTarget(_ orderID: String) -> ClientInstant? { board.activity(orderID)?.etaTarget }

    /// Which Dynamic Island presentation and Lock Screen place each ongoing activity gets
    /// (`ActivityPresentationPlanner`, live-activities.md §1.1, §4.1).
    public var presentation: ActivityPlan {
        let summaries = board.activities.sorted { $0.startedAt < $1.startedAt }.enumerated().map { i, a in
            ActivitySummary(
                id: a.orderID,
                relevanceScore: a.relevanceScore,
                startOrdinal: i,
                isOngoing: a.state == .active || a.state == .stale
            )
        }
        return ActivityPresentationPlanner.plan(summaries)
    }

    /// Folds, unfolds, half-opens or rotates the phone, and tells the daemon (POSTURE).
    /// - Throws: `LayoutError` for a posture the device cannot take (half-opened on a phone without a hinge…).
    public func change(fold: FoldState, orientation: Orientation) throws(LayoutError) {
        let before = (self.fold, self.orientation)
        (self.fold, self.orientation) = (fold, orientation)
        do throws(LayoutError) { _ = try layout() } catch {
            (self.fold, self.orientation) = before
            throw error
        }
        send(
            .posture,
            PostureChangeBody(posture: PostureBody(foldState: fold.rawValue, orientation: orientation.rawValue))
        )
        bus.pump()
    }

    /// The layout engine's layout of the overlay map screen with the leading activity on the Lock Screen, for
    /// this phone's device, posture, OS version and language (window points; `LayoutResult.rect(_:)` by name).
    /// - Throws: `LayoutError` for an impossible posture.
    public func layout() throws(LayoutError) -> LayoutResult {
        var content: LiveActivityContent?
        if let id = presentation.lockScreenOrder.first, let a = board.activity(id) {
            let v = ActivityView(activity: a, at: clientNow, language: language)
            content = LiveActivityContent(
                statusText: language == .korean ? a.content.summary.ko : a.content.summary.en,
                statusSymbol: ActivityView.symbol(a.content.status),
                timerText: v.countdown ?? "",
                progress: a.content.progress,
                lastConfirmedText: v.lockScreen.last ?? "",
                staleLines: v.showsStaleLines ? Array(v.lockScreen.suffix(3)) : []
            )
        }
        let request = OfflineLayoutRequest(
            deviceID: device,
            foldState: fold,
            orientation: orientation,
            windowSize: nil,
            screen: .overlay,
            liveActivity: content,
            osVersion: os
        )
        return try OfflineLayout.run(request, catalog: try DeviceCatalog.bundled()).1
    }
}
