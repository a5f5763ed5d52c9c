import CLibUV
import Foundation
import Synchronization

/// One libuv loop (`uv_loop_t`): timers, Unix-socket listeners and connections, signals, cross-thread wake-ups.
///
/// Not thread-safe: create it, use it and run it on one thread. Other threads reach it only through
/// ``handle`` (``LoopHandle/execute(_:)``), which queues work and wakes the loop with `uv_async_send`.
/// Source: libuv `docs/src/design.rst` ("is not thread-safe"), `docs/src/async.rst`.
public final class EventLoop {
    let loop: UnsafeMutablePointer<uv_loop_t>
    private let async: UnsafeMutablePointer<uv_async_t>
    private let prepare: UnsafeMutablePointer<uv_prepare_t>
    private let shared: LoopShared
    var dirty: [Connection] = []
    private var closed = false
    private var turnEndHandlers: [() -> Void] = []
    private let idle: UnsafeMutablePointer<uv_idle_t>
    private var soon: [() -> Void] = []
    private var running: [() -> Void] = []
    private var idleActive = false
    /// The read buffer every connection of this loop reads into (allocated at the first read). libuv calls a
    /// stream's `alloc_cb` just before its `read()` and hands the buffer to `read_cb` right after, on this one
    /// thread, and ``Connection/onRead`` may use the bytes only during the call: so one buffer serves every
    /// connection, and 10,000 idle connections hold no 64 KiB each (93 % of the heap at 1,000 idle sessions
    /// before, massif). A read while the buffer is out (a callback that runs the loop again) gets a buffer of its
    /// own, freed after its callback. Source: libuv `docs/src/stream.rst` (`uv_alloc_cb`, `uv_read_cb`).
    private var sharedReadBuffer: UnsafeMutableRawPointer?
    private var sharedReadBufferOut = false
    /// Bytes of each read into a connection's buffer.
    static let readBufferSize = 65536

    /// A buffer for one read: the shared one, or a private one while the shared one is in use.
    func takeReadBuffer() -> UnsafeMutableRawPointer {
        if sharedReadBufferOut { return .allocate(byteCount: Self.readBufferSize, alignment: 16) }
        sharedReadBufferOut = true
        if let b = sharedReadBuffer { return b }
        let b = UnsafeMutableRawPointer.allocate(byteCount: Self.readBufferSize, alignment: 16)
        sharedReadBuffer = b
        return b
    }

    /// Gives back a buffer of ``takeReadBuffer()`` once its read was handled.
    func returnReadBuffer(_ b: UnsafeMutableRawPointer) {
        if b == sharedReadBuffer {
            sharedReadBufferOut = false
        } else {
            b.deallocate()
        }
    }

    /// Connections (``Connection``) whose handle is open on this loop: accepted, connected or still closing.
    public internal(set) var openStreamCount = 0

    /// A Sendable handle other threads use to run work on this loop or stop it.
    public let handle: LoopHandle

    /// Creates a loop.
    /// - Throws: ``LoopError`` if libuv cannot initialise it.
    public init() throws(LoopError) {
        signal(SIGPIPE, SIG_IGN)  // a write to a closed peer returns EPIPE instead of killing the process
        loop = .allocate(capacity: 1)
        try uvCheck(uv_loop_init(loop), "uv_loop_init")
        async = .allocate(capacity: 1)
        prepare = .allocate(capacity: 1)
        idle = .allocate(capacity: 1)
        shared = LoopShared()
        handle = LoopHandle(shared: shared)
        loop.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        try uvCheck(
            uv_async_init(loop, async) { a in
                guard let a else { return }
                EventLoop.of(a.pointee.loop).drainCrossThreadQueue()
            },
            "uv_async_init"
        )
        uv_unref(asHandle(async))  // wake-ups alone do not keep the loop running
        shared.setAsync(async)
        try uvCheck(uv_prepare_init(loop, prepare), "uv_prepare_init")
        try uvCheck(
            uv_prepare_start(prepare) { p in
                guard let p else { return }
                let l = EventLoop.of(p.pointee.loop)
                l.endTurn()
            },
            "uv_prepare_start"
        )
        uv_unref(asHandle(prepare))
        try uvCheck(uv_idle_init(loop, idle), "uv_idle_init")
    }

    /// Runs `body` on the loop thread at the start of the next loop iteration, in the order queued (`uv_idle`: the
    /// loop polls for I/O without blocking while work is queued, so other connections are served in between and
    /// what `body` writes is flushed in that same iteration). For work split into slices so that one connection
    /// cannot hold the loop: see the daemon's per-turn frame budget. Source: libuv `docs/src/idle.rst`.
    public func runSoon(_ body: @escaping () -> Void) {
        guard !closed else { return }
        soon.append(body)
        guard !idleActive else { return }
        idleActive = true
        uv_idle_start(idle) { h in
            guard let h else { return }
            EventLoop.of(h.pointee.loop).runSoonWork()
        }
    }

