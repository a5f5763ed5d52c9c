import LiveBusClock
import LiveBusSimulator

/// Why a push payload was rejected: a code, the field it concerns (a dotted path such as
/// `aps.content-state.etaEnd`) and what to do. Its description reads `aps.content-state.etaEnd: ...`.
public struct PushPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Hashable, Sendable {
            case payloadTooLarge, contentStateTooLarge, malformedJSON, missingField, wrongType, invalidValue
            case ambiguousDate
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The payload is over 4096 bytes (APNs answers 413 PayloadTooLarge).
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// The content state is over 4096 bytes.
        public static let contentStateTooLarge = Code(.contentStateTooLarge)
        /// The bytes are not one JSON value.
        public static let malformedJSON = Code(.malformedJSON)
        /// A required field is missing.
        public static let missingField = Code(.missingField)
        /// A field has the wrong JSON type.
        public static let wrongType = Code(.wrongType)
        /// A field has a value outside what is allowed.
        public static let invalidValue = Code(.invalidValue)
        /// A date cannot be read unambiguously (for example Unix seconds inside the content state).
        public static let ambiguousDate = Code(.ambiguousDate)

        public var description: String { wrapped.rawValue }
    }

    /// The error code.
    public var code: Code
    /// The field, as a dotted path from the top-level object (`payload` for the whole body).
    public var field: String
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(code: Code, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}

/// The `alert` of a push: shown as the expanded presentation or a banner. Required for `start`.
public struct PushAlert: Sendable, Equatable {
    /// The title, if any.
    public var title: String?
    /// The body, if any (a plain-string `alert` is read as the body).
    public var body: String?

    /// Creates an alert.
    public init(title: String?, body: String?) {
        self.title = title
        self.body = body
    }
}

/// A Live Activity push payload in Apple's APNs JSON form, as `xcrun simctl push` accepts it.
///
/// Shape: a top-level object with an `aps` object and an optional `"Simulator Target Bundle"` string, at most 4096
/// bytes. In `aps`: `timestamp` (required), `event` (`start`, `update`, `end`; required), `content-state`
/// (required: Apple asks to always pass the final content, also on `end`), `stale-date`, `dismissal-date`,
/// `relevance-score`, `alert` (required for `start`, with `attributes-type` and `attributes`). Unknown keys are
/// ignored, as APNs and `JSONDecoder` ignore them.
///
/// How dates are read:
/// - `aps.timestamp`, `aps.stale-date`, `aps.dismissal-date` are Unix seconds (a JSON number; fractions are kept to
///   the millisecond). A value below 1 000 000 000 (before 2001-09-09) is refused as ambiguous (it looks like seconds
///   since 2001), and so is one of 100 000 000 000 or more (it looks like milliseconds).
/// - Dates inside `content-state` follow `JSONDecoder`'s default `.deferredToDate` strategy: a JSON number of seconds
///   since 2001-01-01T00:00:00Z (Unix seconds − 978 307 200). A number of 1 000 000 000 or more (after 2032-09-09) is
///   refused as ambiguous because it is almost surely Unix seconds or milliseconds; a negative one (before 2001) and a
///   string (ISO 8601 is not the default strategy) are refused too. Fractions are rounded to the millisecond.
///
/// Content state fields (the LiveBus `ContentState`): `status` (an ``OrderStatus`` raw value, required), `etaEnd`
/// (Date, required), `progress` (0…1, default 0), `lastConfirmed` (Date, default `aps.timestamp`), `riderPosition`
/// (`{"latitude": Double, "longitude": Double}`, optional), `summary` (`{"ko", "en", "detailKo", "detailEn"}` strings,
/// each optional, defaulting to the status's wording).
///
/// - Note: Source: reference/live-activities.md §1.9, §2.2, §2.8 ;
///   https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications
public struct APNsPayload: Sendable, Equatable {
    /// Seconds from the Unix epoch to 2001-01-01T00:00:00Z, Foundation's reference date.
    public static let referenceDateUnixSeconds: Int64 = 978_307_200

