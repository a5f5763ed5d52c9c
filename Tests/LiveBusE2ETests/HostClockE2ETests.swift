import Foundation
import LiveBusClient
import LiveBusDaemon
import LiveBusLoop
import Testing

/// libfaketime's preload library (Debian `libfaketime`, installed by tools/setup).
private let libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

/// The daemon host's wall clock jumps an hour ahead, then two hours back, under libfaketime while three phones
/// follow the demo: nobody is disconnected, no phone sees a clock step, countdown targets stay on one timeline, and
/// every phone ends delivered with every sequence once. Only the daemon runs under libfaketime; the monotonic clock
/// is left alone (`FAKETIME_DONT_FAKE_MONOTONIC=1`), as an NTP step or `date -s` leaves it.
/// Source: issue 7 ("running it under libfaketime (Debian `faketime`) to jump its wall clock, which must disconnect
/// nobody (keepalives and timers use monotonic time)").
@Suite(.serialized)
struct E2EHostClockTests {
    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: libfaketime), "libfaketime is not installed (tools/setup)")
    )
    func hostWallClockJumpsDisconnectNobody() throws {
        let dir = temporaryDirectory("lbf")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let stamp = dir + "/faketime"
        try "+0\n".write(toFile: stamp, atomically: true, encoding: .utf8)
        let log = dir + "/daemon.log"
        let daemon = try DaemonChild(
            ["--socket", socket, "--memory", "--scenario", "demo-120s", "--time-scale", "8", "--log-level", "info"],
            log: log,
            environment: [
                "LD_PRELOAD": libfaketime, "FAKETIME_TIMESTAMP_FILE": stamp, "FAKETIME_NO_CACHE": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            ]
        )
        defer {
            daemon.terminate()
            // libfaketime's shared memory and semaphore, named after the process that created them (the daemon).
            let pid = daemon.process.processIdentifier
            for f in ["faketime_shm_\(pid)", "sem.faketime_sem_\(pid)"] { unlink("/dev/shm/" + f) }
        }
        for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        try #require(SocketProbe.probe(path: socket) == .live, "livebusd did not start under libfaketime: \(log)")

        let loop = try EventLoop()
        let phones = Phones(["a", "b", "c"], socket: socket, loop: loop)
        let names = phones.names
        let ahead = loop.schedule(after: 3000) {
            try? "+3600\n".write(toFile: stamp, atomically: true, encoding: .utf8)
        }
        let back = loop.schedule(after: 7000) { try? "-7200\n".write(toFile: stamp, atomically: true, encoding: .utf8) }
        let deadline = loop.schedule(after: 40_000) { loop.stop() }
        let started = EventLoop.monotonicNanoseconds()
        var deliveredAfter: UInt64 = 0
        let check = loop.schedule(after: 20, repeat: 20) {
            if phones.allDelivered {
                deliveredAfter = (EventLoop.monotonicNanoseconds() - started) / 1_000_000
                loop.stop()
            }
        }
        loop.run()
        for t in [ahead, back, deadline, check] { t.cancel() }
        // Read before the phones hang up (the start-up probe's own connection is the only one closed by then).
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        for s in phones.sessions { s.close() }
        loop.run()
        loop.close()

        // The scenario keeps its own pace (demo-120s at 8× ends 15 s after the daemon started), whatever the host's
        // wall clock says: an hour ahead must not play the rest of the scenario at once.
        #expect(deliveredAfter >= 13_000, "delivered after \(deliveredAfter) ms, before the scenario's end")
        // Both jumps happened and were seen by the daemon.
        #expect(logText.components(separatedBy: "host wall clock stepped").count - 1 == 2, "daemon log:\n\(logText)")
        #expect(!logText.contains("clock step detected"), "a phone was thought to have stepped:\n\(logText)")
        let closed = logText.split(separator: "\n").filter { line in
            line.contains("session closed") && names.contains { line.contains("session.name=\($0) ") }
        }
        #expect(closed.isEmpty, "a phone's session was closed: \(closed)")
        #expect(phones.errors.isEmpty, "\(phones.errors)")
        for (n, s) in zip(names, phones.sessions) {
            let u = phones.applied[n] ?? []
            #expect(u.last?.status == "delivered", "\(n) ended at \(u.last?.status ?? "nothing")")
            #expect(u.map(\.seq) == Array(1...UInt64(max(1, u.count))), "\(n) sequences \(u.map(\.seq))")
            #expect(s.counters.reconnects == 0, "\(n) reconnected \(s.counters.reconnects) times")
            // Countdown targets on one timeline: the demo revises its ETA by minutes, never by the hour jumped.
            let etas = u.map(\.etaTarget)
            for (x, y) in zip(etas, etas.dropFirst()) {
                #expect(abs(y - x) < 30 * 60_000, "\(n): ETA target moved \(y - x) ms between updates")
            }
            // And the update instants stay near the phones' (unfaked) clocks.
            for x in u { #expect(abs(x.clientTime - (x.eventTime ?? x.clientTime)) < 60_000, "\(n): \(x)") }
        }
    }
}

/// The daemon's server clock in isolation: the anchor's wall time plus monotonic time elapsed, truncated to ms.
struct AnchoredServerClockTests {
    @Test func instantsFollowTheMonotonicClockFromTheAnchor() {
        let clock = AnchoredServerClock(wallNanoseconds: 1_000_000_500_000_000, monotonicNanoseconds: 5_000_000_000)
        #expect(clock.instant(atMonotonic: 5_000_000_000).millisecondsSinceEpoch == 1_000_000_500)
        #expect(clock.instant(atMonotonic: 7_000_999_999).millisecondsSinceEpoch == 1_000_002_500)
        // Before the anchor (a monotonic reading taken earlier), still truncated toward the past.
        #expect(clock.instant(atMonotonic: 4_999_999_999).millisecondsSinceEpoch == 1_000_000_499)
    }

    @Test func freshClockAgreesWithTheHostWallClock() {
        let clock = AnchoredServerClock()
        #expect(abs(clock.wallClockOffsetMilliseconds()) <= 1)
        #expect(abs(clock.now().milliseconds(to: SystemServerClock().now())) <= 2)
    }
}
