import Foundation
import LiveBusAPNs
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A Live Activity token (an activity's update token, an order's token, a push-to-start token) takes only
/// `apns-push-type: liveactivity` with `apns-topic: <bundle id>.push-type.liveactivity`; any other combination is
/// refused as APNs refuses it and reaches no phone (fresh-user review 2026-12-03, finding 3: `alert`, no push type,
/// `voip` and `background` with the bare bundle id were answered 200 and applied). Sources: Apple, "Sending
/// notification requests to APNs" (the `liveactivity` push type's topic); Apple Developer Forums thread 712499
/// (`DeviceTokenNotForTopic` for an activity token pushed with the bare bundle id); `APNsValidator` steps 4 and 6.
@Suite struct EmbeddedAPNsPushTypeTests {
    static let laTopic = "com.example.delivery.push-type.liveactivity"

    /// The answer's status and reason, and how many `push` commands reached the phone.
    static func push(
        to token: @Sendable (String) -> String,
        pushType: String?,
        topic: String,
        event: String = "update"
    ) throws -> (status: Int, reason: String?, relayed: Int) {
        let (bus, _) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let phone = bus.connect()
        _ = try phone.attach(helloFrame(name: "bg"))
        let endpoint = DaemonAPNs(server: nil, validator: APNsValidator())
        bus.engine.apns = endpoint
        endpoint.pushStarted.append(
            .init(
                phone: "bg",
                order: "S1",
                bundleID: "com.example.delivery",
                token: LiveBusPushTokens.activityToken(phone: "bg", order: "S1"),
                channel: nil
            )
        )
        try publisher.writeInbound(publishFrame(topic: "orders/B1", id: 1, eventBody("start", status: "created")))
        bus.advance(by: 10)
        _ = try phone.readOutboundFrames()
        var headers: [(name: String, value: String)] = [
            ("apns-topic", topic), ("apns-priority", "10"), ("authorization", "bearer \(EmbeddedAPNsTests.jwt())"),
        ]
        if let pushType { headers.append(("apns-push-type", pushType)) }
        let body =
            event == "start"
            ? #"{"aps":{"timestamp":1767225600,"event":"start","content-state":{"status":"cooking","etaEnd":788919300},"attributes-type":"OrderAttributes","attributes":{"orderID":"P1"},"alert":{"title":"Order","body":"Cooking"}}}"#
            : #"{"aps":{"timestamp":1767225601,"event":"update","content-state":{"status":"cooking","etaEnd":800000000}}}"#
        let answer = bus.engine.answerAPNs(
            APNsRequest(method: "POST", path: "/3/device/\(token("bg"))", headers: headers, body: Array(body.utf8)),
            endpoint: endpoint
        )
        bus.advance(by: 10)
        let relayed = try phone.readOutboundFrames().filter {
            $0.type == .command && (try? WireJSON.decode(CommandBody.self, from: $0.body))?.command == "push"
        }.count
        let reason = (try? WireJSON.decode(JSONValue.self, from: answer.body))?["reason"]?.stringValue
        return (answer.status, reason, relayed)
    }

    static let tokens: [(String, @Sendable (String) -> String, String)] = [
        ("push-started activity", { LiveBusPushTokens.activityToken(phone: $0, order: "S1") }, "update"),
        ("order activity", { LiveBusPushTokens.activityToken(phone: $0, order: "B1") }, "update"),
        (
            "push-to-start", { LiveBusPushTokens.pushToStartToken(phone: $0, bundleID: "com.example.delivery") },
            "start"
        ),
    ]

    @Test func liveactivityToTheLiveActivityTopicIsApplied() throws {
        for (name, token, event) in Self.tokens {
            let r = try Self.push(to: token, pushType: "liveactivity", topic: Self.laTopic, event: event)
            #expect(r.status == 200 && r.relayed == 1, "\(name): \(r)")
        }
    }

    /// The Live Activity topic with another push type (or none, which is `alert`): 400 `InvalidPushType`.
    @Test func anotherPushTypeOnTheLiveActivityTopicIsInvalidPushType() throws {
        for (name, token, event) in Self.tokens {
            for pushType in ["alert", nil, "voip", "background"] as [String?] {
                let r = try Self.push(to: token, pushType: pushType, topic: Self.laTopic, event: event)
                #expect(
                    r.status == 400 && r.reason == "InvalidPushType" && r.relayed == 0,
                    "\(name), \(pushType ?? "no push type"): \(r)"
                )
            }
        }
    }

    /// Another push type with its own topic (the bare bundle id, `.voip`): the token is not that topic's, 400
    /// `DeviceTokenNotForTopic`.
    @Test func anotherTopicIsDeviceTokenNotForTopic() throws {
        let combinations: [(String?, String)] = [
            ("background", "com.example.delivery"), ("alert", "com.example.delivery"), (nil, "com.example.delivery"),
            ("voip", "com.example.delivery.voip"),
        ]
        for (name, token, event) in Self.tokens {
            for (pushType, topic) in combinations {
                let r = try Self.push(to: token, pushType: pushType, topic: topic, event: event)
                #expect(
                    r.status == 400 && r.reason == "DeviceTokenNotForTopic" && r.relayed == 0,
                    "\(name), \(pushType ?? "no push type") to \(topic): \(r)"
                )
            }
        }
    }
}
