import Foundation
import LiveBusAPNs
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A push-to-start's `attributes.orderID` names the activity (its `apns/` topic, logs, status) only when it is one
/// valid topic segment (``Topic/validate(_:)``): an id with a control character or whitespace gets the
/// `pts-<apns-id>` id as any unusable one does (fresh-user review 2026-12-03, finding 1; PROTOCOL.md §11).
@Suite struct EmbeddedAPNsOrderIDTests {
    /// The order id the daemon relays to the phone for a push-to-start whose `attributes.orderID` is `id`.
    static func relayedOrder(for id: String) throws -> String? {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        _ = try phone.attach(helloFrame(name: "bg") { $0.appState = "background" })
        let endpoint = DaemonAPNs(server: nil, validator: APNsValidator())
        bus.engine.apns = endpoint
        let token = LiveBusPushTokens.pushToStartToken(phone: "bg", bundleID: "com.example.delivery")
        let attributes = String(decoding: try WireJSON.encode(["orderID": id]), as: UTF8.self)
        let body =
            #"{"aps":{"timestamp":1767225600,"event":"start","content-state":{"status":"cooking","etaEnd":788919300},"attributes-type":"OrderAttributes","attributes":\#(attributes),"alert":{"title":"Order","body":"Cooking"}}}"#
        let request = APNsRequest(
            method: "POST",
            path: "/3/device/\(token)",
            headers: [
                ("apns-push-type", "liveactivity"), ("apns-topic", "com.example.delivery.push-type.liveactivity"),
                ("apns-priority", "10"), ("apns-id", "ABCDEF12-0000-4000-8000-000000000000"),
                ("authorization", "bearer \(EmbeddedAPNsTests.jwt())"),
            ],
            body: Array(body.utf8)
        )
        let answer = bus.engine.answerAPNs(request, endpoint: endpoint)
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        bus.advance(by: 1)
        let push = try phone.readOutboundFrames().compactMap { f -> CommandBody? in
            guard f.type == .command, let c = try? WireJSON.decode(CommandBody.self, from: f.body) else { return nil }
            return c.command == "push" ? c : nil
        }.first
        guard case .string(let order)? = push?.args["order"] else { return nil }
        return order
    }

    @Test func aValidIdIsKept() throws {
        #expect(try Self.relayedOrder(for: "S1") == "S1")
    }

    @Test(arguments: ["S\u{0}1", "S\u{1B}[31m", "S 1", "S\u{A0}1", "S\u{2028}1", "*", ">", "a/b", ""])
    func anIdThatIsNotATopicSegmentIsReplaced(id: String) throws {
        #expect(try Self.relayedOrder(for: id) == "pts-abcdef12")
    }
}
