import Foundation
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire

/// `livebus publish TOPIC [FILE|-]`: what a backend does, from the shell. Connects with the `publisher` role
/// (Protocol/PROTOCOL.md §4.1) and streams: it reads FILE (or standard input) as it arrives, sends each event body
/// as a PUBLISH on TOPIC as soon as its line is read, with at most ``window`` PUBLISHes awaiting their verdict
/// (pipelined: the daemon stores a turn's PUBLISHes in one transaction, §5.7), and prints each ACK (the event is
/// stored) or ERROR as it arrives, matched to its line by the request id (§3).
enum PublishCommand {
    /// PUBLISHes sent and not yet answered, at most; reading the input waits while this many are out.
    static let window = 64

    /// How long SIGINT or SIGTERM waits for the verdicts of the PUBLISHes in flight, in milliseconds (monotonic),
    /// at most (and at most `--timeout`); a second signal stops at once.
    static let interruptGraceMs: UInt64 = 2000

    typealias Item = PublishInput.Item

    /// What the daemon said of one PUBLISH.
    enum Verdict: Equatable {
        /// ACK: stored with this topic sequence.
        case stored(UInt64)
        /// ERROR: its name and message.
        case refused(String, String)
    }

    /// Why a publish ended before the end of its input.
    enum Stop: Equatable {
        /// A line that is not an event body (exit 2).
        case badInput(PublishInput.Problem)
        /// SIGINT or SIGTERM (exit 130).
        case interrupted(Int32)
        /// A fatal ERROR, then the daemon closed the connection (exit 1).
        case refused(name: String, message: String)
        /// The connection closed without a fatal ERROR: the daemon crashed, was killed or was cut off (exit 3).
        case connectionLost(String)
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
        try checkTopic(topic)
        let path = a.positionals.count == 2 ? a.positionals[1] : "-"
        let timeoutMs = UInt64(
            try a.value("timeout").map { v throws(CLIError) in
                try parseDuration(v, flag: "timeout", allowed: 1...3_600_000)
            } ?? 5000
        )
        let source = path == "-" ? "standard input" : path
        let fd = path == "-" ? 0 : try openInputFile(path)
        let socket = a.value("socket") ?? defaultSocketPath()
        let run = PublishRun(
            topic: topic,
            source: source,
            fd: fd,
            socket: socket,
            timeoutMs: timeoutMs,
            printLines: !out.json
        )
        try run.run()
        return try report(run, out: out)
    }

    /// Refuses a topic the daemon would refuse (the wire's own rule, `Topic.validate`), before anything is read
    /// or sent: a topic over `Frame.maximumTopicLength` bytes cannot even be encoded in a frame.
    /// - Throws: ``CLIError`` `invalidTopic` (exit 2): `topic is M bytes; at most 255`, or the wire's reason.
    static func checkTopic(_ topic: String) throws(CLIError) {
        do { try Topic.validate(topic) } catch {
            let bytes = topic.utf8.count
            throw CLIError(
                "invalidTopic",
                bytes > Frame.maximumTopicLength
                    ? "topic is \(bytes) bytes; at most \(Frame.maximumTopicLength)" : error.message,
                recovery: "a topic is /-separated segments, e.g. orders/A1001 (PROTOCOL.md §2)",
                exit: .usage
            )
        }
    }