    /// The `"Simulator Target Bundle"` key, if present.
    public var simulatorTargetBundle: String?
    /// `aps.timestamp`, server (provider) clock.
    public var timestamp: ServerInstant
    /// `aps.event`.
    public var event: ActivityEventKind
    /// `aps.content-state`, its instants on the server (provider) clock.
    public var contentState: ContentState
    /// The size of `aps.content-state` as sent, in bytes.
    public var contentStateByteCount: Int
    /// `aps.stale-date`, server clock, or `nil`.
    public var staleDate: ServerInstant?
    /// `aps.dismissal-date`, server clock, or `nil` (meaningful with `end`; ignored otherwise).
    public var dismissalDate: ServerInstant?
    /// `aps.relevance-score`, or `nil`.
    public var relevanceScore: Double?
    /// `aps.alert`, or `nil`.
    public var alert: PushAlert?
    /// `aps.attributes-type` (start only), or `nil`.
    public var attributesType: String?
    /// The whole payload's size in bytes.
    public var byteCount: Int

    /// Parses and checks a payload.
    /// - Parameter bytes: The payload, UTF-8 JSON.
    /// - Returns: The payload.
    /// - Throws: ``PushPayloadError`` naming the field: `payloadTooLarge` (over 4096 bytes), `malformedJSON`,
    ///   `missingField`, `wrongType`, `invalidValue`, `ambiguousDate`, `contentStateTooLarge`.
    /// - Note: Source: https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
    ///   (4096 bytes), reference/live-activities.md §2.8 (`simctl push` rules).
    public static func parse(_ bytes: [UInt8]) throws(PushPayloadError) -> APNsPayload {
        guard bytes.count <= ActivityLimits.payloadBytes else {
            throw PushPayloadError(
                code: .payloadTooLarge,
                field: "payload",
                message:
                    "\(bytes.count) bytes is over the 4096-byte limit (APNs answers 413 PayloadTooLarge); send less"
            )
        }
        let root: JSONValue
        do {
            root = try JSONReader.parse(bytes)
        } catch {
            throw PushPayloadError(
                code: .malformedJSON,
                field: error.path.isEmpty ? "payload" : error.path,
                message: "not valid JSON at byte \(error.offset): \(error.message)"
            )
        }
        guard case .object = root else {
            throw PushPayloadError(
                code: .wrongType,
                field: "payload",
                message: "the payload must contain an object at the top level, found \(root.typeName)"
            )
        }
        var bundle: String?
        if let (value, _) = root.member("Simulator Target Bundle") {
            bundle = try string(value, "Simulator Target Bundle")
        }
        guard let (aps, _) = root.member("aps") else {
            throw PushPayloadError(
                code: .missingField,
                field: "aps",
                message: "the payload must contain an \"aps\" object with the Live Activity fields"
            )
        }
        guard case .object = aps else {
            throw PushPayloadError(code: .wrongType, field: "aps", message: "must be an object, found \(aps.typeName)")
        }
        let timestamp = try unixDate(required(aps, "timestamp"), "aps.timestamp")
        let eventText = try string(required(aps, "event"), "aps.event")
        guard let event = ActivityEventKind(rawValue: eventText) else {
            throw PushPayloadError(
                code: .invalidValue,
                field: "aps.event",
                message: "\"\(eventText)\" is not an event; use start, update or end"
            )
        }
        guard let (contentValue, contentRange) = aps.member("content-state") else {
            throw PushPayloadError(
                code: .missingField,
                field: "aps.content-state",
                message: "required for \(event.rawValue); pass the full content state (also the final one on end)"
            )
        }
        guard contentRange.count <= ActivityLimits.contentStateBytes else {
            throw PushPayloadError(
                code: .contentStateTooLarge,
                field: "aps.content-state",
                message: "\(contentRange.count) bytes is over the 4 KB content state limit; send less"
            )
        }
        let content = try contentState(contentValue, timestamp: timestamp)
        let staleDate = try aps.member("stale-date").map { v, _ throws(PushPayloadError) in
            try unixDate(v, "aps.stale-date")
        }
        let dismissalDate = try aps.member("dismissal-date").map { v, _ throws(PushPayloadError) in
            try unixDate(v, "aps.dismissal-date")
        }
        let relevance = try aps.member("relevance-score").map { v, _ throws(PushPayloadError) in
            try number(v, "aps.relevance-score")
        }
        let alert = try aps.member("alert").map { v, _ throws(PushPayloadError) in try pushAlert(v) }
        var attributesType: String?
        if event == .start {
            guard alert != nil else {
                throw PushPayloadError(code: .missingField, field: "aps.alert", message: "required for a start event")
            }
            attributesType = try string(required(aps, "attributes-type"), "aps.attributes-type")
            let attributes = try required(aps, "attributes")
            guard case .object = attributes else {
                throw PushPayloadError(
                    code: .wrongType,
                    field: "aps.attributes",
                    message: "must be an object, found \(attributes.typeName)"
                )
            }
        }
        return APNsPayload(
            simulatorTargetBundle: bundle,
            timestamp: timestamp,
            event: event,
            contentState: content,
            contentStateByteCount: contentRange.count,
            staleDate: staleDate,
            dismissalDate: dismissalDate,
            relevanceScore: relevance,
            alert: alert,
            attributesType: attributesType,
            byteCount: bytes.count
        )
    }

