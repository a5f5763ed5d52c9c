import Foundation
import LiveBusClock

/// A broadcast channel (iOS 18): what the channel management API created for one bundle id.
///
/// Source: Apple, "Sending channel management requests to APNs",
/// https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns, and
/// "Sending broadcast push notification requests to APNs",
/// https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns.
public struct APNsChannel: Sendable, Equatable {
    /// `apns-channel-id`: base64 of 16 random bytes (Apple's ids are base64 strings, e.g. `dHN0LXNyY2gtY2hubA==`).
    public var id: String
    /// The app's bundle id (the path's).
    public var bundleID: String
    /// `message-storage-policy`: 0 "No Messages Stored" (a broadcast reaches the devices reachable when it is sent),
    /// 1 "Most Recent Message Stored" (APNs keeps the latest broadcast and gives it to a device that subscribes or
    /// comes back later).
    public var messageStoragePolicy: Int
    /// `push-type`: `LiveActivity`, the only one Apple lists.
    public var pushType: String
    /// When it was created (server clock).
    public var createdAt: ServerInstant
    /// The newest broadcast body, kept when ``messageStoragePolicy`` is 1.
    public var storedMessage: [UInt8]?
}

/// The channels of every bundle id, and the channel management API over them: `POST /1/apps/<bundle-id>/channels`
/// (create; 201 with `apns-channel-id`), `GET /1/apps/<bundle-id>/channels` with `apns-channel-id` (read; 200 with
/// `{"message-storage-policy", "push-type"}`), `DELETE /1/apps/<bundle-id>/channels` with `apns-channel-id` (204),
/// `GET /1/apps/<bundle-id>/all-channels` (200 with `{"channels": [ids]}`). Every answer carries `apns-request-id`
/// (echoed when the client sent a UUID, else generated) and `apns-unique-id`.
///
/// Errors: 400 `MissingChannelId` (read or delete without `apns-channel-id`), 400 `BadChannelId` (an id that is not
/// base64), 404 `ChannelNotRegistered` (no such channel for this bundle), 400 `BadMessageStoragePolicy` (not 0 or 1),
/// 400 `InvalidPushType` (not `LiveActivity`), 400 `BadPayload` (LiveBus's own: the body is not a JSON object),
/// 404 `BadPath`, 405 `MethodNotAllowed`, and the provider-token answers of ``ProviderTokenVerifier``.
/// Channels live as long as the daemon (LiveBus keeps them in memory, ours); at most ``maximumChannelsPerBundle``
/// per bundle id (ours; beyond it 400 `CannotCreateChannelConfig`).
public struct APNsChannelDirectory: Sendable {
    /// Channels by id.
    public private(set) var channels: [String: APNsChannel] = [:]
    /// Most channels one bundle id may have (ours: 10 000).
    public var maximumChannelsPerBundle = 10_000

    /// An empty directory.
    public init() {}

    /// The channel `id` of `bundleID`, or `nil`.
    public func channel(_ id: String, bundleID: String) -> APNsChannel? {
        channels[id].flatMap { $0.bundleID == bundleID ? $0 : nil }
    }

    /// Keeps `body` as the channel's newest message when its policy stores one.
    public mutating func broadcasted(_ body: [UInt8], on id: String) {
        guard var c = channels[id], c.messageStoragePolicy == 1 else { return }
        c.storedMessage = body
        channels[id] = c
    }

    /// Whether `path` is a channel management path (`/1/apps/…`).
    public static func isManagementPath(_ path: String) -> Bool { path.hasPrefix("/1/apps/") }

