import CNATS
import Foundation
import LiveBusCore
import LiveBusWire
import Synchronization

/// The headers the bus writes on its stream's messages (PROTOCOL.md §5.8).
enum FederationHeader {
    /// The topic's sequence of an event.
    static let sequence = "Livebus-Seq"
    /// Server-clock milliseconds of a resume record (newest first).
    static let milliseconds = "Livebus-Ms"
    /// `1` on a resume record's tombstone.
    static let removed = "Livebus-Removed"
    /// JetStream's optimistic-concurrency header: the stream sequence of the subject's newest message, 0 for none.
    /// Source: https://docs.nats.io/nats-concepts/jetstream/headers
    static let expectedLastSubjectSequence = "Nats-Expected-Last-Subject-Sequence"
    /// JetStream's deduplication id (a retried publish after a timeout is stored once).
    static let messageID = "Nats-Msg-Id"
    /// JetStream's check that the stream's newest message has this `Nats-Msg-Id` (a pipelined batch's chain).
    /// Source: https://docs.nats.io/nats-concepts/jetstream/headers
    static let expectedLastMessageID = "Nats-Expected-Last-Msg-Id"
}

/// Publishes a batch's messages, assigning each event its topic's next sequence (the store's writer thread, or
/// the caller's in inline mode).
final class Writer: @unchecked Sendable {
    // @unchecked: `heads` is behind its Mutex, `link` and `asyncJS` are thread-safe (libnats), `acks` locks itself,
    // `instance` and `queue` are immutable.
    let link: NATSLink
    /// A JetStream context of its own for pipelined publishes: its acknowledgement handler feeds `acks`.
    private let asyncJS: OpaquePointer
    private let acks = AckCollector()
    /// Commits run here one at a time, in the order the loop made them.
    let queue = DispatchQueue(label: "livebus.federation.writer")
    private let heads = Mutex<[String: Head]>([:])
    private let counter = Atomic<UInt64>(0)
    private let instance = String(UUID().uuidString.prefix(8))

    /// A topic's newest event as this writer knows it.
    struct Head: Sendable {
        var sequence: UInt64
        var streamSequence: UInt64
    }

    /// One message to publish.
    struct Out: Sendable {
        var subject: String
        var data: [UInt8]
        var headers: [(String, String)]
        var kind: OutKind
    }

    enum OutKind: Sendable {
        case event(topic: String, body: EventBody)
        case other(Follower.Kind)
    }

    /// What a published batch became.
    struct Done: Sendable {
        var events: [StoredEvent]
        var applied: [Follower.Item]
    }

    /// - Throws: ``FederationError`` when libnats cannot make the publishing context (out of memory).
    init(link: NATSLink) throws(FederationError) {
        self.link = link
        var o = jsOptions()
        jsOptions_Init(&o)
        o.Wait = link.options.requestTimeoutMilliseconds
        o.PublishAsync.AckHandler = AckCollector.handler
        // Retained for good: libnats may still call the handler for a late answer after the context is destroyed.
        o.PublishAsync.AckHandlerClosure = Unmanaged.passRetained(acks).toOpaque()
        var ctx: OpaquePointer?
        let s = natsConnection_JetStream(&ctx, link.nc, &o)
        guard s == NATS_OK, let ctx else {
            throw FederationError("cannot open a JetStream publishing context: \(NATSLink.lastError(s))")
        }
        asyncJS = ctx
    }

    deinit { jsCtx_Destroy(asyncJS) }

    /// A NATS message with headers, or `nil` when libnats cannot make it.
    static func message(_ subject: String, _ data: [UInt8], _ headers: [(String, String)]) -> OpaquePointer? {
        var msg: OpaquePointer?
        var s = data.withUnsafeBufferPointer { b in
            natsMsg_Create(
                &msg,
                subject,
                nil,
                b.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                Int32(b.count)
            )
        }
        guard s == NATS_OK, let msg else { return nil }
        for (k, v) in headers where s == NATS_OK { s = natsMsgHeader_Set(msg, k, v) }
        guard s == NATS_OK else {
            natsMsg_Destroy(msg)
            return nil
        }
        return msg
    }

