import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// A `livebusd` child process (the built binary), for tests that kill it.
final class DaemonChild {
    static var binary: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/livebusd").path
    }

    let process = Process()

    init(_ args: [String], log: String) throws {
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = args
        FileManager.default.createFile(atPath: log, contents: nil)
        let h = FileHandle(forWritingAtPath: log)!
        h.seekToEndOfFile()
        process.standardError = h
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<150 where process.isRunning { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// kill -9 of the daemon at seeded random moments, restarted each time on the same data directory: phones resume
/// with their tokens, nothing acknowledged is lost, no sequence is reused or applied twice, the simulator carries on.
/// Source: issue 7 "Durability" and "Done when".
@Suite(.serialized)
struct E2ECrashTests {
    @Test func killNineAtTwentyPointsLosesNothing() throws {
        var template = Array("/tmp/lbk-XXXXXX".utf8CString)
        let dir = String(cString: mkdtemp(&template)!)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let args = [
            "--socket", socket, "--data-dir", dir + "/data", "--scenario", "demo-120s", "--time-scale", "8",
            "--log-level", "notice",
        ]
        let log = dir + "/daemon.log"
        var daemon = try DaemonChild(args, log: log)
        for _ in 0..<200 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        #expect(SocketProbe.probe(path: socket) == .live)

        let loop = try EventLoop()
        let names = ["a", "b", "c"]
        let sessions = names.map { n in
            ClientSession(
                loop: loop,
                options: ClientOptions(socketPath: socket, name: n),
                trueClock: SystemServerClock()
            )
        }
        var applied: [String: [AppliedUpdate]] = [:]
        for s in sessions {
            s.onUpdate = { u in if u.type == "update" { applied[u.session, default: []].append(u) } }
            s.start()
        }
        // 20 kill points spread over the 15 s demo, drawn from a seeded generator.
        var rng = ClockSimulationRandom(seed: 7)
        var points = (0..<20).map { i in 300 + i * 650 + Int.random(in: 0..<300, using: &rng) }
        points.sort()
        var kills = 0
        var last = 0
        for p in points {
            let wait = UInt64(p - last)
            last = p
            let t = loop.schedule(after: wait) { loop.stop() }
            loop.run()
            t.cancel()
            daemon.kill9()
            kills += 1
            daemon = try DaemonChild(args, log: log)
        }
        let deadline = loop.schedule(after: 20_000) { loop.stop() }
        let check = loop.schedule(after: 20, repeat: 20) {
            if names.allSatisfy({ applied[$0]?.last?.status == "delivered" }) { loop.stop() }
        }
        loop.run()
        deadline.cancel()
        check.cancel()
        #expect(kills == 20)
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        for n in names {
            let u = applied[n] ?? []
            #expect(u.last?.status == "delivered", "\(n) ended at \(u.last?.status ?? "nothing")")
            let seqs = u.map(\.seq)
            #expect(seqs == Array(1...UInt64(max(1, seqs.count))), "\(n) sequences \(seqs)")
            var statuses: [String] = []
            for x in u where statuses.last != x.status { statuses.append(x.status) }
            #expect(statuses == E2EDaemonTests.fullSequence, "\(n) saw \(statuses)")
        }
        // Every phone ends at the same last sequence: nothing acknowledged was lost or numbered twice.
        let finals = Set(names.compactMap { applied[$0]?.last?.seq })
        #expect(finals.count == 1, "final sequences differ: \(finals)")
        #expect(logText.contains("state restored"))
        for s in sessions { s.close() }
        loop.run()
        loop.close()
        daemon.terminate()
    }
}
