import Foundation
import LiveBusClient
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// The daemon end to end over a real Unix socket: the demo to three phones, refusal of a second daemon, and every
/// kind of bad input answered with a specific ERROR while other sessions keep being served.
/// Source: issue 2 "Done when"; Protocol/PROTOCOL.md §6 (errors).
@Suite(.serialized)
struct E2EDaemonTests {
    static let fullSequence = ["created", "cooking", "awaitingPickup", "pickedUp", "delivering", "delivered"]

    /// Three phones (one 90 s fast, one backgrounded after the start) each apply every event of demo-120s once, in
    /// sequence order with no gap, and see the statuses in the backend's order ending delivered.
    @Test func demoReachesThreePhonesInOrderWithoutGaps() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 40)
        let names = ["pro", "duo-flat", "duo-half"]
        let sessions = names.map { n in
            bus.session(n) { o in
                if n != "pro" { o.device = "iphone-duo" }
                if n == "duo-half" {
                    o.posture = PostureBody(foldState: "half-opened", orientation: "landscape")
                    o.clockSkewMilliseconds = 90_000
                }
            }
        }
        var applied: [String: [AppliedUpdate]] = [:]
        for s in sessions {
            s.onUpdate = { u in if u.type == "update" { applied[u.session, default: []].append(u) } }
            s.start()
        }
        let done = bus.run(timeoutMs: 20_000) {
            names.allSatisfy { applied[$0]?.last?.status == "delivered" }
        }
        #expect(done, "not every phone reached delivered: \(applied.mapValues { $0.map(\.status) })")
        for n in names {
            let u = applied[n] ?? []
            #expect(u.map(\.seq) == Array(1...UInt64(u.count)), "\(n) applied sequences \(u.map(\.seq))")
            var statuses: [String] = []
            for x in u where statuses.last != x.status { statuses.append(x.status) }
            #expect(statuses == Self.fullSequence, "\(n) saw \(statuses)")
            #expect(
                u.allSatisfy { $0.applied },
                "\(n): \(u.filter { !$0.applied }.map { "\($0.seq) \($0.reason ?? "")" })"
            )
        }
        // The fast phone's countdown targets are in its own clock: 90 s later than the others' for the same event,
        // within the two conversions' stated error bounds (each delivery carries its estimate's uncertainty; on a
        // loaded machine the bounds widen, and a wrong conversion is off by far more than they allow).
        let pro = applied["pro"]!
        let half = applied["duo-half"]!
        for (a, b) in zip(pro, half) where a.seq == b.seq {
            let bound = Int64(a.uncertaintyMs + b.uncertaintyMs) + 1
            #expect(
                abs(b.etaTarget - a.etaTarget - 90_000) <= bound,
                "seq \(a.seq): \(b.etaTarget - a.etaTarget) ms apart, bound ±\(bound) ms"
            )
        }
        for s in sessions { s.close() }
        bus.shutdown()
    }

    /// A second daemon on a socket a live daemon serves refuses to start and leaves the first untouched.
    @Test func secondDaemonOnSameSocketIsRefused() throws {
        let bus = try TestBus(scenario: nil)
        let second = Daemon(options: DaemonOptions(socketPath: bus.socket), loop: bus.loop, logger: .none)
        #expect(throws: DaemonError.self) { try second.start(handleSignals: false) }
        do { try second.start(handleSignals: false) } catch {
            #expect(error.message.contains("another livebusd is already serving"))
        }
        #expect(SocketProbe.probe(path: bus.socket) == .live)
        bus.shutdown()
    }

    /// A stale socket file (nothing listening, as after kill -9) is removed and the daemon starts.
    @Test func staleSocketFileIsReplaced() throws {
        let dir = temporaryDirectory("lbe")
        let path = dir + "/bus.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(fd)
        #expect(SocketProbe.probe(path: path) == .stale)
        let loop = try EventLoop()
        let d = Daemon(options: DaemonOptions(socketPath: path), loop: loop, logger: .none)
        try d.start(handleSignals: false)
        #expect(SocketProbe.probe(path: path) == .live)
        d.shutdown(reason: "test")
        loop.run()
        loop.close()
        #expect(access(path, F_OK) != 0, "shutdown removes the socket file")
        rmdir(dir)
    }

    struct BadInput: Sendable, CustomStringConvertible {
        var name: String
        var bytes: @Sendable () -> [UInt8]
        var afterHello: Bool
        var expected: WireError.Code?
        var description: String { name }
    }

    static let badInputs: [BadInput] = [
        BadInput(
            name: "garbage before HELLO",
            bytes: { Array("GET / HTTP/1.1\r\n\r\n".utf8) },
            afterHello: false,
            expected: .frameTooLarge
        ),
        BadInput(
            name: "oversized frame",
            bytes: { [0x00, 0x10, 0x00, 0x00] + [UInt8](repeating: 0, count: 20) },
            afterHello: true,
            expected: .frameTooLarge
        ),
        BadInput(
            name: "unknown frame type",
            bytes: {
                var b = try! Frame(type: .ping, body: Array(#"{"t1":1}"#.utf8)).encoded()
                b[5] = 0x7E
                return b
            },
            afterHello: true,
            expected: .unknownFrameType
        ),
        BadInput(
            name: "wrong frame version",
            bytes: {
                var b = try! Frame(type: .ping, body: Array(#"{"t1":1}"#.utf8)).encoded()
                b[4] = 9
                return b
            },
            afterHello: false,
            expected: .unsupportedVersion
        ),
        BadInput(
            name: "HELLO with no common version",
            bytes: { try! hello(versions: [7, 8]).encoded() },
            afterHello: false,
            expected: .unsupportedVersion
        ),
        BadInput(
            name: "HELLO offering only v1",
            bytes: { try! hello(versions: [1]).encoded() },
            afterHello: false,
            expected: .unsupportedVersion
        ),
        BadInput(
            name: "corrupted frame (bad CRC)",
            bytes: {
                var b = try! Frame(type: .subscribe, body: Array(#"{"patterns":["orders/>"]}"#.utf8)).encoded()
                b[b.count - 3] ^= 0x20
                return b
            },
            afterHello: true,
            expected: .checksumMismatch
        ),
        BadInput(
            name: "SUBSCRIBE before HELLO",
            bytes: { try! Frame(type: .subscribe, body: Array(#"{"patterns":["orders/>"]}"#.utf8)).encoded() },
            afterHello: false,
            expected: .handshakeRequired
        ),
        BadInput(
            name: "body not JSON",
            bytes: { try! Frame(type: .subscribe, body: Array("{oops".utf8)).encoded() },
            afterHello: true,
            expected: .invalidBody
        ),
        BadInput(
            name: "invalid topic pattern",
            bytes: { try! Frame(type: .subscribe, body: Array(#"{"patterns":["orders/>/x"]}"#.utf8)).encoded() },
            afterHello: true,
            expected: .invalidTopic
        ),
        BadInput(
            name: "unknown device",
            bytes: { try! hello(device: "nokia-3310").encoded() },
            afterHello: false,
            expected: .unknownDevice
        ),
        BadInput(
            name: "impossible posture",
            bytes: {
                var h = try! WireJSON.decode(HelloBody.self, from: hello().body)
                h.posture = PostureBody(foldState: "half-opened", orientation: "portrait")
                return try! Frame(type: .hello, body: WireJSON.encode(h)).encoded()
            },
            afterHello: false,
            expected: .invalidPosture
        ),
        BadInput(name: "second HELLO", bytes: { try! hello().encoded() }, afterHello: true, expected: .duplicateHello),
        BadInput(
            name: "disconnect mid-frame",
            bytes: { Array(try! Frame(type: .ping, body: Array(#"{"t1":1}"#.utf8)).encoded().prefix(10)) },
            afterHello: true,
            expected: nil
        ),
    ]

    /// Wire v2 (issue 15): a HELLO offering only version 1 is refused with the versions the daemon speaks; a client
    /// that frames its HELLO in v1 gets that refusal in v1 framing, which it can read (PROTOCOL.md §4.1).
    @Test func v1ClientIsRefusedNamingTheSupportedVersions() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 60)
        var v2Peer: RawPeer?
        var v1Peer: RawPeer?
        RawPeer.connect(bus) { p in
            v2Peer = p
            p.send(hello(versions: [1]))
        }
        RawPeer.connect(bus) { p in
            v1Peer = p
            var bytes = try! hello(versions: [1]).encoded()
            bytes[4] = 1  // a v1 frame: same header, version byte 1 (its CRC covers it)
            let crc = CRC32.checksum(bytes[4..<20] + bytes[24...])
            bytes.replaceSubrange(20..<24, with: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> $0) })
            p.connection.write(bytes)
        }
        let done = bus.run(timeoutMs: 15_000) { (v2Peer?.closed ?? false) && (v1Peer?.closed ?? false) }
        #expect(done)
        let refusal = try #require(v2Peer?.errors.first)
        #expect(refusal.name == "unsupportedVersion" && refusal.fatal)
        #expect(refusal.message.contains("[1]") && refusal.message.contains("speaks [2]"), "\(refusal.message)")
        // The v1 peer's answer: one v1-framed ERROR (version byte 1, trailer length 0, CRC over bytes 4… as in v1).
        let raw = v1Peer?.received ?? []
        try #require(raw.count > 24, "no answer to a v1 HELLO")
        let length = raw[0..<4].reduce(0) { $0 << 8 | Int($1) }
        #expect(raw.count == length + 4)
        #expect(raw[4] == 1 && raw[5] == FrameType.error.rawValue && raw[18] == 0 && raw[19] == 0)
        let crc = raw[20..<24].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(crc == CRC32.checksum(raw[4..<20] + raw[24...]))
        let body = try WireJSON.decode(ErrorBody.self, from: Array(raw[24...]))
        #expect(body.name == "unsupportedVersion" && body.fatal)
        #expect(body.message.contains("version 1") && body.message.contains("[2]"), "\(body.message)")
        bus.shutdown()
    }

    /// Each bad input gets its specific ERROR (where a reply is possible) and the connection closes, while a healthy
    /// phone on the same daemon keeps receiving the demo to the end.
    @Test(arguments: badInputs)
    func badInputIsRejectedAndOthersUnaffected(_ bad: BadInput) throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 60)
        let healthy = bus.session("healthy")
        var healthyStatuses: [String] = []
        healthy.onUpdate = { u in if u.type == "update" { healthyStatuses.append(u.status) } }
        healthy.start()
        var peer: RawPeer?
        RawPeer.connect(bus) { p in
            peer = p
            if bad.afterHello { p.send(hello(name: "raw")) }
            p.connection.write(bad.bytes())
            if bad.expected == nil { p.connection.close() }
        }
        let done = bus.run(timeoutMs: 15_000) {
            (peer?.closed ?? false) && healthyStatuses.last == "delivered"
        }
        #expect(done, "raw closed: \(peer?.closed ?? false), healthy saw \(healthyStatuses)")
        if let expected = bad.expected {
            let errs = peer?.errors ?? []
            #expect(errs.count == 1, "errors: \(errs)")
            #expect(errs.first?.name == expected.name, "\(bad.name): got \(errs.map(\.name))")
            #expect(errs.first?.fatal == true)
            #expect(!(errs.first?.message.isEmpty ?? true))
        }
        healthy.close()
        bus.shutdown()
    }
}
