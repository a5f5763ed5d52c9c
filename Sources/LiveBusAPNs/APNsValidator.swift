import Foundation
import LiveBusClock

/// What LiveBus knows of a device token when a push names it.
public enum APNsTokenStatus: Sendable, Equatable {
    /// A phone holds it, for this bundle id (`nil`: the phone's app takes any bundle id's pushes).
    case active(bundleID: String?)
    /// It was valid until `sinceMilliseconds` (server clock, ms since the Unix epoch; e.g. the activity ended
    /// and was dismissed) and no phone holds it now.
    case unregistered(bundleID: String?, sinceMilliseconds: Int64)
    /// LiveBus never gave it out.
    case unknown
}

/// The verdict on one request: the `apns-id` to answer with, and the push or the rejection.
public struct APNsVerdict: Sendable, Equatable {
    /// The client's `apns-id` when it is a UUID, else a generated one.
    public var apnsID: String
    /// The accepted push, or why not.
    public var result: Result<APNsPush, APNsRejection>
    /// For an accepted push to a token that is no longer active but inside the 410 delay: APNs answers 200,
    /// and no phone holds the token (the push reaches nobody; LiveBus says so in its verdict, never silently).
    public var noPhoneHoldsToken: Bool = false
}

/// APNs's request validation, in one documented order, as a pure function of the request, the provider-token
/// state, LiveBus's token directory and the server clock.
///
/// The order (each step's reason and status from "Handling notification responses from APNs"):
/// 1. route: `/3/device/<token>` or `/4/broadcasts/apps/<bundle-id>`, else 404 `BadPath`; `:method` POST, else
///    405 `MethodNotAllowed`; an empty token 400 `MissingDeviceToken`, one that is not 64 hex characters 400
///    `BadDeviceToken`.
/// 2. 400 `DuplicateHeaders`: an `apns-*` or `authorization` header sent twice.
/// 3. authentication: 403 `MissingProviderToken`, `InvalidProviderToken`, `ExpiredProviderToken`, 429
///    `TooManyProviderTokenUpdates` (``ProviderTokenVerifier``). Apple: "APNs validates the request using
///    either the provided authentication token or your server's certificate. If the validation succeeds, APNs
///    then uses the device token …" (Sending requests).
/// 4. headers: `apns-id` (400 `BadMessageId`), `apns-push-type` (400 `InvalidPushType`), `apns-topic` (400
///    `MissingTopic`, `BadTopic`: a `liveactivity` topic must end in `.push-type.liveactivity`), broadcasts'
///    `apns-channel-id` (400 `MissingChannelId`), `apns-priority` (400 `BadPriority`: 10, 5 or 1; 10 or 5 for
///    `liveactivity`), `apns-expiration` (400 `BadExpirationDate`: Unix seconds ≥ 0), `apns-collapse-id` (400
///    `BadCollapseId`: more than 64 bytes).
/// 5. body: 413 `PayloadTooLarge` above 4096 bytes (5120 for `voip`), 400 `PayloadEmpty`, 400 `BadPayload`
///    (LiveBus's own) when not a JSON object.
/// 6. token: unknown 400 `BadDeviceToken`; another bundle's 400 `DeviceTokenNotForTopic`; no longer active 410
///    `Unregistered` with its `timestamp` once ``unregisteredDelayMilliseconds`` have passed since it stopped
///    (before that, 200 and ``APNsVerdict/noPhoneHoldsToken``: Apple delays 410 by an unspecified time).
///
/// Apple does not publish the order it checks in; steps 1–3 follow the sentence quoted above, 4–6 are ours
/// (Pushy, a well-known mock, checks headers before the body too: `reference/durability-federation-apns.md`).
public struct APNsValidator: Sendable {
    /// Provider-token checks and memory.
    public var verifier: ProviderTokenVerifier
    /// How long after a token stops being valid APNs starts answering 410, in milliseconds. Apple delays it "for
    /// a while" by an unspecified time; LiveBus's default is 0 (at once), ours.
    public var unregisteredDelayMilliseconds: Int64

    /// A validator.
    public init(verifier: ProviderTokenVerifier = ProviderTokenVerifier(), unregisteredDelayMilliseconds: Int64 = 0) {
        self.verifier = verifier
        self.unregisteredDelayMilliseconds = unregisteredDelayMilliseconds
    }