    /// The update this push means for `orderID`, with `toClient` converting server instants to the client's clock.
    /// - Parameters:
    ///   - orderID: The order whose activity the push targets (the push token's activity).
    ///   - toClient: Converts a server instant to the client's clock.
    /// - Returns: The update (relevance score 0 when the push has none).
    public func activityUpdate(orderID: String, toClient: (ServerInstant) -> ClientInstant) -> ActivityUpdate {
        ActivityUpdate(
            orderID: orderID,
            event: event,
            timestamp: timestamp,
            timestampInClientClock: toClient(timestamp),
            content: contentState,
            etaTarget: toClient(contentState.etaTarget),
            staleDate: staleDate.map(toClient),
            dismissalDate: event == .end ? dismissalDate.map(toClient) : nil,
            relevanceScore: relevanceScore ?? 0,
            lastConfirmed: toClient(contentState.lastConfirmed),
            contentStateByteCount: contentStateByteCount
        )
    }

    // MARK: - Field readers

    private static func required(_ object: JSONValue, _ key: String) throws(PushPayloadError) -> JSONValue {
        guard let (value, _) = object.member(key) else {
            throw PushPayloadError(code: .missingField, field: "aps.\(key)", message: "required")
        }
        return value
    }

    private static func string(_ value: JSONValue, _ field: String) throws(PushPayloadError) -> String {
        guard case .string(let text) = value else {
            throw PushPayloadError(code: .wrongType, field: field, message: "must be a string, found \(value.typeName)")
        }
        return text
    }

    private static func number(_ value: JSONValue, _ field: String) throws(PushPayloadError) -> Double {
        guard case .number(let number, _) = value else {
            throw PushPayloadError(code: .wrongType, field: field, message: "must be a number, found \(value.typeName)")
        }
        return number
    }

    /// Unix seconds (aps dates) to a server instant.
    private static func unixDate(_ value: JSONValue, _ field: String) throws(PushPayloadError) -> ServerInstant {
        let seconds = try number(value, field)
        guard seconds >= 1_000_000_000 else {
            throw PushPayloadError(
                code: .ambiguousDate,
                field: field,
                message:
                    "\(formatSeconds(seconds)) is before 2001-09-09 as Unix seconds; aps dates are Unix seconds "
                    + "(seconds since 1970), not seconds since 2001"
            )
        }
        guard seconds < 100_000_000_000 else {
            throw PushPayloadError(
                code: .ambiguousDate,
                field: field,
                message: "\(formatSeconds(seconds)) looks like milliseconds; aps dates are Unix seconds"
            )
        }
        return ServerInstant(millisecondsSinceEpoch: Int64((seconds * 1000).rounded()))
    }

