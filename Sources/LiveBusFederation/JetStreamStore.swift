import CNATS
import Foundation
import LiveBusCore
import LiveBusWire
import Synchronization

/// The bus's store in a NATS JetStream stream, shared by every daemon of a federation (PROTOCOL.md §5.8).
///
/// - Events: one message per event on the topic's subject (``FederationSubjects/event(_:prefix:)``), header
///   `Livebus-Seq` the topic's sequence. The sequence is assigned by optimistic writes: each publish carries
///   `Nats-Expected-Last-Subject-Sequence`, the stream sequence of the topic's newest message this store knows; a
///   writer that lost the race gets JetStream error 10071, reads the subject's last message and tries again with the
///   next sequence. One sequence per topic across the federation, never reused, no gaps.
/// - The retained latest state is the stream's last message per subject; the replay log is the stream's
///   `max_msgs_per_subject` newest messages of a subject; resume records, metadata and each daemon's simulator state
///   (keyed by ``FederationOptions/daemonID``) are the last message of their own subjects (a removed resume record is
///   a `Livebus-Removed` tombstone).
/// - Reads are answered from an in-memory mirror of the stream, loaded at open by an ordered consumer (by stream
///   sequence) and, when following (``startFollowing(post:onEvent:onResume:)``), kept current by that consumer.
///
/// Two ways to run, chosen at open: *inline* (commits block the calling thread until JetStream acknowledges; for
/// tests and tools, one writer) and *following* (the daemon: commits run on the store's writer thread and complete
/// on the loop, every change reaches the mirror in stream order from the consumer, own and other daemons' alike).
///
/// A batch is published in order: JetStream 2.9 has no multi-message transaction. A batch that fails part way
/// reports the failure; the events published before the failure stay stored (and reach subscribers), so a refusal
/// means "not all of it was stored", as a timeout means "not known". The batches committed while the writer is busy
/// are pipelined together, chained with `Nats-Expected-Last-Msg-Id` so JetStream stores a prefix of them; each batch
/// still completes on its own, in order (PROTOCOL.md §5.8 "Batches").
public final class JetStreamStore: EventStore {
    private let link: NATSLink
    private let writer: Writer
    private let mirror = Mirror()
    /// Events kept per topic.
    public let logCapacity: Int
    /// The identity whose simulator state this store writes and reads (``FederationOptions/daemonID``).
    public let daemonID: String
    /// The stream's replicas and placement, as JetStream reported them at open.
    public private(set) var streamReplicas: Int
    private var following: Follower?
    private var pending: [UInt64: (Result<[StoredEvent], StoreError>) -> Void] = [:]
    private var nextBatch: UInt64 = 0
    private var post: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
    /// Called for every event the mirror takes while following, in stream order (the daemon fans it out).
    private var onEvent: ((StoredEvent) -> Void)?
    /// Called for every resume record the mirror takes while following (`nil` record: removed).
    private var onResume: ((String, ResumeRecord?) -> Void)?

    /// Connects, creates or checks the stream, and loads the mirror.
    /// - Parameter options: Servers, stream, replicas, credentials, log capacity.
    /// - Throws: ``FederationError`` when no server answers, JetStream is not enabled, the stream cannot be created
    ///   with the replicas asked for (a single server refuses more than 1), or the existing stream has fewer.
    public init(_ options: FederationOptions) throws(FederationError) {
        logCapacity = max(1, options.logCapacity)
        daemonID = options.daemonID
        link = try NATSLink(options)
        streamReplicas = try Self.ensureStream(link, options, logCapacity: max(1, options.logCapacity))
        // A stream just created (or a cluster just started) answers publishes only once its replicas elected a
        // leader ("No responders" before): wait up to 5 s for one, so the daemon is ready when it says so.
        for _ in 0..<50 {
            if let st = StreamStatus.fetch(link), st.cluster == nil || st.leader != nil { break }
            usleep(100_000)
        }
        writer = try Writer(link: link)
        let loaded = try Follower.load(link)
        for m in loaded.items { mirror.apply(m, capacity: logCapacity) }
        writer.learn(loaded.items)
        mirror.appliedStreamSequence = loaded.lastStreamSequence
    }