    /// Turns a batch into messages, encoding every body first: a body that cannot be encoded fails the batch before
    /// anything is published.
    static func prepare(_ batch: StoreBatch, prefix: String, daemon: String) throws(StoreError) -> [Out] {
        var out: [Out] = []
        do {
            for (topic, body) in batch.events {
                out.append(
                    Out(
                        subject: FederationSubjects.event(topic, prefix: prefix),
                        data: try EventJSON.encode(body),
                        headers: [],
                        kind: .event(topic: topic, body: body)
                    )
                )
            }
        } catch {
            throw StoreError("cannot encode the event: \(error)")
        }
        if let s = batch.simulatorState {
            out.append(
                Out(
                    subject: FederationSubjects.simulator(prefix: prefix, daemon: daemon),
                    data: [UInt8](s),
                    headers: [],
                    kind: .other(.simulator(daemon: daemon, s))
                )
            )
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for r in batch.resumeRecords {
            guard let d = try? encoder.encode(r) else {
                throw StoreError("cannot encode the resume record of \(r.name)")
            }
            out.append(
                Out(
                    subject: FederationSubjects.resume(r.token, prefix: prefix),
                    data: [UInt8](d),
                    headers: [(FederationHeader.milliseconds, "\(batch.nowMilliseconds)")],
                    kind: .other(.resume(token: r.token, record: r, milliseconds: batch.nowMilliseconds))
                )
            )
        }
        for t in batch.removedResumeTokens {
            out.append(
                Out(
                    subject: FederationSubjects.resume(t, prefix: prefix),
                    data: [],
                    headers: [(FederationHeader.removed, "1")],
                    kind: .other(.resume(token: t, record: nil, milliseconds: batch.nowMilliseconds))
                )
            )
        }
        for (k, v) in batch.meta {
            out.append(
                Out(
                    subject: FederationSubjects.meta(k, prefix: prefix),
                    data: Array(v.utf8),
                    headers: [],
                    kind: .other(.meta(key: k, value: v))
                )
            )
        }
        return out
    }

    /// Learns the newest sequences the consumer saw (another daemon's writes), so the next publish expects them.
    func learn(_ items: [Follower.Item]) {
        heads.withLock { h in
            for i in items {
                guard case .event(let e) = i.kind else { continue }
                if (h[e.topic]?.sequence ?? 0) < e.sequence {
                    h[e.topic] = Head(sequence: e.sequence, streamSequence: i.streamSequence)
                }
            }
        }
    }

    /// Publishes `out` in order, each event with the next sequence of its topic (optimistic: a lost race reads the
    /// subject's last message and tries again, at most 8 times). Blocks the calling thread.
    func publish(_ out: [Out]) -> Result<Done, StoreError> { publish(batches: [out])[0] }

    /// Queues a batch for the writer thread; `completion` runs there with what it became. Batches queued while
    /// the thread is busy are published together (``publish(batches:)``), each completing on its own, in order.
    func enqueue(_ out: [Out], _ completion: @escaping @Sendable (Result<Done, StoreError>) -> Void) {
        backlog.withLock { $0.append(Job(out: out, completion: completion)) }
        queue.async { self.drain() }
    }

    private struct Job: Sendable {
        var out: [Out]
        var completion: @Sendable (Result<Done, StoreError>) -> Void
    }
    private let backlog = Mutex<[Job]>([])

    /// Takes the queued batches (up to 1,024 messages, at least one batch) and publishes them together.
    private func drain() {
        let jobs: [Job] = backlog.withLock { b in
            var n = 0
            var k = 0
            while k < b.count, k == 0 || n + b[k].out.count <= 1024 {
                n += b[k].out.count
                k += 1
            }
            defer { b.removeFirst(k) }
            return Array(b[..<k])
        }
        guard !jobs.isEmpty else { return }
        for (j, r) in zip(jobs, publish(batches: jobs.map(\.out))) { j.completion(r) }
    }

    /// Publishes batches in order; each succeeds or fails on its own, as if published one after another.
    ///
    /// Their messages are first pipelined together (``pipeline(_:keys:)``): every message is sent before any
    /// acknowledgement is awaited, chained so that JetStream stores a prefix of them and refuses the rest. From the
    /// first message not stored on, each batch is published one message at a time with the synchronous API, as a
    /// single message is: a lost race is retried with the topic's next sequence, a timeout once with the same
    /// `Nats-Msg-Id` (stored once either way), any other refusal ends that batch (PROTOCOL.md §5.8 "Batches").
    func publish(batches: [[Out]]) -> [Result<Done, StoreError>] {
        guard link.state == .connected else { return batches.map { _ in .failure(JetStreamStore.unavailable) } }
        let batchIDs = batches.map { _ in counter.add(1, ordering: .relaxed).newValue }
        var flat: [Out] = []
        var keys: [(batch: Int, index: Int)] = []
        for (b, out) in batches.enumerated() {
            flat += out
            keys += out.indices.map { (b, $0) }
        }
        var dones = batches.map { _ in Done(events: [], applied: []) }
        var failures = [StoreError?](repeating: nil, count: batches.count)
        // from[b]: how many leading messages of batch b are known stored.
        var from = [Int](repeating: 0, count: batches.count)
        if flat.count > 1 {
            let p = pipeline(flat, keys: keys.map { (batchIDs[$0.batch], $0.index) })
            var g = 0
            func take(_ streamSeq: UInt64) -> StoreError? {
                let (b, i) = keys[g]
                from[b] = i + 1
                g += 1
                return record(flat[g - 1], sequence: p.sequences[g - 1], streamSequence: streamSeq, into: &dones[b])
            }
            for k in 0..<p.stored {
                if let e = take(p.streamSequences[k]) { failures[keys[k].batch] = e }
            }
            switch p.stop {
            case .refused(let e): failures[keys[g].batch] = e
            case .unknown:
                // Message g timed out (or its answer was lost): it and the ones after it may be stored. Send them
                // again synchronously exactly as pipelined (same `Nats-Msg-Id`: a stored one is answered as a
                // duplicate with its sequence) until one is refused; from there on nothing is stored. Another
                // failure leaves it and every later message unknown: their batches fail with it.
                resend: while g < p.sent {
                    switch publishOne(flat[g].subject, flat[g].data, p.headers[g]) {
                    case .stored(let streamSeq):
                        if let e = take(streamSeq) { failures[keys[g - 1].batch] = e }
                    case .wrongLastSequence: break resend
                    case .failed(let e):
                        for b in keys[g].batch..<batches.count where failures[b] == nil { failures[b] = e }
                        break resend
                    }
                }
            case .none, .conflict: break
            }
        }
        return batches.indices.map { b in
            if let e = failures[b] ?? serial(batches[b], batchID: batchIDs[b], from: from[b], into: &dones[b]) {
                return .failure(e)
            }
            return .success(dones[b])
        }
    }

    /// Publishes `out` from message `from` on, one message at a time, waiting for each acknowledgement.
    /// - Returns: `nil`, or the error that ended the batch (the messages before it stay stored).
    private func serial(_ out: [Out], batchID: UInt64, from: Int, into done: inout Done) -> StoreError? {
        for i in from..<out.count {
            let o = out[i]
            switch o.kind {
            case .event(let topic, let body):
                var attempt = 0
                while true {
                    attempt += 1
                    let head = heads.withLock { $0[topic] } ?? Head(sequence: 0, streamSequence: 0)
                    let seq = head.sequence + 1
                    let headers = [
                        (FederationHeader.sequence, "\(seq)"),
                        (FederationHeader.expectedLastSubjectSequence, "\(head.streamSequence)"),
                        (FederationHeader.messageID, messageID(batchID, i, sequence: seq)),
                    ]
                    switch publishOne(o.subject, o.data, headers) {
                    case .stored(let streamSeq):
                        if let e = stored(topic, seq, body, o.data, streamSeq, into: &done) { return e }
                    case .wrongLastSequence where attempt < 8:
                        if let e = refresh(topic, subject: o.subject) { return e }
                        continue
                    case .wrongLastSequence:
                        return StoreError(
                            "federationConflict: topic \(topic) kept changing under 8 attempts; publish again"
                        )
                    case .failed(let e):
                        return e
                    }
                    break
                }
            case .other(let kind):
                let headers = o.headers + [(FederationHeader.messageID, messageID(batchID, i, sequence: nil))]
                switch publishOne(o.subject, o.data, headers) {
                case .stored(let streamSeq): done.applied.append(Follower.Item(streamSequence: streamSeq, kind: kind))
                case .wrongLastSequence:
                    return StoreError("JetStream refused \(o.subject) (wrong last sequence)")
                case .failed(let e): return e
                }
            }
        }
        return nil
    }

    /// The `Nats-Msg-Id` of a batch's message `index` (with its topic sequence for an event): the same for the
    /// pipelined send and a later synchronous retry of the same message, so JetStream stores it once.
    private func messageID(_ batchID: UInt64, _ index: Int, sequence: UInt64?) -> String {
        sequence.map { "\(instance)-\(batchID)-\(index)-\($0)" } ?? "\(instance)-\(batchID)-\(index)"
    }

    /// Records a stored event: the topic's head moves to it, and it joins `done`.
    /// - Returns: `nil`, or the error when its body cannot be kept.
    private func stored(
        _ topic: String,
        _ seq: UInt64,
        _ body: EventBody,
        _ data: [UInt8],
        _ streamSeq: UInt64,
        into done: inout Done
    ) -> StoreError? {
        heads.withLock { $0[topic] = Head(sequence: seq, streamSequence: streamSeq) }
        do {
            let e = try StoredEvent(topic: topic, sequence: seq, body: body, encoded: data)
            done.events.append(e)
            done.applied.append(Follower.Item(streamSequence: streamSeq, kind: .event(e)))
            return nil
        } catch {
            return StoreError("cannot encode the event: \(error)")
        }
    }

    /// Records a stored message of the batch in `done` (an event moves its topic's head).
    private func record(_ o: Out, sequence: UInt64?, streamSequence: UInt64, into done: inout Done) -> StoreError? {
        switch o.kind {
        case .event(let topic, let body):
            return stored(topic, sequence ?? 0, body, o.data, streamSequence, into: &done)
        case .other(let kind):
            done.applied.append(Follower.Item(streamSequence: streamSequence, kind: kind))
            return nil
        }
    }

    /// What a pipelined send of a batch became.
    struct Pipelined {
        /// How many leading messages are stored; their stream sequences.
        var stored = 0
        var streamSequences: [UInt64] = []
        /// How many leading messages were sent, their topic sequences (events) and headers.
        var sent = 0
        var sequences: [UInt64?] = []
        var headers: [[(String, String)]] = []
        /// Why message `stored` is not (when `stored < sent`).
        var stop = Stop.none
    }

    enum Stop {
        /// Every message sent is stored.
        case none
        /// Refused for a wrong last (subject) sequence or message id: not stored, nor any after it.
        case conflict
        /// Refused for another reason: the batch ends with this error.
        case refused(StoreError)
        /// No answer within the request timeout: it and the later ones may or may not be stored.
        case unknown
    }

    /// Sends every message of the batch before awaiting any acknowledgement (`js_PublishMsgAsync`), then collects
    /// the acknowledgements (at most the request timeout each, libnats' `jsPubOptions.MaxWait`).
    ///
    /// The chain: message *i* > 0 carries `Nats-Expected-Last-Msg-Id` = message *i*−1's `Nats-Msg-Id`, so JetStream
    /// stores it only if the stream's newest message is exactly message *i*−1 (source: nats-server
    /// `processJetStreamMsg`, the stream's last message id is that of the newest stored message). The stored
    /// messages are therefore a prefix of the batch, consecutive in the stream with nothing between them: once one
    /// is refused or lost, every later one is refused (error 10070), whatever its topic. The first event of each
    /// topic carries `Nats-Expected-Last-Subject-Sequence` from the topic's known head as a single publish does;
    /// a later event of the same topic needs none (its predecessor in the batch is stored just before it) and takes
    /// the next sequence.
    /// - Returns: What was sent and stored; nothing is recorded in `done` yet.
    private func pipeline(_ out: [Out], keys: [(batchID: UInt64, index: Int)]) -> Pipelined {
        link.offLoop("Writer.pipeline")
        var p = Pipelined()
        var ids: [String] = []
        var batchHeads: [String: UInt64] = [:]
        var msgs: [OpaquePointer] = []
        defer { msgs.forEach { natsMsg_Destroy($0) } }
        for (i, o) in out.enumerated() {
            var headers = o.headers
            var seq: UInt64?
            if case .event(let topic, _) = o.kind {
                let n: UInt64
                if let last = batchHeads[topic] {
                    n = last + 1
                } else {
                    let head = heads.withLock { $0[topic] } ?? Head(sequence: 0, streamSequence: 0)
                    n = head.sequence + 1
                    headers.append((FederationHeader.expectedLastSubjectSequence, "\(head.streamSequence)"))
                }
                batchHeads[topic] = n
                seq = n
                headers.append((FederationHeader.sequence, "\(n)"))
            }
            let id = messageID(keys[i].batchID, keys[i].index, sequence: seq)
            headers.append((FederationHeader.messageID, id))
            if let previous = ids.last { headers.append((FederationHeader.expectedLastMessageID, previous)) }
            guard let msg = Self.message(o.subject, o.data, headers) else { break }
            msgs.append(msg)
            ids.append(id)
            p.sequences.append(seq)
            p.headers.append(headers)
        }
        guard !msgs.isEmpty else { return p }
        acks.begin(ids)
        var po = jsPubOptions()
        jsPubOptions_Init(&po)
        po.MaxWait = link.options.requestTimeoutMilliseconds
        for k in msgs.indices {
            var m: OpaquePointer? = msgs[k]
            guard js_PublishMsgAsync(asyncJS, &m, &po) == NATS_OK else { break }
            p.sent += 1
        }
        // The library owns (and destroys) what it sent; only the unsent ones are left to the deferred destroy.
        msgs.removeFirst(p.sent)
        let results = acks.wait(count: p.sent, upTo: link.options.requestTimeoutMilliseconds + 1000)
        while p.stored < p.sent {
            switch results[p.stored] ?? .unknown {
            case .stored(let streamSeq):
                p.streamSequences.append(streamSeq)
                p.stored += 1
                continue
            case .conflict: p.stop = .conflict
            case .refused(let e): p.stop = .refused(e)
            case .unknown: p.stop = .unknown
            }
            break
        }
        return p
    }

    enum PublishOutcome {
        case stored(streamSequence: UInt64)
        case wrongLastSequence
        case failed(StoreError)
    }

    /// One publish, retried once with the same `Nats-Msg-Id` after a timeout (stored once either way).
    private func publishOne(_ subject: String, _ data: [UInt8], _ headers: [(String, String)]) -> PublishOutcome {
        link.offLoop("Writer.publishOne")
        var tries = 0
        while true {
            tries += 1
            guard let msg = Self.message(subject, data, headers) else {
                return .failed(StoreError("cannot create a NATS message for \(subject) (out of memory)"))
            }
            defer { natsMsg_Destroy(msg) }
            var ack: UnsafeMutablePointer<jsPubAck>?
            var jerr = jsErrCode(0)
            let s = js_PublishMsg(&ack, link.js, msg, nil, &jerr)
            if s == NATS_OK, let ack {
                let seq = ack.pointee.Sequence
                jsPubAck_Destroy(ack)
                return .stored(streamSequence: seq)
            }
            if jerr == JSStreamWrongLastSequenceErr || jerr == JSStreamWrongLastMsgIDErr { return .wrongLastSequence }
            if s == NATS_TIMEOUT && tries < 2 && link.state == .connected { continue }
            if s == NATS_TIMEOUT {
                return .failed(
                    StoreError(
                        "federationUnavailable: JetStream did not acknowledge \(subject) within \(link.options.requestTimeoutMilliseconds) ms; it may or may not be stored"
                    )
                )
            }
            if link.state != .connected { return .failed(JetStreamStore.unavailable) }
            return .failed(
                StoreError(
                    "federationUnavailable: JetStream refused \(subject): \(NATSLink.lastError(s)) (JetStream error \(jerr.rawValue))"
                )
            )
        }
    }

    /// Reads a topic's newest message from the stream after a lost race.
    /// - Returns: `nil`, or the error when the stream cannot be read.
    private func refresh(_ topic: String, subject: String) -> StoreError? {
        link.offLoop("Writer.refresh")
        var msg: OpaquePointer?
        var jerr = jsErrCode(0)
        let s = js_GetLastMsg(&msg, link.js, link.options.stream, subject, nil, &jerr)
        if s == NATS_OK, let msg {
            defer { natsMsg_Destroy(msg) }
            let seq = Follower.header(msg, FederationHeader.sequence).flatMap { UInt64($0) } ?? 0
            let head = Head(sequence: seq, streamSequence: natsMsg_GetSequence(msg))
            heads.withLock { $0[topic] = head }
            return nil
        }
        if jerr == JSNoMessageFoundErr || s == NATS_NOT_FOUND {
            heads.withLock { $0[topic] = Head(sequence: 0, streamSequence: 0) }
            return nil
        }
        return StoreError("federationUnavailable: cannot read \(subject)'s last message: \(NATSLink.lastError(s))")
    }
}

/// Collects the acknowledgements of one pipelined batch (libnats calls ``handler`` on its own thread).
final class AckCollector: @unchecked Sendable {
    // @unchecked: every field is read and written under `cond`.
    private let cond = NSCondition()
    /// The current batch's message ids and their index; results of an earlier batch's ids are ignored.
    private var indexOf: [String: Int] = [:]
    private var results: [Int: Ack] = [:]