    /// Seconds since 2001-01-01 (content-state dates, default `JSONDecoder` strategy) to a server instant.
    private static func referenceDate(_ value: JSONValue, _ field: String) throws(PushPayloadError) -> ServerInstant {
        guard case .number(let seconds, _) = value else {
            let hint =
                if case .string = value {
                    "; a string (ISO 8601) is not read by the default JSON decoding, send seconds since 2001-01-01"
                } else { "" }
            throw PushPayloadError(
                code: .wrongType,
                field: field,
                message: "a Date must be a number of seconds since 2001-01-01, found \(value.typeName)\(hint)"
            )
        }
        guard seconds >= 0 else {
            throw PushPayloadError(
                code: .ambiguousDate,
                field: field,
                message: "\(formatSeconds(seconds)) is before 2001-01-01; send seconds since 2001-01-01"
            )
        }
        guard seconds < 1_000_000_000 else {
            let unixHint = Int64(saturating: seconds).saturatingSubtracting(referenceDateUnixSeconds)
            throw PushPayloadError(
                code: .ambiguousDate,
                field: field,
                message:
                    "\(formatSeconds(seconds)) looks like Unix seconds (or milliseconds); content-state dates are "
                    + "seconds since 2001-01-01 (Unix − 978307200), e.g. \(unixHint)"
            )
        }
        let unixMilliseconds = Int64((seconds * 1000).rounded()) + referenceDateUnixSeconds * 1000
        return ServerInstant(millisecondsSinceEpoch: unixMilliseconds)
    }

    private static func formatSeconds(_ seconds: Double) -> String {
        if seconds == seconds.rounded(), abs(seconds) < 1e15 { return String(Int64(seconds)) }
        return String(seconds)
    }

    private static func contentState(_ value: JSONValue, timestamp: ServerInstant) throws(PushPayloadError)
        -> ContentState
    {
        let base = "aps.content-state"
        guard case .object = value else {
            throw PushPayloadError(code: .wrongType, field: base, message: "must be an object, found \(value.typeName)")
        }
        guard let (statusValue, _) = value.member("status") else {
            throw PushPayloadError(code: .missingField, field: "\(base).status", message: "required")
        }
        let statusText = try string(statusValue, "\(base).status")
        guard let status = OrderStatus(rawValue: statusText) else {
            let allowed = OrderStatus.allCases.map(\.rawValue).joined(separator: ", ")
            throw PushPayloadError(
                code: .invalidValue,
                field: "\(base).status",
                message: "\"\(statusText)\" is not a status; use one of \(allowed)"
            )
        }
        guard let (etaValue, _) = value.member("etaEnd") else {
            throw PushPayloadError(code: .missingField, field: "\(base).etaEnd", message: "required")
        }
        let eta = try referenceDate(etaValue, "\(base).etaEnd")
        var progress = 0.0
        if let (progressValue, _) = value.member("progress"), progressValue != .null {
            progress = try number(progressValue, "\(base).progress")
            guard (0...1).contains(progress) else {
                throw PushPayloadError(
                    code: .invalidValue,
                    field: "\(base).progress",
                    message: "\(progress) is outside 0…1"
                )
            }
        }
        var lastConfirmed = timestamp
        if let (confirmedValue, _) = value.member("lastConfirmed"), confirmedValue != .null {
            lastConfirmed = try referenceDate(confirmedValue, "\(base).lastConfirmed")
        }
        var rider: Coordinate?
        if let (riderValue, _) = value.member("riderPosition"), riderValue != .null {
            guard case .object = riderValue else {
                throw PushPayloadError(
                    code: .wrongType,
                    field: "\(base).riderPosition",
                    message: "must be an object with latitude and longitude, found \(riderValue.typeName)"
                )
            }
            func degrees(_ key: String, _ limit: Double) throws(PushPayloadError) -> Double {
                guard let (v, _) = riderValue.member(key) else {
                    throw PushPayloadError(
                        code: .missingField,
                        field: "\(base).riderPosition.\(key)",
                        message: "required"
                    )
                }
                let d = try number(v, "\(base).riderPosition.\(key)")
                guard abs(d) <= limit else {
                    throw PushPayloadError(
                        code: .invalidValue,
                        field: "\(base).riderPosition.\(key)",
                        message: "\(d) is outside ±\(Int(limit)) degrees"
                    )
                }
                return d
            }
            rider = Coordinate(latitude: try degrees("latitude", 90), longitude: try degrees("longitude", 180))
        }
        var summary = CustomerSummary(status: status)
        if let (summaryValue, _) = value.member("summary"), summaryValue != .null {
            guard case .object = summaryValue else {
                throw PushPayloadError(
                    code: .wrongType,
                    field: "\(base).summary",
                    message: "must be an object with ko, en, detailKo, detailEn, found \(summaryValue.typeName)"
                )
            }
            func line(_ key: String, _ fallback: String) throws(PushPayloadError) -> String {
                guard let (v, _) = summaryValue.member(key), v != .null else { return fallback }
                return try string(v, "\(base).summary.\(key)")
            }
            summary = CustomerSummary(
                ko: try line("ko", summary.ko),
                en: try line("en", summary.en),
                detailKo: try line("detailKo", summary.detailKo),
                detailEn: try line("detailEn", summary.detailEn)
            )
        }
        return ContentState(
            status: status,
            etaTarget: eta,
            progress: progress,
            riderPosition: rider,
            lastConfirmed: lastConfirmed,
            summary: summary
        )
    }

