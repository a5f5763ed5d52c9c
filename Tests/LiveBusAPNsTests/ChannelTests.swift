import Foundation
import LiveBusAPNs
import LiveBusClock
import Testing

/// The channel management API as a pure function of the request, the directory and the clock.
struct ChannelTests {
    func request(_ method: String, _ path: String, _ headers: [(String, String)] = [], body: String = "") -> APNsRequest
    {
        APNsRequest(
            method: method,
            path: path,
            headers: [("authorization", "bearer \(unsignedJWT())")] + headers.map { ($0.0, $0.1) },
            body: Array(body.utf8)
        )
    }

    func unsignedJWT() -> String {
        let h = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8))
        let c = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":1767225600}"#.utf8))
        return "\(h).\(c).\(Base64URL.encode([UInt8](repeating: 1, count: 64)))"
    }

    func reason(_ r: APNsResponse) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])?["reason"] as? String
    }

    @Test func createReadListDelete() {
        var dir = APNsChannelDirectory()
        var verifier = ProviderTokenVerifier()
        var n = 0
        func handle(_ r: APNsRequest) -> APNsResponse {
            dir.handle(
                r,
                verifier: &verifier,
                at: at(0),
                newChannelID: {
                    n += 1
                    return Data("channel-\(n)".utf8).base64EncodedString()
                },
                newID: { UUID().uuidString }
            )
        }
        let path = "/1/apps/\(bundle)/channels"
        let created = handle(
            request("POST", path, body: #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        )
        #expect(created.status == 201)
        let id = created.header("apns-channel-id") ?? ""
        #expect(id == Data("channel-1".utf8).base64EncodedString())
        #expect(created.header("apns-request-id").map(APNsValidator.isCanonicalUUID) == true)
        let read = handle(request("GET", path, [("apns-channel-id", id)]))
        #expect(read.status == 200)
        #expect(
            String(decoding: read.body, as: UTF8.self) == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#
        )
        let all = handle(request("GET", "/1/apps/\(bundle)/all-channels"))
        #expect(all.status == 200 && String(decoding: all.body, as: UTF8.self).contains("Y2hhbm5lbC0x"))
        #expect(dir.channel(id, bundleID: bundle)?.messageStoragePolicy == 1)
        #expect(dir.channel(id, bundleID: "com.other.app") == nil, "a channel belongs to one bundle id")
        dir.broadcasted([1, 2, 3], on: id)
        #expect(dir.channel(id, bundleID: bundle)?.storedMessage == [1, 2, 3], "policy 1 keeps the newest message")
        #expect(handle(request("DELETE", path, [("apns-channel-id", id)])).status == 204)
        let gone = handle(request("GET", path, [("apns-channel-id", id)]))
        #expect(gone.status == 404 && reason(gone) == "ChannelNotRegistered")
    }

    @Test func errorsAreApples() {
        var dir = APNsChannelDirectory()
        var verifier = ProviderTokenVerifier()
        func handle(_ r: APNsRequest) -> APNsResponse {
            dir.handle(r, verifier: &verifier, at: at(0), newChannelID: { "Y2g=" }, newID: { UUID().uuidString })
        }
        let path = "/1/apps/\(bundle)/channels"
        let cases: [(APNsRequest, Int, String)] = [
            (request("GET", path), 400, "MissingChannelId"),
            (request("GET", path, [("apns-channel-id", "not base64!")]), 400, "BadChannelId"),
            (request("DELETE", path, [("apns-channel-id", "bm9uZQ==")]), 404, "ChannelNotRegistered"),
            (
                request("POST", path, body: #"{"message-storage-policy":3,"push-type":"LiveActivity"}"#), 400,
                "BadMessageStoragePolicy"
            ),
            (request("POST", path, body: #"{"message-storage-policy":0,"push-type":"alert"}"#), 400, "InvalidPushType"),
            // 0 or 1, the numbers; not a boolean, a string or 0.5 (fresh-user review 2026-12-03, finding 9)
            (
                request("POST", path, body: #"{"message-storage-policy":true,"push-type":"LiveActivity"}"#), 400,
                "BadMessageStoragePolicy"
            ),
            (
                request("POST", path, body: #"{"message-storage-policy":false,"push-type":"LiveActivity"}"#), 400,
                "BadMessageStoragePolicy"
            ),
            (
                request("POST", path, body: #"{"message-storage-policy":"1","push-type":"LiveActivity"}"#), 400,
                "BadMessageStoragePolicy"
            ),
            (
                request("POST", path, body: #"{"message-storage-policy":0.5,"push-type":"LiveActivity"}"#), 400,
                "BadMessageStoragePolicy"
            ),
            (request("POST", path, body: "not json"), 400, "BadPayload"),
            (request("PUT", path), 405, "MethodNotAllowed"),
            (request("POST", "/1/apps/\(bundle)/all-channels"), 405, "MethodNotAllowed"),
            (request("GET", "/1/apps/\(bundle)/other"), 404, "BadPath"),
            (
                APNsRequest(method: "GET", path: "/1/apps/\(bundle)/all-channels", headers: [], body: []), 403,
                "MissingProviderToken"
            ),
        ]
        for (r, status, name) in cases {
            let a = handle(r)
            #expect(
                a.status == status && reason(a) == name,
                "\(r.method) \(r.path): \(a.status) \(String(decoding: a.body, as: UTF8.self))"
            )
            #expect(a.header("apns-request-id") != nil)
        }
    }

    /// 10 starts per hour by default (ours): the 11th within the hour is refused, one frees an hour after the first.
    @Test func pushToStartBudget() {
        var b = PushToStartBudget()
        var spent: [Bool] = []
        for i in 0..<10 { spent.append(b.spend(at: at(Int64(i)))) }
        for t in [100, 3599, 3600] as [Int64] { spent.append(b.spend(at: at(t))) }
        #expect(spent == Array(repeating: true, count: 10) + [false, false, true])
    }

    /// Push-to-start tokens: 64 hex, one per phone and bundle id, stable.
    @Test func pushToStartTokens() {
        let a = LiveBusPushTokens.pushToStartToken(phone: "pro", bundleID: bundle)
        #expect(a.count == 64 && a.allSatisfy(\.isHexDigit))
        #expect(a == LiveBusPushTokens.pushToStartToken(phone: "pro", bundleID: bundle))
        #expect(a != LiveBusPushTokens.pushToStartToken(phone: "pro", bundleID: "com.other.app"))
        #expect(a != LiveBusPushTokens.activityToken(phone: "pro", order: bundle))
    }
}
