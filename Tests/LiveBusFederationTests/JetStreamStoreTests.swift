import CNATS
import Foundation
import LiveBusCore
@testable import LiveBusFederation
import LiveBusLoop
import LiveBusWire
import Testing

/// A `nats-server -js` on a free loopback port, in a temporary directory, killed when the value is dropped.
final class NATSServer {
    let port: Int
    let dir: String
    private let process: Process
    var url: String { "nats://127.0.0.1:\(port)" }

    /// `nats-server` from PATH or /usr/bin, or `nil` when it is not installed (tools/setup installs it).
    static var binary: String? {
        for p in ["/usr/bin/nats-server", "/usr/local/bin/nats-server", "/usr/sbin/nats-server"]
        where FileManager.default.isExecutableFile(atPath: p) {
            return p
        }
        return nil
    }

    init() throws {
        guard let bin = Self.binary else {
            throw NATSServerMissing()
        }
        port = Self.freePort()
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("lb-nats-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        process = Process()
        process.executableURL = URL(fileURLWithPath: bin)
        process.arguments = ["-js", "-a", "127.0.0.1", "-p", "\(port)", "-sd", dir]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when its client port takes a connection (a generous guard, not a measured duration).
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port) {
            guard Date() < deadline, process.isRunning else {
                throw NATSServerMissing(message: "nats-server did not listen on 127.0.0.1:\(port) within 10 s")
            }
            usleep(20_000)
        }
    }

    /// Freezes (`SIGSTOP`) or thaws (`SIGCONT`) the server: its connections stay open and unanswered, as in a
    /// partition, and libnats' reconnect thread dials it and waits for its INFO (2 s per attempt, holding libnats'
    /// connection lock).
    func freeze(_ stop: Bool) { kill(process.processIdentifier, stop ? SIGSTOP : SIGCONT) }

    deinit {
        kill(process.processIdentifier, SIGCONT)
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: dir)
    }

    static func freePort() -> Int { LoopbackPort.ephemeral() }

    static func accepts(_ port: Int) -> Bool { LoopbackPort.accepts(port) }
}

struct NATSServerMissing: Error, CustomStringConvertible {
    var message = "nats-server is not installed: run tools/setup (Debian package nats-server)"
    var description: String { message }
}

/// The JetStream store against the core's store conformance suite, unchanged: each check gets its own
/// `nats-server -js` and a stream of its own; `reopen` opens the same stream again (a daemon restart).
/// Source: ISSUE-19 "The store conformance tests of the bus-core issue pass against it unchanged".
@Suite(.enabled(if: NATSServer.binary != nil, "nats-server is not installed: run tools/setup"))
struct JetStreamStoreConformanceTests {
    @Test(arguments: StoreConformance.checks)
    func jetStreamStore(_ check: StoreConformance.Check) throws {
        let server = try NATSServer()
        var options = FederationOptions(servers: [server.url])
        options.replicas = 1
        options.stream = "LBTEST"
        options.subjectPrefix = "lbtest"
        try withExtendedLifetime(server) {
            try check.run(
                StoreConformance.Harness(
                    open: {
                        var o = options
                        o.logCapacity = $0
                        return try JetStreamStore(o)
                    },
                    reopen: {
                        var o = options
                        o.logCapacity = $0
                        return try JetStreamStore(o)
                    }
                )
            )
        }
    }
}