    deinit { following?.stop() }

    /// Stops following and closes the connection's subscription (the daemon's shutdown).
    public func close() {
        following?.stop()
        following = nil
    }

    public var isDurable: Bool { true }

    /// While following, every committed event reaches the bus through ``startFollowing(post:onEvent:onResume:)``'s
    /// `onEvent`, in stream order: the daemon does not fan out what a commit returns.
    public var announcesCommittedEvents: Bool { post != nil }

    /// The stream as JetStream last described it (``refreshStatus()``), for `livebus status`.
    public private(set) var lastStatus: StreamStatus?
    /// How many times ``lastStatus`` was read (it only grows): a read counted after the link came back is fresh.
    public private(set) var statusReads: UInt64 = 0
    private let statusQueue = DispatchQueue(label: "livebus.federation.status")
    private var statusInFlight = false

    /// Asks JetStream for the stream's state and its peers on a thread of the store's (one request at a time, at
    /// most the request timeout); ``lastStatus`` changes on the loop thread when it answers. Following only.
    public func refreshStatus() {
        guard let post, !statusInFlight else { return }
        statusInFlight = true
        let box = LoopBound(self)
        let l = link
        statusQueue.async {
            let st = StreamStatus.fetch(l)
            post {
                box.value.statusInFlight = false
                if let st {
                    box.value.lastStatus = st
                    box.value.statusReads += 1
                }
            }
        }
    }

    /// The functions of the store that called libnats on the loop thread (the thread that called
    /// ``startFollowing(post:onEvent:onResume:)``) after it returned: empty, as the loop never waits on libnats' connection
    /// lock (its reconnect thread holds it while dialing, 2 s per attempt during a partition). For tests.
    var libnatsCallsOnLoopThread: [String] { link.loopWatch.callsOnLoopThread }

    /// The link's state now (thread-safe): publishes are refused unless `connected`.
    public var linkState: FederationLinkState { link.state }
    /// The server connected to, or `nil` while reconnecting.
    public var connectedServer: String? { link.connectedURL }
    /// Servers given and discovered.
    public var knownServers: [String] { link.knownServers }
    /// The stream's name.
    public var streamName: String { link.options.stream }
    /// The newest stream sequence the mirror has applied.
    public var appliedStreamSequence: UInt64 { mirror.appliedStreamSequence }

    // MARK: - Commit

    public func commit(_ batch: StoreBatch, completion: @escaping (Result<[StoredEvent], StoreError>) -> Void) {
        let out: [Writer.Out]
        do { out = try Writer.prepare(batch, prefix: link.options.subjectPrefix, daemon: daemonID) } catch {
            completion(.failure(error))
            return
        }
        if out.isEmpty {
            completion(.success([]))
            return
        }
        guard let post else {
            // Inline: publish on this thread, then apply to the mirror at once (a single writer).
            let r = writer.publish(out)
            if case .success(let done) = r {
                for m in done.applied { mirror.apply(m, capacity: logCapacity) }
            }
            completion(r.map(\.events))
            return
        }
        guard link.state == .connected else {
            completion(.failure(Self.unavailable))
            return
        }
        nextBatch += 1
        let id = nextBatch
        pending[id] = completion
        let box = LoopBound(self)
        writer.enqueue(out) { r in post { box.value.finish(id, r.map(\.events)) } }
    }

    /// The refusal while NATS is lost.
    static let unavailable = StoreError(
        "federationUnavailable: the daemon has lost its NATS JetStream cluster and is reconnecting; nothing was stored"
    )

