/// APNs's answers: HTTP status codes and the `reason` strings of the error body, in Apple's own names.
///
/// Source of every status and reason: Apple, "Handling notification responses from APNs",
/// https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns
/// (tables "HTTP status codes" and "Values for the APNs JSON reason key"). The one exception, ``badPayload``,
/// is LiveBus's own and says so.
public enum APNsReason: String, Sendable, CaseIterable, Equatable {
    // 400
    /// "The collapse identifier exceeds the maximum allowed size." (more than 64 bytes)
    case badCollapseId = "BadCollapseId"
    /// "The specified device token is invalid." LiveBus also answers it for a well-formed token no phone was
    /// ever given (Apple: "Verify that the request contains a valid token and that the token matches the
    /// environment").
    case badDeviceToken = "BadDeviceToken"
    /// "The apns-expiration value is invalid."
    case badExpirationDate = "BadExpirationDate"
    /// "The apns-id value is invalid." (not a UUID in the canonical 8-4-4-4-12 form)
    case badMessageId = "BadMessageId"
    /// "The apns-priority value is invalid."
    case badPriority = "BadPriority"
    /// "The apns-topic value is invalid."
    case badTopic = "BadTopic"
    /// "The device token doesn't match the specified topic."
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    /// "One or more headers are repeated."
    case duplicateHeaders = "DuplicateHeaders"
    /// "Idle timeout."
    case idleTimeout = "IdleTimeout"
    /// "The apns-push-type value is invalid."
    case invalidPushType = "InvalidPushType"
    /// "The device token isn't specified in the request :path."
    case missingDeviceToken = "MissingDeviceToken"
    /// "The apns-topic header of the request isn't specified and is required."
    case missingTopic = "MissingTopic"
    /// "The message payload is empty."
    case payloadEmpty = "PayloadEmpty"
    /// "Pushing to this topic is not allowed."
    case topicDisallowed = "TopicDisallowed"
    /// LiveBus's own (400): the body is not a JSON object. Apple's table names no reason for a body that is not
    /// JSON; the payload must be "a JSON dictionary" (Apple, "Generating a remote notification",
    /// https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification).
    case badPayload = "BadPayload"
    /// Broadcasts: no `apns-channel-id` header (Apple, "Sending broadcast push notification requests to APNs",
    /// https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
    case missingChannelId = "MissingChannelId"
    /// Broadcasts: the `apns-channel-id` is not a channel of this bundle (same source).
    case badChannelId = "BadChannelId"
    // 403
    /// "The provider token is stale and a new token should be generated." (its `iat` is more than 1 h old)
    case expiredProviderToken = "ExpiredProviderToken"
    /// "The specified action is not allowed."
    case forbidden = "Forbidden"
    /// "The provider token is not valid, or the token signature can't be verified."
    case invalidProviderToken = "InvalidProviderToken"
    /// "No provider certificate was used to connect to APNs, and the authorization header is missing or no
    /// provider token is specified."
    case missingProviderToken = "MissingProviderToken"
    // 404
    /// "The request contained an invalid :path value."
    case badPath = "BadPath"
    // 405
    /// "The specified :method value isn't POST."
    case methodNotAllowed = "MethodNotAllowed"
    // 410
    /// "The device token is inactive for the specified topic." The body carries `timestamp`.
    case unregistered = "Unregistered"
    // 413
    /// "The message payload is too large." (more than 4096 bytes)
    case payloadTooLarge = "PayloadTooLarge"
    // 429
    /// "The provider's authentication token is being updated too often. Update the authentication token no
    /// more than once every 20 minutes."
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    /// "Too many requests were made consecutively to the same device token."
    case tooManyRequests = "TooManyRequests"
    // 500, 503
    /// "An internal server error occurred."
    case internalServerError = "InternalServerError"
    /// "The service is unavailable."
    case serviceUnavailable = "ServiceUnavailable"
    /// "The APNs server is shutting down."
    case shutdown = "Shutdown"

    /// The HTTP status code Apple pairs with this reason.
    public var status: Int {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed, .badPayload, .missingChannelId, .badChannelId:
            400
        case .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken: 403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        }
    }
}

/// A request APNs refuses: the reason, and LiveBus's explanation (which field, which value, what to do).
public struct APNsRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// Apple's reason (and so the status code).
    public var reason: APNsReason
    /// What was wrong, naming the header or field and its value, and what to do. Not part of Apple's body; sent
    /// as the extra key `livebus-message`.
    public var message: String
    /// For 410 `Unregistered`: when the token stopped being valid, in milliseconds since the Unix epoch (server
    /// clock), Apple's `timestamp` key ("the time, in milliseconds since Epoch, at which APNs confirmed the token
    /// was no longer valid for the topic").
    public var timestampMilliseconds: Int64?

    /// Creates a rejection.
    public init(_ reason: APNsReason, _ message: String, timestampMilliseconds: Int64? = nil) {
        self.reason = reason
        self.message = message
        self.timestampMilliseconds = timestampMilliseconds
    }

    public var description: String { "\(reason.status) \(reason.rawValue): \(message)" }
}