    private func runSoonWork() {
        // Swapped, not copied: work queued by `w` goes to `soon` for the next iteration.
        swap(&soon, &running)
        for w in running { w() }
        running.removeAll(keepingCapacity: true)
        if soon.isEmpty {
            idleActive = false
            uv_idle_stop(idle)
        }
    }

    static func of(_ l: UnsafeMutablePointer<uv_loop_t>?) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(l!.pointee.data).takeUnretainedValue()
    }

    /// Milliseconds of the loop's cached monotonic clock (`uv_now`), updated at the start of each iteration.
    public var nowMilliseconds: UInt64 { uv_now(loop) }

    /// The `uv_loop_t *` itself, for a C library that runs on this loop (libwebsockets' foreign-loop mode, the
    /// dashboard). Loop-bound like the loop.
    public var rawLoop: UnsafeMutableRawPointer { UnsafeMutableRawPointer(loop) }

    /// A fresh monotonic reading in nanoseconds (`uv_hrtime`).
    public static func monotonicNanoseconds() -> UInt64 { uv_hrtime() }

    /// Runs the loop until ``stop()`` or until nothing keeps it alive.
    public func run() {
        uv_run(loop, UV_RUN_DEFAULT)
    }

    /// Runs one iteration without blocking; for tests.
    @discardableResult
    public func runOnce(blocking: Bool = false) -> Bool {
        uv_run(loop, blocking ? UV_RUN_ONCE : UV_RUN_NOWAIT) != 0
    }

    /// Makes ``run()`` return after the current iteration.
    public func stop() { uv_stop(loop) }

    /// Closes every handle the loop owns and releases it. Call after ``run()`` returned; returns `true` when
    /// every handle was closed (a leak check, as libuv's tests do with `uv_loop_close`).
    @discardableResult
    public func close() -> Bool {
        guard !closed else { return true }
        closed = true
        shared.clearAsync()
        uv_close(asHandle(async)) { h in UnsafeMutableRawPointer(h!).deallocate() }
        uv_close(asHandle(prepare)) { h in UnsafeMutableRawPointer(h!).deallocate() }
        soon.removeAll()
        uv_close(asHandle(idle)) { h in UnsafeMutableRawPointer(h!).deallocate() }
        // Close anything still open, then let the close callbacks run.
        uv_walk(
            loop,
            { h, _ in
                guard let h, uv_is_closing(h) == 0 else { return }
                if let data = h.pointee.data {
                    let owner = Unmanaged<AnyObject>.fromOpaque(data).takeUnretainedValue()
                    if let c = owner as? any LoopClosable {
                        c.closeFromLoop()
                        return
                    }
                }
                uv_close(h, nil)
            },
            nil
        )
        uv_run(loop, UV_RUN_DEFAULT)
        let rc = uv_loop_close(loop)
        loop.deallocate()
        sharedReadBuffer?.deallocate()
        sharedReadBuffer = nil
        return rc == 0
    }

    private func drainCrossThreadQueue() {
        for work in shared.takeAll() { work(self) }
    }

    func markDirty(_ c: Connection) {
        dirty.append(c)
    }

    /// Runs `body` at the end of every loop turn (in `uv_prepare`, once per iteration just before the loop blocks
    /// for I/O), before the turn's output is flushed: the daemon's group commit, whose ACKs and fan-out go out in
    /// the same flush.
    /// - Parameter body: Runs on the loop thread; it may write to connections.
    public func onTurnEnd(_ body: @escaping () -> Void) { turnEndHandlers.append(body) }

    private func endTurn() {
        for h in turnEndHandlers { h() }
        flushDirty()
    }

    /// Flushes now what every connection gathered so far in this turn (`uv_try_write`, then a queued write for the
    /// rest): the daemon calls it while fanning out a large batch, so the first subscribers' frames leave before
    /// the last ones are encoded.
    public func flushPendingWrites() { flushDirty() }

    /// Flushes the output of every connection written to during this loop turn. Runs in `uv_prepare`, i.e.
    /// once per iteration just before the loop blocks for I/O.
    func flushDirty() {
        guard !dirty.isEmpty else { return }
        // Two arrays swapped, so a turn's flush allocates nothing (a copy, then `removeAll(keepingCapacity:)` of
        // the shared buffer, allocated a new one every turn). Connections marked dirty while flushing go to
        // `dirty` and are flushed by the next call.
        swap(&dirty, &flushing)
        for c in flushing { c.flush() }
        flushing.removeAll(keepingCapacity: true)
    }
    private var flushing: [Connection] = []

    /// Schedules `body` after `milliseconds` (monotonic), repeating every `repeat` ms if non-zero.
    /// - Returns: a timer to cancel. Keep it or not: a one-shot timer releases itself after firing.
    @discardableResult
    public func schedule(after milliseconds: UInt64, repeat: UInt64 = 0, _ body: @escaping () -> Void) -> LoopTimer {
        let t = LoopTimer(loop: self, body: body)
        t.start(after: milliseconds, repeat: `repeat`)
        return t
    }
}

protocol LoopClosable: AnyObject {
    func closeFromLoop()
}

