import Foundation
import LiveBusWire
import Testing

@testable import LiveBusCLI

/// The `FEDERATION` block of `livebus status` (pure text from a status value; no cluster). Review finding 7: with
/// every NATS node down it showed the last answer's peers as "current" and a leader, and ages in raw milliseconds.
struct FederationStatusTextTests {
    static func status(state: String, readAgoMs: Double, activeMs: Double) -> JSONValue {
        .object([
            "federation": .object([
                "state": .string(state), "server": .null, "servers": .array([.string("nats://127.0.0.1:14222")]),
                "stream": .string("LIVEBUS"), "appliedSequence": .number(12), "messages": .number(12),
                "lastSequence": .number(12), "lag": .number(0), "replicas": .number(3), "cluster": .string("lb"),
                "leader": .string("n1"),
                "peers": .array([
                    .object([
                        "name": .string("n3"), "current": .bool(true), "offline": .bool(false), "lag": .number(0),
                        "activeMs": .number(activeMs),
                    ])
                ]),
                "readAgoMs": .number(readAgoMs),
            ])
        ])
    }

    @Test func aReconnectingLinkMarksTheStreamStateStaleWithItsAge() {
        let text = StatusText.federation(Self.status(state: "reconnecting", readAgoMs: 1_034_883, activeMs: 579))
        #expect(text.contains("stale: last read 17m14s ago, the link is reconnecting"), "\(text)")
        #expect(text.contains("peer n3: current, lag 0, seen 579ms ago"), "\(text)")
        #expect(!text.contains(" ms ago"), "\(text)")
    }

    /// What SYNC tells the phones (PROTOCOL.md §5.9) is said while it is not live, and not at all when it is.
    @Test func thePhonesSyncStateIsShownUnlessLive() {
        func text(_ state: String, sync: String?) -> String {
            guard case .object(var o) = Self.status(state: state, readAgoMs: 300, activeMs: 1)["federation"] else {
                return ""
            }
            o["sync"] = sync.map { .string($0) } ?? .null
            return StatusText.federation(.object(["federation": .object(o)]))
        }
        #expect(text("reconnecting", sync: "degraded").contains("phones told: degraded"))
        #expect(text("connected", sync: "catchingUp").contains("phones told: catchingUp"))
        #expect(!text("connected", sync: "live").contains("phones told"))
        #expect(!text("connected", sync: nil).contains("phones told"))
        let unjoined = StatusText.federation(.object(["federation": .object(["state": .string("unjoined")])]))
        #expect(unjoined.contains("not joined yet") && unjoined.contains("phones told: degraded"), "\(unjoined)")
    }

    @Test func aConnectedLinkIsNotStaleAndAgesCarryOneUnit() {
        let text = StatusText.federation(Self.status(state: "connected", readAgoMs: 300, activeMs: 65_400))
        #expect(!text.contains("stale"), "\(text)")
        #expect(text.contains("seen 1m5s ago"), "\(text)")
    }
}
