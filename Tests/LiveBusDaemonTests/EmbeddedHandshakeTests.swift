import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// The handshake (HELLO → WELCOME), malformed input and version refusal, on the embedded daemon: no socket, no
/// sleep, virtual time. Moved from DaemonE2ETests (issue 15, item 6). Source: Protocol/PROTOCOL.md §4, §5.1.
@Suite struct EmbeddedHandshakeTests {
    @Test func helloIsWelcomedWithSessionTokenAndServerTimeThenProbed() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        let (welcome, frames) = try phone.attach(helloFrame(name: "pro"))
        let w = try #require(welcome)
        #expect(frames.types == [.welcome, .ping], "\(frames.types)")
        #expect(w.version == Int(Frame.version))
        #expect(w.name == "pro" && w.session == "s1" && !w.resumed)
        #expect(w.resumeToken.count == 32)
        #expect(w.serverTime == bus.now.millisecondsSinceEpoch)
        #expect(w.maxFrameSize == DaemonOptions.embedded().maximumFrameSize)
        let ping = try #require(frames.first(.ping, as: PingBody.self))
        #expect(ping.t1 == bus.now.millisecondsSinceEpoch)
        #expect(!phone.isClosed)
    }

    @Test func aHelloSplitIntoSingleBytesIsOneHandshake() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        for b in try helloFrame(name: "trickle").encoded() { phone.writeInbound([b]) }
        let frames = try phone.readOutboundFrames()
        #expect(frames.types == [.welcome, .ping])
    }

    @Test func aLiveNameIsRefusedToASecondSession() throws {
        let (bus, _) = try embeddedDaemon()
        let first = bus.connect()
        try first.attach(helloFrame(name: "pro"))
        let second = bus.connect()
        let (_, frames) = try second.attach(helloFrame(name: "pro"))
        #expect(frames.errors.map(\.name) == ["rejected"])
        #expect(frames.errors.first?.message.contains("'pro'") == true)
        #expect(second.isClosed && !first.isClosed)
    }

    @Test func adminRoleOfAnotherUserIsRefused() throws {
        let (bus, _) = try embeddedDaemon()
        let other = bus.connect(peerUserID: getuid() &+ 1)
        let (_, frames) = try other.attach(helloFrame(role: .admin, device: nil))
        #expect(frames.errors.map(\.name) == ["notPermitted"])
        #expect(other.isClosed)
        let own = bus.connect(peerUserID: getuid())
        let (welcome, _) = try own.attach(helloFrame(role: .admin, device: nil))
        #expect(welcome != nil)
    }

    struct BadInput: Sendable, CustomStringConvertible {
        var name: String
        var bytes: @Sendable () -> [UInt8]
        var afterHello: Bool
        var expected: String?
        var description: String { name }
    }

    static let badInputs: [BadInput] = [
        BadInput(
            name: "HELLO with no common version",
            bytes: { try! helloFrame(versions: [7, 8]).encoded() },
            afterHello: false,
            expected: "unsupportedVersion"
        ),
        BadInput(
            name: "HELLO offering only v1",
            bytes: { try! helloFrame(versions: [1]).encoded() },
            afterHello: false,
            expected: "unsupportedVersion"
        ),
        BadInput(
            name: "SUBSCRIBE before HELLO",
            bytes: { try! frame(.subscribe, SubscribeBody(patterns: ["orders/>"])).encoded() },
            afterHello: false,
            expected: "handshakeRequired"
        ),
        BadInput(
            name: "garbage before HELLO",
            bytes: { Array("GET / HTTP/1.1\r\n\r\n".utf8) },
            afterHello: false,
            expected: "frameTooLarge"
        ),
        BadInput(
            name: "body not JSON",
            bytes: { try! Frame(type: .subscribe, body: Array("{oops".utf8)).encoded() },
            afterHello: true,
            expected: "invalidBody"
        ),
        BadInput(
            name: "invalid topic pattern",
            bytes: { try! frame(.subscribe, SubscribeBody(patterns: ["orders/>/x"])).encoded() },
            afterHello: true,
            expected: "invalidTopic"
        ),
        BadInput(
            name: "unknown device",
            bytes: { try! helloFrame(device: "nokia-3310").encoded() },
            afterHello: false,
            expected: "unknownDevice"
        ),
        BadInput(
            name: "impossible posture",
            bytes: {
                try! helloFrame { $0.posture = PostureBody(foldState: "half-opened", orientation: "portrait") }
                    .encoded()
            },
            afterHello: false,
            expected: "invalidPosture"
        ),
        BadInput(
            name: "second HELLO",
            bytes: { try! helloFrame().encoded() },
            afterHello: true,
            expected: "duplicateHello"
        ),
        BadInput(
            name: "a frame only the daemon sends",
            bytes: { try! frame(.welcome, UpToDateBody(sequence: 0)).encoded() },
            afterHello: true,
            expected: "malformedFrame"
        ),
        BadInput(
            name: "PUBLISH without the publisher role",
            bytes: { try! publishFrame(topic: "orders/A1", id: 1).encoded() },
            afterHello: true,
            expected: "notPermitted"
        ),
    ]

    /// Each bad input gets its specific fatal ERROR and the connection closes, while a healthy phone on the same
    /// daemon keeps its session and gets the events published meanwhile.
    @Test(arguments: badInputs)
    func badInputIsRejectedAndOthersUnaffected(_ bad: BadInput) throws {
        let (bus, log) = try embeddedDaemon()
        let healthy = bus.connect()
        try healthy.attach(helloFrame(name: "healthy"))
        try healthy.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
        _ = try healthy.readOutboundFrames()
        let raw = bus.connect()
        if bad.afterHello {
            try raw.attach(helloFrame(name: "raw"))
        }
        raw.writeInbound(bad.bytes())
        let frames = try raw.readOutboundFrames()
        #expect(frames.errors.map(\.name) == [bad.expected!], "\(bad.name): \(frames.types)")
        #expect(frames.errors.first?.fatal == true)
        #expect(frames.errors.first.map { !$0.message.isEmpty } == true)
        #expect(raw.isClosed && raw.closeReason == .closedAfterFlush)
        #expect(!log.lines("protocol error", "code=\(bad.expected!)").isEmpty)
        // The healthy phone is untouched: a publisher's event reaches it.
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 1))
        #expect(try publisher.readOutboundFrames().types == [.ack])
        let got = try healthy.readOutboundFrames()
        #expect(got.filter { $0.type == .event }.map(\.topic) == ["orders/A1"])
        #expect(!healthy.isClosed)
    }

    /// A peer that closes mid-frame ends its session with no ERROR and nothing else logged as a protocol error.
    @Test func disconnectMidFrameClosesQuietly() throws {
        let (bus, log) = try embeddedDaemon()
        let raw = bus.connect()
        try raw.attach(helloFrame(name: "raw"))
        raw.writeInbound(Array(try frame(.ping, PingBody(t1: 1)).encoded().prefix(10)))
        raw.closeInbound()
        #expect(raw.isClosed && raw.closeReason == .closedByPeer(nil))
        #expect(log.lines("session closed", "reason=peer closed the connection").count == 1)
        #expect(log.lines("protocol error").isEmpty)
        #expect(bus.engine.sessions.isEmpty)
    }

    /// Every malformed vector of Protocol/vectors/frames.json, sent after HELLO, gets ERROR with that vector's code.
    @Test func everyMalformedGoldenVectorGetsItsError() throws {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Protocol/vectors/frames.json")
        struct File: Decodable {
            struct Malformed: Decodable {
                var name: String
                var hex: String
                var error: String
            }
            var malformed: [Malformed]
        }
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        #expect(file.malformed.count >= 11)
        for m in file.malformed {
            let (bus, _) = try embeddedDaemon()
            let raw = bus.connect()
            try raw.attach(helloFrame(name: "raw"))
            var bytes: [UInt8] = []
            var i = m.hex.startIndex
            while i < m.hex.endIndex {
                let j = m.hex.index(i, offsetBy: 2)
                bytes.append(UInt8(m.hex[i..<j], radix: 16)!)
                i = j
            }
            raw.writeInbound(bytes)
            let frames = try raw.readOutboundFrames()
            #expect(frames.errors.map(\.name) == [m.error], "\(m.name): \(frames.types)")
            #expect(raw.isClosed, "\(m.name)")
        }
    }

    /// Wire v2 (issue 15): a HELLO offering only version 1 is refused with the versions the daemon speaks; a client
    /// that frames its HELLO in v1 gets that refusal in v1 framing, which it can read (PROTOCOL.md §4.1).
    @Test func v1ClientIsRefusedNamingTheSupportedVersions() throws {
        let (bus, _) = try embeddedDaemon()
        let v2Peer = bus.connect()
        let (_, v2Frames) = try v2Peer.attach(helloFrame(versions: [1]))
        let refusal = try #require(v2Frames.errors.first)
        #expect(refusal.name == "unsupportedVersion" && refusal.fatal)
        #expect(refusal.message.contains("[1]") && refusal.message.contains("speaks [2]"), "\(refusal.message)")
        let v1Peer = bus.connect()
        var bytes = try helloFrame(versions: [1]).encoded()
        bytes[4] = 1  // a v1 frame: same header, version byte 1 (its CRC covers it)
        let crc = CRC32.checksum(bytes[4..<20] + bytes[24...])
        bytes.replaceSubrange(20..<24, with: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> $0) })
        v1Peer.writeInbound(bytes)
        let raw = v1Peer.readOutbound()
        try #require(raw.count > 24, "no answer to a v1 HELLO")
        let length = raw[0..<4].reduce(0) { $0 << 8 | Int($1) }
        #expect(raw.count == length + 4)
        #expect(raw[4] == 1 && raw[5] == FrameType.error.rawValue && raw[18] == 0 && raw[19] == 0)
        let sum = raw[20..<24].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(sum == CRC32.checksum(raw[4..<20] + raw[24...]))
        let body = try WireJSON.decode(ErrorBody.self, from: Array(raw[24...]))
        #expect(body.name == "unsupportedVersion" && body.fatal)
        #expect(body.message.contains("version 1") && body.message.contains("[2]"), "\(body.message)")
        #expect(v1Peer.isClosed && v2Peer.isClosed)
    }
}