    /// Whether `s` is a channel id: non-empty base64 (Apple's ids are base64-encoded strings).
    public static func isChannelID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 256 && Data(base64Encoded: s) != nil
    }

    /// Answers one channel management request received at `now`.
    /// - Parameters:
    ///   - r: the request.
    ///   - verifier: provider-token checks (the same as pushes').
    ///   - now: server clock.
    ///   - newChannelID: makes a new channel id (base64).
    ///   - newID: makes a request id (UUID string).
    /// - Returns: Apple's answer (status, `apns-request-id`, `apns-unique-id`, JSON body where Apple has one).
    public mutating func handle(
        _ r: APNsRequest,
        verifier: inout ProviderTokenVerifier,
        at now: ServerInstant,
        newChannelID: () -> String,
        newID: () -> String
    ) -> APNsResponse {
        let requestID = r.header("apns-request-id").flatMap { APNsValidator.isCanonicalUUID($0) ? $0 : nil } ?? newID()
        let uniqueID = newID().lowercased()
        func fail(_ reason: APNsChannelReason, _ message: String) -> APNsResponse {
            let o: [String: Any] = ["reason": reason.rawValue, "livebus-message": message]
            let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
            return APNsResponse(
                status: reason.status,
                headers: [
                    ("apns-request-id", requestID), ("apns-unique-id", uniqueID), ("content-type", "application/json"),
                ],
                body: Array(data)
            )
        }
        func ok(_ status: Int, _ extra: [(String, String)] = [], body: Any? = nil) -> APNsResponse {
            var headers: [(name: String, value: String)] = [
                ("apns-request-id", requestID), ("apns-unique-id", uniqueID),
            ]
            headers += extra.map { (name: $0.0, value: $0.1) }
            var bytes: [UInt8] = []
            if let body {
                bytes = Array((try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data())
                headers.append(("content-type", "application/json"))
            }
            return APNsResponse(status: status, headers: headers, body: bytes)
        }
        let path = r.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? r.path
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // ["", "1", "apps", bundle, "channels" | "all-channels"]
        guard parts.count == 5, parts[1] == "1", parts[2] == "apps", APNsValidator.isBundleID(parts[3]),
            parts[4] == "channels" || parts[4] == "all-channels"
        else {
            return fail(
                .badPath,
                ":path \(r.path.prefix(200)) is not /1/apps/<bundle-id>/channels or /1/apps/<bundle-id>/all-channels"
            )
        }
        let bundle = parts[3]
        let allowed = parts[4] == "all-channels" ? ["GET"] : ["POST", "GET", "DELETE"]
        guard allowed.contains(r.method) else {
            return fail(
                .methodNotAllowed,
                ":method \(r.method) is not allowed on \(parts[4]); use \(allowed.joined(separator: ", "))"
            )
        }
        do {
            _ = try verifier.verify(authorization: r.header("authorization"), at: now)
        } catch {
            return fail(APNsChannelReason(rawValue: error.reason.rawValue) ?? .invalidProviderToken, error.message)
        }
        if parts[4] == "all-channels" {
            let ids = channels.values.filter { $0.bundleID == bundle }.sorted { $0.createdAt < $1.createdAt }.map(\.id)
            return ok(200, body: ["channels": ids])
        }
        if r.method == "POST" {
            guard let o = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] else {
                return fail(
                    .badPayload,
                    "the body must be a JSON object {\"message-storage-policy\": 0 or 1, \"push-type\": \"LiveActivity\"}"
                )
            }
            let policyValue = o["message-storage-policy"]
            // The number 0 or 1 (Apple's broadcast API): JSONSerialization gives `true` as a number 1 too, so the
            // member is read again as an integer, which a boolean is not.
            let policy = try? JSONDecoder().decode(StoragePolicyField.self, from: Data(r.body))
            guard let n = policyValue as? NSNumber, n.doubleValue == 0 || n.doubleValue == 1,
                let p = policy?.value, p == 0 || p == 1
            else {
                return fail(
                    .badMessageStoragePolicy,
                    "message-storage-policy is \(policyValue.map { "\($0)" } ?? "missing"); use 0 (no messages stored) or 1 (most recent message stored)"
                )
            }
            guard let type = o["push-type"] as? String, type == "LiveActivity" else {
                return fail(
                    .invalidPushType,
                    "push-type is \(o["push-type"].map { "\($0)" } ?? "missing"); channels carry LiveActivity only"
                )
            }
            guard channels.values.filter({ $0.bundleID == bundle }).count < maximumChannelsPerBundle else {
                return fail(
                    .cannotCreateChannelConfig,
                    "\(bundle) already has \(maximumChannelsPerBundle) channels (LiveBus's limit); delete some"
                )
            }
            var id = newChannelID()
            while channels[id] != nil { id = newChannelID() }
            channels[id] = APNsChannel(
                id: id,
                bundleID: bundle,
                messageStoragePolicy: n.intValue,
                pushType: type,
                createdAt: now
            )
            return ok(201, [("apns-channel-id", id)])
        }
        guard let id = r.header("apns-channel-id"), !id.isEmpty else {
            return fail(.missingChannelId, "\(r.method) /1/apps/\(bundle)/channels needs the apns-channel-id header")
        }
        guard Self.isChannelID(id) else {
            return fail(.badChannelId, "apns-channel-id \(id.prefix(80)) is not a base64 channel id")
        }
        guard let c = channel(id, bundleID: bundle) else {
            return fail(.channelNotRegistered, "no channel \(id) exists for \(bundle): create it with POST first")
        }
        if r.method == "DELETE" {
            channels[id] = nil
            return ok(204)
        }
        return ok(200, body: ["message-storage-policy": c.messageStoragePolicy, "push-type": c.pushType])
    }

    /// A new channel id: base64 of 16 random bytes.
    public static func randomChannelID() -> String {
        var g = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &g) }).base64EncodedString()
    }
}

