import LiveBusClock

/// Customer-facing order status, in the order the Delivery Lab field report and Apple's sample show them.
///
/// Raw values are the wire identifiers (`Protocol/PROTOCOL.md`).
/// Source: ../shared/reference/field-reports/001 (조리 중, 픽업 대기, 픽업 완료, 배달 중), delivery-reality.md §2.
public enum OrderStatus: String, Sendable, Codable, CaseIterable, Hashable {
    case created
    case cooking
    case awaitingPickup
    case pickedUp
    case delivering
    case delivered
    case canceled

    /// `true` for `delivered` and `canceled`: the order will not change again.
    public var isTerminal: Bool { self == .delivered || self == .canceled }

    /// Korean customer-facing summary (해요체 short form used on the lock screen and Dynamic Island).
    public var summaryKorean: String {
        switch self {
        case .created: "주문 접수"
        case .cooking: "조리 중"
        case .awaitingPickup: "픽업 대기"
        case .pickedUp: "픽업 완료"
        case .delivering: "배달 중"
        case .delivered: "배달 완료"
        case .canceled: "주문 취소"
        }
    }

    /// English customer-facing summary.
    public var summaryEnglish: String {
        switch self {
        case .created: "Order received"
        case .cooking: "Cooking"
        case .awaitingPickup: "Awaiting pickup"
        case .pickedUp: "Picked up"
        case .delivering: "On the way"
        case .delivered: "Delivered"
        case .canceled: "Canceled"
        }
    }
}

/// A point on the Earth, in degrees (WGS 84).
public struct Coordinate: Sendable, Hashable, Codable {
    /// Latitude in degrees, −90…90.
    public var latitude: Double
    /// Longitude in degrees, −180…180.
    public var longitude: Double

    /// Creates a coordinate from latitude and longitude in degrees.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// The content state of an order's Live Activity: what the lock screen and Dynamic Island draw.
///
/// Every instant is on the server's clock; the daemon converts the ones a client counts down to.
/// Source: ActivityKit `ActivityContent.state` (../shared/reference/live-activities.md §1.1).
public struct ContentState: Sendable, Hashable {
    /// The customer-facing status.
    public var status: OrderStatus
    /// The instant the countdown counts to (estimated arrival), server clock.
    public var etaTarget: ServerInstant
    /// Progress of the whole order, 0…1.
    public var progress: Double
    /// The rider's position while picked up or delivering, else `nil`.
    public var riderPosition: Coordinate?
    /// When the backend last confirmed this status, server clock.
    public var lastConfirmed: ServerInstant

    /// Creates a content state.
    public init(
        status: OrderStatus,
        etaTarget: ServerInstant,
        progress: Double,
        riderPosition: Coordinate? = nil,
        lastConfirmed: ServerInstant
    ) {
        self.status = status
        self.etaTarget = etaTarget
        self.progress = progress
        self.riderPosition = riderPosition
        self.lastConfirmed = lastConfirmed
    }
}

/// The kind of a Live Activity push: start, update or end. Raw values are APNs' `event` strings.
/// Source: ../shared/reference/live-activities.md §2.2.
public enum ActivityEventKind: String, Sendable, Codable, Hashable {
    case start
    case update
    case end
}

/// One change of one order, shaped like a Live Activity push and published on the order's topic.
public struct OrderEvent: Sendable, Hashable {
    /// The order's id, for example `A1001`.
    public var orderID: String
    /// start, update or end.
    public var event: ActivityEventKind
    /// When the backend produced this change (APNs `timestamp`), server clock.
    public var timestamp: ServerInstant
    /// The new content state.
    public var contentState: ContentState
    /// When the shown state becomes out of date (APNs `stale-date`), server clock.
    public var staleDate: ServerInstant?
    /// Relative importance among this app's activities (APNs `relevance-score`).
    public var relevanceScore: Double
    /// For `end`: when the system may remove the activity (APNs `dismissal-date`), server clock.
    public var dismissalDate: ServerInstant?
    /// APNs priority: 10 (immediate, budgeted) or 5 (opportunistic). Source: live-activities.md §2.1, §2.4.
    public var priority: Int

    /// The topic this event is published on: `orders/<id>`.
    public var topic: String { "orders/\(orderID)" }

    /// Creates an event.
    public init(
        orderID: String,
        event: ActivityEventKind,
        timestamp: ServerInstant,
        contentState: ContentState,
        staleDate: ServerInstant?,
        relevanceScore: Double,
        dismissalDate: ServerInstant? = nil,
        priority: Int = 10
    ) {
        self.orderID = orderID
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.dismissalDate = dismissalDate
        self.priority = priority
    }
}
