import LiveBusClock
import LiveBusSimulator

/// Why a push payload was rejected: a code, the field it concerns (a dotted path such as
/// `aps.content-state.etaEnd`) and what to do. Its description reads `aps.content-state.etaEnd: ...`.
public struct PushPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Hashable, Sendable {
            case payloadTooLarge, contentStateTooLarge, malformedJSON, missingField, wrongType, invalidValue
            case keyNotFound, valueNotFound, typeMismatch, dataCorrupted
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
        /// The content state (or attributes) lacks a non-optional key (`DecodingError.keyNotFound`).
        public static let keyNotFound = Code(.keyNotFound)
        /// A non-optional content-state value is `null` (`DecodingError.valueNotFound`).
        public static let valueNotFound = Code(.valueNotFound)
        /// A content-state value has the wrong JSON type (`DecodingError.typeMismatch`).
        public static let typeMismatch = Code(.typeMismatch)
        /// A content-state value cannot be read (`DecodingError.dataCorrupted`: unknown enum raw value, bad ISO 8601).
        public static let dataCorrupted = Code(.dataCorrupted)

        public var description: String { wrapped.rawValue }
    }

    /// The error code.
    public var code: Code
    /// The field, as a dotted path from the top-level object (`payload` for the whole body).
    public var field: String
    /// What is wrong and what to do.
    public var message: String
    /// The lints found before the error (and, for malformed JSON, a comment or trailing comma with its position).
    public var lints: [PushLint] = []

    /// Creates an error.
    public init(code: Code, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// The error for a content state or attributes that did not decode.
    init(decoding failure: SchemaDecodingFailure) {
        let code: Code =
            switch failure.kind {
            case .keyNotFound: .keyNotFound
            case .valueNotFound: .valueNotFound
            case .typeMismatch: .typeMismatch
            case .dataCorrupted: .dataCorrupted
            }
        self.init(code: code, field: failure.field, message: failure.message)
        expectedType = failure.expected
    }

    /// For a decoding error, the type the app expects at ``field`` (`Date (seconds since 2001-01-01)`); else `nil`.
    public var expectedType: String?

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
/// How dates are read (exactly as the phone reads them, never refused; a value in another unit gets a lint naming the
/// value most likely meant, `Protocol/lints.json`):
/// - `aps.timestamp`, `aps.stale-date`, `aps.dismissal-date` are Unix seconds (a JSON number; fractions are kept to
///   the millisecond). A millisecond value is applied as seconds (tens of thousands of years ahead).
/// - Dates inside `content-state` follow the schema's decoding (``DateDecoding``); ActivityKit's default is
///   `.deferredToDate`, a JSON number of seconds since 2001-01-01T00:00:00Z (Unix seconds − 978 307 200), so Unix
///   seconds there are applied about 31 years late.
///
/// `content-state` is decoded with an ``ActivitySchema`` as `JSONDecoder` decodes the app's `ContentState`: unknown
/// keys ignored, a missing non-optional key or a type mismatch fails the decoding (the phone drops the update).
/// The built-in delivery schema (`Protocol/activity-schemas/delivery.json`): `status` (an ``OrderStatus`` raw value),
/// `etaEnd` (Date), `progress` (0…1, default 0), `lastConfirmed` (Date, default `aps.timestamp`), `riderPosition`
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
    /// The content state as the schema decoded it (every field, by JSON key).
    public var fields: SchemaValue = .none
    /// Every lint that applies to this payload, in the order found.
    public var lints: [PushLint] = []
    /// `true` when `aps.timestamp` was a millisecond value read as seconds (far in the future; see
    /// ``ActivityBoard/apply(_:at:)``).
    public var timestampReadFromMilliseconds = false

    /// Parses and checks a payload, decoding `content-state` (and a start's `attributes`) with `schema` as the app's
    /// `ContentState` decodes it.
    /// - Parameters:
    ///   - bytes: The payload, UTF-8 JSON.
    ///   - schema: The app's activity schema (default: the built-in delivery activity).
    /// - Returns: The payload, with every lint that applies in ``lints``.
    /// - Throws: ``PushPayloadError`` naming the field: `payloadTooLarge` (over 4096 bytes), `malformedJSON` (with
    ///   line and column, and a `jsonComment` or `jsonTrailingComma` lint), `missingField`, `wrongType`,
    ///   `invalidValue` (aps keys), `keyNotFound`, `valueNotFound`, `typeMismatch`, `dataCorrupted` (the content
    ///   state did not decode: the phone drops the update), `contentStateTooLarge`. The error carries the lints
    ///   found before it.
    /// - Note: Source: https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
    ///   (4096 bytes), reference/live-activities.md §2.2 (keys), §2.8 (`simctl push` rules), `Protocol/PROTOCOL.md` §9.6.
    public static func parse(_ bytes: [UInt8], schema: ActivitySchema = .delivery) throws(PushPayloadError)
        -> APNsPayload
    {
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
            let (line, column) = JSONReader.lineAndColumn(bytes, offset: error.offset)
            var failure = PushPayloadError(
                code: .malformedJSON,
                field: error.path.isEmpty ? "payload" : error.path,
                message: "not valid JSON at line \(line), column \(column) (byte \(error.offset)): \(error.message)"
            )
            failure.lints = JSONReader.commentAndTrailingCommaLints(bytes)
            throw failure
        }
        var lints: [PushLint] = []
        do {
            return try parse(root, bytes: bytes, schema: schema, lints: &lints)
        } catch {
            var failure = error
            failure.lints = lints + failure.lints
            throw failure
        }
    }

    /// The `aps` keys a Live Activity push reads (reference/live-activities.md §2.2; `sound` inside `alert`).
    static let liveActivityApsKeys: Set<String> = [
        "timestamp", "event", "content-state", "stale-date", "dismissal-date", "relevance-score", "alert",
        "attributes-type", "attributes", "input-push-token", "input-push-channel",
    ]

    private static func parse(_ root: JSONValue, bytes: [UInt8], schema: ActivitySchema, lints: inout [PushLint])
        throws(PushPayloadError) -> APNsPayload
    {
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
        guard case .object(let apsMembers) = aps else {
            throw PushPayloadError(code: .wrongType, field: "aps", message: "must be an object, found \(aps.typeName)")
        }
        let timestampValue = try required(aps, "timestamp")
        let timestampSeconds = try number(timestampValue, "aps.timestamp")
        let timestamp = unixDate(timestampSeconds, "aps.timestamp", lints: &lints)
        let timestampFromMilliseconds = timestampSeconds >= 100_000_000_000
        if timestampSeconds != timestampSeconds.rounded() {
            lints.append(
                PushLint(
                    code: .fractionalTimestamp,
                    field: "aps.timestamp",
                    message:
                        "\(DateReading.text(timestampSeconds)) has a fraction; Apple's timestamp is whole seconds "
                        + "since 1970 (the fraction is kept to the millisecond)",
                    suggested: DateReading.text(timestampSeconds.rounded(.down))
                )
            )
        }
        let eventText = try string(required(aps, "event"), "aps.event")
        guard let event = ActivityEventKind(rawValue: eventText) else {
            throw PushPayloadError(
                code: .invalidValue,
                field: "aps.event",
                message: "\"\(eventText)\" is not an event; use start, update or end"
            )
        }
        for member in apsMembers where !liveActivityApsKeys.contains(member.key) {
            if member.key == "content-available" {
                lints.append(
                    PushLint(
                        code: .contentAvailableInLiveActivity,
                        field: "aps.content-available",
                        message:
                            "a background-update key; a Live Activity push (apns-push-type liveactivity) does not wake "
                            + "the app with it; remove it"
                    )
                )
            } else {
                let hint = member.key == "sound" ? "; a Live Activity alert's sound goes inside aps.alert" : ""
                lints.append(
                    PushLint(
                        code: .unknownApsKey,
                        field: "aps.\(member.key)",
                        message: "a Live Activity push does not read this key; it is ignored\(hint)"
                    )
                )
            }
        }
        if event != .start {
            for key in ["attributes", "attributes-type", "input-push-channel"] where aps.member(key) != nil {
                lints.append(
                    PushLint(
                        code: .startOnlyKeyOnUpdate,
                        field: "aps.\(key)",
                        message: "read only by a start push; on \(event.rawValue) it is ignored"
                    )
                )
            }
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
        let staleDate = try aps.member("stale-date").map { v, _ throws(PushPayloadError) in
            unixDate(try number(v, "aps.stale-date"), "aps.stale-date", lints: &lints)
        }
        if let staleDate, staleDate <= timestamp {
            lints.append(
                PushLint(
                    code: .staleDateBeforeTimestamp,
                    field: "aps.stale-date",
                    message:
                        "at or before aps.timestamp: the content is stale the moment it is shown; send a later "
                        + "stale date (or none)"
                )
            )
        }
        let dismissalDate = try aps.member("dismissal-date").map { v, _ throws(PushPayloadError) in
            unixDate(try number(v, "aps.dismissal-date"), "aps.dismissal-date", lints: &lints)
        }
        if let dismissalDate {
            if event != .end {
                lints.append(
                    PushLint(
                        code: .dismissalDateOnUpdate,
                        field: "aps.dismissal-date",
                        message: "read only by an end push; on \(event.rawValue) it is ignored"
                    )
                )
            } else if timestamp.milliseconds(to: dismissalDate) > DismissalPolicy.maximumMilliseconds {
                let limit = timestamp.advanced(byMilliseconds: DismissalPolicy.maximumMilliseconds)
                lints.append(
                    PushLint(
                        code: .dismissalDateClamped,
                        field: "aps.dismissal-date",
                        message:
                            "more than 4 h after the end's timestamp; the system removes the activity at 4 h "
                            + "(\(limit.millisecondsSinceEpoch / 1000)). Was it in milliseconds, or meant as a "
                            + "duration? Send at most timestamp + 14400",
                        suggested: String(limit.millisecondsSinceEpoch / 1000)
                    )
                )
            }
        }
        let relevance = try aps.member("relevance-score").map { v, _ throws(PushPayloadError) in
            try number(v, "aps.relevance-score")
        }
        let alert = try aps.member("alert").map { v, _ throws(PushPayloadError) in try pushAlert(v) }
        if let alert {
            for (name, text) in [("title", alert.title), ("body", alert.body)] where text == "" {
                lints.append(
                    PushLint(
                        code: .emptyAlertText,
                        field: "aps.alert.\(name)",
                        message: "an empty \(name): the alert lights the screen with nothing to read; give it text"
                    )
                )
            }
        }
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
            var decoder = SchemaDecoder(schema: schema)
            do {
                _ = try decoder.decodeFields(schema.attributes, in: attributes, at: "aps.attributes")
            } catch {
                lints += decoder.lints
                throw PushPayloadError(decoding: error)
            }
            lints += decoder.lints
        }
        var decoder = SchemaDecoder(schema: schema)
        let fields: SchemaValue
        do {
            fields = try decoder.decodeFields(schema.contentState, in: contentValue, at: "aps.content-state")
        } catch {
            lints += decoder.lints
            throw PushPayloadError(decoding: error)
        }
        lints += decoder.lints
        let content = try contentState(fields, schema: schema, timestamp: timestamp)
        var payload = APNsPayload(
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
        payload.fields = fields
        payload.lints = lints
        payload.timestampReadFromMilliseconds = timestampFromMilliseconds
        return payload
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
            contentStateByteCount: contentStateByteCount,
            fields: fields,
            lints: lints,
            timestampReadFromMilliseconds: timestampReadFromMilliseconds
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

    /// Unix seconds (aps dates) to a server instant, exactly as read (never refused), with lints for another unit.
    private static func unixDate(_ seconds: Double, _ field: String, lints: inout [PushLint]) -> ServerInstant {
        lints += DateReading.unixSecondsLints(seconds, field: field)
        return ServerInstant(millisecondsSinceEpoch: DateReading.clamp(milliseconds: (seconds * 1000).rounded()))
    }

    /// The simulator's ``ContentState`` for decoded fields: for the delivery schema the fields themselves (with the
    /// delivery app's own checks: progress within 0…1, coordinates within ±90/±180 degrees); for another app's schema
    /// the countdown end and status text its presentation names (the other fields stay in ``fields``).
    private static func contentState(_ fields: SchemaValue, schema: ActivitySchema, timestamp: ServerInstant)
        throws(PushPayloadError) -> ContentState
    {
        let base = "aps.content-state"
        func instant(_ path: String) -> ServerInstant? {
            guard case .date(let ms)? = fields.value(at: path) else { return nil }
            return ServerInstant(millisecondsSinceEpoch: ms)
        }
        guard schema.readsAsDelivery else {
            let statusText = fields.value(at: schema.presentation.statusText)?.text ?? ""
            return ContentState(
                status: .delivering,
                etaTarget: instant(schema.presentation.countdownEnd) ?? timestamp,
                progress: 0,
                lastConfirmed: timestamp,
                summary: CustomerSummary(ko: statusText, en: statusText, detailKo: "", detailEn: "")
            )
        }
        guard case .enumCase(let statusText)? = fields.value(at: "status"),
            let status = OrderStatus(rawValue: statusText),
            let eta = instant("etaEnd")
        else { preconditionFailure("the delivery schema decodes status and etaEnd") }
        var progress = 0.0
        if case .double(let value)? = fields.value(at: "progress") {
            progress = value
            guard (0...1).contains(progress) else {
                throw PushPayloadError(
                    code: .invalidValue,
                    field: "\(base).progress",
                    message: "\(progress) is outside 0…1"
                )
            }
        }
        var rider: Coordinate?
        if case .double(let latitude)? = fields.value(at: "riderPosition.latitude"),
            case .double(let longitude)? = fields.value(at: "riderPosition.longitude")
        {
            for (key, value, limit) in [("latitude", latitude, 90.0), ("longitude", longitude, 180.0)]
            where abs(value) > limit {
                throw PushPayloadError(
                    code: .invalidValue,
                    field: "\(base).riderPosition.\(key)",
                    message: "\(value) is outside ±\(Int(limit)) degrees"
                )
            }
            rider = Coordinate(latitude: latitude, longitude: longitude)
        }
        var summary = CustomerSummary(status: status)
        func line(_ key: String, _ fallback: String) -> String { fields.value(at: "summary.\(key)")?.text ?? fallback }
        summary = CustomerSummary(
            ko: line("ko", summary.ko),
            en: line("en", summary.en),
            detailKo: line("detailKo", summary.detailKo),
            detailEn: line("detailEn", summary.detailEn)
        )
        return ContentState(
            status: status,
            etaTarget: eta,
            progress: progress,
            riderPosition: rider,
            lastConfirmed: instant("lastConfirmed") ?? timestamp,
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
