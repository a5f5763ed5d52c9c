import Foundation
import LiveBusClock
import LiveBusFaults
import LiveBusLayout
import LiveBusScheduler
import LiveBusSimulator
import LiveBusWire

/// What `livebus status` shows about one session.
struct SessionStatus: Codable {
    struct ClockStatus: Codable {
        var offsetMs: Double
        var driftPPM: Double
        var errorBoundMs: Double
        var roundTripMs: Double?
        var samples: Int
    }
    var id: String
    var name: String
    var role: String
    var client: String
    var device: String?
    var posture: PostureBody?
    var appState: String
    var os: String?
    var subscriptions: [String]
    var lastSent: [String: UInt64]
    var eventsSent: Int
    var coalesced: Int
    var outstandingBytes: Int
    var clock: ClockStatus?
    var connectedAt: Int64
    var profile: ProfileBody
    var scheduler: SchedulerStatus?
    var faults: [ToxicSpec]
    var explain: [Decision]?
}

/// What `livebus order list` shows about one order.
struct OrderStatusView: Codable {
    var id: String
    var customer: String
    var status: String
    var summary: SummaryBody
    var etaTarget: Int64
    var progress: Double
    var lastConfirmed: Int64
    var topic: String
    var sequence: UInt64?
}

extension Daemon {
    /// Any encodable value as a ``JSONValue`` (for RESULT data and `--json` envelopes).
    public static func jsonValue(_ v: some Encodable) -> JSONValue {
        guard let bytes = try? WireJSON.encode(v), let j = try? WireJSON.decode(JSONValue.self, from: bytes) else {
            return .null
        }
        return j
    }

    func reply(_ s: Session, id: UInt64, _ r: ResultBody) {
        // A RESULT must fit in one frame; say so instead of leaving the caller waiting.
        guard let bytes = try? WireJSON.encode(r) else { return }
        if bytes.count > options.maximumFrameSize - Frame.headerSize {
            let tooBig = ResultBody(
                ok: false,
                error: ResultErrorBody(
                    code: "resultTooLarge",
                    message:
                        "the answer is \(bytes.count) bytes, over the \(options.maximumFrameSize)-byte frame limit",
                    recovery: "ask for less: order.list takes limit and offset"
                )
            )
            send(s, .result, sequence: id, body: tooBig)
            return
        }
        send(s, .result, sequence: id, encoded: bytes)
    }

    func replyError(_ s: Session, id: UInt64, code: String, _ message: String, recovery: String? = nil) {
        reply(
            s,
            id: id,
            ResultBody(ok: false, error: ResultErrorBody(code: code, message: message, recovery: recovery))
        )
    }

    /// Runs a COMMAND and answers with RESULT (same request id). Commands never close the connection.
    func command(_ c: CommandBody, id: UInt64, from s: Session) {
        guard s.role == .admin else {
            replyError(
                s,
                id: id,
                code: "notPermitted",
                "COMMAND needs the admin role in HELLO",
                recovery: "connect with role \"admin\" as the daemon's own user"
            )
            return
        }
        if journalCommand(c, id: id, from: s) { return }
        dashboardCommandSeen(c)
        if relayCommand(c, id: id, from: s) { return }
        if faultCommand(c, id: id, from: s) { return }
        switch c.command {
        case "status":
            // `sessionOffset`: the answer's sessions start there (an answer holds what fits in one frame).
            guard
                let offset = wholeNumberArgument(
                    c,
                    "sessionOffset",
                    meaning: "the sessions already read",
                    example: 120,
                    id: id,
                    from: s
                )
            else { return }
            reply(
                s,
                id: id,
                ResultBody(
                    ok: true,
                    data: statusData(explain: c.args["explain"]?.boolValue ?? false, sessionOffset: offset)
                )
            )
        case "push.explain":
            pushExplain(c.args, id: id, from: s)
        case "devices":
            // The device ids HELLO and POSTURE accept (the catalog and any --device-file), for shell completion.
            let ids = ((try? DeviceCatalog.bundled())?.devices ?? []).map { JSONValue.string($0.id) }
            reply(s, id: id, ResultBody(ok: true, data: .array(ids)))
        case "order.list":
            // A page within what a JSON number holds exactly; anything else is refused, not clamped.
            func page(_ key: String, _ d: Int, _ range: ClosedRange<Double>) -> Int? {
                guard let v = c.args[key] else { return d }
                guard case .number(let n) = v, n == n.rounded(), range.contains(n) else { return nil }
                return Int(n)
            }
            guard let offset = page("offset", 0, 0...9_007_199_254_740_992), let limit = page("limit", 100, 1...1000)
            else {
                replyError(
                    s,
                    id: id,
                    code: "invalidArguments",
                    "order.list: limit must be a whole number 1…1000 and offset one in 0…2^53",
                    recovery: "e.g. livebus order list --limit 100 --offset 200"
                )
                return
            }
            let all = orderViews()
            let page = Array(all.dropFirst(offset).prefix(limit))
            if c.args["limit"] == nil && c.args["offset"] == nil && all.count <= limit {
                reply(s, id: id, ResultBody(ok: true, data: Daemon.jsonValue(page)))
            } else {
                reply(
                    s,
                    id: id,
                    ResultBody(
                        ok: true,
                        data: .object([
                            "orders": Daemon.jsonValue(page), "total": .number(Double(all.count)),
                            "offset": .number(Double(offset)),
                        ])
                    )
                )
            }
        case "topic.list":
            topicList(c, id: id, from: s)
        case "order.create":
            orderCreate(c.args, id: id, from: s)
        case "order.cancel":
            orderCancel(c.args, id: id, from: s)
        default:
            replyError(
                s,
                id: id,
                code: "unknownCommand",
                "unknown command '\(c.command)'",
                recovery:
                    "known commands: status, order.list, topic.list, order.create, order.cancel, session.posture, session.app-state, session.profile, session.clock, session.simulate, push, backend.stall, journal"
            )
        }
    }

