import CNATS
import Foundation

/// Where and how to reach the federation's NATS servers, and the stream the bus keeps there.
public struct FederationOptions: Sendable {
    /// Server URLs, `nats://HOST:PORT` (or `tls://…`), tried in order; others the cluster advertises are added.
    public var servers: [String]
    /// The JetStream stream: default `LIVEBUS`.
    public var stream: String = "LIVEBUS"
    /// The first token of every subject the bus writes: default `livebus` (``FederationSubjects``).
    public var subjectPrefix: String = "livebus"
    /// The replicas the stream must have (a new stream is created with them; an existing one with fewer is
    /// refused). Default 3, a quorum that survives one NATS node. Flag `--federate-replicas`.
    public var replicas: Int = 3
    /// A `.creds` file (user JWT and nkey seed) for servers that require it. Flag `--federate-creds`.
    public var credentialsFile: String?
    /// A user nkey seed file (`SU…`) and the public key derived from it, for servers whose `authorization` lists
    /// nkey users. Flag `--federate-nkey` (not with ``credentialsFile``: libnats signs in one way).
    public var nkey: (file: String, seed: NKeyUserSeed)?
    /// A PEM file of the CA that signed the servers' TLS certificates. Flag `--federate-ca`.
    public var caFile: String?
    /// Events kept per topic (the stream's `max_msgs_per_subject`).
    public var logCapacity: Int = 1024
    /// How long one request (a publish's acknowledgement, a stream lookup) may take, milliseconds. Default 5 s.
    public var requestTimeoutMilliseconds: Int64 = 5000
    /// The connection's name in the servers' monitoring (`connz`).
    public var connectionName: String = "livebusd"
    /// This daemon's identity in the federation, stable across its restarts (the daemon keeps it in its data
    /// directory): its simulator state is on a subject of its own (``FederationSubjects/simulator(prefix:daemon:)``),
    /// so daemons that each run a simulator never overwrite one another's. Default `livebusd` (one writer: tools, tests).
    public var daemonID: String = "livebusd"

    /// Creates options for `servers` with the documented defaults.
    /// - Parameter servers: Server URLs.
    public init(servers: [String]) { self.servers = servers }

    /// Parses `--federate`'s value: comma-separated `nats://HOST:PORT` URLs.
    /// - Parameter value: The flag's value.
    /// - Returns: The URLs.
    /// - Throws: ``FederationError`` naming the entry that is not a NATS URL.
    public static func parseServers(_ value: String) throws(FederationError) -> [String] {
        let parts = value.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !parts.isEmpty, !parts.contains(where: \.isEmpty) else {
            throw FederationError(
                "--federate '\(value)' has an empty entry; give nats://HOST:PORT[,nats://HOST:PORT…]"
            )
        }
        for p in parts {
            guard let u = URLComponents(string: p), let scheme = u.scheme, ["nats", "tls"].contains(scheme),
                u.host?.isEmpty == false, u.port != nil
            else {
                throw FederationError(
                    "--federate entry '\(p)' is not nats://HOST:PORT (or tls://HOST:PORT); e.g. nats://127.0.0.1:4222"
                )
            }
        }
        return parts
    }
}

/// A failure to reach or use the federation, with what to do.
public struct FederationError: Error, Sendable, CustomStringConvertible {
    /// What failed and what to do.
    public var message: String
    /// The servers answered and refused the credentials (`--federate-creds`, `--federate-nkey`): waiting does not
    /// help, so the daemon exits 2 even with `--federate-optional`.
    public var credentialsRefused = false
    /// Creates an error.
    public init(_ message: String, credentialsRefused: Bool = false) {
        self.message = message
        self.credentialsRefused = credentialsRefused
    }
    public var description: String { message }
}

/// The state of the link to NATS, as libnats reports it.
public enum FederationLinkState: String, Sendable {
    /// Connected: publishes are taken.
    case connected
    /// Lost and reconnecting (libnats retries every 250 ms): publishes are refused.
    case reconnecting
    /// Closed (shutdown).
    case closed
}

/// One libnats connection and its JetStream context, used from the store's threads (libnats connections are
/// thread-safe: nats.c README "thread safe"; the synchronous API blocks only the calling thread).
///
/// The libuv adapter (`nats/adapters/libuv.h`) is not used: in nats.c 3.4.x it drives the socket from the loop and
/// has open crash and reconnect-loop reports when a server stops answering (SIGSTOP); here a frozen server only
/// times out requests on the store's own threads. Source: ISSUE-19 "Failures".
final class NATSLink: @unchecked Sendable {
    // @unchecked: `nc` and `js` are set once in init and freed in deinit; libnats itself locks them.
    let nc: OpaquePointer
    let js: OpaquePointer
    let options: FederationOptions
    /// The state, server and server list as libnats' connection callbacks last reported them: read without libnats'
    /// connection lock, which its reconnect thread holds while it dials (up to the 2 s connect timeout per server,
    /// a partitioned daemon's every attempt), so that the loop thread never waits on it.
    private let seen = SeenState()
    /// The thread that must never call libnats once set (the daemon's loop, ``JetStreamStore/startFollowing``), and
    /// the calls it made anyway: every function of this module that calls a libnats function taking the connection
    /// lock notes itself here first (``offLoop(_:)``).
    let loopWatch = LoopThreadWatch()

