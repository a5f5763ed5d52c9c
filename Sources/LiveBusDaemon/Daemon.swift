import Foundation
import LiveBusClock
import LiveBusCore
import LiveBusFaults
import LiveBusLayout
import LiveBusLoop
import LiveBusSimulator
import LiveBusWire

/// An error that stops the daemon from starting.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    /// What went wrong and what to do.
    public var message: String
    /// The README's exit 3 ("daemon unreachable"): the socket path or data directory is held by a live daemon or
    /// another user, the socket directory is unsafe, or NATS cannot be reached. Every other start error (a bad
    /// address, a too-long path, a missing directory) is a usage or input error (exit 2).
    public var unreachable: Bool
    /// Creates an error.
    public init(_ message: String, unreachable: Bool = false) {
        self.message = message
        self.unreachable = unreachable
    }
    public var description: String { message }
}

/// The bus daemon: one libuv loop serving many sessions on a Unix socket, fed by the delivery simulator.
///
/// Loop-bound: create, start and use it on the loop's thread.
public final class Daemon {
    let options: DaemonOptions
    /// The loop the bus runs on: libuv (``start(handleSignals:)``), or an embedded one (``startEmbedded()``).
    let loop: any BusLoop
    /// The libuv loop when the daemon serves a socket; `nil` for an embedded daemon.
    let uvLoop: EventLoop?
    let logger: Logger
    let clock: any ServerClock
    private var listener: PipeListener?
    private var signals: SignalWatcher?
    var sessions: [String: Session] = [:]
    /// Resume token → session id of a disconnected session whose record is kept for resume.
    var resumable: [String: Session] = [:]
    /// The store behind the core's protocol: in memory, or SQLite under `--data-dir`.
    var store: any EventStore
    /// What this loop turn appended (client PUBLISHes, resume records), committed as one batch at its end.
    var turn = GroupCommit<PublishWaiter>()
    /// New sessions whose WELCOME waits for this loop turn's batch (their resume records are in it).
    var welcomesInTurn: [Session] = []
    /// Topic → subscribers (sessions by connection number), patterns compiled once.
    var index = TopicIndex<Int>()
    /// Sessions by connection number (the index's keys).
    var byNumber: [Int: Session] = [:]
    /// Topic numbers and each topic's subscribers with their slots, kept between subscription changes (FanOut.swift).
    var fanOutTable = FanOutTable()
    /// When the fan-out flushes as it goes (``FanOutFlushBudget``).
    var fanOutFlush = FanOutFlushBudget()
    /// Deliveries fanned out so far (the batch's own flush compares it before and after each event:
    /// Daemon+Durability.swift).
    var fanOutDeliveriesTotal: Int { fanOutFlush.total }
    private var nextSessionNumber = 1
    var simulator: DeliverySimulator?
    private var simulatorTimer: (any BusTimer)?
    /// Watches the host's wall clock against the daemon's monotonic timeline (``AnchoredServerClock``).
    private var wallClockWatch: (any BusTimer)?
    /// The host wall clock's offset from the daemon's timeline at the last check, milliseconds.
    private(set) var hostWallClockOffsetMilliseconds: Int64 = 0
    /// The data directory's lock, held from start to shutdown.
    var dataLock: DataDirectoryLock?
    /// Resume token → when its session's resume window ends (ms since the epoch, server clock); until then its
    /// name is reserved. A token with a deadline that no disconnected session (``resumable``) holds is a record in
    /// the store (a session of a daemon that was killed, or of another daemon of the federation): the store owns
    /// resume records and answers the lookup (``EventStore/resumeRecord(token:)``).
    var resumeDeadlines: [String: Int64] = [:]
    /// Name → how many established sessions have that name (names a HELLO may ask for: not `s<digits>`): the
    /// HELLO's live-name check in O(1).
    var liveNames: [String: Int] = [:]
    /// Name → tokens of the disconnected sessions (``resumable``, the store's records) of that name: the names
    /// reserved while they may resume, looked up in O(1).
    var reservedNames: [String: Set<String>] = [:]
    private var resumeSweep: (any BusTimer)?
    /// Commits the deferrable resume records staged with no batch to go with (``commitTurn(force:)``).
    var deferredRecordTimer: (any BusTimer)?
    private var scenarioFinishedLogged = false
    let startedAt: ServerInstant
    var relays: [UInt64: PendingRelay] = [:]
    var nextRelayID: UInt64 = 0
    /// The last push id handed out (`p<n>`). Push ids stay unique across restarts of a durable daemon: the store
    /// holds a reserved high-water mark (`pushIDsReserved`), raised ``pushIDBlock`` ids at a time, and a restarted
    /// daemon carries on above it (ids skipped at a restart are never used).
    var pushCounter = 0
    /// The push ids reserved in the store so far.
    var pushIDsReserved = 0
    /// How many push ids one store write reserves.
    static let pushIDBlock = 1000
    /// Daemon-wide toxics (`down`: refuse new connections).
    var daemonToxics: [ToxicSpec] = []
    /// `down` toxics of one phone (`fault preset airplane --session X`, `fault add down --session X`), by session
    /// name: that phone's new connections are refused, every other phone's are not.
    var sessionDownToxics: [String: [ToxicSpec]] = [:]
    /// Toxics of disconnected phones, re-applied when they resume.
    var resumedFaults: [String: SessionFaults] = [:]
    /// Order id → store and customer locations (from the simulator), sent with each event for the phone's map.
    var places: [String: PlacesBody] = [:]
    /// Verdicts of recent pushes, newest last (`livebus explain`).
    var pushLog: [JSONValue] = []
    /// Mutating admin commands and push verdicts, for `livebus record` (Daemon+Journal.swift).
    let journal = AdminJournal()
    /// Postures that passed the catalog's check, so an attach with a known one is not resolved again.
    let postureVerdicts = PostureVerdicts()
    /// Simulator events the store refused (a full disk), held in order until it takes them (Daemon+Durability.swift).
    var held = HeldEvents()
    /// Retries storing ``held`` while the store refuses writes.
    var heldRetryTimer: (any BusTimer)?
    private(set) var isShuttingDown = false
    /// Connection cap, refusals and the liveness sweep (Daemon+Limits.swift).
    let limitState = DaemonLimitState()
    /// Called once the daemon has stopped accepting and closed every session.
    public var onShutdown: (() -> Void)?
    #if DEBUG
        /// The browser dashboard (`--http`, Daemon+Dashboard.swift), when serving.
        var dashboard: Dashboard?
    #else
        // Read by every delivery: no access overlaps another (a read of a reference), so release builds skip the
        // run-time exclusivity check (≈75 instructions each).
        /// The browser dashboard (`--http`, Daemon+Dashboard.swift), when serving.
        @exclusivity(unchecked) var dashboard: Dashboard?
    #endif
    /// The APNs endpoint (Daemon+APNs.swift), when `--apns`/`--apns-socket` asked for one.
    var apns: DaemonAPNs?
    /// Watches the federation's link and refreshes its stream status (Daemon+Federation.swift), when federating.
    var federationWatch: (any BusTimer)?
    /// The simulator's batches on a federated daemon, committed in order one at a time (Daemon+Federation.swift).
    var federatedSimulator = FederatedSimulatorQueue()
    /// A federated daemon's sync state (SYNC frames, PROTOCOL.md §5.9); `nil` without `--federate`.
    var federationSync: FederationSync?
    /// A federated daemon's tag in the ids it makes (orders `<tag>-M0001`, push ids `<tag>-p1`, PROTOCOL.md
    /// §5.8), from its daemon id; `nil` without `--federate` (ids stay `M0001`, `p1`).
    var federationTag: String?

    /// Creates a daemon; nothing happens until ``start()``.
    ///
    /// - Parameters:
    ///   - options: What to serve and how (socket, scenario, data directory, limits).
    ///   - loop: The libuv loop everything runs on.
    ///   - logger: Where the daemon's log lines go.
    ///   - clock: The server clock every instant the daemon hands out is on. Default ``AnchoredServerClock``: the
    ///     host's wall clock at start advanced by the monotonic clock, so a later step of the host's wall clock
    ///     moves nothing (it is logged as a notice).
    public init(
        options: DaemonOptions,
        loop: EventLoop,
        logger: Logger,
        clock: any ServerClock = AnchoredServerClock()
    ) {
        self.options = options
        self.loop = loop
        self.uvLoop = loop
        self.logger = logger
        self.clock = clock
        self.store = MemoryEventStore(logCapacity: options.replayLogCapacity)
        self.startedAt = clock.now()
    }

