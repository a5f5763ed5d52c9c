import LiveBusClock
import LiveBusSimulator

/// One content change for one order's Live Activity, with every instant the client needs already on the client's
/// clock (the daemon converted them), except `timestamp`, which orders events and stays on the server's clock.
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/activity/update(_:alertconfiguration:timestamp:)
///   (timestamp), https://developer.apple.com/documentation/activitykit/activitycontent/init(state:staledate:relevancescore:)
public struct ActivityUpdate: Sendable, Equatable {
    /// The order's id, for example `A1001`.
    public var orderID: String
    /// start, update or end.
    public var event: ActivityEventKind
    /// When the backend produced this content (APNs `timestamp`), server clock, milliseconds. Orders updates.
    public var timestamp: ServerInstant
    /// The same `timestamp` converted to the client's clock; compared with the client's now for the 8-hours-ahead rule.
    public var timestampInClientClock: ClientInstant
    /// The content state as sent (its own instants stay on the server's clock).
    public var content: ContentState
    /// The instant the countdown counts to, client clock.
    public var etaTarget: ClientInstant
    /// When the content becomes out of date (APNs `stale-date`), client clock; `nil` = never.
    public var staleDate: ClientInstant?
    /// For `end`: when the system may remove the activity (APNs `dismissal-date`), client clock; `nil` = default policy.
    public var dismissalDate: ClientInstant?
    /// Relative importance among this app's activities (APNs `relevance-score`).
    public var relevanceScore: Double
    /// When the backend last confirmed this status, client clock; shown as "last confirmed" on the lock screen.
    public var lastConfirmed: ClientInstant
    /// The size of the content state as JSON, in bytes (limit 4096).
    public var contentStateByteCount: Int
    /// The content state as the app's schema decoded it (``SchemaValue/none`` for a bus update).
    public var fields: SchemaValue
    /// The push's lints (empty for a bus update).
    public var lints: [PushLint]
    /// `true` when the timestamp was a millisecond value read as seconds (a push mistake the phone applies).
    public var timestampReadFromMilliseconds: Bool

    /// Creates an update.
    /// - Parameters:
    ///   - orderID: The order's id.
    ///   - event: start, update or end.
    ///   - timestamp: Server clock, milliseconds since the Unix epoch.
    ///   - timestampInClientClock: `timestamp` on the client's clock.
    ///   - content: The content state.
    ///   - etaTarget: The countdown target, client clock.
    ///   - staleDate: The stale date, client clock, or `nil`.
    ///   - dismissalDate: The dismissal date of an `end`, client clock, or `nil` for the default policy.
    ///   - relevanceScore: The relevance score (default 0, as in ActivityKit).
    ///   - lastConfirmed: The last confirmation instant, client clock; `nil` uses `timestampInClientClock`.
    ///   - contentStateByteCount: The content state's JSON size in bytes; `nil` measures ``ContentStateJSON/encode(_:)``.
    ///   - fields: The decoded content state of a push (default none).
    ///   - lints: The push's lints (default none).
    ///   - timestampReadFromMilliseconds: Whether the timestamp was milliseconds read as seconds (default `false`).
    public init(
        orderID: String,
        event: ActivityEventKind,
        timestamp: ServerInstant,
        timestampInClientClock: ClientInstant,
        content: ContentState,
        etaTarget: ClientInstant,
        staleDate: ClientInstant? = nil,
        dismissalDate: ClientInstant? = nil,
        relevanceScore: Double = 0,
        lastConfirmed: ClientInstant? = nil,
        contentStateByteCount: Int? = nil,
        fields: SchemaValue = .none,
        lints: [PushLint] = [],
        timestampReadFromMilliseconds: Bool = false
    ) {
        self.orderID = orderID
        self.event = event
        self.timestamp = timestamp
        self.timestampInClientClock = timestampInClientClock
        self.content = content
        self.etaTarget = etaTarget
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.lastConfirmed = lastConfirmed ?? timestampInClientClock
        self.contentStateByteCount = contentStateByteCount ?? ContentStateJSON.encode(content).count
        self.fields = fields
        self.lints = lints
        self.timestampReadFromMilliseconds = timestampReadFromMilliseconds
    }

