/// Turns a parsed timeline file (``JSONNode``) into a ``Scenario``, checking every field.
///
/// Each error names the file, the line of the offending value (or of the key, for an unknown field; or of the
/// enclosing object, for a missing one) and the field path. The format is `Protocol/SCENARIOS.md`.
struct TimelineDecoder {
    let file: String

    /// The event types and the fields each allows besides `at`, `type` and `note`.
    static let eventFields: [String: Set<String>] = [
        "createOrder": ["order", "customer", "store", "destination", "waypoints", "etaAt", "summary"],
        "setStatus": ["order", "status", "etaAt", "progress", "summary", "arriveAt"],
        "reviseEta": ["order", "etaAt", "arriveAt", "reason"],
        "riderPosition": ["order", "position", "progress"],
        "stall": ["order", "duration"],
        "cancelRequest": ["order", "outcome", "reason"],
    ]

    func fail(_ code: ScenarioError.Code, _ line: Int, _ field: String, _ message: String) -> ScenarioError {
        ScenarioError(code: code, file: file, line: line, field: field, message: message)
    }

    // MARK: - Typed readers

    struct Object {
        let node: JSONNode
        let path: String
        let members: [String: JSONNode.Member]

        func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
        func optional(_ key: String) -> JSONNode? { members[key]?.value }
    }

    func object(_ node: JSONNode, _ path: String, allowed: Set<String>) throws(ScenarioError) -> Object {
        guard case .object(let list) = node.value else {
            throw fail(.invalidValue, node.line, path, "expected an object, found \(node.kindName)")
        }
        var members: [String: JSONNode.Member] = [:]
        for m in list {
            let field = path.isEmpty ? m.key : "\(path).\(m.key)"
            if let first = members[m.key] {
                throw fail(.duplicateField, m.keyLine, field, "appears twice (first on line \(first.keyLine))")
            }
            guard allowed.contains(m.key) else {
                throw fail(
                    .unknownField,
                    m.keyLine,
                    field,
                    "unknown field; allowed here: \(allowed.sorted().joined(separator: ", "))"
                )
            }
            members[m.key] = m
        }
        return Object(node: node, path: path, members: members)
    }

    func required(_ o: Object, _ key: String) throws(ScenarioError) -> JSONNode {
        guard let v = o.optional(key) else {
            throw fail(.missingField, o.node.line, o.child(key), "required field is missing")
        }
        return v
    }

    func string(_ node: JSONNode, _ path: String) throws(ScenarioError) -> String {
        guard case .string(let s) = node.value else {
            throw fail(.invalidValue, node.line, path, "expected a string, found \(node.kindName)")
        }
        return s
    }

    func number(_ node: JSONNode, _ path: String) throws(ScenarioError) -> Double {
        guard case .number(let d, _) = node.value else {
            throw fail(.invalidValue, node.line, path, "expected a number, found \(node.kindName)")
        }
        return d
    }

    func fraction(_ node: JSONNode, _ path: String) throws(ScenarioError) -> Double {
        let d = try number(node, path)
        guard (0...1).contains(d) else {
            throw fail(.invalidValue, node.line, path, "must be between 0 and 1, got \(d)")
        }
        return d
    }

    /// Parses `"90s"`, `"1.5m"`, `"250ms"`, `"2h"`, `"1m30s"` (number–unit pairs, units h, m, s, ms) into
    /// milliseconds, or `nil`.
    static func parseDuration(_ s: String) -> Double? {
        let chars = Array(s.utf8)
        var i = 0
        var total = 0.0
        guard !chars.isEmpty else { return nil }
        while i < chars.count {
            let numberStart = i
            while i < chars.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(chars[i]) || chars[i] == UInt8(ascii: ".")
            {
                i += 1
            }
            let digits = String(decoding: chars[numberStart..<i], as: UTF8.self)
            guard !digits.isEmpty, digits.first != ".", digits.last != ".", let value = Double(digits) else {
                return nil
            }
            let unitStart = i
            while i < chars.count, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(chars[i]) { i += 1 }
            switch String(decoding: chars[unitStart..<i], as: UTF8.self) {
            case "ms": total += value
            case "s": total += value * 1000
            case "m": total += value * 60_000
            case "h": total += value * 3_600_000
            default: return nil
            }
        }
        return total
    }

