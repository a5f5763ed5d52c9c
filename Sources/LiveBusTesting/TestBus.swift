import LiveBusActivity
import LiveBusClock
import LiveBusCore
import LiveBusDaemon
import LiveBusLayout
import LiveBusSimulator
import LiveBusWire

/// LiveBus inside your own tests: the real bus (`livebusd`'s daemon, ``EmbeddedDaemon``) with the delivery
/// backend, phones with their Live Activity rules and the layout engine, in-process on **one virtual clock** (no
/// socket, no thread, no real time), so a test is deterministic and takes milliseconds.
///
/// ```swift
/// let bus = try TestBus(scenario: "demo-120s", seed: 7)
/// let duo = try bus.attach(device: "iphone-duo", fold: .halfOpened, orientation: .landscape, clockSkew: .seconds(90))
/// bus.advance(by: .seconds(80))
/// #expect(duo.isStale("A1001"))
/// #expect(try duo.layout().rect("cardColumn")!.minX >= (try duo.layout().rect("reservedRegion")!.maxX))
/// ```
///
/// What runs is the code the daemon and the clients run, and nothing private:
/// - the daemon's sessions (`LiveBusDaemon`'s `Daemon` on an `EmbeddedLoop`): HELLO/WELCOME, SUBSCRIBE and its
///   catch-up, per-topic sequences, fan-out, RESEND, resume with a token, clock probes (PING/PONG) and the
///   conversion of every instant into each phone's clock, background refresh scheduling, the push command relay;
/// - the delivery simulator (`livebusd --scenario`), inside the daemon;
/// - on each phone: the frames the daemon wrote, decoded with `LiveBusWire`, applied once and in order per topic,
///   and Apple's Activity rules of `LiveBusActivity` (`ActivityBoard`: start, update, stale, end, push);
/// - the layout engine of `LiveBusLayout`.
///
/// Not covered: faults (toxics), the SQLite store (the store is in memory), real sockets and processes (the e2e
/// tests of `livebus e2e` cover those), and clock drift (a phone's clock is true time plus a fixed skew).
///
/// Time: ``now`` is the true clock, ms since the Unix epoch (the daemon's server clock); each phone reads
/// `now + clockSkew`. Probes travel in 0 ms, so the daemon learns each phone's skew exactly. The backend plays its
/// timeline at 1× on this clock from ``start``. Loop-bound: use a bus from one thread (one test).
public final class TestBus {
    /// Scenario time 0 on the true clock, ms since the Unix epoch.
    public let start: Int64
    /// The daemon, on its embedded loop (virtual time): for what this API does not cover.
    public let daemon: EmbeddedDaemon
    /// The phones attached, in attach order.
    public private(set) var phones: [TestPhone] = []
    /// The daemon's log lines (`level message key=value…`), oldest first.
    public var log: [String] { logSink.lines }
    private let logSink = LogSink()
    private var admin: EmbeddedConnection!
    private var nextCommandID: UInt64 = 0
    private var results: [UInt64: ResultBody] = [:]

