import LiveBusWire

/// A ``BusConnection`` in memory, on an ``EmbeddedLoop``: the bus's side behaves as a libuv stream does, the peer's
/// side is driven by the test (swift-nio's `EmbeddedChannel` shape: ``writeInbound(_:)``, ``readOutbound()``).
///
/// What the bus writes is gathered during a turn and flushed at its end into the peer's receive window
/// (``peerReceiveWindowBytes``; unlimited by default). Bytes that do not fit stay *in flight* and count in
/// ``outstandingBytes``, as on a socket whose peer does not read: that is how a slow consumer is made. Reading
/// (``readOutbound()``) frees the window; when nothing is left in flight the bus is told its output drained.
///
/// Every peer-side call runs the loop to idle at the current instant before it returns, so its effects (the
/// bus's answers) are there to read. Loop-bound.
public final class EmbeddedConnection: BusConnection {
    unowned let loop: EmbeddedLoop
    /// The connection's number on its loop, from 1 in the order opened.
    public let number: Int
    public let peerUserID: UInt32?

    private var pending: [UInt8] = []
    private var inFlight: [UInt8] = []
    private var peerBuffer: [UInt8] = []
    private var inbound: [[UInt8]] = []
    private var peerClose: TransportError??
    private var drainPending = false
    private var shutdownRequested = false
    private var closeDeadline: EmbeddedTimer?
    private var outboundDecoder = FrameDecoder(maximumFrameSize: Int(UInt32.max >> 1))

    private var onRead: ((UnsafeRawBufferPointer) -> Void)?
    private var onClose: ((TransportError?) -> Void)?
    private var onDrain: (() -> Void)?

    public private(set) var bytesQueuedTotal = 0
    public private(set) var bytesSentTotal = 0
    public private(set) var isReading = false
    public private(set) var isClosed = false
    /// How the connection closed, once it has: by the bus (`closeAfterFlush`, `close`) or by the peer.
    public private(set) var closeReason: CloseReason?
    /// Most bytes the peer's side holds unread; past it the bus's bytes stay in flight (`nil`: unlimited).
    /// Lowering it makes a slow consumer; raising it (or reading) lets the bytes through.
    public var peerReceiveWindowBytes: Int? {
        didSet { moveInFlight() }
    }

    /// How an ``EmbeddedConnection`` closed.
    public enum CloseReason: Sendable, Equatable {
        /// The bus flushed its output, then closed (after a fatal ERROR, BYE, a refusal).
        case closedAfterFlush
        /// The bus closed at once (queued output dropped), or its close-after-flush deadline passed.
        case closedByBus
        /// The peer closed (``closeInbound(error:)``), with its error or `nil` for an orderly end of stream.
        case closedByPeer(TransportError?)
    }

    init(loop: EmbeddedLoop, number: Int, peerUserID: UInt32?) {
        self.loop = loop
        self.number = number
        self.peerUserID = peerUserID
    }

    // MARK: - The bus's side (BusConnection)

    public var outstandingBytes: Int { pending.count + inFlight.count }

    public func setHandlers(
        onRead: @escaping (UnsafeRawBufferPointer) -> Void,
        onClose: @escaping (TransportError?) -> Void,
        onDrain: @escaping () -> Void
    ) {
        self.onRead = onRead
        self.onClose = onClose
        self.onDrain = onDrain
    }

    public func write(_ bytes: [UInt8]) {
        guard !isClosed, !shutdownRequested, !bytes.isEmpty else { return }
        pending.append(contentsOf: bytes)
        bytesQueuedTotal += bytes.count
        loop.markDirty(self)
    }

    public func write(_ body: (inout [UInt8]) throws -> Void) rethrows {
        guard !isClosed, !shutdownRequested else { return }
        let before = pending.count
        defer { bytesQueuedTotal += pending.count - before }
        try body(&pending)
        if !pending.isEmpty { loop.markDirty(self) }
    }

    public func resumeReading() throws(TransportError) {
        guard !isReading, !isClosed else { return }
        isReading = true
        if hasInput { loop.queueInput(self) }
    }

    public func stopReading() {
        guard !isClosed else { return }
        isReading = false
    }

    public func closeAfterFlush(timeoutMilliseconds: UInt64) {
        guard !isClosed, !shutdownRequested else { return }
        closeDeadline = loop.armTimer(after: timeoutMilliseconds) { [weak self] in self?.closeNow(.closedByBus, nil) }
        if !pending.isEmpty { flush() }
        shutdownRequested = true
        if inFlight.isEmpty && pending.isEmpty { closeNow(.closedAfterFlush, nil) }
    }

    public func close() { closeNow(.closedByBus, nil) }

    // MARK: - The peer's side (the test)

    /// Sends `bytes` to the bus (as one read, split at 64 KiB as libuv's read buffer does), then runs the loop.
    /// Bytes sent while the bus is not reading wait, in order, until it reads again.
    public func writeInbound(_ bytes: [UInt8]) {
        guard !isClosed, peerClose == nil else { return }
        var i = 0
        while i < bytes.count {
            let end = min(bytes.count, i + 65536)
            inbound.append(Array(bytes[i..<end]))
            i = end
        }
        loop.queueInput(self)
        loop.run()
    }