    /// One message's answer.
    enum Ack {
        case stored(UInt64)
        /// Wrong last (subject) sequence or wrong last message id: not stored.
        case conflict
        case refused(StoreError)
        /// Timed out: may or may not be stored.
        case unknown
    }

    /// Starts a batch of these message ids.
    func begin(_ ids: [String]) {
        cond.withLock {
            indexOf = Dictionary(ids.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
            results = [:]
        }
    }

    /// Waits until `count` results are in, or `milliseconds` have passed (a guard: libnats times each message out
    /// after the request timeout itself). - Returns: The results by index; a missing one is not known to be stored.
    func wait(count: Int, upTo milliseconds: Int64) -> [Int: Ack] {
        let deadline = Date().addingTimeInterval(Double(milliseconds) / 1000)
        cond.lock()
        defer { cond.unlock() }
        while results.count < count, cond.wait(until: deadline) {}
        let r = results
        indexOf = [:]
        return r
    }

    private func take(_ id: String, _ outcome: Ack) {
        cond.withLock {
            guard let i = indexOf.removeValue(forKey: id) else { return }
            results[i] = outcome
            cond.broadcast()
        }
    }

    /// libnats' `jsPubAckHandler`: one call per message sent with `js_PublishMsgAsync`, stored or not.
    static let handler: jsPubAckHandler = { _, msg, pa, pae, closure in
        defer { natsMsg_Destroy(msg) }
        guard let closure, let msg, let id = Follower.header(msg, FederationHeader.messageID) else { return }
        let c = Unmanaged<AckCollector>.fromOpaque(closure).takeUnretainedValue()
        if let pa {
            c.take(id, .stored(pa.pointee.Sequence))
        } else if let pae {
            let e = pae.pointee
            if e.ErrCode == JSStreamWrongLastSequenceErr || e.ErrCode == JSStreamWrongLastMsgIDErr {
                c.take(id, .conflict)
            } else if e.Err == NATS_TIMEOUT || e.ErrCode.rawValue == 0 {
                c.take(id, .unknown)
            } else {
                let text = e.ErrText.map { String(cString: $0) } ?? NATSLink.lastError(e.Err)
                c.take(
                    id,
                    .refused(
                        StoreError(
                            "federationUnavailable: JetStream refused \(String(cString: natsMsg_GetSubject(msg))): \(text) (JetStream error \(e.ErrCode.rawValue))"
                        )
                    )
                )
            }
        }
    }
}

/// Reads the stream in order with an ordered consumer: once at open (the mirror), then continuously (following).
final class Follower: @unchecked Sendable {
    // @unchecked: `sub` is used by its thread only once started; `stopped` is atomic.
    /// One message of the stream, decoded.
    struct Item: Sendable {
        var streamSequence: UInt64
        var kind: Kind
    }

