/// Instants of the three clocks LiveBus deals with, as distinct types.
///
/// A server instant cannot be shown on a client without an explicit conversion
/// (`ClockSync.toClient(_:now:)`), and neither can be confused with a monotonic
/// reading: mixing them is a compile error. Unit: milliseconds, as `Int64`.
/// Source: ../shared/DESIGN.md "Clocks and units".

/// An instant on the daemon's wall clock, in milliseconds since the Unix epoch (UTC).
public struct ServerInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z on the server's wall clock.
    public var millisecondsSinceEpoch: Int64

    /// Creates an instant from milliseconds since the Unix epoch on the server's wall clock.
    public init(millisecondsSinceEpoch: Int64) { self.millisecondsSinceEpoch = millisecondsSinceEpoch }

    public static func < (a: Self, b: Self) -> Bool { a.millisecondsSinceEpoch < b.millisecondsSinceEpoch }

    /// This instant moved by `milliseconds` (negative moves it back).
    public func advanced(byMilliseconds milliseconds: Int64) -> Self {
        Self(millisecondsSinceEpoch: millisecondsSinceEpoch + milliseconds)
    }

    /// Milliseconds from `self` to `other` (positive when `other` is later).
    public func milliseconds(to other: Self) -> Int64 { other.millisecondsSinceEpoch - millisecondsSinceEpoch }

    public var description: String { "server@\(millisecondsSinceEpoch)ms" }
}

/// An instant on one client's (possibly skewed and drifting) wall clock, in milliseconds since the Unix epoch
/// as that client's clock reads it.
public struct ClientInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z as the client's own wall clock reads it.
    public var millisecondsSinceEpoch: Int64

    /// Creates an instant from milliseconds since the Unix epoch on the client's wall clock.
    public init(millisecondsSinceEpoch: Int64) { self.millisecondsSinceEpoch = millisecondsSinceEpoch }

    public static func < (a: Self, b: Self) -> Bool { a.millisecondsSinceEpoch < b.millisecondsSinceEpoch }

    /// This instant moved by `milliseconds` (negative moves it back).
    public func advanced(byMilliseconds milliseconds: Int64) -> Self {
        Self(millisecondsSinceEpoch: millisecondsSinceEpoch + milliseconds)
    }

    /// Milliseconds from `self` to `other` (positive when `other` is later).
    public func milliseconds(to other: Self) -> Int64 { other.millisecondsSinceEpoch - millisecondsSinceEpoch }

    public var description: String { "client@\(millisecondsSinceEpoch)ms" }
}

/// A reading of a monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds from an arbitrary origin.
/// Only differences between two readings of the same process mean anything.
public struct MonotonicInstant: Hashable, Comparable, Sendable {
    /// Nanoseconds since an arbitrary, fixed origin.
    public var nanoseconds: UInt64

    /// Creates a reading from nanoseconds since the monotonic clock's origin.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    /// Milliseconds (fractional) from `self` to `later`.
    public func milliseconds(to later: Self) -> Double {
        (Double(later.nanoseconds) - Double(nanoseconds)) / 1_000_000
    }
}

/// A source of server instants. The daemon passes a wall clock; tests pass ``ManualServerClock``.
public protocol ServerClock: Sendable {
    /// The current instant on the server's wall clock.
    func now() -> ServerInstant
}

/// A source of client instants: the simulated phone's own clock.
public protocol ClientClock: Sendable {
    /// The current instant on this client's wall clock.
    func now() -> ClientInstant
}
