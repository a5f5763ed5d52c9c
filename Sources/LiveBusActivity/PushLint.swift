/// The stable code of a push lint: a mistake the phone stays silent about (the push is applied, or dropped, exactly as
/// a device would, and the verdict says what was most likely meant). Every code is listed, with its source, in
/// `Protocol/lints.json`; a test keeps that file and this enum equal.
public enum LintCode: String, Sendable, Equatable, CaseIterable {
    /// A millisecond Unix epoch where seconds are expected (`aps` dates, a `secondsSince1970` or default Date).
    case millisecondsEpoch
    /// Unix seconds in a default-decoded (`deferredToDate`, seconds since 2001-01-01) Date: shown about 31 years late.
    case unixSecondsInReferenceDate
    /// Unix seconds in a `millisecondsSince1970` Date: shown in January 1970.
    case secondsInMillisecondsDate
    /// A timestamp of 0, or another date no sender means (before 2001-09-09 as Unix seconds, before 2001 as a
    /// reference date).
    case implausibleEpoch
    /// `aps.stale-date` at or before `aps.timestamp`: the content is stale the moment it is shown.
    case staleDateBeforeTimestamp
    /// `aps.dismissal-date` on an `update` (only `end` reads it).
    case dismissalDateOnUpdate
    /// `attributes`, `attributes-type` or `input-push-channel` on an `update` or `end` (start only).
    case startOnlyKeyOnUpdate
    /// `content-available` in a Live Activity push (a background-notification key; Live Activity pushes never wake
    /// the app with it).
    case contentAvailableInLiveActivity
    /// An `aps` key that a Live Activity push does not read (`badge`, `sound` outside `alert`, `category` …).
    case unknownApsKey
    /// A fractional `aps.timestamp` (Apple's examples use whole seconds).
    case fractionalTimestamp
    /// `aps.dismissal-date` more than 4 hours after the end's timestamp: the system removes the activity at 4 hours.
    case dismissalDateClamped
    /// An `alert` whose `title` or `body` is an empty string.
    case emptyAlertText
    /// JSON with a comment (`//`, `/* */`): APNs rejects the payload.
    case jsonComment
    /// JSON with a trailing comma before `}` or `]`: APNs rejects the payload.
    case jsonTrailingComma
}

/// One lint on a push: its code, the field (dotted path), what happened and, where there is one, the value the
/// sender most likely meant.
public struct PushLint: Sendable, Equatable, CustomStringConvertible {
    /// The stable code.
    public var code: LintCode
    /// The field, as a dotted path from the top-level object (`aps.content-state.etaEnd`), or `payload`.
    public var field: String
    /// What the phone did with it and what to do.
    public var message: String
    /// The value the sender most likely meant, as JSON text (`788919600`), or `nil`.
    public var suggested: String?

    /// Creates a lint.
    public init(code: LintCode, field: String, message: String, suggested: String? = nil) {
        self.code = code
        self.field = field
        self.message = message
        self.suggested = suggested
    }

    public var description: String {
        "\(code.rawValue) \(field): \(message)" + (suggested.map { " (meant: \($0))" } ?? "")
    }

    /// The lint as one JSON object: `{"code":…,"field":…,"message":…,"suggested":…}` (`suggested` omitted when absent).
    public var json: String {
        var text = "{\"code\":\(ContentStateJSON.quoted(code.rawValue)),\"field\":\(ContentStateJSON.quoted(field))"
        text += ",\"message\":\(ContentStateJSON.quoted(message))"
        if let suggested { text += ",\"suggested\":\(ContentStateJSON.quoted(suggested))" }
        return text + "}"
    }
}
