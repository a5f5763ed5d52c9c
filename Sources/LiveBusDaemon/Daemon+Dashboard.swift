import Foundation
import LiveBusActivity
import LiveBusClient
import LiveBusClock
import LiveBusCore
import LiveBusLayout
import LiveBusLoop
import LiveBusWire

/// Where and how `livebusd --http` serves the dashboard (issue 21).
public struct DashboardOptions: Sendable {
    /// `HOST:PORT` (IPv4 literal or `localhost`) or `unix:PATH`.
    public var address: String
    /// Serve on a non-loopback address (`--http-allow-remote`); refused otherwise.
    public var allowRemote = false
    /// The page's directory (index.html, dashboard.js, dashboard.css).
    public var root: String
    /// The token the URL carries; nil: 32 random bytes, hex.
    public var token: String?

    /// Creates options.
    public init(address: String, allowRemote: Bool = false, root: String, token: String? = nil) {
        self.address = address
        self.allowRemote = allowRemote
        self.root = root
        self.token = token
    }

    /// The address split: (host or path, port, is a Unix socket).
    /// - Throws: ``DaemonError`` naming the value: not `HOST:PORT`/`unix:PATH`, a port outside 1…65535, or a
    ///   non-loopback host without ``allowRemote``.
    public func parsed() throws(DaemonError) -> (host: String, port: Int, unix: Bool) {
        if address.hasPrefix("unix:") {
            let path = String(address.dropFirst(5))
            guard path.hasPrefix("/"), path.utf8.count <= 107 else {
                throw DaemonError("--http \(address): give an absolute socket path of at most 107 bytes")
            }
            return (path, 0, true)
        }
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (0...65535).contains(port)
        else {
            throw DaemonError(
                "--http \(address): expected HOST:PORT with a port in 0 … 65535 (e.g. 127.0.0.1:8421; 0 picks a free one) or unix:PATH"
            )
        }
        var host = String(address[..<colon])
        if host == "localhost" { host = "127.0.0.1" }
        var a = in_addr()
        guard inet_pton(AF_INET, host, &a) == 1 else {
            throw DaemonError("--http \(address): '\(host)' is not an IPv4 address (use 127.0.0.1)")
        }
        let loopback = UInt32(bigEndian: a.s_addr) >> 24 == 127
        guard loopback || allowRemote else {
            throw DaemonError(
                "--http \(address): \(host) is not a loopback address; the dashboard controls your phones, so it is served to this host only unless you add --http-allow-remote"
            )
        }
        return (host, port, false)
    }
}

/// The dashboard's state on the daemon's loop: a mirror of each attached phone (``PhoneMirror``), the event log,
/// the HTTP server, and an admin connection to the daemon's own socket through which the page's controls run the
/// same admin commands as the CLI.
final class Dashboard {
    let server: DashboardServer
    /// The URL with its token, e.g. `http://127.0.0.1:8421/?token=…`.
    let url: String
    var mirrors: [String: PhoneMirror] = [:]
    var dirty: Set<String> = []
    var flushScheduled = false
    var updateSequence: UInt64 = 0
    var log: [[UInt8]] = []
    var logSequence = 0
    var admin: Connection?
    var adminDecoder = FrameDecoder()
    var adminReady = false
    var nextRequest: UInt64 = 1
    /// Admin request id → HTTP request key.
    var pending: [UInt64: Int] = [:]
    /// Commands waiting for the admin connection.
    var queued: [(UInt64, CommandBody)] = []
    /// Push id → the relayed `push` arguments, until the phones answer (newest 64).
    var pushes: [String: [String: JSONValue]] = [:]
    /// The page's Unix socket, removed at shutdown while the path still names it (``unixFile``).
    var unixPath: String?
    /// The page's socket file as bound (`lstat(2)` after the bind).
    var unixFile: FileIdentity?
    /// Phone → a timer at its board's next deadline (stale date), so the mark is drawn when it passes.
    var deadlines: [String: any BusTimer] = [:]

    init(server: DashboardServer, url: String) {
        self.server = server
        self.url = url
    }

    /// Log lines kept for a newly opened page.
    static let logKept = 200
    /// Commands the page may run (the controls): the CLI's `posture`, `app-state`, `clock`, `fault preset|remove`.
    static let commands: Set<String> = [
        "session.posture", "session.app-state", "session.clock", "fault.preset", "fault.remove",
    ]
}