    /// Converts an order event published by the backend, with `toClient` converting server instants to the client's
    /// clock (for example `ClockEstimate.toClient(_:)`).
    /// - Parameters:
    ///   - event: The order event (server clock).
    ///   - toClient: Converts a server instant to the client's clock.
    public init(_ event: OrderEvent, toClient: (ServerInstant) -> ClientInstant) {
        self.init(
            orderID: event.orderID,
            event: event.event,
            timestamp: event.timestamp,
            timestampInClientClock: toClient(event.timestamp),
            content: event.contentState,
            etaTarget: toClient(event.contentState.etaTarget),
            staleDate: event.staleDate.map(toClient),
            dismissalDate: event.dismissalDate.map(toClient),
            relevanceScore: event.relevanceScore,
            lastConfirmed: toClient(event.contentState.lastConfirmed)
        )
    }
}

/// The states Apple documents for a Live Activity (`pending`, a scheduled start, is not modelled).
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/activitystate
public enum ActivityState: String, Sendable, Equatable, CaseIterable {
    /// "active, visible, and can receive content updates".
    case active
    /// "content is out of date and needs an update".
    case stale
    /// "visible, but a person, the app, or the system ended it, and it won’t update its content anymore".
    case ended
    /// "ended and is no longer visible because a person or the system removed it".
    case dismissed
}

/// How long an ended activity stays on the lock screen.
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy
public enum DismissalPolicy: Sendable, Equatable {
    /// Stays up to 4 hours after it ended (LiveBus removes it at exactly 4 hours).
    case `default`
    /// Removed at once.
    case immediate
    /// Removed at the date (client clock) or 4 hours after it ended, whichever comes first.
    case after(ClientInstant)

    /// The longest an ended activity stays on the lock screen: 4 hours, in milliseconds.
    public static let maximumMilliseconds: Int64 = 4 * 3_600_000

    /// The policy an APNs `dismissal-date` means: none → default, at or before `endedAt` → immediate, else after.
    /// - Parameters:
    ///   - dismissalDate: The dismissal date, client clock, or `nil`.
    ///   - endedAt: When the activity ended, client clock.
    /// - Returns: The dismissal policy.
    /// - Note: Source: live-activities.md §2.2 ("A date in the past: removed immediately").
    public static func from(dismissalDate: ClientInstant?, endedAt: ClientInstant) -> DismissalPolicy {
        guard let dismissalDate else { return .default }
        return dismissalDate <= endedAt ? .immediate : .after(dismissalDate)
    }

    /// The instant the system removes an ended activity: the dismissal date, but at most 4 hours after the end's
    /// timestamp (counted from the timestamp, not from when the phone applied the end), client clock.
    /// - Parameters:
    ///   - dismissalDate: The end's dismissal date, client clock, or `nil` (default policy).
    ///   - endTimestamp: The end's `timestamp` on the client's clock.
    /// - Returns: The removal instant (the caller removes at once when it is not after its now).
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy/default ("for up
    ///   to four hours after it ended"); counting from the timestamp is ours (PROTOCOL.md §9.7).
    public static func removalInstant(dismissalDate: ClientInstant?, endTimestamp: ClientInstant) -> ClientInstant {
        let limit = endTimestamp.advanced(byMilliseconds: maximumMilliseconds)
        guard let dismissalDate else { return limit }
        return min(dismissalDate, limit)
    }

    /// The instant the system removes an activity that ended at `endedAt`, client clock.
    /// - Parameter endedAt: When the activity ended, client clock.
    /// - Returns: `endedAt` + 4 h (default), `endedAt` (immediate), or the earlier of the date and `endedAt` + 4 h.
    public func removalInstant(endedAt: ClientInstant) -> ClientInstant {
        let limit = endedAt.advanced(byMilliseconds: Self.maximumMilliseconds)
        switch self {
        case .default: return limit
        case .immediate: return endedAt
        case .after(let date): return min(max(date, endedAt), limit)
        }
    }
}

/// Who or what ended an activity.
public enum EndCause: String, Sendable, Equatable {
    /// An `end` update or push from the app or the backend.
    case app
    /// The system, 8 hours after the start.
    case systemTimeLimit
    /// A person removed it from the lock screen.
    case person
}

/// Where a start request came from. Only ``orderCreation`` may start an activity.
///
/// - Note: Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ("시작 의도는 주문을 생성한 동작에서 한 번만 얻는다").
public enum StartOrigin: String, Sendable, Equatable, CaseIterable {
    /// The person created the order in the app: the one action that starts an activity.
    case orderCreation
    /// A saved order was restored at launch.
    case restore
    /// The client reconnected to the daemon.
    case reconnect
    /// The session resumed (resume token).
    case resume
    /// The order was opened from a link.
    case link
}

/// The fate of an order's start intent, kept apart from the order's creation (which already succeeded).
///
/// - Note: Source: reference/field-reports/001_df7ae4e21a8ebe10.txt (creation success and display success are separate).
public enum StartIntent: Sendable, Equatable {
    /// The client is not ready; the start is applied once ready.
    case pendingUntilReady
    /// The start failed; the order is kept and ``ActivityBoard/retryStart(orderID:at:)`` may try again.
    case failed(VerdictReason)
    /// The activity was started (exactly once).
    case started
    /// The order ended before the activity could start; nothing will start.
    case orderEnded
}

/// Live Activities authorization on the simulated device.
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/activityauthorizationerror
public enum LiveActivitiesAuthorization: String, Sendable, Equatable, CaseIterable {
    /// Live Activities are allowed.
    case authorized
    /// The person turned Live Activities off for this app: a start fails with `ActivityAuthorizationError.denied`.
    case denied
    /// Live Activities are turned off on the device (`areActivitiesEnabled` is false): a start fails with `denied`.
    case activitiesDisabled
    /// The app lacks Live Activity support (`NSSupportsLiveActivities`): a start fails with `unentitled`.
    case unentitled
}

/// The simulated phone's settings that change Live Activity outcomes.
public struct DeviceProfile: Sendable, Equatable {
    /// Live Activities authorization.
    public var authorization: LiveActivitiesAuthorization
    /// Whether the app is in the foreground; a start from the background fails with `visibility`.
    public var appInForeground: Bool
    /// The most activities that may be active or stale at once; `nil` = no limit (Apple publishes none).
    /// Exceeding it fails with `globalMaximumExceeded`.
    public var maximumOngoingActivities: Int?