    /// Creates a daemon on any ``BusLoop`` (an ``EmbeddedLoop`` for tests: ``EmbeddedDaemon``); nothing happens
    /// until ``startEmbedded()``. It serves no socket: connections come through ``accept(_:)``.
    ///
    /// - Parameters:
    ///   - options: What to serve and how; ``DaemonOptions/socketPath`` is not used.
    ///   - transport: The loop everything runs on.
    ///   - logger: Where the daemon's log lines go.
    ///   - clock: The server clock every instant the daemon hands out is on (an embedded loop's
    ///     ``EmbeddedLoop/serverClock`` for virtual time).
    public init(options: DaemonOptions, transport: any BusLoop, logger: Logger, clock: any ServerClock) {
        self.options = options
        self.loop = transport
        self.uvLoop = nil
        self.logger = logger
        self.clock = clock
        self.store = MemoryEventStore(logCapacity: options.replayLogCapacity)
        self.startedAt = clock.now()
    }

    /// Binds the socket, installs SIGINT/SIGTERM handling and starts the scenario.
    ///
    /// - Throws: ``DaemonError`` when another live daemon owns the socket path, the socket file is another user's,
    ///   the default socket directory or the data directory is refused, another daemon holds the data directory's
    ///   lock, the path is too long, or the scenario cannot be loaded. A stale socket file of this user (connect
    ///   refused) is removed first.
    public func start(handleSignals: Bool = true) throws(DaemonError) {
        guard let uvLoop else {
            throw DaemonError(
                "this daemon runs on an embedded loop and serves no socket; start it with startEmbedded()"
            )
        }
        let path = options.socketPath
        if let e = PipeListener.checkPath(path) { throw DaemonError(e.message) }
        // The default directory (/tmp/livebus-<uid>) is created 0700 and checked before its socket is probed.
        if let e = SocketPath.preparePrivateDirectory(for: path, create: true) {
            throw DaemonError(e.message, unreachable: true)
        }
        try Daemon.clearSocketPath(path, logger: logger)
        // Before any state is written (a data directory next to a socket that cannot exist).
        if let e = PipeListener.checkDirectory(of: path) { throw DaemonError(e.message) }
        try startBus()
        do {
            let l = try PipeListener(loop: uvLoop, path: path)
            l.onConnection = { [unowned self] c in self.accept(c) }
            configure(l)
            listener = l
        } catch {
            throw DaemonError("cannot listen on \(path): \(error)")
        }
        do { try startAPNs() } catch {
            listener?.close()
            listener = nil
            throw error
        }
        if handleSignals {
            signals = try? SignalWatcher(loop: uvLoop, signals: [SIGINT, SIGTERM]) { [unowned self] sig in
                self.logger.log(
                    .notice,
                    "signal received, shutting down",
                    [("signal", sig == SIGINT ? "SIGINT" : "SIGTERM")]
                )
                self.shutdown(reason: "daemon shutting down")
            }
        }
        logger.log(
            .notice,
            "livebusd listening",
            [
                ("socket", path), ("scenario", options.scenario ?? "none"), ("time_scale", "\(options.timeScale)"),
                ("seed", "\(options.seed)"),
            ]
        )
        startBusTimers()
    }

    /// Starts an embedded daemon (``init(options:transport:logger:clock:)``): the store, the scenario and the
    /// timers, as ``start(handleSignals:)`` does, without a socket, a socket directory or signal handling.
    /// - Throws: ``DaemonError`` when the data directory or the scenario cannot be loaded, or
    ///   `--max-connections` is above what the descriptors allow.
    public func startEmbedded() throws(DaemonError) {
        try startBus()
        startBusTimers()
    }

    /// The start shared by the socket and the embedded daemon: limits, data directory, scenario, group commit.
    private func startBus() throws(DaemonError) {
        try startLimits()
        var restored = false
        if let federation = options.federation {
            restored = try startFederation(federation)
        } else if let dir = options.dataDirectory {
            // Checked and locked before anything is read or removed (`--fresh` too): one daemon per directory.
            do { dataLock = try DataDirectoryLock(directory: dir) } catch {
                throw DaemonError(error.message, unreachable: true)
            }
            if options.fresh { SQLiteStore.remove(directory: dir) }
            let sql: SQLiteStore
            do {
                sql = try SQLiteStore(
                    directory: dir,
                    logCapacity: options.replayLogCapacity,
                    fullSync: options.fullSync
                )
            } catch {
                throw DaemonError(error.message)
            }
            let requested = "\(options.scenario ?? "none") seed \(options.seed)"
            if let held = sql.meta("scenario"), held != requested {
                throw DaemonError(
                    "the data directory \(dir) holds the state of scenario '\(held)', not '\(requested)'; restart with the same --scenario and --seed to carry on, or add --fresh to discard that state"
                )
            }
            if let data = sql.simulatorState() {
                do {
                    simulator = try DeliverySimulator(restoring: data)
                    restored = true
                } catch {
                    throw DaemonError(
                        "the simulator state in \(sql.path) cannot be read (\(error)); add --fresh to discard it"
                    )
                }
            }
            store = sql
            // Sessions of the previous run may resume for a resume window from this start (PROTOCOL.md §5.3); their
            // records stay in the store, which answers each HELLO's lookup.
            let deadline = clock.now().millisecondsSinceEpoch + options.resumeWindowMilliseconds
            let records = store.resumeRecords()
            for r in records {
                resumeDeadlines[r.token] = deadline
                reservedNames[r.name, default: []].insert(r.token)
            }
            logger.log(
                .notice,
                restored ? "state restored" : "state directory ready",
                [("data_dir", dir), ("topics", "\(store.topics.count)"), ("resume_records", "\(records.count)")]
            )
        }
        if let scenario = options.scenario, !restored {
            do {
                simulator = DeliverySimulator(
                    scenario: try Daemon.loadScenario(scenario, seed: options.seed),
                    start: clock.now(),
                    timeScale: options.timeScale,
                    seed: options.seed
                )
            } catch {
                throw DaemonError("cannot load scenario '\(scenario)': \(error)")
            }
        }
        // Only once the scenario loaded: a start that failed leaves a new data directory free for any scenario.
        if store.isDurable {
            // Push ids carry on above the ids the previous run reserved.
            pushCounter = Int(store.meta(pushIDsMetaKey) ?? "") ?? 0
            pushIDsReserved = pushCounter
            // A federation's stream is shared: each daemon records its scenario under its own identity (§5.8).
            do {
                let meta = StoreBatch(meta: [(scenarioMetaKey, "\(options.scenario ?? "none") seed \(options.seed)")])
                if case .failure(let e) = store.commitInTurn(meta) {
                    logger.log(.error, "cannot record the scenario in the data directory", [("error", e.message)])
                }
            }
        }
        loop.onTurnEnd { [weak self] in self?.commitTurn() }
    }

    /// The timers shared by the socket and the embedded daemon: the scenario, the host clock watch, the resume
    /// sweep.
    private func startBusTimers() {
        armSimulator()
        if let anchored = clock as? AnchoredServerClock { watchHostWallClock(anchored) }
        resumeSweep = loop.scheduleTimer(after: 1000, repeat: 1000) { [unowned self] in
            self.expireResumes(now: self.clock.now().millisecondsSinceEpoch)
            self.announceUnacknowledged()
        }
    }

    // MARK: - Resume window and reserved names

    /// The latest end of the resume windows (ms since the epoch, server clock) of the disconnected sessions named
    /// `name` that may still resume at `now`, or `nil` when none holds the name: it is reserved until then (issue 14,
    /// "name hijack"; PROTOCOL.md §5.3). O(records of that name), through ``reservedNames``.
    func nameReservedUntil(_ name: String, now: Int64) -> Int64? {
        guard let tokens = reservedNames[name] else { return nil }
        var until: Int64?
        for t in tokens {
            guard let d = resumeDeadlines[t], d > now else { continue }
            until = max(until ?? d, d)
        }
        return until
    }

