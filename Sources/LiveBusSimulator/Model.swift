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

    /// Korean detail line for the lock screen and the expanded presentation (해요체).
    ///
    /// - Note: Source: ../shared/reference/delivery-reality.md §4.1 ("KO detail" column).
    public var detailKorean: String {
        switch self {
        case .created: "가게에서 주문을 확인하고 있어요"
        case .cooking: "메뉴를 준비하고 있어요"
        case .awaitingPickup: "라이더가 가게로 가고 있어요"
        case .pickedUp: "라이더가 음식을 픽업했어요"
        case .delivering: "라이더가 배달 중이에요"
        case .delivered: "배달이 완료되었어요"
        case .canceled: "주문이 취소되었어요"
        }
    }

    /// English detail line for the lock screen and the expanded presentation.
    ///
    /// - Note: Source: ../shared/reference/delivery-reality.md §4.1 ("EN detail" column).
    public var detailEnglish: String {
        switch self {
        case .created: "Waiting for the restaurant to confirm"
        case .cooking: "Restaurant is preparing your order"
        case .awaitingPickup: "Delivery partner is heading to the restaurant"
        case .pickedUp: "Your order has been picked up"
        case .delivering: "Order is out for delivery"
        case .delivered: "Order delivered"
        case .canceled: "Your order was canceled"
        }
    }

    /// Position in the forward lifecycle created(0) → delivered(5); `canceled` is 6.
    /// A status may only move to a status of higher rank (skipping is allowed), or to `canceled`.
    public var rank: Int {
        switch self {
        case .created: 0
        case .cooking: 1
        case .awaitingPickup: 2
        case .pickedUp: 3
        case .delivering: 4
        case .delivered: 5
        case .canceled: 6
        }
    }

    /// `true` if an order may go from `self` to `next`: forward along the lifecycle, or to `canceled`
    /// from any non-terminal status.
    public func canMove(to next: OrderStatus) -> Bool {
        if isTerminal { return false }
        if next == .canceled { return true }
        return next.rank > rank
    }
}

/// The customer-facing text of a content state, in Korean and English: a short line (compact Dynamic Island)
/// and a detail line (lock screen, expanded).
///
/// - Note: Source: ../shared/reference/field-reports/001 (조리 중, 픽업 대기, 픽업 완료, 배달 중),
///   delivery-reality.md §4.1.
public struct CustomerSummary: Sendable, Hashable, Codable {
    /// Korean short text, e.g. `조리 중`.
    public var ko: String
    /// English short text, e.g. `Cooking`.
    public var en: String
    /// Korean detail line, e.g. `메뉴를 준비하고 있어요`.
    public var detailKo: String
    /// English detail line, e.g. `Restaurant is preparing your order`.
    public var detailEn: String

    /// Creates a summary from its four lines.
    public init(ko: String, en: String, detailKo: String, detailEn: String) {
        self.ko = ko
        self.en = en
        self.detailKo = detailKo
        self.detailEn = detailEn
    }

    /// The default wording for `status` (``OrderStatus/summaryKorean`` and friends).
    public init(status: OrderStatus) {
        self.init(
            ko: status.summaryKorean,
            en: status.summaryEnglish,
            detailKo: status.detailKorean,
            detailEn: status.detailEnglish
        )
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
    /// The customer-facing text in Korean and English (defaults to the status's wording).
    public var summary: CustomerSummary

    /// Creates a content state.
    ///
    /// - Parameters:
    ///   - status: The customer-facing status.
    ///   - etaTarget: Estimated arrival, server clock.
    ///   - progress: Progress of the whole order, 0…1.
    ///   - riderPosition: The rider's position while picked up or delivering, else `nil`.
    ///   - lastConfirmed: When the backend last confirmed this state, server clock.
    ///   - summary: Customer-facing text; `nil` uses ``CustomerSummary/init(status:)``.
    public init(
        status: OrderStatus,
        etaTarget: ServerInstant,
        progress: Double,
        riderPosition: Coordinate? = nil,
        lastConfirmed: ServerInstant,
        summary: CustomerSummary? = nil
    ) {
        self.status = status
        self.etaTarget = etaTarget
        self.progress = progress
        self.riderPosition = riderPosition
        self.lastConfirmed = lastConfirmed
        self.summary = summary ?? CustomerSummary(status: status)
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