/// Work queued from other threads; guarded by a mutex. Source: STYLE.md habit 4.
final class LoopShared: Sendable {
    private struct State {
        var work: [@Sendable (EventLoop) -> Void] = []
        var async: UnsafeMutablePointer<uv_async_t>?
    }
    // @unchecked-free: Mutex makes this Sendable; the raw pointer is only sent to uv_async_send (thread-safe).
    private let state = Mutex<StateBox>(StateBox())
    private final class StateBox: @unchecked Sendable {  // @unchecked: only touched under `state`'s lock.
        var s = State()
    }

    func setAsync(_ a: UnsafeMutablePointer<uv_async_t>) { state.withLock { $0.s.async = a } }
    func clearAsync() { state.withLock { $0.s.async = nil } }

    func enqueue(_ w: @escaping @Sendable (EventLoop) -> Void) -> Bool {
        state.withLock { box in
            guard let a = box.s.async else { return false }
            box.s.work.append(w)
            uv_async_send(a)
            return true
        }
    }

    func takeAll() -> [@Sendable (EventLoop) -> Void] {
        state.withLock { box in
            let w = box.s.work
            box.s.work.removeAll()
            return w
        }
    }
}

/// A thread-safe handle to an ``EventLoop``.
public struct LoopHandle: Sendable {
    let shared: LoopShared

    /// Runs `work` on the loop's thread during its next iteration.
    /// - Returns: `false` if the loop is already closed (the work is dropped).
    @discardableResult
    public func execute(_ work: @escaping @Sendable (EventLoop) -> Void) -> Bool {
        shared.enqueue(work)
    }

    /// Asks the loop to stop from another thread.
    public func stop() { execute { $0.stop() } }
}

/// A `uv_timer_t`. Fires its body on the loop thread.
public final class LoopTimer: LoopClosable {
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private var body: (() -> Void)?
    private var isClosed = false
    private var isRepeating = false
    private var retained: Unmanaged<LoopTimer>?

    init(loop: EventLoop, body: @escaping () -> Void) {
        handle = .allocate(capacity: 1)
        uv_timer_init(loop.loop, handle)
        self.body = body
        retained = Unmanaged.passRetained(self)
        handle.pointee.data = retained!.toOpaque()
    }

    func start(after ms: UInt64, repeat r: UInt64) {
        isRepeating = r > 0
        uv_timer_start(
            handle,
            { h in
                let t = Unmanaged<LoopTimer>.fromOpaque(h!.pointee.data).takeUnretainedValue()
                t.fire()
            },
            ms,
            r
        )
    }

    private func fire() {
        body?()
        if !isRepeating { cancel() }
    }

    /// Stops the timer and releases it; the body never runs again. Safe to call more than once.
    public func cancel() {
        guard !isClosed else { return }
        isClosed = true
        body = nil
        uv_timer_stop(handle)
        uv_close(asHandle(handle)) { h in
            let t = Unmanaged<LoopTimer>.fromOpaque(h!.pointee.data)
            h!.deallocate()
            t.release()
        }
    }

    /// Lets the loop end while this timer is pending (`uv_unref`): for deadlines that must not keep a process alive.
    public func unref() {
        guard !isClosed else { return }
        uv_unref(asHandle(handle))
    }

    /// Whether the timer was cancelled or has fired (one-shot).
    public var isCancelled: Bool { isClosed }

    func closeFromLoop() { cancel() }
}

/// Watches POSIX signals (`uv_signal_t`), e.g. SIGINT and SIGTERM for a clean shutdown.
public final class SignalWatcher: LoopClosable {
    private var handles: [UnsafeMutablePointer<uv_signal_t>] = []
    private let body: (Int32) -> Void
    private var closed = false

    /// Starts watching `signals` on `loop`; `body` runs on the loop thread with the signal number.
    /// - Throws: ``LoopError`` if libuv cannot install the watcher.
    public init(loop: EventLoop, signals: [Int32], _ body: @escaping (Int32) -> Void) throws(LoopError) {
        self.body = body
        // A parent may have spawned us with these signals blocked (libdispatch worker threads block every signal and
        // posix_spawn keeps the mask): unblock them, or SIGTERM would never arrive.
        var set = sigset_t()
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        for s in signals {
            let h = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
            try uvCheck(uv_signal_init(loop.loop, h), "uv_signal_init")
            h.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            try uvCheck(
                uv_signal_start(
                    h,
                    { h, signum in
                        Unmanaged<SignalWatcher>.fromOpaque(h!.pointee.data).takeUnretainedValue().body(signum)
                    },
                    s
                ),
                "uv_signal_start"
            )
            uv_unref(asHandle(h))  // a signal watcher alone does not keep the loop alive
            handles.append(h)
        }
    }

    /// Stops watching.
    public func close() {
        guard !closed else { return }
        closed = true
        for h in handles {
            uv_signal_stop(h)
            uv_close(asHandle(h)) { h in h!.deallocate() }
        }
    }

    func closeFromLoop() { close() }
}
