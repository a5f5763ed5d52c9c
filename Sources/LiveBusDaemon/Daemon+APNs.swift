import Foundation
import LiveBusAPNs
import LiveBusAPNsServer
import LiveBusClock
import LiveBusLoop
import LiveBusScheduler
import LiveBusWire

/// The APNs-compatible endpoint's settings (`livebusd --apns …`, issue 17).
public struct APNsOptions: Sendable {
    /// Host of the TCP listener (`--apns HOST:PORT`); `nil`: no TCP listener.
    public var host: String?
    /// Its port; 0 lets the kernel choose (the chosen port is logged).
    public var port: Int = 0
    /// `true`: the TCP listener speaks TLS (ALPN `h2`) with a certificate of LiveBus's CA; `false`
    /// (`--apns-h2c`): plaintext HTTP/2 with prior knowledge.
    public var tls: Bool = true
    /// A Unix socket path for `h2c` (`--apns-socket`); `nil`: none.
    public var socketPath: String?
    /// Bind a non-loopback TCP address (`--apns-allow-remote`); refused otherwise.
    public var allowRemote: Bool = false
    /// The team's key (`--apns-key FILE.p8`, or a public key PEM), its text; `nil`: any well-formed token passes.
    public var keyPEM: String?
    /// `--apns-team-id`: the `iss` tokens must carry (with a key).
    public var teamID: String?
    /// `--apns-key-id`: the `kid` tokens must carry (with a key).
    public var keyID: String?
    /// `--apns-unregistered-delay`: milliseconds after a token stops before 410 is answered (ours: 0).
    public var unregisteredDelayMilliseconds: Int64 = 0
    /// Where the CA lives (`--apns-ca-dir`); `nil`: the data directory, else a new temporary directory.
    public var caDirectory: String?
    /// Per-connection limits.
    public var limits = HTTP2Limits()

    /// Whether any listener is asked for.
    public var isEnabled: Bool { host != nil || socketPath != nil }

    /// Creates the defaults (no endpoint).
    public init() {}
}

/// The daemon's APNs endpoint: its server, validator and log.
final class DaemonAPNs {
    /// A push waiting in a session's refresh scheduler: the relay arguments and its expiry rule.
    struct Pending {
        var args: [String: JSONValue]
        var pushID: String
        var offeredAt: ServerInstant
        /// `apns-expiration` in Unix seconds (0: now or never).
        var expirationSeconds: Int64?
    }
    /// Pushes queued in schedulers, by coalescing key (the collapse id, else the push id).
    var pending: [String: Pending] = [:]
    /// Per-phone sequence of its APNs pushes (the scheduler orders a topic by sequence).
    var sequences: [String: UInt64] = [:]
    let server: APNsServer
    var validator: APNsValidator
    /// The TCP port listened on, once started.
    var port: Int?
    /// The CA certificate's path (TLS).
    var caPath: String?

    init(server: APNsServer, validator: APNsValidator) {
        self.server = server
        self.validator = validator
    }
}

