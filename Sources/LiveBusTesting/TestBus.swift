import LiveBusActivity
import LiveBusClock
import LiveBusLayout
import LiveBusSimulator

/// LiveBus inside your own tests: the delivery backend, phones with their Live Activity rules and the layout engine,
/// in-process on a **virtual clock** (no sockets, no daemon, no real time), so a test is deterministic and takes
/// milliseconds.
///
/// ```swift
/// let bus = try TestBus(scenario: "demo-120s", seed: 7)
/// let duo = try bus.attach(device: "iphone-duo", fold: .halfOpened, orientation: .landscape, clockSkew: .seconds(90))
/// bus.advance(by: .seconds(80))
/// #expect(duo.isStale("A1001"))
/// #expect(try duo.layout().rect("cardColumn")!.minX >= (try duo.layout().rect("reservedRegion")!.maxX))
/// ```
///
/// What it runs is the code the daemon and the clients run — the delivery simulator (`livebusd --scenario`), the
/// Activity rules of `LiveBusActivity` (`ActivityBoard`: Apple's start, update, stale and end rules) and the layout
/// engine of `LiveBusLayout` — and nothing private. What it does not run yet (it waits for the embedded bus core):
/// the bus itself (sequences, replay, resume, durability, fan-out), clock-sync probes (a phone's clock skew is
/// known exactly, uncertainty 0), app states and background budgets, faults, and several phones competing for a
/// daemon. Events reach every attached phone at the instant the backend publishes them.
///
/// Time: ``now`` is the true clock, ms since the Unix epoch (server and host clock in LiveBus); each phone reads
/// `now + clockSkew`. The backend plays its timeline at 1× on this clock from ``start``.
public final class TestBus {
    /// Scenario time 0 on the true clock, ms since the Unix epoch.
    public let start: Int64
    /// The true clock now, ms since the Unix epoch.
    public private(set) var now: Int64
    /// The phones attached, in attach order.
    public private(set) var phones: [TestPhone] = []
    private var simulator: DeliverySimulator
    /// Every event the backend published so far, in order (what a phone attaching late catches up on).
    public private(set) var published: [OrderEvent] = []

    /// Creates a bus playing a backend timeline.
    /// - Parameters:
    ///   - scenario: a built-in timeline (`demo-120s`), `random:K`, or a timeline file path (`Protocol/SCENARIOS.md`).
    ///   - seed: seeds the backend's draws (random orders, failing cancels).
    ///   - start: scenario time 0 on the true clock, ms since the Unix epoch (default 2027-01-15T08:00:00Z).
    /// - Throws: `ScenarioError` for an unknown name or an invalid timeline file (file, line, field).
    public init(scenario: String, seed: UInt64 = 1, start: Int64 = 1_800_000_000_000) throws(ScenarioError) {
        let timeline: Scenario
        if scenario.hasPrefix("random:"), let k = Int(scenario.dropFirst(7)), k > 0 {
            timeline = Scenario.random(orders: k, seed: seed)
        } else if scenario.hasSuffix(".json") {
            timeline = try Scenario.load(contentsOf: scenario)
        } else {
            timeline = try Scenario.builtIn(named: scenario)
        }
        self.start = start
        now = start
        simulator = DeliverySimulator(
            scenario: timeline,
            start: ServerInstant(millisecondsSinceEpoch: start),
            timeScale: 1,
            seed: seed
        )
        deliver(simulator.advance(to: ServerInstant(millisecondsSinceEpoch: start)))
    }

