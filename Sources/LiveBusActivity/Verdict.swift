import LiveBusClock

/// Why an update, push or start was not applied (or was deferred): a stable code, Apple's words where Apple has
/// words, and what to do about it.
///
/// Codes are stable strings meant for logs, JSON output and tests; compare ``code``, not the text.
public struct VerdictReason: Sendable, Equatable, CustomStringConvertible {
    /// A stable identifier, for example `olderTimestamp`.
    public var code: String
    /// Apple's own wording for this rule, quoted from the source, or `nil` where Apple says nothing.
    public var appleWords: String?
    /// What happened and what to do, in our words.
    public var message: String

    /// Creates a reason.
    public init(code: String, appleWords: String?, message: String) {
        self.code = code
        self.appleWords = appleWords
        self.message = message
    }

    public var description: String {
        if let appleWords { return "\(code): \(message) (Apple: \"\(appleWords)\")" }
        return "\(code): \(message)"
    }
}

/// The outcome of one update, push or start: applied or not, why, and where the rule comes from.
public struct Verdict: Sendable, Equatable, CustomStringConvertible {
    /// `true` when the activity now shows this content (or was started, ended, dismissed by it).
    public var applied: Bool
    /// Why it was not applied (or was deferred); `nil` when applied.
    public var reason: VerdictReason?
    /// The rule's source: an Apple documentation URL, a forum thread, or a field report path.
    public var source: String
    /// Something the sender should know although the update was applied (e.g. a timestamp far ahead of the phone's
    /// clock, which makes later updates `olderTimestamp`); `nil` when nothing is amiss.
    public var warning: String?
    /// Every lint that applies to the push (a mistake the phone is silent about), applied or not; empty for bus updates.
    public var lints: [PushLint] = []
    /// For an applied `end`: when the system removes the activity from the lock screen, client clock (the dismissal
    /// date, at most 4 h after the end's timestamp); else `nil`.
    public var removalAt: ClientInstant?

    /// Creates a verdict.
    public init(applied: Bool, reason: VerdictReason?, source: String, warning: String? = nil) {
        self.applied = applied
        self.reason = reason
        self.source = source
        self.warning = warning
    }

    /// The stable codes of ``lints``, in order.
    public var lintCodes: [String] { lints.map(\.code.rawValue) }

    /// An applied verdict citing `source`.
    public static func applied(source: String) -> Verdict { Verdict(applied: true, reason: nil, source: source) }

    /// A rejected (or deferred) verdict.
    public static func rejected(_ reason: VerdictReason, source: String) -> Verdict {
        Verdict(applied: false, reason: reason, source: source)
    }

    public var description: String {
        var text = applied ? "applied [\(source)]" : "not applied: \(reason?.description ?? "-") [\(source)]"
        if let warning { text += " warning: \(warning)" }
        if let removalAt { text += " removal at \(removalAt)" }
        for lint in lints { text += " lint: \(lint)" }
        return text
    }

    /// The verdict as one JSON object, for logs and `livebus push` output:
    /// `{"applied":false,"reason":"olderTimestamp","appleWords":"…","message":"…","source":"…"}`
    /// (`reason`, `appleWords`, `message` are omitted when absent; `"warning":"…"` follows `source` when present, then
    /// `"removalAt":` milliseconds, client clock, for an applied end, then `"lints":[…]` (``PushLint/json``) when any).
    public var json: String {
        var text = "{\"applied\":\(applied)"
        if let reason {
            text += ",\"reason\":\(ContentStateJSON.quoted(reason.code))"
            if let appleWords = reason.appleWords { text += ",\"appleWords\":\(ContentStateJSON.quoted(appleWords))" }
            text += ",\"message\":\(ContentStateJSON.quoted(reason.message))"
        }
        text += ",\"source\":\(ContentStateJSON.quoted(source))"
        if let warning { text += ",\"warning\":\(ContentStateJSON.quoted(warning))" }
        if let removalAt { text += ",\"removalAt\":\(removalAt.millisecondsSinceEpoch)" }
        if !lints.isEmpty { text += ",\"lints\":[" + lints.map(\.json).joined(separator: ",") + "]" }
        return text + "}"
    }
}

