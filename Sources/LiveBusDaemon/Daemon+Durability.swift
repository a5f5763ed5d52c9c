import Foundation
import LiveBusCore
import LiveBusSimulator
import LiveBusWire

/// The simulator's events on a store that refuses writes (a full disk): held in order, retried with backoff on the
/// loop, reported as `degraded` in the log, `status` and `doctor` until the store takes them.
/// Source: issue 14 "Data loss on a full disk"; Protocol/PROTOCOL.md §5.7.
extension Daemon {
    /// Stores the simulator's events through ``HeldEvents`` and fans out what was stored.
    /// - Parameters:
    ///   - items: The events, oldest first.
    ///   - undo: For a command: the simulator before it; on a refusal it is put back and the error returned.
    /// - Returns: The refusal of a command's events, else `nil`.
    func storeSimulatorEvents(_ items: [HeldEvents.Item], undo: DeliverySimulator?) -> StoreError? {
        if store.announcesCommittedEvents { return storeFederatedSimulatorEvents(items, undo: undo) }
        if held.isDegraded && undo == nil {
            // Queued behind the held events without trying the store; the retry saves the state then current.
            _ = held.publish(items, simulatorState: nil, store: store, nowMs: nowMs())
            return nil
        }
        let state: Data?
        do {
            state = store.isDurable ? try simulator?.savedState() : nil
        } catch {
            // Never store events without the state that produced them: a restart would emit them again.
            return refused(items, StoreError("cannot encode the simulator state: \(error)"), undo: undo)
        }
        let now = clock.now().millisecondsSinceEpoch
        if let undo {
            let wasDegraded = held.isDegraded
            switch held.storeNow(items, simulatorState: state, store: store, nowMs: now) {
            case .success(let stored):
                announce(stored)
                return nil
            case .failure(let e):
                simulator = undo
                if !wasDegraded { degradationBegan(e) }
                armHeldRetry()
                return e
            }
        }
        switch held.publish(items, simulatorState: state, store: store, nowMs: now) {
        case .stored(let stored, _):
            announce(stored)
        case .held(let e, let began):
            if began { degradationBegan(e) }
            armHeldRetry()
        }
        return nil
    }

    /// A failure before the store was reached: a command is refused (simulator put back), other events are held.
    private func refused(_ items: [HeldEvents.Item], _ e: StoreError, undo: DeliverySimulator?) -> StoreError? {
        logger.log(.error, "cannot store events", [("count", "\(items.count)"), ("error", e.message)])
        if let undo {
            simulator = undo
            return e
        }
        if held.hold(items, refusal: e, nowMs: nowMs()) { degradationBegan(e) }
        armHeldRetry()
        return nil
    }

    private func nowMs() -> Int64 { clock.now().millisecondsSinceEpoch }

    /// Logs and fans out stored events, oldest first.
    private func announce(_ stored: [StoredEvent]) {
        for e in stored {
            logger.info(
                "event",
                [
                    ("topic", e.topic), ("seq", "\(e.sequence)"), ("event", e.body.event),
                    ("status", e.body.contentState.status),
                ]
            )
            fanOut(e)
        }
    }

    private func degradationBegan(_ e: StoreError) {
        logger.log(
            .warning,
            "degraded: the store refuses writes; simulator events are held in memory and retried",
            [
                ("reason", StoreCondition(e).words), ("error", e.message),
                ("data_dir", options.dataDirectory ?? "-"), ("held", "\(held.count)"),
            ]
        )
    }

    private func degradationEnded(_ r: HeldEvents.Recovery) {
        logger.log(
            .warning,
            "degraded period over: the store takes writes again; held events stored in order",
            [
                ("held", "\(r.heldEvents)"), ("held_ms", "\(r.heldMilliseconds)"),
                ("failed_attempts", "\(r.failedAttempts)"),
            ]
        )
    }

    /// Stages a client PUBLISH in this loop turn's batch, behind the held simulator events (they came first: they
    /// are retried now). Its ACK and fan-out follow the batch's commit (``commitTurn()``).
    /// - Parameters:
    ///   - topic: The topic (validated).
    ///   - body: The event.
    ///   - encoded: `body` as the client sent it when that is its canonical encoding (stored as is), else `nil`.
    ///   - s: The publishing session.
    ///   - id: The PUBLISH frame's id, echoed in the ACK.
    func stageClientEvent(topic: String, body: EventBody, encoded: [UInt8]? = nil, from s: Session, id: UInt64) {
        if held.isDegraded && turn.eventCount == 0 { retryHeldEvents() }
        turn.append((topic, body), encoded: encoded, waiter: PublishWaiter(session: s, id: id))
        s.pendingAcks += 1
    }