    /// Creates a bus: an embedded daemon playing a backend timeline.
    /// - Parameters:
    ///   - scenario: a built-in timeline (`demo-120s`), `random:K`, or a timeline file path (`Protocol/SCENARIOS.md`).
    ///   - seed: seeds every random draw of the daemon and the backend (random orders, failing cancels).
    ///   - start: scenario time 0 on the true clock, ms since the Unix epoch (default 2027-01-15T08:00:00Z).
    /// - Throws: ``TestBusError`` (`invalidScenario`) for an unknown name or an invalid timeline file (the file,
    ///   line and field in its message), or when the daemon does not start.
    public init(scenario: String, seed: UInt64 = 1, start: Int64 = 1_800_000_000_000) throws(TestBusError) {
        self.start = start
        let sink = logSink
        do {
            daemon = try EmbeddedDaemon(
                options: .embedded(scenario: scenario, timeScale: 1, seed: seed),
                logger: Logger(minimumLevel: .info) { level, message, meta in
                    sink.lines.append("\(level) \(message) " + meta.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
                },
                loop: EmbeddedLoop(startEpochMilliseconds: start)
            )
        } catch {
            throw TestBusError(code: "invalidScenario", message: error.message)
        }
        admin = daemon.connect()
        send(
            admin,
            .hello,
            HelloBody(client: "livebus-testing/admin", role: .admin, clientTime: now)
        )
        pump()
    }

    /// The true clock now (the daemon's server clock), ms since the Unix epoch.
    public var now: Int64 { daemon.now.millisecondsSinceEpoch }

    /// Scenario time now, ms from ``start``.
    public var scenarioMilliseconds: Int64 { now - start }

    /// Attaches a phone: it connects to the daemon, says HELLO (device, posture, app state, its clock), answers the
    /// daemon's clock probes, subscribes to `orders/>` and applies the catch-up of every order published so far.
    /// - Parameters:
    ///   - name: the phone's session name, unique on the bus (default `phone-N`).
    ///   - device: a catalog device id (`livebus devices`), e.g. `iphone-16-pro`, `iphone-duo`.
    ///   - fold: its fold state (default flat).
    ///   - orientation: its orientation (default portrait).
    ///   - clockSkew: the phone's clock minus true time (default 0).
    ///   - os: the OS version it runs, `27.1` or `newest` (default).
    ///   - language: the language of its Live Activity text (default Korean).
    /// - Returns: the phone.
    /// - Throws: `LayoutError` for an unknown device, an impossible posture or an unknown OS version (checked before
    ///   it connects).
    @discardableResult
    public func attach(
        name: String? = nil,
        device: String = "iphone-16-pro",
        fold: FoldState = .flat,
        orientation: Orientation = .portrait,
        clockSkew: Duration = .zero,
        os: String = "newest",
        language: ActivityLanguage = .korean
    ) throws(LayoutError) -> TestPhone {
        let phone = TestPhone(
            bus: self,
            name: name ?? "phone-\(phones.count + 1)",
            device: device,
            fold: fold,
            orientation: orientation,
            clockSkewMilliseconds: Self.milliseconds(clockSkew),
            os: try OSVersion.parse(os),
            osName: os == "newest" ? nil : os,
            language: language
        )
        _ = try phone.layout()
        phones.append(phone)
        phone.connect()
        pump()
        return phone
    }

    /// Moves the one virtual clock forward for the daemon and every phone: the daemon's timers (backend events,
    /// probes, keepalives, background refresh) and every phone's Activity timers (stale date, dismissal) fire at
    /// their own instants, in order; the phones read and answer what the daemon wrote at each instant.
    /// - Parameter duration: how far, ≥ 0 (a negative one does nothing).
    public func advance(by duration: Duration) {
        let target = now + max(0, Self.milliseconds(duration))
        pump()
        while now < target {
            var next = target
            if let d = daemon.loop.nextDeadline {
                let t = daemon.loop.startEpochMilliseconds + Int64(d)
                if t > now { next = min(next, t) }
            }
            for p in phones {
                if let t = p.nextDeadline, t > now { next = min(next, t) }
            }
            daemon.advance(by: UInt64(next - now))
            pump()
            for p in phones { p.tick() }
            pump()
        }
    }

    /// Creates an order now through the daemon's `order.create` command, as a person ordering in the app does;
    /// every phone whose app is in the foreground starts its Live Activity.
    /// - Parameters:
    ///   - id: the order id (default: the backend picks one).
    ///   - customer: the customer id.
    /// - Returns: the order id.
    /// - Throws: ``TestBusError`` with the daemon's code (`rejected`: a duplicate or unsafe id; `invalidArguments`:
    ///   a bad customer).
    @discardableResult
    public func createOrder(id: String? = nil, customer: String = "c-test") throws(TestBusError) -> String {
        var args: [String: JSONValue] = ["customer": .string(customer)]
        if let id { args["id"] = .string(id) }
        let data = try command("order.create", args)
        return data?["order"]?.stringValue ?? id ?? ""
    }

    /// Asks the backend to cancel an order now, through the daemon's `order.cancel` command: it may refuse once
    /// cooking has started.
    /// - Returns: the backend's outcome (canceled: every phone got the `end`).
    public func cancel(order id: String) -> CancelOutcome {
        do throws(TestBusError) {
            _ = try command("order.cancel", ["order": .string(id)])
            return .canceled
        } catch {
            switch error.code {
            case "alreadyTerminal": return .alreadyTerminal
            case "unknownOrder": return .unknownOrder
            default: return .failed(reason: error.message)
            }
        }
    }

    /// No news about an order (or any, nil) for a while from now, through the daemon's `backend.stall` command:
    /// its stale date passes.
    /// - Throws: ``TestBusError`` for an unknown or ended order or a duration outside 1 ms … 24 h.
    public func stall(order id: String?, for duration: Duration) throws(TestBusError) {
        var args: [String: JSONValue] = ["durationMs": .number(Double(Self.milliseconds(duration)))]
        if let id { args["order"] = .string(id) }
        _ = try command("backend.stall", args)
    }

    /// Sends an APNs payload to a phone through the daemon's `push` command (`livebus push`): the daemon relays it
    /// to the phone, whose Activity rules apply or refuse it (Apple's reasons), and answers with the verdict.
    /// - Parameters:
    ///   - payload: the APNs JSON payload, UTF-8 (`aps.event`, `aps.content-state`, `aps.timestamp` in seconds…).
    ///   - phone: the phone it goes to.
    ///   - order: the order (Live Activity) it is for.
    /// - Returns: the phone's verdict.
    /// - Throws: ``TestBusError`` when the daemon refuses the command or the phone does not answer.
    @discardableResult
    public func push(_ payload: String, to phone: TestPhone, order: String) throws(TestBusError) -> PushOutcome {
        let data = try command(
            "push",
            ["session": .string(phone.name), "order": .string(order), "payload": .string(payload)]
        )
        guard case .array(let results)? = data?["results"], let first = results.first else {
            throw TestBusError(code: "noAnswer", message: "push: the daemon returned no result for \(phone.name)")
        }
        if first["ok"] != .bool(true) {
            throw TestBusError(
                code: first["error"]?["code"]?.stringValue ?? "failed",
                message: first["error"]?["message"]?.stringValue ?? "push to \(phone.name) failed"
            )
        }
        let d = first["data"]
        return PushOutcome(
            applied: d?["applied"] == .bool(true),
            reason: d?["reason"]?.stringValue,
            message: d?["message"]?.stringValue,
            state: d?["state"]?.stringValue
        )
    }

    /// A report of everything every phone received, in order: one line per event (`phone topic#seq delivery
    /// applied|reason`) and each phone's counters. Same scenario and seed, same report.
    public var report: [String] {
        phones.flatMap { p in
            p.received.map { "\(p.name) \($0.topic)#\($0.sequence) \($0.delivery ?? "live") \($0.verdict)" }
                + [
                    "\(p.name) duplicates=\(p.counters.duplicates) gapsRepaired=\(p.counters.gapsRepaired) "
                        + "resumes=\(p.counters.resumes) sync=\(p.syncState.rawValue)"
                ]
        }
    }

    // MARK: - Driving the embedded daemon

    /// Runs a daemon command on the admin connection and returns its result's data.
    private func command(_ name: String, _ args: [String: JSONValue]) throws(TestBusError) -> JSONValue? {
        nextCommandID += 1
        let id = nextCommandID
        send(admin, .command, sequence: id, CommandBody(command: name, args: args))
        pump()
        guard let r = results.removeValue(forKey: id) else {
            throw TestBusError(code: "noAnswer", message: "\(name): the daemon did not answer (log: \(log.suffix(3)))")
        }
        if !r.ok {
            throw TestBusError(
                code: r.error?.code ?? "failed",
                message: "\(name): \(r.error?.message ?? "failed")" + (r.error?.recovery.map { " (\($0))" } ?? "")
            )
        }
        return r.data
    }

    /// Reads and handles what the daemon wrote to the admin and every phone until nothing more is written at this
    /// instant.
    func pump() {
        var progressed = true
        while progressed {
            progressed = false
            for f in (try? admin.readOutboundFrames()) ?? [] {
                progressed = true
                if f.type == .result, let r = try? WireJSON.decode(ResultBody.self, from: f.body) {
                    results[f.sequence] = r
                }
            }
            for p in phones where p.readAndHandle() { progressed = true }
        }
    }

    func send(
        _ c: EmbeddedConnection,
        _ type: FrameType,
        sequence: UInt64 = 0,
        topic: String = "",
        _ body: some Encodable
    ) {
        guard let bytes = try? WireJSON.encode(body) else { return }
        try? c.writeInbound(Frame(type: type, sequence: sequence, topic: topic, body: bytes))
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        let (s, a) = d.components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}

/// What went wrong in a ``TestBus`` call: the daemon's error code and its message.
public struct TestBusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The daemon's result code (`rejected`, `invalidArguments`, `unknownOrder`…), or `invalidScenario`,
    /// `noAnswer`.
    public var code: String
    /// What happened and what to do.
    public var message: String
    /// Creates an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(code): \(message)" }
}

/// A phone's verdict on a push (``TestBus/push(_:to:order:)``).
public struct PushOutcome: Sendable, Equatable {
    /// Whether the Activity rules applied it.
    public var applied: Bool
    /// Apple's reason code when refused (`staleTimestamp`, `payloadTooLarge`…).
    public var reason: String?
    /// The refusal in words.
    public var message: String?
    /// The activity's state after it (`active`, `stale`, `ended`…), when there is an activity.
    public var state: String?
}

final class LogSink: @unchecked Sendable {  // @unchecked: written and read on the bus's one thread only.
    var lines: [String] = []
}

extension JSONValue {
    subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { o[key] } else { nil }
    }
}