    /// Connects to the first server that answers.
    /// - Throws: ``FederationError`` naming the servers and libnats' reason.
    init(_ options: FederationOptions) throws(FederationError) {
        self.options = options
        var opts: OpaquePointer?
        guard natsOptions_Create(&opts) == NATS_OK, let opts else {
            throw FederationError("cannot create the NATS options (out of memory)")
        }
        defer { natsOptions_Destroy(opts) }
        var s = NATS_OK
        let cStrings = options.servers.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        var ptrs: [UnsafePointer<CChar>?] = cStrings.map { UnsafePointer($0) }
        s = ptrs.withUnsafeMutableBufferPointer { natsOptions_SetServers(opts, $0.baseAddress, Int32($0.count)) }
        if s == NATS_OK { s = natsOptions_SetName(opts, options.connectionName) }
        if s == NATS_OK { s = natsOptions_SetTimeout(opts, 2000) }
        if s == NATS_OK { s = natsOptions_SetAllowReconnect(opts, true) }
        if s == NATS_OK { s = natsOptions_SetMaxReconnect(opts, -1) }
        if s == NATS_OK { s = natsOptions_SetReconnectWait(opts, 250) }
        // A server that stops answering (SIGSTOP, a partition) is noticed within 2 × 1 s.
        if s == NATS_OK { s = natsOptions_SetPingInterval(opts, 1000) }
        if s == NATS_OK { s = natsOptions_SetMaxPingsOut(opts, 2) }
        // The callbacks run on libnats' callback thread, without its connection lock. libnats may call the closed
        // callback after deinit's close returns, so the callbacks hold a reference of their own to `seen` that is
        // never released (a few bytes per link; a daemon makes one).
        let closure = Unmanaged.passRetained(seen).toOpaque()
        if s == NATS_OK {
            s = natsOptions_SetDisconnectedCB(opts, { _, c in SeenState.from(c).set(.reconnecting, nil) }, closure)
        }
        if s == NATS_OK {
            s = natsOptions_SetReconnectedCB(
                opts,
                { nc, c in
                    guard let nc else { return }
                    SeenState.from(c).set(.connected, NATSLink.connectedURL(nc), servers: NATSLink.servers(nc))
                },
                closure
            )
        }
        if s == NATS_OK {
            s = natsOptions_SetDiscoveredServersCB(
                opts,
                { nc, c in
                    guard let nc else { return }
                    SeenState.from(c).setServers(NATSLink.servers(nc))
                },
                closure
            )
        }
        if s == NATS_OK { s = natsOptions_SetClosedCB(opts, { _, c in SeenState.from(c).set(.closed, nil) }, closure) }
        if s == NATS_OK, let creds = options.credentialsFile {
            s = natsOptions_SetUserCredentialsFromFiles(opts, creds, nil)
            if s != NATS_OK {
                throw FederationError(
                    "--federate-creds \(creds): \(Self.lastError(s)); give a .creds file (user JWT and seed)"
                )
            }
        }
        if s == NATS_OK, let (file, seed) = options.nkey {
            s = natsOptions_SetNKeyFromSeed(opts, seed.publicKey, file)
            if s != NATS_OK {
                throw FederationError("--federate-nkey \(file): \(Self.lastError(s)); give a user nkey seed file (SU…)")
            }
        }
        if s == NATS_OK, let ca = options.caFile {
            s = natsOptions_LoadCATrustedCertificates(opts, ca)
            if s != NATS_OK {
                throw FederationError("--federate-ca \(ca): \(Self.lastError(s)); give a PEM file of the servers' CA")
            }
            s = natsOptions_SetSecure(opts, true)
        }
        guard s == NATS_OK else { throw FederationError("cannot set the NATS options: \(Self.lastError(s))") }
        var conn: OpaquePointer?
        s = natsConnection_Connect(&conn, opts)
        guard s == NATS_OK, let conn else {
            if s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED {
                throw FederationError(Self.refusal(options, Self.lastError(s)), credentialsRefused: true)
            }
            throw FederationError(
                "cannot reach NATS at \(options.servers.joined(separator: ",")): \(Self.lastError(s)); start the cluster (tools/nats-cluster start) or add --federate-optional to run alone and join later"
            )
        }
        var jsOpts = jsOptions()
        jsOptions_Init(&jsOpts)
        jsOpts.Wait = options.requestTimeoutMilliseconds
        var ctx: OpaquePointer?
        s = natsConnection_JetStream(&ctx, conn, &jsOpts)
        guard s == NATS_OK, let ctx else {
            natsConnection_Destroy(conn)
            throw FederationError("cannot open JetStream on \(options.servers[0]): \(Self.lastError(s))")
        }
        nc = conn
        js = ctx
        seen.setInitial(Self.connectedURL(conn), servers: Self.servers(conn))
    }

    deinit {
        jsCtx_Destroy(js)
        natsConnection_Close(nc)
        natsConnection_Destroy(nc)
    }

