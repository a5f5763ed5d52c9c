import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// A 3-node JetStream cluster started by `tools/nats-cluster` on free loopback ports, stopped when dropped.
final class NATSCluster {
    let dir: String
    let base: Int
    /// Debian installs nats-server in /usr/sbin.
    static var available: Bool {
        ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].contains {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools/nats-cluster").path
    }

    /// The address clients connect to (`LIVEBUS_NATS_HOST`).
    let host: String

    init(host: String = "127.0.0.1") throws {
        self.host = host
        dir = temporaryDirectory("lbnc")
        // Three client, route and monitoring ports each: base…base+2, +2000, +4000, all free now.
        var b = 0
        for _ in 0..<50 {
            let candidate = Int.random(in: 20_000..<26_000)
            let ports = (0..<3).flatMap { [candidate + $0, candidate + 2000 + $0, candidate + 4000 + $0] }
            if ports.allSatisfy(Self.isFree) {
                b = candidate
                break
            }
        }
        guard b != 0 else { throw E2EFailure("no free loopback ports for the NATS cluster") }
        base = b
        try run("start")
    }

    /// Starts the nodes again (same ports, same JetStream state).
    func start() throws { try run("start") }
    /// Stops every node.
    func stop() throws { try run("stop") }

    deinit {
        try? run("stop")
        try? FileManager.default.removeItem(atPath: dir)
    }

    var urls: String { (0..<3).map { "nats://\(host):\(base + $0)" }.joined(separator: ",") }
    func url(_ node: Int) -> String { "nats://\(host):\(base + node - 1)" }
    func pid(_ node: Int) -> pid_t? {
        (try? String(contentsOfFile: dir + "/n\(node).pid", encoding: .utf8))
            .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    private func run(_ command: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [Self.script, command, dir]
        p.environment = ProcessInfo.processInfo.environment.merging([
            "LIVEBUS_NATS_BASE_PORT": "\(base)", "LIVEBUS_NATS_HOST": host,
        ]) { $1 }
        // Output to a file, not a pipe: the nodes it starts in the background outlive it.
        let out = dir + "/\(command).out"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        let h = FileHandle(forWritingAtPath: out)!
        defer { try? h.close() }
        p.standardOutput = h
        p.standardError = h
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // A generous guard: the script itself waits at most 30 s for the cluster.
        for _ in 0..<1200 where p.isRunning { usleep(50_000) }
        guard !p.isRunning, p.terminationStatus == 0 else {
            if p.isRunning { p.terminate() }
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            throw E2EFailure("tools/nats-cluster \(command) failed: \(text)")
        }
    }

    static func isFree(_ port: Int) -> Bool { LoopbackPort.isFree(port) }
}

/// A `livebus attach` child writing to a file (not a terminal: plain lines, once each), stopped with SIGTERM.
final class AttachChild {
    let process = Process()
    let path: String