    private func finish(_ id: UInt64, _ r: Result<[StoredEvent], StoreError>) {
        pending.removeValue(forKey: id)?(r)
    }

    // MARK: - Reads (the mirror)

    public func latest(topic: String) -> StoredEvent? { mirror.logs[topic]?.newest }

    public func events(topic: String, from: UInt64, limit: Int) -> [StoredEvent]? {
        guard let t = mirror.logs[topic] else { return from <= 1 ? [] : nil }
        return t.events(from: from, limit: limit)
    }

    public var topics: [String] { mirror.logs.keys.sorted() }

    public func resumeRecords() -> [ResumeRecord] {
        mirror.resume.values.sorted { ($0.ms, $0.order) > ($1.ms, $1.order) }.map(\.record)
    }

    public func meta(_ key: String) -> String? { mirror.meta[key] }

    /// This daemon's simulator state (``daemonID``'s), never another daemon's.
    public func simulatorState() -> Data? { mirror.simulators[daemonID] }

    // MARK: - Following

    /// Follows the stream from after the loaded mirror: every message (this daemon's and every other's) reaches
    /// the mirror in stream order on the loop thread, and commits run on the store's writer thread.
    /// - Parameters:
    ///   - post: Runs a closure on the loop thread (the daemon's `uv_async` handle, ``LoopHandle``).
    ///   - onEvent: Each event the mirror takes, in stream order (on the loop thread).
    ///   - onResume: Each resume record saved (`nil`: removed) by any daemon, on the loop thread.
    /// - Throws: ``FederationError`` when the stream's consumer cannot be created.
    public func startFollowing(
        post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        onEvent: @escaping (StoredEvent) -> Void,
        onResume: @escaping (String, ResumeRecord?) -> Void
    ) throws(FederationError) {
        self.post = post
        self.onEvent = onEvent
        self.onResume = onResume
        let box = LoopBound(self)
        following = try Follower.start(link, after: mirror.appliedStreamSequence) { items in
            post { box.value.take(items) }
        }
        // From here on the calling thread is the loop's: nothing on it may call libnats (its consumer was made
        // above, once, as the store opened).
        link.loopWatch.setLoopThread()
    }

    private func take(_ items: [Follower.Item]) {
        for m in items where m.streamSequence > mirror.appliedStreamSequence {
            let took = mirror.apply(m, capacity: logCapacity)
            mirror.appliedStreamSequence = m.streamSequence
            switch m.kind {
            case .event(let e): if took { onEvent?(e) }
            case .resume(let token, let r, _): onResume?(token, r)
            default: break
            }
        }
        writer.learn(items)
    }

    // MARK: - Stream

