import LiveBusClock
import LiveBusWire

/// A bus driven in memory on virtual time: swift-nio's `EmbeddedChannel` for LiveBus.
///
/// It owns an ``EmbeddedLoop`` (virtual monotonic time from 0 ms, and a server clock from
/// ``EmbeddedLoop/startEpochMilliseconds``) and the ``BusEngine`` built on it, typically the daemon's bus
/// (`EmbeddedDaemon` in `LiveBusDaemon`: `EmbeddedBus<Daemon>` with an in-memory store). A test opens connections
/// (``connect(peerUserID:)``), feeds them bytes or frames (``EmbeddedConnection/writeInbound(_:)-([UInt8])``),
/// moves time (``advance(by:)``: timers fire in deadline order at their own instants), and reads what the bus
/// wrote (``EmbeddedConnection/readOutbound()``, ``EmbeddedConnection/readOutboundFrames()``).
///
/// Deterministic: no threads, no sockets, no real clock; the same inputs give the same bytes. Loop-bound: use it
/// from one thread.
///
/// ```swift
/// let bus = try EmbeddedDaemon(options: .embedded())
/// let phone = bus.connect()
/// try phone.writeInbound(Frame(type: .hello, body: helloBody))
/// let welcome = try phone.readOutboundFrames()   // [WELCOME, PING]
/// bus.advance(by: 5_000)                          // probes, keepalives, timeouts fire on the way
/// ```
public final class EmbeddedBus<Engine: BusEngine> {
    /// The loop everything runs on.
    public let loop: EmbeddedLoop
    /// What serves the connections.
    public let engine: Engine
    private var nextNumber = 1
    /// Every connection opened, in order.
    public private(set) var connections: [EmbeddedConnection] = []

    /// Creates a bus on `loop` with the engine `makeEngine` builds on it (it may start timers; the loop then runs
    /// to idle once).
    /// - Parameters:
    ///   - loop: The virtual loop. Default: a new one at virtual time 0.
    ///   - makeEngine: Builds (and starts) the engine on the loop.
    /// - Throws: What `makeEngine` throws.
    public init<E: Error>(
        loop: EmbeddedLoop = EmbeddedLoop(),
        makeEngine: (EmbeddedLoop) throws(E) -> Engine
    ) throws(E) {
        self.loop = loop
        self.engine = try makeEngine(loop)
        loop.run()
    }

    /// The server clock (virtual): what the bus stamps its instants with.
    public var serverClock: EmbeddedServerClock { loop.serverClock }

    /// The server clock's reading now, milliseconds since the Unix epoch.
    public var now: ServerInstant { loop.serverClock.now() }

    /// Virtual monotonic time since the bus was created, milliseconds.
    public var elapsedMilliseconds: UInt64 { loop.nowMilliseconds }

    /// Opens a connection to the bus (the engine accepts it), then runs the loop.
    /// - Parameter peerUserID: The peer's user id as `SO_PEERCRED` would report it; `nil`: unknown (the bus then
    ///   trusts the peer as its own user).
    /// - Returns: The connection's peer side.
    @discardableResult
    public func connect(peerUserID: UInt32? = nil) -> EmbeddedConnection {
        let c = EmbeddedConnection(loop: loop, number: nextNumber, peerUserID: peerUserID)
        nextNumber += 1
        connections.append(c)
        engine.accept(c)
        loop.run()
        return c
    }

    /// Moves virtual time forward by `milliseconds`, firing every timer due on the way at its own deadline, in
    /// deadline order, and running each instant to idle.
    /// - Parameter milliseconds: How far, ms (monotonic and server clock alike).
    public func advance(by milliseconds: UInt64) { loop.advance(by: milliseconds) }

    /// Runs the loop to idle at the current instant (what ``advance(by:)`` 0 does).
    public func run() { loop.run() }
}
