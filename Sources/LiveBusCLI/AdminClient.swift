import Foundation
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire

/// Sends one COMMAND to a running daemon as the admin role and waits for its RESULT.
enum AdminClient {
    /// Runs `command` against the daemon at `socket`.
    /// - Throws: ``CLIError`` `daemonUnreachable` (exit 3) when nothing listens, `timedOut` (exit 4) after `timeout`.
    static func request(socket: String, command: String, args: [String: JSONValue] = [:], timeoutMs: UInt64 = 5000)
        throws(CLIError) -> ResultBody
    {
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .daemonUnreachable) }
        defer { loop.close() }
        var outcome: Result<ResultBody, CLIError> = .failure(
            CLIError(
                "timedOut",
                "the daemon at \(socket) did not answer within \(timeoutMs) ms",
                recovery: "check that livebusd is running and not stuck (`livebus doctor`)",
                exit: .timedOut
            )
        )
        try checkSocketDirectory(socket)
        var connection: Connection?
        let timer = loop.schedule(after: timeoutMs) { loop.stop() }
        connectToDaemon(
            loop: loop,
            socket: socket,
            failed: { e in
                outcome = .failure(e)
                timer.cancel()
            },
            onFrame: { c, f in
                switch f.type {
                case .result:
                    if let r = try? WireJSON.decode(ResultBody.self, from: f.body) { outcome = .success(r) }
                    timer.cancel()
                    c.close()
                case .error:
                    let e = try? WireJSON.decode(ErrorBody.self, from: f.body)
                    outcome = .failure(
                        CLIError(
                            e?.name ?? "error",
                            "daemon refused: \(e?.message ?? "unknown error")",
                            exit: .daemonUnreachable
                        )
                    )
                    timer.cancel()
                    c.close()
                default:
                    break
                }
            }
        ) { c in
            connection = c
            c.onClose = { _ in timer.cancel() }
            let now = SystemServerClock().now().millisecondsSinceEpoch
            do throws(CLIError) {
                let hello = HelloBody(client: "livebus-cli/\(liveBusVersion)", role: .admin, clientTime: now)
                try sendFrame(c, .hello, sequence: 1, body: try frameBody(hello))
                try sendFrame(c, .command, sequence: 1, body: try frameBody(CommandBody(command: command, args: args)))
            } catch {
                // A command too large for a frame (a huge push payload) is said at once, not waited for.
                outcome = .failure(error)
                timer.cancel()
                c.close()
            }
        }
        loop.run()
        connection?.close()
        return try outcome.get()
    }

    /// Every order, fetched in pages of 100 (`order.list {limit, offset}`) so any number fits in frames.
    /// - Throws: ``CLIError`` when the daemon cannot be reached or answers with an error.
    static func allOrders(socket: String, timeoutMs: UInt64 = 5000) throws(CLIError) -> [JSONValue] {
        var list: [JSONValue] = []
        while true {
            let r = try request(
                socket: socket,
                command: "order.list",
                args: ["limit": .number(100), "offset": .number(Double(list.count))],
                timeoutMs: timeoutMs
            )
            guard r.ok, case .array(let page)? = r.data?["orders"] else {
                throw CLIError(
                    r.error?.code ?? "invalidAnswer",
                    r.error?.message ?? "the daemon's order.list answer has no orders",
                    exit: .daemonUnreachable
                )
            }
            list += page
            if page.isEmpty || Double(list.count) >= (r.data?["total"]?.doubleValue ?? 0) { return list }
        }
    }
}

extension AdminClient {
    /// Every topic the daemon's store holds (`topic.list {limit, offset}`, pages of 200): the simulator's orders and
    /// the topics published on.
    /// - Throws: ``CLIError`` when the daemon cannot be reached or answers with an error.
    static func allTopics(socket: String, timeoutMs: UInt64 = 5000) throws(CLIError) -> [String] {
        var list: [String] = []
        while true {
            let r = try request(
                socket: socket,
                command: "topic.list",
                args: ["limit": .number(200), "offset": .number(Double(list.count))],
                timeoutMs: timeoutMs
            )
            guard r.ok, case .array(let page)? = r.data?["topics"] else {
                throw CLIError(
                    r.error?.code ?? "invalidAnswer",
                    r.error?.message ?? "the daemon's topic.list answer has no topics",
                    exit: .daemonUnreachable
                )
            }
            list += page.compactMap(\.stringValue)
            if page.isEmpty || Double(list.count) >= (r.data?["total"]?.doubleValue ?? 0) { return list }
        }
    }
}