    /// The COMMAND argument `key` as a whole number within 0…2^53 (what a JSON number holds exactly), 0 when it is
    /// absent; anything else is answered with `invalidArguments` naming it, and `nil` returned.
    func wholeNumberArgument(
        _ c: CommandBody,
        _ key: String,
        meaning: String,
        example: Int,
        id: UInt64,
        from s: Session
    ) -> Int? {
        guard let v = c.args[key] else { return 0 }
        guard case .number(let n) = v, n == n.rounded(), n >= 0, n <= 9_007_199_254_740_992 else {
            replyError(
                s,
                id: id,
                code: "invalidArguments",
                "\(c.command): \(key) must be a whole number 0…2^53 (\(meaning))",
                recovery: "e.g. {\"\(key)\": \(example)}"
            )
            return nil
        }
        return Int(n)
    }

    /// The `status` answer: the daemon, its sessions from `sessionOffset` on (in the order they connected) as many
    /// as fit in one frame beside the newest 50 orders, and the counts (`sessionCount`, `orderCount`); a client
    /// reads the rest with a larger `sessionOffset` (`livebus status` does, until it has `sessionCount`).
    func statusData(explain: Bool = false, sessionOffset: Int = 0) -> JSONValue {
        let now = clock.now()
        let list = sessions.values.filter { $0.phase == .established && $0.role != .admin }.sorted {
            $0.connectedAt < $1.connectedAt || ($0.connectedAt == $1.connectedAt && $0.id < $1.id)
        }
        let views = list.map { s in
            SessionStatus(
                id: s.id,
                name: s.name,
                role: s.role.rawValue,
                client: s.client,
                device: s.device,
                posture: s.posture,
                appState: s.appState,
                os: s.os,
                subscriptions: s.patterns,
                lastSent: s.lastSent,
                eventsSent: s.eventsSent,
                coalesced: s.coalescedCount,
                outstandingBytes: s.connection.outstandingBytes,
                clock: s.clock.estimate.map { e in
                    SessionStatus.ClockStatus(
                        offsetMs: (s.clock.offsetMilliseconds(at: now) ?? e.offsetMilliseconds),
                        driftPPM: e.driftPPM,
                        errorBoundMs: s.clock.errorBoundMilliseconds(at: now) ?? e.errorBoundMilliseconds,
                        roundTripMs: s.lastProbeRoundTripMilliseconds,
                        samples: e.sampleCount
                    )
                },
                connectedAt: s.connectedAt.millisecondsSinceEpoch,
                profile: s.profile,
                scheduler: s.scheduler.map { sched in
                    var st = sched.status(at: now)
                    st.recentDecisions = []  // the explain log is for --explain only
                    return st
                },
                faults: s.faults?.toxics ?? [],
                explain: explain ? s.scheduler?.explain(last: 10) : nil
            )
        }
        // Keep the answer within one frame: the newest orders (at most 50, `order list` has them all), then as many
        // sessions as fit; the counts say how many there are.
        let recentOrders = Daemon.jsonValue(Array(orderViews().suffix(50)))
        let ordersSize = (try? WireJSON.encode(recentOrders).count) ?? 0
        var shown = views
        var budget = options.maximumFrameSize - 8 * 1024 - ordersSize
        var kept: [SessionStatus] = []
        for v in shown.dropFirst(sessionOffset) {
            let size = (try? WireJSON.encode(v).count) ?? 0
            if size > budget { break }
            budget -= size
            kept.append(v)
        }
        shown = kept
        var data: [String: JSONValue] = [
            "sessionCount": .number(Double(views.count)),
            "sessionOffset": .number(Double(sessionOffset)),
            "serverTime": .number(Double(now.millisecondsSinceEpoch)),
            "uptimeMs": .number(Double(startedAt.milliseconds(to: now))),
            "socket": .string(options.socketPath),
            "timeScale": .number(options.timeScale),
            "seed": .number(Double(options.seed)),
            "sessions": Daemon.jsonValue(shown),
            "orders": recentOrders,
            "orderCount": .number(Double(simulator?.orders().count ?? 0)),
        ]
        data["scenario"] = options.scenario.map { .string($0) } ?? .null
        data["scenarioFinished"] = .bool((simulator?.isFinished ?? true) && held.count == 0)
        data["degraded"] = degradedStatus()
        data["apns"] = apnsStatus()
        data["federation"] = federationStatus()
        return .object(data)
    }