/// The reasons the channel management API answers (Apple, "Sending channel management requests to APNs": its
/// error table), with their status codes; the provider-token ones are the push API's.
public enum APNsChannelReason: String, Sendable, CaseIterable {
    /// 400: the channel id is not valid.
    case badChannelId = "BadChannelId"
    /// 400: no `apns-channel-id` header where one is required.
    case missingChannelId = "MissingChannelId"
    /// 400: `message-storage-policy` is not 0 or 1.
    case badMessageStoragePolicy = "BadMessageStoragePolicy"
    /// 400: `push-type` is not `LiveActivity`.
    case invalidPushType = "InvalidPushType"
    /// 400: the channel could not be created (LiveBus: the bundle id has too many channels).
    case cannotCreateChannelConfig = "CannotCreateChannelConfig"
    /// 400, LiveBus's own: the body is not a JSON object.
    case badPayload = "BadPayload"
    /// 404: the channel does not exist.
    case channelNotRegistered = "ChannelNotRegistered"
    /// 404: an unknown `:path`.
    case badPath = "BadPath"
    /// 405: a method the path does not take.
    case methodNotAllowed = "MethodNotAllowed"
    /// 403 / 429: provider-token answers (as for pushes).
    case missingProviderToken = "MissingProviderToken"
    case invalidProviderToken = "InvalidProviderToken"
    case expiredProviderToken = "ExpiredProviderToken"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"

    /// The HTTP status.
    public var status: Int {
        switch self {
        case .badChannelId, .missingChannelId, .badMessageStoragePolicy, .invalidPushType, .cannotCreateChannelConfig,
            .badPayload:
            400
        case .channelNotRegistered, .badPath: 404
        case .methodNotAllowed: 405
        case .missingProviderToken, .invalidProviderToken, .expiredProviderToken: 403
        case .tooManyProviderTokenUpdates: 429
        }
    }
}

/// The push-to-start budget of one phone: at most ``limit`` start pushes per rolling ``windowMilliseconds``;
/// beyond it the start push is accepted by APNs (200) and the phone does not start the activity, as iOS logs
/// "Push-to-start budget exceeded … not starting activity". Apple publishes no number; the default (10 per hour)
/// is ours, after a DTS answer that about 10 starts in a short time exhaust it
/// (reference/live-activities.md §2.6, https://developer.apple.com/forums/thread/799505).
public struct PushToStartBudget: Sendable, Equatable {
    /// Starts allowed per window.
    public var limit: Int
    /// The window, in milliseconds (server clock).
    public var windowMilliseconds: Int64
    /// When the starts inside the window were spent.
    public private(set) var spent: [ServerInstant] = []

    /// A budget of `limit` starts per `windowMilliseconds`.
    public init(limit: Int = 10, windowMilliseconds: Int64 = 3_600_000) {
        self.limit = limit
        self.windowMilliseconds = windowMilliseconds
    }

    /// Spends one start at `now` when the budget allows it.
    /// - Returns: `true` when the start may go ahead.
    public mutating func spend(at now: ServerInstant) -> Bool {
        spent.removeAll { $0.milliseconds(to: now) >= windowMilliseconds }
        guard spent.count < limit else { return false }
        spent.append(now)
        return true
    }
}

/// `message-storage-policy` read as an integer (`true` or `"1"` fails to decode; a channel's policy is the number 0
/// or 1).
private struct StoragePolicyField: Decodable {
    let value: Int?
    enum CodingKeys: String, CodingKey { case value = "message-storage-policy" }
}
