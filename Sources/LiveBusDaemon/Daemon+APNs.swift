import Foundation
import LiveBusAPNs
import LiveBusAPNsServer
import LiveBusClock
import LiveBusCore
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
    /// `--apns-start-budget`: push-to-start pushes one phone may receive per rolling hour (ours: 10; Apple publishes
    /// no number, see ``PushToStartBudget``).
    public var pushToStartBudgetPerHour: Int = 10

    /// Whether any listener is asked for.
    public var isEnabled: Bool { host != nil || socketPath != nil }

    /// Creates the defaults (no endpoint).
    public init() {}
}

/// What the refresh scheduler needs of an accepted push (a token push's or a broadcast's).
struct APNsDelivery {
    var priority: Int
    var expirationSeconds: Int64?
    var collapseID: String?
    var body: [UInt8]
}

extension APNsDelivery {
    init(_ p: APNsPush) {
        self.init(priority: p.priority, expirationSeconds: p.expirationSeconds, collapseID: p.collapseID, body: p.body)
    }
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
    /// The HTTP/2 server; `nil` for an endpoint driven in memory (tests call ``Daemon/answerAPNs(_:endpoint:)``).
    let server: APNsServer?
    var validator: APNsValidator
    /// An activity a push-to-start push started (issue 17): its phone, id, token and channel.
    struct PushStartedActivity {
        var phone: String
        var order: String
        var bundleID: String
        /// Its push token (`input-push-token: 1`), else `nil`.
        var token: String?
        /// Its broadcast channel (`input-push-channel`), else `nil`.
        var channel: String?
        /// When it ended (server clock): its token is no longer active from then (410 after the delay).
        var endedAt: ServerInstant?
    }
    /// Activities started by push-to-start, oldest first.
    var pushStarted: [PushStartedActivity] = []
    /// Start pushes relayed and not yet answered by the phone, by push id.
    var startsInFlight: [String: PushStartedActivity] = [:]
    /// Each phone's push-to-start budget, by phone name.
    var startBudgets: [String: PushToStartBudget] = [:]
    /// The broadcast channels (channel management API).
    var channels = APNsChannelDirectory()
    /// The TCP port listened on, once started.
    var port: Int?
    /// The CA certificate's path (TLS).
    var caPath: String?

    init(server: APNsServer?, validator: APNsValidator) {
        self.server = server
        self.validator = validator
    }
}