    /// Commits everything this loop turn appended as one batch (group commit: one transaction, one fsync under
    /// `--sync full`); on the commit, ACKs the PUBLISHes and fans the events out. Runs at the end of every loop
    /// turn, and before a session with pending ACKs says BYE or gets an ERROR. A turn that staged only deferrable
    /// resume records (a SUBSCRIBE's, ``saveResume(_:deferrable:)``) commits nothing: they go with the next batch,
    /// at the latest ``deferredRecordMilliseconds`` later (`force`: now, as at shutdown).
    /// - Parameter force: Commit the deferrable records too.
    func commitTurn(force: Bool = false) {
        guard !turn.isEmpty else { return }
        guard force || isShuttingDown || turn.mustCommit else {
            armDeferredRecordCommit()
            return
        }
        deferredRecordTimer?.cancel()
        deferredRecordTimer = nil
        let (batch, waiters) = turn.take(nowMilliseconds: nowMs())
        let welcomes = welcomesInTurn
        welcomesInTurn.removeAll(keepingCapacity: true)
        // The batch's items, for the topics of a refusal (a reference to the array, not a copy).
        let items = batch.events
        var completed = false
        store.commit(batch) { [weak self] result in
            guard let self else { return }
            // The new sessions' WELCOMEs first (their records are in the batch), then the ACKs and the fan-out.
            // A refused batch sends them too: the session works, and its token is as durable as before the change
            // (a daemon restarted before a later record is stored refuses it with resumeRejected).
            if case .failure(let e) = result, !welcomes.isEmpty {
                logger.log(.warning, "WELCOME sent before its resume record was stored", [("error", e.message)])
            }
            completed = true
            for s in welcomes { releaseWelcome(s) }
            batchCommitted(result, waiters: waiters, items: items)
        }
        // A store that answers at once (SQLite) released the WELCOMEs already: no hold timer (one timer per
        // connect otherwise, armed, kept a second and fired for nothing).
        guard !completed else { return }
        if !welcomes.isEmpty {
            // A store that does not answer (a frozen NATS node) does not keep phones from attaching.
            loop.scheduleTimer(after: Self.welcomeHoldMilliseconds, repeat: 0) { [weak self] in
                guard let self else { return }
                let late = welcomes.filter { $0.heldWelcome != nil }
                guard !late.isEmpty else { return }
                logger.log(
                    .warning,
                    "WELCOME sent before its resume record was stored",
                    [
                        ("error", "the store has not answered in \(Self.welcomeHoldMilliseconds) ms"),
                        ("sessions", "\(late.count)"),
                    ]
                )
                for s in late { releaseWelcome(s) }
            }
        }
    }

    /// The longest a SUBSCRIBE's resume record waits for a batch to go with, milliseconds (monotonic): a connect
    /// (HELLO, then SUBSCRIBE) costs one transaction, not two. PROTOCOL.md §5.3.
    static let deferredRecordMilliseconds: UInt64 = 100

    /// Commits the deferrable resume records ``deferredRecordMilliseconds`` from now unless a batch takes them first.
    private func armDeferredRecordCommit() {
        guard deferredRecordTimer == nil, !isShuttingDown else { return }
        deferredRecordTimer = loop.scheduleTimer(after: Self.deferredRecordMilliseconds, repeat: 0) {
            [unowned self] in
            self.deferredRecordTimer = nil
            self.commitTurn(force: true)
        }
    }

    /// The longest a new session's WELCOME waits for its resume record's commit, milliseconds (monotonic); past it
    /// the WELCOME is written anyway (its token is then as durable as the record turns out to be).
    static let welcomeHoldMilliseconds: UInt64 = 1_000

    /// Events fanned out between two flushes of every connection's output while a large batch is fanned out
    /// (flush as you go: the first subscribers' frames leave before the last event is encoded).
    static let fanOutFlushInterval = 32

