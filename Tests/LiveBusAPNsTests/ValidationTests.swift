import Foundation
import LiveBusAPNs
import Testing

/// Every reason of "Handling notification responses from APNs" that LiveBus answers, one request each.
struct ValidationTests {
    @Test func aValidLiveActivityUpdateIsAccepted() throws {
        var v = APNsValidator()
        let verdict = judge(
            request(["apns-collapse-id": "order-A1001", "apns-expiration": "0", "apns-priority": "5"]),
            validator: &v
        )
        let push = try verdict.result.get()
        #expect(push.route == .device(token: token))
        #expect(push.pushType == "liveactivity")
        #expect(push.bundleID == bundle)
        #expect(push.priority == 5)
        #expect(push.expirationSeconds == 0)
        #expect(push.collapseID == "order-A1001")
        #expect(push.providerToken.issuer == "TEAM123456")
        #expect(verdict.apnsID == "00000000-0000-4000-8000-000000000001")
        #expect(!verdict.noPhoneHoldsToken)
    }

    @Test func defaultsArePriority10AndNoExpiration() throws {
        let push = try {
            var v = APNsValidator()
            return try judge(request(["apns-priority": nil]), validator: &v).result.get()
        }()
        #expect(push.priority == 10)
        #expect(push.expirationSeconds == nil)
        #expect(push.collapseID == nil)
    }

    @Test func aClientApnsIDIsEchoedAndABadOneRefused() {
        var v = APNsValidator()
        let id = "123e4567-E89B-12d3-a456-426614174000"
        #expect(judge(request(["apns-id": id]), validator: &v).apnsID == id)
        let bad = judge(request(["apns-id": "not-a-uuid"]), validator: &v)
        #expect(bad.apnsID == "00000000-0000-4000-8000-000000000001")
        #expect(reason(request(["apns-id": "not-a-uuid"])) == .badMessageId)
        #expect(reason(request(["apns-id": "123e4567e89b12d3a456426614174000"])) == .badMessageId)
    }

    @Test func pathAndMethod() {
        #expect(reason(request(path: "/3/devices/\(token)")) == .badPath)
        #expect(reason(request(path: "/")) == .badPath)
        #expect(reason(request(path: "/4/broadcasts/apps/")) == .badPath)
        #expect(reason(request(path: "/3/device/")) == .missingDeviceToken)
        #expect(reason(request(path: "/3/device/abc")) == .badDeviceToken)
        #expect(reason(request(path: "/3/device/" + String(repeating: "zz", count: 32))) == .badDeviceToken)
        #expect(reason(request(path: "/3/device/" + String(repeating: "ab", count: 33))) == .badDeviceToken)
        #expect(reason(request(method: "GET")) == .methodNotAllowed)
        #expect(reason(request(method: "PUT")) == .methodNotAllowed)
        #expect(reason(request(path: "/3/device/" + token.uppercased())) == nil)
    }