extension Daemon {
    /// A new directory `$TMPDIR/livebus-apns-XXXXXX` (`mkdtemp(3)`: a random name, mode 0700) for the CA of a daemon
    /// with neither `--apns-ca-dir` nor a data directory (`--memory`).
    /// - Returns: Its path.
    /// - Throws: ``DaemonError`` with the system's reason when it cannot be made.
    static func makeTemporaryCADirectory() throws(DaemonError) -> String {
        var template = Array((NSTemporaryDirectory() + "livebus-apns-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw DaemonError(
                "--apns: cannot create a directory for its CA in \(NSTemporaryDirectory()): \(String(cString: strerror(errno))); pass --apns-ca-dir DIR"
            )
        }
        return String(cString: made)
    }

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
            // Without a directory: a new private one (mkdtemp, 0700), never a predictable name in /tmp.
            let dir: String
            if let given = o.caDirectory ?? options.dataDirectory {
                dir = given
            } else {
                dir = try Daemon.makeTemporaryCADirectory()
            }
            do {
                let prepared = try LocalCertificateAuthority.prepare(directory: dir, hostNames: [o.host!])
                tlsContext = try TLSServerContext(identity: prepared.identity)
                caPath = prepared.caPath
            } catch {
                // A CA directory of another user, or open to others, is refused as their data directory is (exit 3).
                throw DaemonError(
                    "--apns: cannot prepare the TLS certificate: \(error.description)",
                    unreachable: error.unsafe
                )
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
            do { try Daemon.clearSocketPath(path, hello: false, logger: logger) } catch {
                server.close()
                throw DaemonError("--apns-socket: \(error.message)", unreachable: error.unreachable)
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
        apns?.server?.close()
        apns = nil
    }

    /// The answer to one provider-API request: channel management (`/1/apps/…`), or APNs's validation, then
    /// delivery: to a phone's push-to-start token (a start), an activity's token (through the refresh scheduler),
    /// or a broadcast channel (every subscribed activity).
    func answerAPNs(_ request: APNsRequest, endpoint: DaemonAPNs) -> APNsResponse {
        let now = clock.now()
        let uniqueID = UUID().uuidString.lowercased()
        if APNsChannelDirectory.isManagementPath(request.path) {
            let answer = endpoint.channels.handle(
                request,
                verifier: &endpoint.validator.verifier,
                at: now,
                newChannelID: APNsChannelDirectory.randomChannelID,
                newID: { UUID().uuidString }
            )
            logger.info(
                "apns channel request",
                [
                    ("method", request.method), ("path", request.path), ("status", "\(answer.status)"),
                    ("apns_channel_id", answer.header("apns-channel-id") ?? request.header("apns-channel-id") ?? ""),
                ]
            )
            return answer
        }
        let verdict = endpoint.validator.validate(request, at: now, newID: { UUID().uuidString }) { token in
            self.apnsResolve(token).status
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
            guard case .device(let token) = push.route else {
                return answerBroadcast(push, request: request, uniqueID: uniqueID, endpoint: endpoint)
            }
            let pushID = newPushID()
            let accepted = APNsResponse.success(
                apnsID: push.apnsID,
                uniqueID: uniqueID,
                extraHeaders: [("livebus-push-id", pushID)]
            )
            let resolved = apnsResolve(token)
            guard let target = resolved.target else {
                // Apple answers 200 for a while after a token stops; the push reaches nobody, and says so.
                let why =
                    verdict.noPhoneHoldsToken
                    ? "no phone holds token \(token): its activity ended; 410 Unregistered follows once --apns-unregistered-delay has passed"
                    : "the phone holding token \(token) is not attached: LiveBus does not store pushes for it"
                logger.info("apns push accepted", [("apns_id", push.apnsID), ("push_id", pushID), ("verdict", why)])
                recordAPNsVerdict(pushID, nil, resolved.order ?? "", "unregistered", why)
                return accepted
            }
            switch target {
            case .pushToStart(let phone, let bundle):
                startWithPush(push, pushID: pushID, on: phone, bundleID: bundle, endpoint: endpoint)
            case .activity(let phone, let order):
                var args: [String: JSONValue] = [
                    "session": .string(phone.name), "order": .string(order),
                    "payload": .string(String(decoding: push.body, as: UTF8.self)), "apnsID": .string(push.apnsID),
                    "priority": .number(Double(push.priority)), "pushID": .string(pushID),
                ]
                if let c = push.collapseID { args["collapseID"] = .string(c) }
                if let e = push.expirationSeconds { args["expiration"] = .number(Double(e)) }
                logger.info(
                    "apns push accepted",
                    [
                        ("apns_id", push.apnsID), ("push_id", pushID), ("session.name", phone.name), ("order", order),
                        ("priority", "\(push.priority)"),
                    ]
                )
                if verdict.noPhoneHoldsToken {
                    recordAPNsVerdict(
                        pushID,
                        phone,
                        order,
                        "unregistered",
                        "no phone holds token \(token): its activity ended; 410 Unregistered follows once --apns-unregistered-delay has passed"
                    )
                    return accepted
                }
                offerAPNsPush(APNsDelivery(push), args: args, pushID: pushID, to: phone, endpoint: endpoint)
            }
            return accepted
        }
    }

    /// A new push id (`p<n>`; `<tag>-p<n>` on a federated daemon, ``federationTag``), for `livebus push` and APNs
    /// pushes alike: unique across restarts of a durable daemon (``pushCounter``) and, federated, across the
    /// federation (each daemon reserves under its own key, ``pushIDsMetaKey``, and tags its ids; PROTOCOL.md §5.8).
    func newPushID() -> String {
        pushCounter += 1
        if store.isDurable && pushCounter > pushIDsReserved {
            pushIDsReserved = pushCounter + Daemon.pushIDBlock - 1
            if case .failure(let e) = store.commitInTurn(StoreBatch(meta: [(pushIDsMetaKey, "\(pushIDsReserved)")])) {
                logger.log(.error, "cannot reserve push ids in the data directory", [("error", e.message)])
            }
        }
        return Daemon.pushID(pushCounter, tag: federationTag)
    }

    /// The push id numbered `n`: `p<n>` on one daemon, `<tag>-p<n>` on a federated daemon with tag `tag`.
    static func pushID(_ n: Int, tag: String?) -> String {
        (tag.map { $0 + "-" } ?? "") + "p\(n)"
    }

    /// A start push to a phone's push-to-start token: counted against the phone's push-to-start budget, then
    /// relayed at once in any app state (a start wakes the app: it does not wait in the refresh scheduler). The new
    /// activity's id is `aps.attributes.orderID` when the attributes carry one, else `pts-<apns-id prefix>`; a
    /// second start for an id this phone already has gets `<id>-2`, `-3` … with a warning (Apple does not
    /// de-duplicate: two starts make two activities).
    func startWithPush(_ push: APNsPush, pushID: String, on s: Session, bundleID: String, endpoint: DaemonAPNs) {
        let now = clock.now()
        let aps =
            ((try? JSONSerialization.jsonObject(with: Data(push.body))) as? [String: Any])?["aps"] as? [String: Any]
            ?? [:]
        // An id that is not one topic segment (Topic.validate: no whitespace or control characters, no wildcard;
        // PROTOCOL.md §5.1) is not used: it would name the activity in logs, status and the phone's topics.
        var order =
            ((aps["attributes"] as? [String: Any])?["orderID"] as? String).flatMap {
                $0.count > 64 || $0.contains("/") || (try? Topic.validate("orders/" + $0)) == nil ? nil : $0
            } ?? "pts-" + push.apnsID.prefix(8).lowercased()
        let base = order
        var n = 1
        let taken = { (o: String) in
            endpoint.pushStarted.contains { $0.phone == s.name && $0.order == o }
                || endpoint.startsInFlight.values.contains { $0.phone == s.name && $0.order == o }
                || self.store.latest(topic: "orders/" + o) != nil
        }
        while taken(order) {
            n += 1
            order = "\(base)-\(n)"
        }
        if n > 1 {
            logger.log(
                .notice,
                "apns push-to-start: a second start for the same activity",
                [
                    ("push_id", pushID), ("session.name", s.name), ("order", base), ("new_order", order),
                    ("note", "Apple does not de-duplicate start pushes: this makes another activity"),
                ]
            )
        }
        var budget =
            endpoint.startBudgets[s.name] ?? PushToStartBudget(limit: options.apns.pushToStartBudgetPerHour)
        let allowed = aps["event"] as? String != "start" || budget.spend(at: now)
        endpoint.startBudgets[s.name] = budget
        guard allowed else {
            logger.info("apns push-to-start budget exceeded", [("push_id", pushID), ("session.name", s.name)])
            recordAPNsVerdict(
                pushID,
                s,
                order,
                "pushToStartBudgetExceeded",
                "\(s.name) received \(options.apns.pushToStartBudgetPerHour) start pushes within the hour (--apns-start-budget, ours): not starting activity"
            )
            return
        }
        let wantsToken = (aps["input-push-token"] as? NSNumber)?.intValue == 1
        let channel = aps["input-push-channel"] as? String
        let started = DaemonAPNs.PushStartedActivity(
            phone: s.name,
            order: order,
            bundleID: bundleID,
            token: wantsToken ? LiveBusPushTokens.activityToken(phone: s.name, order: order) : nil,
            channel: channel
        )
        endpoint.startsInFlight[pushID] = started
        var args: [String: JSONValue] = [
            "session": .string(s.name), "order": .string(order),
            "payload": .string(String(decoding: push.body, as: UTF8.self)), "apnsID": .string(push.apnsID),
            "priority": .number(Double(push.priority)), "pushID": .string(pushID), "pushToStart": .bool(true),
        ]
        if let t = started.token { args["pushToken"] = .string(t) }
        if let channel { args["channel"] = .string(channel) }
        logger.info(
            "apns push-to-start accepted",
            [
                ("apns_id", push.apnsID), ("push_id", pushID), ("session.name", s.name), ("order", order),
                ("app_state", s.appState), ("input_push_token", wantsToken ? "1" : "0"),
                ("input_push_channel", channel ?? ""),
            ]
        )
        startRelay(CommandBody(command: "push", args: args), id: 0, admin: nil, targets: [s])
    }

    /// A phone's verdict on a relayed push: a start that applied registers its activity (its token and channel);
    /// a push that left an activity ended or dismissed marks a push-started one ended (its token then answers 410);
    /// a new channel activity whose channel stores its most recent message gets that message.
    func apnsPushAnswered(_ data: JSONValue, from s: Session) {
        guard let endpoint = apns, case .object(let d) = data, let pushID = d["pushID"]?.stringValue else { return }
        let now = clock.now()
        if var started = endpoint.startsInFlight.removeValue(forKey: pushID), d["applied"]?.boolValue == true {
            started.phone = s.name
            endpoint.pushStarted.append(started)
            if endpoint.pushStarted.count > 10_000 { endpoint.pushStarted.removeFirst() }
            if let c = started.channel, let channel = endpoint.channels.channel(c, bundleID: started.bundleID),
                let stored = channel.storedMessage
            {
                relayBroadcast(
                    stored,
                    channel: c,
                    to: [(s, started.order)],
                    apnsID: UUID().uuidString,
                    endpoint: endpoint
                )
            }
            return
        }
        if let state = d["state"]?.stringValue, state == "ended" || state == "dismissed",
            let order = d["order"]?.stringValue,
            let i = endpoint.pushStarted.firstIndex(where: {
                $0.phone == s.name && $0.order == order && $0.endedAt == nil
            })
        {
            endpoint.pushStarted[i].endedAt = now
        }
    }

    /// A broadcast (`/4/broadcasts/apps/<bundle-id>` with `apns-channel-id`): 400 `BadChannelId` for a channel
    /// this bundle does not have; else 200 and the push fans out, with identical state, to every activity
    /// listening on the channel (push-started with `input-push-channel`, and the order activities of phones whose
    /// profile lists the channel: `livebus attach --channel`), each through its phone's refresh scheduler. A
    /// broadcast `start` starts nothing (Apple: "You can't use broadcast push notifications to start a Live
    /// Activity"). A channel with message-storage-policy 1 keeps the newest message for activities that subscribe
    /// later.
    func answerBroadcast(_ push: APNsPush, request: APNsRequest, uniqueID: String, endpoint: DaemonAPNs)
        -> APNsResponse
    {
        let channelID = push.channelID ?? ""
        let requestID =
            request.header("apns-request-id").flatMap { APNsValidator.isCanonicalUUID($0) ? $0 : nil } ?? push.apnsID
        guard APNsChannelDirectory.isChannelID(channelID),
            endpoint.channels.channel(channelID, bundleID: push.bundleID) != nil
        else {
            let rejection = APNsRejection(
                .badChannelId,
                "no channel \(channelID.prefix(80)) exists for \(push.bundleID): create one with POST /1/apps/\(push.bundleID)/channels"
            )
            logger.info("apns push refused", [("apns_id", push.apnsID), ("reason", rejection.reason.rawValue)])
            var answer = APNsResponse.failure(rejection, apnsID: push.apnsID, uniqueID: uniqueID)
            answer.headers.append(("apns-request-id", requestID))
            return answer
        }
        let aps =
            ((try? JSONSerialization.jsonObject(with: Data(push.body))) as? [String: Any])?["aps"] as? [String: Any]
        var ids: [String] = []
        if aps?["event"] as? String == "start" {
            let id = newPushID()
            ids.append(id)
            recordAPNsVerdict(
                id,
                nil,
                "",
                "broadcastCannotStart",
                "a broadcast on channel \(channelID) cannot start an activity: send the start to a phone's push-to-start token"
            )
        } else {
            endpoint.channels.broadcasted(push.body, on: channelID)
            let targets = apnsChannelTargets(channelID, bundleID: push.bundleID, endpoint: endpoint)
            ids = relayBroadcast(
                push.body,
                channel: channelID,
                to: targets,
                apnsID: push.apnsID,
                push: push,
                endpoint: endpoint
            )
        }
        logger.info(
            "apns broadcast accepted",
            [("apns_id", push.apnsID), ("apns_channel_id", channelID), ("push_ids", ids.joined(separator: ","))]
        )
        return .success(
            apnsID: push.apnsID,
            uniqueID: uniqueID,
            extraHeaders: [("apns-request-id", requestID), ("livebus-push-id", ids.joined(separator: ","))]
        )
    }

    /// The activities listening on channel `id` of `bundleID`: attached phones' push-started activities with that
    /// `input-push-channel` that have not ended, and the live order activities of phones whose profile lists it.
    func apnsChannelTargets(_ id: String, bundleID: String, endpoint: DaemonAPNs) -> [(Session, String)] {
        let phones = sessions.values.filter { $0.role == .session && $0.phase == .established }
            .sorted { $0.name < $1.name }
        var out: [(Session, String)] = []
        for a in endpoint.pushStarted where a.channel == id && a.bundleID == bundleID && a.endedAt == nil {
            if let s = phones.first(where: { $0.name == a.phone }) { out.append((s, a.order)) }
        }
        let orders = store.topics.filter { $0.hasPrefix("orders/") }.sorted()
            .filter { store.latest(topic: $0)?.isTerminal == false }
            .map { String($0.dropFirst("orders/".count)) }
        for s in phones
        where (s.profile.channels ?? []).contains(id)
            && (s.profile.bundleID ?? LiveBusPushTokens.defaultBundleID) == bundleID
        {
            for o in orders { out.append((s, o)) }
        }
        return out
    }

    /// Relays one broadcast body to each (phone, activity), each with its own push id, through the phone's refresh
    /// scheduler (with the broadcast's priority, expiration and collapse id).
    /// - Returns: the push ids, in target order.
    @discardableResult
    func relayBroadcast(
        _ body: [UInt8],
        channel: String,
        to targets: [(Session, String)],
        apnsID: String,
        push: APNsPush? = nil,
        endpoint: DaemonAPNs
    ) -> [String] {
        var ids: [String] = []
        for (s, order) in targets {
            let pushID = newPushID()
            ids.append(pushID)
            var args: [String: JSONValue] = [
                "session": .string(s.name), "order": .string(order),
                "payload": .string(String(decoding: body, as: UTF8.self)), "apnsID": .string(apnsID),
                "priority": .number(Double(push?.priority ?? 10)), "pushID": .string(pushID),
                "channel": .string(channel),
            ]
            if let c = push?.collapseID { args["collapseID"] = .string(c) }
            if let e = push?.expirationSeconds { args["expiration"] = .number(Double(e)) }
            let p = APNsDelivery(
                priority: push?.priority ?? 10,
                expirationSeconds: push?.expirationSeconds,
                collapseID: push?.collapseID,
                body: body
            )
            offerAPNsPush(p, args: args, pushID: pushID, to: s, endpoint: endpoint)
        }
        return ids
    }

    /// The topic prefix of APNs pushes in a session's refresh scheduler (`apns/<order>`).
    static let apnsTopicPrefix = "apns/"

    /// Offers an accepted push to the phone's refresh scheduler, as the bus's own updates are: priority 10 draws
    /// on the phone's budget when it is not in the foreground, priority 5 waits for an opportunity, a later push
    /// with the same `apns-collapse-id` replaces one still queued (the coalescing key). What is released now is
    /// relayed to the phone (the same path as `livebus push`); what waits is logged with the scheduler's hold.
    func offerAPNsPush(
        _ push: APNsDelivery,
        args: [String: JSONValue],
        pushID: String,
        to s: Session,
        endpoint: DaemonAPNs
    ) {
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
    func recordAPNsVerdict(_ pushID: String, _ s: Session?, _ order: String, _ reason: String, _ message: String) {
        pushLog.append(
            .object([
                "pushID": .string(pushID), "session": s.map { .string($0.name) } ?? .null, "order": .string(order),
                "applied": .bool(false), "source": .string("apns"), "reason": .string(reason),
                "message": .string(message),
            ])
        )
        if pushLog.count > 1000 { pushLog.removeFirst(pushLog.count - 1000) }
    }

    /// Who holds a device token: a phone's push-to-start token, or an activity's token (push-started or an order's).
    enum APNsTarget {
        /// The push-to-start token of `bundleID` on this phone.
        case pushToStart(Session, bundleID: String)
        /// The push token of this phone's activity for `order`.
        case activity(Session, order: String)
    }

    /// What LiveBus knows of device token `token`, and who receives a push to it (`nil` target: nobody now).
    ///
    /// In this order: an attached phone's push-to-start token (``LiveBusPushTokens/pushToStartToken(phone:bundleID:)``
    /// for its profile's bundle id); a push-started activity's token (active until the activity ended, then no
    /// longer active since then: 410 `Unregistered` after `--apns-unregistered-delay`; a phone that went away keeps
    /// the token, and a push to it reaches nobody and says so); an attached phone's token for an order topic
    /// (``LiveBusPushTokens/activityToken(phone:order:)``: no longer active once the order ended). Any other token
    /// is unknown (400 `BadDeviceToken`). Each token belongs to its phone's bundle id (400 `DeviceTokenNotForTopic`
    /// for another topic) and is a Live Activity token (``APNsTokenKind/liveActivity``: 400 `DeviceTokenNotForTopic`
    /// for a push type other than `liveactivity`).
    func apnsResolve(_ token: String) -> (status: APNsTokenStatus, target: APNsTarget?, order: String?) {
        let phones = sessions.values.filter { $0.role == .session && $0.phase == .established }
        func bundle(_ s: Session) -> String { s.profile.bundleID ?? LiveBusPushTokens.defaultBundleID }
        for s in phones where LiveBusPushTokens.pushToStartToken(phone: s.name, bundleID: bundle(s)) == token {
            return (.active(bundleID: bundle(s), kind: .liveActivity), .pushToStart(s, bundleID: bundle(s)), nil)
        }
        if let a = apns?.pushStarted.last(where: { $0.token == token }) {
            if let ended = a.endedAt {
                return (
                    .unregistered(
                        bundleID: a.bundleID,
                        sinceMilliseconds: ended.millisecondsSinceEpoch,
                        kind: .liveActivity
                    ), nil, a.order
                )
            }
            let s = phones.first { $0.name == a.phone }
            return (
                .active(bundleID: a.bundleID, kind: .liveActivity), s.map { .activity($0, order: a.order) }, a.order
            )
        }
        let orders = store.topics.filter { $0.hasPrefix("orders/") }.map { String($0.dropFirst("orders/".count)) }
        for s in phones {
            for o in orders where LiveBusPushTokens.activityToken(phone: s.name, order: o) == token {
                if let last = store.latest(topic: "orders/" + o), last.isTerminal {
                    return (
                        .unregistered(
                            bundleID: bundle(s),
                            sinceMilliseconds: last.body.timestamp,
                            kind: .liveActivity
                        ), nil, o
                    )
                }
                return (.active(bundleID: bundle(s), kind: .liveActivity), .activity(s, order: o), o)
            }
        }
        return (.unknown, nil, nil)
    }

    /// The push tokens and channels for `livebus status` (`"apns"` in its JSON): per attached phone its bundle id,
    /// push-to-start token and activity tokens (push-started ones and one per live order), and every channel.
    func apnsStatus() -> JSONValue {
        let phones = sessions.values.filter { $0.role == .session && $0.phase == .established }
            .sorted { $0.name < $1.name }
        let orders = store.topics.filter { $0.hasPrefix("orders/") }.sorted()
            .filter { store.latest(topic: $0)?.isTerminal == false }
            .map { String($0.dropFirst("orders/".count)) }
        let endpoint = apns
        let list: [JSONValue] = phones.prefix(100).map { s in
            let bundle = s.profile.bundleID ?? LiveBusPushTokens.defaultBundleID
            var activities: [JSONValue] = []
            for a in endpoint?.pushStarted ?? [] where a.phone == s.name {
                var o: [String: JSONValue] = [
                    "order": .string(a.order), "token": a.token.map { .string($0) } ?? .null,
                    "startedBy": .string("pushToStart"), "ended": .bool(a.endedAt != nil),
                ]
                if let c = a.channel { o["channel"] = .string(c) }
                activities.append(.object(o))
            }
            for o in orders.suffix(20) {
                activities.append(
                    .object([
                        "order": .string(o), "token": .string(LiveBusPushTokens.activityToken(phone: s.name, order: o)),
                        "startedBy": .string("order"), "ended": .bool(false),
                    ])
                )
            }
            return .object([
                "session": .string(s.name), "bundleID": .string(bundle),
                "topic": .string(bundle + liveActivityTopicSuffix),
                "pushToStartToken": .string(LiveBusPushTokens.pushToStartToken(phone: s.name, bundleID: bundle)),
                "channels": .array((s.profile.channels ?? []).map { .string($0) }),
                "activities": .array(activities),
            ])
        }
        let channels: [JSONValue] = (endpoint?.channels.channels.values.sorted { $0.createdAt < $1.createdAt } ?? [])
            .prefix(100).map {
                .object([
                    "id": .string($0.id), "bundleID": .string($0.bundleID),
                    "messageStoragePolicy": .number(Double($0.messageStoragePolicy)),
                ])
            }
        return .object([
            "endpoint": .bool(endpoint != nil), "phones": .array(list), "channels": .array(channels),
        ])
    }
}