    private static func pushAlert(_ value: JSONValue) throws(PushPayloadError) -> PushAlert {
        switch value {
        case .string(let body): return PushAlert(title: nil, body: body)
        case .object:
            let title = try value.member("title").map { v, _ throws(PushPayloadError) in
                try string(v, "aps.alert.title")
            }
            let body = try value.member("body").map { v, _ throws(PushPayloadError) in try string(v, "aps.alert.body") }
            return PushAlert(title: title, body: body)
        default:
            throw PushPayloadError(
                code: .wrongType,
                field: "aps.alert",
                message: "must be an object with title and body (or a string), found \(value.typeName)"
            )
        }
    }
}

/// The content state as JSON in ActivityKit's default encoding (dates as seconds since 2001-01-01), the form a push
/// carries; its byte count is what the 4 KB limit applies to.
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/activityattributes/contentstate
public enum ContentStateJSON {
    /// Encodes a content state: `{"status":…,"etaEnd":…,"progress":…,"lastConfirmed":…}`, plus `riderPosition`
    /// when set and `summary` when it differs from the status's default wording.
    /// - Parameter state: The content state (server clock instants).
    /// - Returns: UTF-8 JSON bytes.
    public static func encode(_ state: ContentState) -> [UInt8] {
        var text = "{\"status\":\"\(state.status.rawValue)\",\"etaEnd\":\(referenceSeconds(state.etaTarget))"
        text += ",\"progress\":\(number(state.progress))"
        text += ",\"lastConfirmed\":\(referenceSeconds(state.lastConfirmed))"
        if let rider = state.riderPosition {
            text +=
                ",\"riderPosition\":{\"latitude\":\(number(rider.latitude)),\"longitude\":\(number(rider.longitude))}"
        }
        let summary = state.summary
        if summary != CustomerSummary(status: state.status) {
            text += ",\"summary\":{\"ko\":\(quoted(summary.ko)),\"en\":\(quoted(summary.en))"
            text += ",\"detailKo\":\(quoted(summary.detailKo)),\"detailEn\":\(quoted(summary.detailEn))}"
        }
        text += "}"
        return Array(text.utf8)
    }

    /// A JSON string literal (RFC 8259 §7): quotes, backslashes and control characters escaped.
    /// - Parameter value: The string.
    /// - Returns: The literal, quotes included.
    public static func quoted(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Seconds since 2001-01-01 of a server instant, as JSON text with up to millisecond precision.
    /// - Parameter instant: Server clock.
    /// - Returns: For example `788919600` or `788919600.25`.
    public static func referenceSeconds(_ instant: ServerInstant) -> String {
        let milliseconds = instant.millisecondsSinceEpoch - APNsPayload.referenceDateUnixSeconds * 1000
        let sign = milliseconds < 0 ? "-" : ""
        let magnitude = milliseconds.magnitude
        let whole = magnitude / 1000
        let fraction = magnitude % 1000
        if fraction == 0 { return "\(sign)\(whole)" }
        var digits = String(fraction)
        while digits.count < 3 { digits = "0" + digits }
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(sign)\(whole).\(digits)"
    }

    private static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
