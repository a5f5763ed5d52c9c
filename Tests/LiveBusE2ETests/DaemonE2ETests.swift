import Foundation
import LiveBusClient
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// The daemon end to end over a real Unix socket: the demo to three phones, refusal of a second daemon, a stale
/// socket file. Bad input, the handshake and the v1 refusal run on the embedded daemon (LiveBusDaemonTests,
/// EmbeddedHandshakeTests), in milliseconds.
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
}