/// Sources cited by verdicts and doc comments. Paths are relative to the shared reference directory.
public enum ActivitySource {
    /// `Activity.update(_:alertConfiguration:timestamp:)`: the timestamp rule.
    public static let updateTimestamp =
        "https://developer.apple.com/documentation/activitykit/activity/update(_:alertconfiguration:timestamp:)"
    /// `Activity.update(_:)`: updates to an ended activity are ignored; content state ≤ 4 KB.
    public static let update = "https://developer.apple.com/documentation/activitykit/activity/update(_:)"
    /// DTS on timestamps in the past and more than 8 hours ahead; `end` applied with an old timestamp.
    public static let dtsTimestamps = "https://developer.apple.com/forums/thread/776165"
    /// The ActivityKit push article (ignored after end, payload keys).
    public static let pushArticle =
        "https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications"
    /// `end(_:dismissalPolicy:timestamp:)`.
    public static let end =
        "https://developer.apple.com/documentation/activitykit/activity/end(_:dismissalpolicy:timestamp:)"
    /// `ActivityUIDismissalPolicy`.
    public static let dismissalPolicy =
        "https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy"
    /// `ActivityState`.
    public static let activityState = "https://developer.apple.com/documentation/activitykit/activitystate"
    /// "Displaying live data with Live Activities": 8 h / 12 h limits, 4 KB, foreground start, relevance score.
    public static let displayingLiveData =
        "https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities"
    /// `ActivityContent.staleDate`.
    public static let staleDate = "https://developer.apple.com/documentation/activitykit/activitycontent/staledate"
    /// `ActivityAuthorizationError`.
    public static let authorizationError =
        "https://developer.apple.com/documentation/activitykit/activityauthorizationerror"
    /// `ActivityAuthorizationError.visibility`.
    public static let visibilityError =
        "https://developer.apple.com/documentation/activitykit/activityauthorizationerror/visibility"
    /// `ActivityAttributes.ContentState`: 4 KB.
    public static let contentState =
        "https://developer.apple.com/documentation/activitykit/activityattributes/contentstate"
    /// APNs request limits (4096 bytes, 413 PayloadTooLarge).
    public static let sendingRequests =
        "https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns"
    /// The start-intent rules (start once from order creation, kept until ready, creation and display are separate
    /// outcomes), as they ship in the repository: `Protocol/PROTOCOL.md` §9.1 quotes them and names their origin,
    /// the Delivery Lab field report 001.
    public static let fieldReportStartIntent = "Protocol/PROTOCOL.md §9.1 (start-intent rules)"
}