    /// Creates a profile.
    /// - Parameters:
    ///   - authorization: Live Activities authorization (default authorized).
    ///   - appInForeground: Whether the app is in the foreground (default `true`).
    ///   - maximumOngoingActivities: The limit of ongoing activities, or `nil` for none.
    public init(
        authorization: LiveActivitiesAuthorization = .authorized,
        appInForeground: Bool = true,
        maximumOngoingActivities: Int? = nil
    ) {
        self.authorization = authorization
        self.appInForeground = appInForeground
        self.maximumOngoingActivities = maximumOngoingActivities
    }
}

/// One order's Live Activity as the client shows it. Instants are on the client's clock unless named otherwise.
public struct Activity: Sendable, Equatable {
    /// The order's id.
    public var orderID: String
    /// The activity state.
    public var state: ActivityState
    /// The content shown (the last applied one).
    public var content: ContentState
    /// The countdown target, client clock.
    public var etaTarget: ClientInstant
    /// The stale date of the shown content, client clock, or `nil`.
    public var staleDate: ClientInstant?
    /// The relevance score of the shown content.
    public var relevanceScore: Double
    /// When the activity started, client clock.
    public var startedAt: ClientInstant
    /// The newest timestamp applied so far, server clock.
    public var lastAppliedTimestamp: ServerInstant
    /// `true` when ``lastAppliedTimestamp`` came from a millisecond value read as seconds.
    public var lastAppliedFromMilliseconds = false
    /// The shown content as the app's schema decoded it (``SchemaValue/none`` before any push).
    public var fields: SchemaValue = .none
    /// When the backend last confirmed the shown status, client clock.
    public var lastConfirmed: ClientInstant
    /// When it ended, client clock, or `nil`.
    public var endedAt: ClientInstant?
    /// Who ended it, or `nil`.
    public var endCause: EndCause?
    /// Its dismissal policy once ended, or `nil`.
    public var dismissalPolicy: DismissalPolicy?
    /// When it leaves (or left) the lock screen, client clock; `nil` while not ended.
    public var removalInstant: ClientInstant?
    /// When it was dismissed, client clock, or `nil`.
    public var dismissedAt: ClientInstant?
    /// The start order among this client's activities (0 for the first), used to break relevance-score ties.
    public var startIndex: Int