    init(_ path: String, _ args: [String]) throws {
        self.path = path
        process.executableURL = URL(
            fileURLWithPath: DaemonChild.binary.replacingOccurrences(of: "/livebusd", with: "/livebus")
        )
        process.arguments = ["attach"] + args
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let h = FileHandle(forWritingAtPath: path)!
        defer { try? h.close() }
        process.standardOutput = h
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var output: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    /// The JSON lines written so far.
    var lines: [JSONValue] {
        output.split(separator: "\n").compactMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
    }
    /// The `state` of each `sync` line so far.
    var syncStates: [String] {
        lines.filter { $0["type"]?.stringValue == "sync" }.compactMap { $0["state"]?.stringValue }
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

/// The sync states a phone showed, each with the daemon's SYNC then (PROTOCOL.md §5.9).
final class SyncSeen {
    private(set) var states: [SyncState] = []
    private(set) var syncs: [SyncBody?] = []

    init(_ s: ClientSession) {
        s.onSyncState = { [weak self, weak s] state in
            self?.states.append(state)
            self?.syncs.append(s?.daemonSync)
        }
    }

    /// The states from the first `degraded` on (empty when never degraded).
    var fromFirstDegraded: [SyncState] { states.firstIndex(of: .degraded).map { Array(states[$0...]) } ?? [] }

    /// The `since` of each SYNC seen from the first `degraded` on, phone clock.
    var daemonSince: [Int64] {
        guard let i = states.firstIndex(of: .degraded) else { return [] }
        return syncs[i...].compactMap { $0?.since }
    }
}

/// A network namespace joined to this one by a veth pair (a second "host" on one machine), removed when dropped.
/// Needs root and `ip` (iproute2); ``cut()`` partitions it, ``heal()`` joins it again.
final class NetworkNamespace {
    let name: String
    let hostInterface: String
    let hostAddress: String
    let namespaceAddress: String
    static var available: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") }

    init() throws {
        let tag = "\(getpid() % 10_000)\(Int.random(in: 0..<100))"
        name = "lbns\(tag)"
        hostInterface = "lbh\(tag)"
        let net = Int.random(in: 0..<256)
        let sub = Int.random(in: 0..<64) * 4
        hostAddress = "10.219.\(net).\(sub + 1)"
        namespaceAddress = "10.219.\(net).\(sub + 2)"
        let peer = "lbp\(tag)"
        try Self.ip(["netns", "add", name])
        do {
            try Self.ip(["link", "add", hostInterface, "type", "veth", "peer", "name", peer])
            try Self.ip(["link", "set", peer, "netns", name])
            try Self.ip(["addr", "add", hostAddress + "/30", "dev", hostInterface])
            try Self.ip(["link", "set", hostInterface, "up"])
            try Self.ip(["netns", "exec", name, "ip", "addr", "add", namespaceAddress + "/30", "dev", peer])
            try Self.ip(["netns", "exec", name, "ip", "link", "set", peer, "up"])
            try Self.ip(["netns", "exec", name, "ip", "link", "set", "lo", "up"])
        } catch {
            try? Self.ip(["link", "del", hostInterface])
            try? Self.ip(["netns", "del", name])
            throw error
        }
    }

    deinit {
        try? Self.ip(["link", "del", hostInterface])
        try? Self.ip(["netns", "del", name])
    }

    /// Takes the link down: packets to and from the namespace are lost (no reset: a partition, not a close).
    func cut() throws { try Self.ip(["link", "set", hostInterface, "down"]) }
    /// Brings the link up again.
    func heal() throws { try Self.ip(["link", "set", hostInterface, "up"]) }

    static func ip(_ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw E2EFailure("ip \(args.joined(separator: " ")) failed") }
    }
}

struct E2EFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// A publisher connection to one daemon: PUBLISHes one event at a time and waits for its ACK or ERROR.
final class FederatedPublisher {
    let loop: EventLoop
    let socket: String
    private var peer: PublisherPeer?

    init(loop: EventLoop, socket: String) {
        self.loop = loop
        self.socket = socket
    }

    /// Publishes `status` on `topic`; returns the ACKed sequence, or the ERROR's name (the connection is then
    /// closed by the daemon and the next publish opens another).
    func publish(topic: String, status: String, event: String, timeoutMs: UInt64 = 10_000) -> Result<UInt64, E2EFailure>
    {
        if peer == nil || peer!.closed { peer = PublisherPeer(loop: loop, socket: socket) }
        let p = peer!
        var body = GoldenVectorsForTests.event
        body.event = event
        body.contentState.status = status
        body.timestamp = SystemServerClock().now().millisecondsSinceEpoch
        body.contentState.lastConfirmed = body.timestamp
        body.contentState.etaTarget = body.timestamp + 600_000
        let id = p.nextID()
        p.whenOpen { c in
            c.write(try! Frame(type: .publish, sequence: id, topic: topic, body: try! WireJSON.encode(body)).encoded())
        }
        let ok = runLoop(loop, timeoutMs: timeoutMs) { p.answer(id) != nil || p.closed }
        guard ok, let a = p.answer(id) else {
            return .failure(E2EFailure(p.closed ? "connection closed" : "no answer"))
        }
        return a
    }

    func close() { peer?.connection?.close() }
}

final class PublisherPeer {
    private(set) var connection: Connection?
    private var decoder = FrameDecoder()
    private var waiting: [(Connection) -> Void] = []
    private var answers: [UInt64: Result<UInt64, E2EFailure>] = [:]
    private var id: UInt64 = 0
    private(set) var closed = false

    init(loop: EventLoop, socket: String) {
        Connection.connect(loop: loop, path: socket) { [self] r in
            guard case .success(let c) = r else {
                closed = true
                return
            }
            connection = c
            c.onRead = { [unowned self] bytes in
                decoder.append(bytes)
                while let f = try? decoder.next() {
                    if f.type == .ack, let b = try? WireJSON.decode(AckBody.self, from: f.body) {
                        answers[f.sequence] = .success(b.sequence)
                    } else if f.type == .error, let b = try? WireJSON.decode(ErrorBody.self, from: f.body) {
                        for k in 1...max(1, self.id) where answers[k] == nil {
                            answers[k] = .failure(E2EFailure(b.name))
                        }
                    }
                }
            }
            c.onClose = { [unowned self] _ in closed = true }
            try? c.startReading()
            c.write(try! hello(role: .publisher, name: nil, device: nil).encoded())
            for w in waiting { w(c) }
            waiting = []
        }
    }

    func nextID() -> UInt64 {
        id += 1
        return id
    }
    func answer(_ id: UInt64) -> Result<UInt64, E2EFailure>? { answers[id] }
    func whenOpen(_ w: @escaping (Connection) -> Void) {
        if let c = connection { w(c) } else { waiting.append(w) }
    }
}

/// Runs `loop` until `done()` or `timeoutMs`; returns whether `done()` held.
@discardableResult
func runLoop(_ loop: EventLoop, timeoutMs: UInt64, until done: @escaping () -> Bool) -> Bool {
    var ok = done()
    if ok { return true }
    let check = loop.schedule(after: 5, repeat: 5) {
        if done() {
            ok = true
            loop.stop()
        }
    }
    let timeout = loop.schedule(after: timeoutMs) { loop.stop() }
    loop.run()
    check.cancel()
    timeout.cancel()
    return ok
}

/// Federation through NATS JetStream with real processes on loopback: three `nats-server` as one JetStream cluster
/// (replicas 3, `tools/nats-cluster`) and three `livebusd --federate`, each with its own socket.
/// Source: ISSUE-19 "Tests".
@Suite(.serialized, .enabled(if: NATSCluster.available, "nats-server is not installed: run tools/setup"))
struct FederationE2ETests {
    static let statuses = ["created", "cooking", "awaitingPickup", "pickedUp", "delivering", "delivered"]
    static func event(_ i: Int) -> String { i == 0 ? "start" : (i == statuses.count - 1 ? "end" : "update") }

    static func startDaemon(
        _ dir: String,
        _ k: Int,
        federate: String,
        extra: [String] = [],
        namespace: NetworkNamespace? = nil
    ) throws -> DaemonChild {
        let socket = dir + "/d\(k).sock"
        let args =
            ["--socket", socket, "--federate", federate, "--federate-replicas", "3", "--log-level", "info"] + extra
        let d: DaemonChild
        if let ns = namespace {
            // `ip netns exec` enters the namespace and execs the daemon (same pid); the socket is a file, reachable
            // from this namespace.
            d = try DaemonChild(
                ["-c", "exec /usr/sbin/ip netns exec \"$0\" \"$@\"", ns.name, DaemonChild.binary] + args,
                log: dir + "/d\(k).log",
                shell: true
            )
        } else {
            d = try DaemonChild(args, log: dir + "/d\(k).log")
        }
        for _ in 0..<500 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        guard SocketProbe.probe(path: socket) == .live else {
            throw E2EFailure(
                "livebusd \(k) did not serve \(socket): "
                    + ((try? String(contentsOfFile: dir + "/d\(k).log", encoding: .utf8)) ?? "")
            )
        }
        return d
    }

    /// What the phones applied, the errors they saw, their sync states and reconnects, and the end of daemon 1's
    /// log: the failure message of a test whose phones did not all converge.
    static func report(_ phones: [Phones], dir: String) -> String {
        func log(_ name: String) -> String {
            let text = (try? String(contentsOfFile: dir + "/" + name, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").filter { !$0.contains("peer closed the connection") }
            return lines.joined(separator: "\n")
        }
        let sync = phones.flatMap(\.sessions).map { "\($0.syncState) after \($0.counters.reconnects) reconnects" }
        return "phones: \(phones.map { $0.applied.mapValues { $0.map(\.status) } }), errors: \(phones.map(\.errors)), "
            + "sync: \(sync), daemon 1 log before its kill: \(log("d1-before-kill.log").suffix(6000)), after: "
            + "\(log("d1.log").suffix(4000))"
    }

    /// Publishes the order's statuses in `range`, retrying an event refused while the federation reconnects (for
    /// at most 45 s each); returns the ACKed sequences.
    static func publishAll(_ pub: FederatedPublisher, topic: String, _ range: Range<Int>, loop: EventLoop) -> [UInt64] {
        var acked: [UInt64] = []
        for i in range {
            // A generous guard, not a measured duration: after a node or the whole cluster comes back, JetStream
            // elects the stream's leader again (seconds, more on a loaded machine) and refuses publishes until then.
            let deadline = Date().addingTimeInterval(45)
            while Date() < deadline {
                if case .success(let seq) = pub.publish(topic: topic, status: statuses[i], event: event(i)) {
                    acked.append(seq)
                    break
                }
                runLoop(loop, timeoutMs: 250) { false }
            }
            runLoop(loop, timeoutMs: 60) { false }
        }
        return acked
    }

    /// The demo on daemon 1 (its simulator's events go into the stream): phones on all three daemons follow it to
    /// delivered, every event once, in sequence order; a kill -9 of daemon 1 mid-order and its restart with the
    /// same command carry on from the simulator state in the stream (README "More than one machine"), never from the
    /// scenario's beginning (review finding 1: the phones went delivering → created → cooking).
    @Test func phonesOnEveryDaemonFollowTheDemoToDelivered() throws {
        let cluster = try NATSCluster()
        let dir = temporaryDirectory("lbfm")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let scenario = ["--scenario", "demo-120s", "--time-scale", "40"]
        var d1 = try Self.startDaemon(dir, 1, federate: cluster.urls, extra: scenario)
        let d2 = try Self.startDaemon(dir, 2, federate: cluster.urls)
        let d3 = try Self.startDaemon(dir, 3, federate: cluster.urls)
        defer { [d1, d2, d3].forEach { $0.terminate() } }
        let loop = try EventLoop()
        let phones = (1...3).map { Phones(["h\($0)"], socket: dir + "/d\($0).sock", loop: loop) }
        // Mid-order (the phone on daemon 2 has seen the order past created), kill -9 of daemon 1 and a restart.
        #expect(
            runLoop(loop, timeoutMs: 20_000) {
                (phones[1].applied["h2"]?.contains { $0.status != "created" } ?? false)
            }
        )
        d1.kill9()
        // The first daemon 1's log is kept for the failure message (its restart starts a new one).
        try? FileManager.default.moveItem(atPath: dir + "/d1.log", toPath: dir + "/d1-before-kill.log")
        d1 = try Self.startDaemon(dir, 1, federate: cluster.urls, extra: scenario)
        #expect(
            runLoop(loop, timeoutMs: 20_000) { phones.allSatisfy(\.allDelivered) },
            Comment(rawValue: Self.report(phones, dir: dir))
        )
        for p in phones {
            for (n, u) in p.applied {
                let seqs = u.map(\.seq)
                #expect(seqs == Array(1...UInt64(max(1, seqs.count))), "\(n) sequences \(seqs)")
                var statuses: [String] = []
                for x in u where statuses.last != x.status { statuses.append(x.status) }
                #expect(statuses == E2EDaemonTests.fullSequence, "\(n) saw \(statuses)")
            }
        }
        // Daemon 2 did not create the order: a cancel there says where it runs (review finding 5), and its status
        // says that it lists its own orders only.
        let topic = phones[1].applied["h2"]?.first?.topic ?? "orders/?"
        let order = String(topic.dropFirst("orders/".count))
        let cancel = Self.cli(["order", "cancel", order, "--socket", dir + "/d2.sock"])
        #expect(cancel.contains("order \(order) was created on another daemon of the federation"), "\(cancel)")
        #expect(Self.statusText(dir + "/d2.sock").contains("this daemon's orders only"))
        for s in phones.flatMap(\.sessions) { s.close() }
        runLoop(loop, timeoutMs: 100) { false }
        loop.close()
    }

    /// Two federated daemons without `--scenario` each create an order by hand; a kill -9 of daemon 1 and its restart
    /// with the same data directory restore its simulator from its own state in the stream: its order is still
    /// listed and carries on to delivered, and daemon 2's order (whose simulator state is kept under daemon 2's
    /// identity) is untouched. Before, a daemon without `--scenario` restored nothing, and every daemon's state was
    /// one key of the stream. Source: PROTOCOL.md §5.8 "The simulator".
    @Test func ordersMadeByHandSurviveAKillOfTheirDaemon() throws {
        let cluster = try NATSCluster()
        let dir = temporaryDirectory("lbfo")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 100 times faster: an order by hand (about 40 simulated minutes) is delivered in about 25 s.
        let fast = ["--time-scale", "100"]
        var d1 = try Self.startDaemon(dir, 1, federate: cluster.urls, extra: fast)
        let d2 = try Self.startDaemon(dir, 2, federate: cluster.urls, extra: fast)
        defer { [d1, d2].forEach { $0.terminate() } }
        let loop = try EventLoop()
        // The watching phone is on daemon 2, which is never killed: it sees both orders from the federation.
        let phone = Phones(["w"], socket: dir + "/d2.sock", loop: loop)
        runLoop(loop, timeoutMs: 500) { false }
        let made1 = Self.cli(["order", "create", "FA1", "--socket", dir + "/d1.sock"])
        let made2 = Self.cli(["order", "create", "FB2", "--socket", dir + "/d2.sock"])
        #expect(made1.contains("FA1") && made2.contains("FB2"), "\(made1) \(made2)")
        func seen(_ order: String) -> [AppliedUpdate] { phone.applied["w"]?.filter { $0.order == order } ?? [] }
        // Mid-order (FA1 is past created), kill -9 of daemon 1 and a restart with the same socket and data directory.
        #expect(
            runLoop(loop, timeoutMs: 30_000) { seen("FA1").contains { $0.status != "created" } },
            "FA1: \(seen("FA1").map(\.status))"
        )
        d1.kill9()
        d1 = try Self.startDaemon(dir, 1, federate: cluster.urls, extra: fast)
        let listed1 = Self.cli(["order", "list", "--socket", dir + "/d1.sock", "--json"])
        #expect(listed1.contains("\"FA1\""), "daemon 1 after its restart lists: \(listed1)")
        #expect(!listed1.contains("\"FB2\""), "daemon 1 lists daemon 2's order: \(listed1)")
        let listed2 = Self.cli(["order", "list", "--socket", dir + "/d2.sock", "--json"])
        #expect(listed2.contains("\"FB2\"") && !listed2.contains("\"FA1\""), "daemon 2 lists: \(listed2)")
        #expect(
            runLoop(loop, timeoutMs: 90_000) {
                seen("FA1").last?.status == "delivered" && seen("FB2").last?.status == "delivered"
            },
            "FA1: \(seen("FA1").map(\.status)), FB2: \(seen("FB2").map(\.status))"
        )
        // Each order went forward only (never back to created after the restart), once per sequence, without a gap.
        for order in ["FA1", "FB2"] {
            let u = seen(order)
            let seqs = u.map(\.seq)
            #expect(seqs == Array((seqs.first ?? 1)..<((seqs.first ?? 1) + UInt64(seqs.count))), "\(order) \(seqs)")
            var statuses: [String] = []
            for x in u where statuses.last != x.status { statuses.append(x.status) }
            #expect(
                statuses == Array(E2EDaemonTests.fullSequence.suffix(statuses.count)) && statuses.last == "delivered",
                "\(order) saw \(statuses)"
            )
        }
        let log1 = (try? String(contentsOfFile: dir + "/d1.log", encoding: .utf8)) ?? ""
        #expect(log1.contains("simulator restored from the federation"), "daemon 1's log: \(log1.suffix(2000))")
        for s in phone.sessions { s.close() }
        runLoop(loop, timeoutMs: 100) { false }
        loop.close()
    }