/// One phone as the page draws it: what the daemon knows of the session and the layout its mirror computes.
struct DashboardPhone: Encodable {
    struct Sync: Encodable {
        var eventsSent: Int
        var coalesced: Int
        var outstandingBytes: Int
        var lastSent: [String: UInt64]
        var clockSamples: Int
        var clockErrorBoundMs: Double?
        var roundTripMs: Double?
    }
    struct ActivityInfo: Encodable {
        var orderID: String
        var state: String
        var status: String
        var statusText: String
        var island: String
        var lockScreenPosition: Int
        /// Countdown target and stale date, ms since the epoch, the phone's clock.
        var etaTargetMs: Int64
        var staleDateMs: Int64?
        var progress: Double
        var lockScreen: [String]
        var compactLeading: [String]
        var compactTrailing: String?
        var minimal: String?
        var expanded: [String]
        var sequence: UInt64?
    }
    var id: String
    var name: String
    var device: String
    var deviceName: String
    var posture: PostureBody?
    var appState: String
    var os: String?
    /// The dashboard's update sequence (one per message sent, all phones).
    var seq: UInt64
    var serverTimeMs: Int64
    /// The phone's clock minus the server's, ms (countdowns tick in the phone's clock).
    var clockOffsetMs: Double
    var sync: Sync
    var faults: [String]
    var activities: [ActivityInfo]
    var screen: Size?
    var window: Rect?
    var safeArea: EdgeInsets?
    var dynamicIsland: Rect?
    var hinge: Rect?
    var reservedRegion: Rect?
    var layout: LayoutResult?
    var layoutError: String?
}

extension Daemon {
    /// Starts the dashboard's HTTP server on this daemon's loop (after ``start(handleSignals:)``).
    /// - Returns: the URL with its token.
    /// - Throws: ``DaemonError`` for a bad address, a page directory without index.html, or a port in use.
    public func startDashboard(_ o: DashboardOptions) throws(DaemonError) -> String {
        let (host, port, unix) = try o.parsed()
        guard FileManager.default.fileExists(atPath: o.root + "/index.html") else {
            throw DaemonError(
                "--http-root \(o.root): no index.html there; point it at the repository's dashboard/ directory"
            )
        }
        guard let uvLoop else {
            throw DaemonError("--http: the dashboard serves from the libuv loop; an embedded daemon has none")
        }
        let token = o.token ?? Daemon.makeDashboardToken()
        // A stale socket file of this user is removed, a live one or another user's refused (as for the bus).
        if unix { try Daemon.clearSocketPath(host, hello: false, logger: logger) }
        let server = try DashboardServer(
            loop: uvLoop.rawLoop,
            host: host,
            port: port,
            unixPath: unix,
            token: token,
            root: o.root
        )
        // The page's socket is this user's alone, like the bus's.
        if unix { _ = chmod(host, 0o600) }
        let shown = unix ? "unix:\(host)" : "http://\(host):\(server.port ?? port)"
        let d = Dashboard(server: server, url: unix ? "\(shown)?token=\(token)" : "\(shown)/?token=\(token)")
        d.unixPath = unix ? host : nil
        d.unixFile = unix ? FileIdentity(path: host) : nil
        dashboard = d
        server.onSubscribe = { [unowned self] key in self.dashboardSnapshot(to: key) }
        server.onCommand = { [unowned self] key, body in self.dashboardCommand(key: key, body: body) }
        connectDashboardAdmin()
        let previous = onShutdown
        onShutdown = { [unowned self] in
            self.stopDashboard()
            previous?()
        }
        logger.log(.notice, "dashboard serving", [("url", shown), ("root", o.root)])
        return d.url
    }

    /// Closes the dashboard's server, its timers and admin connection.
    func stopDashboard() {
        guard let d = dashboard else { return }
        dashboard = nil
        for t in d.deadlines.values { t.cancel() }
        d.admin?.close()
        d.server.close()
        if let path = d.unixPath, let file = d.unixFile {
            Daemon.logSocketFileRemoval(file.removeIfUnchanged(path), path: path, logger: logger)
        }
    }

