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

    /// This instant moved by `milliseconds` (negative moves it back); saturates at the ends of `Int64` instead of
    /// trapping (PROTOCOL.md §3 keeps instants far from them).
    public func advanced(byMilliseconds milliseconds: Int64) -> Self {
        Self(millisecondsSinceEpoch: millisecondsSinceEpoch.saturatingAdding(milliseconds))
    }

    /// Milliseconds from `self` to `other` (positive when `other` is later); saturates instead of trapping.
    public func milliseconds(to other: Self) -> Int64 {
        other.millisecondsSinceEpoch.saturatingSubtracting(millisecondsSinceEpoch)
    }

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

    /// This instant moved by `milliseconds` (negative moves it back); saturates at the ends of `Int64` instead of
    /// trapping (PROTOCOL.md §3 keeps instants far from them).
    public func advanced(byMilliseconds milliseconds: Int64) -> Self {
        Self(millisecondsSinceEpoch: millisecondsSinceEpoch.saturatingAdding(milliseconds))
    }

    /// Milliseconds from `self` to `other` (positive when `other` is later); saturates instead of trapping.
    public func milliseconds(to other: Self) -> Int64 {
        other.millisecondsSinceEpoch.saturatingSubtracting(millisecondsSinceEpoch)
    }

    public var description: String { "client@\(millisecondsSinceEpoch)ms" }
}

extension ServerInstant {
    /// This instant read on a clock `offsetMilliseconds` ahead of the server's (client − server, the clock
    /// estimate's offset), rounded to whole ms; saturates instead of trapping (a non-finite offset moves nothing).
    /// - Parameter offsetMilliseconds: The client's offset from the server clock, ms.
    /// - Returns: The instant on the client's clock, ms since the Unix epoch.
    public func toClientClock(offsetMilliseconds: Double) -> ClientInstant {
        ClientInstant(
            millisecondsSinceEpoch: millisecondsSinceEpoch.saturatingAdding(Int64(saturating: offsetMilliseconds))
        )
    }
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

/// Saturating arithmetic for instants and durations in milliseconds: a result past the ends of `Int64` is clamped to
/// the end instead of trapping. Instants that entered through the wire, the store or the CLI are within ±100 years
/// (PROTOCOL.md §3), so these only matter for values that escaped that check; they make sure none can crash.
extension Int64 {
    /// `self + other`, clamped to `Int64.min … Int64.max`.
    public func saturatingAdding(_ other: Int64) -> Int64 {
        let (r, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : r
    }

    /// `self − other`, clamped to `Int64.min … Int64.max`.
    public func saturatingSubtracting(_ other: Int64) -> Int64 {
        let (r, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : r
    }

    /// `self × other`, clamped to `Int64.min … Int64.max`.
    public func saturatingMultiplied(by other: Int64) -> Int64 {
        let (r, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) != (other < 0) ? .min : .max) : r
    }

    /// `value` rounded to the nearest integer and clamped to `Int64.min … Int64.max`; NaN gives 0.
    public init(saturating value: Double) {
        let r = value.rounded()
        if r.isNaN {
            self = 0
        } else if r >= 9_223_372_036_854_775_807.0 {
            self = .max
        } else if r <= -9_223_372_036_854_775_808.0 {
            self = .min
        } else {
            self = Int64(r)
        }
    }
}

extension Int {
    /// `value` rounded to the nearest integer and clamped to `Int.min … Int.max`; NaN gives 0.
    public init(saturating value: Double) { self = Int(Int64(saturating: value)) }
}