    /// What a message holds.
    enum Kind: Sendable {
        case event(StoredEvent)
        case resume(token: String, record: ResumeRecord?, milliseconds: Int64)
        case meta(key: String, value: String)
        /// A daemon's simulator state (`nil` daemon: the subject of earlier versions, read by none).
        case simulator(daemon: String?, Data)
        case unknown
    }

    private let link: NATSLink
    /// The consumer's subscription; replaced by its thread when the consumer stalls.
    private var sub: OpaquePointer
    private let stopped = Atomic<Bool>(false)
    /// The newest stream sequence handed on.
    private var delivered: UInt64

    private init(link: NATSLink, sub: OpaquePointer, after: UInt64) {
        self.link = link
        self.sub = sub
        self.delivered = after
    }

    static func header(_ msg: OpaquePointer, _ key: String) -> String? {
        var v: UnsafePointer<CChar>?
        guard natsMsgHeader_Get(msg, key, &v) == NATS_OK, let v else { return nil }
        return String(cString: v)
    }

    private static func subscribe(_ link: NATSLink, from start: UInt64) throws(FederationError) -> OpaquePointer {
        link.offLoop("Follower.subscribe")
        var so = jsSubOptions()
        jsSubOptions_Init(&so)
        so.Ordered = true
        if start > 1 {
            so.Config.DeliverPolicy = js_DeliverByStartSequence
            so.Config.OptStartSeq = start
        } else {
            so.Config.DeliverPolicy = js_DeliverAll
        }
        var sub: OpaquePointer?
        var jerr = jsErrCode(0)
        let s = link.options.stream.withCString { name in
            so.Stream = name
            return js_SubscribeSync(&sub, link.js, link.options.subjectPrefix + ".>", nil, &so, &jerr)
        }
        guard s == NATS_OK, let sub else {
            throw FederationError(
                "cannot read the JetStream stream \(link.options.stream): \(NATSLink.lastError(s)) (JetStream error \(jerr.rawValue))"
            )
        }
        return sub
    }