    /// The route of `path`, or why it has none (`BadPath`, `MissingDeviceToken`, `BadDeviceToken`).
    public static func route(_ path: String) -> Result<APNsRoute, APNsRejection> {
        let pathOnly =
            path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        if pathOnly.hasPrefix("/3/device/") || pathOnly == "/3/device" {
            let token = pathOnly.dropFirst("/3/device/".count)
            if token.isEmpty {
                return .failure(APNsRejection(.missingDeviceToken, ":path \(path) names no device token"))
            }
            guard token.count == APNsLimits.deviceTokenHexCharacters, token.allSatisfy(\.isHexDigit) else {
                return .failure(
                    APNsRejection(
                        .badDeviceToken,
                        "device token \(token.prefix(80)) is not 64 hexadecimal characters (32 bytes)"
                    )
                )
            }
            return .success(.device(token: token.lowercased()))
        }
        let broadcastPrefix = "/4/broadcasts/apps/"
        if pathOnly.hasPrefix(broadcastPrefix) {
            let bundle = String(pathOnly.dropFirst(broadcastPrefix.count))
            if isBundleID(bundle) { return .success(.broadcast(bundleID: bundle)) }
        }
        return .failure(
            APNsRejection(
                .badPath,
                ":path \(path.prefix(200)) is not /3/device/<token> or /4/broadcasts/apps/<bundle-id>"
            )
        )
    }