extension Daemon {
    /// Starts the APNs endpoint when `options.apns` asks for one; logs where it listens, the CA path and whether
    /// provider tokens are verified.
    /// - Throws: ``DaemonError`` naming the flag and what is wrong (a non-loopback address, a bad key, a port in use).
    func startAPNs() throws(DaemonError) {
        let o = options.apns
        guard o.isEnabled else { return }
        guard let uvLoop else {
            throw DaemonError("--apns: the endpoint serves from the libuv loop; an embedded daemon has none")
        }
        var verifier = ProviderTokenVerifier()
        if let pem = o.keyPEM {
            do { verifier.key = try ProviderKey(pem: pem) } catch {
                throw DaemonError("--apns-key: \(error.description)")
            }
            verifier.teamID = o.teamID
            verifier.keyID = o.keyID
        }
        var tlsContext: TLSServerContext?
        var caPath: String?
        if o.host != nil, o.tls {
            let dir =
                o.caDirectory ?? options.dataDirectory
                ?? (NSTemporaryDirectory() + "livebus-apns-\(getpid())")
            do {
                let prepared = try LocalCertificateAuthority.prepare(directory: dir, hostNames: [o.host!])
                tlsContext = try TLSServerContext(identity: prepared.identity)
                caPath = prepared.caPath
            } catch {
                throw DaemonError("--apns: cannot prepare the TLS certificate: \(error.description)")
            }
        }
        let server = APNsServer(loop: uvLoop, limits: o.limits, tls: tlsContext)
        let endpoint = DaemonAPNs(
            server: server,
            validator: APNsValidator(verifier: verifier, unregisteredDelayMilliseconds: o.unregisteredDelayMilliseconds)
        )
        endpoint.caPath = caPath
        server.onLog = { [unowned self] line in self.logger.log(.notice, line) }
        server.onRequest = { [unowned self, unowned endpoint] request, respond in
            respond(self.answerAPNs(request, endpoint: endpoint))
        }
        if let host = o.host {
            guard o.allowRemote || TCPListener.isLoopback(host) else {
                throw DaemonError(
                    "--apns \(host):\(o.port): not a loopback address; the endpoint binds 127.0.0.1 or ::1 unless --apns-allow-remote is given"
                )
            }
            do { endpoint.port = try server.listenTCP(host: host, port: o.port, tls: o.tls) } catch {
                throw DaemonError("--apns: cannot listen on \(host):\(o.port): \(error)")
            }
        }
        if let path = o.socketPath {
            // A socket file left by a daemon killed with -9 is removed, a live or another user's one refused (as
            // the bus socket: Daemon.clearSocketPath).
            do { try Daemon.clearSocketPath(path, logger: logger) } catch {
                server.close()
                throw DaemonError("--apns-socket: \(error.message)")
            }
            do { try server.listenUnix(path: path) } catch {
                server.close()
                throw DaemonError("--apns-socket: cannot listen on \(path): \(error)")
            }
        }
        apns = endpoint
        var meta: [(String, String)] = []
        if let host = o.host, let port = endpoint.port {
            let shown = host.contains(":") ? "[\(host)]" : host
            meta.append(("url", "\(o.tls ? "https" : "http")://\(shown):\(port)"))
            meta.append(("protocol", o.tls ? "h2 (TLS, ALPN h2)" : "h2c (prior knowledge)"))
        }
        if let path = o.socketPath { meta.append(("socket", path + " (h2c)")) }
        if let caPath { meta.append(("ca", caPath)) }
        meta.append(
            (
                "provider_tokens",
                o.keyPEM == nil
                    ? "no key configured: any well-formed token is accepted" : "verified (ES256, iss, kid, iat ≤ 1 h)"
            )
        )
        logger.log(.notice, "apns endpoint listening", meta)
    }

    /// Stops the APNs endpoint (listeners and connections).
    func stopAPNs() {
        apns?.server.close()
        apns = nil
    }

