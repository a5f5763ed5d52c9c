import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusCore
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire

/// A real daemon on a temporary Unix socket, in this process, sharing one loop with the test's clients.
/// Polite to the machine: short socket path, no signal handlers, bounded waits (STYLE.md habit 10).
final class TestBus {
    let loop: EventLoop
    let dir: String
    let socket: String
    let daemon: Daemon
    let logLines = LogCapture()

    init(
        scenario: String? = "demo-120s",
        timeScale: Double = 40,
        seed: UInt64 = 1,
        configure: (inout DaemonOptions) -> Void = { _ in }
    ) throws {
        var template = Array("/tmp/lbe-XXXXXX".utf8CString)
        dir = String(cString: mkdtemp(&template)!)
        socket = dir + "/bus.sock"
        loop = try EventLoop()
        var options = DaemonOptions(socketPath: socket, scenario: scenario, timeScale: timeScale, seed: seed)
        configure(&options)
        let capture = logLines
        daemon = Daemon(
            options: options,
            loop: loop,
            logger: Logger(minimumLevel: .debug) { level, message, meta in capture.append("\(level) \(message) \(meta)")
            }
        )
        try daemon.start(handleSignals: false)
    }

    /// Runs the loop until `done()` holds or `timeoutMs` passes; returns whether `done()` held.
    @discardableResult
    func run(timeoutMs: UInt64, until done: @escaping () -> Bool) -> Bool {
        var ok = false
        let check = loop.schedule(after: 5, repeat: 5) { [loop] in
            if done() {
                ok = true
                loop.stop()
            }
        }
        let timeout = loop.schedule(after: timeoutMs) { [loop] in loop.stop() }
        loop.run()
        check.cancel()
        timeout.cancel()
        return ok
    }

    func session(_ name: String, configure: (inout ClientOptions) -> Void = { _ in }) -> ClientSession {
        var o = ClientOptions(socketPath: socket, name: name)
        configure(&o)
        return ClientSession(loop: loop, options: o, trueClock: SystemServerClock())
    }

    func shutdown() {
        daemon.shutdown(reason: "test over")
        loop.run()
        loop.close()
        rmdir(dir)
    }
}

/// Captured log lines (loop thread only).
final class LogCapture: @unchecked Sendable {  // @unchecked: written and read only on the test's loop thread.
    private(set) var lines: [String] = []
    func append(_ s: String) { lines.append(s) }
}

/// A raw connection that speaks bytes, for malformed-input tests.
final class RawPeer {
    let connection: Connection
    var decoder = FrameDecoder()
    var frames: [Frame] = []
    /// Every byte received, for frames a v2 decoder does not read (the v1 refusal).
    var received: [UInt8] = []
    var closed = false

    init(_ c: Connection) {
        connection = c
        // Weak, not unowned: a test may drop its peer while the connection is still open, and the daemon's close
        // at shutdown must not reach a freed peer (a crash of the whole test process, CI of 2026-12-03).
        c.onRead = { [weak self] bytes in
            guard let self else { return }
            self.received.append(contentsOf: bytes)
            self.decoder.append(bytes)
            while let f = try? self.decoder.next() { self.frames.append(f) }
        }
        c.onClose = { [weak self] _ in self?.closed = true }
        try? c.startReading()
    }

    static func connect(_ bus: TestBus, then: @escaping (RawPeer) -> Void) {
        Connection.connect(loop: bus.loop, path: bus.socket) { r in
            if case .success(let c) = r { then(RawPeer(c)) }
        }
    }

    func send(_ f: Frame) { connection.write(try! f.encoded()) }

    var errors: [ErrorBody] {
        frames.filter { $0.type == .error }.compactMap { try? WireJSON.decode(ErrorBody.self, from: $0.body) }
    }
}

func hello(
    role: ClientRole = .session,
    name: String? = nil,
    versions: [Int] = Frame.supportedVersions,
    device: String? = "iphone-16-pro"
)
    -> Frame
{
    let body = HelloBody(
        versions: versions,
        client: "raw-test",
        role: role,
        name: name,
        device: device,
        posture: PostureBody(foldState: "flat", orientation: "portrait"),
        appState: "foreground",
        clientTime: SystemServerClock().now().millisecondsSinceEpoch
    )
    return Frame(type: .hello, body: try! WireJSON.encode(body))
}

/// A new private directory under /tmp named `<prefix>-XXXXXX`; the caller removes it.
func temporaryDirectory(_ prefix: String) -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    return String(cString: mkdtemp(&template)!)
}

/// Phones on one loop attached to a daemon child, each collecting the updates it applied and the errors it saw.
final class Phones {
    let names: [String]
    let sessions: [ClientSession]
    private(set) var applied: [String: [AppliedUpdate]] = [:]
    private(set) var errors: [String] = []

    init(_ names: [String], socket: String, loop: EventLoop) {
        self.names = names
        sessions = names.map { n in
            ClientSession(
                loop: loop,
                options: ClientOptions(socketPath: socket, name: n),
                trueClock: SystemServerClock()
            )
        }
        for s in sessions {
            s.onUpdate = { [unowned self] u in if u.type == "update" { self.applied[u.session, default: []].append(u) }
            }
            s.onError = { [unowned self] in self.errors.append($0) }
            s.start()
        }
    }

    /// Whether every phone's last applied update shows `delivered`.
    var allDelivered: Bool { names.allSatisfy { applied[$0]?.last?.status == "delivered" } }
}

extension EventStore {
    /// Commits `items` (and the simulator state) as one batch and returns what was stored, for tests of stores that
    /// complete within the call (memory, SQLite).
    /// - Throws: The store's ``StoreError``.
    @discardableResult
    func commit(_ items: [StoreItem], simulatorState: Data?) throws -> [StoredEvent] {
        guard let r = commitInTurn(StoreBatch(events: items, simulatorState: simulatorState)) else {
            throw StoreError("the store did not complete within the call")
        }
        return try r.get()
    }

    /// Appends one event (one batch).
    /// - Throws: The store's ``StoreError``.
    @discardableResult
    func append(topic: String, body: EventBody) throws -> StoredEvent {
        try commit([(topic, body)], simulatorState: nil)[0]
    }
}