    private static func ensureStream(_ link: NATSLink, _ o: FederationOptions, logCapacity: Int)
        throws(FederationError) -> Int
    {
        var jerr = jsErrCode(0)
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var s = js_GetStreamInfo(&si, link.js, o.stream, nil, &jerr)
        if s == NATS_OK, let si {
            defer { jsStreamInfo_Destroy(si) }
            let have = Int(si.pointee.Config.pointee.Replicas)
            if have < o.replicas {
                throw FederationError(
                    "the JetStream stream \(o.stream) has \(have) replica\(have == 1 ? "" : "s"); --federate-replicas asks for \(o.replicas): an acknowledged publish would be on fewer servers than required. Recreate the stream with \(o.replicas) replicas (nats stream edit \(o.stream) --replicas \(o.replicas)) or lower --federate-replicas"
                )
            }
            if si.pointee.Config.pointee.MaxMsgsPerSubject != Int64(logCapacity) {
                var cfg = si.pointee.Config.pointee
                cfg.MaxMsgsPerSubject = Int64(logCapacity)
                var updated: UnsafeMutablePointer<jsStreamInfo>?
                s = js_UpdateStream(&updated, link.js, &cfg, nil, &jerr)
                if let updated { jsStreamInfo_Destroy(updated) }
                guard s == NATS_OK else {
                    throw FederationError(
                        "cannot set the stream \(o.stream)'s max_msgs_per_subject to \(logCapacity): \(NATSLink.lastError(s))"
                    )
                }
            }
            return have
        }
        guard jerr == JSStreamNotFoundErr || s == NATS_NOT_FOUND else {
            throw FederationError(
                "cannot read the JetStream stream \(o.stream): \(NATSLink.lastError(s)) (JetStream error \(jerr.rawValue)); is JetStream enabled on the servers (nats-server -js)?"
            )
        }
        var cfg = jsStreamConfig()
        jsStreamConfig_Init(&cfg)
        let subject = strdup(o.subjectPrefix + ".>")
        defer { free(subject) }
        var subjects: [UnsafePointer<CChar>?] = [UnsafePointer(subject)]
        let created: natsStatus = o.stream.withCString { name in
            subjects.withUnsafeMutableBufferPointer { buf in
                cfg.Name = name
                cfg.Subjects = buf.baseAddress
                cfg.SubjectsLen = 1
                cfg.Storage = js_FileStorage
                cfg.Replicas = Int64(o.replicas)
                cfg.MaxMsgsPerSubject = Int64(logCapacity)
                cfg.Discard = js_DiscardOld
                cfg.Duplicates = 120_000_000_000  // 2 min of Nats-Msg-Id deduplication, nanoseconds
                var made: UnsafeMutablePointer<jsStreamInfo>?
                let r = js_AddStream(&made, link.js, &cfg, nil, &jerr)
                if let made { jsStreamInfo_Destroy(made) }
                return r
            }
        }
        guard created == NATS_OK else {
            // JetStream puts each replica on a server of its own: say how many servers this cluster has (the ones
            // libnats knows, given and discovered), so the advice fits it (review 2026-12-03: 5 replicas asked of
            // 3 servers were told "a single server holds 1 replica").
            let servers = NATSLink.servers(link.nc).count
            let advice =
                servers <= 1
                ? "a single server holds 1 replica: pass --federate-replicas 1, or run a cluster (tools/nats-cluster start runs 3 servers)"
                : "JetStream keeps each replica on a server of its own and this cluster has \(servers) servers: pass --federate-replicas \(min(servers, o.replicas - 1)) or fewer, or add servers to the cluster"
            throw FederationError(
                "cannot create the JetStream stream \(o.stream) with \(o.replicas) replica\(o.replicas == 1 ? "" : "s"): \(NATSLink.lastError(created)) (JetStream error \(jerr.rawValue)); \(advice)"
            )
        }
        return o.replicas
    }
}

/// A reference handed across threads that is only dereferenced on the loop thread (the `post` closure runs there).
struct LoopBound<T: AnyObject>: @unchecked Sendable {
    // @unchecked: `value` is read only inside closures the daemon's loop runs on its own thread.
    let value: T
    init(_ value: T) { self.value = value }
}

// MARK: - The mirror (loop thread)

/// The stream's content as the store reads it: a ring per topic, resume records, metadata, simulator state.
final class Mirror {
    final class TopicLog {
        var ring: [StoredEvent] = []
        var head = 0
        var next: UInt64 { newest.map { $0.sequence + 1 } ?? 1 }
        var oldest: StoredEvent? { ring.isEmpty ? nil : ring[head] }
        var newest: StoredEvent? { ring.isEmpty ? nil : ring[(head + ring.count - 1) % ring.count] }

        func append(_ e: StoredEvent, capacity: Int) {
            if let n = newest, e.sequence != n.sequence + 1 {
                // A jump (events trimmed before the consumer read them): the log restarts at this event.
                ring = []
                head = 0
            }
            if ring.count < capacity {
                ring.append(e)
            } else {
                ring[head] = e
                head = (head + 1) % capacity
            }
        }