    /// Order ids a federated daemon picks itself are unique across the federation: two daemons each create orders
    /// without an id, daemon 1 is killed with kill -9 and restarted with the same data directory and creates one
    /// more; every id is `<tag>-M<n>` with one tag per daemon (its identity's hash), and no id repeats, the restarted
    /// daemon's included. An explicit id already used by another daemon is refused with the reason. Before, each
    /// daemon counted `M0001` on its own and two daemons' orders shared one topic. Source: PROTOCOL.md §5.8 "Ids".
    @Test func idsMadeByTwoDaemonsNeverCollide() throws {
        let cluster = try NATSCluster()
        let dir = temporaryDirectory("lbfi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var d1 = try Self.startDaemon(dir, 1, federate: cluster.urls)
        let d2 = try Self.startDaemon(dir, 2, federate: cluster.urls)
        defer { [d1, d2].forEach { $0.terminate() } }
        func create(_ k: Int, _ extra: [String] = []) -> String {
            let out = Self.cli(["order", "create"] + extra + ["--socket", dir + "/d\(k).sock"])
            guard let r = out.range(of: #"created order (\S+) on"#, options: .regularExpression) else { return out }
            return String(out[r].dropFirst("created order ".count).dropLast(" on".count))
        }
        var ids = [create(1), create(2), create(1), create(2)]
        d1.kill9()
        d1 = try Self.startDaemon(dir, 1, federate: cluster.urls)
        ids.append(create(1))
        for id in ids {
            #expect(id.range(of: #"^[0-9a-f]{8}-M[0-9]{4}$"#, options: .regularExpression) != nil, "id \(id)")
        }
        #expect(Set(ids).count == ids.count, "ids repeat: \(ids)")
        let tag = { (id: String) in String(id.prefix(8)) }
        #expect(tag(ids[0]) == tag(ids[2]) && tag(ids[0]) == tag(ids[4]), "daemon 1's tags: \(ids)")
        #expect(tag(ids[1]) == tag(ids[3]) && tag(ids[0]) != tag(ids[1]), "daemon 2's tag: \(ids)")
        #expect(create(1, ["FX1"]) == "FX1")
        let refused = Self.cli(["order", "create", "FX1", "--socket", dir + "/d2.sock"])
        #expect(refused.contains("an order with id 'FX1' already exists in the federation"), "\(refused)")
    }

    /// A publisher on daemon 1 reaches phones on daemons 2 and 3 in order; a phone moves from daemon 1 to daemon 3
    /// mid-order with no gap and no double application; then kill -9 of daemon 2 and of one NATS node mid-order
    /// loses nothing acknowledged (the phone of daemon 2 moves to daemon 3 and gets every ACKed event once).
    @Test func publishReachesEveryDaemonAndPhonesMoveHostsLosingNothing() throws {
        let cluster = try NATSCluster()
        let dir = temporaryDirectory("lbfd")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d1 = try Self.startDaemon(dir, 1, federate: cluster.url(1))
        let d2 = try Self.startDaemon(dir, 2, federate: cluster.url(2))
        let d3 = try Self.startDaemon(dir, 3, federate: cluster.urls)
        defer { [d1, d2, d3].forEach { $0.terminate() } }
        let loop = try EventLoop()
        let p2 = Phones(["p2"], socket: dir + "/d2.sock", loop: loop)
        let p3 = Phones(["p3"], socket: dir + "/d3.sock", loop: loop)
        let mover = Phones(["mover"], socket: dir + "/d1.sock", loop: loop)
        let all = [p2, p3, mover]
        #expect(runLoop(loop, timeoutMs: 10_000) { all.allSatisfy { $0.sessions[0].syncState == .live } })
        let pub = FederatedPublisher(loop: loop, socket: dir + "/d1.sock")
        var acked = Self.publishAll(pub, topic: "orders/F1", 0..<3, loop: loop)
        #expect(runLoop(loop, timeoutMs: 10_000) { mover.applied["mover"]?.count == 3 })
        // Mid-order, the phone moves from host 1 to host 3 and resumes there with its token.
        mover.sessions[0].move(to: dir + "/d3.sock")
        acked += Self.publishAll(pub, topic: "orders/F1", 3..<6, loop: loop)
        #expect(acked == Array(1...6))
        #expect(
            runLoop(loop, timeoutMs: 10_000) { all.allSatisfy { $0.applied.values.first?.count == 6 } },
            "not every phone got all 6: \(all.map { $0.applied.mapValues { $0.map(\.seq) } })"
        )
        for phones in all {
            for (n, u) in phones.applied {
                #expect(u.map(\.seq) == Array(1...6), "\(n) applied \(u.map(\.seq))")
                #expect(u.map(\.status) == Self.statuses, "\(n) saw \(u.map(\.status))")
            }
        }

        // kill -9 of daemon 2 and of NATS node 1 (daemon 1's server: it reconnects to another node) mid-order.
        let log1 = dir + "/d1.log"
        var acked2 = Self.publishAll(pub, topic: "orders/F2", 0..<2, loop: loop)
        d2.kill9()
        if let pid = cluster.pid(1) { kill(pid, SIGKILL) }
        acked2 += Self.publishAll(pub, topic: "orders/F2", 2..<6, loop: loop)
        #expect(
            acked2.count == 6 && acked2 == acked2.sorted() && Set(acked2).count == 6,
            "acked \(acked2); daemon 1: \(((try? String(contentsOfFile: log1, encoding: .utf8)) ?? "").suffix(3000))"
        )
        // Every ACK is a new sequence, in order; a publish refused as "not acknowledged in time" during the kill may
        // still have been stored (JetStream's at-least-once): the phones get it too, once.
        let lastF2 = acked2.last ?? 6
        // The phone of the killed daemon moves to daemon 3: every acknowledged event arrives, once, in order.
        p2.sessions[0].move(to: dir + "/d3.sock")
        #expect(
            runLoop(loop, timeoutMs: 15_000) {
                [p2, p3, mover].allSatisfy {
                    $0.applied.values.first?.filter { $0.topic == "orders/F2" }.last?.seq == lastF2
                }
            },
            "daemon 3 running \(d3.process.isRunning): \(((try? String(contentsOfFile: dir + "/d3.log", encoding: .utf8)) ?? "").suffix(3000))"
        )
        for phones in [p2, p3, mover] {
            for (n, u) in phones.applied {
                let f2 = u.filter { $0.topic == "orders/F2" }
                #expect(f2.map(\.seq) == Array(1...lastF2), "\(n) applied \(f2.map(\.seq)) of orders/F2")
            }
        }
        pub.close()
        for s in all.flatMap(\.sessions) { s.close() }
        runLoop(loop, timeoutMs: 100) { false }
        loop.close()
    }

    /// SIGSTOP of the NATS node a daemon is connected to, for 10 s: the daemon neither crashes nor spins (its CPU
    /// time while the node is frozen stays far below the wall time), keeps serving its socket, refuses or holds
    /// publishes rather than losing them, and recovers: a publish after SIGCONT reaches a phone on another daemon.
    @Test func aFrozenNATSNodeNeitherCrashesNorSpinsTheDaemon() throws {
        let cluster = try NATSCluster()
        let dir = temporaryDirectory("lbfs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d1 = try Self.startDaemon(dir, 1, federate: cluster.url(1))
        let d2 = try Self.startDaemon(dir, 2, federate: cluster.url(2))
        defer { [d1, d2].forEach { $0.terminate() } }
        let loop = try EventLoop()
        let phone = Phones(["far"], socket: dir + "/d2.sock", loop: loop)
        #expect(runLoop(loop, timeoutMs: 10_000) { phone.sessions[0].syncState == .live })
        let pub = FederatedPublisher(loop: loop, socket: dir + "/d1.sock")
        #expect(Self.publishAll(pub, topic: "orders/S1", 0..<1, loop: loop) == [1])
        let node = try #require(cluster.pid(1))
        let cpuBefore = Self.cpuMilliseconds(d1.process.processIdentifier)
        kill(node, SIGSTOP)
        // 10 s frozen: the daemon's socket keeps answering (a new phone attaches to it meanwhile).
        let local = Phones(["near"], socket: dir + "/d1.sock", loop: loop)
        runLoop(loop, timeoutMs: 10_000) { false }
        let cpuFrozen = Self.cpuMilliseconds(d1.process.processIdentifier) - cpuBefore
        // Served: attached and caught up; `degraded` when the daemon saw its link lost meanwhile (SYNC, §5.9).
        #expect(
            [.live, .degraded].contains(local.sessions[0].syncState),
            "the daemon stopped serving while its NATS node was frozen: \(local.sessions[0].syncState)"
        )
        kill(node, SIGCONT)
        #expect(d1.process.isRunning, "the daemon crashed while its NATS node was frozen")
        // Spinning would burn the whole 10 s; a healthy daemon idles (pings, reconnects): a generous 3 s bound.
        #expect(cpuFrozen < 3000, "the daemon used \(cpuFrozen) ms of CPU in 10 s while its NATS node was frozen")
        let after = Self.publishAll(pub, topic: "orders/S1", 1..<2, loop: loop)
        // A PUBLISH refused as "not acknowledged in time" may still have been stored (JetStream's at-least-once):
        // the ACKed sequence is then higher, and the phone gets every stored one, once, in order.
        #expect(
            after.count == 1 && after[0] >= 2,
            "after SIGCONT: \(after); daemon 1: \(((try? String(contentsOfFile: dir + "/d1.log", encoding: .utf8)) ?? "").suffix(3000))"
        )
        let last = after.first ?? 2
        #expect(runLoop(loop, timeoutMs: 15_000) { phone.applied["far"]?.last?.seq == last })
        #expect(phone.applied["far"]?.map(\.seq) == Array(1...last))
        // Once the node is back, both daemons' phones are live (told so by SYNC if their daemon saw the link lost).
        #expect(
            runLoop(loop, timeoutMs: 15_000) { (phone.sessions + local.sessions).allSatisfy { $0.syncState == .live } },
            "after SIGCONT: \((phone.sessions + local.sessions).map(\.syncState))"
        )
        pub.close()
        for s in phone.sessions + local.sessions { s.close() }
        runLoop(loop, timeoutMs: 100) { false }
        loop.close()
    }

    /// NATS lost while running (every node stopped): PUBLISH is refused with ERROR `federationUnavailable`, the
    /// phone keeps its session and state and is told with SYNC that the daemon is degraded (PROTOCOL.md §5.9), `status`
    /// says so; a `--federate-optional` daemon starts meanwhile and its phone is degraded from its WELCOME; once the
    /// cluster is back the daemon reconnects, the optional one joins, both phones are told catchingUp then live,
    /// publishes on both are ACKed and both phones converge. `livebus status` shows the federation (replicas, peers).
    @Test func natsLostWhileRunningRefusesPublishesAndEverythingCatchesUp() throws {
        let cluster = try NATSCluster()
        let dir = temporaryDirectory("lbfl")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d1 = try Self.startDaemon(dir, 1, federate: cluster.urls)
        defer { d1.terminate() }
        let loop = try EventLoop()
        let phone = Phones(["stay"], socket: dir + "/d1.sock", loop: loop)
        let stay = phone.sessions[0]
        let staySync = SyncSeen(stay)
        #expect(runLoop(loop, timeoutMs: 10_000) { stay.syncState == .live })
        // A federated daemon says its state right after WELCOME.
        #expect(stay.daemonSync?.state == .live, "SYNC after WELCOME: \(String(describing: stay.daemonSync))")
        let session = stay.sessionID
        // `livebus attach` shows it too: --json sync lines and plain text lines (its output is a file, not a tty).
        let json = try AttachChild(dir + "/attach.jsonl", ["--socket", dir + "/d1.sock", "--name", "j", "--json"])
        let text = try AttachChild(dir + "/attach.txt", ["--socket", dir + "/d1.sock", "--name", "t"])
        defer { [json, text].forEach { $0.stop() } }
        #expect(runLoop(loop, timeoutMs: 10_000) { json.syncStates.last == "live" }, "attach --json: \(json.output)")
        let pub = FederatedPublisher(loop: loop, socket: dir + "/d1.sock")
        #expect(Self.publishAll(pub, topic: "orders/L1", 0..<2, loop: loop) == [1, 2])
        #expect(runLoop(loop, timeoutMs: 10_000) { phone.applied["stay"]?.count == 2 })
        // `livebus status`: connected, the stream's 3 replicas, the leader's 2 peers.
        var status: JSONValue = .null
        #expect(
            runLoop(loop, timeoutMs: 10_000) {
                status = Self.status(dir + "/d1.sock")
                guard case .array(let peers)? = status["federation"]?["peers"] else { return false }
                return peers.count == 2
            },
            "status: \(status)"
        )
        #expect(status["federation"]?["state"]?.stringValue == "connected")
        #expect(status["federation"]?["replicas"]?.doubleValue == 3)
        #expect(Self.statusText(dir + "/d1.sock").contains("FEDERATION connected"))

        try cluster.stop()
        var refusal = ""
        // A publish that got in while the nodes were stopping is ACKed: it is stored, and counted.
        var ackedWhileStopping = 0
        #expect(
            runLoop(loop, timeoutMs: 10_000) {
                switch pub.publish(topic: "orders/L1", status: "awaitingPickup", event: "update") {
                case .failure(let e): refusal = e.description
                case .success: ackedWhileStopping += 1
                }
                return refusal == "federationUnavailable"
            },
            "a publish while NATS is down was answered \(refusal)"
        )
        let n = UInt64(2 + ackedWhileStopping)
        #expect(Self.status(dir + "/d1.sock")["federation"]?["state"]?.stringValue == "reconnecting")
        // The phone is told: degraded, since an instant on its own clock, why; it keeps what it has.
        #expect(
            runLoop(loop, timeoutMs: 5_000) { stay.syncState == .degraded },
            "the phone shows \(stay.syncState); seen \(staySync.states)"
        )
        #expect(stay.daemonSync?.reason?.contains("federationUnavailable") == true)
        #expect(stay.daemonSync.map { $0.since <= stay.now().millisecondsSinceEpoch + 1_000 } == true)
        #expect(Self.status(dir + "/d1.sock")["federation"]?["sync"]?.stringValue == "degraded")
        #expect(Self.statusText(dir + "/d1.sock").contains("phones told: degraded"))
        let kept = phone.applied["stay"]?.map(\.seq) ?? []
        #expect(kept.count >= 2 && kept == Array(1...UInt64(kept.count)), "the phone kept \(kept)")
        #expect(stay.replicas["orders/L1"]?.sequence == UInt64(kept.count))
        #expect(stay.board.activity("L1") != nil, "the phone's activity was dropped while degraded")
        // A daemon started now with --federate-optional runs alone until it can join.
        let d2 = try Self.startDaemon(dir, 2, federate: cluster.urls, extra: ["--federate-optional"])
        defer { d2.terminate() }
        #expect(Self.status(dir + "/d2.sock")["federation"]?["state"]?.stringValue == "unjoined")
        #expect(Self.status(dir + "/d2.sock")["federation"]?["sync"]?.stringValue == "degraded")
        // A phone on the unjoined daemon is degraded from its WELCOME on.
        let late = Phones(["late"], socket: dir + "/d2.sock", loop: loop)
        let lateSync = SyncSeen(late.sessions[0])
        #expect(
            runLoop(loop, timeoutMs: 10_000) { late.sessions[0].syncState == .degraded },
            "the late phone shows \(late.sessions[0].syncState)"
        )
        #expect(late.sessions[0].daemonSync?.reason?.contains("--federate-optional") == true)
        #expect(
            stay.syncState == .degraded && stay.sessionID == session,
            "the phone lost its session while NATS was down"
        )

        try cluster.start()
        let again = Self.publishAll(pub, topic: "orders/L1", 2..<3, loop: loop)
        // A PUBLISH refused as "not acknowledged in time" may still have been stored (JetStream's at-least-once):
        // sequences then skip ahead in the ACKs, never on the phone.
        #expect(
            again.count == 1 && again[0] >= n + 1,
            "after NATS came back: \(again); daemon 1: \(((try? String(contentsOfFile: dir + "/d1.log", encoding: .utf8)) ?? "").suffix(4000))"
        )
        let pub2 = FederatedPublisher(loop: loop, socket: dir + "/d2.sock")
        let joined = Self.publishAll(pub2, topic: "orders/L1", 3..<4, loop: loop)
        #expect(joined.count == 1 && joined[0] > (again.first ?? 0), "the optional daemon after joining: \(joined)")
        let last = joined.first ?? n + 2
        #expect(
            runLoop(loop, timeoutMs: 15_000) { phone.applied["stay"]?.last?.seq == last },
            "the phone applied \(phone.applied["stay"]?.map(\.seq) ?? [])"
        )
        #expect(phone.applied["stay"]?.map(\.seq) == Array(1...last))
        // Both phones were told catchingUp, then live, and caught up; the first kept its session throughout.
        #expect(
            runLoop(loop, timeoutMs: 10_000) {
                stay.syncState == .live && late.sessions[0].syncState == .live
                    && late.applied["late"]?.last?.seq == last
            },
            "stay \(staySync.states), late \(lateSync.states), late applied \(late.applied["late"]?.map(\.seq) ?? [])"
        )
        for seen in [staySync, lateSync] {
            let after = seen.fromFirstDegraded
            #expect(after.first == .degraded && after.suffix(2) == [.catchingUp, .live], "\(seen.states)")
            #expect(Set(after).isSubset(of: [.degraded, .catchingUp, .live]), "\(seen.states)")
            let since = seen.daemonSince
            #expect(since == since.sorted(), "SYNC instants go back: \(since)")
        }
        #expect(stay.sessionID == session && stay.counters.reconnects == 0)
        #expect(runLoop(loop, timeoutMs: 5_000) { json.syncStates.last == "live" }, "attach --json: \(json.output)")
        let jsonSyncs = json.lines.filter { $0["type"]?.stringValue == "sync" }
        let firstDegraded = jsonSyncs.firstIndex { $0["state"]?.stringValue == "degraded" }
        #expect(firstDegraded != nil, "attach --json: \(json.output)")
        if let i = firstDegraded {
            #expect(jsonSyncs[i]["daemon"]?.stringValue == "degraded")
            #expect(jsonSyncs[i]["reason"]?.stringValue?.contains("federationUnavailable") == true)
            #expect(jsonSyncs[i]["since"]?.doubleValue != nil)
            #expect(jsonSyncs[i...].suffix(2).map { $0["state"]?.stringValue } == ["catchingUp", "live"])
        }
        let textLines = text.output.split(separator: "\n").filter { $0.hasPrefix("sync: ") }
        #expect(
            textLines.contains {
                $0.hasPrefix("sync: degraded (daemon degraded since ") && $0.contains("federationUnavailable")
            }
                && textLines.last?.hasPrefix("sync: live (daemon live since ") == true,
            "attach: \(text.output)"
        )
        #expect(Self.status(dir + "/d1.sock")["federation"]?["sync"]?.stringValue == "live")
        pub.close()
        pub2.close()
        for s in phone.sessions + late.sessions { s.close() }
        runLoop(loop, timeoutMs: 100) { false }
        loop.close()
    }

    /// A partition of one daemon (its own network namespace, the veth link taken down) from the cluster, then the
    /// heal: its publishes are refused during the partition, the other daemon keeps publishing, and every phone
    /// converges after it, each update applied once in order.
    @Test(.enabled(if: NetworkNamespace.available, "needs root and iproute2 for a network namespace"))
    func aPartitionedDaemonRefusesPublishesAndEveryPhoneConvergesAfterTheHeal() throws {
        let ns = try NetworkNamespace()
        let cluster = try NATSCluster(host: ns.hostAddress)
        let dir = temporaryDirectory("lbfp")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d1 = try Self.startDaemon(dir, 1, federate: cluster.urls)
        let d3 = try Self.startDaemon(dir, 3, federate: cluster.urls, namespace: ns)
        defer { [d1, d3].forEach { $0.terminate() } }
        let loop = try EventLoop()
        let near = Phones(["near"], socket: dir + "/d1.sock", loop: loop)
        let far = Phones(["far"], socket: dir + "/d3.sock", loop: loop)
        let farSync = SyncSeen(far.sessions[0])
        #expect(runLoop(loop, timeoutMs: 10_000) { [near, far].allSatisfy { $0.sessions[0].syncState == .live } })
        let pub1 = FederatedPublisher(loop: loop, socket: dir + "/d1.sock")
        let pub3 = FederatedPublisher(loop: loop, socket: dir + "/d3.sock")
        #expect(Self.publishAll(pub1, topic: "orders/P1", 0..<2, loop: loop) == [1, 2])
        #expect(runLoop(loop, timeoutMs: 10_000) { far.applied["far"]?.count == 2 })

        try ns.cut()
        var refusal = ""
        #expect(
            runLoop(loop, timeoutMs: 15_000) {
                if case .failure(let e) = pub3.publish(topic: "orders/P1", status: "pickedUp", event: "update") {
                    refusal = e.description
                }
                return refusal == "federationUnavailable"
            },
            "a publish on the partitioned daemon was answered \(refusal)"
        )
        #expect(Self.publishAll(pub1, topic: "orders/P1", 2..<4, loop: loop) == [3, 4])
        #expect(runLoop(loop, timeoutMs: 10_000) { near.applied["near"]?.count == 4 })
        #expect(far.applied["far"]?.count == 2, "the partitioned daemon's phone got \(far.applied["far"]?.count ?? 0)")
        #expect(
            runLoop(loop, timeoutMs: 5_000) { far.sessions[0].syncState == .degraded },
            "the partitioned daemon's phone shows \(far.sessions[0].syncState): \(farSync.states)"
        )
        #expect(near.sessions[0].syncState == .live)

        try ns.heal()
        #expect(
            runLoop(loop, timeoutMs: 20_000) { far.applied["far"]?.count == 4 && far.sessions[0].syncState == .live },
            "after the heal the far phone applied \(far.applied["far"]?.map(\.seq) ?? []), sync \(farSync.states)"
        )
        #expect(farSync.fromFirstDegraded.suffix(2) == [.catchingUp, .live], "\(farSync.states)")
        #expect(Self.publishAll(pub3, topic: "orders/P1", 4..<6, loop: loop) == [5, 6])
        #expect(runLoop(loop, timeoutMs: 10_000) { [near, far].allSatisfy { $0.applied.values.first?.count == 6 } })
        for phones in [near, far] {
            for (n, u) in phones.applied {
                #expect(u.map(\.seq) == Array(1...6), "\(n) applied \(u.map(\.seq))")
                #expect(u.map(\.status) == Self.statuses, "\(n) saw \(u.map(\.status))")
            }
        }
        pub1.close()
        pub3.close()
        for s in near.sessions + far.sessions { s.close() }
        runLoop(loop, timeoutMs: 100) { false }
        loop.close()
        withExtendedLifetime(ns) {}
    }

    /// `livebus status --json` of a daemon: its `data`.
    static func status(_ socket: String) -> JSONValue {
        let text = statusText(socket, json: true)
        guard let v = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { return .null }
        return v["data"] ?? .null
    }

    /// `livebus ARGS`'s standard output and error.
    /// Runs `livebus ARGS` to its end; its standard output, and its standard error too when `standardError` is set.
    static func cli(_ args: [String], standardError: Bool = true) -> String {
        let p = Process()
        p.executableURL = URL(
            fileURLWithPath: DaemonChild.binary.replacingOccurrences(of: "/livebusd", with: "/livebus")
        )
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = standardError ? out : FileHandle.nullDevice
        guard (try? p.run()) != nil else { return "" }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    static func statusText(_ socket: String, json: Bool = false) -> String {
        cli(["status", "--socket", socket] + (json ? ["--json"] : []), standardError: false)
    }

    /// utime + stime of a process, milliseconds (`/proc/PID/stat` fields 14 and 15, clock ticks).
    static func cpuMilliseconds(_ pid: pid_t) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the ")": state is field 3, so utime (14) and stime (15) are at 11 and 12.
        guard fields.count > 12, let u = Int(fields[11]), let s = Int(fields[12]) else { return 0 }
        return (u + s) * 1000 / Int(sysconf(Int32(_SC_CLK_TCK)))
    }
}
