import Foundation
import LiveBusClock
import LiveBusCore
import LiveBusFederation
import LiveBusLoop
import LiveBusSimulator
import LiveBusWire

/// Federation through NATS JetStream (`livebusd --federate`, issue 19): the JetStream store replaces SQLite; its
/// stream consumer brings every daemon's events (this one's too) back in stream order and the daemon fans them
/// out, so a PUBLISH on any daemon reaches subscribers on every daemon; resume records travel the same stream, so
/// a phone's token is valid on every daemon. libnats runs on the store's own threads (never the loop's): results
/// come back through the loop's `uv_async` handle. Source: ISSUE-19; PROTOCOL.md §5.8.
extension Daemon {
    /// The JetStream store, when federating.
    var federation: JetStreamStore? { store as? JetStreamStore }

    /// Opens the JetStream store and starts following its stream (called by the start instead of SQLite).
    /// - Throws: ``DaemonError`` when NATS cannot be reached (without `--federate-optional`), the stream has too
    ///   few replicas, or a scenario was asked for.
    /// - Returns: Whether the simulator was restored from the stream (a restart of the daemon that runs the scenario).
    @discardableResult
    func startFederation(_ o: FederationOptions) throws(DaemonError) -> Bool {
        guard options.scenario == nil || !options.federationOptional else {
            throw DaemonError(
                "--scenario does not run with --federate-optional: the simulator's events need the federation from the start; drop one of them"
            )
        }
        guard let handle = uvLoop?.handle else {
            throw DaemonError("--federate needs the socket daemon's libuv loop (not an embedded daemon)")
        }
        var o = o
        if let dir = options.dataDirectory {
            // One daemon per data directory: the identity in it is this daemon's alone.
            do { dataLock = try DataDirectoryLock(directory: dir) } catch {
                throw DaemonError(error.message, unreachable: true)
            }
            o.daemonID = try Daemon.federationIdentity(directory: dir)
        } else {
            // `--memory`: an identity for this run only, so nothing of this daemon's is restored after a restart.
            o.daemonID = "memory-" + UUID().uuidString.lowercased()
        }
        federationTag = DeliverySimulator.federationTag(daemonID: o.daemonID)
        let js: JetStreamStore
        do {
            js = try JetStreamStore(o)
        } catch {
            // Refused credentials do not get better by waiting: exit 2 (usage), even with --federate-optional.
            guard options.federationOptional, !error.credentialsRefused else {
                throw DaemonError(error.message, unreachable: !error.credentialsRefused)
            }
            logger.log(
                .warning,
                "federation not joined: running alone, PUBLISH is refused (federationUnavailable) until NATS answers",
                [("servers", o.servers.joined(separator: ",")), ("error", error.message)]
            )
            store = UnjoinedFederationStore(logCapacity: options.replayLogCapacity)
            federationSync = FederationSync(link: .unjoined, nowMilliseconds: nowMs())
            retryJoin(o, handle: handle)
            return false
        }
        let restored = try restoreSimulator(js)
        federationSync = FederationSync(link: .connected, nowMilliseconds: nowMs())
        try follow(js, o, handle: handle)
        return restored
    }

    /// The metadata key of this daemon's scenario: `scenario` on one daemon, `scenario/<daemon id>` in a
    /// federation (each daemon's own, PROTOCOL.md §5.8).
    var scenarioMetaKey: String {
        guard let js = federation else { return "scenario" }
        return "scenario/" + js.daemonID
    }

    /// The metadata key of this daemon's reserved push ids: `pushIDsReserved` on one daemon,
    /// `pushIDsReserved/<daemon id>` in a federation (each daemon reserves its own, PROTOCOL.md §5.8).
    var pushIDsMetaKey: String {
        guard let js = federation else { return "pushIDsReserved" }
        return "pushIDsReserved/" + js.daemonID
    }

    /// Whether an order id is already used in the federation outside this daemon's simulator: its topic
    /// (`orders/<id>`) has events in the stream (another daemon's order, or a publisher's). Always `false` on one
    /// daemon.
    func orderIDTakenInFederation(_ id: String) -> Bool {
        guard let js = federation else { return false }
        return js.latest(topic: "orders/" + id) != nil
    }

