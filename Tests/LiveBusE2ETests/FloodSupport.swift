import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusLoop
import LiveBusWire

@testable import LiveBusDaemon

/// A blocking Unix-socket client with send and receive timeouts, for abusers run on their own threads (a flood
/// writes as fast as the kernel lets it, which a loop-driven client would not).
// @unchecked: a peer is used by one thread, or by two of which one only reads and the other only writes.
final class BlockingPeer: @unchecked Sendable {
    let fd: Int32

    init?(path: String, timeoutMs: Int = 200) {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            Glibc.close(fd)
            return nil
        }
        var tv = timeval(tv_sec: timeoutMs / 1000, tv_usec: Int((timeoutMs % 1000) * 1000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Bytes written; 0 when the send timed out (the daemon stopped reading), -1 when the connection is gone.
    func send(_ bytes: [UInt8]) -> Int {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n >= 0 { return n }
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1
    }

    /// Writes all of `bytes` unless the connection is gone.
    @discardableResult
    func sendAll(_ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = Array(bytes[off...]).withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                off += n
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Bytes read: empty on a timeout, `nil` at the end of the stream or an error.
    func receive(max: Int = 65536) -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: max)
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
        if n > 0 { return Array(buf[0..<n]) }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return [] }
        return nil
    }

    /// Reads until the end of the stream (or `timeoutMs`) and returns the ERROR frames' bodies among what came.
    func drainErrors(timeoutMs: Int = 2000) -> [ErrorBody] {
        var decoder = FrameDecoder()
        var errors: [ErrorBody] = []
        let deadline = Date().addingTimeInterval(Double(timeoutMs) / 1000)
        while Date() < deadline, let bytes = receive() {
            decoder.append(bytes)
            while let f = try? decoder.next() {
                if f.type == .error, let e = try? WireJSON.decode(ErrorBody.self, from: f.body) { errors.append(e) }
            }
        }
        return errors
    }

    /// The ERROR frames already received, without waiting; `nil` when nothing at all is there.
    func pendingErrors() -> [ErrorBody]? {
        var decoder = FrameDecoder()
        var errors: [ErrorBody] = []
        var any = false
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { break }
            any = true
            decoder.append(Array(buf[0..<n]))
            while let f = try? decoder.next() {
                if f.type == .error, let e = try? WireJSON.decode(ErrorBody.self, from: f.body) { errors.append(e) }
            }
        }
        return any ? errors : nil
    }

    func close() { Glibc.close(fd) }
}

/// A flag and counters shared between an abuser thread and the test.
final class Shared<T>: @unchecked Sendable {  // @unchecked: guarded by the lock.
    private let lock = NSLock()
    private var v: T
    init(_ v: T) { self.v = v }
    var value: T {
        lock.lock()
        defer { lock.unlock() }
        return v
    }
    func update(_ f: (inout T) -> Void) {
        lock.lock()
        f(&v)
        lock.unlock()
    }
}

/// Wall-clock milliseconds (the phones' delays are measured on it: one host, one clock).
func wallMs() -> Int64 { SystemServerClock().now().millisecondsSinceEpoch }

/// The daemon's resident memory in KiB (`VmRSS` of /proc/PID/status), or `nil`.
func residentKiB(pid: Int32) -> Int? {
    guard let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in s.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
    return nil
}

/// Well-behaved traffic on the test's loop: a publisher sending one update every 20 ms to `orders/G0…G3` (each
/// carrying its send instant as `timestamp`) and phones subscribed to `orders/>`, each recording what it applied
/// and the publish-to-apply delay. The figures a flood test compares: before the flood and during it.
final class GoodTraffic {
    let loop: EventLoop
    let phones: [ClientSession]
    let names: [String]
    private(set) var publisher: RawPeer?
    private(set) var published = 0
    private(set) var acked = 0
    private var timer: LoopTimer?
    /// Phone name → "topic#seq" applied.
    private(set) var applied: [String: Set<String>] = [:]
    /// (apply instant, delay) over all phones, wall-clock ms.
    private(set) var delays: [(at: Int64, delay: Int64)] = []
    private(set) var errors: [String] = []