    /// Traces one push through transport, the activity rules and the view.
    func pushExplain(_ args: [String: JSONValue], id: UInt64, from s: Session) {
        guard let pushID = args["pushID"]?.stringValue else {
            replyError(s, id: id, code: "invalidArguments", "push.explain needs pushID")
            return
        }
        let entries = pushLog.filter { $0["pushID"]?.stringValue == pushID }
        guard !entries.isEmpty else {
            replyError(
                s,
                id: id,
                code: "unknownPush",
                "no push \(pushID) in the last \(pushLog.count) pushes",
                recovery: "push ids are printed by `livebus push`"
            )
            return
        }
        let traces: [JSONValue] = entries.map { e in
            var steps: [JSONValue] = [
                .object([
                    "stage": .string("transport"),
                    "outcome": .string(
                        "relayed to \(e["session"]?.stringValue ?? "?") over its connection and answered"
                    ),
                ])
            ]
            let applied = e["applied"]?.boolValue ?? false
            var rule = applied ? "applied" : "not applied: \(e["reason"]?.stringValue ?? "?")"
            if let w = e["appleWords"]?.stringValue { rule += " — Apple: \"\(w)\"" }
            if let m = e["message"]?.stringValue { rule += " — \(m)" }
            if let src = e["source"]?.stringValue { rule += " (source: \(src))" }
            steps.append(.object(["stage": .string("activity rules"), "outcome": .string(rule)]))
            steps.append(
                .object([
                    "stage": .string("view"),
                    "outcome": .string(
                        "activity \(e["state"]?.stringValue ?? "none") showing \(e["status"]?.stringValue ?? "nothing")"
                    ),
                ])
            )
            return .object([
                "session": e["session"] ?? .null, "order": e["order"] ?? .null, "steps": .array(steps), "verdict": e,
            ])
        }
        reply(s, id: id, ResultBody(ok: true, data: .object(["pushID": .string(pushID), "traces": .array(traces)])))
    }

    func orderViews() -> [OrderStatusView] {
        (simulator?.orders() ?? []).map { o in
            let topic = "orders/\(o.id)"
            // What phones were told: the topic's last stored event, status and sequence from the same event. The
            // simulator's own state runs ahead of it while the store or the federation refuses its events (they are
            // held, HeldEvents), and a publisher may have published on the topic since.
            if let stored = store.latest(topic: topic) {
                let c = stored.body.contentState
                return OrderStatusView(
                    id: o.id,
                    customer: o.customerID,
                    status: c.status,
                    summary: c.summary,
                    etaTarget: c.etaTarget,
                    progress: c.progress,
                    lastConfirmed: c.lastConfirmed,
                    topic: topic,
                    sequence: stored.sequence
                )
            }
            // Nothing stored yet (its start event is held): the simulator's state, with no sequence.
            let c = o.contentState
            return OrderStatusView(
                id: o.id,
                customer: o.customerID,
                status: c.status.rawValue,
                summary: SummaryBody(ko: c.summary.ko, en: c.summary.en),
                etaTarget: c.etaTarget.millisecondsSinceEpoch,
                progress: c.progress,
                lastConfirmed: c.lastConfirmed.millisecondsSinceEpoch,
                topic: topic,
                sequence: nil
            )
        }
    }

    private func ensureSimulator() {
        if simulator == nil {
            simulator = DeliverySimulator(
                scenario: Scenario.random(orders: 0, seed: options.seed),
                start: clock.now(),
                timeScale: options.timeScale,
                seed: options.seed
            )
        }
    }