    /// Prints the end of a run (the `--json` envelope, or the summary line on stderr) and gives its exit code.
    /// - Throws: ``CLIError`` for a run that stopped: `invalidBody` (2), `connectionLost` (3), `timedOut` (4),
    ///   `interrupted` (130), each with the envelope's data.
    static func report(_ run: PublishRun, out: Output) throws(CLIError) -> Int32 {
        var results: [(Int, JSONValue)] = []
        for (item, v) in run.verdicts {
            switch v {
            case .stored(let sequence):
                results.append(
                    (item.line, .object(["line": .number(Double(item.line)), "sequence": .number(Double(sequence))]))
                )
            case .refused(let name, let message):
                results.append(
                    (
                        item.line,
                        .object([
                            "line": .number(Double(item.line)), "error": .string(name), "message": .string(message),
                        ])
                    )
                )
            }
        }
        let stored = run.storedCount
        let refused = run.verdicts.count - stored
        let unanswered = run.inFlightLines.count
        var data: [String: JSONValue] = [
            "topic": .string(run.topic),
            "events": .array(results.sorted { $0.0 < $1.0 }.map(\.1)),
            "stored": .number(Double(stored)),
            "notAcknowledged": .number(Double(unanswered)),
            "notSent": .number(Double(run.queuedCount)),
        ]
        data["reason"] = .null
        // Where to start again: the first line without a verdict (in flight or read and not sent), else the next.
        let resumeLine = run.inFlightLines.min() ?? run.firstQueuedLine ?? run.nextInputLine
        let counts =
            "\(stored) stored"
            + (refused > 0 ? ", \(refused) refused" : "")
            + (unanswered > 0 ? ", \(unanswered) sent without an answer (they may or may not be stored)" : "")
        let rest = "nothing from line \(resumeLine) on is known to be stored"
        if let failure = run.failure {
            data["reason"] = .string(failure.code)
            var e = failure
            if stored + refused + unanswered > 0 { e.message += " (\(counts); \(rest))" }
            e.data = .object(data)
            throw e
        }
        switch run.stop {
        case .badInput(let p)?:
            data["reason"] = .string("invalidBody")
            throw CLIError(
                "invalidBody",
                "\(run.source), line \(p.line): \(p.message); stopped there: "
                    + (run.verdicts.count + unanswered == 0
                        ? "nothing was sent"
                        : "the \(run.verdicts.count + unanswered) event(s) before it were sent (\(counts)), nothing after it"),
                recovery:
                    #"one event body per line, e.g. {"event":"update","timestamp":1767225600000,"contentState":{…},"relevanceScore":50,"priority":10} (PROTOCOL.md §5.1)"#,
                exit: .usage,
                data: .object(data)
            )
        case .interrupted(let signal)?:
            data["reason"] = .string("interrupted")
            throw CLIError(
                "interrupted",
                "publish interrupted (\(signal == SIGTERM ? "SIGTERM" : "SIGINT")): \(counts); \(rest)",
                exit: .interrupted,
                data: .object(data)
            )
        case .connectionLost(let what)?:
            data["reason"] = .string("connectionLost")
            throw CLIError(
                "connectionLost",
                "the connection to the daemon was lost without a refusal (\(what)): \(counts); \(rest)",
                recovery:
                    "is livebusd still running? see its log; publish again from line \(resumeLine) (an ACK means stored: lines acknowledged are kept)",
                exit: .daemonUnreachable,
                data: .object(data)
            )
        case .refused(let name, let message)?:
            data["reason"] = .string("refused")
            if out.json {
                data["error"] = .object(["name": .string(name), "message": .string(message)])
            } else {
                StandardStream.err(
                    "error: the daemon refused the publisher (\(name): \(message)) and closed the connection: "
                        + "\(counts); \(rest)\n"
                )
            }
        case nil:
            if run.verdicts.isEmpty {
                throw CLIError(
                    "fileUnreadable",
                    run.bytesRead == 0 ? "\(run.source) is empty" : "\(run.source) holds no event body",
                    recovery: "give a file with one event body (PROTOCOL.md §5.1), or one per line",
                    exit: .usage
                )
            }
        }
        let ok = refused == 0 && run.stop == nil
        if out.json {
            out.printJSON(JSONValue.object(["ok": .bool(ok), "data": .object(data)]))
        }
        return ok ? 0 : ExitCode.verdictFailed.rawValue
    }
}

/// One `livebus publish` run on its own loop: the input read as it arrives, the PUBLISHes in flight, the verdicts.
final class PublishRun {
    let topic: String
    let source: String
    let socket: String
    let timeoutMs: UInt64
    let printLines: Bool
    private let fd: Int32

    /// Every verdict, in the order it arrived, with its item.
    private(set) var verdicts: [(PublishInput.Item, PublishCommand.Verdict)] = []
    /// ACKs among ``verdicts``.
    private(set) var storedCount = 0
    /// Why the run stopped before the end of its input, or `nil`.
    private(set) var stop: PublishCommand.Stop?
    /// An error that ends the run at once: no daemon, the HELLO refused, no verdict within the timeout.
    private(set) var failure: CLIError?
    /// Bytes of input read.
    private(set) var bytesRead = 0

    private var input: PublishInput
    private var queue: [PublishInput.Item] = []
    private var queueHead = 0
    private var inFlight: [UInt64: PublishInput.Item] = [:]
    private var nextID: UInt64 = 1
    private var inputEnded = false
    private var welcomed = false
    private var finishing = false
    private var bye: String?

    private var loop: EventLoop!
    private var connection: Connection?
    private var reader: FileReader?
    private var timer: LoopTimer?
    private var grace: LoopTimer?