    /// The answer to one provider-API request: APNs's validation, then delivery.
    func answerAPNs(_ request: APNsRequest, endpoint: DaemonAPNs) -> APNsResponse {
        let now = clock.now()
        let uniqueID = UUID().uuidString.lowercased()
        let verdict = endpoint.validator.validate(request, at: now, newID: { UUID().uuidString }) { token in
            self.apnsTokenStatus(token)
        }
        switch verdict.result {
        case .failure(let rejection):
            logger.info(
                "apns push refused",
                [
                    ("apns_id", verdict.apnsID), ("status", "\(rejection.reason.status)"),
                    ("reason", rejection.reason.rawValue), ("message", rejection.message),
                ]
            )
            return .failure(rejection, apnsID: verdict.apnsID, uniqueID: uniqueID)
        case .success(let push):
            guard case .device(let token) = push.route, let (phone, order) = apnsActivity(forToken: token) else {
                // Broadcasts: no channel exists yet (channel management is still to come), so none is known.
                let rejection = APNsRejection(
                    .badChannelId,
                    "no channel \(push.channelID ?? "") exists for \(push.bundleID): LiveBus has no channel management yet"
                )
                logger.info("apns push refused", [("apns_id", push.apnsID), ("reason", rejection.reason.rawValue)])
                return .failure(rejection, apnsID: push.apnsID, uniqueID: uniqueID)
            }
            var args: [String: JSONValue] = [
                "session": .string(phone.name), "order": .string(order),
                "payload": .string(String(decoding: push.body, as: UTF8.self)), "apnsID": .string(push.apnsID),
                "priority": .number(Double(push.priority)),
            ]
            if let c = push.collapseID { args["collapseID"] = .string(c) }
            if let e = push.expirationSeconds { args["expiration"] = .number(Double(e)) }
            pushCounter += 1
            let pushID = "p\(pushCounter)"
            args["pushID"] = .string(pushID)
            logger.info(
                "apns push accepted",
                [
                    ("apns_id", push.apnsID), ("push_id", pushID), ("session.name", phone.name), ("order", order),
                    ("priority", "\(push.priority)"),
                ]
            )
            if verdict.noPhoneHoldsToken {
                // Apple answers 200 for a while after a token stops; the push reaches nobody, and says so.
                recordAPNsVerdict(
                    pushID,
                    phone,
                    order,
                    "unregistered",
                    "no phone holds token \(token): its activity ended; 410 Unregistered follows once --apns-unregistered-delay has passed"
                )
                return .success(apnsID: push.apnsID, uniqueID: uniqueID, extraHeaders: [("livebus-push-id", pushID)])
            }
            offerAPNsPush(push, args: args, pushID: pushID, to: phone, endpoint: endpoint)
            return .success(apnsID: push.apnsID, uniqueID: uniqueID, extraHeaders: [("livebus-push-id", pushID)])
        }
    }

    /// The topic prefix of APNs pushes in a session's refresh scheduler (`apns/<order>`).
    static let apnsTopicPrefix = "apns/"

    /// Offers an accepted push to the phone's refresh scheduler, as the bus's own updates are: priority 10 draws
    /// on the phone's budget when it is not in the foreground, priority 5 waits for an opportunity, a later push
    /// with the same `apns-collapse-id` replaces one still queued (the coalescing key). What is released now is
    /// relayed to the phone (the same path as `livebus push`); what waits is logged with the scheduler's hold.
    func offerAPNsPush(_ push: APNsPush, args: [String: JSONValue], pushID: String, to s: Session, endpoint: DaemonAPNs)
    {
        let order = args["order"]?.stringValue ?? ""
        let now = clock.now()
        let pending = DaemonAPNs.Pending(
            args: args,
            pushID: pushID,
            offeredAt: now,
            expirationSeconds: push.expirationSeconds
        )
        guard s.scheduler != nil else {
            startRelay(CommandBody(command: "push", args: args), id: 0, admin: nil, targets: [s])
            return
        }
        let key = Daemon.apnsTopicPrefix + order + "#" + (push.collapseID.map { "collapse:" + $0 } ?? pushID)
        if let replaced = endpoint.pending[key] {
            logger.info(
                "apns push replaced while queued",
                [("push_id", replaced.pushID), ("by", pushID), ("collapse_id", push.collapseID ?? "")]
            )
            recordAPNsVerdict(
                replaced.pushID,
                s,
                order,
                "collapsed",
                "replaced by \(pushID) with the same apns-collapse-id before delivery"
            )
        }
        endpoint.pending[key] = pending
        let seq = (endpoint.sequences[s.id] ?? 0) + 1
        endpoint.sequences[s.id] = seq
        let isEnd =
            (try? JSONSerialization.jsonObject(with: Data(push.body)) as? [String: Any])
            .flatMap { $0["aps"] as? [String: Any] }?["event"] as? String == "end"
        let u = PendingUpdate(
            topic: Daemon.apnsTopicPrefix + order,
            sequence: seq,
            priority: push.priority,
            isTerminal: isEnd,
            coalescingKey: key,
            serverTimestamp: now
        )
        let released = s.scheduler!.offer(u, at: now)
        if !released.contains(where: { $0.update.coalescingKey == key }) {
            let hold = s.scheduler!.status(at: now).queued.last { $0.topic == u.topic }?.hold.rawValue ?? "queued"
            logger.info(
                "apns push held by the refresh scheduler",
                [("push_id", pushID), ("session.name", s.name), ("hold", hold), ("app_state", s.appState)]
            )
        }
        apply(released, to: s)
    }

