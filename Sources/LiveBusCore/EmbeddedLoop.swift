import LiveBusClock
import Synchronization

/// A ``BusLoop`` on virtual time, in memory, without threads: swift-nio's `EmbeddedEventLoop` for the bus.
///
/// Nothing happens on its own. Work runs when the driver (``EmbeddedBus``, or a test) calls ``run()`` or
/// ``advance(by:)``. One *turn* is, in libuv's order: the timers due at ``nowMilliseconds`` (earliest deadline
/// first, then in the order armed), the work queued with ``runSoon(_:)``, the turn-end handlers, the flush of every
/// connection written to, then the I/O: bytes and closes the peers sent, in the order sent. ``run()`` repeats turns
/// until nothing is left to do at the current instant. Time never moves unless ``advance(by:)`` moves it.
///
/// Loop-bound like any loop: use it from one thread.
public final class EmbeddedLoop: BusLoop {
    /// Virtual monotonic time, milliseconds since the loop was created (starts at 0).
    public private(set) var nowMilliseconds: UInt64 = 0
    private let time: EmbeddedTime
    /// The server clock on this loop's virtual time: ``startEpochMilliseconds`` plus ``nowMilliseconds``
    /// (milliseconds since the Unix epoch).
    public let serverClock: EmbeddedServerClock
    /// The server instant at virtual time 0, milliseconds since the Unix epoch.
    public let startEpochMilliseconds: Int64

    private var timers: [EmbeddedTimer] = []
    private var nextTimerOrder: UInt64 = 0
    private var soon: [() -> Void] = []
    private var turnEndHandlers: [() -> Void] = []
    var dirty: [EmbeddedConnection] = []
    /// Connections with peer input (bytes or a close) waiting to be delivered, in the order it was sent.
    var inputQueue: [EmbeddedConnection] = []
    private var stopRequested = false
    /// Peer input was delivered in the last turn: one more turn runs its turn-end work (the group commit) and
    /// flushes what it wrote, as libuv's next iteration does before it blocks again.
    private var inputDelivered = false
    /// Turns run so far (a guard against a bus that keeps queueing work forever at one instant).
    public private(set) var turnCount = 0
    /// Most turns ``run()`` runs at one instant before it stops with a precondition failure: work that re-queues
    /// itself forever is a bug in the bus, not something to wait out.
    public var maximumTurnsPerInstant = 1_000_000

    /// Creates a loop at virtual time 0 whose server clock reads `startEpochMilliseconds` then.
    /// - Parameter startEpochMilliseconds: The server clock at virtual time 0, ms since the Unix epoch. Default
    ///   2026-01-01T00:00:00Z.
    public init(startEpochMilliseconds: Int64 = 1_767_225_600_000) {
        self.startEpochMilliseconds = startEpochMilliseconds
        time = EmbeddedTime(epoch: startEpochMilliseconds)
        serverClock = EmbeddedServerClock(time: time)
    }

    /// Always 0: the embedded loop never cuts a turn short for CPU time, so every run is the same.
    public func cpuNanoseconds() -> UInt64 { 0 }

    @discardableResult
    public func scheduleTimer(after milliseconds: UInt64, repeat: UInt64, _ body: @escaping () -> Void)
        -> any BusTimer
    {
        armTimer(after: milliseconds, repeat: `repeat`, body)
    }

    /// Arms a timer (``scheduleTimer(after:repeat:_:)`` with the concrete type).
    @discardableResult
    public func armTimer(after milliseconds: UInt64, repeat: UInt64 = 0, _ body: @escaping () -> Void)
        -> EmbeddedTimer
    {
        let t = EmbeddedTimer(
            deadline: nowMilliseconds &+ milliseconds,
            repeat: `repeat`,
            order: nextTimerOrder,
            body: body
        )
        nextTimerOrder += 1
        timers.append(t)
        return t
    }

    public func runSoon(_ body: @escaping () -> Void) { soon.append(body) }

    public func onTurnEnd(_ body: @escaping () -> Void) { turnEndHandlers.append(body) }

    public func flushPendingWrites() { flushDirty() }

    /// Makes the current ``run()`` or ``advance(by:)`` return after the current turn.
    public func stop() { stopRequested = true }

    /// The pending timers (not cancelled), earliest first.
    public var pendingTimers: [EmbeddedTimer] {
        timers.filter { !$0.isCancelled }.sorted { ($0.deadline, $0.order) < ($1.deadline, $1.order) }
    }

    /// The earliest deadline of a pending timer (virtual ms), or `nil`.
    public var nextDeadline: UInt64? { pendingTimers.first?.deadline }