    /// Decodes one message, or `nil` for one that is not the stream's (a status message).
    static func decode(_ msg: OpaquePointer, prefix: String) -> (item: Item, pending: UInt64)? {
        var meta: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&meta, msg) == NATS_OK, let meta else { return nil }
        let streamSeq = meta.pointee.Sequence.Stream
        let pending = meta.pointee.NumPending
        jsMsgMetaData_Destroy(meta)
        let subject = String(cString: natsMsg_GetSubject(msg))
        let n = Int(natsMsg_GetDataLength(msg))
        let data: [UInt8] =
            n == 0
            ? []
            : natsMsg_GetData(msg).withMemoryRebound(to: UInt8.self, capacity: n) {
                Array(UnsafeBufferPointer(start: $0, count: n))
            }
        var kind = Kind.unknown
        switch FederationSubjects.kind(of: subject, prefix: prefix) {
        case .event(let topic):
            if let seq = header(msg, FederationHeader.sequence).flatMap({ UInt64($0) }),
                let body = try? EventJSON.decode(data),
                let e = try? StoredEvent(topic: topic, sequence: seq, body: body, encoded: data)
            {
                kind = .event(e)
            }
        case .resume(let token):
            let ms = header(msg, FederationHeader.milliseconds).flatMap { Int64($0) } ?? 0
            if header(msg, FederationHeader.removed) == "1" {
                kind = .resume(token: token, record: nil, milliseconds: ms)
            } else if let r = try? JSONDecoder().decode(ResumeRecord.self, from: Data(data)) {
                kind = .resume(token: token, record: r, milliseconds: ms)
            }
        case .meta(let key): kind = .meta(key: key, value: String(decoding: data, as: UTF8.self))
        case .simulator(let daemon): kind = .simulator(daemon: daemon, Data(data))
        case nil: break
        }
        return (Item(streamSequence: streamSeq, kind: kind), pending)
    }