    /// A push the scheduler released: relayed to the phone, unless its `apns-expiration` passed (0: it had to go
    /// at once) — then its verdict says so and no phone sees it.
    func releaseAPNsPush(_ d: Delivery, to s: Session) {
        guard let endpoint = apns, let p = endpoint.pending.removeValue(forKey: d.update.coalescingKey) else { return }
        let order = p.args["order"]?.stringValue ?? ""
        if let e = p.expirationSeconds {
            let late = e == 0 ? d.at > p.offeredAt : d.at.millisecondsSinceEpoch > e * 1000
            if late {
                let why =
                    e == 0
                    ? "apns-expiration 0 (now or never) and the refresh scheduler could not deliver it at once"
                    : "apns-expiration \(e) passed before the refresh scheduler released it"
                logger.info("apns push expired", [("push_id", p.pushID), ("session.name", s.name)])
                recordAPNsVerdict(p.pushID, s, order, "expired", why)
                return
            }
        }
        var args = p.args
        args["schedulerRule"] = .string(d.reason.rawValue)
        startRelay(CommandBody(command: "push", args: args), id: 0, admin: nil, targets: [s])
    }

    /// A verdict the daemon gives itself (the phone never saw the push), in the push log for `livebus explain`.
    func recordAPNsVerdict(_ pushID: String, _ s: Session, _ order: String, _ reason: String, _ message: String) {
        pushLog.append(
            .object([
                "pushID": .string(pushID), "session": .string(s.name), "order": .string(order),
                "applied": .bool(false), "source": .string("apns"), "reason": .string(reason),
                "message": .string(message),
            ])
        )
        if pushLog.count > 1000 { pushLog.removeFirst(pushLog.count - 1000) }
    }

    /// The attached phone and order whose activity push token is `token` (``LiveBusPushTokens/activityToken(phone:order:)``
    /// over every attached phone and every order topic), or `nil`.
    func apnsActivity(forToken token: String) -> (Session, String)? {
        let phones = sessions.values.filter { $0.role == .session && $0.phase == .established }
        let orders = store.topics.filter { $0.hasPrefix("orders/") }.map { String($0.dropFirst("orders/".count)) }
        for s in phones {
            for o in orders where LiveBusPushTokens.activityToken(phone: s.name, order: o) == token { return (s, o) }
        }
        return nil
    }

    /// What LiveBus knows of a device token: the push token of an attached phone's activity (any bundle id); once
    /// its order ended (delivered or canceled: the activity ended) the token is no longer active, since that
    /// event's timestamp (410 `Unregistered` after `--apns-unregistered-delay`); any other token is unknown.
    /// Tokens of phones that went away and push-to-start tokens are still to come (issue 17, step 4).
    func apnsTokenStatus(_ token: String) -> APNsTokenStatus {
        guard let (_, order) = apnsActivity(forToken: token) else { return .unknown }
        if let last = store.latest(topic: "orders/" + order), last.isTerminal {
            return .unregistered(bundleID: nil, sinceMilliseconds: last.body.timestamp)
        }
        return .active(bundleID: nil)
    }
}