    /// The input "batch committed": ACK and fan out what was stored, or refuse every PUBLISH of the batch.
    /// - Parameters:
    ///   - result: The store's answer.
    ///   - waiters: The batch's PUBLISHes, `waiters[i]` for `items[i]`.
    ///   - items: The batch's events (their topics go in a refusal's ERROR).
    private func batchCommitted(
        _ result: Result<[StoredEvent], StoreError>,
        waiters: [PublishWaiter],
        items: [StoreItem]
    ) {
        for w in waiters { w.session.pendingAcks -= 1 }
        switch result {
        case .success(let stored):
            if !stored.isEmpty, let r = held.noteStored(nowMs: nowMs()) {
                degradationEnded(r)
                heldRetryTimer?.cancel()
                heldRetryTimer = nil
            }
            // A federated store fans out from its stream consumer, in stream order (Daemon+Federation.swift).
            let fansOut = !store.announcesCommittedEvents
            // Flushed as it goes only once the fan-out wrote to a subscriber: a batch no one is subscribed to
            // leaves in the turn's one flush (one write of its ACKs per publisher, not one per 32 events).
            var delivered = false
            for (i, e) in stored.enumerated() {
                let w = waiters[i]
                if w.session.phase == .established { sendAck(w.session, id: w.id, for: e) }
                if fansOut {
                    let before = fanOutDeliveriesTotal
                    fanOut(e)
                    if fanOutDeliveriesTotal != before { delivered = true }
                }
                if delivered && (i + 1) % Self.fanOutFlushInterval == 0 {
                    loop.flushPendingWrites()
                    delivered = false
                }
            }
        case .failure(let e):
            guard !waiters.isEmpty else {
                logger.log(.error, "cannot store resume records", [("error", e.message)])
                return
            }
            // Refused by a federation that lost NATS: the daemon is not degraded (nothing is held), it reconnects.
            if let refusal = Daemon.federationRefusal(e) {
                for w in waiters where w.session.phase != .closed { fail(w.session, refusal) }
                return
            }
            if held.noteRefused(e, nowMs: nowMs()) { degradationBegan(e) }
            armHeldRetry()
            // Not the publisher's fault, and retryable: each PUBLISH is refused alone (non-fatal, PROTOCOL.md §5.7),
            // its connection kept.
            let c = StoreCondition(e)
            let fix =
                c == .storeError
                ? "see the daemon's log"
                : "free space on the filesystem of \(options.dataDirectory ?? "the data directory")"
            let refusal = WireError(
                .storeUnavailable,
                "cannot store the event: the daemon's store refuses writes: \(c.words) (\(e.message)); nothing was "
                    + "stored and no sequence taken. The daemon is degraded until the store takes writes again "
                    + "(`livebus status`): \(fix), then publish it again"
            )
            for (i, w) in waiters.enumerated() where w.session.phase == .established {
                let topic = i < items.count ? items[i].topic : ""
                send(w.session, .error, sequence: w.id, topic: topic, body: ErrorBody(refusal, fatal: false))
            }
        }
    }

    /// The ACK of a stored PUBLISH, written from its fixed layout with the stored event's topic bytes
    /// (``Frame/appendAck(id:topic:sequence:into:)``: no body array, no encoder).
    private func sendAck(_ s: Session, id: UInt64, for e: StoredEvent) {
        do {
            try output(s) { buf throws(WireError) in
                e.template.shared.withUnsafeBytes { raw in
                    let topic = UnsafeRawBufferPointer(rebasing: raw[..<e.template.topicLength])
                    Frame.appendAck(id: id, topic: topic, sequence: e.sequence, into: &buf)
                }
            }
        } catch {
            logger.log(.error, "cannot encode frame", [("type", "ACK"), ("error", "\(error)")])
        }
    }

    private func armHeldRetry() {
        guard heldRetryTimer == nil, held.isDegraded, !isShuttingDown else { return }
        heldRetryTimer = loop.scheduleTimer(after: UInt64(held.retryDelayMilliseconds), repeat: 0) { [unowned self] in
            self.heldRetryTimer = nil
            self.retryHeldEvents()
        }
    }

    /// Tries to store the held events now (the retry timer, and a client PUBLISH, which must not overtake them).
    func retryHeldEvents() {
        guard held.isDegraded, !isShuttingDown else { return }
        let state: Data?
        do {
            state = store.isDurable ? try simulator?.savedState() : nil
        } catch {
            armHeldRetry()
            return
        }
        // Nothing to write (no simulator, nothing held): the next client PUBLISH tells.
        guard held.canProbe(simulatorState: state) else { return }
        switch held.retry(simulatorState: state, store: store, nowMs: nowMs()) {
        case .stored(let stored, let recovery):
            degradationEnded(
                recovery ?? HeldEvents.Recovery(heldEvents: stored.count, heldMilliseconds: 0, failedAttempts: 0)
            )
            announce(stored)
            heldRetryTimer?.cancel()
            heldRetryTimer = nil
            rearmSimulator()
        case .held:
            armHeldRetry()
        }
    }