    /// Indexes the name of a disconnected session's record (``reservedNames``).
    func reserveName(_ name: String, token: String) { reservedNames[name, default: []].insert(token) }

    /// Removes a record's name from ``reservedNames``.
    func releaseName(_ name: String, token: String) {
        guard var tokens = reservedNames[name] else { return }
        tokens.remove(token)
        reservedNames[name] = tokens.isEmpty ? nil : tokens
    }

    /// Forgets every resume record whose window passed at `now` (ms, server clock), with its reserved name.
    func expireResumes(now: Int64) {
        for (token, deadline) in resumeDeadlines where deadline <= now {
            if let old = resumable[token] {
                logger.info("resume window passed", [("session.name", old.name)])
            }
            forgetResume(token: token)
        }
    }

    /// Forgets the resume record of `token`: memory, the data directory, its toxics and its deadline.
    func forgetResume(token: String) {
        if let old = resumable.removeValue(forKey: token) {
            releaseName(old.name, token: token)
        } else if resumeDeadlines[token] != nil, let rec = store.resumeRecord(token: token) {
            releaseName(rec.name, token: token)
        }
        resumedFaults[token] = nil
        resumeDeadlines[token] = nil
        if store.isDurable { turn.removeResume(token: token) }
    }

    /// Removes a stale socket file at `path` (this user's, connect refused) and refuses every other occupant, saying
    /// which it is (``SocketHolder``, review finding 11): a livebusd (it answered a HELLO), a process that does not
    /// speak the LiveBus protocol or does not answer, another user's socket (never removed, whatever connect says:
    /// issue 14 "socket theft"; stale or listening, as far as can be told), a socket whose connect failed otherwise
    /// (EACCES, EPERM, EAGAIN), or a file that is not a socket.
    /// - Parameters:
    ///   - path: The socket path.
    ///   - hello: Whether the path is the bus's, so a listener on it is asked a HELLO (the APNs endpoint's and the
    ///     dashboard's sockets speak HTTP: a listener there is only said to be listening).
    ///   - logger: Where the removal of a stale file is logged.
    /// - Throws: ``DaemonError`` naming the path, its holder and what to do.
    static func clearSocketPath(_ path: String, hello: Bool = true, logger: Logger) throws(DaemonError) {
        let mine = getuid()
        let holder = SocketHolder.identify(path: path, hello: hello)
        let defaultPath = "the default, \(SocketPath.defaultPath()), is private to you"
        let elsewhere = "choose another --socket path (\(defaultPath))"
        let elsewhereSentence = "Choose another --socket path (\(defaultPath))"
        switch holder {
        case .absent:
            break
        case .stale:
            logger.log(.notice, "removing stale socket file", [("socket", path)])
            unlink(path)
        case .notSocket:
            throw DaemonError("\(path) exists and is not a socket; remove it or choose another --socket path")
        case .livebusd(let owner, _, _) where owner == mine:
            throw DaemonError(
                "another livebusd is already serving \(path) (\(holder.who)); stop it first or choose another --socket path",
                unreachable: true
            )
        case .otherProtocol(let owner, _, _) where owner == mine, .silent(let owner, _, _, _) where owner == mine,
            .listening(let owner, _, _) where owner == mine:
            throw DaemonError(
                "\(path) is held by \(holder.who); it is not removed. Stop that process, or \(elsewhere)",
                unreachable: true
            )
        case .undecided(let owner, let code) where owner == mine:
            throw DaemonError(
                "\(path) is a socket that cannot be probed (connect: \(String(cString: strerror(code)))), so a daemon may be serving it; it is not removed. Stop that daemon or remove the file yourself, or choose another --socket path",
                unreachable: true
            )
        case .foreignStale:
            throw DaemonError(
                "\(path) is \(holder.who); it is not removed: only its owner or root may remove it. Have it removed, or \(elsewhere)",
                unreachable: true
            )
        case .foreignListening, .undecided:
            throw DaemonError("\(path) is \(holder.who); it is not removed. \(elsewhereSentence)", unreachable: true)
        case .livebusd, .otherProtocol, .silent, .listening:
            throw DaemonError(
                "\(path) is held by \(holder.who); it is not removed. \(elsewhereSentence)",
                unreachable: true
            )
        }
    }

    /// Logs what closing a listener did with its socket file at `path`: a file that replaced the daemon's socket
    /// (another daemon took the path) was left in place (notice, with its owner); one already gone is said at info.
    static func logSocketFileRemoval(_ removal: FileIdentity.Removal?, path: String, logger: Logger) {
        switch removal {
        case .replaced(let owner):
            logger.log(
                .notice,
                "socket path now belongs to someone else; left in place",
                [("socket", path), ("owner", userName(uid: owner))]
            )
        case .absent:
            logger.info("socket file already removed by someone else", [("socket", path)])
        case .failed(let code):
            logger.log(
                .warning,
                "cannot remove socket file",
                [("socket", path), ("error", String(cString: strerror(code)))]
            )
        case .removed, nil:
            break
        }
    }

    /// Logs a notice when the host's wall clock is stepped (checked every second): the daemon keeps its own
    /// monotonic timeline, so the step changes nothing it sends; a restart adopts the new wall time.
    private func watchHostWallClock(_ anchored: AnchoredServerClock) {
        hostWallClockOffsetMilliseconds = anchored.wallClockOffsetMilliseconds()
        wallClockWatch = loop.scheduleTimer(after: 1000, repeat: 1000) { [unowned self] in
            let offset = anchored.wallClockOffsetMilliseconds()
            let step = offset - self.hostWallClockOffsetMilliseconds
            guard abs(step) >= 1000 else { return }
            self.hostWallClockOffsetMilliseconds = offset
            self.logger.log(
                .notice,
                "host wall clock stepped; livebusd keeps its monotonic timeline (restart it to adopt the host's time)",
                [("step_ms", "\(step)"), ("host_offset_ms", "\(offset)")]
            )
        }
    }

    /// Loads a scenario by name: `demo-120s`, `random:K` (K orders) or a timeline file path.
    /// - Throws: ``ScenarioError`` naming the file, line and field.
    public static func loadScenario(_ spec: String, seed: UInt64) throws -> Scenario {
        if spec.hasPrefix("random") {
            let parts = spec.split(separator: ":")
            let k = parts.count > 1 ? Int(parts[1]) ?? 0 : 5
            guard k > 0 else { throw DaemonError("random scenario needs a positive order count: random:K") }
            return Scenario.random(orders: k, seed: seed)
        }
        if spec.hasSuffix(".json") || spec.contains("/") {
            return try Scenario.load(contentsOf: spec)
        }
        return try Scenario.builtIn(named: spec)
    }

    /// Says BYE to every session, closes the listener (removing the socket file) and stops the loop.
    public func shutdown(reason: String) {
        guard !isShuttingDown else { return }
        commitTurn(force: true)
        // Exact topic counters in the file before the data directory's lock goes (SQLiteStore.counterSlack).
        store.flushDeferredState()
        isShuttingDown = true
        simulatorTimer?.cancel()
        stopRetryingHeldEvents()
        stopLimits()
        wallClockWatch?.cancel()
        wallClockWatch = nil
        resumeSweep?.cancel()
        resumeSweep = nil
        if let l = listener {
            l.close()
            Daemon.logSocketFileRemoval(l.socketFileRemoval, path: l.path, logger: logger)
        }
        listener = nil
        stopAPNs()
        stopFederation()
        signals?.close()
        signals = nil
        var draining: [Session] = []
        for s in sessions.values {
            send(s, .bye, body: ByeBody(reason: reason))
            if drainThroughFaults(s) {
                draining.append(s)
            } else {
                closeSession(s, reason: "shutdown", flush: true)
            }
        }
        // Sessions whose toxics still hold bytes (the BYE among them) first get them, for at most
        // `shutdownDrainMilliseconds`; then the data directory's lock goes, BYE frames flush, and the loop stops.
        let finish = { [unowned self, loop] in
            self.onShutdown?()
            self.dataLock?.release()
            loop.scheduleTimer(after: 50, repeat: 0) { loop.stop() }
        }
        guard !draining.isEmpty else {
            finish()
            return
        }
        let deadline = monotonicMs + Daemon.shutdownDrainMilliseconds
        var check: (any BusTimer)?
        check = loop.scheduleTimer(after: 10, repeat: 10) { [unowned self] in
            let open = draining.filter { $0.phase != .closed }
            guard open.isEmpty || self.monotonicMs >= deadline else { return }
            for s in open { self.closeSession(s, reason: "shutdown: drain time over", flush: true) }
            check?.cancel()
            check = nil
            finish()
        }
    }

