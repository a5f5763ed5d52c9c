import Foundation
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire

/// The fuzz targets: what one input does in each mode. Deterministic: a fixed server clock, a private socket.
enum FuzzMode: String, CaseIterable {
    /// The frame decoder over arbitrary bytes, and every body decoder over each decoded frame's body.
    case frames
    /// A real ``Daemon`` on its own loop: a HELLO (role from the first byte) then the input's bytes as frames,
    /// with a subscribed phone attached that receives whatever the input publishes.
    case session
}

/// The daemon's clock in the fuzzer: always the same instant, so every run of an input does the same.
struct FixedServerClock: ServerClock {
    static let instant = ServerInstant(millisecondsSinceEpoch: 1_800_000_000_000)
    func now() -> ServerInstant { Self.instant }
}

/// `bytes` with the CRC-32 of every whole frame it starts with rewritten to match, so that mutated bodies get past
/// the checksum to the JSON decoders (a mismatch is found at once by the decoder; only the body is interesting).
func withChecksumsFixed(_ bytes: [UInt8]) -> [UInt8] {
    var b = bytes
    var i = 0
    while i + Frame.headerSize <= b.count {
        let length = b[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) }
        let total = length + 4
        guard total >= Frame.headerSize, i + total <= b.count else { break }
        var crc = CRC32()
        crc.update(b[(i + 4)..<(i + 20)])
        crc.update(b[(i + 24)..<(i + total)])
        for k in 0..<4 { b[i + 20 + k] = UInt8(truncatingIfNeeded: crc.value >> (24 - 8 * k)) }
        i += total
    }
    return b
}

enum FramesTarget {
    /// Decodes `data` as a stream of frames, as it is and with its checksums fixed; each frame's body through every
    /// body decoder; a decoded frame must encode back to a frame that decodes equal.
    static func run(_ data: UnsafeRawBufferPointer) {
        decode(Array(data))
        decode(withChecksumsFixed(Array(data)))
    }

    static func decode(_ data: [UInt8]) {
        var decoder = FrameDecoder()
        decoder.append(data)
        while true {
            let frame: Frame?
            do { frame = try decoder.next() } catch { return }
            guard let frame else { return }
            bodies(frame.body)
            guard let again = try? frame.encoded() else { continue }
            var d = FrameDecoder()
            d.append(again)
            let back = try? d.next()
            precondition(back == frame, "a decoded frame does not survive encoding: \(frame)")
        }
    }

    static func bodies(_ b: [UInt8]) {
        _ = try? WireJSON.decode(HelloBody.self, from: b)
        _ = try? WireJSON.decode(WelcomeBody.self, from: b)
        _ = try? WireJSON.decode(SubscribeBody.self, from: b)
        _ = try? WireJSON.decode(PingBody.self, from: b)
        _ = try? WireJSON.decode(PongBody.self, from: b)
        _ = try? WireJSON.decode(PostureChangeBody.self, from: b)
        _ = try? WireJSON.decode(ResendBody.self, from: b)
        _ = try? WireJSON.decode(CommandBody.self, from: b)
        _ = try? WireJSON.decode(ResultBody.self, from: b)
        _ = try? WireJSON.decode(ErrorBody.self, from: b)
        _ = try? WireJSON.decode(UpToDateBody.self, from: b)
        _ = try? WireJSON.decode(EventBody.self, from: b)
        if let e = try? EventJSON.decode(b) {
            // What the daemon does with a published body: encode it once, build the event's template, write a
            // delivery with a trailer; the delivery must decode back to the same body and trailer.
            guard let bytes = try? EventJSON.encode(e), let t = try? EventTemplate(topic: "t", sequence: 1, body: bytes)
            else { return }
            let trailer = EventTrailer(
                timestamp: e.timestamp,
                etaTarget: e.contentState.etaTarget,
                lastConfirmed: e.contentState.lastConfirmed,
                staleDate: e.staleDate,
                dismissalDate: e.dismissalDate,
                uncertaintyMs: 7
            )
            var out: [UInt8] = []
            guard (try? Frame.appendEvent(t, flags: [.terminal], trailer: trailer, into: &out)) != nil else { return }
            var d = FrameDecoder()
            d.append(out)
            let back = try? d.next()
            precondition(back?.trailer == trailer && back?.body == bytes, "a delivery does not decode back: \(e)")
            precondition((try? EventJSON.decode(bytes)) == e, "an encoded body does not decode back: \(e)")
        }
    }
}

/// A daemon with a phone subscribed to every topic, reused across inputs and rebuilt every
/// ``SessionTarget/rebuildEvery`` inputs so that state one input leaves (a `down` toxic, orders) cannot grow.
final class SessionTarget {
    static let rebuildEvery = 64
    let dir: String
    let socket: String
    var loop: EventLoop
    var daemon: Daemon
    var phone: Connection?
    var runs = 0

    init() {
        var template = Array("/tmp/lbfuzz-XXXXXX".utf8CString)
        dir = String(cString: mkdtemp(&template)!)
        socket = dir + "/bus.sock"
        (loop, daemon) = Self.start(socket: socket)
        attachPhone()
        // libFuzzer ends the process with exit(): remove the private directory then.
        sessionDirectory = dir
        atexit {
            guard let d = sessionDirectory else { return }
            unlink(d + "/bus.sock")
            rmdir(d)
        }
    }

    static func start(socket: String) -> (EventLoop, Daemon) {
        let loop = try! EventLoop()
        let d = Daemon(
            options: DaemonOptions(socketPath: socket, scenario: nil, seed: 1),
            loop: loop,
            logger: .none,
            clock: FixedServerClock()
        )
        do { try d.start(handleSignals: false) } catch { fatalError("the fuzzer's daemon does not start: \(error)") }
        return (loop, d)
    }

