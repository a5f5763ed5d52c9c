import Foundation
import LiveBusAPNs
import LiveBusAPNsServer
import LiveBusClock
import LiveBusLoop
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
        let server = APNsServer(loop: loop, limits: o.limits, tls: tlsContext)
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
            // The same path as `livebus push`: relayed to the phone, whose verdict goes to the push log
            // (`livebus explain`). The refresh scheduler's budget does not apply yet (issue 17, step 3).
            startRelay(CommandBody(command: "push", args: args), id: 0, admin: nil, targets: [phone])
            let pushID = "p\(pushCounter)"
            logger.info(
                "apns push relayed",
                [
                    ("apns_id", push.apnsID), ("push_id", pushID), ("session.name", phone.name), ("order", order),
                    ("priority", "\(push.priority)"),
                ]
            )
            return .success(apnsID: push.apnsID, uniqueID: uniqueID, extraHeaders: [("livebus-push-id", pushID)])
        }
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

    /// What LiveBus knows of a device token: the push token of an attached phone's activity (any bundle id), or
    /// unknown. Tokens of phones that went away, of ended activities (410) and push-to-start tokens are still to
    /// come (issue 17, step 4).
    func apnsTokenStatus(_ token: String) -> APNsTokenStatus {
        apnsActivity(forToken: token) == nil ? .unknown : .active(bundleID: nil)
    }
}