    /// The longest a shutdown waits for bytes a session's downstream toxics still hold (`latency`, `bandwidth`,
    /// `slicer`, `slow_close`), the BYE among them, before it closes the session anyway: 5000 ms (ours).
    static let shutdownDrainMilliseconds: Int64 = 5000

    /// At shutdown: when `s`'s downstream toxics hold bytes, asks its pipeline for a close after them (FAULTS.md §2:
    /// "a close … comes after every byte in flight") and keeps its fault timer running; the pipeline's close closes
    /// the session. Returns `false` (the caller closes the session now) when it has no toxic in the way.
    private func drainThroughFaults(_ s: Session) -> Bool {
        guard s.hasFaults, var f = s.faults, f.downstream.isActive, s.phase != .closed else { return false }
        let actions = f.downstream.close(at: monotonicMs)
        s.faults = f
        run(actions, on: s, direction: .downstream)
        guard s.phase != .closed else { return true }
        armFaults(s)
        return true
    }

    // MARK: - Simulator

    func rearmSimulator() { armSimulator() }

    private func armSimulator() {
        simulatorTimer?.cancel()
        simulatorTimer = nil
        guard let sim = simulator, !isShuttingDown else { return }
        guard let deadline = sim.nextDeadline else {
            if sim.isFinished && !scenarioFinishedLogged && held.count == 0 {
                scenarioFinishedLogged = true
                logger.log(.notice, "scenario finished", [("orders", "\(sim.orders().count)")])
            }
            return
        }
        let delay = max(0, clock.now().milliseconds(to: deadline))
        simulatorTimer = loop.scheduleTimer(after: UInt64(delay), repeat: 0) { [unowned self] in self.simulatorTick() }
    }

    private func simulatorTick() {
        guard simulator != nil else { return }
        // At the held-events limit the simulator waits (emitting nothing, so losing nothing) until the store takes
        // what is held; the successful retry re-arms it and it catches up.
        if held.isFull { return }
        let events = simulator!.advance(to: clock.now())
        publish(events)
        armSimulator()
    }

    /// Publishes one simulator event on its topic and fans it out.
    func publish(_ e: OrderEvent) { publish([e]) }

    /// Stores simulator events (with the simulator's state, in one transaction when durable) and fans them out; when
    /// the store refuses them they are held in order and retried (Daemon+Durability.swift).
    ///
    /// - Parameters:
    ///   - events: The simulator's events, oldest first.
    ///   - undo: For a command: the simulator before the command changed it. The events are then stored now or not
    ///     at all: on a refusal the simulator is put back and the error returned, for the command's answer.
    /// - Returns: The store's error when the events of a command were refused; `nil` when stored or held.
    @discardableResult
    func publish(_ events: [OrderEvent], undo: DeliverySimulator? = nil) -> StoreError? {
        guard !events.isEmpty || store.isDurable else { return nil }
        let items = events.map { e -> (topic: String, body: EventBody) in
            var body = Daemon.body(of: e)
            if places[e.orderID] == nil, let o = simulator?.orders().first(where: { $0.id == e.orderID }) {
                places[e.orderID] = PlacesBody(
                    store: PositionBody(latitude: o.store.latitude, longitude: o.store.longitude),
                    customer: PositionBody(latitude: o.destination.latitude, longitude: o.destination.longitude)
                )
            }
            body.places = places[e.orderID]
            return (e.topic, body)
        }
        if items.isEmpty && !(store.isDurable && simulator != nil) { return nil }
        return storeSimulatorEvents(items, undo: undo)
    }

    /// The wire body of a simulator event (server-clock instants).
    static func body(of e: OrderEvent) -> EventBody {
        let c = e.contentState
        return EventBody(
            event: e.event.rawValue,
            timestamp: e.timestamp.millisecondsSinceEpoch,
            contentState: ContentStateBody(
                status: c.status.rawValue,
                summary: SummaryBody(
                    ko: c.summary.ko,
                    en: c.summary.en,
                    detailKo: c.summary.detailKo,
                    detailEn: c.summary.detailEn
                ),
                etaTarget: c.etaTarget.millisecondsSinceEpoch,
                progress: c.progress,
                riderPosition: c.riderPosition.map { PositionBody(latitude: $0.latitude, longitude: $0.longitude) },
                lastConfirmed: c.lastConfirmed.millisecondsSinceEpoch
            ),
            staleDate: e.staleDate?.millisecondsSinceEpoch,
            relevanceScore: e.relevanceScore,
            dismissalDate: e.dismissalDate?.millisecondsSinceEpoch,
            priority: e.priority
        )
    }

    // MARK: - Connections

    /// Serves a new connection: refused at the connection cap or while shutting down, else a session that reads
    /// it. The socket listener calls it for each accepted connection; ``EmbeddedBus`` for each it opens.
    public func accept(_ c: any BusConnection) {
        if isShuttingDown {
            c.close()
            return
        }
        guard admit(c) else { return }
        let number = nextSessionNumber
        nextSessionNumber += 1
        let s = Session(
            number: number,
            connection: c,
            now: clock.now(),
            outbox: Outbox.Limits(
                coalesceThresholdBytes: options.coalesceThresholdBytes,
                slowConsumerLimitBytes: options.slowConsumerLimitBytes
            ),
            handshake: SessionHandshake.Configuration(
                sessionID: "s\(number)",
                timeoutMilliseconds: limits.handshakeTimeoutMilliseconds,
                maximumFrameSize: options.maximumFrameSize,
                ownUserID: Daemon.ownUserID,
                maximumSubscriptions: limits.maximumSubscriptions
            )
        )
        _ = s.handshake.handle(.opened(monotonicMilliseconds: monotonicMs))  // its timer: the liveness sweep
        s.peerUID = c.peerUserID
        s.onPatternsChanged = { [unowned self] s in
            guard s.phase != .closed else { return }
            self.index.setPatterns(compiled: s.subscriptions.compiled, for: s.number)
        }
        sessions[s.id] = s
        byNumber[number] = s
        beginLimits(s)
        // onClose is strong: the session lives until its connection is closed, also when nothing else holds it
        // any more (a session that said BYE, an observer closed after a flush); the connection drops it on close.
        c.setHandlers(
            onRead: { [unowned self, unowned s] bytes in self.received(bytes, from: s) },
            onClose: { [unowned self, s] error in self.connectionClosed(s, error: error) },
            onDrain: { [unowned self, unowned s] in self.drained(s) }
        )
        do {
            try c.resumeReading()
        } catch {
            closeSession(s, reason: "read failed: \(error)", flush: false)
        }
    }

    private func connectionClosed(_ s: Session, error: TransportError?) {
        guard s.phase != .closed else { return }
        let reason = error.map { "connection error: \($0)" } ?? "peer closed the connection"
        closeSession(s, reason: reason, flush: false)
    }