    static func makeDashboardToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }

    // MARK: - Hooks (called from the daemon)

    /// An event was written to phone `s` with its per-session instants.
    func dashboardWrote(_ e: StoredEvent, to s: Session, flags: FrameFlags, trailer t: EventTrailer) {
        guard let d = dashboard, s.role == .session else { return }
        var body = e.body
        body.client = ClientInstantsBody(
            timestamp: t.timestamp,
            etaTarget: t.etaTarget,
            staleDate: t.staleDate,
            dismissalDate: t.dismissalDate,
            lastConfirmed: t.lastConfirmed,
            uncertaintyMs: Int(t.uncertaintyMs)
        )
        var m =
            d.mirrors[s.id]
            ?? PhoneMirror(liveActivities: s.profile.liveActivities, foreground: s.appState == "foreground")
        let v = m.apply(
            topic: e.topic,
            sequence: e.sequence,
            body: body,
            now: phoneNow(s),
            reconvert: flags.contains(.reconvert)
        )
        d.mirrors[s.id] = m
        let delivery =
            flags.contains(.reconvert)
            ? " (reconvert)" : flags.contains(.snapshot) ? " (snapshot)" : flags.contains(.replay) ? " (replay)" : ""
        dashboardLog(
            kind: "event",
            phone: s.name,
            text:
                "\(e.topic) #\(e.sequence)\(delivery) \(body.event) \(body.contentState.status) — \(v.applied ? "applied" : "refused: \(v.reason?.code ?? "?")")",
            failed: !v.applied
        )
        dashboardPhoneChanged(s)
    }

    /// Phone `s` attached, changed posture, app state, clock estimate, or closed.
    func dashboardPhoneChanged(_ s: Session) {
        guard let d = dashboard, s.role == .session else { return }
        d.dirty.insert(s.id)
        guard !d.flushScheduled else { return }
        d.flushScheduled = true
        loop.runSoon { [weak self] in self?.dashboardFlush() }
    }

    /// An admin command (CLI or page) arrived: faults, clock steps, postures and pushes go to the event log.
    func dashboardCommandSeen(_ c: CommandBody) {
        guard dashboard != nil else { return }
        let kinds = ["fault.": "fault", "session.clock": "clock", "session.": "control", "push": "push"]
        guard let kind = kinds.first(where: { c.command.hasPrefix($0.key) })?.value else { return }
        let args = c.args.sorted { $0.key < $1.key }.map { "\($0.key)=\(Daemon.shortJSON($0.value))" }
        dashboardLog(
            kind: kind,
            phone: c.args["session"]?.stringValue,
            text: "\(c.command) \(args.joined(separator: " "))"
        )
    }

    /// A push is on its way to phones (`livebus push`): kept until they answer, to apply it to their mirrors.
    func dashboardPushRelayed(_ args: [String: JSONValue]) {
        guard let d = dashboard, let id = args["pushID"]?.stringValue else { return }
        d.pushes[id] = args
        if d.pushes.count > 64, let oldest = d.pushes.keys.sorted().first { d.pushes[oldest] = nil }
    }

    /// A phone answered a push with its verdict: an applied push is applied to the phone's mirror too (the phone
    /// shows it; the daemon wrote no EVENT for it).
    func dashboardPushAnswered(_ data: JSONValue, from s: Session) {
        guard let d = dashboard else { return }
        if data["applied"]?.boolValue == true, let id = data["pushID"]?.stringValue, let args = d.pushes[id],
            let order = args["order"]?.stringValue, let payload = args["payload"]?.stringValue
        {
            var schema = ActivitySchema.delivery
            if let text = args["activitySchema"]?.stringValue,
                let parsed = try? ActivitySchema.parse(Array(text.utf8), file: "livebusd --activity-schema")
            {
                schema = parsed
            }
            let now = clock.now()
            let pnow = phoneNow(s)
            var m =
                d.mirrors[s.id]
                ?? PhoneMirror(liveActivities: s.profile.liveActivities, foreground: s.appState == "foreground")
            let v = m.push(
                Array(payload.utf8),
                orderID: order,
                schema: schema,
                offsetMilliseconds: pnow.millisecondsSinceEpoch - now.millisecondsSinceEpoch,
                now: pnow
            )
            d.mirrors[s.id] = m
            if !v.applied {
                dashboardLog(
                    kind: "push",
                    phone: s.name,
                    text:
                        "push \(id): the phone applied it, its mirror did not (\(v.reason?.code ?? "?")): the page may differ",
                    failed: true
                )
            }
            dashboardPhoneChanged(s)
        }
        let verdict = data["verdict"] ?? data
        let applied = verdict["applied"]?.boolValue ?? data["applied"]?.boolValue ?? false
        let reason = verdict["reason"]?["code"]?.stringValue ?? verdict["reason"]?.stringValue
        dashboardLog(
            kind: "push",
            phone: s.name,
            text: "push \(data["pushID"]?.stringValue ?? "") → \(applied ? "applied" : "refused: \(reason ?? "?")")",
            failed: !applied
        )
    }

    static func shortJSON(_ v: JSONValue) -> String {
        guard let b = try? WireJSON.encode(v) else { return "?" }
        let s = String(decoding: b, as: UTF8.self)
        return s.count > 120 ? String(s.prefix(117)) + "…" : s
    }

    // MARK: - State to the page

    /// The phone's clock now (the daemon's estimate of it).
    func phoneNow(_ s: Session) -> ClientInstant {
        let now = clock.now()
        return s.convert(now, now: now).client
    }

    func dashboardLog(kind: String, phone: String?, text: String, failed: Bool = false) {
        guard let d = dashboard else { return }
        d.logSequence += 1
        var o: [String: JSONValue] = [
            "n": .number(Double(d.logSequence)), "t": .number(Double(clock.now().millisecondsSinceEpoch)),
            "kind": .string(kind), "text": .string(text), "failed": .bool(failed),
        ]
        if let phone { o["phone"] = .string(phone) }
        guard let bytes = try? WireJSON.encode(JSONValue.object(o)) else { return }
        d.log.append(bytes)
        if d.log.count > Dashboard.logKept { d.log.removeFirst(d.log.count - Dashboard.logKept) }
        d.server.enqueue(nil, key: "log:\(d.logSequence)", event: "log", data: bytes)
    }

    func dashboardFlush() {
        guard let d = dashboard else { return }
        d.flushScheduled = false
        let ids = d.dirty
        d.dirty = []
        for id in ids.sorted() {
            if let s = sessions[id], s.phase == .established {
                if let bytes = dashboardPhoneJSON(s) {
                    d.server.enqueue(nil, key: "phone:\(id)", event: "phone", data: bytes)
                }
            } else {
                d.mirrors[id] = nil
                d.deadlines.removeValue(forKey: id)?.cancel()
                let gone = (try? WireJSON.encode(JSONValue.object(["id": .string(id)]))) ?? []
                d.server.enqueue(nil, key: "phone:\(id)", event: "gone", data: gone)
            }
        }
    }

    func dashboardSnapshot(to key: Int) {
        guard let d = dashboard else { return }
        let hello = JSONValue.object([
            "serverTimeMs": .number(Double(clock.now().millisecondsSinceEpoch)),
            "scenario": .string(options.scenario ?? "none"),
        ])
        d.server.enqueue(key, key: "hello", event: "hello", data: (try? WireJSON.encode(hello)) ?? [])
        for line in d.log {
            d.server.enqueue(
                key,
                key: "log:old:\(d.log.count)-\(line.count)-\(line.hashValue)",
                event: "log",
                data: line
            )
        }
        for s in phones() where s.phase == .established {
            if let bytes = dashboardPhoneJSON(s) {
                d.server.enqueue(key, key: "phone:\(s.id)", event: "phone", data: bytes)
            }
        }
    }

    /// The phone's state and layout as JSON (the layout from ``PhoneMirror/layout(device:posture:os:now:)``, the
    /// same call the phone makes). Arms a timer at the board's next deadline so a stale date redraws the phone.
    func dashboardPhoneJSON(_ s: Session) -> [UInt8]? {
        guard let d = dashboard else { return nil }
        let now = clock.now()
        let pnow = phoneNow(s)
        var m =
            d.mirrors[s.id]
            ?? PhoneMirror(liveActivities: s.profile.liveActivities, foreground: s.appState == "foreground")
        m.setForeground(s.appState == "foreground")
        m.tick(at: pnow)
        d.mirrors[s.id] = m
        d.deadlines.removeValue(forKey: s.id)?.cancel()
        if let next = m.board.nextDeadline {
            let delay = UInt64(max(0, min(pnow.milliseconds(to: next) + 1, 86_400_000)))
            d.deadlines[s.id] = loop.scheduleTimer(after: delay, repeat: 0) { [weak self, weak s] in
                guard let self, let s else { return }
                self.dashboard?.deadlines[s.id] = nil
                self.dashboardPhoneChanged(s)
            }
        }
        d.updateSequence += 1
        let device = s.device ?? "iphone-15-pro"
        let posture = s.posture ?? PostureBody(foldState: "flat", orientation: "portrait")
        let plan = PhoneLayout.plan(m.board)
        var activities: [DashboardPhone.ActivityInfo] = []
        for a in m.board.activities {
            let v = ActivityView(activity: a, at: pnow, language: .korean)
            let assignment = plan.assignments.first { $0.id == a.orderID }
            activities.append(
                DashboardPhone.ActivityInfo(
                    orderID: a.orderID,
                    state: a.state.rawValue,
                    status: a.content.status.rawValue,
                    statusText: a.content.summary.ko,
                    island: assignment?.island.rawValue ?? "none",
                    lockScreenPosition: assignment?.lockScreenPosition ?? -1,
                    etaTargetMs: a.etaTarget.millisecondsSinceEpoch,
                    staleDateMs: a.staleDate?.millisecondsSinceEpoch,
                    progress: a.content.progress,
                    lockScreen: v.lockScreen,
                    compactLeading: v.compactLeading,
                    compactTrailing: v.compactTrailing,
                    minimal: v.minimal,
                    expanded: v.expanded,
                    sequence: m.sequences["orders/\(a.orderID)"]
                )
            )
        }
        activities.sort {
            ($0.lockScreenPosition < 0 ? Int.max : $0.lockScreenPosition)
                < ($1.lockScreenPosition < 0 ? Int.max : $1.lockScreenPosition)
        }
        var phone = DashboardPhone(
            id: s.id,
            name: s.name,
            device: device,
            deviceName: device,
            posture: s.posture,
            appState: s.appState,
            os: s.os,
            seq: d.updateSequence,
            serverTimeMs: now.millisecondsSinceEpoch,
            clockOffsetMs: Double(pnow.millisecondsSinceEpoch - now.millisecondsSinceEpoch),
            sync: DashboardPhone.Sync(
                eventsSent: s.eventsSent,
                coalesced: s.coalescedCount,
                outstandingBytes: s.connection.outstandingBytes,
                lastSent: s.lastSent,
                clockSamples: s.clock.estimate?.sampleCount ?? 0,
                clockErrorBoundMs: s.clock.errorBoundMilliseconds(at: now),
                roundTripMs: s.lastProbeRoundTripMilliseconds
            ),
            faults: (s.faults?.toxics ?? []).map { "\($0.id) \($0.kind.rawValue)" },
            activities: activities
        )
        switch m.layout(device: device, posture: posture, os: s.os, now: pnow) {
        case .success(let (input, result)):
            let r = input.posture
            phone.deviceName = r.device.name
            phone.screen = r.screen.size
            phone.window = r.window
            phone.safeArea = r.safeArea
            phone.dynamicIsland = r.dynamicIsland
            phone.hinge = r.hingePlacement?.rect
            phone.reservedRegion = r.reservedRegion
            phone.layout = result
        case .failure(let e):
            phone.layoutError = "\(e)"
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try? Array(encoder.encode(phone))
    }

    // MARK: - Controls (the same admin commands as the CLI, over the daemon's own socket)

    private func connectDashboardAdmin() {
        guard let d = dashboard, let uvLoop else { return }
        Connection.connect(loop: uvLoop, path: options.socketPath) { [weak self] r in
            guard let self, let d = self.dashboard else { return }
            switch r {
            case .failure(let e):
                self.logger.log(.error, "dashboard: cannot connect to the daemon's own socket", [("error", "\(e)")])
            case .success(let c):
                d.admin = c
                c.onRead = { [weak self] bytes in self?.dashboardAdminRead(bytes) }
                c.onClose = { [weak self] _ in
                    guard let d = self?.dashboard else { return }
                    d.admin = nil
                    d.adminReady = false
                    for key in d.pending.values {
                        d.server.respond(key, Daemon.dashboardError(503, "the admin connection closed"))
                    }
                    d.pending = [:]
                    // Cut (idle timeout, a restart of limits): connect again while the dashboard serves.
                    _ = self?.loop.scheduleTimer(after: 1000, repeat: 0) { [weak self] in self?.connectDashboardAdmin()
                    }
                }
                try? c.startReading()
                let hello = HelloBody(client: "livebus-dashboard", role: .admin, clientTime: self.clockTime())
                self.dashboardAdminSend(.hello, sequence: 1, (try? WireJSON.encode(hello)) ?? [])
                d.adminReady = true
                for (id, cmd) in d.queued {
                    self.dashboardAdminSend(.command, sequence: id, (try? WireJSON.encode(cmd)) ?? [])
                }
                d.queued = []
            }
        }
        _ = d
    }

    private func clockTime() -> Int64 { clock.now().millisecondsSinceEpoch }

    private func dashboardAdminSend(_ type: FrameType, sequence: UInt64, _ body: [UInt8]) {
        dashboard?.admin?.write { buf in
            try? Frame.encode(type: type, flags: [], sequence: sequence, topic: [], bodyParts: [body], into: &buf)
        }
    }

    private func dashboardAdminRead(_ bytes: UnsafeRawBufferPointer) {
        guard let d = dashboard else { return }
        d.adminDecoder.append(bytes)
        while let f = try? d.adminDecoder.next() {
            // The daemon's keepalive (PROTOCOL.md §5.6): answered, so an idle dashboard is not cut as idle.
            if f.type == .ping {
                d.admin?.write { buf in Frame.appendPong(answering: f, t2: clockTime(), t3: clockTime(), into: &buf) }
                continue
            }
            guard f.type == .result, let key = d.pending.removeValue(forKey: f.sequence) else { continue }
            d.server.respond(
                key,
                DashboardServer.Response(
                    status: Daemon.dashboardStatus(result: Array(f.body)),
                    contentType: "application/json",
                    body: Array(f.body)
                )
            )
        }
    }

    /// The HTTP status of a POST /api/command answer, from the admin command's RESULT body: 200 when it ran
    /// (`ok: true`, even if some phones refused: each says so in `data`), 404 when the session it names is not
    /// attached (`unknownSession`, or `noSession` for `all` with none), 400 for any other refusal.
    static func dashboardStatus(result body: [UInt8]) -> UInt32 {
        guard let r = try? WireJSON.decode(JSONValue.self, from: body), r["ok"]?.boolValue == false else { return 200 }
        return ["unknownSession", "noSession"].contains(r["error"]?["code"]?.stringValue ?? "") ? 404 : 400
    }

    static func dashboardError(_ status: UInt32, _ message: String) -> DashboardServer.Response {
        DashboardServer.Response(
            status: status,
            contentType: "application/json",
            body: DashboardServer.errorBody(message)
        )
    }
}