    /// Attaches a phone: it catches up on every order published so far, as a phone that attaches does.
    /// - Parameters:
    ///   - name: the phone's name (default `phone-N`).
    ///   - device: a catalog device id (`livebus devices`), e.g. `iphone-16-pro`, `iphone-duo`.
    ///   - fold: its fold state (default flat).
    ///   - orientation: its orientation (default portrait).
    ///   - clockSkew: the phone's clock minus true time (default 0).
    ///   - os: the OS version it runs, `27.1` or `newest` (default).
    ///   - language: the language of its Live Activity text (default Korean).
    /// - Returns: the phone.
    /// - Throws: `LayoutError` for an unknown device, an impossible posture or an unknown OS version.
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
            language: language
        )
        _ = try phone.layout()
        for e in published { phone.receive(e) }
        phones.append(phone)
        return phone
    }

    /// Moves the true clock forward: the backend publishes what falls due (every phone applies it at that
    /// instant) and every phone's Activity timers (stale date, dismissal) fire on time, in 10 ms steps.
    /// - Parameter duration: how far, ≥ 0 (a negative one does nothing).
    public func advance(by duration: Duration) {
        let target = now + max(0, Self.milliseconds(duration))
        while now < target {
            now = min(target, now + 10)
            deliver(simulator.advance(to: ServerInstant(millisecondsSinceEpoch: now)))
            for p in phones { p.tick() }
        }
    }

    /// Creates an order now, as a person ordering in the app does (`order.create`); every phone whose app is in the
    /// foreground starts its Live Activity.
    /// - Parameters:
    ///   - id: the order id (default: the backend picks one).
    ///   - customer: the customer id.
    /// - Returns: the order id.
    /// - Throws: `SimulatorError` for a duplicate or unsafe id or an empty customer.
    @discardableResult
    public func createOrder(id: String? = nil, customer: String = "C-test") throws(SimulatorError) -> String {
        let events = try simulator.createOrder(
            OrderRequest(id: id, customerID: customer),
            at: ServerInstant(millisecondsSinceEpoch: now)
        )
        deliver(events)
        return events.last?.orderID ?? id ?? ""
    }

    /// Asks the backend to cancel an order now (`order.cancel`): it may refuse once cooking has started.
    /// - Returns: the backend's outcome (canceled: every phone got the `end`).
    public func cancel(order id: String) -> CancelOutcome {
        let (outcome, events) = simulator.cancelOrder(id: id, at: ServerInstant(millisecondsSinceEpoch: now))
        deliver(events)
        return outcome
    }

    /// No news about an order (or any, nil) for a while from now (`backend.stall`): its stale date passes.
    /// - Throws: `SimulatorError` for an unknown or ended order or a duration of 0 or less.
    public func stall(order id: String?, for duration: Duration) throws(SimulatorError) {
        deliver(
            try simulator.stall(
                orderID: id,
                durationMs: Self.milliseconds(duration),
                at: ServerInstant(millisecondsSinceEpoch: now)
            )
        )
    }

    /// Scenario time now, ms from ``start``.
    public var scenarioMilliseconds: Int64 { now - start }

    private func deliver(_ events: [OrderEvent]) {
        published += events
        for e in events { for p in phones { p.receive(e) } }
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        let (s, a) = d.components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}

/// One simulated phone on a ``TestBus``: its Live Activities (Apple's rules), what it shows and its layout.
public final class TestPhone {
    /// The phone's name.
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
    /// Every verdict of an event it received, in order (applied or Apple's reason).
    public private(set) var verdicts: [(orderID: String, verdict: Verdict)] = []
    private unowned let bus: TestBus

    init(
        bus: TestBus,
        name: String,
        device: String,
        fold: FoldState,
        orientation: Orientation,
        clockSkewMilliseconds: Int64,
        os: OSVersion,
        language: ActivityLanguage
    ) {
        self.bus = bus
        self.name = name
        self.device = device
        self.fold = fold
        self.orientation = orientation
        self.clockSkewMilliseconds = clockSkewMilliseconds
        self.os = os
        self.language = language
    }

    /// The phone's clock now (true time + skew), ms since the Unix epoch.
    public var clientNow: ClientInstant { ClientInstant(millisecondsSinceEpoch: bus.now + clockSkewMilliseconds) }

    func receive(_ e: OrderEvent) {
        let skew = clockSkewMilliseconds
        let update = ActivityUpdate(e) { ClientInstant(millisecondsSinceEpoch: $0.millisecondsSinceEpoch + skew) }
        let verdict: Verdict
        if update.event == .start && board.activity(e.orderID) == nil {
            verdict = board.orderCreated(update, origin: .orderCreation, at: clientNow)
        } else {
            verdict = board.apply(update, at: clientNow)
        }
        verdicts.append((e.orderID, verdict))
    }

    func tick() { _ = board.tick(at: clientNow) }

    /// Whether the app is in the foreground (an activity starts only from the foreground, Apple's rule); default
    /// true.
    public var appInForeground: Bool {
        get { board.profile.appInForeground }
        set { board.profile.appInForeground = newValue }
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

    /// The countdown shown, ms (`etaTarget − the phone's now`, never negative), or nil.
    public func remainingMilliseconds(_ orderID: String) -> Int64? { view(orderID)?.remainingMilliseconds }

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

    /// Folds, unfolds, half-opens or rotates the phone.
    /// - Throws: `LayoutError` for a posture the device cannot take (half-opened on a phone without a hinge…).
    public func change(fold: FoldState, orientation: Orientation) throws(LayoutError) {
        let before = (self.fold, self.orientation)
        (self.fold, self.orientation) = (fold, orientation)
        do throws(LayoutError) { _ = try layout() } catch {
            (self.fold, self.orientation) = before
            throw error
        }
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