    func closeSession(_ s: Session, reason: String, flush: Bool) {
        guard s.phase != .closed else { return }
        // ACKs of this session's PUBLISHes still in the turn's batch go out before its BYE or ERROR.
        if flush && s.pendingAcks > 0 { commitTurn() }
        guard s.phase != .closed else { return }
        let wasEstablished = s.phase == .established
        if wasEstablished { journalDetach(s, reason: reason) }
        s.phase = .closed
        index.remove(s.number)
        leaveFanOut(s)
        byNumber[s.number] = nil
        if wasEstablished, !SessionName.isSessionID(s.name), let n = liveNames[s.name] {
            liveNames[s.name] = n > 1 ? n - 1 : nil
        }
        s.probeTimer?.cancel()
        s.probeTimer = nil
        s.schedulerTimer?.cancel()
        s.schedulerTimer = nil
        s.faultTimer?.cancel()
        s.faultTimer = nil
        endLimits(s)
        sessions[s.id] = nil
        dashboardPhoneChanged(s)
        if flush { s.connection.closeAfterFlush() } else { s.connection.close() }
        if wasEstablished && s.role == .session {
            resumable[s.resumeToken] = s
            reserveName(s.name, token: s.resumeToken)
            resumeDeadlines[s.resumeToken] = clock.now().millisecondsSinceEpoch + options.resumeWindowMilliseconds
            if let f = s.faults, !f.toxics.isEmpty { resumedFaults[s.resumeToken] = f }
            // Past 10,000 disconnected sessions one is forgotten (its name, deadline and stored record).
            if resumable.count > 10_000, let k = resumable.keys.first { forgetResume(token: k) }
        }
        logger.info("session closed", [("session.id", s.id), ("session.name", s.name), ("reason", reason)])
    }

    private func received(_ bytes: UnsafeRawBufferPointer, from s: Session) {
        noteReceived(s)
        if s.hasFaults, input(s, bytes) != nil { return }
        receivedAfterFaults(bytes, from: s)
    }

    func receivedAfterFaults(_ bytes: UnsafeRawBufferPointer, from s: Session) {
        s.decoder.append(bytes)
        pump(s)  // a bounded number of frames now, the rest in later turns (Daemon+Limits.swift)
    }

    /// Sends a fatal ERROR and closes the session; every other session is untouched.
    func fail(_ s: Session, _ e: WireError) {
        if s.pendingAcks > 0 { commitTurn() }
        guard s.phase != .closed else { return }
        logger.warning(
            "protocol error",
            [("session.id", s.id), ("code", e.code.name), ("message", e.message)]
        )
        if e.code == .unsupportedVersion, s.phase == .awaitingHello, let v = s.decoder.lastVersionSeen, v == 1 {
            // A v1 client cannot read a v2 frame: it is told why in v1 framing (the two differ only in the version
            // byte and in the trailer length, 0 for ERROR). PROTOCOL.md §4.1.
            let refusal = WireError(
                .unsupportedVersion,
                "the client speaks wire protocol version 1; this daemon speaks \(Frame.supportedVersions). Upgrade the client"
            )
            if let body = try? WireJSON.encode(ErrorBody(refusal, fatal: true)) {
                try? output(s) { buf throws(WireError) in
                    try Frame.encode(type: .error, body: body, version: 1, into: &buf)
                }
            }
        } else {
            send(s, .error, body: ErrorBody(e, fatal: true))
        }
        closeSession(s, reason: "protocol error \(e.code.name)", flush: true)
    }

    func send(_ s: Session, _ type: FrameType, sequence: UInt64 = 0, topic: String = "", body: some Encodable) {
        do {
            send(s, type, sequence: sequence, topic: topic, encoded: try WireJSON.encode(body))
        } catch {
            logger.log(.error, "cannot encode frame", [("type", "\(type)"), ("error", "\(error)")])
        }
    }

    /// Writes a frame whose body is already encoded.
    func send(_ s: Session, _ type: FrameType, sequence: UInt64 = 0, topic: String = "", encoded bytes: [UInt8]) {
        do {
            try output(s) { buf throws(WireError) in
                try Frame.encode(type: type, sequence: sequence, topic: topic, body: bytes, into: &buf)
            }
        } catch {
            logger.log(.error, "cannot encode frame", [("type", "\(type)"), ("error", "\(error)")])
        }
    }

    func handle(_ f: Frame, from s: Session) throws(WireError) {
        if f.type == .hello || s.phase == .awaitingHello {
            try handshake(f, from: s)
            return
        }
        switch f.type {
        case .hello:
            return  // the handshake refused it above (duplicateHello)
        case .subscribe:
            let b = try WireJSON.decodeSubscribe(f.body)
            try subscribe(s, patterns: b.patterns)
        case .unsubscribe:
            let b = try WireJSON.decodeSubscribe(f.body)
            s.unsubscribe(b.patterns)
        case .ping:
            let b = try WireJSON.decodePing(f.body)
            let now = clock.now().millisecondsSinceEpoch
            send(s, .pong, body: PongBody(t1: b.t1, t2: now, t3: clock.now().millisecondsSinceEpoch))
        case .pong:
            let b = try WireJSON.decodePong(f.body)
            probeAnswered(s, b)
        case .ack:
            if !f.topic.isEmpty { s.lastAcked[f.topic] = max(s.lastAcked[f.topic] ?? 0, f.sequence) }
        case .posture:
            let b = try WireJSON.decode(PostureChangeBody.self, from: f.body)
            try postureChanged(s, b)
        case .resend:
            let b = try WireJSON.decode(ResendBody.self, from: f.body)
            try Topic.validate(f.topic)
            catchUp(s, topic: f.topic, after: b.fromSequence == 0 ? 0 : b.fromSequence - 1, force: true)
        case .command:
            let b = try WireJSON.decode(CommandBody.self, from: f.body)
            command(b, id: f.sequence, from: s)
        case .publish:
            guard s.role == .publisher || s.role == .admin else {
                throw WireError(.notPermitted, "PUBLISH needs the publisher or admin role in HELLO")
            }
            // A topic Topic.validate refuses, or a body that does not decode, is this PUBLISH's fault, not the
            // connection's (its frame was whole and its CRC held): refused alone with a non-fatal ERROR, as a value
            // PROTOCOL.md §5.1 does not allow is. A canonical body (what EventJSON.encode writes) is stored and
            // fanned out as the client sent it.
            if f.topic != s.lastPublishTopic {
                do throws(WireError) { try Topic.validate(f.topic) } catch {
                    refusePublish(s, id: f.sequence, topic: f.topic, error)
                    return
                }
                s.lastPublishTopic = f.topic
            }
            let p: (body: EventBody, isCanonical: Bool, contentStateBytes: Int)
            do throws(WireError) {
                p = try EventJSON.decodePublish(f.body)
            } catch {
                refusePublish(s, id: f.sequence, topic: f.topic, error)
                return
            }
            try publishFromClient(
                s,
                topic: f.topic,
                id: f.sequence,
                body: p.body,
                encoded: p.isCanonical ? f.body : nil,
                contentStateBytes: p.contentStateBytes
            )
        case .bye:
            closeSession(s, reason: "client said bye", flush: true)
            // The phone ended its session: nothing will resume it, so its name is free at once (PROTOCOL.md §5.3).
            forgetResume(token: s.resumeToken)
        case .result:
            relayAnswered(f, from: s)
        case .welcome, .event, .error, .upToDate, .sync:
            throw WireError(.malformedFrame, "\(f.type) is sent by the daemon, not to it")
        }
    }

    // MARK: - Handshake (LiveBusCore's SessionHandshake; this is its adapter)

    /// Feeds a frame that arrived before the handshake, or a HELLO after it, to the session's handshake and carries
    /// out what it decides.
    /// - Throws: ``WireError``: the handshake's refusal (the caller sends it as a fatal ERROR and closes).
    private func handshake(_ f: Frame, from s: Session) throws(WireError) {
        var actions = s.handshake.handle(.frame(f.type))
        var hello: HelloBody?
        if actions.isEmpty, f.type == .hello, !s.handshake.isEstablished {
            do {
                let h = try WireJSON.decodeHello(f.body)
                hello = h
                actions = s.handshake.handle(.hello(h, helloFacts(h, session: s)))
            } catch {
                actions = s.handshake.handle(.unreadable(error))
            }
        }
        try carryOut(actions, hello: hello, session: s)
    }

