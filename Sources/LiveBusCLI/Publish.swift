import Foundation
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire

/// `livebus publish TOPIC [FILE|-]`: what a backend does, from the shell. Connects with the `publisher` role
/// (Protocol/PROTOCOL.md §4.1), sends each event body of FILE (or standard input) as a PUBLISH on TOPIC and waits
/// for its ACK (the event is stored, §5.7) or its ERROR before sending the next, so every verdict belongs to one
/// event.
enum PublishCommand {
    /// One event body of the input, with the line it starts on (1-based).
    struct Item {
        var line: Int
        var body: [UInt8]
    }

    /// The event bodies of `bytes`: one JSON object (which may span lines), or one object per line (NDJSON; blank
    /// lines skipped).
    /// - Throws: ``CLIError`` `invalidBody` (exit 2) naming the line of the first line that is not a JSON object.
    static func items(_ bytes: [UInt8], source: String) throws(CLIError) -> [Item] {
        if case .object? = try? WireJSON.decode(JSONValue.self, from: bytes) {
            return [Item(line: 1, body: bytes)]
        }
        var out: [Item] = []
        for (i, raw) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let line = Array(raw)
            guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
            guard case .object? = try? WireJSON.decode(JSONValue.self, from: line) else {
                throw CLIError(
                    "invalidBody",
                    "\(source):\(i + 1): not a JSON object; give one event body, or one per line (NDJSON)",
                    recovery:
                        #"e.g. {"event":"update","timestamp":1767225600000,"contentState":{…},"relevanceScore":50,"priority":10} (PROTOCOL.md §5.1)"#,
                    exit: .usage
                )
            }
            out.append(Item(line: i + 1, body: line))
        }
        guard !out.isEmpty else {
            throw CLIError(
                "fileUnreadable",
                "\(source) holds no event body",
                recovery: "give a file with one event body (PROTOCOL.md §5.1), or one per line",
                exit: .usage
            )
        }
        return out
    }

    static func run(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "publish", options: ["socket", "timeout"], flags: ["json"])
        guard (1...2).contains(a.positionals.count) else {
            throw .usage(
                "livebus publish needs TOPIC and FILE (or - for standard input, the default)",
                recovery: "livebus publish orders/A1001 update.json"
            )
        }
        let topic = a.positionals[0]
        let path = a.positionals.count == 2 ? a.positionals[1] : "-"
        let timeoutMs = UInt64(
            try a.value("timeout").map { v throws(CLIError) in
                try parseDuration(v, flag: "timeout", allowed: 1...3_600_000)
            } ?? 5000
        )
        let bytes = Array(try readInputFile(path))
        let source = path == "-" ? "standard input" : path
        guard !bytes.isEmpty else {
            throw CLIError(
                "fileUnreadable",
                "\(source) is empty",
                recovery: "give a file with one event body (PROTOCOL.md §5.1), or one per line",
                exit: .usage
            )
        }
        let events = try items(bytes, source: source)
        let socket = a.value("socket") ?? defaultSocketPath()
        let verdicts = try publish(events, topic: topic, socket: socket, timeoutMs: timeoutMs)
        var results: [JSONValue] = []
        var refused = 0
        for (item, v) in zip(events, verdicts) {
            switch v {
            case .stored(let sequence):
                results.append(.object(["line": .number(Double(item.line)), "sequence": .number(Double(sequence))]))
                if !out.json { print("\(topic) #\(sequence) stored (\(source):\(item.line))") }
            case .refused(let name, let message):
                refused += 1
                results.append(
                    .object([
                        "line": .number(Double(item.line)), "error": .string(name), "message": .string(message),
                    ])
                )
                if !out.json { StandardStream.err("error: \(source):\(item.line): refused: \(name): \(message)\n") }
            }
        }
        let notSent = events.count - verdicts.count
        if notSent > 0, !out.json {
            StandardStream.err(
                "error: \(notSent) event(s) not sent: the daemon closed the connection after a refusal\n"
            )
        }
        if out.json {
            out.printJSON(
                JSONValue.object([
                    "ok": .bool(refused + notSent == 0),
                    "data": .object([
                        "topic": .string(topic), "events": .array(results), "notSent": .number(Double(notSent)),
                    ]),
                ])
            )
        }
        return refused + notSent == 0 ? 0 : ExitCode.verdictFailed.rawValue
    }

    /// What the daemon said of one PUBLISH.
    enum Verdict {
        /// ACK: stored with this topic sequence.
        case stored(UInt64)
        /// ERROR: its name and message.
        case refused(String, String)
    }

    /// Publishes `events` one after another on a publisher connection, each waiting for its verdict.
    /// - Returns: The verdicts in order; fewer than `events` when the daemon closed after a fatal refusal.
    /// - Throws: ``CLIError`` `daemonUnreachable` (exit 3), `timedOut` (exit 4) when a verdict takes longer than
    ///   `timeoutMs`, or the daemon's refusal of the HELLO (exit 3).
    static func publish(_ events: [Item], topic: String, socket: String, timeoutMs: UInt64) throws(CLIError)
        -> [Verdict]
    {
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .daemonUnreachable) }
        defer { loop.close() }
        try checkSocketDirectory(socket)
        var verdicts: [Verdict] = []
        var failure: CLIError?
        var timer: LoopTimer?
        var connection: Connection?
        var welcomed = false
        func armTimer() {
            timer?.cancel()
            timer = loop.schedule(after: timeoutMs) {
                failure = CLIError(
                    "timedOut",
                    "the daemon at \(socket) did not answer within \(timeoutMs) ms",
                    recovery: "check that livebusd is running and not stuck (`livebus doctor`), or raise --timeout",
                    exit: .timedOut
                )
                loop.stop()
            }
        }
        func send(_ c: Connection, _ type: FrameType, id: UInt64, topic: String, body: [UInt8]) {
            c.write { buf in try? Frame.encode(type: type, sequence: id, topic: topic, body: body, into: &buf) }
        }
        func next(_ c: Connection) {
            guard verdicts.count < events.count else {
                timer?.cancel()
                send(c, .bye, id: 0, topic: "", body: Array(#"{"reason":"published"}"#.utf8))
                c.close()
                return
            }
            armTimer()
            send(c, .publish, id: UInt64(verdicts.count + 1), topic: topic, body: events[verdicts.count].body)
        }
        armTimer()
        connectToDaemon(
            loop: loop,
            socket: socket,
            failed: { e in
                failure = e
                timer?.cancel()
            },
            onFrame: { c, f in
                switch f.type {
                case .welcome:
                    welcomed = true
                    next(c)
                case .ack:
                    let seq = (try? WireJSON.decode(AckBody.self, from: f.body))?.sequence ?? 0
                    verdicts.append(.stored(seq))
                    next(c)
                case .error:
                    let e = try? WireJSON.decode(ErrorBody.self, from: f.body)
                    guard welcomed else {
                        failure = CLIError(
                            e?.name ?? "error",
                            "the daemon refused the publisher: \(e?.message ?? "unknown error")",
                            exit: .daemonUnreachable
                        )
                        timer?.cancel()
                        c.close()
                        return
                    }
                    verdicts.append(.refused(e?.name ?? "error", e?.message ?? "unknown error"))
                    if e?.fatal ?? true {
                        timer?.cancel()
                        c.close()
                    } else {
                        next(c)
                    }
                default:
                    break
                }
            }
        ) { c in
            connection = c
            c.onClose = { _ in timer?.cancel() }
            let now = SystemServerClock().now().millisecondsSinceEpoch
            let hello = HelloBody(client: "livebus-cli/\(liveBusVersion)", role: .publisher, clientTime: now)
            send(c, .hello, id: 0, topic: "", body: (try? WireJSON.encode(hello)) ?? [])
        }
        loop.run()
        connection?.close()
        if let failure { throw failure }
        return verdicts
    }
}