/// The federation's own rules: replicas, the sequence across writers, the subject mapping.
@Suite(.enabled(if: NATSServer.binary != nil, "nats-server is not installed: run tools/setup"))
struct JetStreamStoreFederationTests {
    /// A single server holds one replica: asking for three is refused at start, with the reason.
    @Test func tooFewReplicasAreRefusedAtStart() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 3
        #expect {
            _ = try JetStreamStore(o)
        } throws: { e in
            "\(e)".contains("3 replicas")
                && "\(e)".contains("a single server holds 1 replica: pass --federate-replicas 1")
        }
        // An existing stream of 1 replica is refused when 2 are asked for.
        o.replicas = 1
        _ = try JetStreamStore(o)
        o.replicas = 2
        #expect {
            _ = try JetStreamStore(o)
        } throws: { e in
            "\(e)".contains("has 1 replica") && "\(e)".contains("asks for 2")
        }
    }

    /// NATS unreachable: a clear error naming the servers and `--federate-optional`.
    @Test func unreachableServersAreAClearError() {
        let port = NATSServer.freePort()
        let o = FederationOptions(servers: ["nats://127.0.0.1:\(port)"])
        #expect {
            _ = try JetStreamStore(o)
        } throws: { e in
            "\(e)".contains("cannot reach NATS at nats://127.0.0.1:\(port)") && "\(e)".contains("--federate-optional")
        }
    }

    /// Two writers on one stream (two daemons): one sequence per topic, never reused, no gap — the second writer
    /// loses the optimistic race, reads the subject's last message and takes the next sequence.
    @Test func twoWritersShareOneSequencePerTopic() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 1
        let a = try JetStreamStore(o)
        let b = try JetStreamStore(o)
        var seqs: [UInt64] = []
        for i in 0..<10 {
            let store = i % 2 == 0 ? a : b
            var r: Result<[StoredEvent], StoreError>?
            store.commit(StoreBatch(events: [("orders/A1", StoreConformance.event("s\(i)"))])) { r = $0 }
            seqs += try #require(r).get().map(\.sequence)
        }
        #expect(seqs == Array(1...10))
        // A third store opened now reads all ten, in order, from the stream.
        let c = try JetStreamStore(o)
        #expect(c.events(topic: "orders/A1", from: 1)?.map(\.sequence) == Array(1...10))
        #expect(c.latest(topic: "orders/A1")?.body.contentState.status == "s9")
    }

    /// A pipelined batch with several events of one topic and events of a topic another writer advanced meanwhile:
    /// the stale topic's first event loses the optimistic race, so it and everything after it in the batch are
    /// refused by JetStream (the chain), then published again one by one as a single publish is (the stale topic
    /// takes the sequences after the other writer's). Every event is stored once, each topic without a gap.
    @Test func aBatchAcrossAnAdvancedTopicKeepsOneSequencePerTopic() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 1
        let a = try JetStreamStore(o)
        let b = try JetStreamStore(o)
        func commit(_ store: JetStreamStore, _ events: [(String, String)]) throws -> [StoredEvent] {
            var r: Result<[StoredEvent], StoreError>?
            store.commit(StoreBatch(events: events.map { ($0.0, StoreConformance.event($0.1)) })) { r = $0 }
            return try #require(r).get()
        }
        _ = try commit(a, [("orders/Y", "a0")])
        // b advances Y twice; a does not know (inline stores do not follow the stream).
        #expect(try commit(b, [("orders/Y", "b1"), ("orders/Y", "b2")]).map(\.sequence) == [2, 3])
        let got = try commit(
            a,
            [
                ("orders/X", "x1"), ("orders/X", "x2"), ("orders/Y", "y1"), ("orders/X", "x3"), ("orders/Y", "y2"),
                ("orders/Z", "z1"),
            ]
        )
        #expect(got.map(\.topic) == ["orders/X", "orders/X", "orders/Y", "orders/X", "orders/Y", "orders/Z"])
        #expect(got.map(\.sequence) == [1, 2, 4, 3, 5, 1])
        // A store opened now reads the stream: each event once, in sequence order, no gap.
        let c = try JetStreamStore(o)
        let status = { (t: String) in
            c.events(topic: t, from: 1)?.map { "\($0.sequence):\($0.body.contentState.status)" }
        }
        #expect(status("orders/X") == ["1:x1", "2:x2", "3:x3"])
        #expect(status("orders/Y") == ["1:a0", "2:b1", "3:b2", "4:y1", "5:y2"])
        #expect(status("orders/Z") == ["1:z1"])
        let link = try NATSLink(o)
        #expect(StreamStatus.fetch(link)?.messages == 9)
        // x1 and x2 (stream sequences 4 and 5) went out pipelined: x2 is chained to x1's message id.
        func header(_ seq: UInt64, _ key: String) -> String? {
            var msg: OpaquePointer?
            var jerr = jsErrCode(0)
            guard js_GetMsg(&msg, link.js, o.stream, seq, nil, &jerr) == NATS_OK, let msg else { return nil }
            defer { natsMsg_Destroy(msg) }
            return Follower.header(msg, key)
        }
        let x1 = try #require(header(4, FederationHeader.messageID))
        #expect(header(5, FederationHeader.expectedLastMessageID) == x1)
        #expect(header(5, FederationHeader.expectedLastSubjectSequence) == nil)
    }

    /// A pipelined batch whose third message JetStream refuses (larger than the stream's `max_msg_size`): the two
    /// before it are stored, and neither the later event of the same topic nor the other topic's is (the chain of
    /// `Nats-Expected-Last-Msg-Id`); the batch fails with JetStream's reason, and the next publish of the topic
    /// takes the next sequence (no gap, no reuse).
    @Test func aRefusalMidBatchStoresNothingAfterIt() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 1
        let a = try JetStreamStore(o)
        try limitMessageSize(o, to: 2048)
        let link = try NATSLink(o)
        var r: Result<[StoredEvent], StoreError>?
        let big = String(repeating: "z", count: 4096)
        a.commit(
            StoreBatch(
                events: [
                    ("orders/X", StoreConformance.event("x1")), ("orders/X", StoreConformance.event("x2")),
                    ("orders/W", StoreConformance.event(big)), ("orders/X", StoreConformance.event("x3")),
                    ("orders/Z", StoreConformance.event("z1")),
                ]
            )
        ) { r = $0 }
        #expect {
            _ = try #require(r).get()
        } throws: { e in
            "\(e)".contains("federationUnavailable") && "\(e)".contains("orders.W")
        }
        let c = try JetStreamStore(o)
        #expect(c.events(topic: "orders/X", from: 1)?.map(\.body.contentState.status) == ["x1", "x2"])
        #expect(c.latest(topic: "orders/W") == nil)
        #expect(c.latest(topic: "orders/Z") == nil)
        #expect(StreamStatus.fetch(link)?.messages == 2)
        r = nil
        a.commit(StoreBatch(events: [("orders/X", StoreConformance.event("x3"))])) { r = $0 }
        #expect(try #require(r).get().map(\.sequence) == [3])
    }

    /// A following store (the daemon) queues commits for its writer thread, which publishes the ones queued
    /// meanwhile together: each commit still succeeds or fails on its own, in order — a refused one (a message above
    /// the stream's `max_msg_size`) fails alone, the ones after it are stored with the next sequences.
    @Test func queuedCommitsCompleteOneByOneInOrder() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 1
        let store = try JetStreamStore(o)
        try limitMessageSize(o, to: 2048)
        let inbox = Inbox()
        try store.startFollowing(post: { inbox.post($0) }, onEvent: { _ in }, onResume: { _, _ in })
        var results: [Int: Result<[StoredEvent], StoreError>] = [:]
        let big = String(repeating: "z", count: 4096)
        for k in 0..<6 {
            let x = StoreConformance.event(k == 2 ? big : "x\(k)")
            store.commit(StoreBatch(events: [("orders/X", x), ("orders/Y", StoreConformance.event("y\(k)"))])) {
                results[k] = $0
            }
        }
        let deadline = Date().addingTimeInterval(10)
        while results.count < 6 {
            try #require(Date() < deadline, "the commits did not complete within 10 s")
            inbox.runAll()
            usleep(5_000)
        }
        for k in [0, 1, 3, 4, 5] {
            let n = UInt64(k < 2 ? k + 1 : k)
            #expect(try results[k]?.get().map(\.sequence) == [n, n])
        }
        #expect(throws: StoreError.self) { try results[2]?.get() }
        let c = try JetStreamStore(o)
        #expect(
            c.events(topic: "orders/Y", from: 1)?.map(\.body.contentState.status) == ["y0", "y1", "y3", "y4", "y5"]
        )
    }

    /// Sets the test stream's `max_msg_size` (JetStream then refuses larger messages with error 10054).
    private func limitMessageSize(_ o: FederationOptions, to bytes: Int32) throws {
        let link = try NATSLink(o)
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var jerr = jsErrCode(0)
        try #require(js_GetStreamInfo(&si, link.js, o.stream, nil, &jerr) == NATS_OK && si != nil)
        defer { jsStreamInfo_Destroy(si) }
        var cfg = si!.pointee.Config.pointee
        cfg.MaxMsgSize = bytes
        var updated: UnsafeMutablePointer<jsStreamInfo>?
        try #require(js_UpdateStream(&updated, link.js, &cfg, nil, &jerr) == NATS_OK)
        jsStreamInfo_Destroy(updated)
    }

    /// Following: what one store commits reaches another store's mirror and its event hook, in order.
    @Test func aFollowingStoreSeesAnotherWritersEventsInOrder() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 1
        let writer = try JetStreamStore(o)
        let follower = try JetStreamStore(o)
        let inbox = Inbox()
        try follower.startFollowing(post: { inbox.post($0) }, onEvent: { _ in }, onResume: { _, _ in })
        for i in 1...5 {
            var r: Result<[StoredEvent], StoreError>?
            writer.commit(
                StoreBatch(
                    events: [("orders/B\(i % 2)", StoreConformance.event("s\(i)"))],
                    resumeRecords: [ResumeRecord(token: "tok", name: "pixel", patterns: ["orders/>"], lastSent: [:])]
                )
            ) { r = $0 }
            _ = try #require(r).get()
        }
        // Run the posted closures as the daemon's loop would, until the mirror holds all five (10 s guard).
        let deadline = Date().addingTimeInterval(10)
        while follower.events(topic: "orders/B1", from: 1)?.count != 3 || follower.latest(topic: "orders/B0") == nil {
            try #require(Date() < deadline, "the follower did not see the writer's events within 10 s")
            inbox.runAll()
            usleep(10_000)
        }
        #expect(follower.events(topic: "orders/B1", from: 1)?.map(\.body.contentState.status) == ["s1", "s3", "s5"])
        #expect(follower.resumeRecords().map(\.name) == ["pixel"])
    }

    /// While NATS does not answer (the server frozen: libnats' reconnect thread dials it and waits 2 s per attempt
    /// holding its connection lock), what the daemon's loop does with a following store — commits (refused with
    /// federationUnavailable, nothing stored), the link's state and servers, the status refresh, the completions and
    /// deliveries posted to it — calls no libnats function on the loop thread (this test's); once the server answers
    /// again, publishes are taken and the mirror has them. Not a duration: which functions ran on which thread.
    @Test func theLoopThreadCallsNoLibnatsWhileNATSDoesNotAnswer() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 1
        o.requestTimeoutMilliseconds = 1000
        let store = try JetStreamStore(o)
        let inbox = Inbox()
        try store.startFollowing(post: { inbox.post($0) }, onEvent: { _ in }, onResume: { _, _ in })
        // One turn of the daemon's loop: the posted closures, the 500 ms watch's reads and status refresh.
        func turn() {
            inbox.runAll()
            _ = (store.linkState, store.connectedServer, store.knownServers, store.lastStatus)
            store.refreshStatus()
            usleep(10_000)
        }
        func commit(_ status: String) throws -> Result<[StoredEvent], StoreError> {
            var r: Result<[StoredEvent], StoreError>?
            store.commit(StoreBatch(events: [("orders/L", StoreConformance.event(status))])) { r = $0 }
            let deadline = Date().addingTimeInterval(20)
            while r == nil {
                try #require(Date() < deadline, "the commit did not complete within 20 s")
                turn()
            }
            return try #require(r)
        }
        #expect(try commit("a").get().map(\.sequence) == [1])
        server.freeze(true)
        var deadline = Date().addingTimeInterval(15)
        while store.linkState == .connected {
            try #require(Date() < deadline, "libnats did not report the frozen server lost within 15 s")
            turn()
        }
        // Lost: refused at once, and the loop keeps turning through reconnect attempts (at least one dial of 2 s).
        let refused = try commit("b")
        #expect(throws: StoreError.self) { try refused.get() }
        if case .failure(let e) = refused { #expect(e.message.hasPrefix("federationUnavailable")) }
        deadline = Date().addingTimeInterval(3)
        while Date() < deadline { turn() }
        server.freeze(false)
        deadline = Date().addingTimeInterval(20)
        while store.linkState != .connected {
            try #require(Date() < deadline, "libnats did not reconnect within 20 s of the thaw")
            turn()
        }
        var stored: [StoredEvent] = []
        for _ in 0..<5 where stored.isEmpty { stored = (try? commit("c").get()) ?? [] }
        #expect(stored.map(\.sequence) == [2])
        deadline = Date().addingTimeInterval(10)
        while store.latest(topic: "orders/L")?.sequence != 2 {
            try #require(Date() < deadline, "the mirror did not take the event within 10 s")
            turn()
        }
        #expect(store.events(topic: "orders/L", from: 1)?.map(\.body.contentState.status) == ["a", "c"])
        #expect(store.libnatsCallsOnLoopThread == [])
    }

    /// The watch the test above reads: a call noted on the loop thread is recorded, one on another thread is not.
    @Test func theLoopThreadWatchRecordsOnlyTheLoopThreadsCalls() {
        let watch = NATSLink.LoopThreadWatch()
        watch.note("before")
        watch.setLoopThread()
        let done = DispatchSemaphore(value: 0)
        Thread {
            watch.note("other")
            done.signal()
        }.start()
        done.wait()
        watch.note("loop")
        #expect(watch.callsOnLoopThread == ["loop"])
    }

    /// Each daemon's simulator state is its own (``FederationOptions/daemonID``): two daemons that each run a
    /// simulator never overwrite one another's, and a daemon reopened with its identity reads back its own state.
    @Test func eachDaemonKeepsItsOwnSimulatorState() throws {
        let server = try NATSServer()
        var o = FederationOptions(servers: [server.url])
        o.replicas = 1
        func open(_ id: String) throws -> JetStreamStore {
            var x = o
            x.daemonID = id
            return try JetStreamStore(x)
        }
        let a = try open("daemon-a")
        let b = try open("daemon-b")
        for (store, state) in [(a, "state of a"), (b, "state of b")] {
            var r: Result<[StoredEvent], StoreError>?
            store.commit(
                StoreBatch(
                    events: [("orders/\(store.daemonID)", StoreConformance.event("created"))],
                    simulatorState: Data(state.utf8)
                )
            ) { r = $0 }
            _ = try #require(r).get()
        }
        #expect(a.simulatorState() == Data("state of a".utf8))
        #expect(b.simulatorState() == Data("state of b".utf8))
        // Reopened (a restart), each identity reads its own state from the stream; an unknown one reads none.
        #expect(try open("daemon-a").simulatorState() == Data("state of a".utf8))
        #expect(try open("daemon-b").simulatorState() == Data("state of b".utf8))
        #expect(try open("daemon-c").simulatorState() == nil)
        #expect(
            FederationSubjects.kind(of: FederationSubjects.simulator(prefix: "p", daemon: "d.1"), prefix: "p")
                == .simulator(daemon: "d.1")
        )
        #expect(FederationSubjects.kind(of: "p.sim", prefix: "p") == .simulator(daemon: nil))
    }

    @Test func subjectsMapTopicsReversibly() {
        let topics = ["orders/A1001", "a.b/c d", "x_y/*", "한글/1"]
        for t in topics {
            let subject = FederationSubjects.event(t, prefix: "livebus")
            #expect(!subject.contains(" ") && !subject.contains("*") && !subject.contains(">"))
            #expect(FederationSubjects.kind(of: subject, prefix: "livebus") == .event(topic: t))
        }
        #expect(FederationSubjects.event("orders/A1001", prefix: "livebus") == "livebus.ev.orders.A1001")
        #expect(
            FederationSubjects.kind(of: FederationSubjects.resume("k.1", prefix: "p"), prefix: "p")
                == .resume(token: "k.1")
        )
        #expect(FederationSubjects.kind(of: "other.ev.x", prefix: "p") == nil)
    }

    @Test func serverListsAreChecked() throws {
        #expect(
            try FederationOptions.parseServers("nats://a:4222,nats://b:4223") == ["nats://a:4222", "nats://b:4223"]
        )
        #expect(throws: FederationError.self) { try FederationOptions.parseServers("localhost:4222") }
        #expect(throws: FederationError.self) { try FederationOptions.parseServers("nats://a:4222,") }
    }
}

/// Closures posted by the store's threads, run on the test's thread (the daemon's loop does this with uv_async).
final class Inbox: @unchecked Sendable {
    // @unchecked: `work` is behind `lock`.
    private let lock = NSLock()
    private var work: [@Sendable () -> Void] = []
    func post(_ w: @escaping @Sendable () -> Void) { lock.withLock { work.append(w) } }
    func runAll() {
        let w = lock.withLock {
            let w = work
            work = []
            return w
        }
        w.forEach { $0() }
    }
}