    /// Runs turns at the current instant until nothing is left to do now: no due timer, no queued work, nothing
    /// to flush, no peer input that can be delivered.
    public func run() {
        stopRequested = false
        var turns = 0
        while hasWorkNow && !stopRequested {
            turn()
            turns += 1
            precondition(
                turns <= maximumTurnsPerInstant,
                "EmbeddedLoop: \(turns) turns at \(nowMilliseconds) ms and still busy (work that re-queues itself)"
            )
        }
    }

    /// Moves virtual time forward by `milliseconds`, firing every timer due on the way at its own deadline (in
    /// deadline order, running each instant to idle), then runs to idle at the new instant.
    /// - Parameter milliseconds: How far to move, ms (monotonic); 0 just runs to idle.
    public func advance(by milliseconds: UInt64) {
        let target = nowMilliseconds &+ milliseconds
        run()
        while let next = nextDeadline, next <= target, !stopRequested {
            setNow(max(nowMilliseconds, next))
            run()
        }
        if !stopRequested { setNow(target) }
        run()
    }

    private func setNow(_ ms: UInt64) {
        nowMilliseconds = ms
        time.set(Int64(ms))
    }

    private var hasWorkNow: Bool {
        inputDelivered || !soon.isEmpty || !dirty.isEmpty || inputQueue.contains(where: \.canDeliverInput)
            || timers.contains { !$0.isCancelled && $0.deadline <= nowMilliseconds }
    }

    private func turn() {
        turnCount += 1
        inputDelivered = false
        // Timers due now, earliest first (a timer armed by one of them for now runs in the next turn).
        let due = pendingTimers.filter { $0.deadline <= nowMilliseconds }
        for t in due where !t.isCancelled { t.fire(now: nowMilliseconds) }
        timers.removeAll { $0.isCancelled }
        let work = soon
        soon.removeAll(keepingCapacity: true)
        for w in work { w() }
        for h in turnEndHandlers { h() }
        flushDirty()
        // I/O: what the peers sent, one delivery per connection per turn, in the order sent.
        let ready = inputQueue
        inputQueue.removeAll(keepingCapacity: true)
        var waiting: [EmbeddedConnection] = []
        for c in ready {
            if c.canDeliverInput {
                c.deliverInput()
                inputDelivered = true
            }
            if c.hasInput { waiting.append(c) }
        }
        for c in inputQueue where !waiting.contains(where: { $0 === c }) { waiting.append(c) }
        inputQueue = waiting
    }

    func markDirty(_ c: EmbeddedConnection) {
        if !dirty.contains(where: { $0 === c }) { dirty.append(c) }
    }

    func queueInput(_ c: EmbeddedConnection) {
        if !inputQueue.contains(where: { $0 === c }) { inputQueue.append(c) }
    }

    private func flushDirty() {
        guard !dirty.isEmpty else { return }
        let list = dirty
        dirty.removeAll(keepingCapacity: true)
        for c in list { c.flush() }
    }
}

/// A timer on an ``EmbeddedLoop``.
public final class EmbeddedTimer: BusTimer {
    /// When it fires next, virtual ms.
    public private(set) var deadline: UInt64
    /// Its period, ms (0: one-shot).
    public let repeatMilliseconds: UInt64
    let order: UInt64
    private var body: (() -> Void)?
    /// Whether the timer was cancelled or has fired (one-shot).
    public private(set) var isCancelled = false
    /// Whether ``unref()`` was called (recorded only: an embedded loop never ends on its own).
    public private(set) var isUnreferenced = false

    init(deadline: UInt64, repeat: UInt64, order: UInt64, body: @escaping () -> Void) {
        self.deadline = deadline
        self.repeatMilliseconds = `repeat`
        self.order = order
        self.body = body
    }

    func fire(now: UInt64) {
        guard let body, !isCancelled else { return }
        if repeatMilliseconds > 0 {
            deadline = max(now, deadline) &+ repeatMilliseconds
        } else {
            isCancelled = true
            self.body = nil
        }
        body()
    }

    public func cancel() {
        isCancelled = true
        body = nil
    }

    public func unref() { isUnreferenced = true }
}

/// The server clock of an ``EmbeddedLoop``: its start instant plus its virtual time, ms since the Unix epoch.
public struct EmbeddedServerClock: ServerClock {
    let time: EmbeddedTime
    /// The current virtual server instant.
    public func now() -> ServerInstant { ServerInstant(millisecondsSinceEpoch: time.now) }
}

/// The virtual time an ``EmbeddedServerClock`` reads (a mutex: `ServerClock` is `Sendable`).
final class EmbeddedTime: Sendable {
    private let state: Mutex<Int64>
    private let epoch: Int64
    init(epoch: Int64) {
        self.epoch = epoch
        state = Mutex(0)
    }
    var now: Int64 { epoch + state.withLock { $0 } }
    func set(_ ms: Int64) { state.withLock { $0 = ms } }
}
