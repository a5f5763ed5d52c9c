import Foundation
import LiveBusCore
import LiveBusLoop
import LiveBusWire

/// Why the daemon stopped reading a session (`uv_read_stop`); it reads again when no reason is left.
enum ReadPause: Hashable {
    /// The session used its frames for this loop turn; the rest wait for the next turn.
    case backlog
    /// The session's token bucket is empty (frames per second).
    case rate
    /// Too many bytes of replies are queued to it.
    case replies
    /// A new session's WELCOME waits for the commit of its resume record (``HeldWelcome``): what the client sent
    /// after its HELLO is read once the WELCOME is written.
    case welcome
}

/// A session's state for the limits (loop-bound).
final class SessionLimitState {
    var bucket = TokenBucket(ratePerSecond: 1, burst: 1, nowMs: 0)
    var acceptedMs: Int64 = 0
    var lastReceivedMs: Int64 = 0
    var keepaliveSentMs: Int64?
    var pauses: Set<ReadPause> = []
    var repliesPausedSinceMs: Int64?
    var pumpScheduled = false
    var rateTimer: (any BusTimer)?
    // Read by every delivery of a fan-out (the live bytes queued, whether the topic is being caught up): see
    // Session's hot properties for why release builds skip the run-time exclusivity check (pure values, no access
    // overlaps another; debug builds keep the check).
    #if DEBUG
        var ledger = OutboxLedger()
        /// The session's catch-ups (LiveBusCore's state machine), paced by its drain.
        var catchUp = CatchUpQueue()
    #else
        @exclusivity(unchecked) var ledger = OutboxLedger()
        /// The session's catch-ups (LiveBusCore's state machine), paced by its drain.
        @exclusivity(unchecked) var catchUp = CatchUpQueue()
    #endif
    var catchUpScheduled = false

    var hasCatchUp: Bool { catchUp.hasWork }
    /// Catch-ups queued and not finished.
    var pendingCatchUps: Int { catchUp.count }
}

/// The daemon's state for the limits (loop-bound).
final class DaemonLimitState {
    var sweepTimer: (any BusTimer)?
    var connectionCap = Int.max
    var descriptorLimit = 0
    var refusedSinceLog = 0
    var refusedTotal = 0
    var lastRefusalLogMs: Int64?
}

/// Floods and resource limits: per-session frame rate, subscriptions and queued replies; a bounded amount of work
/// per session per loop turn; handshake and idle timeouts; the connection cap; catch-up paced by the phone's drain.
/// Source: issue 14 "Floods and resource limits"; PROTOCOL.md §5.6.
extension Daemon {
    var limits: SessionLimits { options.limits }