    /// The link's state now (thread-safe, never waits on libnats' connection lock): as its callbacks reported it.
    var state: FederationLinkState { seen.snapshot.state }

    /// The URL of the server connected to, or `nil` while reconnecting (as the callbacks reported it).
    var connectedURL: String? { seen.snapshot.url }

    /// The servers libnats knows (given and discovered from the cluster), as of the last (re)connect or discovery.
    var knownServers: [String] { seen.snapshot.servers }

    /// Notes that the calling thread is about to call libnats functions that take the connection lock (which the
    /// reconnect thread holds while it dials: up to 2 s per attempt during a partition).
    /// - Parameter what: The calling function, as ``LoopThreadWatch/callsOnLoopThread`` names it.
    func offLoop(_ what: StaticString) { loopWatch.note(what) }

    /// libnats' connected URL (takes its connection lock: not for the loop thread; libnats' callback thread).
    static func connectedURL(_ nc: OpaquePointer) -> String? {
        var buf = [CChar](repeating: 0, count: 256)
        guard natsConnection_GetConnectedUrl(nc, &buf, buf.count) == NATS_OK, buf[0] != 0 else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// libnats' server list (takes its connection lock: not for the loop thread; libnats' callback thread).
    static func servers(_ nc: OpaquePointer) -> [String] {
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        var count: Int32 = 0
        guard natsConnection_GetServers(nc, &list, &count) == NATS_OK, let list else { return [] }
        var out: [String] = []
        for i in 0..<Int(count) {
            if let p = list[i] {
                out.append(String(cString: p))
                free(p)
            }
        }
        free(list)
        return out
    }

    /// What libnats' connection callbacks last reported, behind a lock of its own that no blocking call holds.
    final class SeenState: @unchecked Sendable {
        // @unchecked: every field is read and written under `lock`.
        private let lock = NSLock()
        private var state = FederationLinkState.reconnecting
        private var url: String?
        private var servers: [String] = []
        private var reported = false

        static func from(_ closure: UnsafeMutableRawPointer?) -> SeenState {
            Unmanaged<SeenState>.fromOpaque(closure!).takeUnretainedValue()
        }

        func set(_ s: FederationLinkState, _ u: String?, servers list: [String]? = nil) {
            lock.lock()
            defer { lock.unlock() }
            // A closed connection stays closed (a late disconnected callback does not reopen it).
            guard state != .closed else { return }
            reported = true
            state = s
            url = u
            if let list { servers = list }
        }

        /// Connected, once the first connect returned, unless a callback has already said otherwise.
        func setInitial(_ u: String?, servers list: [String]) {
            lock.lock()
            defer { lock.unlock() }
            if !reported {
                state = .connected
                url = u
            }
            if servers.isEmpty { servers = list }
        }

        func setServers(_ list: [String]) {
            lock.lock()
            defer { lock.unlock() }
            servers = list
        }

        var snapshot: (state: FederationLinkState, url: String?, servers: [String]) {
            lock.lock()
            defer { lock.unlock() }
            return (state, url, servers)
        }
    }

    /// The loop thread of a following store and the libnats calls made on it (none, by design: PROTOCOL.md §5.8).
    /// A `pthread_t` comparison under a lock of its own per noted call, beside a network round trip.
    final class LoopThreadWatch: @unchecked Sendable {
        // @unchecked: every field is read and written under `lock`.
        private let lock = NSLock()
        private var loop: pthread_t?
        private var calls: [String] = []

        /// Makes the calling thread the loop thread.
        func setLoopThread() { lock.withLock { loop = pthread_self() } }

        /// Records `what` when the calling thread is the loop thread.
        func note(_ what: StaticString) {
            lock.withLock {
                guard let loop, pthread_equal(loop, pthread_self()) != 0 else { return }
                calls.append("\(what)")
            }
        }

        /// The functions that called libnats on the loop thread, in order (empty unless a regression).
        var callsOnLoopThread: [String] { lock.withLock { calls } }
    }

    /// What to say when the servers refused to sign the daemon in.
    static func refusal(_ o: FederationOptions, _ reason: String) -> String {
        let at = o.servers.joined(separator: ",")
        if let (file, seed) = o.nkey {
            return
                "NATS at \(at) refused the nkey of --federate-nkey \(file) (public key \(seed.publicKey)): \(reason); give the seed of a user the server lists, or list this public key in its authorization { users: [{ nkey: \(seed.publicKey) }] }"
        }
        if let creds = o.credentialsFile {
            return
                "NATS at \(at) refused the user of --federate-creds \(creds): \(reason); give a .creds file of a user its account holds"
        }
        return
            "NATS at \(at) asks for credentials: \(reason); give --federate-nkey FILE (an nkey user's seed) or --federate-creds FILE (a JWT user)"
    }

    /// libnats' text for `s`, with its last error detail when there is one.
    static func lastError(_ s: natsStatus) -> String {
        var st = s
        if let p = nats_GetLastError(&st), p.pointee != 0 { return String(cString: p) }
        return String(cString: natsStatus_GetText(s))
    }
}