    private func orderCreate(_ args: [String: JSONValue], id: UInt64, from s: Session) {
        if refuseWhileDegraded(s, id: id) { return }
        ensureSimulator()
        if let c = args["customer"], Daemon.customerProblem(c.stringValue) != nil {
            replyError(
                s,
                id: id,
                code: "invalidArguments",
                "order.create: customer \(Daemon.customerProblem(c.stringValue) ?? "")",
                recovery: "e.g. --customer c7"
            )
            return
        }
        var request = OrderRequest(customerID: args["customer"]?.stringValue ?? "c1")
        request.id = args["id"]?.stringValue
        // Federated: an id another daemon of the federation (or a publisher) already uses is refused (§5.8).
        if let taken = request.id, !simulator!.orders().contains(where: { $0.id == taken }),
            orderIDTakenInFederation(taken)
        {
            replyError(
                s,
                id: id,
                code: "rejected",
                "order.create: an order with id '\(taken)' already exists in the federation: topic orders/\(taken) already has events in stream \(federation?.streamName ?? "-") (another daemon's order or a publisher's)",
                recovery:
                    "choose another order id, or leave the id out: this daemon picks \(federationTag ?? "<tag>")-M0001, … (unique in the federation)"
            )
            return
        }
        do {
            let before = Set(simulator!.orders().map(\.id))
            let undo = simulator
            let events = try simulator!.createOrder(
                request,
                at: clock.now(),
                idTag: federationTag,
                takenElsewhere: { self.orderIDTakenInFederation($0) }
            )
            if let e = publish(events, undo: undo) {
                replyStoreRefusal(s, id: id, e)
                return
            }
            rearmSimulator()
            let created =
                events.last { $0.event == .start }?.orderID ?? request.id
                ?? simulator!.orders().map(\.id).first { !before.contains($0) }
            if let orderID = created {
                reply(
                    s,
                    id: id,
                    ResultBody(
                        ok: true,
                        data: .object(["order": .string(orderID), "topic": .string("orders/\(orderID)")])
                    )
                )
            } else {
                // A whole-backend stall holds the creation: the order exists once the backend answers again.
                reply(
                    s,
                    id: id,
                    ResultBody(
                        ok: true,
                        data: .object([
                            "pending": .bool(true),
                            "message": .string("the backend is stalled; the order is created when it recovers"),
                        ])
                    )
                )
            }
        } catch {
            replyError(s, id: id, code: "rejected", "\(error)", recovery: "choose another order id or fix the request")
        }
    }

    private func orderCancel(_ args: [String: JSONValue], id: UInt64, from s: Session) {
        guard let orderID = args["order"]?.stringValue else {
            replyError(
                s,
                id: id,
                code: "invalidArguments",
                "order.cancel needs an 'order' id",
                recovery: "livebus order cancel ORDER-ID"
            )
            return
        }
        guard simulator != nil else {
            replyUnknownOrder(s, id: id, orderID)
            return
        }
        if refuseWhileDegraded(s, id: id) { return }
        let undo = simulator
        let (outcome, events) = simulator!.cancelOrder(id: orderID, at: clock.now())
        if let e = publish(events, undo: undo) {
            replyStoreRefusal(s, id: id, e)
            return
        }
        rearmSimulator()
        switch outcome {
        case .canceled:
            reply(
                s,
                id: id,
                ResultBody(ok: true, data: .object(["order": .string(orderID), "outcome": .string("canceled")]))
            )
        case .failed(let reason):
            logger.log(.notice, "order cancel refused", [("order", orderID), ("reason", reason)])
            replyError(
                s,
                id: id,
                code: "cancelFailed",
                "cancel request for \(orderID) failed: \(reason)",
                recovery: "the order continues; retry later"
            )
        case .alreadyTerminal:
            replyError(s, id: id, code: "alreadyTerminal", "order \(orderID) is already delivered or canceled")
        case .unknownOrder:
            replyUnknownOrder(s, id: id, orderID)
        }
    }

    /// The `unknownOrder` ERROR of `order.cancel`: on a federated daemon an order another daemon created (its topic
    /// is in the stream) is named as such, with where to cancel it.
    private func replyUnknownOrder(_ s: Session, id: UInt64, _ orderID: String) {
        if federation != nil, store.latest(topic: "orders/\(orderID)") != nil {
            replyError(
                s,
                id: id,
                code: "unknownOrder",
                "order \(orderID) was created on another daemon of the federation: each daemon runs the orders created on it (its phones here only follow orders/\(orderID))",
                recovery:
                    "cancel it on the daemon that created it: livebus order cancel \(orderID) --socket THAT-DAEMON'S-SOCKET"
            )
            return
        }
        replyError(s, id: id, code: "unknownOrder", "no order \(orderID)", recovery: "see `livebus order list`")
    }
}

extension Daemon {
    /// Why `customer` cannot name an order's customer (`nil` when it can): a string of 1–64 characters without
    /// control characters, as session names (PROTOCOL.md §8 `order.create`).
    public static func customerProblem(_ customer: String?) -> String? {
        guard let customer else { return "must be a string" }
        if customer.isEmpty { return "must not be empty" }
        if customer.count > 64 { return "is \(customer.count) characters; the limit is 64" }
        if customer.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "must not contain control characters"
        }
        return nil
    }
}