    /// This daemon's identity in the federation: the id in `<data dir>/federation-id`, made (a random UUID) at the
    /// first federated start and kept, so a restart with the same data directory is the same daemon.
    /// - Parameter directory: The data directory (created and locked by the caller).
    /// - Returns: The id (`A–Z a–z 0–9 -`, at most 64 characters).
    /// - Throws: ``DaemonError`` when the file cannot be read or written, or holds something else.
    static func federationIdentity(directory: String) throws(DaemonError) -> String {
        let path = directory + "/federation-id"
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
        if FileManager.default.fileExists(atPath: path) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw DaemonError("cannot read \(path); check the data directory's permissions")
            }
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !id.isEmpty, id.count <= 64, id.allSatisfy(allowed.contains) else {
                throw DaemonError(
                    "\(path) does not hold a daemon id (A-Z a-z 0-9 -, at most 64); remove it to give this daemon a new identity (its simulator state in the federation is then not restored)"
                )
            }
            return id
        }
        let id = UUID().uuidString.lowercased()
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw DaemonError("cannot create \(tmp): \(String(cString: strerror(errno))); check the data directory")
        }
        let bytes = Array((id + "\n").utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        Glibc.close(fd)
        guard written == bytes.count, synced, rename(tmp, path) == 0 else {
            unlink(tmp)
            throw DaemonError("cannot write \(path): \(String(cString: strerror(errno))); check the data directory")
        }
        return id
    }

    /// Restores this daemon's simulator from its state in the stream (under its own identity), as the SQLite store
    /// does from the data directory: always without `--scenario` (the orders made with `order.create` carry on),
    /// and with one only when the stream recorded the same scenario and seed for this daemon (else it starts over).
    /// - Returns: Whether it was restored.
    /// - Throws: ``DaemonError`` when the stored state cannot be read.
    private func restoreSimulator(_ js: JetStreamStore) throws(DaemonError) -> Bool {
        guard let data = js.simulatorState() else { return false }
        let held = js.meta("scenario/" + js.daemonID)
        let requested = "\(options.scenario ?? "none") seed \(options.seed)"
        let carryOn = options.scenario == nil ? (held ?? "none").hasPrefix("none seed ") : held == requested
        guard carryOn else {
            logger.log(
                .warning,
                "the simulator state this daemon left in the federation is not restored: it ran another scenario",
                [("held", held ?? "-"), ("requested", requested), ("daemon", js.daemonID)]
            )
            return false
        }
        do {
            simulator = try DeliverySimulator(restoring: data)
        } catch {
            throw DaemonError(
                "the simulator state of daemon \(js.daemonID) in the stream \(js.streamName) cannot be read (\(error))"
            )
        }
        logger.log(
            .notice,
            "simulator restored from the federation",
            [("daemon", js.daemonID), ("orders", "\(simulator?.orders().count ?? 0)")]
        )
        return true
    }

    /// Tries to join every 2 s off the loop thread (`--federate-optional`); on success the loop switches stores.
    private func retryJoin(_ o: FederationOptions, handle: LoopHandle) {
        let box = DaemonBox(self)
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) {
            guard let js = try? JetStreamStore(o) else {
                handle.execute { _ in
                    guard let d = box.value, !d.isShuttingDown else { return }
                    d.retryJoin(o, handle: handle)
                }
                return
            }
            let joined = JoinedStore(js)
            handle.execute { _ in
                guard let d = box.value, !d.isShuttingDown else { return }
                do {
                    // Orders this daemon made before its restart carry on once it joins (none were taken since:
                    // every order.create is refused while it has not joined).
                    if d.simulator == nil, try d.restoreSimulator(joined.store) { d.rearmSimulator() }
                    try d.follow(joined.store, o, handle: handle)
                    // Push ids handed out while unjoined were not reserved: carry on above both.
                    let held = Int(joined.store.meta(d.pushIDsMetaKey) ?? "") ?? 0
                    d.pushCounter = max(d.pushCounter, held)
                    d.pushIDsReserved = held
                    let meta = StoreBatch(meta: [
                        (d.scenarioMetaKey, "\(d.options.scenario ?? "none") seed \(d.options.seed)")
                    ])
                    d.store.commit(meta) { [weak d] r in
                        if case .failure(let e) = r {
                            let text = "cannot record the scenario in the federation"
                            d?.logger.log(.error, text, [("error", e.message)])
                        }
                    }
                    // Subscribed phones get what the federation holds (their sequences are the federation's).
                    for s in d.sessions.values where s.phase == .established && s.role == .session {
                        for topic in joined.store.topics where s.isSubscribed(to: topic) {
                            d.catchUp(s, topic: topic, after: s.lastSent[topic] ?? 0, force: false)
                        }
                    }
                } catch {
                    d.logger.log(.error, "cannot join the federation", [("error", "\(error)")])
                }
            }
        }
    }

    /// Uses `js` as the store and follows its stream.
    private func follow(_ js: JetStreamStore, _ o: FederationOptions, handle: LoopHandle) throws(DaemonError) {
        // Sessions saved by any daemon of the federation may resume here for a resume window from this start.
        let deadline = clock.now().millisecondsSinceEpoch + options.resumeWindowMilliseconds
        let records = js.resumeRecords()
        for r in records { resumeDeadlines[r.token] = deadline }
        store = js
        do {
            try js.startFollowing(
                post: { work in handle.execute { _ in work() } },
                onEvent: { [weak self] e in self?.federatedEvent(e) },
                onResume: { [weak self] token, r in self?.federatedResume(token, r) }
            )
        } catch {
            throw DaemonError(error.message, unreachable: true)
        }
        var lastState = js.linkState
        js.refreshStatus()
        federationWatch = loop.scheduleTimer(after: 500, repeat: 500) { [weak self, weak js] in
            guard let self, let js else { return }
            let now = js.linkState
            if now != lastState {
                self.logger.log(
                    now == .connected ? .notice : .warning,
                    now == .connected
                        ? "federation connected: publishes are taken again; the stream consumer catches up"
                        : "federation lost: publishes are refused (federationUnavailable) until NATS is back",
                    [("state", now.rawValue), ("server", js.connectedServer ?? "-")]
                )
                lastState = now
            }
            js.refreshStatus()
            self.observeFederationSync()
        }
        logger.log(
            .notice,
            "federation ready",
            [
                ("servers", o.servers.joined(separator: ",")), ("stream", o.stream),
                ("replicas", "\(js.streamReplicas)"), ("topics", "\(js.topics.count)"),
                ("resume_records", "\(records.count)"),
            ]
        )
    }

    /// An event the stream consumer brought (this daemon's or another's), in stream order: logged and fanned out.
    private func federatedEvent(_ e: StoredEvent) {
        logger.info(
            "event",
            [
                ("topic", e.topic), ("seq", "\(e.sequence)"), ("event", e.body.event),
                ("status", e.body.contentState.status),
            ]
        )
        fanOut(e)
        // Catching up: live as soon as the consumer reached its target (not at the next watch tick).
        if federationSync?.state == .catchingUp { observeFederationSync() }
    }

    /// Feeds the link, the consumer's progress and the stream's state to ``FederationSync``; when its state
    /// changes, logs it and tells every client that asked for SYNC frames (PROTOCOL.md §5.9).
    func observeFederationSync() {
        guard federationSync != nil else { return }
        let observation: FederationSync.Observation
        if let js = federation {
            observation = FederationSync.Observation(
                link: js.linkState == .connected ? .connected : .lost(js.linkState.rawValue),
                appliedStreamSequence: js.appliedStreamSequence,
                streamReads: js.statusReads,
                streamLastSequence: js.lastStatus?.lastSequence
            )
        } else {
            observation = FederationSync.Observation(
                link: .unjoined,
                appliedStreamSequence: 0,
                streamReads: 0,
                streamLastSequence: nil
            )
        }
        takeFederationSync(observation)
    }

    /// Feeds one observation to ``FederationSync`` (the embedded driver's entry: no NATS needed) and tells the
    /// clients when the state changed.
    func takeFederationSync(_ observation: FederationSync.Observation) {
        guard var sync = federationSync else { return }
        let changed = sync.observe(observation, nowMilliseconds: nowMs())
        federationSync = sync
        guard changed else { return }
        var told = 0
        for s in sessions.values where s.phase == .established && s.wantsSync {
            sendSync(s)
            told += 1
        }
        logger.log(
            sync.state == .degraded ? .warning : .notice,
            "federation sync state",
            [
                ("state", sync.state.rawValue), ("applied_sequence", "\(observation.appliedStreamSequence)"),
                ("clients_told", "\(told)"), ("reason", sync.reason ?? "-"),
            ]
        )
    }

    /// Sends a federated daemon's sync state to `s` when its HELLO asked for SYNC frames: the instant it began,
    /// converted into the client's clock as an EVENT's instants are. Nothing without `--federate` (a single daemon
    /// is always live and says nothing, PROTOCOL.md §5.9).
    func sendSync(_ s: Session) {
        guard s.wantsSync, let sync = federationSync else { return }
        let c = s.convert(ServerInstant(millisecondsSinceEpoch: sync.sinceMilliseconds), now: clock.now())
        let body = SyncBody(
            state: sync.state,
            since: c.client.millisecondsSinceEpoch,
            uncertaintyMs: c.uncertaintyMilliseconds,
            reason: sync.reason
        )
        send(s, .sync, body: body)
    }

    /// A resume record another daemon saved (or removed): the phone may resume here with its token.
    private func federatedResume(_ token: String, _ r: ResumeRecord?) {
        // This daemon's own session (attached or disconnected here) keeps its record in memory.
        if resumable[token] != nil || sessions.values.contains(where: { $0.resumeToken == token }) { return }
        // The record itself is the store's (its mirror answers the HELLO's lookup); the window is the daemon's.
        resumeDeadlines[token] = r == nil ? nil : clock.now().millisecondsSinceEpoch + options.resumeWindowMilliseconds
    }

    /// Commits the simulator's events on a federated daemon: in order, one batch in flight at a time; a refused
    /// batch (NATS lost) is kept and retried every 500 ms with the later ones queued behind it, never dropped or
    /// reordered. Their fan-out comes from the stream consumer. A command's events (`undo`) are refused at once
    /// while the link is down or earlier batches are being retried.
    /// - Returns: The refusal of a command's events, else `nil`.
    func storeFederatedSimulatorEvents(_ items: [StoreItem], undo: DeliverySimulator?) -> StoreError? {
        if let undo, federation?.linkState != .connected || federatedSimulator.failing {
            simulator = undo
            return StoreError(
                "federationUnavailable: the daemon has lost its NATS JetStream cluster or is still storing earlier simulator events"
            )
        }
        let state = try? simulator?.savedState()
        federatedSimulator.pending.append(StoreBatch(events: items, simulatorState: state, nowMilliseconds: nowMs()))
        pumpFederatedSimulator()
        return nil
    }

    private func nowMs() -> Int64 { clock.now().millisecondsSinceEpoch }

    private func pumpFederatedSimulator() {
        guard !federatedSimulator.inFlight, federatedSimulator.retry == nil,
            let batch = federatedSimulator.pending.first
        else { return }
        federatedSimulator.inFlight = true
        store.commit(batch) { [weak self] result in
            guard let self else { return }
            self.federatedSimulator.inFlight = false
            switch result {
            case .success:
                self.federatedSimulator.pending.removeFirst()
                if self.federatedSimulator.failing {
                    self.federatedSimulator.failing = false
                    self.logger.log(.notice, "simulator events stored in the federation again, in order", [])
                }
                self.pumpFederatedSimulator()
            case .failure(let e):
                if !self.federatedSimulator.failing {
                    self.federatedSimulator.failing = true
                    self.logger.log(
                        .warning,
                        "the federation refuses the simulator's events; they are held in order and retried",
                        [("error", e.message), ("held_batches", "\(self.federatedSimulator.pending.count)")]
                    )
                }
                guard !self.isShuttingDown else { return }
                self.federatedSimulator.retry = self.loop.scheduleTimer(after: 500, repeat: 0) { [weak self] in
                    self?.federatedSimulator.retry = nil
                    self?.pumpFederatedSimulator()
                }
            }
        }
    }

    /// Stops following at shutdown.
    func stopFederation() {
        federatedSimulator.retry?.cancel()
        federatedSimulator.retry = nil
        federationWatch?.cancel()
        federationWatch = nil
        federation?.close()
    }

    /// The ERROR a PUBLISH gets when the federation refused its batch, or `nil` for another store error.
    static func federationRefusal(_ e: StoreError) -> WireError? {
        guard e.message.hasPrefix("federationUnavailable") || e.message.hasPrefix("federationConflict") else {
            return nil
        }
        return WireError(
            .federationUnavailable,
            "cannot store the event: \(e.message); publish again once `livebus status` shows the federation connected"
        )
    }

    /// The `federation` field of `status`: `null`, `{"state": "unjoined", "sync": "degraded"}` before a
    /// `--federate-optional` daemon joined, or the link, the sync state phones are told (§5.9), the stream and its
    /// peers, and the consumer's lag; `stale` is `true` while the link is
    /// not connected (the stream's state is then `readAgoMs` milliseconds old, host wall clock).
    func federationStatus() -> JSONValue {
        if store is UnjoinedFederationStore {
            return .object(["state": .string("unjoined"), "sync": .string(DaemonSyncState.degraded.rawValue)])
        }
        guard let js = federation else { return .null }
        var f: [String: JSONValue] = [
            "state": .string(js.linkState.rawValue),
            "sync": federationSync.map { .string($0.state.rawValue) } ?? .null,
            "server": js.connectedServer.map { .string($0) } ?? .null,
            "servers": .array(js.knownServers.map { .string($0) }),
            "stream": .string(js.streamName),
            "appliedSequence": .number(Double(js.appliedStreamSequence)),
        ]
        if let st = js.lastStatus {
            f["messages"] = .number(Double(st.messages))
            f["lastSequence"] = .number(Double(st.lastSequence))
            f["lag"] = .number(
                Double(st.lastSequence > js.appliedStreamSequence ? st.lastSequence - js.appliedStreamSequence : 0)
            )
            f["replicas"] = .number(Double(st.replicas))
            f["cluster"] = st.cluster.map { .string($0) } ?? .null
            f["leader"] = st.leader.map { .string($0) } ?? .null
            f["peers"] = .array(
                st.peers.map {
                    .object([
                        "name": .string($0.name), "current": .bool($0.current), "offline": .bool($0.offline),
                        "lag": .number(Double($0.lag)), "activeMs": .number(Double($0.activeMilliseconds)),
                    ])
                }
            )
            // What JetStream last answered is old while the link is down: the leader and peers may have changed.
            f["stale"] = .bool(js.linkState != .connected)
            f["readAgoMs"] = .number(Double(max(0, Int64(Date().timeIntervalSince1970 * 1000) - st.readAtMilliseconds)))
        }
        return .object(f)
    }
}

