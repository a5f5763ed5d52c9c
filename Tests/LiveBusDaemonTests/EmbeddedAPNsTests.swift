import Foundation
import LiveBusAPNs
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// APNs pushes through the refresh scheduler on the embedded daemon: virtual time, no socket, no wall clock.
@Suite struct EmbeddedAPNsTests {
    static let token = LiveBusPushTokens.activityToken(phone: "bg", order: "S1")

    static func request(_ i: Int, priority: String = "10") -> APNsRequest {
        let h = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8))
        let c = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":1767225600}"#.utf8))
        let jwt = "\(h).\(c).\(Base64URL.encode([UInt8](repeating: 1, count: 64)))"
        let body =
            #"{"aps":{"timestamp":\#(1_767_225_600 + i),"event":"update","content-state":{"status":"cooking","etaEnd":800000000}}}"#
        return APNsRequest(
            method: "POST",
            path: "/3/device/\(token)",
            headers: [
                ("apns-push-type", "liveactivity"), ("apns-topic", "com.example.delivery.push-type.liveactivity"),
                ("apns-priority", priority), ("authorization", "bearer \(jwt)"),
            ],
            body: Array(body.utf8)
        )
    }

    /// A backgrounded phone with a budget of 2 priority-10 pushes per hour: APNs answers 200 to all four pushes;
    /// two reach the phone at once, two are held (`hold=throttled`), and they reach it when budget slots free one
    /// hour (virtual time) after the first spends; priority 5 never draws on the budget (held for an opportunity).
    /// Sources: reference/live-activities.md §2.4; the budget number is this test's config (ours).
    @Test func priority10PushesAreThrottledByTheBudget() throws {
        let (bus, log) = try embeddedDaemon { $0.scheduler.priority10BudgetPerHour = 2 }
        let phone = bus.connect()
        _ = try phone.attach(helloFrame(name: "bg") { $0.appState = "background" })
        let endpoint = DaemonAPNs(server: nil, validator: APNsValidator())
        bus.engine.apns = endpoint
        endpoint.pushStarted.append(
            .init(phone: "bg", order: "S1", bundleID: "com.example.delivery", token: Self.token, channel: nil)
        )
        var relayed = 0
        // The phone reads what it is sent and answers every clock probe (a phone that does not is disconnected).
        func readPushes() throws {
            bus.advance(by: 1)
            let frames = try phone.readOutboundFrames()
            try EmbeddedSessionTests.answerPings(frames, on: phone, offset: 0)
            relayed +=
                frames.filter {
                    $0.type == .command && (try? WireJSON.decode(CommandBody.self, from: $0.body))?.command == "push"
                }.count
        }
        func wait(seconds: Int) throws {
            for _ in 0..<seconds {
                bus.advance(by: 999)
                try readPushes()
            }
        }
        for i in 1...4 {
            let answer = bus.engine.answerAPNs(Self.request(i), endpoint: endpoint)
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        }
        try readPushes()
        #expect(relayed == 2, "the budget lets two through")
        #expect(log.lines("apns push held by the refresh scheduler", "hold=throttled").count == 2, "\(log.lines)")
        try wait(seconds: 3595)
        #expect(relayed == 2, "still throttled just before the hour")
        try wait(seconds: 70)
        #expect(relayed == 4, "released as the budget's slots free, one hour after they were spent")
        let five = bus.engine.answerAPNs(Self.request(5, priority: "5"), endpoint: endpoint)
        #expect(five.status == 200)
        #expect(
            log.lines("apns push held by the refresh scheduler", "hold=opportunistic").count == 1,
            "\(log.lines.filter { $0.contains("apns") })"
        )
    }

    static func jwt() -> String {
        let h = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8))
        let c = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":1767225600}"#.utf8))
        return "\(h).\(c).\(Base64URL.encode([UInt8](repeating: 1, count: 64)))"
    }

    /// `livebus attach --channel ID` (HELLO profile `channels`): a broadcast on that channel reaches the phone's order
    /// activities, current and later ones, and status lists the channel for that phone (review finding 2).
    @Test func attachChannelReceivesBroadcasts() throws {
        let (bus, log) = try embeddedDaemon()
        let endpoint = DaemonAPNs(server: nil, validator: APNsValidator())
        bus.engine.apns = endpoint
        let create = bus.engine.answerAPNs(
            APNsRequest(
                method: "POST",
                path: "/1/apps/com.example.delivery/channels",
                headers: [("authorization", "bearer \(Self.jwt())")],
                body: Array(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#.utf8)
            ),
            endpoint: endpoint
        )
        #expect(create.status == 201, "\(String(decoding: create.body, as: UTF8.self))")
        let channel = try #require(create.header("apns-channel-id"))
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let phone = bus.connect()
        _ = try phone.attach(helloFrame(name: "ch") { $0.profile = ProfileBody(channels: [channel]) })
        try publisher.writeInbound(publishFrame(topic: "orders/B1", id: 1, eventBody("start", status: "created")))
        bus.advance(by: 10)
        _ = try phone.readOutboundFrames()
        let status = bus.engine.apnsStatus()
        guard case .array(let phones)? = status["phones"], case .array(let channels)? = phones.first?["channels"]
        else {
            Issue.record("no phones in \(status)")
            return
        }
        #expect(channels == [.string(channel)], "\(status)")
        func broadcast(_ i: Int) -> APNsResponse {
            bus.engine.answerAPNs(
                APNsRequest(
                    method: "POST",
                    path: "/4/broadcasts/apps/com.example.delivery",
                    headers: [
                        ("apns-push-type", "liveactivity"), ("apns-channel-id", channel),
                        ("apns-priority", "10"), ("authorization", "bearer \(Self.jwt())"),
                    ],
                    body: Array(
                        #"{"aps":{"timestamp":\#(1_767_225_600 + i),"event":"update","content-state":{"status":"cooking","etaEnd":800000000}}}"#
                            .utf8
                    )
                ),
                endpoint: endpoint
            )
        }
        func relayed() throws -> [CommandBody] {
            bus.advance(by: 10)
            let frames = try phone.readOutboundFrames()
            try EmbeddedSessionTests.answerPings(frames, on: phone, offset: 0)
            return frames.filter { $0.type == .command }.compactMap {
                try? WireJSON.decode(CommandBody.self, from: $0.body)
            }
            .filter { $0.command == "push" }
        }
        let first = broadcast(1)
        #expect(first.status == 200)
        #expect(first.header("livebus-push-id")?.isEmpty == false, "\(log.lines.filter { $0.contains("broadcast") })")
        #expect(try relayed().count == 1, "the broadcast reaches B1")
        // A later order's activity listens on the channel too.
        try publisher.writeInbound(publishFrame(topic: "orders/B2", id: 2, eventBody("start", status: "created")))
        bus.advance(by: 10)
        _ = try phone.readOutboundFrames()
        #expect(broadcast(2).status == 200)
        #expect(try relayed().count == 2, "B1 and B2 both get it")
    }
}
