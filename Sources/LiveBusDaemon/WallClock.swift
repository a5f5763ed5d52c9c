import Foundation
import LiveBusClock

/// The host's wall clock (`CLOCK_REALTIME`), in milliseconds since the Unix epoch.
///
/// The phones' "true" clock in tests, the demo and `livebus attach` (a simulated phone's clock is this plus its skew
/// and drift). The daemon does not use it directly: see ``AnchoredServerClock``.
public struct SystemServerClock: ServerClock {
    /// Creates the clock.
    public init() {}

    /// The current wall-clock instant.
    public func now() -> ServerInstant {
        ServerInstant(millisecondsSinceEpoch: AnchoredServerClock.read(CLOCK_REALTIME) / 1_000_000)
    }
}

/// The daemon's server clock: the host's wall clock read once at start, then advanced by the monotonic clock
/// (`CLOCK_MONOTONIC`), in milliseconds since the Unix epoch.
///
/// A step of the host's wall clock (an NTP correction, `date -s`, libfaketime) therefore moves nothing the daemon
/// hands out: countdown targets, stale dates, PONG timestamps and the simulator's schedule stay on one timeline, so
/// no phone sees a false clock step and no session is disconnected. Slewing (NTP's gradual correction) applies to
/// both clocks alike, so the two agree to well under a millisecond per hour until the wall clock is stepped.
/// ``wallClockOffsetMilliseconds()`` says how far the host's wall clock has moved away; the daemon logs each step.
/// A restart adopts the host's wall clock as it is then.
/// - Note: Source: issue 7 ("running it under libfaketime … must disconnect nobody (keepalives and timers use
///   monotonic time)"); clock_gettime(2) on CLOCK_MONOTONIC ("not affected by discontinuous jumps in the system time").
public struct AnchoredServerClock: ServerClock {
    /// The wall-clock reading at the anchor, nanoseconds since the Unix epoch.
    public let anchorWallNanoseconds: Int64
    /// The monotonic reading at the anchor, nanoseconds.
    public let anchorMonotonicNanoseconds: Int64

    /// Reads both clocks now and anchors this clock's timeline there.
    public init() {
        self.init(wallNanoseconds: Self.read(CLOCK_REALTIME), monotonicNanoseconds: Self.read(CLOCK_MONOTONIC))
    }

    /// Anchors the timeline at given readings (for tests).
    /// - Parameters:
    ///   - wallNanoseconds: Wall-clock nanoseconds since the Unix epoch at the anchor.
    ///   - monotonicNanoseconds: The monotonic clock's nanoseconds at the same moment.
    public init(wallNanoseconds: Int64, monotonicNanoseconds: Int64) {
        anchorWallNanoseconds = wallNanoseconds
        anchorMonotonicNanoseconds = monotonicNanoseconds
    }

    /// The current instant: the anchor's wall time plus the monotonic time elapsed since.
    public func now() -> ServerInstant { instant(atMonotonic: Self.read(CLOCK_MONOTONIC)) }

    /// The instant at a given monotonic reading.
    /// - Parameter monotonicNanoseconds: A `CLOCK_MONOTONIC` reading, nanoseconds.
    /// - Returns: Server clock, milliseconds since the Unix epoch (rounded down).
    public func instant(atMonotonic monotonicNanoseconds: Int64) -> ServerInstant {
        let ns = anchorWallNanoseconds + (monotonicNanoseconds - anchorMonotonicNanoseconds)
        return ServerInstant(millisecondsSinceEpoch: ns.dividedRoundingDown(by: 1_000_000))
    }

    /// How far the host's wall clock is from this clock now, in milliseconds (positive: the wall clock is ahead).
    /// Near 0 until the wall clock is stepped.
    public func wallClockOffsetMilliseconds() -> Int64 {
        let wall = Self.read(CLOCK_REALTIME)
        let mine = anchorWallNanoseconds + (Self.read(CLOCK_MONOTONIC) - anchorMonotonicNanoseconds)
        return (wall - mine) / 1_000_000
    }

    static func read(_ id: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(id, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

extension Int64 {
    fileprivate func dividedRoundingDown(by d: Int64) -> Int64 {
        let q = self / d
        return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
    }
}