/// Admin commands over the embedded daemon.
struct EmbeddedCommandTests {
    /// `fault.remove all` with nothing left is a success that removed 0 (toxiproxy's reset); an unknown id is
    /// `unknownFault` (e2e-chaos-net's `removeToxic all` failed when its toxics had already gone with their sessions).
    @Test func removingAllFaultsIsIdempotent() throws {
        let (bus, _) = try embeddedDaemon()
        let admin = bus.connect(peerUserID: getuid())
        _ = try admin.attach(helloFrame(role: .admin, device: nil))
        func command(_ id: UInt64, _ name: String, _ args: [String: JSONValue]) throws -> ResultBody? {
            try admin.writeInbound(frame(.command, sequence: id, CommandBody(command: name, args: args)))
            bus.run()
            return try admin.readAllOutboundFrames().filter { $0.type == .result && $0.sequence == id }.first
                .map { try WireJSON.decode(ResultBody.self, from: $0.body) }
        }
        let all = try #require(try command(1, "fault.remove", ["all": .bool(true)]))
        #expect(all.ok, "\(all)")
        guard case .object(let data)? = all.data else {
            Issue.record("fault.remove all answered no data: \(all)")
            return
        }
        #expect(data["removed"] == .number(0))
        let unknown = try #require(try command(2, "fault.remove", ["id": .string("nope")]))
        #expect(!unknown.ok && unknown.error?.code == "unknownFault", "\(unknown)")
    }
}