    /// The lines sent without a verdict yet.
    var inFlightLines: [Int] { inFlight.values.map(\.line) }
    /// Items read and not sent.
    var queuedCount: Int { queue.count - queueHead }
    /// The first line read and not sent.
    var firstQueuedLine: Int? { queueHead < queue.count ? queue[queueHead].line : nil }
    /// The first line of the input not read in full.
    var nextInputLine: Int { input.nextLine }

    init(topic: String, source: String, fd: Int32, socket: String, timeoutMs: UInt64, printLines: Bool) {
        self.topic = topic
        self.source = source
        self.fd = fd
        self.socket = socket
        self.timeoutMs = timeoutMs
        self.printLines = printLines
        input = PublishInput(maximumBodyBytes: Frame.maximumSize - Frame.headerSize - topic.utf8.count)
    }

    /// Runs until the input ended and every PUBLISH has its verdict, or the run stopped (``stop``, ``failure``).
    /// - Throws: ``CLIError`` when the loop, the socket directory or the input cannot be set up.
    func run() throws(CLIError) {
        do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .daemonUnreachable) }
        defer { loop.close() }
        try checkSocketDirectory(socket)
        do {
            let r = try FileReader(loop: loop, fd: fd, closesDescriptor: fd != 0)
            r.onBytes = { [unowned self] bytes in
                bytesRead += bytes.count
                take(input.append(bytes))
            }
            r.onEnd = { [unowned self] error in
                inputEnded = true
                if let error {
                    fail(
                        CLIError(
                            "fileUnreadable",
                            "cannot read \(source): \(error)",
                            recovery: "check the file",
                            exit: .usage
                        )
                    )
                    return
                }
                take(input.finish())
            }
            reader = r
        } catch {
            throw CLIError(
                "fileUnreadable",
                "cannot read \(source): \(error)",
                recovery: "check the file",
                exit: .usage
            )
        }
        reader?.resume()
        let signals = try? SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { [unowned self] signal in
            interrupt(signal)
        }
        armTimer()
        connectToDaemon(
            loop: loop,
            socket: socket,
            failed: { [unowned self] e in fail(e) },
            onFrame: { [unowned self] c, f in frame(c, f) }
        ) { [unowned self] c in
            connection = c
            c.onClose = { [unowned self] error in closed(error) }
            let now = SystemServerClock().now().millisecondsSinceEpoch
            let hello = HelloBody(client: "livebus-cli/\(liveBusVersion)", role: .publisher, clientTime: now)
            do throws(CLIError) { try sendFrame(c, .hello, body: try frameBody(hello)) } catch { fail(error) }
        }
        loop.run()
        timer?.cancel()
        grace?.cancel()
        signals?.close()
        reader?.close()
        connection?.close()
    }

    // MARK: input

    private func take(_ outputs: [PublishInput.Output]) {
        for o in outputs {
            switch o {
            case .item(let item): queue.append(item)
            case .problem(let p):
                // Everything before the bad line is sent and answered; nothing after it is read.
                if stop == nil { stop = .badInput(p) }
                inputEnded = true
                reader?.close()
            }
        }
        pump()
    }

    // MARK: sending

    /// Sends what the window allows, reads on while few are queued, and ends the run when nothing is left to do.
    private func pump() {
        guard !finishing else { return }
        if let c = connection, welcomed, !stopsSending {
            while inFlight.count < PublishCommand.window, queueHead < queue.count {
                let item = queue[queueHead]
                let id = nextID
                do throws(CLIError) {
                    try sendFrame(c, .publish, sequence: id, topic: topic, body: item.body)
                } catch {
                    // Never silent: a body the codec refuses is this line's input error (exit 2).
                    stop = .badInput(PublishInput.Problem(line: item.line, message: error.message))
                    reader?.close()
                    inputEnded = true
                    break
                }
                queueHead += 1
                nextID += 1
                if inFlight.isEmpty { armTimer() }
                inFlight[id] = item
            }
            if queueHead == queue.count {
                queue.removeAll(keepingCapacity: true)
                queueHead = 0
            }
        }
        if !inputEnded, let reader {
            if queuedCount >= PublishCommand.window { reader.pause() } else { reader.resume() }
        }
        // Done: the input ended (or the run stopped), nothing is left to send and every PUBLISH sent has its
        // verdict; before the WELCOME too, for a run with nothing to send (an empty or bad first line, a signal).
        if inputEnded && (stopsSending || queuedCount == 0) && inFlight.isEmpty { finish() }
    }

    /// Whether nothing more is sent: a signal, a fatal refusal, a lost connection (a bad line still lets the lines
    /// before it go).
    private var stopsSending: Bool {
        switch stop {
        case .interrupted?, .refused?, .connectionLost?: return true
        case .badInput?, nil: return false
        }
    }

    private func armTimer() {
        timer?.cancel()
        timer = loop.schedule(after: timeoutMs) { [unowned self] in
            fail(
                CLIError(
                    "timedOut",
                    "the daemon at \(socket) did not answer within \(timeoutMs) ms",
                    recovery: "check that livebusd is running and not stuck (`livebus doctor`), or raise --timeout",
                    exit: .timedOut
                )
            )
        }
    }

    private func frame(_ c: Connection, _ f: Frame) {
        switch f.type {
        case .welcome:
            welcomed = true
            timer?.cancel()
            pump()
        case .ack:
            guard let item = inFlight.removeValue(forKey: f.sequence) else { return }
            let seq = (try? WireJSON.decode(AckBody.self, from: f.body))?.sequence ?? 0
            verdicts.append((item, .stored(seq)))
            storedCount += 1
            // One write per line, at once: into a pipe too (`| head -1` sees the first ACK while the rest is
            // sent), and EPIPE ends the process quietly (exit 0), as `watch` does.
            if printLines { StandardStream.out("\(topic) #\(seq) stored (\(source):\(item.line))\n") }
            answered()
        case .error:
            let e = try? WireJSON.decode(ErrorBody.self, from: f.body)
            let name = e?.name ?? "error"
            let message = e?.message ?? "unknown error"
            guard welcomed else {
                fail(
                    CLIError(name, "the daemon refused the publisher: \(message)", exit: .daemonUnreachable)
                )
                return
            }
            if let item = inFlight.removeValue(forKey: f.sequence) {
                verdicts.append((item, .refused(name, message)))
                if printLines { StandardStream.err("error: \(source):\(item.line): refused: \(name): \(message)\n") }
            }
            if e?.fatal ?? true {
                // The daemon closes next (ACKs of the same turn come first, §5.7); what is in flight then has no
                // verdict. Nothing more is sent or read.
                if stop == nil || !stopsSending { stop = .refused(name: name, message: message) }
                reader?.close()
                inputEnded = true
            }
            answered()
        case .bye:
            bye = (try? WireJSON.decode(ByeBody.self, from: f.body))?.reason ?? "no reason given"
        case .ping:
            // A publisher waiting on a slow producer still answers keepalives (§5.6 idle timeout).
            c.write { buf in Frame.appendPong(answering: f, into: &buf) }
        default:
            break
        }
    }

    private func answered() {
        if inFlight.isEmpty { timer?.cancel() } else { armTimer() }
        pump()
    }

    // MARK: ending

    private func interrupt(_ signal: Int32) {
        if case .interrupted? = stop {
            finish()  // a second signal: at once
            return
        }
        stop = .interrupted(signal)
        reader?.close()
        inputEnded = true
        // The verdicts in flight may still come: wait for them a little, print them, then end.
        if !inFlight.isEmpty {
            grace = loop.schedule(after: min(PublishCommand.interruptGraceMs, timeoutMs)) { [unowned self] in
                finish()
            }
        }
        pump()
    }

    private func fail(_ e: CLIError) {
        if failure == nil { failure = e }
        finish()
    }

    /// The daemon closed the connection (or it broke): after a fatal refusal that is its end, after a signal the
    /// interrupt stands; else the connection was lost (a crash, `kill -9`, a cut), whatever else was going on.
    private func closed(_ error: LoopError?) {
        connection = nil
        guard !finishing else {
            loop.stop()
            return
        }
        switch stop {
        case .refused?, .interrupted?:
            break
        case .badInput?, .connectionLost?, nil:
            let what =
                error.map { "\($0)" }
                ?? (bye.map { "the daemon said BYE (\($0)) and closed it" } ?? "the daemon closed it")
            stop = .connectionLost(what)
        }
        finish()
    }

    private func finish() {
        guard !finishing else { return }
        finishing = true
        timer?.cancel()
        grace?.cancel()
        reader?.close()
        if let c = connection {
            // BYE, then close once it is written (the daemon sees a publisher that said goodbye).
            do throws(CLIError) {
                try sendFrame(c, .bye, body: Array(#"{"reason":"published"}"#.utf8))
            } catch {
                StandardStream.err("warning: \(error.message)\n")
            }
            c.closeAfterFlush(timeoutMilliseconds: 500)
        } else {
            loop.stop()
        }
    }
}