extension DashboardServer {
    /// A refusal's JSON body, shaped like an admin command's failed RESULT:
    /// `{"ok": false, "error": {"code": CODE, "message": MESSAGE}}`.
    static func errorBody(_ message: String, code: String = "dashboard") -> [UInt8] {
        let body = JSONValue.object([
            "ok": .bool(false), "error": .object(["code": .string(code), "message": .string(message)]),
        ])
        return (try? WireJSON.encode(body)) ?? []
    }
}

extension Daemon {
    /// A POST /api/command from the page: `{"command": "session.posture", "args": {…}}`, one of
    /// ``Dashboard/commands``; answered with the daemon's RESULT body.
    func dashboardCommand(key: Int, body: [UInt8]) {
        guard let d = dashboard else { return }
        guard let c = try? WireJSON.decode(CommandBody.self, from: body) else {
            d.server.respond(key, Daemon.dashboardError(400, "the body is not {\"command\": \"…\", \"args\": {…}}"))
            return
        }
        guard Dashboard.commands.contains(c.command) else {
            d.server.respond(
                key,
                Daemon.dashboardError(
                    400,
                    "'\(c.command)' is not a dashboard control; allowed: \(Dashboard.commands.sorted().joined(separator: ", "))"
                )
            )
            return
        }
        d.nextRequest += 1
        let id = d.nextRequest
        d.pending[id] = key
        if d.adminReady {
            dashboardAdminSend(.command, sequence: id, (try? WireJSON.encode(c)) ?? [])
        } else {
            d.queued.append((id, c))
        }
    }
}
