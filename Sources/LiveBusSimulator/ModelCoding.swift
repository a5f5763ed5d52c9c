import Foundation
import LiveBusClock

// JSON forms of the model types, the 4 KB content-state rule, and the simulator's error type.
//
// Instants are encoded as integer milliseconds since the Unix epoch on the server clock, in keys whose name ends
// in `Ms` (`etaTargetMs`, `lastConfirmedMs`, …), so the unit and the clock are never ambiguous. This is the
// simulator's canonical form: it is what the 4 KB check measures and what `savedState()` stores. The wire
// protocol may carry the same values in its own encoding.

extension Coordinate {
    /// `true` when latitude is within −90…90 and longitude within −180…180 (and both are finite).
    public var isValid: Bool {
        latitude.isFinite && longitude.isFinite && (-90...90).contains(latitude) && (-180...180).contains(longitude)
    }
}

extension ContentState: Codable {
    private enum CodingKeys: String, CodingKey {
        case status, summary, etaTargetMs, progress, riderPosition, lastConfirmedMs
    }

    /// Decodes a content state from its canonical JSON form (instants as `…Ms` integers).
    ///
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError` when a key is missing or has the wrong type.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let status = try c.decode(OrderStatus.self, forKey: .status)
        self.init(
            status: status,
            etaTarget: ServerInstant(millisecondsSinceEpoch: try c.decode(Int64.self, forKey: .etaTargetMs)),
            progress: try c.decode(Double.self, forKey: .progress),
            riderPosition: try c.decodeIfPresent(Coordinate.self, forKey: .riderPosition),
            lastConfirmed: ServerInstant(millisecondsSinceEpoch: try c.decode(Int64.self, forKey: .lastConfirmedMs)),
            summary: try c.decodeIfPresent(CustomerSummary.self, forKey: .summary)
        )
    }

    /// Encodes the content state in its canonical JSON form.
    ///
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: Whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(summary, forKey: .summary)
        try c.encode(etaTarget.millisecondsSinceEpoch, forKey: .etaTargetMs)
        try c.encode(progress, forKey: .progress)
        try c.encodeIfPresent(riderPosition, forKey: .riderPosition)
        try c.encode(lastConfirmed.millisecondsSinceEpoch, forKey: .lastConfirmedMs)
    }

    /// The largest JSON-encoded content state Apple accepts, in bytes.
    ///
    /// - Note: Source: "The dynamic data of a Live Activity that's encoded by `ContentState` can't exceed 4KB."
    ///   https://developer.apple.com/documentation/activitykit/activityattributes/contentstate
    ///   (../shared/reference/live-activities.md §1.6).
    public static let maximumEncodedBytes = 4096

    /// The canonical JSON encoding (sorted keys) of this content state.
    public func encodedJSON() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings, numbers and nested structs cannot fail; an empty result would fail the size check.
        return (try? [UInt8](encoder.encode(self))) ?? []
    }

    /// The size of ``encodedJSON()`` in bytes.
    public var encodedSize: Int { encodedJSON().count }

    /// Checks the 4 KB rule.
    ///
    /// - Throws: ``SimulatorError`` with code ``SimulatorError/Code/contentStateTooLarge`` when the canonical JSON
    ///   encoding is larger than ``maximumEncodedBytes`` (4096) bytes.
    /// - Note: Source: ../shared/reference/live-activities.md §1.6.
    public func validateSize() throws(SimulatorError) {
        let size = encodedSize
        if size > Self.maximumEncodedBytes {
            throw SimulatorError(
                code: .contentStateTooLarge,
                message: "content state is \(size) bytes as JSON, more than Apple's \(Self.maximumEncodedBytes)-byte "
                    + "limit; shorten the summary texts"
            )
        }
    }

    /// The largest this content state can become as the simulator updates it: every instant at 13 digits or more,
    /// progress with 17 significant digits, a rider position with 17-digit coordinates. Used to reject oversized
    /// summaries when an order is created, before any event is emitted.
    public static func worstCaseSize(summary: CustomerSummary) -> Int {
        var largest = 0
        for status in OrderStatus.allCases {
            let state = ContentState(
                status: status,
                etaTarget: ServerInstant(millisecondsSinceEpoch: -999_999_999_999_999),
                progress: 0.123_456_789_012_345_67,
                riderPosition: Coordinate(latitude: -89.123_456_789_012_34, longitude: -179.123_456_789_012_34),
                lastConfirmed: ServerInstant(millisecondsSinceEpoch: -999_999_999_999_999),
                summary: summary
            )
            largest = max(largest, state.encodedSize)
        }
        return largest
    }
}

extension OrderEvent: Codable {
    private enum CodingKeys: String, CodingKey {
        case orderID, event, timestampMs, contentState, staleDateMs, relevanceScore, dismissalDateMs, priority
    }

    /// Decodes an event from its canonical JSON form (instants as `…Ms` integers).
    ///
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError` when a key is missing or has the wrong type.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            orderID: try c.decode(String.self, forKey: .orderID),
            event: try c.decode(ActivityEventKind.self, forKey: .event),
            timestamp: ServerInstant(millisecondsSinceEpoch: try c.decode(Int64.self, forKey: .timestampMs)),
            contentState: try c.decode(ContentState.self, forKey: .contentState),
            staleDate: try c.decodeIfPresent(Int64.self, forKey: .staleDateMs).map {
                ServerInstant(millisecondsSinceEpoch: $0)
            },
            relevanceScore: try c.decode(Double.self, forKey: .relevanceScore),
            dismissalDate: try c.decodeIfPresent(Int64.self, forKey: .dismissalDateMs).map {
                ServerInstant(millisecondsSinceEpoch: $0)
            },
            priority: try c.decode(Int.self, forKey: .priority)
        )
    }

    /// Encodes the event in its canonical JSON form.
    ///
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: Whatever the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(orderID, forKey: .orderID)
        try c.encode(event, forKey: .event)
        try c.encode(timestamp.millisecondsSinceEpoch, forKey: .timestampMs)
        try c.encode(contentState, forKey: .contentState)
        try c.encodeIfPresent(staleDate?.millisecondsSinceEpoch, forKey: .staleDateMs)
        try c.encode(relevanceScore, forKey: .relevanceScore)
        try c.encodeIfPresent(dismissalDate?.millisecondsSinceEpoch, forKey: .dismissalDateMs)
        try c.encode(priority, forKey: .priority)
    }
}

/// An error from the delivery simulator: a code to switch on and a message that says what to do.
public struct SimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. A struct over a private enum, so codes can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case duplicateOrder, invalidRequest, contentStateTooLarge, corruptState
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// An order with this id already exists.
        public static let duplicateOrder = Code(.duplicateOrder)
        /// The request has an impossible value (coordinate out of range, empty or unsafe id, …).
        public static let invalidRequest = Code(.invalidRequest)
        /// A content state would be larger than 4096 bytes as JSON.
        public static let contentStateTooLarge = Code(.contentStateTooLarge)
        /// Saved state could not be decoded or has an unknown format version.
        public static let corruptState = Code(.corruptState)

        public var description: String { wrapped.rawValue }
    }

    /// The error code.
    public var code: Code
    /// A human-readable message that says what to do.
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
