import Foundation
import LiveBusLoop
import LiveBusScenario

/// The NATS JetStream cluster of a federated e2e scenario (`Protocol/E2E.md` §2.5): K `nats-server` nodes on free
/// loopback ports (clients on BASE…, routes on BASE+2000…, monitoring on BASE+4000…), configured as
/// `tools/nats-cluster` configures its three, state and logs under the scenario's directory.
///
/// The cluster does not advertise its nodes' addresses to clients (`no_advertise`): a daemon reconnects only to the
/// nodes its `--federate` lists (every node unless the scenario says otherwise), so that a partition cuts it off for
/// good.
final class E2ENATSCluster {
    let directory: String
    let base: Int
    /// The address the nodes listen on for clients: 127.0.0.1, or the host end of the first partitioned daemon's
    /// network namespace (reachable from every namespace and from this one).
    let host: String
    let nodes: Int
    private(set) var processes: [String: Process] = [:]
    let registry = E2EProcesses.shared

    /// Where Debian and others install `nats-server`.
    static let candidates = [
        "/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server",
        "/usr/local/sbin/nats-server",
    ]
    /// The `nats-server` binary, or nil when it is not installed.
    static var binary: String? { candidates.first { FileManager.default.isExecutableFile(atPath: $0) } }

    /// Starts every node and waits (a generous 30 s guard) until JetStream answers on each.
    /// - Throws: ``CLIError`` when `nats-server` is missing, no ports are free or a node does not come up.
    init(nodes: Int, directory: String, host: String) throws(CLIError) {
        self.nodes = nodes
        self.directory = directory
        self.host = host
        var b = 0
        for _ in 0..<50 {
            let candidate = Int.random(in: 20_000..<26_000)
            let ports = (0..<nodes).flatMap { [candidate + $0, candidate + 2000 + $0, candidate + 4000 + $0] }
            if ports.allSatisfy(Self.isFree) {
                b = candidate
                break
            }
        }
        guard b != 0 else { throw CLIError("internal", "no free loopback ports for the NATS cluster", exit: .usage) }
        base = b
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for i in 1...nodes { try writeConfig(i) }
        for i in 1...nodes { try start("n\(i)") }
        for i in 1...nodes { try waitReady("n\(i)", timeoutMs: 30_000) }
    }

    /// `nats://HOST:PORT` of a node (`n1` …).
    func url(_ node: String) -> String { "nats://\(host):\(base + index(node) - 1)" }

    private func index(_ node: String) -> Int { Int(node.dropFirst()) ?? 1 }

    /// A node's configuration: `tools/nats-cluster`'s, with `sync_interval: always` where the server knows it.
    private func writeConfig(_ i: Int) throws(CLIError) {
        let n = "n\(i)"
        var text = """
            server_name: \(n)
            listen: \(host):\(base + i - 1)
            http: 127.0.0.1:\(base + 4000 + i - 1)
            jetstream { store_dir: "\(directory)/\(n)" \(Self.syncInterval) }

            """
        if nodes > 1 {
            let routes = (0..<nodes).map { "nats-route://127.0.0.1:\(base + 2000 + $0)" }.joined(separator: ", ")
            text += """
                cluster {
                  name: lbe2e
                  listen: 127.0.0.1:\(base + 2000 + i - 1)
                  routes: [ \(routes) ]
                  no_advertise: true
                }

                """
        }
        guard FileManager.default.createFile(atPath: "\(directory)/\(n).conf", contents: Data(text.utf8)) else {
            throw CLIError("internal", "cannot write \(directory)/\(n).conf", exit: .usage)
        }
    }

    /// `sync_interval: always` for nats-server 2.10 and later; Debian bookworm's 2.9.10 refuses the option (it
    /// fsyncs every 2 minutes: `tools/nats-cluster` and README "More than one machine" say what that survives).
    static let syncInterval: String = {
        guard let bin = binary else { return "" }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: bin)
        p.arguments = ["--version"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return "" }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        // "nats-server: v2.9.10"
        guard let v = text.split(separator: "v").last else { return "" }
        let parts = v.split(separator: ".").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard parts.count >= 2 else { return "" }
        return parts[0] > 2 || (parts[0] == 2 && parts[1] >= 10) ? "sync_interval: always" : ""
    }()

    /// Starts a node (again: same configuration, same JetStream store).
    func start(_ node: String) throws(CLIError) {
        guard let bin = Self.binary else { throw E2ENATSCluster.missing }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: bin)
        p.arguments = ["-c", "\(directory)/\(node).conf"]
        let log = "\(directory)/\(node).log"
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
        let h = FileHandle(forWritingAtPath: log)
        h?.seekToEndOfFile()
        p.standardOutput = h
        p.standardError = h
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch {
            throw CLIError("internal", "cannot start nats-server \(node): \(error)", exit: .usage)
        }
        registry.add(p.processIdentifier)
        processes[node] = p
    }

    /// Waits until the node's monitoring endpoint shows JetStream ready (a meta leader in a cluster).
    func waitReady(_ node: String, timeoutMs: Int64) throws(CLIError) {
        let port = base + 4000 + index(node) - 1
        let deadline = e2eNowMs() + timeoutMs
        while e2eNowMs() < deadline {
            if let p = processes[node], !p.isRunning { break }
            if nodes > 1 {
                if let body = Self.httpGet(port: port, path: "/jsz"), body.contains("\"leader\"") { return }
            } else if let body = Self.httpGet(port: port, path: "/healthz"), body.contains("ok") {
                return
            }
            usleep(200_000)
        }
        throw CLIError(
            "natsNotReady",
            "NATS node \(node) has no JetStream \(nodes > 1 ? "meta leader" : "") after \(timeoutMs / 1000) s: \(e2eTail("\(directory)/\(node).log"))",
            exit: .usage
        )
    }

    /// `kill -9` of a node.
    func kill9(_ node: String) -> Bool {
        guard let p = processes[node], p.isRunning else { return false }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        registry.remove(p.processIdentifier)
        processes[node] = nil
        return true
    }

    /// SIGSTOP (`true`) or SIGCONT of a node.
    func freeze(_ node: String, _ stop: Bool) -> Bool {
        guard let p = processes[node], p.isRunning else { return false }
        return kill(p.processIdentifier, stop ? SIGSTOP : SIGCONT) == 0
    }

    /// Stops every node (SIGCONT, SIGTERM, SIGKILL after 5 s); idempotent.
    func stop() {
        for p in processes.values where p.isRunning {
            kill(p.processIdentifier, SIGCONT)
            p.terminate()
        }
        let deadline = e2eNowMs() + 5000
        for p in processes.values {
            while p.isRunning && e2eNowMs() < deadline { usleep(10_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            registry.remove(p.processIdentifier)
        }
        processes = [:]
    }

    static let missing = CLIError(
        "natsMissing",
        "the scenario has a federation block but nats-server is not installed",
        recovery: "run tools/setup (or apt-get install -y nats-server)",
        exit: .usage
    )

    static func isFree(_ port: Int) -> Bool { LoopbackPort.isFree(port) }

    /// One HTTP/1.0 GET to 127.0.0.1:PORT (the node's monitoring endpoint); the body, or nil (2 s guard).
    static func httpGet(port: Int, path: String) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return nil }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { return nil }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while out.count < 4_000_000 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        let text = String(decoding: out, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.") && text.contains(" 200 ") else { return nil }
        return text
    }
}