    @Test func statusCodesAreApples() {
        let table: [(APNsReason, Int)] = [
            (.payloadTooLarge, 413), (.badPriority, 400), (.badCollapseId, 400), (.invalidPushType, 400),
            (.missingTopic, 400), (.badTopic, 400), (.badDeviceToken, 400), (.badExpirationDate, 400),
            (.payloadEmpty, 400), (.invalidProviderToken, 403), (.expiredProviderToken, 403),
            (.missingProviderToken, 403), (.badPath, 404), (.methodNotAllowed, 405), (.unregistered, 410),
            (.tooManyProviderTokenUpdates, 429), (.tooManyRequests, 429), (.shutdown, 503),
        ]
        for (r, status) in table { #expect(r.status == status, "\(r)") }
    }

    @Test func duplicateHeaders() {
        var r = request()
        r.headers.append(("apns-priority", "5"))
        #expect(reason(r) == .duplicateHeaders)
    }

    @Test func pushTypeAndTopic() {
        #expect(reason(request(["apns-push-type": "liveActivity"])) == .invalidPushType)
        #expect(reason(request(["apns-push-type": "sms"])) == .invalidPushType)
        #expect(reason(request(["apns-topic": nil])) == .missingTopic)
        #expect(reason(request(["apns-topic": ""])) == .missingTopic)
        #expect(reason(request(["apns-topic": bundle])) == .badTopic)
        #expect(reason(request(["apns-topic": bundle + ".push-type.liveactivit"])) == .badTopic)
        #expect(reason(request(["apns-topic": "com example.push-type.liveactivity"])) == .badTopic)
        #expect(reason(request(["apns-topic": ".push-type.liveactivity"])) == .badTopic)
    }

    /// A Live Activity token takes `liveactivity` to `<bundle>.push-type.liveactivity` only; the Live Activity topic
    /// with another push type (or none) is `InvalidPushType`, another topic `DeviceTokenNotForTopic` (fresh-user
    /// review 2026-12-03, finding 3; sources in `APNsValidator`).
    @Test func liveActivityTokensTakeLiveActivityPushesOnly() {
        let la: [String: APNsTokenStatus] = [token: .active(bundleID: bundle, kind: .liveActivity)]
        #expect(reason(request(), directory: la) == nil)
        #expect(reason(request(["apns-push-type": "alert"]), directory: la) == .invalidPushType)
        #expect(reason(request(["apns-push-type": nil]), directory: la) == .invalidPushType)
        #expect(reason(request(["apns-push-type": "voip"]), directory: la) == .invalidPushType)
        #expect(
            reason(
                request(["apns-push-type": "background", "apns-topic": bundle, "apns-priority": "5"]),
                directory: la
            )
                == .deviceTokenNotForTopic
        )
        #expect(
            reason(request(["apns-push-type": "alert", "apns-topic": bundle]), directory: la) == .deviceTokenNotForTopic
        )
        #expect(
            reason(request(["apns-push-type": "voip", "apns-topic": bundle + ".voip"]), directory: la)
                == .deviceTokenNotForTopic
        )
        let ended: [String: APNsTokenStatus] = [
            token: .unregistered(bundleID: bundle, sinceMilliseconds: 0, kind: .liveActivity)
        ]
        #expect(
            reason(request(["apns-push-type": "alert", "apns-topic": bundle]), directory: ended)
                == .deviceTokenNotForTopic
        )
        // an app's device token still takes an alert to its bundle id
        #expect(reason(request(["apns-push-type": "alert", "apns-topic": bundle])) == nil)
    }

    /// APNs's paths carry no query (finding 9).
    @Test func aQueryIsBadPath() {
        #expect(reason(request(path: "/3/device/\(token)?x=1")) == .badPath)
        #expect(reason(request(path: "/3/device/\(token)?")) == .badPath)
    }

    @Test func priority() {
        #expect(reason(request(["apns-priority": "5"])) == nil)
        #expect(reason(request(["apns-priority": "10"])) == nil)
        #expect(reason(request(["apns-priority": "1"])) == .badPriority)  // not for Live Activities
        #expect(reason(request(["apns-priority": "7"])) == .badPriority)
        #expect(reason(request(["apns-priority": "high"])) == .badPriority)
        #expect(reason(request(["apns-priority": ""])) == .badPriority)
        // exactly Apple's values, not other spellings of them (fresh-user review 2026-12-03, finding 9)
        #expect(reason(request(["apns-priority": "010"])) == .badPriority)
        #expect(reason(request(["apns-priority": "+10"])) == .badPriority)
        #expect(reason(request(["apns-priority": " 5"])) == .badPriority)
        // an alert push may use 1 ("prioritize the device's power considerations")
        #expect(reason(request(["apns-push-type": "alert", "apns-topic": bundle, "apns-priority": "1"])) == nil)
    }

    @Test func expirationAndCollapseID() {
        #expect(reason(request(["apns-expiration": "0"])) == nil)
        #expect(reason(request(["apns-expiration": "1767229200"])) == nil)
        #expect(reason(request(["apns-expiration": "-1"])) == .badExpirationDate)
        #expect(reason(request(["apns-expiration": "tomorrow"])) == .badExpirationDate)
        #expect(reason(request(["apns-expiration": "1.5"])) == .badExpirationDate)
        #expect(reason(request(["apns-collapse-id": String(repeating: "x", count: 64)])) == nil)
        #expect(reason(request(["apns-collapse-id": String(repeating: "x", count: 65)])) == .badCollapseId)
        // bytes, not characters: 22 × 3-byte Hangul = 66 bytes
        #expect(reason(request(["apns-collapse-id": String(repeating: "주", count: 22)])) == .badCollapseId)
    }

    /// 4096 bytes pass, 4097 are 413 (Apple answers 413 where one known mock answers 400); VoIP allows 5120.
    @Test func payloadSize() {
        let pad = { (n: Int) in #"{"aps":{},"p":""# + String(repeating: "x", count: n - 17) + #""}"# }
        #expect(pad(4096).utf8.count == 4096)
        #expect(reason(request(body: pad(4096))) == nil)
        #expect(reason(request(body: pad(4097))) == .payloadTooLarge)
        #expect(reason(request(body: "{}", bodyLength: 100_000)) == .payloadTooLarge)
        #expect(APNsReason.payloadTooLarge.status == 413)
        let voip = ["apns-push-type": "voip", "apns-topic": bundle + ".voip"]
        #expect(reason(request(voip, body: pad(5120))) == nil)
        #expect(reason(request(voip, body: pad(5121))) == .payloadTooLarge)
    }

    @Test func emptyAndMalformedBodies() {
        #expect(reason(request(body: "")) == .payloadEmpty)
        #expect(reason(request(body: "{\"aps\":")) == .badPayload)
        #expect(reason(request(body: "[1,2]")) == .badPayload)
        #expect(reason(request(body: "\"aps\"")) == .badPayload)
    }

    /// A payload Foundation will not read says why, not only "not JSON" (new-user review 2026-12-03: 600 levels of
    /// valid nesting were called "not JSON"); one that is JSON but not an object says that.
    @Test func aPayloadThatCannotBeReadSaysWhy() {
        func message(_ body: String) -> String? {
            var v = APNsValidator()
            if case .failure(let e) = judge(
                request(body: body),
                validator: &v,
                directory: [token: .active(bundleID: bundle)]
            )
            .result {
                return e.reason == .badPayload ? e.message : nil
            }
            return nil
        }
        let deep = "{\"aps\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}"
        #expect(message(deep)?.contains("nested") == true, "\(message(deep) ?? "accepted")")
        #expect(message("{\"aps\":")?.hasPrefix("the payload cannot be read as JSON: ") == true)
        #expect(message("[1,2]") == "the payload is JSON but not an object ({\"aps\": {…}})")
    }

    @Test func tokenDirectory() {
        #expect(reason(request(path: "/3/device/\(otherToken)")) == .badDeviceToken)
        #expect(
            reason(request(), directory: [token: .active(bundleID: "com.example.other")]) == .deviceTokenNotForTopic
        )
    }

    /// 410 `Unregistered` carries the timestamp the token stopped at; within the configured delay APNs answers
    /// 200 and the verdict says no phone holds the token.
    @Test func unregisteredAfterTheDelayWithTimestamp() {
        let ended = at(-60).millisecondsSinceEpoch
        let directory: [String: APNsTokenStatus] = [token: .unregistered(bundleID: bundle, sinceMilliseconds: ended)]
        var immediate = APNsValidator()
        let v0 = judge(request(), validator: &immediate, directory: directory)
        guard case .failure(let e0) = v0.result else {
            Issue.record("expected 410")
            return
        }
        #expect(e0.reason == .unregistered)
        #expect(e0.timestampMilliseconds == ended)
        var delayed = APNsValidator(unregisteredDelayMilliseconds: 120_000)
        let early = judge(request(), validator: &delayed, at: t0, directory: directory)
        #expect((try? early.result.get()) != nil)
        #expect(early.noPhoneHoldsToken)
        let late = judge(request(), validator: &delayed, at: at(60), directory: directory)
        if case .failure(let e) = late.result {
            #expect(e.reason == .unregistered)
            #expect(e.timestampMilliseconds == ended)
        } else {
            Issue.record("expected 410 after the delay")
        }
    }

    @Test func broadcasts() throws {
        let path = "/4/broadcasts/apps/\(bundle)"
        let ok = request(path: path, ["apns-topic": nil, "apns-channel-id": "dHN0LXNyY2gtY2hubA=="])
        var v = APNsValidator()
        let push = try judge(ok, validator: &v).result.get()
        #expect(push.route == .broadcast(bundleID: bundle))
        #expect(push.channelID == "dHN0LXNyY2gtY2hubA==")
        #expect(reason(request(path: path, ["apns-topic": nil])) == .missingChannelId)
        #expect(
            reason(request(path: path, ["apns-push-type": "alert", "apns-channel-id": "dHN0LXNyY2gtY2hubA=="]))
                == .invalidPushType
        )
    }

    /// The documented order: route, method, repeats, authentication, headers, body, token.
    @Test func order() {
        #expect(reason(request(method: "GET", path: "/nope")) == .badPath)
        #expect(reason(request(method: "GET", authorization: nil)) == .methodNotAllowed)
        #expect(reason(request(["apns-priority": "7"], authorization: nil)) == .missingProviderToken)
        #expect(reason(request(["apns-priority": "7"], body: String(repeating: "x", count: 5000))) == .badPriority)
        #expect(reason(request(["apns-push-type": "x", "apns-topic": nil])) == .invalidPushType)
        #expect(reason(request(path: "/3/device/\(otherToken)", body: "")) == .payloadEmpty)
    }

    @Test func rejectionResponsesCarryReasonAndIDs() throws {
        let r = APNsResponse.failure(
            APNsRejection(.unregistered, "gone", timestampMilliseconds: 1_767_225_600_000),
            apnsID: "A",
            uniqueID: "B"
        )
        #expect(r.status == 410)
        #expect(r.header("apns-id") == "A")
        #expect(r.header("apns-unique-id") == "B")
        let o = try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any]
        #expect(o?["reason"] as? String == "Unregistered")
        #expect((o?["timestamp"] as? NSNumber)?.int64Value == 1_767_225_600_000)
        let ok = APNsResponse.success(apnsID: "A", uniqueID: "B")
        #expect(ok.status == 200 && ok.body.isEmpty)
    }
}

struct PushTokenTests {
    /// SHA-256 of the documented input: 64 hex characters, the same for the same phone and order, another for
    /// another; the empty input's digest is the standard one (FIPS 180-2).
    @Test func activityTokens() {
        #expect(
            LiveBusPushTokens.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
        let t = LiveBusPushTokens.activityToken(phone: "pro", order: "A1001")
        #expect(t == LiveBusPushTokens.sha256Hex(Array("livebus-activity/pro/A1001".utf8)))
        #expect(t.count == 64 && t.allSatisfy(\.isHexDigit))
        #expect(t != LiveBusPushTokens.activityToken(phone: "pro", order: "A1002"))
        #expect(t != LiveBusPushTokens.activityToken(phone: "duo", order: "A1001"))
        #expect(reason(request(path: "/3/device/\(t)"), directory: [t: .active(bundleID: nil)]) == nil)
    }
}