    /// Creates an activity as it would be right after its start (for renderers and tests; the board makes its own).
    /// - Parameters:
    ///   - orderID: The order's id.
    ///   - state: The activity state (default active).
    ///   - content: The content state.
    ///   - etaTarget: The countdown target, client clock.
    ///   - staleDate: The stale date, client clock, or `nil`.
    ///   - relevanceScore: The relevance score (default 0).
    ///   - startedAt: The start instant, client clock.
    ///   - lastAppliedTimestamp: The newest applied timestamp, server clock.
    ///   - lastConfirmed: The last confirmation, client clock.
    ///   - startIndex: The start order (default 0).
    public init(
        orderID: String,
        state: ActivityState = .active,
        content: ContentState,
        etaTarget: ClientInstant,
        staleDate: ClientInstant? = nil,
        relevanceScore: Double = 0,
        startedAt: ClientInstant,
        lastAppliedTimestamp: ServerInstant,
        lastConfirmed: ClientInstant,
        startIndex: Int = 0
    ) {
        self.orderID = orderID
        self.state = state
        self.content = content
        self.etaTarget = etaTarget
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.startedAt = startedAt
        self.lastAppliedTimestamp = lastAppliedTimestamp
        self.lastConfirmed = lastConfirmed
        self.endedAt = nil
        self.endCause = nil
        self.dismissalPolicy = nil
        self.removalInstant = nil
        self.dismissedAt = nil
        self.startIndex = startIndex
    }

    /// `true` while the state is ``ActivityState/stale`` (ActivityKit's `isStale`).
    public var isStale: Bool { state == .stale }
    /// `true` while the activity can appear in the Dynamic Island (active or stale).
    public var isInDynamicIsland: Bool { state == .active || state == .stale }
    /// `true` while the activity is on the lock screen (anything but dismissed).
    public var isOnLockScreen: Bool { state != .dismissed }

    /// The instant the system ends it: 8 hours after the start, client clock.
    /// - Note: Source: https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities
    public var systemEndInstant: ClientInstant { startedAt.advanced(byMilliseconds: ActivityLimits.activeMilliseconds) }
}

/// Apple's numeric limits for Live Activities.
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities
///   ("Understand constraints"), https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
public enum ActivityLimits {
    /// An activity is active for at most 8 hours, in milliseconds.
    public static let activeMilliseconds: Int64 = 8 * 3_600_000
    /// An activity stays on the lock screen at most 12 hours after its start, in milliseconds.
    public static let lockScreenMilliseconds: Int64 = 12 * 3_600_000
    /// An update stamped more than this many milliseconds after the device's now is dropped (8 hours).
    public static let futureTimestampToleranceMilliseconds: Int64 = 8 * 3_600_000
    /// An applied update stamped more than this many milliseconds after the device's now gets a warning in its
    /// verdict (1 minute; ours: Apple applies it silently, and every later update stamped before it is ignored).
    public static let timestampAheadWarningMilliseconds: Int64 = 60_000
    /// A content state is at most 4 KB (4096 bytes) as JSON.
    public static let contentStateBytes = 4096
    /// An APNs payload is at most 4096 bytes.
    public static let payloadBytes = 4096
}

/// A change the board made on its own (timer) or deferred: started, start failed, stale, ended, dismissed.
public struct ActivityTransition: Sendable, Equatable, CustomStringConvertible {
    /// What changed.
    public enum Kind: String, Sendable, Equatable {
        /// A pending start was applied once the client was ready.
        case started
        /// A pending start failed (``ActivityTransition/reason`` says why); the order is kept.
        case startFailed
        /// The stale date was reached.
        case becameStale
        /// The system ended the activity (8-hour limit).
        case ended
        /// The activity left the lock screen (dismissal policy, 12-hour limit, or a person).
        case dismissed
    }

    /// The order's id.
    public var orderID: String
    /// What changed.
    public var kind: Kind
    /// When it changed, client clock: the deadline instant, not the instant the caller noticed.
    public var at: ClientInstant
    /// Why, for `startFailed`; else `nil`.
    public var reason: VerdictReason?

    /// Creates a transition.
    public init(orderID: String, kind: Kind, at: ClientInstant, reason: VerdictReason? = nil) {
        self.orderID = orderID
        self.kind = kind
        self.at = at
        self.reason = reason
    }

    public var description: String { "\(orderID) \(kind.rawValue) at \(at)" + (reason.map { " (\($0.code))" } ?? "") }
}