    /// A duration: `"90s"`, `"1.5m"`, `"250ms"`, `"2h"`, `"1m30s"`, or an integer number of milliseconds. Never
    /// negative.
    func duration(_ node: JSONNode, _ path: String) throws(ScenarioError) -> Int64 {
        let expected = "expected a duration like \"90s\" or milliseconds"
        switch node.value {
        case .number(let d, let text):
            guard let ms = Int64(text) else {
                throw fail(.invalidValue, node.line, path, "\(expected) (an integer), got \(text)")
            }
            guard ms >= 0 else { throw fail(.invalidValue, node.line, path, "must not be negative, got \(text)") }
            _ = d
            return ms
        case .string(let s):
            if s.hasPrefix("-") { throw fail(.invalidValue, node.line, path, "must not be negative, got \"\(s)\"") }
            guard let ms = Self.parseDuration(s) else {
                throw fail(.invalidValue, node.line, path, "\(expected), got \"\(s)\"")
            }
            guard ms <= 1e15 else { throw fail(.invalidValue, node.line, path, "duration too large: \"\(s)\"") }
            return Int64(ms.rounded())
        default:
            throw fail(.invalidValue, node.line, path, "\(expected), found \(node.kindName)")
        }
    }

    func coordinate(_ node: JSONNode, _ path: String) throws(ScenarioError) -> Coordinate {
        let o = try object(node, path, allowed: ["latitude", "longitude"])
        let latNode = try required(o, "latitude")
        let lat = try number(latNode, o.child("latitude"))
        guard (-90...90).contains(lat) else {
            throw fail(.invalidValue, latNode.line, o.child("latitude"), "latitude must be within -90…90, got \(lat)")
        }
        let lonNode = try required(o, "longitude")
        let lon = try number(lonNode, o.child("longitude"))
        guard (-180...180).contains(lon) else {
            throw fail(
                .invalidValue,
                lonNode.line,
                o.child("longitude"),
                "longitude must be within -180…180, got \(lon)"
            )
        }
        return Coordinate(latitude: lat, longitude: lon)
    }

    func status(_ node: JSONNode, _ path: String) throws(ScenarioError) -> OrderStatus {
        let s = try string(node, path)
        guard let status = OrderStatus(rawValue: s) else {
            let known = OrderStatus.allCases.map(\.rawValue).joined(separator: ", ")
            throw fail(.invalidValue, node.line, path, "unknown status \"\(s)\"; known: \(known)")
        }
        return status
    }

    func summary(_ node: JSONNode, _ path: String, status: OrderStatus) throws(ScenarioError) -> CustomerSummary {
        let o = try object(node, path, allowed: ["ko", "en", "detailKo", "detailEn"])
        let fallback = CustomerSummary(status: status)
        func text(_ key: String, _ def: String) throws(ScenarioError) -> String {
            guard let n = o.optional(key) else { return def }
            return try string(n, o.child(key))
        }
        let summary = CustomerSummary(
            ko: try string(try required(o, "ko"), o.child("ko")),
            en: try string(try required(o, "en"), o.child("en")),
            detailKo: try text("detailKo", fallback.detailKo),
            detailEn: try text("detailEn", fallback.detailEn)
        )
        let size = ContentState.worstCaseSize(summary: summary)
        if size > ContentState.maximumEncodedBytes {
            throw fail(
                .invalidValue,
                node.line,
                path,
                "the content state would be up to \(size) bytes as JSON, more than Apple's "
                    + "\(ContentState.maximumEncodedBytes)-byte limit; shorten the texts"
            )
        }
        return summary
    }

    func orderID(_ node: JSONNode, _ path: String) throws(ScenarioError) -> String {
        let id = try string(node, path)
        guard OrderSpec.isValidID(id) else {
            throw fail(
                .invalidValue,
                node.line,
                path,
                "order ids are 1–64 characters of A–Z a–z 0–9 - _ ., got \"\(id)\""
            )
        }
        return id
    }

    // MARK: - The document

    func decode(_ root: JSONNode) throws(ScenarioError) -> Scenario {
        let top = try object(root, "", allowed: ["version", "name", "description", "settings", "events"])
        let versionNode = try required(top, "version")
        guard case .number(_, let text) = versionNode.value, text == "1" else {
            throw fail(.invalidValue, versionNode.line, "version", "unsupported version; this reader knows version 1")
        }
        let name = try string(try required(top, "name"), "name")
        let description = try top.optional("description").map { (n) throws(ScenarioError) in
            try string(n, "description")
        }
        let settings = try top.optional("settings").map { (n) throws(ScenarioError) in try decodeSettings(n) }
        let eventsNode = try required(top, "events")
        guard case .array(let list) = eventsNode.value else {
            throw fail(.invalidValue, eventsNode.line, "events", "expected an array, found \(eventsNode.kindName)")
        }
        var checker = LifecycleChecker()
        var timeline: [TimelineEvent] = []
        var previousAt: Int64 = 0
        for (i, node) in list.enumerated() {
            let event = try decodeEvent(node, "events[\(i)]", previousAt: previousAt, checker: &checker)
            previousAt = event.atMs
            timeline.append(event)
        }
        return Scenario(
            name: name,
            description: description ?? "",
            settings: settings ?? ScenarioSettings(),
            timeline: timeline
        )
    }

