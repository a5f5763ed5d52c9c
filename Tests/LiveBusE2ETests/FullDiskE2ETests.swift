import Foundation
import LiveBusCore
import LiveBusClient
@testable import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// A real full disk: livebusd's data directory on a small tmpfs that a ballast file fills during the demo and that is
/// freed later. The simulator's events are held, not dropped; `status` and `doctor` say degraded meanwhile; the phone
/// then sees every sequence once, in order, up to delivered. With a kill -9 during the full period and a restart with
/// space, nothing shown to the phone is lost and no sequence is reused. Source: issue 14 "Data loss on a full disk".
@Suite(.serialized)
struct E2EFullDiskTests {
    /// Runs a system tool and waits for it.
    static func runTool(_ path: String, _ args: [String]) throws -> E2ECLIGoldenTests.Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return E2ECLIGoldenTests.Run(exit: p.terminationStatus, stdout: "", stderr: String(decoding: e, as: UTF8.self))
    }

    /// Whether this machine lets the tests mount a tmpfs (root with the capability to mount), tried once.
    static let canMountTmpfs: Bool = {
        guard getuid() == 0 else { return false }
        let dir = temporaryDirectory("lbd")
        defer { rmdir(dir) }
        guard mountTmpfs(dir, megabytes: 1) == nil else { return false }
        unmount(dir)
        return true
    }()

    /// A tmpfs of `megabytes` on `dir`, or the reason it could not be mounted.
    static func mountTmpfs(_ dir: String, megabytes: Int) -> String? {
        let r = try? runTool("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", dir])
        return r?.exit == 0 ? nil : "mount -t tmpfs failed: \(r?.stderr ?? "cannot run /bin/mount")"
    }

    static func unmount(_ dir: String) { _ = try? runTool("/bin/umount", [dir]) }

    /// Writes zeros to `path` until the filesystem says ENOSPC; returns the bytes written.
    static func fill(_ path: String) -> Int {
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while true {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            total += n
        }
        return total
    }

    /// One daemon on a tmpfs data dir, one phone; what the tests share.
    final class Rig {
        let dir = temporaryDirectory("lbd")
        var fs: String { dir + "/fs" }
        var socket: String { dir + "/bus.sock" }
        var log: String { dir + "/daemon.log" }
        var args: [String] {
            [
                "--socket", socket, "--data-dir", fs + "/data", "--scenario", "demo-120s", "--time-scale", "8",
                "--log-level", "notice",
            ]
        }
        var daemon: DaemonChild?
        var loop: EventLoop?
        var phones: Phones?

        func start() throws -> String? {
            try FileManager.default.createDirectory(atPath: fs, withIntermediateDirectories: true)
            if let e = E2EFullDiskTests.mountTmpfs(fs, megabytes: 16) { return e }
            try startDaemon()
            let l = try EventLoop()
            loop = l
            phones = Phones(["a"], socket: socket, loop: l)
            return nil
        }

        /// ``start()``, then the phone's loop until its first update (10 s at most).
        /// - Returns: `false` when the rig could not start (the reason recorded as an issue).
        func startAndWaitForAnUpdate() throws -> Bool {
            if let e = try start() {
                Issue.record(Comment(rawValue: e))
                return false
            }
            #expect(run(timeoutMs: 10_000) { !self.applied.isEmpty })
            return true
        }

        func startDaemon() throws {
            daemon = try DaemonChild(args, log: log)
            for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        }

        /// Runs the phones' loop until `done()` holds (checked every 100 ms) or `timeoutMs` passes.
        @discardableResult
        func run(timeoutMs: Int, until done: () -> Bool = { false }) -> Bool {
            guard let loop else { return false }
            var waited = 0
            while waited < timeoutMs {
                if done() { return true }
                let t = loop.schedule(after: 100) { loop.stop() }
                loop.run()
                t.cancel()
                waited += 100
            }
            return done()
        }

        func cli(_ args: [String]) -> E2ECLIGoldenTests.Run {
            (try? E2ECLIGoldenTests.run(args + ["--socket", socket]))
                ?? E2ECLIGoldenTests.Run(exit: -1, stdout: "", stderr: "cannot run livebus")
        }

        func status() -> JSONValue { cli(["status", "--json"]).json?["data"] ?? .null }

        var applied: [AppliedUpdate] { phones?.applied["a"] ?? [] }

        /// Whether the daemon's simulator has emitted delivered (what `status` shows of the order is the simulator's).
        /// Whether the simulator emitted delivered while the store refuses it: held, not listed (the orders of
        /// `status` say what phones were told, the last stored event).
        func simulatorDelivered() -> Bool {
            guard case .array(let held)? = status()["degraded"]?["held"], let h = held.last else { return false }
            return h["status"]?.stringValue == "delivered"
        }

        func stop() {
            for s in phones?.sessions ?? [] { s.close() }
            if let loop {
                let t = loop.schedule(after: 100) { loop.stop() }
                loop.run()
                t.cancel()
                loop.close()
            }
            daemon?.terminate()
            E2EFullDiskTests.unmount(fs)
            try? FileManager.default.removeItem(atPath: dir)
        }

        /// Fills the disk, waits for `status` to say degraded, and checks what `status`, `doctor` and a command say.
        func fillAndCheckDegraded() -> Bool {
            let filled = E2EFullDiskTests.fill(fs + "/ballast")
            #expect(filled > 0)
            var degraded: JSONValue = .null
            let seen = run(timeoutMs: 15_000) {
                degraded = status()["degraded"] ?? .null
                return degraded != .null
            }
            #expect(seen, "status never said degraded with the disk full")
            guard seen else { return false }
            #expect(["full", "ioError"].contains(degraded["condition"]?.stringValue ?? ""), "\(degraded)")
            #expect(degraded["dataDir"]?.stringValue == fs + "/data")
            #expect(degraded["fix"]?.stringValue?.contains("free space") == true)
            let text = cli(["status"])
            #expect(text.stdout.contains("DEGRADED"), "\(text.stdout)")
            let doctor = cli(["doctor"])
            #expect(doctor.exit != 0)
            #expect(doctor.stdout.contains("✗ daemon's store accepts writes"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("free space on the filesystem of \(fs)/data"), "\(doctor.stdout)")
            // A command that would change the simulator is refused: its answer must not promise what is not stored.
            let create = cli(["order", "create", "--id", "X1"])
            #expect(create.exit != 0)
            #expect((create.stdout + create.stderr).contains("degraded"), "\(create.stderr)")
            return true
        }

        /// Every sequence once, in order, from 1, with the demo's statuses ending delivered.
        func expectCompleteInOrder() {
            let u = applied
            let seqs = u.map(\.seq)
            #expect(seqs == Array(1...UInt64(max(1, seqs.count))), "sequences \(seqs)")
            var statuses: [String] = []
            for x in u where statuses.last != x.status { statuses.append(x.status) }
            #expect(statuses == E2EDaemonTests.fullSequence, "saw \(statuses)")
        }
    }

    @Test(.enabled(if: canMountTmpfs, "needs root and `mount -t tmpfs` to fill a real filesystem"))
    func fullDiskHoldsSimulatorEventsUntilSpaceReturns() throws {
        let rig = Rig()
        defer { rig.stop() }
        guard try rig.startAndWaitForAnUpdate() else { return }
        rig.run(timeoutMs: 1000)
        guard rig.fillAndCheckDegraded() else { return }
        // Full until the simulator has emitted delivered: it is held, not shown and not dropped.
        #expect(rig.run(timeoutMs: 30_000) { rig.simulatorDelivered() })
        #expect(rig.applied.last?.status != "delivered", "delivered reached the phone with the disk full")
        let held = rig.status()["degraded"]?["heldEvents"]?.doubleValue ?? 0
        #expect(held > 0)
        // What phones were told is listed, not the simulator's state ahead of it.
        if case .array(let orders)? = rig.status()["orders"], let o = orders.first {
            #expect(o["status"]?.stringValue != "delivered", "\(o)")
        }
        #expect(rig.cli(["status"]).stdout.contains("up to delivered"))
        unlink(rig.fs + "/ballast")
        #expect(rig.run(timeoutMs: 15_000) { rig.applied.last?.status == "delivered" })
        #expect(rig.status()["degraded"] == .null)
        let doctor = rig.cli(["doctor"])
        #expect(doctor.stdout.contains("✓ daemon's store accepts writes"), "\(doctor.stdout)")
        rig.expectCompleteInOrder()
        let log = (try? String(contentsOfFile: rig.log, encoding: .utf8)) ?? ""
        #expect(log.contains("degraded: the store refuses writes"), "\(log)")
        #expect(log.contains("degraded period over"), "\(log)")
    }

    @Test(.enabled(if: canMountTmpfs, "needs root and `mount -t tmpfs` to fill a real filesystem"))
    func killNineWhileTheDiskIsFullLosesNothingShownAndReusesNoSequence() throws {
        let rig = Rig()
        defer { rig.stop() }
        guard try rig.startAndWaitForAnUpdate() else { return }
        rig.run(timeoutMs: 1000)
        guard rig.fillAndCheckDegraded() else { return }
        // Killed with events held (emitted by the simulator, refused by the store, never shown).
        #expect(rig.run(timeoutMs: 15_000) { (rig.status()["degraded"]?["heldEvents"]?.doubleValue ?? 0) >= 2 })
        let shown = rig.applied
        rig.daemon?.kill9()
        unlink(rig.fs + "/ballast")
        try rig.startDaemon()
        #expect(rig.run(timeoutMs: 30_000) { rig.applied.last?.status == "delivered" })
        rig.expectCompleteInOrder()
        #expect(Array(rig.applied.prefix(shown.count)) == shown)
        let log = (try? String(contentsOfFile: rig.log, encoding: .utf8)) ?? ""
        #expect(log.contains("state restored"), "\(log)")
        // The store holds exactly what the phone saw under each number: nothing renumbered, no hole.
        rig.daemon?.terminate()
        guard let topic = shown.first?.topic else { return }
        let store = try SQLiteStore(directory: rig.fs + "/data")
        let stored = store.events(topic: topic, from: 1) ?? []
        #expect(stored.map(\.sequence) == Array(1...UInt64(max(1, stored.count))))
        for u in rig.applied {
            let e = stored.first { $0.sequence == u.seq }
            #expect(
                e?.body.contentState.status == u.status,
                "sequence \(u.seq): phone \(u.status), store \(e?.body.contentState.status ?? "none")"
            )
        }
        #expect(stored.last?.sequence == rig.applied.last?.seq)
    }

    /// A restart while the disk is still full is refused with what to do (free space), never with advice to move a
    /// healthy database away; once space returns the same directory carries on to delivered.
    @Test(.enabled(if: canMountTmpfs, "needs root and `mount -t tmpfs` to fill a real filesystem"))
    func restartOnAFullDiskSaysFreeSpaceNotMoveItAway() throws {
        let rig = Rig()
        defer { rig.stop() }
        guard try rig.startAndWaitForAnUpdate() else { return }
        guard rig.fillAndCheckDegraded() else { return }
        rig.daemon?.kill9()
        let refused = try E2EFullDiskTests.runTool(
            "/usr/bin/timeout",
            ["20", E2ECLIGoldenTests.bin + "/livebusd"] + rig.args
        )
        #expect(refused.exit == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("is full"), "\(refused.stderr)")
        #expect(refused.stderr.contains("free space"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("move it away"), "\(refused.stderr)")
        unlink(rig.fs + "/ballast")
        try rig.startDaemon()
        #expect(rig.run(timeoutMs: 30_000) { rig.applied.last?.status == "delivered" })
        rig.expectCompleteInOrder()
    }
}
