import Foundation
import LiveBusClock

/// What a device token was issued for, which decides the pushes it takes.
public enum APNsTokenKind: Sendable, Equatable {
    /// An app's device token (`registerForRemoteNotifications`): any push type whose topic names its bundle.
    case device
    /// A Live Activity token: an activity's `pushToken` (update, end) or ActivityKit's `pushToStartToken`. It takes
    /// only `apns-push-type: liveactivity` with `apns-topic: <bundle id>.push-type.liveactivity` (Apple, "Sending
    /// notification requests to APNs": "If you set this push type, the apns-topic header field must use your app's
    /// bundle ID with .push-type.liveactivity appended to the end"; "Starting and updating Live Activities with
    /// ActivityKit push notifications"). Every token LiveBus gives out is one.
    case liveActivity
}

/// What LiveBus knows of a device token when a push names it.
public enum APNsTokenStatus: Sendable, Equatable {
    /// A phone holds it, for this bundle id (`nil`: the phone's app takes any bundle id's pushes), issued as `kind`.
    case active(bundleID: String?, kind: APNsTokenKind = .device)
    /// It was valid until `sinceMilliseconds` (server clock, ms since the Unix epoch; e.g. the activity ended
    /// and was dismissed) and no phone holds it now.
    case unregistered(bundleID: String?, sinceMilliseconds: Int64, kind: APNsTokenKind = .device)
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
/// 1. route: `/3/device/<token>` or `/4/broadcasts/apps/<bundle-id>` (no query), else 404 `BadPath`; `:method` POST, else
///    405 `MethodNotAllowed`; an empty token 400 `MissingDeviceToken`, one that is not 64 hex characters 400
///    `BadDeviceToken`.
/// 2. 400 `DuplicateHeaders`: an `apns-*` or `authorization` header sent twice.
/// 3. authentication: 403 `MissingProviderToken`, `InvalidProviderToken`, `ExpiredProviderToken`, 429
///    `TooManyProviderTokenUpdates` (``ProviderTokenVerifier``). Apple: "APNs validates the request using
///    either the provided authentication token or your server's certificate. If the validation succeeds, APNs
///    then uses the device token …" (Sending requests).
/// 4. headers: `apns-id` (400 `BadMessageId`), `apns-push-type` (400 `InvalidPushType`), `apns-topic` (400
///    `MissingTopic`, `BadTopic`: a `liveactivity` topic must end in `.push-type.liveactivity`; 400
///    `InvalidPushType` for a `<bundle id>.push-type.liveactivity` topic with another push type or none, since
///    that topic is the `liveactivity` push type's: "The apns-push-type value is invalid"), broadcasts'
///    `apns-channel-id` (400 `MissingChannelId`), `apns-priority` (400 `BadPriority`: exactly `10`, `5` or `1`, not
///    `010` or `+10`; 10 or 5 for `liveactivity`), `apns-expiration` (400 `BadExpirationDate`: Unix seconds ≥ 0), `apns-collapse-id` (400
///    `BadCollapseId`: more than 64 bytes).
/// 5. body: 413 `PayloadTooLarge` above 4096 bytes (5120 for `voip`), 400 `PayloadEmpty`, 400 `BadPayload`
///    (LiveBus's own) when not a JSON object.
/// 6. token: unknown 400 `BadDeviceToken`; another bundle's 400 `DeviceTokenNotForTopic`; a Live Activity token
///    (``APNsTokenKind/liveActivity``) pushed with another push type and topic (`alert`, none, `voip`,
///    `background` with the bare bundle id…) 400 `DeviceTokenNotForTopic` ("The device token doesn't match the
///    specified topic": its topic is `<bundle id>.push-type.liveactivity`; APNs answered exactly that to a push to an
///    activity's token with the bare bundle id as topic and no push type, Apple Developer Forums thread 712499, where
///    Apple's Technology Evangelist names `apns-push-type: liveactivity` and the topic suffix as the fix); no longer active 410
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
        // APNs's paths carry no query ("/3/device/<device token>"): one with `?` is not one of them, 404 `BadPath`.
        guard !path.contains("?") else {
            return .failure(
                APNsRejection(
                    .badPath,
                    ":path \(path.prefix(200)) has a query; APNs's paths are /3/device/<token> and /4/broadcasts/apps/<bundle-id>, without one"
                )
            )
        }
        let pathOnly = path
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
            } else if t.hasSuffix(liveActivityTopicSuffix) {
                throw APNsRejection(
                    .invalidPushType,
                    "apns-topic \(t.prefix(160)) is a Live Activity topic, which takes apns-push-type liveactivity, not "
                        + (r.header("apns-push-type") == nil
                            ? "alert (the default when apns-push-type is absent)" : String(pushType.prefix(80)))
                )
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
            // Exactly the digits Apple lists ("10", "5", "1"): `Int("010")` and `Int("+10")` are 10, APNs's value is not.
            guard let n = Int(p), allowed.contains(n), p == String(n) else {
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
            case .active(let owner, let kind):
                guard owner == nil || owner == bundleID else {
                    throw APNsRejection(
                        .deviceTokenNotForTopic,
                        "device token \(deviceToken) belongs to \(owner ?? ""), not \(bundleID)"
                    )
                }
                try Self.checkKind(kind, token: deviceToken, pushType: pushType, topic: topic, bundleID: bundleID)
            case .unregistered(let owner, let since, let kind):
                guard owner == nil || owner == bundleID else {
                    throw APNsRejection(
                        .deviceTokenNotForTopic,
                        "device token \(deviceToken) belongs to \(owner ?? ""), not \(bundleID)"
                    )
                }
                try Self.checkKind(kind, token: deviceToken, pushType: pushType, topic: topic, bundleID: bundleID)
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

    /// Refuses a push to a Live Activity token that is not `liveactivity` to `<bundle id>.push-type.liveactivity`
    /// (400 `DeviceTokenNotForTopic`; see step 6 of the type's documentation for the source).
    private static func checkKind(
        _ kind: APNsTokenKind,
        token: String,
        pushType: String,
        topic: String?,
        bundleID: String
    ) throws(APNsRejection) {
        guard kind == .liveActivity, pushType != "liveactivity" else { return }
        throw APNsRejection(
            .deviceTokenNotForTopic,
            "device token \(token) is a Live Activity token: it takes apns-push-type liveactivity with apns-topic "
                + "\(bundleID)\(liveActivityTopicSuffix), not apns-push-type \(pushType) with apns-topic \(topic ?? "")"
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