/// Connects to the daemon at `socket` on `loop`, the one way `livebus` commands connect: before anything is sent the
/// process serving the socket must be this user's (SO_PEERCRED); then every frame the daemon sends goes to `onFrame`,
/// in order, and `opened` runs once to send the HELLO (reading has started).
/// - Parameters:
///   - loop: The loop the connection runs on.
///   - socket: The daemon's socket path.
///   - failed: Runs once, with ``CLIError/unreachable(_:_:)`` or ``CLIError/impostor(_:)``, when no connection is
///     made.
///   - onFrame: Each frame, with the connection it came on.
///   - opened: The connection, checked.
func connectToDaemon(
    loop: EventLoop,
    socket: String,
    failed: @escaping (CLIError) -> Void,
    onFrame: @escaping (Connection, Frame) -> Void,
    opened: @escaping (Connection) -> Void
) {
    Connection.connect(loop: loop, path: socket) { r in
        switch r {
        case .failure(let e):
            failed(.unreachable(socket, e))
        case .success(let c):
            if let e = c.checkPeer(path: socket) {
                c.close()
                failed(.impostor(e))
                return
            }
            var decoder = FrameDecoder()
            c.onRead = { bytes in
                decoder.append(bytes)
                while let f = try? decoder.next() { onFrame(c, f) }
            }
            try? c.startReading()
            opened(c)
        }
    }
}

/// Refuses a default socket whose private directory (`/tmp/livebus-<uid>`) exists but is not the user's own with
/// mode 0700 (someone else may have created it to pose as the daemon). A missing directory passes: the connect
/// then says that no daemon runs.
/// - Throws: ``CLIError/impostor(_:)`` (exit 3) naming the directory and what to do.
func checkSocketDirectory(_ socket: String) throws(CLIError) {
    if let e = SocketPath.preparePrivateDirectory(for: socket, create: false), e.name != "ENOENT" {
        throw .impostor(e)
    }
}

/// The one way `livebus` commands send a frame: encoded first, then queued on `c`, so no frame is dropped without a
/// word (a `try?` inside `Connection.write` would leave the command waiting for an answer to a frame never sent).
/// - Parameters:
///   - c: The connection.
///   - type: The frame type.
///   - sequence: The request id (PUBLISH, COMMAND) or 0.
///   - topic: The topic (PUBLISH) or empty.
///   - body: The body bytes.
/// - Throws: ``CLIError`` `cannotEncode` (exit 2) with the codec's reason: a topic over
///   `Frame.maximumTopicLength` bytes, a frame over `Frame.maximumSize` (Protocol/PROTOCOL.md §2).
func sendFrame(_ c: Connection, _ type: FrameType, sequence: UInt64 = 0, topic: String = "", body: [UInt8] = [])
    throws(CLIError)
{
    var bytes: [UInt8] = []
    do {
        try Frame.encode(type: type, sequence: sequence, topic: topic, body: body, into: &bytes)
    } catch {
        throw CLIError(
            "cannotEncode",
            "cannot send the \(type) frame (\(body.count)-byte body): \(error.message)",
            recovery:
                "a frame holds at most \(Frame.maximumSize) bytes and a topic at most \(Frame.maximumTopicLength)",
            exit: .usage
        )
    }
    c.write(bytes)
}

/// The JSON bytes of a frame body.
/// - Throws: ``CLIError`` `cannotEncode` (exit 2) with the encoder's reason.
func frameBody(_ value: some Encodable) throws(CLIError) -> [UInt8] {
    do { return try WireJSON.encode(value) } catch {
        throw CLIError("cannotEncode", "cannot encode \(type(of: value)): \(error.message)", exit: .usage)
    }
}
