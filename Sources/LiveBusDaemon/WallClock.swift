import Foundation
import LiveBusClock

/// The daemon's real wall clock (`CLOCK_REALTIME`), in milliseconds since the Unix epoch.
///
/// Only instants shown to people and sent on the wire use it; durations and timers use the loop's
/// monotonic clock, so a wall-clock jump (libfaketime) disconnects nobody.
public struct SystemServerClock: ServerClock {
    /// Creates the clock.
    public init() {}

    /// The current wall-clock instant.
    public func now() -> ServerInstant {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ServerInstant(millisecondsSinceEpoch: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }
}
