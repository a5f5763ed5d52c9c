import Foundation
import LiveBusCore
import LiveBusLoop

// The daemon's libuv adapter: `LiveBusLoop`'s loop, connections and timers serve the bus through the core's
// transport seam (`BusLoop`, `BusConnection`, `BusTimer`; LiveBusCore/Transport.swift). The same bus logic runs on
// `EmbeddedLoop` in tests.

extension EventLoop: BusLoop {
    /// CPU time of the loop's thread, nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): the per-turn budget counts the work
    /// done, not the time the machine gave to other processes.
    public func cpuNanoseconds() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
    }

    @discardableResult
    public func scheduleTimer(after milliseconds: UInt64, repeat: UInt64, _ body: @escaping () -> Void)
        -> any BusTimer
    {
        schedule(after: milliseconds, repeat: `repeat`, body)
    }
}

extension LoopTimer: BusTimer {}

extension Connection: BusConnection {
    public var peerUserID: UInt32? { peerCredentials?.uid }

    public func setHandlers(
        onRead: @escaping (UnsafeRawBufferPointer) -> Void,
        onClose: @escaping (TransportError?) -> Void,
        onDrain: @escaping () -> Void
    ) {
        self.onRead = onRead
        self.onClose = { e in onClose(e.map { TransportError(name: $0.name, message: $0.message) }) }
        self.onDrain = onDrain
    }

    public func resumeReading() throws(TransportError) {
        do {
            try startReading()
        } catch {
            throw TransportError(name: error.name, message: error.message)
        }
    }
}
