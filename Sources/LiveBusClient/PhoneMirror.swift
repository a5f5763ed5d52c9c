import Foundation
import LiveBusActivity
import LiveBusClock
import LiveBusLayout
import LiveBusSimulator
import LiveBusWire

/// What a phone holds, rebuilt from the events the daemon wrote to it: its activities (the same ``ActivityBoard``
/// rules the phone runs) and the latest body of each topic. The daemon's dashboard keeps one per attached phone so
/// that the page draws exactly what ``PhoneLayout`` computes on the phone, from the same calls.
///
/// Pure: instants are passed in (the phone's clock, ms since the Unix epoch).
public struct PhoneMirror: Sendable {
    /// The phone's activities.
    public private(set) var board: ActivityBoard
    /// Topic → the latest event body written to the phone, with its per-session (client clock) instants.
    public private(set) var bodies: [String: EventBody] = [:]
    /// Topic → the latest sequence written.
    public private(set) var sequences: [String: UInt64] = [:]

    /// A phone with no activities yet.
    /// - Parameters:
    ///   - liveActivities: the profile's setting (`denied`, `activitiesDisabled`; nil or else: authorized).
    ///   - foreground: whether the app is in the foreground.
    public init(liveActivities: String?, foreground: Bool) {
        board = ActivityBoard(
            profile: DeviceProfile(
                authorization: ClientSession.authorization(liveActivities),
                appInForeground: foreground
            )
        )
    }

    /// Applies an event written to the phone (its body carries the per-session `client` instants).
    /// - Parameters:
    ///   - topic: `orders/<id>`.
    ///   - sequence: the topic's sequence.
    ///   - body: the event body with `client` set.
    ///   - now: the phone's clock.
    ///   - reconvert: Whether the frame carried the `reconvert` flag (the same event, instants re-expressed).
    /// - Returns: the board's verdict (applied, or the rule that refused it).
    @discardableResult
    public mutating func apply(
        topic: String,
        sequence: UInt64,
        body: EventBody,
        now: ClientInstant,
        reconvert: Bool = false
    ) -> Verdict {
        _ = board.tick(at: now)
        bodies[topic] = body
        sequences[topic] = sequence
        let update = PhoneMirror.activityUpdate(topic: topic, body: body, reconvert: reconvert)
        if update.event == .start && board.activity(update.orderID) == nil {
            return board.orderCreated(update, origin: .orderCreation, at: now)
        }
        return board.apply(update, at: now)
    }

    /// Applies an APNs payload the phone applied (`livebus push`), as the phone does: decoded with `schema`, its
    /// dates moved into the phone's clock by `offsetMilliseconds`.
    /// - Returns: the board's verdict.
    @discardableResult
    public mutating func push(
        _ payload: [UInt8],
        orderID: String,
        schema: ActivitySchema,
        offsetMilliseconds offset: Int64,
        now: ClientInstant
    ) -> Verdict {
        board.schema = schema
        return board.push(
            payload,
            orderID: orderID,
            toClient: { ClientInstant(millisecondsSinceEpoch: $0.millisecondsSinceEpoch.saturatingAdding(offset)) },
            at: now
        )
    }

    /// Runs the board's due transitions (stale date, dismissal).
    public mutating func tick(at now: ClientInstant) { _ = board.tick(at: now) }

    /// The phone's foreground flag changed.
    public mutating func setForeground(_ foreground: Bool) { board.profile.appInForeground = foreground }

    /// The layout the phone computes for `posture` (``PhoneLayout/compute(device:posture:os:board:body:now:)``).
    public func layout(device: String, posture: PostureBody, os: String?, now: ClientInstant)
        -> Result<(LayoutInput, LayoutResult), LayoutError>
    {
        PhoneLayout.compute(device: device, posture: posture, os: os, board: board, body: { bodies[$0] }, now: now)
    }

    /// An EVENT body as the activity update a phone applies: the `client` instants (client clock) when present,
    /// else the server's.
    ///
    /// - Parameters:
    ///   - topic: `orders/<id>`.
    ///   - body: The EVENT body.
    ///   - reconvert: Whether the frame carried the `reconvert` flag (PROTOCOL.md §5.1): the same event with its
    ///     instants re-expressed for the phone's clock. A re-expressed `start` is applied as an update of the
    ///     activity it started (as a start it would be refused, `alreadyStarted`, and its countdown would not move).
    /// - Returns: The update.
    public static func activityUpdate(topic: String, body: EventBody, reconvert: Bool = false) -> ActivityUpdate {
        let orderID = topic.split(separator: "/").last.map(String.init) ?? topic
        let c = body.client
        let status = OrderStatus(rawValue: body.contentState.status) ?? .created
        let summary = body.contentState.summary
        let content = ContentState(
            status: status,
            etaTarget: ServerInstant(millisecondsSinceEpoch: body.contentState.etaTarget),
            progress: body.contentState.progress,
            riderPosition: body.contentState.riderPosition.map {
                Coordinate(latitude: $0.latitude, longitude: $0.longitude)
            },
            lastConfirmed: ServerInstant(millisecondsSinceEpoch: body.contentState.lastConfirmed),
            summary: CustomerSummary(
                ko: summary.ko,
                en: summary.en,
                detailKo: summary.detailKo ?? CustomerSummary(status: status).detailKo,
                detailEn: summary.detailEn ?? CustomerSummary(status: status).detailEn
            )
        )
        return ActivityUpdate(
            orderID: orderID,
            event: reconvert && body.event == "start" ? .update : ActivityEventKind(rawValue: body.event) ?? .update,
            timestamp: ServerInstant(millisecondsSinceEpoch: body.timestamp),
            timestampInClientClock: ClientInstant(millisecondsSinceEpoch: c?.timestamp ?? body.timestamp),
            content: content,
            etaTarget: ClientInstant(millisecondsSinceEpoch: c?.etaTarget ?? body.contentState.etaTarget),
            staleDate: (c?.staleDate ?? body.staleDate).map { ClientInstant(millisecondsSinceEpoch: $0) },
            dismissalDate: (c?.dismissalDate ?? body.dismissalDate).map { ClientInstant(millisecondsSinceEpoch: $0) },
            relevanceScore: body.relevanceScore,
            lastConfirmed: ClientInstant(millisecondsSinceEpoch: c?.lastConfirmed ?? body.contentState.lastConfirmed)
        )
    }
}
