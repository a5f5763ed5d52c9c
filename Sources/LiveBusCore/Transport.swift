/// The seam between the bus and its I/O: what the bus needs of a loop, a connection and a timer, and nothing more.
///
/// `LiveBusDaemon` serves the bus over libuv (`LiveBusLoop`'s `EventLoop`, `Connection` and `LoopTimer` conform);
/// ``EmbeddedLoop`` serves it in memory on virtual time, deterministically and without threads, for tests
/// (``EmbeddedBus``). Everything here is loop-bound: called on the loop's one thread only.
/// Source: ../shared/DESIGN.md "The core and its adapters"; swift-nio's `EmbeddedChannel`/`EmbeddedEventLoop`.

/// Why a connection closed with an error (the transport's error name and message, e.g. `ECONNRESET`).
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error's name (errno-style: `ECONNRESET`, `EPIPE`, `EPERM`).
    public var name: String
    /// What happened, for logs.
    public var message: String
    /// Creates an error.
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
    public var description: String { "\(message) (\(name))" }
}

/// A timer armed on a ``BusLoop``.
public protocol BusTimer: AnyObject {
    /// Stops the timer; its body never runs again. Safe to call more than once.
    func cancel()
    /// Lets the loop end while this timer is pending (for deadlines that must not keep a process alive).
    func unref()
    /// Whether the timer was cancelled or has fired (one-shot).
    var isCancelled: Bool { get }
}

/// One byte stream to one peer, as the bus sees it.
///
/// Writes are gathered during a loop turn and flushed at its end. The running byte counters let the bus tell
/// replies, catch-up and live events apart in what is still queued (``OutboxLedger``-style accounting).
public protocol BusConnection: AnyObject {
    /// Bytes written and not yet accepted by the peer's side (gathered this turn plus in flight).
    var outstandingBytes: Int { get }
    /// Every byte ever queued on this connection (a running offset: a frame written now ends at this value).
    var bytesQueuedTotal: Int { get }
    /// Every byte the peer's side accepted so far.
    var bytesSentTotal: Int { get }
    /// Whether received bytes are being delivered (between ``resumeReading()`` and ``stopReading()``).
    var isReading: Bool { get }
    /// `true` once closing began; writes are then ignored.
    var isClosed: Bool { get }
    /// The peer process's user id (`SO_PEERCRED`), or `nil` when unknown or not applicable.
    var peerUserID: UInt32? { get }

    /// Installs the connection's callbacks (each runs on the loop thread).
    /// - Parameters:
    ///   - onRead: Each chunk of received bytes (valid only during the call).
    ///   - onClose: Once, when the connection closed: `nil` for an orderly end of stream or a local close.
    ///   - onDrain: When all queued output was accepted by the peer's side (back-pressure).
    func setHandlers(
        onRead: @escaping (UnsafeRawBufferPointer) -> Void,
        onClose: @escaping (TransportError?) -> Void,
        onDrain: @escaping () -> Void
    )
    /// Queues `bytes` for this turn's flush.
    func write(_ bytes: [UInt8])
    /// Queues bytes produced by `body` directly into the pending buffer.
    func write(_ body: (inout [UInt8]) throws -> Void) rethrows
    /// Starts (or restarts) delivering received bytes; does nothing when already reading or closed.
    /// - Throws: ``TransportError`` when the stream cannot be read.
    func resumeReading() throws(TransportError)
    /// Stops delivering received bytes (back-pressure); the peer's bytes wait on its side.
    func stopReading()
    /// Flushes what is queued, then closes; closes anyway after `timeoutMilliseconds` (monotonic) if the peer
    /// does not take it.
    func closeAfterFlush(timeoutMilliseconds: UInt64)
    /// Closes at once; queued writes are dropped.
    func close()
}

extension BusConnection {
    /// Flushes what is queued, then closes; closes anyway after 2 s (monotonic) if the peer does not take it.
    public func closeAfterFlush() { closeAfterFlush(timeoutMilliseconds: 2000) }
}

/// The loop the bus runs on: its monotonic clock, timers, deferred work, and the end of each turn.
public protocol BusLoop: AnyObject {
    /// The loop's monotonic clock, milliseconds (cached per turn, as libuv's `uv_now`).
    var nowMilliseconds: UInt64 { get }
    /// CPU time the loop's thread has used, nanoseconds: bounds the work one session gets per turn. An embedded
    /// loop reports a constant (no work is ever cut short by time), which keeps it deterministic.
    func cpuNanoseconds() -> UInt64
    /// Arms a timer: `body` after `milliseconds` (monotonic), repeating every `repeat` ms if non-zero.
    /// - Returns: The timer, to cancel.
    @discardableResult
    func scheduleTimer(after milliseconds: UInt64, repeat: UInt64, _ body: @escaping () -> Void) -> any BusTimer
    /// Runs `body` at the start of the next turn, in the order queued; other connections are served in between.
    func runSoon(_ body: @escaping () -> Void)
    /// Runs `body` at the end of every turn, before the turn's output is flushed (the group commit).
    func onTurnEnd(_ body: @escaping () -> Void)
    /// Flushes now what every connection gathered so far in this turn.
    func flushPendingWrites()
    /// Makes the loop return after the current turn.
    func stop()
}

/// Something that serves connections on a ``BusLoop``: the daemon's bus, driven by a socket listener or by
/// ``EmbeddedBus``.
public protocol BusEngine: AnyObject {
    /// A new connection was opened; the engine installs its handlers and starts reading it (or refuses it).
    func accept(_ connection: any BusConnection)
}