    func rebuild() {
        phone?.close()
        daemon.shutdown(reason: "fuzzer rebuild")
        loop.run()
        _ = loop.close()
        phone = nil
        (loop, daemon) = Self.start(socket: socket)
        attachPhone()
    }

    /// A phone whose clock is an hour ahead (a positive offset), subscribed to `>`, that reads and drops.
    func attachPhone() {
        var done = false
        Connection.connect(loop: loop, path: socket) { [self] r in
            guard case .success(let c) = r else { fatalError("the fuzzer's phone cannot connect") }
            c.onRead = { _ in }
            try? c.startReading()
            let hello = HelloBody(
                client: "fuzz-phone",
                role: .session,
                name: "phone",
                device: "iphone-16-pro",
                posture: PostureBody(foldState: "flat", orientation: "portrait"),
                appState: "foreground",
                clientTime: FixedServerClock.instant.millisecondsSinceEpoch + 3_600_000
            )
            c.write(try! Frame(type: .hello, body: WireJSON.encode(hello)).encoded())
            c.write(try! Frame(type: .subscribe, body: WireJSON.encode(SubscribeBody(patterns: [">"]))).encoded())
            phone = c
            done = true
        }
        for _ in 0..<1000 where !done { _ = loop.runOnce(blocking: false) }
        for _ in 0..<20 { _ = loop.runOnce(blocking: false) }
    }

    /// The HELLO the first byte of an input chooses: its role (bits 0–1), and whether one is sent at all (bit 7
    /// clear).
    static func hello(_ selector: UInt8) -> [UInt8] {
        let roles: [ClientRole] = [.session, .publisher, .admin, .observer]
        let role = roles[Int(selector & 3)]
        let body = HelloBody(
            client: "fuzz",
            role: role,
            device: role == .session ? "iphone-16-pro" : nil,
            posture: role == .session ? PostureBody(foldState: "flat", orientation: "portrait") : nil,
            clientTime: FixedServerClock.instant.millisecondsSinceEpoch - 1500
        )
        return try! Frame(type: .hello, body: WireJSON.encode(body)).encoded()
    }

    /// One input: connect, send HELLO and the rest of the bytes, close the writing side, and run the loop until the
    /// daemon closes the connection (it does at end of input or at the first protocol error).
    func run(_ data: UnsafeRawBufferPointer) {
        runs += 1
        if runs % Self.rebuildEvery == 0 || phone?.isClosed != false { rebuild() }
        guard let selector = data.first else { return }
        var bytes: [UInt8] = selector & 0x80 == 0 ? Self.hello(selector) : []
        // Bit 6 keeps the input's checksums as they are; otherwise they are fixed so that bodies reach the daemon.
        bytes += selector & 0x40 == 0 ? withChecksumsFixed(Array(data.dropFirst())) : Array(data.dropFirst())
        let fd = socket.withCString { path -> Int32 in
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &addr.sun_path) { p in
                _ = strncpy(p.baseAddress!.assumingMemoryBound(to: CChar.self), path, p.count - 1)
            }
            let ok = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            precondition(ok == 0, "the fuzzer cannot connect to its daemon: errno \(errno)")
            return fd
        }
        defer { Glibc.close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var written = 0
        var sink = [UInt8](repeating: 0, count: 65536)
        var closed = false
        var turns = 0
        var replies = FrameDecoder()
        while !closed && turns < 20_000 {
            turns += 1
            if written < bytes.count {
                let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n > 0 { written += n }
                if written == bytes.count { shutdown(fd, Int32(SHUT_WR)) }
            } else if bytes.isEmpty {
                shutdown(fd, Int32(SHUT_WR))
            }
            _ = loop.runOnce(blocking: false)
            while true {
                let n = read(fd, &sink, sink.count)
                if n == 0 { closed = true }
                if n <= 0 { break }
                if Self.verbose { replies.append(Array(sink[0..<n])) }
            }
        }
        // Let the daemon finish what the input started (fan-out to the phone, closing the session).
        for _ in 0..<10 { _ = loop.runOnce(blocking: false) }
        while Self.verbose, let f = try? replies.next() {
            print("  \(f.type) seq \(f.sequence) \(f.topic) \(String(decoding: f.body.prefix(300), as: UTF8.self))")
        }
    }

    /// `LIVEBUS_FUZZ_VERBOSE=1`: print the daemon's answers to each input (when replaying one by hand).
    static let verbose = ProcessInfo.processInfo.environment["LIVEBUS_FUZZ_VERBOSE"] == "1"
}

/// The mode named by `LIVEBUS_FUZZ_MODE` (default `frames`).
func fuzzModeFromEnvironment() -> FuzzMode {
    let name = ProcessInfo.processInfo.environment["LIVEBUS_FUZZ_MODE"] ?? "frames"
    guard let m = FuzzMode(rawValue: name) else {
        fatalError("LIVEBUS_FUZZ_MODE=\(name) is not one of \(FuzzMode.allCases.map(\.rawValue))")
    }
    return m
}

nonisolated(unsafe) var sessionTarget: SessionTarget?
nonisolated(unsafe) var sessionDirectory: String?
nonisolated(unsafe) var activeMode: FuzzMode?

/// Runs one input in the environment's mode.
func fuzzOne(_ data: UnsafeRawBufferPointer) {
    let mode = activeMode ?? fuzzModeFromEnvironment()
    activeMode = mode
    switch mode {
    case .frames: FramesTarget.run(data)
    case .session:
        if sessionTarget == nil {
            signal(SIGPIPE, SIG_IGN)
            sessionTarget = SessionTarget()
        }
        sessionTarget!.run(data)
    }
}