    init(loop: EventLoop, socket: String, phones n: Int) {
        self.loop = loop
        names = (0..<n).map { "good\($0)" }
        phones = names.map { name in
            ClientSession(
                loop: loop,
                options: ClientOptions(socketPath: socket, name: name),
                trueClock: SystemServerClock()
            )
        }
        for p in phones {
            p.onUpdate = { [unowned self] u in
                guard u.topic.hasPrefix("orders/G"), u.delivery == nil else { return }
                self.applied[u.session, default: []].insert("\(u.topic)#\(u.seq)")
                if let t = u.eventTime { self.delays.append((u.clientTime, u.clientTime - t)) }
            }
            p.onError = { [unowned self] in self.errors.append($0) }
            p.start()
        }
        Connection.connect(loop: loop, path: socket) { [unowned self] r in
            guard case .success(let c) = r else { return }
            let p = RawPeer(c)
            self.publisher = p
            p.send(hello(role: .publisher, name: "good-publisher", device: nil))
        }
    }

    /// Starts publishing (after the phones subscribed).
    func startPublishing() {
        var body = GoldenVectorsForTests.event
        timer = loop.schedule(after: 20, repeat: 20) { [unowned self] in
            guard let pub = self.publisher else { return }
            body.timestamp = wallMs()
            self.published += 1
            pub.send(
                Frame(
                    type: .publish,
                    sequence: UInt64(self.published),
                    topic: "orders/G\(self.published % 4)",
                    body: try! WireJSON.encode(body)
                )
            )
        }
    }

    func stopPublishing() {
        timer?.cancel()
        timer = nil
    }

    /// Acknowledged publishes (the daemon stored them).
    var acknowledged: Int { publisher?.frames.filter { $0.type == .ack }.count ?? 0 }

    /// Whether every phone applied every acknowledged publish.
    var everyPhoneHasAll: Bool {
        let n = acknowledged
        return n > 0 && names.allSatisfy { (applied[$0]?.count ?? 0) >= n }
    }

    /// Count, median and p99 of the delays applied in `[from, to)` (wall ms).
    func stats(from: Int64, to: Int64) -> (count: Int, p50: Int64, p99: Int64, max: Int64) {
        let d = delays.filter { $0.at >= from && $0.at < to }.map(\.delay).sorted()
        guard !d.isEmpty else { return (0, -1, -1, -1) }
        return (d.count, d[d.count / 2], d[min(d.count - 1, d.count * 99 / 100)], d.last!)
    }

    /// A line of figures for the test log.
    func report(_ label: String, from: Int64, to: Int64) -> String {
        let s = stats(from: from, to: to)
        return
            "\(label): \(s.count) updates on \(phones.count) phones, p50 \(s.p50) ms, p99 \(s.p99) ms, max \(s.max) ms"
    }

    func close() {
        stopPublishing()
        for p in phones { p.close() }
        publisher?.connection.close()
    }
}

/// A daemon child for a flood test: its socket, log and process id.
final class FloodDaemon {
    let dir: String
    let socket: String
    let logPath: String
    let child: DaemonChild

    /// Starts `livebusd` with `args`; with `descriptorLimit`, under `ulimit -n` of that many descriptors.
    init(_ prefix: String, _ args: [String], descriptorLimit: Int? = nil) throws {
        dir = temporaryDirectory(prefix)
        socket = dir + "/bus.sock"
        logPath = dir + "/daemon.log"
        let all = ["--socket", socket, "--memory", "--log-level", "notice"] + args
        if let n = descriptorLimit {
            child = try DaemonChild(
                ["-c", "ulimit -n \(n) && exec \"$0\" \"$@\"", DaemonChild.binary] + all,
                log: logPath,
                shell: true
            )
        } else {
            child = try DaemonChild(all, log: logPath)
        }
        var tries = 0
        while SocketProbe.probe(path: socket) != .live && tries < 2000 {  // up to 20 s on a loaded machine
            usleep(10_000)
            tries += 1
        }
    }

    var pid: Int32 { child.process.processIdentifier }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Log lines containing every one of `words`.
    func lines(_ words: String...) -> [Substring] {
        log.split(separator: "\n").filter { l in words.allSatisfy { l.contains($0) } }
    }

    func stop() {
        child.terminate()
        try? FileManager.default.removeItem(atPath: dir)
    }
}