    /// Reads the whole stream once, oldest first.
    /// - Returns: Its messages and the newest stream sequence.
    static func load(_ link: NATSLink) throws(FederationError) -> (items: [Item], lastStreamSequence: UInt64) {
        link.offLoop("Follower.load")
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var jerr = jsErrCode(0)
        let s = js_GetStreamInfo(&si, link.js, link.options.stream, nil, &jerr)
        guard s == NATS_OK, let si else {
            throw FederationError("cannot read the JetStream stream \(link.options.stream): \(NATSLink.lastError(s))")
        }
        let last = si.pointee.State.LastSeq
        let count = si.pointee.State.Msgs
        jsStreamInfo_Destroy(si)
        guard count > 0 else { return ([], last) }
        let sub = try subscribe(link, from: 1)
        defer {
            natsSubscription_Unsubscribe(sub)
            natsSubscription_Destroy(sub)
        }
        var items: [Item] = []
        var newest: UInt64 = 0
        while newest < last {
            var msg: OpaquePointer?
            let r = natsSubscription_NextMsg(&msg, sub, link.options.requestTimeoutMilliseconds)
            guard r == NATS_OK, let msg else {
                throw FederationError(
                    "cannot read the JetStream stream \(link.options.stream) at open (after stream sequence \(newest) of \(last)): \(NATSLink.lastError(r))"
                )
            }
            defer { natsMsg_Destroy(msg) }
            guard let (item, pending) = decode(msg, prefix: link.options.subjectPrefix) else { continue }
            items.append(item)
            newest = item.streamSequence
            if pending == 0 { break }
        }
        return (items, max(last, newest))
    }