    /// Whether `s` can be a bundle id: letters, digits, `-` and `.`, not empty (Apple, CFBundleIdentifier:
    /// "alphanumeric characters (A–Z, a–z, and 0–9), hyphens (-), and periods (.)").
    public static func isBundleID<S: StringProtocol>(_ s: S) -> Bool {
        !s.isEmpty && s.count <= 155
            && s.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".")
            }
    }

    /// Whether `s` is a UUID in the canonical 8-4-4-4-12 hexadecimal form ("a canonical UUID that's 36
    /// characters in length", Sending requests).
    public static func isCanonicalUUID(_ s: String) -> Bool {
        let groups = s.split(separator: "-", omittingEmptySubsequences: false)
        return s.count == 36 && groups.map(\.count) == [8, 4, 4, 4, 12]
            && groups.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    /// Validates `request`, received at `now`.
    /// - Parameters:
    ///   - request: the request.
    ///   - now: when it arrived (server clock).
    ///   - newID: makes an `apns-id` when the request has none (or a bad one): an upper-case UUID string.
    ///   - tokenStatus: LiveBus's token directory.
    /// - Returns: the verdict.
    public mutating func validate(
        _ request: APNsRequest,
        at now: ServerInstant,
        newID: () -> String,
        tokenStatus: (String) -> APNsTokenStatus
    ) -> APNsVerdict {
        let clientID = request.header("apns-id")
        let apnsID = clientID.flatMap { Self.isCanonicalUUID($0) ? $0 : nil } ?? newID()
        var noPhone = false
        let result = Result<APNsPush, APNsRejection> { () throws(APNsRejection) -> APNsPush in
            try check(
                request,
                clientID: clientID,
                apnsID: apnsID,
                now: now,
                tokenStatus: tokenStatus,
                noPhone: &noPhone
            )
        }
        return APNsVerdict(apnsID: apnsID, result: result, noPhoneHoldsToken: noPhone)
    }

    private mutating func check(
        _ r: APNsRequest,
        clientID: String?,
        apnsID: String,
        now: ServerInstant,
        tokenStatus: (String) -> APNsTokenStatus,
        noPhone: inout Bool
    ) throws(APNsRejection) -> APNsPush {
        // 1. route and method
        let route = try Self.route(r.path).get()
        guard r.method == "POST" else {
            throw APNsRejection(.methodNotAllowed, ":method is \(r.method); APNs accepts POST only")
        }
        // 2. repeated headers
        var seen: Set<String> = []
        for h in r.headers where h.name.hasPrefix("apns-") || h.name == "authorization" {
            if !seen.insert(h.name).inserted {
                throw APNsRejection(.duplicateHeaders, "header \(h.name) is sent more than once")
            }
        }
        // 3. authentication
        let token = try verifier.verify(authorization: r.header("authorization"), at: now)
        // 4. headers
        if let id = clientID, !Self.isCanonicalUUID(id) {
            throw APNsRejection(.badMessageId, "apns-id \(id.prefix(80)) is not a UUID (8-4-4-4-12 hex, 36 characters)")
        }
        let pushType = r.header("apns-push-type") ?? "alert"
        guard apnsPushTypes.contains(pushType) else {
            throw APNsRejection(
                .invalidPushType,
                "apns-push-type \(pushType.prefix(80)) is not one of \(apnsPushTypes.sorted().joined(separator: ", "))"
            )
        }
        var topic: String?
        var bundleID: String
        var channelID: String?
        switch route {
        case .device:
            guard let t = r.header("apns-topic"), !t.isEmpty else {
                throw APNsRejection(
                    .missingTopic,
                    "no apns-topic: with token authentication it is required (a Live Activity's is <bundle-id>\(liveActivityTopicSuffix))"
                )
            }
            topic = t
            if pushType == "liveactivity" {
                guard t.hasSuffix(liveActivityTopicSuffix), Self.isBundleID(t.dropLast(liveActivityTopicSuffix.count))
                else {
                    throw APNsRejection(
                        .badTopic,
                        "apns-topic \(t.prefix(160)) is not <bundle-id>\(liveActivityTopicSuffix), which apns-push-type liveactivity needs"
                    )
                }
                bundleID = String(t.dropLast(liveActivityTopicSuffix.count))
            } else {
                let base = Self.bundleID(ofTopic: t)
                guard Self.isBundleID(base) else {
                    throw APNsRejection(.badTopic, "apns-topic \(t.prefix(160)) is not a bundle id")
                }
                bundleID = base
            }
        case .broadcast(let bundle):
            bundleID = bundle
            guard pushType == "liveactivity" else {
                throw APNsRejection(
                    .invalidPushType,
                    "broadcasts carry Live Activity updates only: apns-push-type must be liveactivity, not \(pushType.prefix(80))"
                )
            }
            guard let c = r.header("apns-channel-id"), !c.isEmpty else {
                throw APNsRejection(.missingChannelId, "a broadcast needs apns-channel-id (the channel's id)")
            }
            channelID = c
        }
        var priority = 10
        if let p = r.header("apns-priority") {
            let allowed: [Int] = pushType == "liveactivity" ? [10, 5] : [10, 5, 1]
            guard let n = Int(p), allowed.contains(n) else {
                throw APNsRejection(
                    .badPriority,
                    "apns-priority \(p.prefix(40)) is not \(allowed.map(String.init).joined(separator: ", ")) (for apns-push-type \(pushType))"
                )
            }
            priority = n
        }
        var expiration: Int64?
        if let e = r.header("apns-expiration") {
            guard let n = Int64(e), n >= 0, e.allSatisfy(\.isASCII) else {
                throw APNsRejection(
                    .badExpirationDate,
                    "apns-expiration \(e.prefix(40)) is not a UNIX epoch date in seconds (0 = deliver once, never store)"
                )
            }
            expiration = n
        }
        let collapseID = r.header("apns-collapse-id")
        if let c = collapseID, c.utf8.count > APNsLimits.collapseIDBytes {
            throw APNsRejection(.badCollapseId, "apns-collapse-id is \(c.utf8.count) bytes; at most 64")
        }
        // 5. body
        let limit = pushType == "voip" ? APNsLimits.voipPayloadBytes : APNsLimits.payloadBytes
        if r.bodyLength > limit {
            throw APNsRejection(.payloadTooLarge, "the payload is \(r.bodyLength) bytes; APNs accepts at most \(limit)")
        }
        if r.bodyLength == 0 {
            throw APNsRejection(.payloadEmpty, "the payload is empty; send a JSON object with an aps dictionary")
        }
        // Foundation's reader says what it could not read (where the text breaks off, a number out of range, or
        // nesting past its 512 levels, which is valid JSON it will not read): that detail goes in the reason.
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(r.body), options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            throw APNsRejection(.badPayload, "the payload cannot be read as JSON" + (detail.map { ": \($0)" } ?? ""))
        }
        guard parsed is [String: Any] else {
            throw APNsRejection(.badPayload, "the payload is JSON but not an object ({\"aps\": {…}})")
        }
        // 6. the token
        if case .device(let deviceToken) = route {
            switch tokenStatus(deviceToken) {
            case .unknown:
                throw APNsRejection(
                    .badDeviceToken,
                    "no phone was given device token \(deviceToken): copy a token from `livebus status` (push tokens per phone) or a pushToken line of `livebus attach --json`"
                )
            case .active(let owner):
                guard owner == nil || owner == bundleID else {
                    throw APNsRejection(
                        .deviceTokenNotForTopic,
                        "device token \(deviceToken) belongs to \(owner ?? ""), not \(bundleID)"
                    )
                }
            case .unregistered(let owner, let since):
                guard owner == nil || owner == bundleID else {
                    throw APNsRejection(
                        .deviceTokenNotForTopic,
                        "device token \(deviceToken) belongs to \(owner ?? ""), not \(bundleID)"
                    )
                }
                if now.millisecondsSinceEpoch.saturatingSubtracting(since) >= unregisteredDelayMilliseconds {
                    throw APNsRejection(
                        .unregistered,
                        "device token \(deviceToken) is no longer active (its activity ended); stop sending to it",
                        timestampMilliseconds: since
                    )
                }
                noPhone = true
            }
        }
        return APNsPush(
            route: route,
            apnsID: apnsID,
            pushType: pushType,
            topic: topic,
            bundleID: bundleID,
            priority: priority,
            expirationSeconds: expiration,
            collapseID: collapseID,
            channelID: channelID,
            providerToken: token,
            body: r.body
        )
    }

    /// The bundle id in a topic: the topic without the suffix its push type adds (`.voip`, `.complication`,
    /// `.pushkit.fileprovider`, `.location-query`, `.voip-ptt`, `.push-type.liveactivity`; Sending requests).
    public static func bundleID(ofTopic t: String) -> String {
        for suffix in [
            liveActivityTopicSuffix, ".pushkit.fileprovider", ".location-query", ".complication", ".voip-ptt", ".voip",
        ]
        where t.hasSuffix(suffix) {
            return String(t.dropLast(suffix.count))
        }
        return t
    }
}