        func events(from: UInt64, limit: Int) -> [StoredEvent]? {
            if from >= next { return [] }
            guard let first = oldest, first.sequence <= max(from, 1) else { return nil }
            let start = Int(max(from, 1) - first.sequence)
            let end = start + min(max(0, limit), ring.count - start)
            return (start..<end).map { ring[(head + $0) % ring.count] }
        }
    }

    var logs: [String: TopicLog] = [:]
    var resume: [String: (record: ResumeRecord, ms: Int64, order: UInt64)] = [:]
    var meta: [String: String] = [:]
    /// Each daemon's simulator state, by ``FederationOptions/daemonID``.
    var simulators: [String: Data] = [:]
    var appliedStreamSequence: UInt64 = 0

    /// Applies one message. - Returns: `true` when it was an event the mirror did not hold yet.
    @discardableResult
    func apply(_ m: Follower.Item, capacity: Int) -> Bool {
        switch m.kind {
        case .event(let e):
            let t: TopicLog
            if let existing = logs[e.topic] {
                t = existing
            } else {
                t = TopicLog()
                logs[e.topic] = t
            }
            if let n = t.newest, e.sequence <= n.sequence { return false }
            t.append(e, capacity: capacity)
            return true
        case .resume(let token, let r, let ms):
            if let r { resume[token] = (r, ms, m.streamSequence) } else { resume[token] = nil }
        case .meta(let k, let v): meta[k] = v
        case .simulator(let daemon?, let d): simulators[daemon] = d
        case .simulator(nil, _): break
        case .unknown: break
        }
        return false
    }
}

/// The stream's state and its replicas' as JetStream reports them (`js_GetStreamInfo`).
public struct StreamStatus: Sendable {
    /// One replica of the stream.
    public struct Peer: Sendable {
        /// The server's name.
        public var name: String
        /// Whether it holds everything the leader does.
        public var current: Bool
        /// Whether the leader cannot reach it.
        public var offline: Bool
        /// Operations it is behind the leader.
        public var lag: UInt64
        /// Milliseconds since the leader last heard from it.
        public var activeMilliseconds: Int64
    }
    /// Messages in the stream.
    public var messages: UInt64
    /// The newest stream sequence.
    public var lastSequence: UInt64
    /// Replicas configured.
    public var replicas: Int
    /// The cluster's name, if clustered.
    public var cluster: String?
    /// The server leading the stream, if clustered.
    public var leader: String?
    /// The other replicas.
    public var peers: [Peer]
    /// When it was read, milliseconds since 1970 (the host's wall clock; shown as an age only).
    public var readAtMilliseconds: Int64

    static func fetch(_ link: NATSLink) -> StreamStatus? {
        link.offLoop("StreamStatus.fetch")
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var jerr = jsErrCode(0)
        guard js_GetStreamInfo(&si, link.js, link.options.stream, nil, &jerr) == NATS_OK, let si else { return nil }
        defer { jsStreamInfo_Destroy(si) }
        let i = si.pointee
        var peers: [Peer] = []
        var cluster: String?
        var leader: String?
        if let c = i.Cluster {
            cluster = c.pointee.Name.map { String(cString: $0) }
            leader = c.pointee.Leader.map { String(cString: $0) }
            for k in 0..<Int(c.pointee.ReplicasLen) {
                guard let p = c.pointee.Replicas[k] else { continue }
                peers.append(
                    Peer(
                        name: p.pointee.Name.map { String(cString: $0) } ?? "?",
                        current: p.pointee.Current,
                        offline: p.pointee.Offline,
                        lag: p.pointee.Lag,
                        activeMilliseconds: p.pointee.Active / 1_000_000
                    )
                )
            }
        }
        return StreamStatus(
            messages: i.State.Msgs,
            lastSequence: i.State.LastSeq,
            replicas: Int(i.Config.pointee.Replicas),
            cluster: cluster,
            leader: leader,
            peers: peers,
            readAtMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)
        )
    }
}
