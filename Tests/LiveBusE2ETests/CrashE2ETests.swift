import Foundation
import LiveBusCore
import LiveBusClient
import LiveBusClock
@testable import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusCLI

/// A `livebusd` child process (the built binary), for tests that kill it.
final class DaemonChild {
    static var binary: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/livebusd").path
    }

    let process = Process()

    init(_ args: [String], log: String, environment: [String: String] = [:], shell: Bool = false) throws {
        if shell {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")  // `args` are the shell's: -c 'script' …
            process.arguments = args
        } else if environment.isEmpty {
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = args
        } else {
            // Through `sh -c 'exec …'`, so the variables (LD_PRELOAD of libfaketime) apply to the daemon only and
            // the process is the daemon itself (SIGTERM reaches it). The shell loads libfaketime first: a Swift binary
            // that is the first process to load libfaketime 0.9.10 loses its argv (the library's constructor sets
            // FAKETIME_SHARED in the environment); exec'd from a process that already did, it keeps it.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "exec \"$0\" \"$@\"", Self.binary] + args
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
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
        let dir = temporaryDirectory("lbk")
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
        let phones = Phones(["a", "b", "c"], socket: socket, loop: loop)
        let names = phones.names
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
            if phones.allDelivered { loop.stop() }
        }
        loop.run()
        deadline.cancel()
        check.cancel()
        #expect(kills == 20)
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        for n in names {
            let u = phones.applied[n] ?? []
            #expect(u.last?.status == "delivered", "\(n) ended at \(u.last?.status ?? "nothing")")
            let seqs = u.map(\.seq)
            #expect(seqs == Array(1...UInt64(max(1, seqs.count))), "\(n) sequences \(seqs)")
            var statuses: [String] = []
            for x in u where statuses.last != x.status { statuses.append(x.status) }
            #expect(statuses == E2EDaemonTests.fullSequence, "\(n) saw \(statuses)")
        }
        // Every phone ends at the same last sequence: nothing acknowledged was lost or numbered twice.
        let finals = Set(names.compactMap { phones.applied[$0]?.last?.seq })
        #expect(finals.count == 1, "final sequences differ: \(finals)")
        #expect(logText.contains("state restored"))
        for s in phones.sessions { s.close() }
        loop.run()
        loop.close()
        daemon.terminate()
    }
}

/// The durable store in isolation: several events of one topic in one transaction get consecutive sequences, a
/// reopened store carries on numbering, and a foreign file is refused.
struct E2ESQLiteStoreTests {
    static func body(_ status: String) -> EventBody {
        var b = GoldenVectorsForTests.event
        b.contentState.status = status
        return b
    }

    @Test func batchOfOneTopicNumbersConsecutivelyAndSurvivesReopen() throws {
        let dir = temporaryDirectory("lbq")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try SQLiteStore(directory: dir, logCapacity: 4)
            let stored = try store.commit(
                [
                    ("orders/A", Self.body("cooking")), ("orders/A", Self.body("pickedUp")),
                    ("orders/B", Self.body("cooking")),
                ],
                simulatorState: Data("{}".utf8)
            )
            #expect(stored.map(\.sequence) == [1, 2, 1])
            for i in 0..<10 { _ = try store.append(topic: "orders/A", body: Self.body("delivering \(i)")) }
            #expect(store.latest(topic: "orders/A")?.sequence == 12)
        }
        let reopened = try SQLiteStore(directory: dir, logCapacity: 4)
        #expect(reopened.latest(topic: "orders/A")?.sequence == 12)
        #expect(reopened.events(topic: "orders/A", from: 11)?.map(\.sequence) == [11, 12])
        #expect(try reopened.append(topic: "orders/A", body: Self.body("delivered")).sequence == 13)
        #expect(reopened.simulatorState() == Data("{}".utf8))
    }

    /// A new data directory and its database are private to the daemon's user (0700, 0600), like the socket; a path
    /// that is a file is refused with what to do. Source: review finding (state files were world-readable).
    @Test func newDataDirectoryIsPrivate() throws {
        let parent = temporaryDirectory("lbq")
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let dir = parent + "/a/data"
        _ = try SQLiteStore(directory: dir)
        let fm = FileManager.default
        #expect((try fm.attributesOfItem(atPath: dir))[.posixPermissions] as? Int == 0o700)
        #expect((try fm.attributesOfItem(atPath: parent + "/a"))[.posixPermissions] as? Int == 0o700)
        #expect((try fm.attributesOfItem(atPath: dir + "/livebus.db"))[.posixPermissions] as? Int == 0o600)
        try Data().write(to: URL(fileURLWithPath: parent + "/file"))
        do {
            _ = try SQLiteStore(directory: parent + "/file")
            Issue.record("a file was taken as a data directory")
        } catch {
            #expect(error.message.contains("is not a directory"))
        }
    }

    @Test func foreignAndCorruptFilesAreRefused() throws {
        let dir = temporaryDirectory("lbq")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("this is not sqlite".utf8).write(to: URL(fileURLWithPath: dir + "/livebus.db"))
        #expect(throws: StoreOpenError.self) { _ = try SQLiteStore(directory: dir) }
        do { _ = try SQLiteStore(directory: dir) } catch { #expect(error.message.contains("not a SQLite database")) }
    }
}