    /// Follows the stream from after `after` on a thread of its own, handing decoded messages to `deliver` in
    /// stream order (up to 256 at a time).
    static func start(_ link: NATSLink, after: UInt64, deliver: @escaping @Sendable ([Item]) -> Void)
        throws(FederationError) -> Follower
    {
        let f = Follower(link: link, sub: try subscribe(link, from: after + 1), after: after)
        let t = Thread { f.run(deliver) }
        t.name = "livebus-federation-follow"
        t.start()
        return f
    }

    private func run(_ deliver: @Sendable ([Item]) -> Void) {
        link.offLoop("Follower.run")
        let prefix = link.options.subjectPrefix
        var quietTurns = 0
        while !stopped.load(ordering: .relaxed) {
            var items: [Item] = []
            var wait: Int64 = 250
            while items.count < 256 {
                var msg: OpaquePointer?
                let r = natsSubscription_NextMsg(&msg, sub, wait)
                guard r == NATS_OK, let msg else { break }
                if let (item, _) = Follower.decode(msg, prefix: prefix), item.streamSequence > delivered {
                    items.append(item)
                    delivered = item.streamSequence
                }
                natsMsg_Destroy(msg)
                wait = 1
            }
            if !items.isEmpty {
                deliver(items)
                quietTurns = 0
                continue
            }
            // Quiet for 2 s: if the stream has moved on, the consumer was lost (its server crashed, the cluster
            // restarted) and libnats has not recreated it yet: subscribe again after the last message handed on.
            quietTurns += 1
            guard quietTurns >= 8, link.state == .connected else { continue }
            quietTurns = 0
            guard let last = StreamStatus.fetch(link)?.lastSequence, last > delivered,
                let fresh = try? Follower.subscribe(link, from: delivered + 1)
            else { continue }
            natsSubscription_Unsubscribe(sub)
            natsSubscription_Destroy(sub)
            sub = fresh
        }
        natsSubscription_Unsubscribe(sub)
        natsSubscription_Destroy(sub)
    }

    /// Stops the thread (within 250 ms).
    func stop() { stopped.store(true, ordering: .relaxed) }
}