    /// The soft `RLIMIT_NOFILE` of this process (descriptors it may hold open).
    public static func descriptorLimit() -> Int {
        var r = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r) == 0 else { return 1024 }
        return Int(min(UInt64(r.rlim_cur), UInt64(Int32.max)))  // RLIM_INFINITY is all ones: Int32.max
    }

    /// Works out the connection cap and starts the liveness sweep (handshake and idle timeouts, grace periods).
    /// - Throws: ``DaemonError`` when `--max-connections` is above what the descriptors allow.
    func startLimits() throws(DaemonError) {
        // An embedded daemon holds no descriptors: only --max-connections caps it.
        let fds = uvLoop == nil ? Int(Int32.max) : Daemon.descriptorLimit()
        limitState.descriptorLimit = fds
        limitState.connectionCap = try limits.effectiveConnectionCap(descriptorLimit: fds)
        let shortest = min(
            limits.handshakeTimeoutMilliseconds,
            limits.idleTimeoutMilliseconds / 2,
            limits.graceMilliseconds
        )
        let every = UInt64(min(1000, max(10, shortest / 4)))
        limitState.sweepTimer = loop.scheduleTimer(after: every, repeat: every) { [unowned self] in self.sweep() }
        limitState.sweepTimer?.unref()
    }

    func stopLimits() {
        limitState.sweepTimer?.cancel()
        limitState.sweepTimer = nil
    }

    /// Gives the listener the frame a connection refused for lack of descriptors gets, and logs such refusals.
    func configure(_ l: PipeListener) {
        l.refusal = refusalFrame("the daemon is out of file descriptors")
        l.onAcceptError = { [unowned self] error, refused in
            self.limitState.refusedTotal += refused
            self.logger.log(
                .error,
                "cannot accept a connection",
                [
                    ("error", "\(error)"), ("refused", "\(refused)"), ("sessions", "\(self.sessions.count)"),
                    ("descriptor_limit", "\(self.limitState.descriptorLimit)"),
                ]
            )
        }
    }

    private func refusalFrame(_ why: String) -> [UInt8] {
        let body = ErrorBody(
            WireError(.tooManyConnections, "\(why); try again later (the daemon's connections stay served)"),
            fatal: true
        )
        return (try? Frame(type: .error, body: WireJSON.encode(body)).encoded()) ?? []
    }

    /// Refuses `c` with ERROR `tooManyConnections` when the daemon serves its cap of connections.
    /// - Returns: whether the connection may become a session.
    func admit(_ c: any BusConnection) -> Bool {
        guard sessions.count >= limitState.connectionCap else { return true }
        c.write(
            refusalFrame(
                "the daemon serves its maximum of \(limitState.connectionCap) connections (--max-connections)"
            )
        )
        c.closeAfterFlush(timeoutMilliseconds: 500)
        limitState.refusedTotal += 1
        limitState.refusedSinceLog += 1
        let now = monotonicMs
        if limitState.lastRefusalLogMs.map({ now - $0 >= 1000 }) ?? true {
            logger.warning(
                "connection refused: connection cap reached",
                [
                    ("code", WireError.Code.tooManyConnections.name), ("cap", "\(limitState.connectionCap)"),
                    ("sessions", "\(sessions.count)"), ("refused", "\(limitState.refusedSinceLog)"),
                    ("refused_total", "\(limitState.refusedTotal)"),
                    ("descriptor_limit", "\(limitState.descriptorLimit)"),
                ]
            )
            limitState.lastRefusalLogMs = now
            limitState.refusedSinceLog = 0
        }
        return false
    }

    /// Starts a new session's limits at accept.
    func beginLimits(_ s: Session) {
        let now = monotonicMs
        s.limits.bucket = TokenBucket(ratePerSecond: limits.framesPerSecond, burst: limits.frameBurst, nowMs: now)
        s.limits.acceptedMs = now
        s.limits.lastReceivedMs = now
    }

    func endLimits(_ s: Session) {
        s.limits.rateTimer?.cancel()
        s.limits.rateTimer = nil
        s.limits.catchUp.removeAll()
    }

    /// Notes that bytes arrived (idle timeout).
    func noteReceived(_ s: Session) { s.limits.lastReceivedMs = monotonicMs }

    // MARK: - Reading, paced

    private func pause(_ s: Session, _ reason: ReadPause) {
        s.limits.pauses.insert(reason)
        s.connection.stopReading()
    }

    func unpause(_ s: Session, _ reason: ReadPause) {
        guard s.limits.pauses.remove(reason) != nil, s.limits.pauses.isEmpty, s.phase != .closed else { return }
        do {
            try s.connection.resumeReading()
        } catch {
            closeSession(s, reason: "read failed: \(error)", flush: false)
        }
    }

    /// Handles the frames waiting in the session's decoder: at most ``SessionLimits/framesPerTurn`` (and
    /// ``SessionLimits/turnBudgetMicroseconds``) now, each taking
    /// a token of the session's bucket; the rest in a later turn, in order. Reading stops while frames wait, while
    /// the bucket is empty, and while too many replies are queued.
    func pump(_ s: Session) {
        var budget = limits.framesPerTurn(for: s.phase == .awaitingHello ? .session : s.role)
        var handled = 0
        var checkClock = false
        let now = monotonicMs
        // The CPU clock (CLOCK_THREAD_CPUTIME_ID: a system call, not the vDSO) is read from the second frame on, so
        // a read of one frame (a HELLO, a PONG: most reads of a phone) reads it never; the time budget then starts
        // after the first frame (at most one frame more than 1 ms). strace, sessions workload: 11 reads per connect.
        var started: UInt64 = 0
        let turnNs = UInt64(max(0, limits.turnBudgetMicroseconds)) &* 1000
        while s.phase != .closed {
            if s.heldWelcome != nil {
                // Nothing past the HELLO is handled before its WELCOME is written; reading stops only when the
                // client sent more (most clients wait for WELCOME: no read_stop/read_start per connect).
                if s.decoder.bufferedByteCount > 0 { pause(s, .welcome) }
                return
            }
            if answersOverLimit(s) {
                if s.limits.repliesPausedSinceMs == nil {
                    s.limits.repliesPausedSinceMs = now
                    logger.log(
                        .notice,
                        "session slowed: replies queued",
                        [
                            ("session.id", s.id), ("session.name", s.name),
                            ("reply_bytes", "\(replyBytesOutstanding(s))"),
                            ("limit", "\(limits.maximumReplyBytes)"),
                        ]
                    )
                }
                pause(s, .replies)
                return
            }
            guard s.decoder.bufferedByteCount > 0 else {
                // A phone's or admin's reads are rare and small: the decoder gives its buffer back until the next
                // (massif, 1,000 idle sessions: 357 bytes each). A publisher's stream keeps it.
                if s.role != .publisher { s.decoder.releaseBufferIfEmpty() }
                unpause(s, .backlog)
                return
            }
            // The thread's CPU clock is a system call (`CLOCK_THREAD_CPUTIME_ID` has no vDSO path): it is read after
            // every ``cpuClockInterval`` frames, and after any frame but a PUBLISH or an ACK (whose handling is
            // bounded and small: a PUBLISH is decoded and staged; its store work is the turn's commit).
            if handled == 1 && started == 0 { started = loop.cpuNanoseconds() }
            if budget == 0
                || (handled > 1 && (checkClock || handled % Self.cpuClockInterval == 0)
                    && loop.cpuNanoseconds() &- started > turnNs)
            {
                pause(s, .backlog)
                schedulePump(s)
                return
            }
            if s.limits.bucket.available(nowMs: now) < 1 {
                throttle(s, now: now)
                return
            }
            let frame: Frame?
            do {
                frame = try s.decoder.next()
            } catch {
                fail(s, error)
                return
            }
            guard let frame else {
                unpause(s, .backlog)
                return
            }
            _ = s.limits.bucket.take(nowMs: now)
            handled += 1
            // An ACK is O(1) bookkeeping: it uses no frame of the turn's budget (the CPU-time budget and the rate
            // bucket still bound it). Counted, a phone ACKing a burst of events waited 64 frames a turn while its
            // own writes, and so its reads, were blocked behind ours (e2e-slow-consumer's late stale marks).
            if frame.type != .ack { budget -= 1 }
            checkClock = frame.type != .publish && frame.type != .ack
            let before = s.connection.bytesQueuedTotal
            do {
                try handle(frame, from: s)
            } catch {
                fail(s, error)
                return
            }
            s.limits.ledger.record(.reply, from: before, to: s.connection.bytesQueuedTotal)
        }
    }

    /// Frames handled between two readings of the thread's CPU clock in ``pump(_:)`` when they are all PUBLISHes
    /// and ACKs: a reading per frame was one system call per PUBLISH.
    static let cpuClockInterval = 16

    func schedulePump(_ s: Session) {
        guard !s.limits.pumpScheduled else { return }
        s.limits.pumpScheduled = true
        loop.runSoon { [weak self, weak s] in
            guard let self, let s else { return }
            s.limits.pumpScheduled = false
            guard s.phase != .closed else { return }
            self.pump(s)
        }
    }

    /// The bucket is empty: stop reading until it holds a turn's frames again, or cut a session that stayed
    /// throttled past the grace period.
    private func throttle(_ s: Session, now: Int64) {
        let wasThrottled = s.limits.bucket.throttledSinceMs != nil
        _ = s.limits.bucket.take(nowMs: now)  // records the start of throttling
        if !wasThrottled {
            logger.log(
                .notice,
                "session slowed: frame rate",
                [
                    ("session.id", s.id), ("session.name", s.name),
                    ("frames_per_second", "\(limits.framesPerSecond)"),
                ]
            )
        }
        if s.limits.bucket.isOverGrace(nowMs: now, graceMs: limits.graceMilliseconds) {
            cut(
                s,
                WireError(
                    .messageRateTooHigh,
                    "more than \(limits.framesPerSecond) frames per second for over \(limits.graceMilliseconds) ms (--max-frames-per-second); send less often"
                ),
                limit: "frame rate"
            )
            return
        }
        pause(s, .rate)
        s.limits.rateTimer?.cancel()
        let wait = s.limits.bucket.millisecondsUntil(tokens: limits.framesPerTurn, nowMs: now)
        s.limits.rateTimer = loop.scheduleTimer(after: UInt64(max(1, wait)), repeat: 0) { [weak self, weak s] in
            guard let self, let s, s.phase != .closed else { return }
            s.limits.rateTimer = nil
            s.limits.pauses.remove(.rate)
            self.pump(s)
            if s.limits.pauses.isEmpty, s.phase != .closed { try? s.connection.resumeReading() }
        }
    }

    /// Catch-ups one session may have queued (each SUBSCRIBE adds one, each topic one, repeats join): past it the
    /// daemon stops reading the session, as for queued replies.
    static let maximumPendingCatchUps = 100_000

    /// Whether the session's queued answers (reply bytes, or catch-ups) are past their limit.
    func answersOverLimit(_ s: Session) -> Bool {
        replyBytesOutstanding(s) > limits.maximumReplyBytes || s.limits.pendingCatchUps > Daemon.maximumPendingCatchUps
    }

    func replyBytesOutstanding(_ s: Session) -> Int {
        s.limits.ledger.outstanding(.reply, sent: s.connection.bytesSentTotal)
    }

    func catchUpBytesOutstanding(_ s: Session) -> Int {
        s.limits.ledger.outstanding(.catchUp, sent: s.connection.bytesSentTotal)
    }

    /// Bytes of live events queued to `s`: what the coalescing and slow-consumer limits count.
    func liveBytesOutstanding(_ s: Session) -> Int {
        // Nothing but live events queued (the fan-out's common case): no ledger walk, one connection read.
        guard s.limits.ledger.mayHaveOutstanding else { return s.connection.outstandingBytes }
        return max(0, s.connection.outstandingBytes - replyBytesOutstanding(s) - catchUpBytesOutstanding(s))
    }

    /// Sends a fatal ERROR with the limit's code, logs it and closes the session; no other session is touched.
    func cut(_ s: Session, _ e: WireError, limit: String) {
        logger.warning(
            "session cut by a limit",
            [
                ("session.id", s.id), ("session.name", s.name), ("limit", limit), ("code", e.code.name),
                ("message", e.message),
            ]
        )
        send(s, .error, body: ErrorBody(e, fatal: true))
        closeSession(s, reason: "limit \(limit): \(e.code.name)", flush: true)
    }

    /// Whether a drained queue lets the limits go on: reading paused for queued replies, or a catch-up waiting.
    func needsDrainWork(_ s: Session) -> Bool { s.limits.hasCatchUp || s.limits.pauses.contains(.replies) }

    /// After the session's queue drained: resume reading when replies drained, then go on with its catch-up.
    func afterDrain(_ s: Session) {
        if s.limits.pauses.contains(.replies), replyBytesOutstanding(s) <= limits.maximumReplyBytes / 2,
            s.limits.pendingCatchUps <= Daemon.maximumPendingCatchUps / 2
        {
            s.limits.repliesPausedSinceMs = nil
            s.limits.pauses.remove(.replies)
            pump(s)
            if s.limits.pauses.isEmpty, s.phase != .closed { try? s.connection.resumeReading() }
        }
        if s.limits.hasCatchUp { scheduleCatchUp(s) }
    }

    // MARK: - Liveness

    /// Cuts connections past the handshake or idle timeout and sessions slowed past the grace period; sends
    /// keepalive PINGs to quiet sessions.
    func sweep() {
        let now = monotonicMs
        for s in Array(sessions.values) where s.phase != .closed {
            if let since = s.limits.repliesPausedSinceMs, now - since > limits.graceMilliseconds {
                cut(
                    s,
                    WireError(
                        .replyQueueFull,
                        "\(replyBytesOutstanding(s)) bytes of replies queued for over \(limits.graceMilliseconds) ms (limit \(limits.maximumReplyBytes), --max-reply-bytes); read what the daemon sends"
                    ),
                    limit: "queued replies"
                )
                continue
            }
            if s.limits.pauses.contains(.rate),
                s.limits.bucket.isOverGrace(nowMs: now, graceMs: limits.graceMilliseconds)
            {
                pump(s)  // cuts it, or reads on
                continue
            }
            if !s.limits.pauses.isEmpty { continue }  // the daemon is not reading it: not the session's silence
            let verdict = LivenessVerdict.of(
                established: s.phase == .established,
                acceptedMs: s.limits.acceptedMs,
                lastReceivedMs: s.limits.lastReceivedMs,
                keepaliveSentMs: s.limits.keepaliveSentMs,
                nowMs: now,
                limits: limits
            )
            switch verdict {
            case .ok:
                break
            case .sendKeepalive:
                s.limits.keepaliveSentMs = now
                send(s, .ping, body: PingBody(t1: clock.now().millisecondsSinceEpoch))
            case .handshakeTimedOut:
                // The session's handshake (LiveBusCore) decides and words it; this sweep is its timer.
                for case .refuse(let e) in s.handshake.handle(.timerFired(monotonicMilliseconds: now)) {
                    cut(s, e, limit: "handshake timeout")
                }
            case .idleTimedOut:
                cut(
                    s,
                    WireError(
                        .idleTimeout,
                        "nothing received for \(now - s.limits.lastReceivedMs) ms (--idle-timeout \(limits.idleTimeoutMilliseconds) ms); answer PINGs to stay connected, then resume with your token"
                    ),
                    limit: "idle timeout"
                )
            }
        }
    }

    // MARK: - Catch-up, paced by the phone's drain

    /// Queues the catch-up of `topic` after sequence `after` (or, with `topic == nil`, the UPTODATE ending a
    /// SUBSCRIBE); it is written a window at a time (``SessionLimits/catchUpWindowBytes``) as the phone drains.
    func enqueueCatchUp(_ s: Session, topic: String?, after: UInt64) {
        // A second catch-up of a topic whose first has not started (a repeated SUBSCRIBE or RESEND) joins it, from
        // the lower sequence, so repeats cannot grow the queue.
        s.limits.catchUp.enqueue(topic: topic, after: after)
        scheduleCatchUp(s)
    }

    private func scheduleCatchUp(_ s: Session) {
        guard !s.limits.catchUpScheduled else { return }
        s.limits.catchUpScheduled = true
        loop.runSoon { [weak self, weak s] in
            guard let self, let s else { return }
            s.limits.catchUpScheduled = false
            self.pumpCatchUp(s)
        }
    }

    /// Whether live events of `topic` wait for a catch-up of it (which will send them, in order).
    func isCatchingUp(_ s: Session, topic: String) -> Bool { s.limits.catchUp.isCatchingUp(topic: topic) }

    private func finishJob(_ s: Session) {
        // A write above may have closed the session (a toxic, a slow consumer): its queue is gone with it.
        s.limits.catchUp.finishCurrent()
    }

    /// Writes catch-up until the session's queue holds a window's worth; the rest waits for its drain.
    func pumpCatchUp(_ s: Session) {
        guard s.phase == .established else { return }
        let window = max(1, limits.catchUpWindowBytes)
        let before = s.connection.bytesQueuedTotal
        defer { s.limits.ledger.record(.catchUp, from: before, to: s.connection.bytesQueuedTotal) }
        while s.limits.hasCatchUp, s.phase == .established {
            if s.connection.outstandingBytes >= window { return }  // afterDrain goes on
            guard let head = s.limits.catchUp.current else { return }
            guard let topic = head.topic else {
                send(s, .upToDate, body: UpToDateBody(sequence: 0))
                finishJob(s)
                continue
            }
            guard let latest = store.latest(topic: topic) else {
                finishJob(s)
                continue
            }
            var job = head
            if !job.started {
                s.limits.catchUp.startCurrent()
                job.started = true
                if latest.sequence > job.after {
                    if let events = store.events(topic: topic, from: job.after + 1) {
                        job.events = events
                    } else {
                        writeCatchUp(latest, to: s, flags: .snapshot)  // the log no longer covers the gap
                    }
                }
            }
            while job.index < job.events.count, s.connection.outstandingBytes < window, s.phase == .established {
                writeCatchUp(job.events[job.index], to: s, flags: .replay)
                job.index += 1
            }
            guard s.phase == .established, s.limits.catchUp.hasWork else { return }  // closed while writing
            if job.index < job.events.count {
                s.limits.catchUp.updateCurrent(job)
                return  // the window is full: afterDrain goes on
            }
            // Everything fetched is written; events published meanwhile are sent by this catch-up too, in order.
            let last = s.sent(topic)
            if !job.events.isEmpty, latest.sequence > last {
                if let more = store.events(topic: topic, from: last + 1), !more.isEmpty {
                    job.events = more
                    job.index = 0
                    s.limits.catchUp.updateCurrent(job)
                    continue
                }
                writeCatchUp(latest, to: s, flags: .snapshot)
            }
            send(s, .upToDate, topic: topic, body: UpToDateBody(sequence: latest.sequence))
            finishJob(s)
        }
    }

    private func writeCatchUp(_ e: StoredEvent, to s: Session, flags: FrameFlags) {
        guard s.phase == .established, e.sequence > s.sent(e.topic) else { return }
        s.outbox.discardHeld(topic: e.topic, upTo: e.sequence)
        var f = flags
        if e.isTerminal { f.insert(.terminal) }
        write(e, to: s, flags: f)
    }
}
