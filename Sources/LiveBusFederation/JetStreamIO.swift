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
}

/// Publishes a batch's messages, assigning each event its topic's next sequence (the store's writer thread, or
/// the caller's in inline mode).
final class Writer: @unchecked Sendable {
    // @unchecked: `heads` is behind its Mutex, `link` is thread-safe, `instance` and `queue` are immutable.
    let link: NATSLink
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

    init(link: NATSLink) { self.link = link }

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
    func publish(_ out: [Out]) -> Result<Done, StoreError> {
        guard link.state == .connected else { return .failure(JetStreamStore.unavailable) }
        var done = Done(events: [], applied: [])
        let batchID = counter.add(1, ordering: .relaxed).newValue
        for (i, o) in out.enumerated() {
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
                        (FederationHeader.messageID, "\(instance)-\(batchID)-\(i)-\(seq)"),
                    ]
                    switch publishOne(o.subject, o.data, headers) {
                    case .stored(let streamSeq):
                        heads.withLock { $0[topic] = Head(sequence: seq, streamSequence: streamSeq) }
                        do {
                            let e = try StoredEvent(topic: topic, sequence: seq, body: body, encoded: o.data)
                            done.events.append(e)
                            done.applied.append(Follower.Item(streamSequence: streamSeq, kind: .event(e)))
                        } catch {
                            return .failure(StoreError("cannot encode the event: \(error)"))
                        }
                    case .wrongLastSequence where attempt < 8:
                        if let e = refresh(topic, subject: o.subject) { return .failure(e) }
                        continue
                    case .wrongLastSequence:
                        return .failure(
                            StoreError(
                                "federationConflict: topic \(topic) kept changing under 8 attempts; publish again"
                            )
                        )
                    case .failed(let e):
                        return .failure(e)
                    }
                    break
                }
            case .other(let kind):
                switch publishOne(o.subject, o.data, o.headers) {
                case .stored(let streamSeq): done.applied.append(Follower.Item(streamSequence: streamSeq, kind: kind))
                case .wrongLastSequence:
                    return .failure(StoreError("JetStream refused \(o.subject) (wrong last sequence)"))
                case .failed(let e): return .failure(e)
                }
            }
        }
        return .success(done)
    }

    enum PublishOutcome {
        case stored(streamSequence: UInt64)
        case wrongLastSequence
        case failed(StoreError)
    }

    /// One publish, retried once with the same `Nats-Msg-Id` after a timeout (stored once either way).
    private func publishOne(_ subject: String, _ data: [UInt8], _ headers: [(String, String)]) -> PublishOutcome {
        var tries = 0
        while true {
            tries += 1
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
            guard s == NATS_OK, let msg else {
                return .failed(StoreError("cannot create a NATS message: \(NATSLink.lastError(s))"))
            }
            defer { natsMsg_Destroy(msg) }
            for (k, v) in headers where s == NATS_OK { s = natsMsgHeader_Set(msg, k, v) }
            var ack: UnsafeMutablePointer<jsPubAck>?
            var jerr = jsErrCode(0)
            s = js_PublishMsg(&ack, link.js, msg, nil, &jerr)
            if s == NATS_OK, let ack {
                let seq = ack.pointee.Sequence
                jsPubAck_Destroy(ack)
                return .stored(streamSequence: seq)
            }
            if jerr == JSStreamWrongLastSequenceErr { return .wrongLastSequence }
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