    /// What the handshake needs to know of a HELLO's name and token, and the daemon's own verdicts on it.
    private func helloFacts(_ h: HelloBody, session s: Session) -> SessionHandshake.HelloFacts {
        let now = clock.now().millisecondsSinceEpoch
        var policy: WireError?
        // `down` refuses phones and publishers, never the admin interface that can remove it.
        if h.role != .admin && FaultPipeline.refusesConnections(daemonToxics) {
            policy = WireError(
                .connectionsRefused,
                "new connections are refused by the 'down' toxic; `livebus fault remove` ends it"
            )
        } else if h.role == .session, let (name, t) = sessionDown(for: h) {
            policy = WireError(
                .connectionsRefused,
                "new connections of session '\(name)' are refused by its 'down' toxic '\(t.id)'; `livebus fault remove \(t.id)` ends it"
            )
        }
        var device: WireError?
        do throws(WireError) {
            if let p = h.posture { try postureVerdicts.validate(p, device: h.device) }
            if let d = h.device, h.posture == nil { try PostureCatalog.check(device: d) }
            if let os = h.os { try PostureCatalog.check(os: os) }
        } catch {
            device = error
        }
        var resume: SessionHandshake.ResumeCandidate?
        if let t = h.resume?.token {
            if let old = resumable[t] {
                resume = .init(
                    holder: .disconnected,
                    name: old.name,
                    deadlineMilliseconds: resumeDeadlines[t],
                    patterns: old.patterns
                )
            } else if let deadline = resumeDeadlines[t], let rec = store.resumeRecord(token: t) {
                // A record in the store that no session of this run holds (a killed daemon's, a federation's).
                resume = .init(
                    holder: .persisted,
                    name: rec.name,
                    deadlineMilliseconds: deadline,
                    patterns: rec.patterns
                )
            } else if let live = liveSession(token: t, besides: s) {
                resume = .init(holder: .live, name: live.name, deadlineMilliseconds: nil, patterns: live.patterns)
            }
        }
        return SessionHandshake.HelloFacts(
            serverNowMilliseconds: now,
            peerUserID: s.peerUID,
            policyRefusal: policy,
            // `s` is not established yet: every session counted is another one.
            nameIsLive: h.name.map { liveNames[$0] != nil } ?? false,
            nameReservedUntilMilliseconds: h.name.flatMap { nameReservedUntil($0, now: now) },
            resume: resume,
            deviceRefusal: device,
            newToken: h.resume == nil ? Daemon.makeToken() : ""
        )
    }

    /// The established session other than `s` that holds resume token `token` (the client saw its connection die
    /// first). O(sessions), asked only for a token no disconnected session holds: no per-session index is kept for
    /// this rare case (memory of idle sessions).
    private func liveSession(token: String, besides s: Session) -> Session? {
        sessions.values.first { $0 !== s && $0.resumeToken == token && $0.phase == .established }
    }

    /// Carries out the handshake's actions, in order.
    /// - Throws: ``WireError``: a ``SessionHandshake/Action/refuse(_:)``.
    private func carryOut(
        _ actions: [SessionHandshake.Action],
        hello: HelloBody?,
        session s: Session
    ) throws(WireError) {
        var established: SessionHandshake.Established?
        for a in actions {
            switch a {
            case .armTimer, .cancelTimer:
                break  // the liveness sweep feeds `.timerFired` to every connection awaiting HELLO
            case .forgetResume(let token):
                forgetResume(token: token)
            case .takeOver(let token):
                // The old connection is still open (the client saw it die first): this one takes it over.
                if let live = liveSession(token: token, besides: s) {
                    s.clock = live.clock
                    s.patterns = live.patterns
                    closeSession(live, reason: "resumed on a new connection", flush: false)
                    resumable[token] = nil
                    releaseName(live.name, token: token)
                }
            case .establish(let e):
                guard let h = hello else { break }
                established = e
                establish(s, e, hello: h)
            case .write(.welcome, _) where established.map({ holdsWelcome(s, $0) }) ?? false:
                // A new session's token must be durable before the client has it (PROTOCOL.md §4.1): its record
                // is in this turn's batch, and the WELCOME follows that batch's commit (``releaseWelcome(_:)``).
                if let e = established, let h = hello {
                    s.heldWelcome = HeldWelcome(established: e, hello: h)
                    welcomesInTurn.append(s)
                }
            case .write(let type, let body):
                send(s, type, encoded: body)
            case .refuse(let e):
                throw e
            }
        }
        if let e = established, let h = hello, s.heldWelcome == nil { afterWelcome(s, e, hello: h) }
    }

    /// Whether a session's WELCOME waits for its resume record's commit: a new phone's (not a resumed one's, whose
    /// token is stored already) on a durable store.
    private func holdsWelcome(_ s: Session, _ e: SessionHandshake.Established) -> Bool {
        store.isDurable && e.role == .session && e.resumedFrom == nil
    }

    /// Writes a held WELCOME once its record's batch committed (or was refused), then what follows it, and reads the
    /// session's input again.
    func releaseWelcome(_ s: Session) {
        guard let w = s.heldWelcome else { return }
        s.heldWelcome = nil
        guard s.phase == .established else { return }
        // Stamped now: the client's first offset estimate (WELCOME serverTime) does not include the wait.
        var welcome = w.established.welcome
        welcome.serverTime = clock.now().millisecondsSinceEpoch
        send(s, .welcome, encoded: welcome.compactJSON())
        afterWelcome(s, w.established, hello: w.hello)
        guard s.phase == .established else { return }
        unpause(s, .welcome)
        if s.decoder.bufferedByteCount > 0 { schedulePump(s) }
    }

    /// Adopts a HELLO's identity: the resumed session's subscriptions, clock and record, or a new one.
    private func establish(_ s: Session, _ e: SessionHandshake.Established, hello h: HelloBody) {
        s.role = e.role
        s.client = h.client
        s.device = h.device
        s.posture = h.posture
        s.appState = e.appState
        s.os = h.os
        s.wantsSync = h.wantsSync
        if let p = h.profile { s.profile = p }
        s.handshakeOffsetMilliseconds = e.clientOffsetMilliseconds
        if let r = h.resume {
            switch e.resumedFrom {
            case .disconnected?:
                if let old = resumable.removeValue(forKey: r.token) {
                    releaseName(old.name, token: r.token)
                    s.patterns = old.patterns
                    s.clock = old.clock
                }
            case .persisted?:
                // A session of a daemon that was killed: the store kept its record (looked up through the store).
                if let rec = store.resumeRecord(token: r.token) {
                    releaseName(rec.name, token: r.token)
                    s.patterns = rec.patterns
                }
            case .live?, nil:
                break  // taken over above
            }
            resumeDeadlines[r.token] = nil
            // The client's own record wins: it knows what it applied, and what it subscribed to. A record saved
            // before the daemon's kill may predate a SUBSCRIBE that was answered (its batch not yet stored): the
            // patterns it lacks are added, and caught up after WELCOME as the others. The handshake checked them:
            // well formed, and within --max-subscriptions together with the record's (else it refused the HELLO).
            s.lastSent = r.topics
            if let wanted = r.patterns {
                let held = Set(s.patterns)
                let missing = wanted.filter { !held.contains($0) }
                if !missing.isEmpty { s.patterns += missing }
            }
        }
        s.name = e.name
        s.resumeToken = e.resumeToken
        s.phase = .established
        // A HELLO may never ask for a name of the form s<digits> (SessionName): those are not counted.
        if !SessionName.isSessionID(s.name) { liveNames[s.name, default: 0] += 1 }
        dashboardPhoneChanged(s)
        saveResume(s)
        journalAttach(s, resumed: e.resumedFrom != nil)
    }

