import Foundation
import LiveBusWire
import Testing

/// The replies written without Foundation (PING, PONG, UPTODATE, ACK) are byte for byte what JSONEncoder writes
/// with the wire's settings (sorted keys, no escaped slashes), over the integers' whole range, and decode back.
struct WireJSONCompactTests {
    static func foundation(_ v: some Encodable) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try e.encode(v))
    }

    static let signed: [Int64] = [0, 1, -1, 9, 10, -10, 1_767_225_600_000, -1_767_225_600_000, .max, .min, .max - 1]
    static let unsigned: [UInt64] = [0, 1, 9, 10, 99, 100, 1 << 53, .max, .max - 1]

    @Test func pingAndPongMatchJSONEncoder() throws {
        for t in Self.signed {
            #expect(try WireJSON.encode(PingBody(t1: t)) == Self.foundation(PingBody(t1: t)))
            let pong = PongBody(t1: t, t2: 0 &- t &+ 7, t3: t / 3)
            #expect(try WireJSON.encode(pong) == Self.foundation(pong))
        }
        // Within PROTOCOL.md §3's instants (what a decode accepts), the bytes decode back to the value.
        for t: Int64 in [0, 1, -1, 1_767_225_600_000, -1_767_225_600_000] {
            let pong = PongBody(t1: t, t2: t + 3, t3: t + 5)
            #expect(try WireJSON.decode(PongBody.self, from: WireJSON.encode(pong)) == pong)
        }
    }

    @Test func upToDateAndAckMatchJSONEncoder() throws {
        for n in Self.unsigned {
            #expect(try WireJSON.encode(UpToDateBody(sequence: n)) == Self.foundation(UpToDateBody(sequence: n)))
            #expect(try WireJSON.encode(AckBody(sequence: n)) == Self.foundation(AckBody(sequence: n)))
            #expect(EventJSON.ackBody(sequence: n) == (try Self.foundation(AckBody(sequence: n))))
        }
        #expect(String(decoding: try WireJSON.encode(UpToDateBody(sequence: 42)), as: UTF8.self) == #"{"sequence":42}"#)
    }
}