/// The simulator's batches waiting for the federation, oldest first (loop thread).
struct FederatedSimulatorQueue {
    var pending: [StoreBatch] = []
    var inFlight = false
    var failing = false
    var retry: (any BusTimer)?
}

/// A weak reference to the daemon handed to another thread, dereferenced only on the loop thread.
private struct DaemonBox: @unchecked Sendable {
    // @unchecked: `value` is read only inside closures the loop runs on its own thread.
    weak var value: Daemon?
    init(_ d: Daemon) { value = d }
}

/// A store opened on another thread, handed to the loop once.
private struct JoinedStore: @unchecked Sendable {
    // @unchecked: made on a worker thread, used only on the loop thread after the handoff (no other reference).
    let store: JetStreamStore
    init(_ s: JetStreamStore) { store = s }
}

/// The store of a `--federate-optional` daemon before it joined: every event is refused with
/// `federationUnavailable` (it would get a sequence the federation does not know); resume records stay in memory.
final class UnjoinedFederationStore: EventStore {
    private let memory: MemoryEventStore
    init(logCapacity: Int) { memory = MemoryEventStore(logCapacity: logCapacity) }
    var isDurable: Bool { false }
    func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        guard batch.events.isEmpty else {
            completion(
                .failure(
                    StoreError(
                        "federationUnavailable: this daemon has not joined its NATS JetStream cluster yet (--federate-optional); nothing was stored"
                    )
                )
            )
            return
        }
        memory.commit(batch, completion: completion)
    }
    func latest(topic: String) -> StoredEvent? { nil }
    func events(topic: String, from: UInt64, limit: Int) -> [StoredEvent]? { from <= 1 ? [] : nil }
    var topics: [String] { [] }
    func resumeRecords() -> [ResumeRecord] { [] }
    func meta(_ key: String) -> String? { nil }
    func simulatorState() -> Data? { nil }
}