    /// What follows WELCOME: the log line, the phone's toxics, its scheduler, probes and announcements, and the
    /// catch-up of a resumed session.
    private func afterWelcome(_ s: Session, _ e: SessionHandshake.Established, hello h: HelloBody) {
        let resumed = e.resumedFrom != nil
        logger.info(
            resumed ? "session resumed" : "session attached",
            [
                ("session.id", s.id), ("session.name", s.name), ("role", s.role.rawValue),
                ("device", s.device ?? "-"), ("fold_state", s.posture?.foldState ?? "-"), ("app_state", s.appState),
                ("client", s.client),
            ]
        )
        if resumed, let old = resumedFaults.removeValue(forKey: s.resumeToken) {
            // Toxics belong to the phone, not to one connection (as toxiproxy's belong to the proxy).
            // What they do at once on a new connection (reset_peer with timeout 0) is done now, as toxiproxy's
            // toxics act on every new connection through the proxy.
            var f = SessionFaults(seed: options.seed, session: s.name)
            var down: [FaultAction] = []
            var up: [FaultAction] = []
            for t in old.toxics {
                guard let (d, u) = try? f.add(t, at: monotonicMs) else { continue }
                down += d
                up += u
            }
            s.faults = f
            run(down, on: s, direction: .downstream)
            run(up, on: s, direction: .upstream)
            if s.phase == .closed { return }
            armFaults(s)
        }
        sendSync(s)  // a federated daemon's state, to a client that asked for it (PROTOCOL.md §5.9)
        if s.role == .session {
            startScheduler(s)
            startProbing(s)
            if resumed {
                for (topic, after) in s.subscriptions.resumeCatchUps(topics: store.topics, applied: s.lastSent) {
                    catchUp(s, topic: topic, after: after, force: true)
                }
            }
        }
    }

    /// Stages the session's resume record in this turn's batch (a durable store only).
    /// - Parameters:
    ///   - s: The session.
    ///   - deferrable: Whether the record may wait for a later batch (a SUBSCRIBE's: ``commitTurn(force:)``).
    func saveResume(_ s: Session, deferrable: Bool = false) {
        guard store.isDurable, s.role == .session else { return }
        turn.saveResume(
            ResumeRecord(token: s.resumeToken, name: s.name, patterns: s.patterns, lastSent: s.lastSent),
            deferrable: deferrable
        )
    }

    static let appStates = SessionHandshake.appStates
    static let foldStates = ["flat", "half-opened", "folded"]
    static let orientations = ["portrait", "landscape"]

    static func validate(posture p: PostureBody, device: String?) throws(WireError) {
        // A misspelled name gets the nearest valid one.
        func near(_ word: String, _ names: [String]) -> String {
            NearMatch.closest(word, among: names, limit: 1).first.map { " (did you mean '\($0)'?)" } ?? ""
        }
        guard foldStates.contains(p.foldState) else {
            throw WireError(
                .invalidPosture,
                "fold state '\(p.foldState)'\(near(p.foldState, foldStates)) is not one of \(foldStates.joined(separator: ", "))"
            )
        }
        guard orientations.contains(p.orientation) else {
            throw WireError(
                .invalidPosture,
                "orientation '\(p.orientation)'\(near(p.orientation, orientations)) is not portrait or landscape"
            )
        }
        for (name, v) in [("windowWidth", p.windowWidth), ("windowHeight", p.windowHeight)] {
            if let v, !(v > 0 && v < 10_000) {
                throw WireError(.invalidPosture, "\(name) \(v) pt is not a window size")
            }
        }
        if let a = p.hingeAngle, !(0...360).contains(a) {
            throw WireError(.invalidPosture, "hingeAngle \(a)° is out of range 0…360 (degrees, 180 = flat)")
        }
        try PostureCatalog.check(posture: p, device: device)
    }

    /// This process's user id (the admin role's owner).
    static let ownUserID: UInt32 = getuid()

    /// A new session's resume token: 32 lowercase hex digits from the system's random source.
    static func makeToken() -> String {
        var g = SystemRandomNumberGenerator()
        return SessionHandshake.makeToken(using: &g)
    }

    private func subscribe(_ s: Session, patterns: [String]) throws(WireError) {
        // LiveBusCore's SessionSubscriptions checks, merges and compiles them once.
        let compiled = try s.subscribe(patterns, limit: limits.maximumSubscriptions)
        // A resume's `patterns` repeat it (PROTOCOL.md §5.3): it goes with the next batch, within 100 ms.
        saveResume(s, deferrable: true)
        for topic in store.topics where compiled.contains(where: { $0.matches(topic) }) {
            catchUp(s, topic: topic, after: s.sent(topic), force: false)
        }
        // The whole SUBSCRIBE is caught up (also when no topic matched): PROTOCOL.md §5.3.
        enqueueCatchUp(s, topic: nil, after: 0)
    }

    /// Sends `topic`'s events after `after`: replayed from the log, or one snapshot of the latest state when the
    /// log no longer covers the gap; then UPTODATE. Paced by the phone's drain (``pumpCatchUp(_:)``).
    func catchUp(_ s: Session, topic: String, after: UInt64, force: Bool) {
        guard store.latest(topic: topic) != nil else { return }
        if force {
            let slot = s.slot(for: topic)
            s.setSent(slot: slot, min(s.sent(slot: slot), after))
        }
        enqueueCatchUp(s, topic: topic, after: after)
    }

    /// Writes one event to one session, converting its instants into the session's clock.
    func deliver(_ e: StoredEvent, to s: Session, flags: FrameFlags = []) {
        guard s.phase == .established else { return }
        deliver(e, to: s, slot: s.slot(for: e.topic), flags: flags, now: clock.now())
    }

    /// ``deliver(_:to:flags:)`` with the topic's slot in the session and the server instant of the conversion known
    /// (the fan-out's path: nothing here hashes the topic while nothing is caught up or held).
    func deliver(_ e: StoredEvent, to s: Session, slot: Int, flags: FrameFlags, now: ServerInstant) {
        deliver(e, to: s, slot: slot, flags: flags, isTerminal: e.isTerminal, now: now)
    }

    /// ``deliver(_:to:slot:flags:now:)`` with `e.isTerminal` known (the fan-out reads it once per event).
    func deliver(
        _ e: StoredEvent,
        to s: Session,
        slot: Int,
        flags: FrameFlags,
        isTerminal: Bool,
        now: ServerInstant
    ) {
        guard s.phase == .established else { return }
        let sent = s.sent(slot: slot)
        if e.sequence <= sent { return }
        // A topic being caught up gets its new events from the catch-up, in order.
        if flags.isEmpty && isCatchingUp(s, topic: e.topic) { return }
        // The core's outbox decides (coalescing, terminal events, slow consumer) on the live bytes only (catch-up
        // and replies are paced and limited apart, Daemon+Limits.swift); the daemon carries it out.
        switch s.outbox.offer(
            e,
            flags: flags,
            lastSent: sent,
            queuedBytes: liveBytesOutstanding(s),
            isTerminal: isTerminal
        ) {
        case .write(let f): write(e, to: s, slot: slot, flags: f, now: now)
        case .alreadySent, .held: return
        case .slowConsumer(let err): fail(s, err)
        }
    }

    func write(_ e: StoredEvent, to s: Session, flags: FrameFlags) {
        write(e, to: s, slot: s.slot(for: e.topic), flags: flags, now: clock.now())
    }

    func write(_ e: StoredEvent, to s: Session, slot: Int, flags: FrameFlags, now: ServerInstant) {
        // One offset estimate per session and server millisecond (the conversion is server instant + offset at now,
        // for every field; Session.conversion(at:)). The body's fields are read in place, not copied.
        let (k, unc) = s.conversion(at: now)
        let etaTarget = e.body.contentState.etaTarget
        // Saturating: stored instants are within PROTOCOL.md §3's range, and nothing here may trap if one is not.
        let eta = etaTarget.saturatingAdding(k)
        s.setConverted(
            slot: slot,
            ConvertedInstant(
                client: ClientInstant(millisecondsSinceEpoch: eta),
                server: ServerInstant(millisecondsSinceEpoch: etaTarget),
                uncertaintyMilliseconds: unc
            )
        )
        let offset = eta.saturatingSubtracting(etaTarget)
        let ts = e.body.timestamp.saturatingAdding(offset)
        let stale = e.body.staleDate.map { $0.saturatingAdding(offset) }
        let dismissal = e.body.dismissalDate.map { $0.saturatingAdding(offset) }
        let confirmed = e.body.contentState.lastConfirmed.saturatingAdding(offset)
        // Only this trailer is per session; the header, topic and body bytes and their CRC come from the template.
        // Sent values stay in PROTOCOL.md §3's range, or the phone's decoder would refuse the EVENT.
        let trailer = EventTrailer(
            timestamp: WireRange.clampInstant(ts),
            etaTarget: WireRange.clampInstant(eta),
            lastConfirmed: WireRange.clampInstant(confirmed),
            staleDate: stale.map(WireRange.clampInstant),
            dismissalDate: dismissal.map(WireRange.clampInstant),
            uncertaintyMs: UInt32(clamping: max(0, min(unc, Int(WireRange.instantLimitMilliseconds))))
        )
        // The closure takes the template only: capturing `e` copied the whole StoredEvent (its body's strings) per
        // delivery, ~460 instructions (callgrind).
        let template = e.template
        do {
            try output(s) { buf throws(WireError) in
                try Frame.appendEvent(template, flags: flags, trailer: trailer, into: &buf)
            }
            s.setSent(slot: slot, max(s.sent(slot: slot), e.sequence))
            s.eventsSent += 1
            dashboardWrote(e, to: s, flags: flags, trailer: trailer)
        } catch {
            logger.log(.error, "cannot encode event", [("topic", e.topic), ("error", "\(error)")])
        }
    }