    /// Stops retrying at shutdown; says what the held events become.
    func stopRetryingHeldEvents() {
        heldRetryTimer?.cancel()
        heldRetryTimer = nil
        guard held.isDegraded else { return }
        logger.log(
            .warning,
            "shutting down while degraded: held events were not stored; the next start replays them from the simulator's last stored state",
            [("held", "\(held.count)")]
        )
    }

    /// The `degraded` field of `status`: `null`, or why the store refuses writes and what is held.
    func degradedStatus() -> JSONValue {
        guard let d = held.degradation else { return .null }
        let now = nowMs()
        return .object([
            "condition": .string(d.condition.rawValue),
            "reason": .string(d.condition.words),
            "error": .string(d.error.message),
            "heldEvents": .number(Double(held.count)),
            "held": heldByTopic(),
            "sinceMs": .number(Double(d.sinceMs)),
            "forMs": .number(Double(max(0, now - d.sinceMs))),
            "failedAttempts": .number(Double(d.failedAttempts)),
            "retryEveryMs": .number(Double(held.retryDelayMilliseconds)),
            "simulatorPaused": .bool(held.isFull),
            "dataDir": options.dataDirectory.map { .string($0) } ?? .null,
            "fix": .string(Daemon.degradedFix(d.condition, dataDir: options.dataDirectory)),
        ])
    }

    /// The held events per topic, in the order the topics first appear: `[{"topic", "events", "status"}]`, `status`
    /// being the content state of its last held event: where the simulator is, ahead of what phones were told
    /// (`order.list` and the orders of `status` say that).
    func heldByTopic() -> JSONValue {
        var order: [String] = []
        var count: [String: Int] = [:]
        var last: [String: String] = [:]
        for item in held.items {
            if count[item.topic] == nil { order.append(item.topic) }
            count[item.topic, default: 0] += 1
            last[item.topic] = item.body.contentState.status
        }
        return .array(
            order.map { t in
                .object([
                    "topic": .string(t), "events": .number(Double(count[t] ?? 0)), "status": .string(last[t] ?? ""),
                ])
            }
        )
    }

    /// What to do about a refusing store.
    static func degradedFix(_ c: StoreCondition, dataDir: String?) -> String {
        let place = dataDir.map { "the filesystem of \($0)" } ?? "the data directory's filesystem"
        switch c {
        case .full, .ioError:
            return
                "free space on \(place) (`df -h \(dataDir ?? ".")`); the daemon retries on its own and stores the held events in order"
        case .storeError:
            return "see the daemon's log for the store's error; the daemon retries on its own"
        }
    }

    /// The refusal of a command while degraded (nothing is changed), or `nil` when the store takes writes.
    func degradedRefusal() -> (message: String, recovery: String)? {
        guard let d = held.degradation else { return nil }
        return (
            "the daemon is degraded: \(d.condition.words) (\(d.error.message)); \(held.count) simulator events are held",
            Daemon.degradedFix(d.condition, dataDir: options.dataDirectory) + ", then retry (`livebus status`)"
        )
    }
}

extension Daemon {
    /// Refuses a command that changes the simulator while the store refuses writes (RESULT `storeUnavailable`):
    /// its events could not be stored, and an answer must not promise what a kill -9 would lose.
    /// - Returns: `true` when the command was refused.
    func refuseWhileDegraded(_ s: Session, id: UInt64) -> Bool {
        guard let (message, recovery) = degradedRefusal() else { return false }
        replyError(s, id: id, code: "storeUnavailable", message, recovery: recovery)
        return true
    }

    /// Answers a command whose events the store refused just now (the simulator was put back: nothing changed).
    func replyStoreRefusal(_ s: Session, id: UInt64, _ e: StoreError) {
        let c = StoreCondition(e)
        replyError(
            s,
            id: id,
            code: "storeUnavailable",
            "nothing changed: \(c.words) (\(e.message))",
            recovery: Daemon.degradedFix(c, dataDir: options.dataDirectory) + ", then retry"
        )
    }
}

/// A new session's WELCOME waiting for the commit of the batch that holds its resume record, so that the token it
/// gives is one every later daemon (this one after a kill -9, or another of the federation) knows: the handshake's
/// outcome (its ``SessionHandshake/Established/welcome``, whose `serverTime` is set when it is written) and the
/// HELLO. Source: PROTOCOL.md §4.1, §5.7 "Group commit".
struct HeldWelcome {
    /// What the handshake established.
    let established: SessionHandshake.Established
    /// The HELLO.
    let hello: HelloBody
}

/// A PUBLISH waiting for its batch's commit: who gets the ACK, with which frame id.
struct PublishWaiter {
    /// The publishing session.
    let session: Session
    /// The PUBLISH frame's id.
    let id: UInt64
}