extension VerdictReason {
    /// The update's timestamp is older than the last applied one.
    public static let olderTimestamp = VerdictReason(
        code: "olderTimestamp",
        appleWords: "If this is older than a previous update or push payload, the system ignores this update.",
        message: "the update is older than the content already shown; send a newer timestamp"
    )
    /// The update's timestamp is more than 8 hours ahead of the device's clock.
    public static let timestampTooFarAhead = VerdictReason(
        code: "timestampTooFarAhead",
        appleWords: "timestamps beyond 8 hours (the max lifetime of a Live Activity) will also be dropped",
        message: "the timestamp is more than 8 hours after the device's now; stamp updates with the current time"
    )
    /// The activity already ended or was dismissed.
    public static let activityEnded = VerdictReason(
        code: "activityEnded",
        appleWords: "The system ignores attempts to update a Live Activity that ended.",
        message: "the activity ended; nothing is applied after an end or a dismissal"
    )
    /// The content state is larger than 4 KB.
    public static let contentStateTooLarge = VerdictReason(
        code: "contentStateTooLarge",
        appleWords: "The dynamic data of a Live Activity that’s encoded by ContentState can’t exceed 4KB.",
        message: "the content state is over 4096 bytes as JSON; send less"
    )
    /// The push payload is larger than 4096 bytes.
    public static let payloadTooLarge = VerdictReason(
        code: "payloadTooLarge",
        appleWords: "PayloadTooLarge",
        message: "the push payload is over 4096 bytes; APNs answers 413"
    )
    /// The push payload could not be read (the message names the field).
    public static func malformedPayload(_ error: PushPayloadError) -> VerdictReason {
        VerdictReason(code: "malformedPayload", appleWords: nil, message: error.description)
    }
    /// The content state (or a start's attributes) did not decode as the app's type: the phone drops the update and
    /// shows nothing new. The code is Swift's `DecodingError` case (`keyNotFound`, `valueNotFound`, `typeMismatch`,
    /// `dataCorrupted`); the message names the field and the expected type.
    public static func decodingFailed(_ error: PushPayloadError) -> VerdictReason {
        VerdictReason(
            code: error.code.description,
            appleWords: "Custom encoding strategies will result in update failures",
            message: error.description
        )
    }
    /// No activity and no order exist for this order id.
    public static let noActivity = VerdictReason(
        code: "noActivity",
        appleWords: nil,
        message: "no Live Activity runs for this order; an activity starts only from the order-creation action"
    )
    /// A start from anything but the order-creation action.
    public static let startNotFromOrderCreation = VerdictReason(
        code: "startNotFromOrderCreation",
        appleWords: nil,
        message:
            "an activity starts only from the order-creation action; restore, reconnect, resume and links never start one"
    )
    /// The order's activity was already requested once.
    public static let alreadyStarted = VerdictReason(
        code: "alreadyStarted",
        appleWords: nil,
        message: "this order's activity was already requested; it is started exactly once and never revived"
    )
    /// The client is not ready; the start is kept and applied once ready.
    public static let startPendingUntilReady = VerdictReason(
        code: "startPendingUntilReady",
        appleWords: nil,
        message: "the client is not ready yet; the start is kept and applied once ready"
    )
    /// The update was kept for an activity whose start is pending or failed.
    public static let keptForPendingStart = VerdictReason(
        code: "keptForPendingStart",
        appleWords: nil,
        message: "the activity has not started yet; this content is kept and shown when it starts"
    )
    /// The order ended before its activity could start.
    public static let orderEndedBeforeStart = VerdictReason(
        code: "orderEndedBeforeStart",
        appleWords: nil,
        message: "the order ended before its activity started; no activity is started for it"
    )
    /// `ActivityAuthorizationError.visibility`.
    public static let visibility = VerdictReason(
        code: "visibility",
        appleWords: "The app tried to start the Live Activity while it was in the background.",
        message: "ActivityAuthorizationError.visibility: bring the app to the foreground, then retry the start"
    )
    /// `ActivityAuthorizationError.denied`.
    public static let denied = VerdictReason(
        code: "denied",
        appleWords: "A person deactivated Live Activities in Settings.",
        message: "ActivityAuthorizationError.denied: Live Activities are turned off; turn them on, then retry"
    )
    /// `ActivityAuthorizationError.unentitled`.
    public static let unentitled = VerdictReason(
        code: "unentitled",
        appleWords: "The app doesn’t have the required entitlement to start a Live Activity.",
        message: "ActivityAuthorizationError.unentitled: the app does not declare Live Activity support"
    )
    /// `ActivityAuthorizationError.globalMaximumExceeded`.
    public static let globalMaximumExceeded = VerdictReason(
        code: "globalMaximumExceeded",
        appleWords: "The device reached the maximum number of ongoing Live Activities.",
        message: "ActivityAuthorizationError.globalMaximumExceeded: end another activity, then retry the start"
    )
    /// `ActivityAuthorizationError.attributesTooLarge`.
    public static let attributesTooLarge = VerdictReason(
        code: "attributesTooLarge",
        appleWords: "The provided Live Activity attributes exceeded the maximum size of 4KB.",
        message: "ActivityAuthorizationError.attributesTooLarge: the start content is over 4096 bytes as JSON"
    )
    /// A simulated start failure (`livebus` told the client "start fails").
    public static let simulatedStartFailure = VerdictReason(
        code: "simulatedStartFailure",
        appleWords: nil,
        message:
            "the start failed because the client was told to simulate a failure; the order is kept, retry the start"
    )
    /// A push to a push-to-start token whose event is not `start` (issue 17).
    public static let pushToStartNeedsStartEvent = VerdictReason(
        code: "pushToStartNeedsStartEvent",
        appleWords: nil,
        message:
            "a push-to-start token starts activities only: send \"event\": \"start\" with alert, attributes-type and attributes (updates go to the activity's own push token)"
    )
    /// A start push whose `attributes-type` is not the app's `ActivityAttributes` type.
    public static let attributesTypeMismatch = VerdictReason(
        code: "attributesTypeMismatch",
        appleWords: "attributes-type: the name of the ActivityAttributes structure",
        message: "aps.attributes-type does not name the app's ActivityAttributes type, so no activity starts"
    )
    /// A start push beyond the push-to-start budget (LiveBus's number; Apple publishes none).
    public static let pushToStartBudgetExceeded = VerdictReason(
        code: "pushToStartBudgetExceeded",
        appleWords: "Push-to-start budget exceeded … not starting activity",
        message:
            "this phone's push-to-start budget is spent (livebusd --apns-start-budget, 10 per hour by default, ours): no activity starts"
    )
    /// A start push sent on a broadcast channel.
    public static let broadcastCannotStart = VerdictReason(
        code: "broadcastCannotStart",
        appleWords: "You can't use broadcast push notifications to start a Live Activity.",
        message: "a broadcast cannot start an activity: send the start to the phone's push-to-start token"
    )
    /// A start push for an order whose activity was not started by the order-creation action.
    public static let pushToStartNotSupported = VerdictReason(
        code: "pushToStartNotSupported",
        appleWords: nil,
        message: "LiveBus starts an activity only from the order-creation action, not from a start push"
    )
}