    /// Encodes `frame` and sends it (``writeInbound(_:)-([UInt8])``).
    /// - Throws: ``WireError`` when the frame cannot be encoded (a topic or body too large).
    public func writeInbound(_ frame: Frame) throws(WireError) {
        writeInbound(try frame.encoded())
    }

    /// Encodes `frames` and sends them in one read.
    /// - Throws: ``WireError`` when a frame cannot be encoded.
    public func writeInbound(_ frames: [Frame]) throws(WireError) {
        var bytes: [UInt8] = []
        for f in frames { try f.encode(into: &bytes) }
        writeInbound(bytes)
    }

    /// Everything the bus wrote that reached the peer's side since the last read, oldest first. Reading frees the
    /// receive window: bytes in flight move in (and are read next time), and once none is left the bus is told
    /// its output drained; the loop then runs.
    public func readOutbound() -> [UInt8] {
        let bytes = peerBuffer
        peerBuffer.removeAll(keepingCapacity: true)
        moveInFlight()
        loop.run()
        return bytes
    }

    /// The frames in ``readOutbound()``'s bytes (a frame split across reads is returned once complete).
    /// - Throws: ``WireError`` when the bus wrote bytes that are not a frame (a bug in the bus).
    public func readOutboundFrames() throws(WireError) -> [Frame] {
        outboundDecoder.append(readOutbound())
        var frames: [Frame] = []
        while let f = try outboundDecoder.next() { frames.append(f) }
        return frames
    }

    /// Reads until the bus writes nothing more at this instant (a catch-up paced by the window), returning all
    /// frames.
    /// - Throws: ``WireError`` when the bus wrote bytes that are not a frame.
    public func readAllOutboundFrames() throws(WireError) -> [Frame] {
        var all: [Frame] = []
        while true {
            let hadBytes = !peerBuffer.isEmpty
            all += try readOutboundFrames()
            if !hadBytes && peerBuffer.isEmpty { return all }
        }
    }

    /// Closes the peer's side (end of stream, or with `error`: a reset); the bus sees it when it reads next.
    public func closeInbound(error: TransportError? = nil) {
        guard !isClosed, peerClose == nil else { return }
        peerClose = .some(error)
        loop.queueInput(self)
        loop.run()
    }

    /// Bytes the bus sent that the peer's side holds unread.
    public var unreadOutboundBytes: Int { peerBuffer.count }

    /// Bytes the peer sent that the bus has not read yet (it stopped reading: back-pressure, a limit).
    public var unreadInboundBytes: Int { inbound.reduce(0) { $0 + $1.count } }

    // MARK: - Loop internals

    var hasInput: Bool { !isClosed && (drainPending || !inbound.isEmpty || peerClose != nil) }

    var canDeliverInput: Bool {
        !isClosed && (drainPending || (isReading && (!inbound.isEmpty || peerClose != nil)))
    }

    func deliverInput() {
        if drainPending {
            drainPending = false
            afterDrain()
        }
        while isReading, !isClosed, !inbound.isEmpty {
            let chunk = inbound.removeFirst()
            chunk.withUnsafeBytes { onRead?($0) }
        }
        if isReading, !isClosed, inbound.isEmpty, let e = peerClose {
            closeNow(.closedByPeer(e), e)
        }
    }

    func flush() {
        guard !isClosed, !pending.isEmpty else { return }
        let hadInFlight = !inFlight.isEmpty
        inFlight.append(contentsOf: pending)
        pending.removeAll(keepingCapacity: true)
        moveInFlight(notify: false)
        if inFlight.isEmpty && !hadInFlight { afterDrain() }
    }

    private func moveInFlight(notify: Bool = true) {
        guard !inFlight.isEmpty, !isClosed else { return }
        let room = peerReceiveWindowBytes.map { max(0, $0 - peerBuffer.count) } ?? inFlight.count
        let n = min(room, inFlight.count)
        guard n > 0 else { return }
        peerBuffer.append(contentsOf: inFlight[..<n])
        inFlight.removeFirst(n)
        bytesSentTotal += n
        if notify && inFlight.isEmpty && pending.isEmpty {
            drainPending = true
            loop.queueInput(self)
        }
    }

    private func afterDrain() {
        if shutdownRequested {
            closeNow(.closedAfterFlush, nil)
        } else {
            onDrain?()
        }
    }

    private func closeNow(_ reason: CloseReason, _ error: TransportError?) {
        guard !isClosed else { return }
        isClosed = true
        closeReason = reason
        pending = []
        inFlight = []
        isReading = false
        closeDeadline?.cancel()
        closeDeadline = nil
        let cb = onClose
        onClose = nil
        onRead = nil
        onDrain = nil
        cb?(error)
    }
}
