import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusCLI
@testable import LiveBusDaemon

/// A phone that stops reading is coalesced, then disconnected as a slow consumer with the reason, while 50 other
/// phones keep receiving on time. Source: issue 7 "Done when"; Protocol/PROTOCOL.md §5.5.
@Suite(.serialized)
struct E2ESlowConsumerTests {
    @Test func slowConsumerIsCoalescedThenDisconnectedWhileOthersStayOnTime() throws {
        let dir = temporaryDirectory("lbs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let log = dir + "/daemon.log"
        // The daemon is its own process; the flood and the slow phone run on their own thread and loop, so the 50
        // phones measured here share nothing with them but the daemon.
        let daemon = try DaemonChild(
            [
                "--socket", socket, "--memory", "--scenario", "demo-120s", "--time-scale", "20", "--log-level",
                "notice",
                "--coalesce-bytes", "16384", "--slow-consumer-bytes", "131072",
            ],
            log: log
        )
        defer { daemon.terminate() }
        for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        let loop = try EventLoop()
        var delivered = Set<String>()
        var delays: [Int64] = []
        var snapshots: [String] = []
        var sequences: [String: [UInt64]] = [:]
        let phones = (0..<50).map { i in
            ClientSession(
                loop: loop,
                options: ClientOptions(socketPath: socket, name: "p\(i)"),
                trueClock: SystemServerClock()
            )
        }
        for p in phones {
            p.onUpdate = { u in
                guard u.type == "update" else { return }
                if u.delivery == nil, let t = u.eventTime { delays.append(u.clientTime - t) }
                if u.delivery == "snapshot" { snapshots.append("\(u.session) seq \(u.seq)") }
                if u.delivery == nil || u.delivery == "snapshot" { sequences[u.session, default: []].append(u.seq) }
                if u.status == "delivered" { delivered.insert(u.session) }
            }
            p.start()
        }
        let seen = SlowSeen()
        let flooder = Thread { Self.flood(socket: socket, seen: seen) }
        flooder.start()
        let deadline = loop.schedule(after: 30_000) { loop.stop() }
        let check = loop.schedule(after: 50, repeat: 50) {
            let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if delivered.count == phones.count && logText.contains("slowConsumer") { loop.stop() }
        }
        loop.run()
        deadline.cancel()
        check.cancel()
        flooder.cancel()
        let (slowSeen, maxCoalesced) = seen.value
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(delivered.count == phones.count, "delivered on \(delivered.count)/50 phones")
        #expect(slowSeen)
        #expect(maxCoalesced > 0, "the slow phone's updates were coalesced before it was cut off")
        #expect(
            logText.contains("protocol error") && logText.contains("slowConsumer"),
            "disconnected as a slow consumer"
        )
        delays.sort()
        let p99 = delays.isEmpty ? Int64.max : delays[min(delays.count - 1, delays.count * 99 / 100)]
        #expect(delays.count > 500, "\(delays.count) live updates measured")
        // "Unaffected" is what the daemon vouches for, not a wall-clock figure (a loaded CI machine moves those): no
        // other phone was coalesced (a coalesced phone gets a snapshot over the skipped sequences) or cut, and each
        // applied its live sequences one after another with no gap. The delays are printed as figures.
        #expect(snapshots.isEmpty, "other phones were coalesced: \(snapshots.prefix(5))")
        for (name, seqs) in sequences {
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(name) applied \(seqs)")
        }
        print(
            "slow consumer: the other 50 phones' delay p50 \(delays.isEmpty ? -1 : delays[delays.count / 2]) ms, p99 \(p99) ms, max \(delays.last ?? -1) ms over \(delays.count) live updates"
        )
        for p in phones { p.close() }
        loop.run()
        loop.close()
    }

    /// Connects a phone that subscribes to the flood topics and then stops reading, and a publisher that floods
    /// `flood/*` for 3 s at 500 events/s: updates first (coalesced per topic), then terminal events (never coalesced).
    /// What the flood thread saw of the slow phone in `livebus status` (written there, read after it ended).
    final class SlowSeen: @unchecked Sendable {  // @unchecked: guarded by the lock.
        private let lock = NSLock()
        private var seen = false
        private var coalesced = 0.0
        func note(_ c: Double) {
            lock.lock()
            seen = true
            coalesced = max(coalesced, c)
            lock.unlock()
        }
        var value: (Bool, Double) {
            lock.lock()
            defer { lock.unlock() }
            return (seen, coalesced)
        }
    }

    static func flood(socket: String, seen: SlowSeen) {
        guard let loop = try? EventLoop() else { return }
        var slow: RawPeer?
        var publisher: RawPeer?
        Connection.connect(loop: loop, path: socket) { r in
            guard case .success(let c) = r else { return }
            let p = RawPeer(c)
            slow = p
            p.send(hello(name: "slow"))
            p.send(
                Frame(type: .subscribe, body: try! WireJSON.encode(SubscribeBody(patterns: ["orders/>", "flood/>"])))
            )
            loop.schedule(after: 200) { p.connection.stopReading() }
        }
        Connection.connect(loop: loop, path: socket) { r in
            guard case .success(let c) = r else { return }
            let p = RawPeer(c)
            publisher = p
            p.send(hello(role: .publisher, name: "flooder", device: nil))
        }
        var burst = 0
        var e = GoldenVectorsForTests.event
        e.contentState.summary = SummaryBody(
            ko: String(repeating: "가", count: 300),
            en: String(repeating: "x", count: 300)
        )
        let update = try! WireJSON.encode(e)
        e.event = "end"
        e.contentState.status = "delivered"
        let end = try! WireJSON.encode(e)
        let timer = loop.schedule(after: 300, repeat: 20) {
            guard let pub = publisher else { return }
            burst += 1
            for t in 0..<(burst > 40 ? 25 : 10) {
                pub.send(
                    Frame(
                        type: .publish,
                        sequence: UInt64(burst * 100 + t),
                        topic: "flood/\(t)-\(burst > 40 ? burst : 0)",
                        body: burst > 40 ? end : update
                    )
                )
            }
        }
        // Watch the slow phone through the admin interface (this thread only; the measured phones never block).
        let watch = loop.schedule(after: 500, repeat: 700) {
            guard let r = try? AdminClient.request(socket: socket, command: "status", timeoutMs: 2000),
                case .array(let list)? = r.data?["sessions"]
            else { return }
            for x in list where x["name"]?.stringValue == "slow" { seen.note(x["coalesced"]?.doubleValue ?? 0) }
        }
        loop.schedule(after: 3300) {
            timer.cancel()
            watch.cancel()
            slow?.connection.close()
            publisher?.connection.close()
            loop.stop()
        }
        loop.run()
        loop.close()
    }
}

/// A sample event body for publishing in tests.
enum GoldenVectorsForTests {
    static let event = EventBody(
        event: "update",
        timestamp: 1_767_225_600_000,
        contentState: ContentStateBody(
            status: "cooking",
            summary: SummaryBody(ko: "조리 중", en: "Cooking"),
            etaTarget: 1_767_226_800_000,
            progress: 0.25,
            riderPosition: nil,
            lastConfirmed: 1_767_225_600_000
        ),
        staleDate: nil,
        relevanceScore: 50,
        dismissalDate: nil,
        priority: 10
    )
}