    private func drained(_ s: Session) {
        guard s.outbox.hasHeld || needsDrainWork(s) else { return }
        // In the next turn: this runs inside the flush, and what it writes is flushed by the next one.
        loop.runSoon { [weak self, weak s] in
            guard let self, let s, s.phase != .closed else { return }
            for e in s.outbox.drain() { self.deliver(e, to: s) }
            self.afterDrain(s)
        }
    }

    private func postureChanged(_ s: Session, _ b: PostureChangeBody) throws(WireError) {
        defer { dashboardPhoneChanged(s) }
        if let p = b.posture {
            try Daemon.validate(posture: p, device: s.device)
            s.posture = p
        }
        if let a = b.appState {
            guard Daemon.appStates.contains(a) else {
                throw WireError(
                    .invalidBody,
                    "POSTURE body: field 'appState' is '\(a)'; expected one of \(Daemon.appStates)"
                )
            }
            s.appState = a
            schedulerAppStateChanged(s)
        }
        if let p = b.profile {
            // A change names only what changed: the other settings stay (`livebus profile pro --low-power on`).
            s.profile = s.profile.merging(p)
            schedulerProfileChanged(s)
        }
        journalReport(s, b)
        if b.clockChanged == true {
            // The phone says its clock was set: probe now (the first sample after a step is held back as an outlier
            // and the next, 200 ms later, confirms it), unless a probe is already on its way.
            logger.info("client reported a clock change", [("session.id", s.id)])
            if s.outstandingProbe == nil { sendProbe(s) }
            if b.posture == nil && b.appState == nil && b.profile == nil { return }
        }
        logger.info(
            "posture changed",
            [
                ("session.id", s.id), ("fold_state", s.posture?.foldState ?? "-"),
                ("orientation", s.posture?.orientation ?? "-"), ("app_state", s.appState),
            ]
        )
    }

    private func publishFromClient(
        _ s: Session,
        topic: String,
        id: UInt64,
        body: EventBody,
        encoded: [UInt8]?,
        contentStateBytes: Int
    ) throws(WireError) {
        // The role and the topic are checked by the caller (handle(_:from:)).
        // A value PROTOCOL.md §5.1 does not allow is this event's fault, not the connection's: refused alone.
        do throws(WireError) {
            try PublishRules.check(body, contentStateBytes: contentStateBytes)
        } catch {
            refusePublish(s, id: id, topic: topic, error)
            return
        }
        stageClientEvent(topic: topic, body: body, encoded: encoded, from: s, id: id)
    }

    /// Refuses one PUBLISH with a non-fatal ERROR carrying its topic and request id (PROTOCOL.md §3, §6); the
    /// connection stays open and nothing of the event is stored or numbered. The turn's earlier PUBLISHes of the
    /// session are committed first, so its ACKs and ERRORs leave in the order of its PUBLISHes. A topic longer than
    /// a frame can carry (255 bytes) is left out of the ERROR's header (empty), which still carries the request id.
    func refusePublish(_ s: Session, id: UInt64, topic: String, _ e: WireError) {
        if s.pendingAcks > 0 { commitTurn() }
        guard s.phase == .established else { return }
        logger.log(
            .notice,
            "publish refused",
            [
                ("session.id", s.id),
                // A topic with a control character is logged escaped (`"orders/a\0b"`), never as its raw bytes.
                ("topic", topic.unicodeScalars.contains(where: Topic.isForbidden) ? String(reflecting: topic) : topic),
                ("id", "\(id)"), ("code", e.code.name), ("message", e.message),
            ]
        )
        let echoed = topic.utf8.count <= Frame.maximumTopicLength ? topic : ""
        send(s, .error, sequence: id, topic: echoed, body: ErrorBody(e, fatal: false))
    }

    // MARK: - Clock probes

    /// Once a second, tells every phone the latest sequence of every topic it has not acknowledged, so a lost last
    /// event (a dropped `end`, a partition on a quiet topic) is noticed and asked for again (PROTOCOL.md §5.4).
    /// One daemon-wide timer (the resume sweep's): a timer per phone held a `uv_timer_t`, its object and closure for
    /// each session, and woke the loop for each idle one every second (massif, 1,000 idle sessions).
    private func announceUnacknowledged() {
        for s in sessions.values where s.phase == .established && s.role == .session {
            for t in s.topicStates where t.hasSent && (s.lastAcked[t.topic] ?? 0) < t.sent {
                send(s, .upToDate, topic: t.topic, body: UpToDateBody(sequence: t.sent))
            }
        }
    }

    private func startProbing(_ s: Session) {
        sendProbe(s)
    }

    private func sendProbe(_ s: Session) {
        guard s.phase == .established else { return }
        s.probesSent += 1
        let t1 = clock.now().millisecondsSinceEpoch
        s.outstandingProbe = t1
        send(s, .ping, body: PingBody(t1: t1))
        // Re-armed when the PONG arrives; this timer only covers a lost PONG.
        armProbe(s, after: s.clock.configuration.maximumRoundTripMilliseconds)
    }

    private func armProbe(_ s: Session, after delay: Int64) {
        s.probeTimer?.cancel()
        s.probeTimer = loop.scheduleTimer(after: UInt64(max(10, delay)), repeat: 0) { [unowned self, weak s] in
            guard let s else { return }
            self.sendProbe(s)
        }
    }

    private func probeAnswered(_ s: Session, _ b: PongBody) {
        guard s.outstandingProbe == b.t1 else { return }  // a late answer to a probe already given up on
        s.outstandingProbe = nil
        let sample = ProbeSample(
            serverSend: ServerInstant(millisecondsSinceEpoch: b.t1),
            clientReceive: ClientInstant(millisecondsSinceEpoch: b.t2),
            clientSend: ClientInstant(millisecondsSinceEpoch: b.t3),
            serverReceive: clock.now()
        )
        s.lastProbeRoundTripMilliseconds = Double(sample.roundTripMilliseconds)
        for ev in s.clock.add(sample) {
            if case .stepDetected = ev {
                logger.log(.notice, "client clock step detected", [("session.id", s.id), ("event", "\(ev)")])
                dashboardLog(kind: "clock", phone: s.name, text: "clock step detected: \(ev)")
            }
        }
        reconvertIfNeeded(s)
        dashboardPhoneChanged(s)
        armProbe(s, after: s.clock.nextProbeDelayMilliseconds(isBackground: s.appState != "foreground"))
    }

    /// Re-sends the latest event of each topic with freshly converted instants when the client's clock moved away
    /// from what was sent (a step, drift, or a better estimate), so countdowns stay right in the phone's clock.
    /// Source: Protocol/CLOCKSYNC.md (re-conversion).
    func reconvertIfNeeded(_ s: Session) {
        let now = clock.now()
        for slot in s.topicStates.indices {
            let t = s.topicStates[slot]
            guard let sent = t.converted, s.clock.needsReconversion(sent, now: now) else { continue }
            guard let latest = store.latest(topic: t.topic), t.hasSent, latest.sequence == t.sent else { continue }
            var flags: FrameFlags = [.reconvert]
            if latest.isTerminal { flags.insert(.terminal) }
            write(latest, to: s, slot: slot, flags: flags, now: now)
        }
    }
}