    func decodeSettings(_ node: JSONNode) throws(ScenarioError) -> ScenarioSettings {
        let o = try object(
            node,
            "settings",
            allowed: ["positionInterval", "staleAfter", "dismissAfter", "cancelFailureProbability"]
        )
        var s = ScenarioSettings()
        if let n = o.optional("positionInterval") {
            s.positionIntervalMs = try duration(n, o.child("positionInterval"))
            guard s.positionIntervalMs > 0 else {
                throw fail(.invalidValue, n.line, o.child("positionInterval"), "must be greater than 0")
            }
        }
        if let n = o.optional("staleAfter") {
            let phases = OrderStatus.allCases.filter { !$0.isTerminal }.map(\.rawValue)
            let so = try object(n, o.child("staleAfter"), allowed: Set(phases))
            for (key, member) in so.members {
                guard let status = OrderStatus(rawValue: key) else { continue }
                let ms = try duration(member.value, so.child(key))
                guard ms > 0 else {
                    throw fail(.invalidValue, member.value.line, so.child(key), "must be greater than 0")
                }
                s.staleAfterMs[status] = ms
            }
        }
        if let n = o.optional("dismissAfter") {
            let dobj = try object(n, o.child("dismissAfter"), allowed: ["delivered", "canceled"])
            if let d = dobj.optional("delivered") {
                s.dismissAfterDeliveredMs = try duration(d, dobj.child("delivered"))
            }
            if let d = dobj.optional("canceled") { s.dismissAfterCanceledMs = try duration(d, dobj.child("canceled")) }
        }
        if let n = o.optional("cancelFailureProbability") {
            s.cancelFailureProbability = try fraction(n, o.child("cancelFailureProbability"))
        }
        return s
    }

    /// Tracks each order's status through the file, so impossible sequences are caught at load time.
    struct LifecycleChecker {
        var status: [String: OrderStatus] = [:]
    }

