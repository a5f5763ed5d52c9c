import Foundation
import LiveBusClock

/// One HTTP/2 request as the provider API sees it: pseudo-headers `:method` and `:path`, the other headers
/// (names lower-case, as HTTP/2 sends them, in arrival order, repeats kept), and the body.
///
/// Source: Apple, "Sending notification requests to APNs",
/// https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
public struct APNsRequest: Sendable, Equatable {
    /// `:method`, e.g. `POST`.
    public var method: String
    /// `:path`, e.g. `/3/device/<64 hex>`.
    public var path: String
    /// Headers other than pseudo-headers, names lower-case, in arrival order.
    public var headers: [(name: String, value: String)]
    /// The body bytes kept (at most ``APNsLimits/storedBodyBytes``; the server stops storing beyond that).
    public var body: [UInt8]
    /// How many body bytes arrived in all (may exceed `body.count`).
    public var bodyLength: Int

    /// Creates a request; `bodyLength` defaults to `body.count`.
    public init(
        method: String,
        path: String,
        headers: [(name: String, value: String)],
        body: [UInt8],
        bodyLength: Int? = nil
    ) {
        self.method = method
        self.path = path
        self.headers = headers.map { ($0.name.lowercased(), $0.value) }
        self.body = body
        self.bodyLength = bodyLength ?? body.count
    }

    /// The value of header `name` (lower-case), the first if repeated.
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    public static func == (a: Self, b: Self) -> Bool {
        a.method == b.method && a.path == b.path && a.body == b.body && a.bodyLength == b.bodyLength
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// Sizes APNs documents.
public enum APNsLimits {
    /// Largest body of a push, in bytes: "limited to a maximum size of 4 KB (4096 bytes)" (Sending requests).
    public static let payloadBytes = 4096
    /// Largest body of a VoIP push, in bytes: "5 KB (5120 bytes)" (Sending requests).
    public static let voipPayloadBytes = 5120
    /// Body bytes a server keeps of one request: enough to judge any size rule (the rest is counted, not kept).
    public static let storedBodyBytes = 5121
    /// Longest `apns-collapse-id`, in bytes: "The value of this key must not exceed 64 bytes" (Sending requests).
    public static let collapseIDBytes = 64
    /// Device tokens are 32 bytes, sent as 64 hexadecimal characters (ActivityKit's push tokens likewise).
    public static let deviceTokenHexCharacters = 64
}

/// Where a request goes.
public enum APNsRoute: Sendable, Equatable {
    /// `POST /3/device/<token>`: a push to one device token (64 hex, compared case-insensitively; kept lower-case).
    case device(token: String)
    /// `POST /4/broadcasts/apps/<bundle-id>`: a broadcast on the channel named by `apns-channel-id` (iOS 18;
    /// Apple, "Sending broadcast push notification requests to APNs",
    /// https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
    case broadcast(bundleID: String)
}

/// The push types APNs knows (`apns-push-type`), Apple's list in "Sending notification requests to APNs".
public let apnsPushTypes: Set<String> = [
    "alert", "background", "complication", "controls", "fileprovider", "liveactivity", "location", "mdm",
    "pushtotalk", "voip", "widgets",
]

/// The suffix of a Live Activity topic: "<bundleID>.push-type.liveactivity" (Apple, "Starting and updating Live
/// Activities with ActivityKit push notifications",
/// https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications).
public let liveActivityTopicSuffix = ".push-type.liveactivity"

/// A push APNs accepted: what LiveBus delivers through the refresh scheduler.
public struct APNsPush: Sendable, Equatable {
    /// The route (device token or broadcast).
    public var route: APNsRoute
    /// `apns-id`, echoed as the client sent it, or generated (upper-case UUID, as APNs's examples show).
    public var apnsID: String
    /// `apns-push-type`; `alert` when absent (Apple: required for watchOS, "recommended" elsewhere).
    public var pushType: String
    /// `apns-topic` (`nil` only for broadcasts, whose path names the bundle).
    public var topic: String?
    /// The app's bundle id: the topic without a known suffix, or the broadcast path's bundle id.
    public var bundleID: String
    /// `apns-priority`: 10 (default, immediate, budgeted), 5 (opportunistic) or 1 (power first; not for Live
    /// Activities).
    public var priority: Int
    /// `apns-expiration` in Unix seconds; 0 = "attempts to deliver the notification only once and doesn't store
    /// it"; `nil` when absent.
    public var expirationSeconds: Int64?
    /// `apns-collapse-id` ("Multiple notifications with the same collapse identifier are displayed to the user
    /// as a single notification").
    public var collapseID: String?
    /// `apns-channel-id` (broadcasts).
    public var channelID: String?
    /// The provider token that authorized it.
    public var providerToken: ProviderToken
    /// The JSON body.
    public var body: [UInt8]
}

/// What the server answers: `:status`, `apns-id`, `apns-unique-id`, and the body (empty on 200, Apple's
/// `{"reason": …}` JSON otherwise, plus `timestamp` on 410 and LiveBus's `livebus-message`).
///
/// Source: Apple, "Handling notification responses from APNs" ("apns-unique-id … only available in the
/// development environment"; LiveBus is one, so it always sends it).
public struct APNsResponse: Sendable, Equatable {
    /// `:status`.
    public var status: Int
    /// Response headers (names lower-case), in order.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]

    /// The answer to an accepted push: 200, empty body.
    public static func success(apnsID: String, uniqueID: String, extraHeaders: [(String, String)] = []) -> Self {
        APNsResponse(
            status: 200,
            headers: [("apns-id", apnsID), ("apns-unique-id", uniqueID)] + extraHeaders.map { ($0.0, $0.1) },
            body: []
        )
    }

    /// The answer to a refused request, `apns-id` echoed or generated.
    public static func failure(_ rejection: APNsRejection, apnsID: String, uniqueID: String) -> Self {
        var o: [String: Any] = ["reason": rejection.reason.rawValue, "livebus-message": rejection.message]
        if let t = rejection.timestampMilliseconds { o["timestamp"] = t }
        let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
        return APNsResponse(
            status: rejection.reason.status,
            headers: [("apns-id", apnsID), ("apns-unique-id", uniqueID), ("content-type", "application/json")],
            body: Array(data)
        )
    }

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of header `name`.
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    public static func == (a: Self, b: Self) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map(\.name) == b.headers.map(\.name)
            && a.headers.map(\.value) == b.headers.map(\.value)
    }
}
