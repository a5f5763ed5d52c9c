/// The range of instants and durations the protocol accepts, checked where they enter (the wire decoder, the
/// durable store's loader and the CLI), so that arithmetic on them (clock conversion, round trips, countdowns)
/// can never overflow.
///
/// An instant is milliseconds since the Unix epoch (on whichever clock its field names); the allowed range is
/// ±100 years of 365.25 days around 1970-01-01T00:00:00Z, that is ±3 155 760 000 000 ms (1870 … 2070). Any sum or
/// difference of a few such values fits in an `Int64` by a factor of more than a million.
/// - Note: Source: Protocol/PROTOCOL.md §3 "Instants and durations" (this constant is the one the document states).
public enum WireRange {
    /// The largest magnitude of an instant or a duration, in milliseconds: 100 years of 365.25 days.
    public static let instantLimitMilliseconds: Int64 = 3_155_760_000_000

    /// Allowed instants, milliseconds since the Unix epoch (either clock).
    public static let instants: ClosedRange<Int64> = -instantLimitMilliseconds...instantLimitMilliseconds

    /// Allowed durations (an uncertainty, a delay), milliseconds: not negative, at most 100 years.
    public static let durations: ClosedRange<Int64> = 0...instantLimitMilliseconds

    /// `value` clamped into ``instants``: what the daemon sends is always an allowed instant, also when a phone's
    /// clock is so far off that a converted instant would leave the range.
    /// - Parameter value: ms since the Unix epoch.
    /// - Returns: The nearest allowed instant.
    public static func clampInstant(_ value: Int64) -> Int64 {
        min(max(value, instants.lowerBound), instants.upperBound)
    }

    /// Checks one instant field.
    /// - Parameters:
    ///   - value: The field's value, ms since the Unix epoch; `nil` (an absent optional field) passes.
    ///   - field: The field's path in its body, e.g. `contentState.etaTarget`.
    ///   - body: The body's name for the message, e.g. `PUBLISH`.
    /// - Throws: ``WireError`` `invalidValue` naming the field, its value and the allowed range.
    public static func checkInstant(_ value: Int64?, field: String, in body: String) throws(WireError) {
        guard let value, !instants.contains(value) else { return }
        throw WireError(
            .invalidValue,
            "\(body) body: field '\(field)' is \(value) ms, outside the allowed instants "
                + "\(instants.lowerBound)…\(instants.upperBound) ms since the Unix epoch "
                + "(±100 years around 1970; PROTOCOL.md §3)"
        )
    }

    /// Checks one duration field.
    /// - Parameters:
    ///   - value: The field's value, ms; `nil` passes.
    ///   - field: The field's path in its body.
    ///   - body: The body's name for the message.
    /// - Throws: ``WireError`` `invalidValue` naming the field, its value and the allowed range.
    public static func checkDuration(_ value: Int64?, field: String, in body: String) throws(WireError) {
        guard let value, !durations.contains(value) else { return }
        throw WireError(
            .invalidValue,
            "\(body) body: field '\(field)' is \(value) ms, outside the allowed durations "
                + "0…\(durations.upperBound) ms (100 years; PROTOCOL.md §3)"
        )
    }
}

/// A decoded body whose values must be in range (``WireRange``): ``WireJSON/decode(_:from:)`` calls
/// ``validate()`` after decoding, so no out-of-range instant gets past the decoder.
public protocol WireValidated {
    /// Checks every instant and duration of the body.
    /// - Throws: ``WireError`` `invalidValue` naming the first field out of range.
    func validate() throws(WireError)
}

extension HelloBody: WireValidated {
    /// Checks `clientTime`.
    /// - Throws: ``WireError`` `invalidValue`.
    public func validate() throws(WireError) {
        try WireRange.checkInstant(clientTime, field: "clientTime", in: "HELLO")
    }
}

extension WelcomeBody: WireValidated {
    /// Checks `serverTime`.
    /// - Throws: ``WireError`` `invalidValue`.
    public func validate() throws(WireError) {
        try WireRange.checkInstant(serverTime, field: "serverTime", in: "WELCOME")
    }
}

extension PingBody: WireValidated {
    /// Checks `t1`.
    /// - Throws: ``WireError`` `invalidValue`.
    public func validate() throws(WireError) {
        try WireRange.checkInstant(t1, field: "t1", in: "PING")
    }
}

extension PongBody: WireValidated {
    /// Checks `t1`, `t2` and `t3`.
    /// - Throws: ``WireError`` `invalidValue` naming the first out of range.
    public func validate() throws(WireError) {
        try WireRange.checkInstant(t1, field: "t1", in: "PONG")
        try WireRange.checkInstant(t2, field: "t2", in: "PONG")
        try WireRange.checkInstant(t3, field: "t3", in: "PONG")
    }
}

extension EventBody: WireValidated {
    /// Checks every instant: `timestamp`, `staleDate`, `dismissalDate`, `contentState.etaTarget`,
    /// `contentState.lastConfirmed`, and the `client` block's instants and `uncertaintyMs`.
    /// - Throws: ``WireError`` `invalidValue` naming the first out of range.
    public func validate() throws(WireError) {
        let what = client == nil ? "PUBLISH" : "EVENT"
        try WireRange.checkInstant(timestamp, field: "timestamp", in: what)
        try WireRange.checkInstant(staleDate, field: "staleDate", in: what)
        try WireRange.checkInstant(dismissalDate, field: "dismissalDate", in: what)
        try WireRange.checkInstant(contentState.etaTarget, field: "contentState.etaTarget", in: what)
        try WireRange.checkInstant(contentState.lastConfirmed, field: "contentState.lastConfirmed", in: what)
        if let c = client {
            try WireRange.checkInstant(c.timestamp, field: "client.timestamp", in: what)
            try WireRange.checkInstant(c.etaTarget, field: "client.etaTarget", in: what)
            try WireRange.checkInstant(c.staleDate, field: "client.staleDate", in: what)
            try WireRange.checkInstant(c.dismissalDate, field: "client.dismissalDate", in: what)
            try WireRange.checkInstant(c.lastConfirmed, field: "client.lastConfirmed", in: what)
            try WireRange.checkDuration(Int64(c.uncertaintyMs), field: "client.uncertaintyMs", in: what)
        }
    }
}