    func decodeEvent(
        _ node: JSONNode,
        _ path: String,
        previousAt: Int64,
        checker: inout LifecycleChecker
    ) throws(ScenarioError) -> TimelineEvent {
        guard case .object(let members) = node.value else {
            throw fail(.invalidValue, node.line, path, "expected an object, found \(node.kindName)")
        }
        guard let typeMember = members.first(where: { $0.key == "type" }) else {
            throw fail(.missingField, node.line, "\(path).type", "required field is missing")
        }
        let type = try string(typeMember.value, "\(path).type")
        guard let fields = Self.eventFields[type] else {
            throw fail(
                .invalidValue,
                typeMember.value.line,
                "\(path).type",
                "unknown event type \"\(type)\"; known: \(Self.eventFields.keys.sorted().joined(separator: ", "))"
            )
        }
        let o = try object(node, path, allowed: fields.union(["at", "type", "note"]))
        if let n = o.optional("note") { _ = try string(n, o.child("note")) }
        let atNode = try required(o, "at")
        let at = try duration(atNode, o.child("at"))
        guard at >= previousAt else {
            throw fail(
                .outOfOrder,
                atNode.line,
                o.child("at"),
                "events must be in time order: \(at) ms is before the previous event's \(previousAt) ms"
            )
        }
        func laterThanAt(_ key: String) throws(ScenarioError) -> Int64? {
            guard let n = o.optional(key) else { return nil }
            let ms = try duration(n, o.child(key))
            guard ms >= at else {
                throw fail(.invalidValue, n.line, o.child(key), "must not be before the event's own time (\(at) ms)")
            }
            return ms
        }
        // The order this event is about, which must exist and not have ended (except for createOrder).
        func existingOrder() throws(ScenarioError) -> (String, OrderStatus) {
            let idNode = try required(o, "order")
            let id = try orderID(idNode, o.child("order"))
            guard let current = checker.status[id] else {
                throw fail(
                    .invalidValue,
                    idNode.line,
                    o.child("order"),
                    "unknown order \"\(id)\"; create it first with a createOrder event"
                )
            }
            guard !current.isTerminal else {
                throw fail(
                    .invalidValue,
                    idNode.line,
                    o.child("order"),
                    "order \"\(id)\" has already ended (\(current.rawValue)); nothing can happen to it afterwards"
                )
            }
            return (id, current)
        }

        let action: TimelineAction
        switch type {
        case "createOrder":
            let idNode = try required(o, "order")
            let id = try orderID(idNode, o.child("order"))
            guard checker.status[id] == nil else {
                throw fail(.invalidValue, idNode.line, o.child("order"), "order \"\(id)\" is created twice")
            }
            let customerNode = try required(o, "customer")
            let customer = try string(customerNode, o.child("customer"))
            guard !customer.isEmpty else {
                throw fail(.invalidValue, customerNode.line, o.child("customer"), "must not be empty")
            }
            var waypoints: [Coordinate] = []
            if let wn = o.optional("waypoints") {
                guard case .array(let list) = wn.value else {
                    throw fail(.invalidValue, wn.line, o.child("waypoints"), "expected an array, found \(wn.kindName)")
                }
                for (k, p) in list.enumerated() { waypoints.append(try coordinate(p, "\(o.child("waypoints"))[\(k)]")) }
            }
            guard let eta = try laterThanAt("etaAt") else {
                throw fail(.missingField, o.node.line, o.child("etaAt"), "required field is missing")
            }
            let summary = try o.optional("summary").map { (n) throws(ScenarioError) in
                try self.summary(n, o.child("summary"), status: .created)
            }
            action = .createOrder(
                OrderSpec(
                    id: id,
                    customerID: customer,
                    store: try coordinate(try required(o, "store"), o.child("store")),
                    destination: try coordinate(try required(o, "destination"), o.child("destination")),
                    waypoints: waypoints,
                    etaAtMs: eta,
                    summary: summary
                )
            )
            checker.status[id] = .created
        case "setStatus":
            let (id, current) = try existingOrder()
            let statusNode = try required(o, "status")
            let next = try status(statusNode, o.child("status"))
            guard current.canMove(to: next) else {
                throw fail(
                    .invalidValue,
                    statusNode.line,
                    o.child("status"),
                    "order \"\(id)\" cannot go from \(current.rawValue) to \(next.rawValue) (statuses only move "
                        + "forward: created, cooking, awaitingPickup, pickedUp, delivering, delivered; or to canceled)"
                )
            }
            let arrive = try laterThanAt("arriveAt")
            if arrive != nil && next != .delivering, let n = o.optional("arriveAt") {
                throw fail(.invalidValue, n.line, o.child("arriveAt"), "only allowed with status \"delivering\"")
            }
            action = .setStatus(
                orderID: id,
                status: next,
                etaAtMs: try laterThanAt("etaAt"),
                progress: try o.optional("progress").map { (n) throws(ScenarioError) in
                    try fraction(n, o.child("progress"))
                },
                summary: try o.optional("summary").map { (n) throws(ScenarioError) in
                    try self.summary(n, o.child("summary"), status: next)
                },
                arriveAtMs: arrive
            )
            checker.status[id] = next
        case "reviseEta":
            let (id, current) = try existingOrder()
            if let n = o.optional("reason") { _ = try string(n, o.child("reason")) }
            if let n = o.optional("arriveAt"), current != .delivering {
                throw fail(
                    .invalidValue,
                    n.line,
                    o.child("arriveAt"),
                    "order \"\(id)\" is \(current.rawValue); arriveAt is only allowed while delivering"
                )
            }
            guard let eta = try laterThanAt("etaAt") else {
                throw fail(.missingField, o.node.line, o.child("etaAt"), "required field is missing")
            }
            action = .reviseEta(orderID: id, etaAtMs: eta, arriveAtMs: try laterThanAt("arriveAt"))
        case "riderPosition":
            let (id, current) = try existingOrder()
            guard current == .pickedUp || current == .delivering else {
                throw fail(
                    .invalidValue,
                    o.node.line,
                    o.child("position"),
                    "order \"\(id)\" is \(current.rawValue); the rider's position is only published while "
                        + "pickedUp or delivering"
                )
            }
            action = .riderPosition(
                orderID: id,
                position: try coordinate(try required(o, "position"), o.child("position")),
                progress: try o.optional("progress").map { (n) throws(ScenarioError) in
                    try fraction(n, o.child("progress"))
                }
            )
        case "stall":
            var id: String?
            if o.optional("order") != nil { id = try existingOrder().0 }
            let dn = try required(o, "duration")
            let d = try duration(dn, o.child("duration"))
            guard d > 0 else { throw fail(.invalidValue, dn.line, o.child("duration"), "must be greater than 0") }
            action = .stall(orderID: id, durationMs: d)
        default:  // cancelRequest
            let (id, _) = try existingOrder()
            let outcomeNode = try required(o, "outcome")
            let outcome = try string(outcomeNode, o.child("outcome"))
            guard outcome == "succeeds" || outcome == "fails" else {
                throw fail(
                    .invalidValue,
                    outcomeNode.line,
                    o.child("outcome"),
                    "expected \"succeeds\" or \"fails\", got \"\(outcome)\""
                )
            }
            let reason = try o.optional("reason").map { (n) throws(ScenarioError) in try string(n, o.child("reason")) }
            action = .cancelRequest(orderID: id, succeeds: outcome == "succeeds", reason: reason)
            if outcome == "succeeds" { checker.status[id] = .canceled }
        }
        return TimelineEvent(atMs: at, action: action)
    }
}
