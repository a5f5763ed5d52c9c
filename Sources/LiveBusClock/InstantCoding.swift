/// `Codable` for the instant types: each encodes as one integer, milliseconds since the Unix epoch on its own clock.
///
/// The clock is not written: the field name says it (`CLOCKSYNC.md` lists every clock-bearing field).
/// - Note: Source: ../shared/DESIGN.md "Clocks and units" (one unit for instants: milliseconds as Int64).
extension ServerInstant: Codable {
    /// Decodes an instant from a single integer, milliseconds since the Unix epoch, server clock.
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError` when the value is not an integer.
    public init(from decoder: any Decoder) throws {
        self.init(millisecondsSinceEpoch: try decoder.singleValueContainer().decode(Int64.self))
    }

    /// Encodes this instant as a single integer, milliseconds since the Unix epoch, server clock.
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: Whatever `encoder` throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(millisecondsSinceEpoch)
    }
}

extension ClientInstant: Codable {
    /// Decodes an instant from a single integer, milliseconds since the Unix epoch, client clock.
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError` when the value is not an integer.
    public init(from decoder: any Decoder) throws {
        self.init(millisecondsSinceEpoch: try decoder.singleValueContainer().decode(Int64.self))
    }

    /// Encodes this instant as a single integer, milliseconds since the Unix epoch, client clock.
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: Whatever `encoder` throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(millisecondsSinceEpoch)
    }
}
