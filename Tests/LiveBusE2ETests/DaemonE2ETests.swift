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
            // The first daemon's loop is this thread's, not running during the probe, so its HELLO goes unanswered
            // and the message says so; a running livebusd is "another livebusd" (E2ESocketHolderTests).
            #expect(error.message.contains("did not answer a LiveBus HELLO"), "\(error.message)")
            #expect(error.message.contains("it is not removed"), "\(error.message)")
        }
        #expect(SocketProbe.probe(path: bus.socket) == .live)
        bus.shutdown()
    }

    /// A daemon that stops leaves alone a socket that replaced its own: daemon A up, its socket file removed,
    /// daemon B up on the same path, A stopped by SIGTERM: B's socket is still there and B answers `livebus status`
    /// (A used to unlink whatever was at its path). Source: 2026-12-03 review, finding 1.
    @Test func stoppingDaemonLeavesTheSocketThatReplacedItsOwn() throws {
        let dir = temporaryDirectory("lbt")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/bus.sock"
        func waitFor(_ what: String, _ condition: () -> Bool) {
            var tries = 0
            while !condition() && tries < 3000 {  // up to a minute on a loaded machine
                usleep(20_000)
                tries += 1
            }
            #expect(condition(), "\(what) did not happen")
        }
        let a = try DaemonChild(["--socket", path, "--memory"], log: dir + "/a.log")
        defer { a.terminate() }
        waitFor("daemon A listening") { SocketProbe.probe(path: path) == .live }
        #expect(unlink(path) == 0)
        let b = try DaemonChild(["--socket", path, "--memory"], log: dir + "/b.log")
        defer { b.terminate() }
        waitFor("daemon B listening") { SocketProbe.probe(path: path) == .live }
        let bound = FileIdentity(path: path)
        kill(a.process.processIdentifier, SIGTERM)
        waitFor("daemon A exiting") { !a.process.isRunning }
        #expect(a.process.terminationReason == .exit && a.process.terminationStatus == 0)
        #expect(FileIdentity(path: path) == bound, "B's socket file was removed or replaced")
        #expect(b.process.isRunning)
        let status = try E2ECLIGoldenTests.run(["status", "--socket", path])
        #expect(status.exit == 0, "B does not answer: \(status.stderr)")
        let log = (try? String(contentsOfFile: dir + "/a.log", encoding: .utf8)) ?? ""
        #expect(log.contains("socket path now belongs to someone else; left in place"), "\(log)")
        // B, whose socket it is, removes it when it stops.
        kill(b.process.processIdentifier, SIGTERM)
        waitFor("daemon B exiting") { !b.process.isRunning }
        #expect(access(path, F_OK) != 0, "B's shutdown removes its own socket file")
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