/// A network namespace joined to this one by a veth pair: a second "host" on one machine for a daemon a scenario
/// partitions (as `FederationE2ETests` makes them). Needs root and `ip` (iproute2). ``cut()`` takes the host end of
/// the link down (packets are lost: a partition, not a close), ``heal()`` brings it up.
final class E2ENetworkNamespace {
    let name: String
    let hostInterface: String
    let hostAddress: String
    let namespaceAddress: String
    static let ipBinary = "/usr/sbin/ip"
    /// Whether partitions can run here.
    static var available: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: ipBinary) }

    /// Makes the namespace; `index` picks its /30 among the run's. Its default route goes through its own link, so
    /// the cluster's address (the first namespace's host end) is reachable from it while that link is up.
    init(index: Int) throws(CLIError) {
        let tag = "\(getpid() % 10_000)\(index)\(Int.random(in: 0..<10))"
        name = "lbe2e\(tag)"
        hostInterface = "lbeh\(tag)"
        let peer = "lbep\(tag)"
        let net = Int.random(in: 0..<256)
        let sub = (index % 64) * 4
        hostAddress = "10.218.\(net).\(sub + 1)"
        namespaceAddress = "10.218.\(net).\(sub + 2)"
        do {
            try Self.ip(["netns", "add", name])
            E2EProcesses.shared.add(namespace: name, link: hostInterface)
            try Self.ip(["link", "add", hostInterface, "type", "veth", "peer", "name", peer])
            try Self.ip(["link", "set", peer, "netns", name])
            try Self.ip(["addr", "add", hostAddress + "/30", "dev", hostInterface])
            try Self.ip(["link", "set", hostInterface, "up"])
            try Self.ip(["netns", "exec", name, "ip", "addr", "add", namespaceAddress + "/30", "dev", peer])
            try Self.ip(["netns", "exec", name, "ip", "link", "set", peer, "up"])
            try Self.ip(["netns", "exec", name, "ip", "link", "set", "lo", "up"])
            try Self.ip(["netns", "exec", name, "ip", "route", "add", "default", "via", hostAddress])
        } catch {
            remove()
            throw error
        }
    }

    /// Removes the link and the namespace; idempotent.
    func remove() {
        try? Self.ip(["link", "del", hostInterface])
        try? Self.ip(["netns", "del", name])
        E2EProcesses.shared.remove(namespace: name)
    }

    func cut() throws(CLIError) { try Self.ip(["link", "set", hostInterface, "down"]) }
    func heal() throws(CLIError) { try Self.ip(["link", "set", hostInterface, "up"]) }

    static func ip(_ args: [String]) throws(CLIError) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ipBinary)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch {
            throw CLIError("internal", "cannot run ip \(args.joined(separator: " ")): \(error)", exit: .usage)
        }
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw CLIError("internal", "ip \(args.joined(separator: " ")) failed", exit: .usage)
        }
    }
}

/// One daemon of a run: the only one, or one of the federation's.
final class E2EDaemonSlot {
    /// The federation's name for it (`d1` …); "" without a federation.
    let name: String
    let socket: String
    let dataDirectory: String
    var process: DaemonProcess?
    var generation = 0
    var scheduledExit = false
    /// Its network namespace, when the scenario partitions it.
    var namespace: E2ENetworkNamespace?
    var partitioned = false
    /// Its last `order.list` answer: the orders it runs.
    var orders: [String: E2EBackendObservation] = [:]
    /// `livebusd` arguments past the common ones: `--federate …`.
    var extraArguments: [String] = []

    init(name: String, socket: String, dataDirectory: String) {
        self.name = name
        self.socket = socket
        self.dataDirectory = dataDirectory
    }

    /// How it is named in messages: "the daemon" or "daemon d2".
    var label: String { name.isEmpty ? "the daemon" : "daemon \(name)" }
    var logPath: String {
        "\(SocketPath.directory(of: socket))/livebusd\(name.isEmpty ? "" : "-\(name)")-\(generation).log"
    }
}
