import LiveBusLayout
import LiveBusSimulator

/// A scenario file that breaks a rule of `Protocol/E2E.md`: the file, the 1-based line and the field path.
///
/// Printed as `file:line: field 'path': message`, or `file:line: message` for syntax errors.
public struct E2EScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file as given to the decoder.
    public var file: String
    /// The line of the offending value (of the key for unknown or repeated fields, of the object for missing ones).
    public var line: Int
    /// The field path, e.g. `actions[3].params.latencyMs`; nil for syntax errors.
    public var field: String?
    /// What is wrong and what is allowed.
    public var message: String

    /// Creates an error.
    public init(file: String, line: Int, field: String?, message: String) {
        self.file = file
        self.line = line
        self.field = field
        self.message = message
    }

    public var description: String {
        if let field { return "\(file):\(line): field '\(field)': \(message)" }
        return "\(file):\(line): \(message)"
    }
}

/// Reads e2e scenario files (`Protocol/E2E.md` §2) strictly: unknown fields, repeated fields, wrong types and
/// impossible values are errors naming the file, the line and the field.
public enum E2EScenarioDecoder {
    /// Decodes one scenario.
    ///
    /// - Parameters:
    ///   - bytes: the file's UTF-8 JSON text.
    ///   - file: the path for messages; timeline paths in `backend` are resolved against its directory.
    ///   - knownDevices: the device catalog's ids, to reject unknown devices; nil skips that check.
    /// - Returns: the scenario with `count`, `repeat` and toxic `duration` expanded and actions in time order.
    /// - Throws: ``E2EScenarioError`` for the first problem found.
    public static func decode(_ bytes: [UInt8], file: String, knownDevices: Set<String>? = nil) throws(E2EScenarioError)
        -> E2EScenario
    {
        let root: JSONNode
        do { root = try LineJSON.parse(bytes) } catch {
            throw E2EScenarioError(file: file, line: error.line, field: nil, message: error.message)
        }
        var d = Decoding(file: file, knownDevices: knownDevices)
        return try d.scenario(root)
    }
}

/// Splits `text` into number–unit pairs (`90s`, `1m30s`, `250ms`, `1.5h`) with an optional sign.
/// - Returns: milliseconds, or nil when it is not a duration.
func parseE2EDuration(_ text: String, allowSign: Bool) -> Int64? {
    var s = Substring(text)
    var sign: Double = 1
    if allowSign, let f = s.first, f == "+" || f == "-" {
        sign = f == "-" ? -1 : 1
        s = s.dropFirst()
    }
    var total: Double = 0
    var number = ""
    var unit = ""
    var pairs = 0
    func flush() -> Bool {
        guard let n = Double(number), !number.isEmpty else { return false }
        let factor: Double
        switch unit {
        case "ms": factor = 1
        case "s": factor = 1000
        case "m": factor = 60_000
        case "h": factor = 3_600_000
        default: return false
        }
        total += n * factor
        number = ""
        unit = ""
        pairs += 1
        return true
    }
    for c in s {
        if c.isASCII && (c.isNumber || c == ".") {
            if !unit.isEmpty { guard flush() else { return nil } }
            number.append(c)
        } else if c.isASCII && c.isLetter {
            guard !number.isEmpty else { return nil }
            unit.append(c)
        } else {
            return nil
        }
    }
    guard flush(), pairs > 0, total.isFinite, abs(total) < 1e15 else { return nil }
    return Int64((sign * total).rounded())
}

private struct Decoding {
    let file: String
    let knownDevices: Set<String>?
    /// The assertion steps met among the actions.
    var assertions: [E2EAssertion] = []

    func fail(_ line: Int, _ field: String, _ message: String) -> E2EScenarioError {
        E2EScenarioError(file: file, line: line, field: field, message: message)
    }

    /// An object's members with the keys taken so far, so that leftovers are reported as unknown.
    struct Object {
        var members: [String: JSONNode.Member]
        var order: [String]
        var path: String
        var line: Int

        func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
    }

    func object(_ node: JSONNode, _ path: String, allowed: [String]) throws(E2EScenarioError) -> Object {
        guard case .object(let members) = node.value else {
            throw fail(node.line, path.isEmpty ? "(document)" : path, "expected an object, got \(node.kindName)")
        }
        var byKey: [String: JSONNode.Member] = [:]
        var order: [String] = []
        for m in members {
            let p = path.isEmpty ? m.key : "\(path).\(m.key)"
            if let first = byKey[m.key] {
                throw fail(m.keyLine, p, "field given twice (first on line \(first.keyLine))")
            }
            guard allowed.contains(m.key) else {
                throw fail(m.keyLine, p, "unknown field; allowed here: \(allowed.sorted().joined(separator: ", "))")
            }
            byKey[m.key] = m
            order.append(m.key)
        }
        return Object(members: byKey, order: order, path: path, line: node.line)
    }

    func required(_ o: Object, _ key: String) throws(E2EScenarioError) -> JSONNode {
        guard let m = o.members[key] else {
            throw fail(o.line, o.child(key), "missing required field")
        }
        return m.value
    }

    func string(_ node: JSONNode, _ path: String) throws(E2EScenarioError) -> String {
        guard case .string(let s) = node.value else {
            throw fail(node.line, path, "expected a string, got \(node.kindName)")
        }
        return s
    }

    func number(_ node: JSONNode, _ path: String, in range: ClosedRange<Double>) throws(E2EScenarioError)
        -> Double
    {
        guard case .number(let x, _) = node.value else {
            throw fail(node.line, path, "expected a number, got \(node.kindName)")
        }
        guard range.contains(x) else {
            throw fail(
                node.line,
                path,
                "must be within \(fmt(range.lowerBound))…\(fmt(range.upperBound)), got \(fmt(x))"
            )
        }
        return x
    }

    func integer(_ node: JSONNode, _ path: String, in range: ClosedRange<Int64>) throws(E2EScenarioError)
        -> Int64
    {
        guard case .number(let x, let text) = node.value else {
            throw fail(node.line, path, "expected an integer, got \(node.kindName)")
        }
        guard let i = Int64(text) else { throw fail(node.line, path, "expected an integer, got \(text)") }
        guard range.contains(i) else {
            throw fail(node.line, path, "must be within \(range.lowerBound)…\(range.upperBound), got \(fmt(x))")
        }
        return i
    }

    func choice(_ node: JSONNode, _ path: String, _ choices: [String]) throws(E2EScenarioError) -> String {
        let s = try string(node, path)
        guard choices.contains(s) else {
            throw fail(node.line, path, "'\(s)' is not one of: \(choices.joined(separator: ", "))")
        }
        return s
    }

    /// A duration: a string like `"90s"` / `"1m30s"` / `"250ms"` (signed when `signed`), or integer ms.
    func duration(_ node: JSONNode, _ path: String, signed: Bool = false, positive: Bool = false)
        throws(E2EScenarioError) -> Int64
    {
        let ms: Int64
        switch node.value {
        case .string(let s):
            guard let v = parseE2EDuration(s, allowSign: signed) else {
                let example = signed ? "\"-90s\", \"+1h\"" : "\"90s\", \"1m30s\", \"250ms\""
                throw fail(node.line, path, "expected a duration like \(example) or milliseconds, got \"\(s)\"")
            }
            ms = v
        case .number(_, let text):
            guard let v = Int64(text) else {
                throw fail(node.line, path, "expected whole milliseconds, got \(text)")
            }
            ms = v
        default:
            throw fail(node.line, path, "expected a duration like \"90s\" or milliseconds, got \(node.kindName)")
        }
        if !signed && ms < 0 { throw fail(node.line, path, "must not be negative, got \(ms) ms") }
        if positive && ms <= 0 { throw fail(node.line, path, "must be more than 0 ms, got \(ms) ms") }
        return ms
    }

    func fmt(_ x: Double) -> String {
        x == x.rounded() && abs(x) < 1e15 ? String(Int64(x)) : String(x)
    }

    static func validName(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 64 && !s.contains(where: { $0.isWhitespace })
    }

    static func validOrder(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 64
            && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
    }

    // MARK: - Document

    mutating func scenario(_ root: JSONNode) throws(E2EScenarioError) -> E2EScenario {
        let o = try object(
            root,
            "",
            allowed: [
                "version", "name", "description", "backend", "timeScale", "seed", "duration", "settle", "sessions",
                "actions", "expect", "tolerances", "federation",
            ]
        )
        let versionNode = try required(o, "version")
        let version = try integer(versionNode, "version", in: Int64.min...Int64.max)
        guard version == Int64(e2eScenarioFormatVersion) else {
            throw fail(versionNode.line, "version", "unsupported version \(version); this build reads version 1")
        }
        let nameNode = try required(o, "name")
        let name = try string(nameNode, "name")
        guard Decoding.validName(name) else {
            throw fail(nameNode.line, "name", "must be 1–64 characters without spaces")
        }
        var s = E2EScenario(name: name)
        if let n = o.members["description"]?.value { s.description = try string(n, "description") }
        if let n = o.members["backend"]?.value { s.backend = try backend(n) }
        if let n = o.members["timeScale"]?.value {
            s.timeScale = try number(n, "timeScale", in: DeliverySimulator.timeScaleRange)
        }
        if let n = o.members["seed"]?.value { s.seed = UInt64(try integer(n, "seed", in: 0...Int64.max)) }
        let durationNode = try required(o, "duration")
        s.durationMilliseconds = try duration(durationNode, "duration", positive: true)
        if let n = o.members["settle"]?.value { s.settleMilliseconds = try duration(n, "settle") }
        if let n = o.members["federation"]?.value { s.federation = try federation(n) }
        let sessionsNode = try required(o, "sessions")
        s.sessions = try sessions(sessionsNode, federation: s.federation)
        if let n = o.members["tolerances"]?.value { s.tolerances = try tolerances(n) }
        if let n = o.members["expect"]?.value { s.expect = try expectations(n) }
        if let n = o.members["actions"]?.value {
            s.actions = try actions(n, scenario: s)
            s.assertions = assertions
            for a in s.assertions {
                if case .at(let at) = a.anchor, at > s.durationMilliseconds {
                    throw fail(
                        a.line,
                        "actions (assert step \(a.index))",
                        "at \(at) ms is after the duration of \(s.durationMilliseconds) ms"
                    )
                }
            }
        }
        if let last = s.actions.last, last.atMilliseconds > s.durationMilliseconds {
            throw fail(
                durationNode.line,
                "duration",
                "the last action is at \(last.atMilliseconds) ms (line \(last.line)), after the duration of \(s.durationMilliseconds) ms"
            )
        }
        return s
    }

    func backend(_ node: JSONNode) throws(E2EScenarioError) -> E2EBackend {
        let text = try string(node, "backend")
        if text == "none" { return .none }
        if text.hasPrefix("random:") {
            guard let k = Int(text.dropFirst(7)), (1...1000).contains(k) else {
                throw fail(node.line, "backend", "random:K needs K within 1…1000, got '\(text)'")
            }
            return .random(orders: k)
        }
        if text.hasSuffix(".json") {
            if text.hasPrefix("/") { return .timeline(path: text) }
            let dir = file.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
            return .timeline(path: dir.isEmpty ? text : "\(dir)/\(text)")
        }
        if ["demo-120s"].contains(text) { return .builtin(text) }
        throw fail(
            node.line,
            "backend",
            "'\(text)' is not a backend; use none, demo-120s, random:K or a timeline file ending in .json"
        )
    }

    // MARK: - Sessions

    func posture(_ node: JSONNode, _ path: String) throws(E2EScenarioError) -> E2EPosture {
        let o = try object(node, path, allowed: ["foldState", "orientation", "window"])
        var p = E2EPosture(foldState: "flat", orientation: "portrait")
        if let n = o.members["foldState"]?.value {
            p.foldState = try choice(n, o.child("foldState"), E2EPosture.foldStates)
        }
        if let n = o.members["orientation"]?.value {
            p.orientation = try choice(n, o.child("orientation"), E2EPosture.orientations)
        }
        if let n = o.members["window"]?.value {
            let w = try string(n, o.child("window"))
            let parts = w.split(separator: "x")
            guard parts.count == 2, let ww = Double(parts[0]), let hh = Double(parts[1]), ww >= 1, hh >= 1,
                ww <= 4096, hh <= 4096
            else {
                throw fail(n.line, o.child("window"), "expected WIDTHxHEIGHT in points within 1…4096, got '\(w)'")
            }
            p.windowWidth = ww
            p.windowHeight = hh
        }
        return p
    }

    // MARK: - Federation

    /// `federation: {"nats": K, "replicas": R, "daemons": D | [NAME | {"name", "connect": [NODE…]}…]}`
    /// (`Protocol/E2E.md` §2.5).
    func federation(_ node: JSONNode) throws(E2EScenarioError) -> E2EFederation {
        let o = try object(node, "federation", allowed: ["nats", "replicas", "daemons"])
        var k = 3
        if let n = o.members["nats"]?.value { k = Int(try integer(n, o.child("nats"), in: 1...5)) }
        var r = min(3, k)
        if let n = o.members["replicas"]?.value {
            r = Int(try integer(n, o.child("replicas"), in: 1...5))
            guard r <= k else {
                throw fail(n.line, o.child("replicas"), "\(r) replicas need at least \(r) NATS nodes; nats is \(k)")
            }
        }
        let nodes = (1...k).map { "n\($0)" }
        let daemonsNode = try required(o, "daemons")
        var daemons: [E2EDaemonSpec] = []
        switch daemonsNode.value {
        case .number:
            let d = try integer(daemonsNode, o.child("daemons"), in: 1...8)
            daemons = (1...Int(d)).map { E2EDaemonSpec(name: "d\($0)", connect: nodes) }
        case .array(let items):
            guard (1...8).contains(items.count) else {
                throw fail(daemonsNode.line, o.child("daemons"), "needs 1…8 daemons, got \(items.count)")
            }
            var seen: [String: Int] = [:]
            for (i, item) in items.enumerated() {
                let p = "\(o.child("daemons"))[\(i)]"
                var spec = E2EDaemonSpec(name: "", connect: nodes)
                let nameNode: JSONNode
                if case .string = item.value {
                    nameNode = item
                    spec.name = try string(item, p)
                } else {
                    let d = try object(item, p, allowed: ["name", "connect"])
                    nameNode = try required(d, "name")
                    spec.name = try string(nameNode, d.child("name"))
                    if let c = d.members["connect"]?.value {
                        guard case .array(let list) = c.value, !list.isEmpty else {
                            throw fail(
                                c.line,
                                d.child("connect"),
                                "expected a non-empty array of node names (\(nodes.joined(separator: ", ")))"
                            )
                        }
                        spec.connect = []
                        for (j, x) in list.enumerated() {
                            let name = try nodeName(x, "\(d.child("connect"))[\(j)]", nodes: nodes)
                            guard !spec.connect.contains(name) else {
                                throw fail(x.line, "\(d.child("connect"))[\(j)]", "node '\(name)' is listed twice")
                            }
                            spec.connect.append(name)
                        }
                    }
                }
                guard Decoding.validName(spec.name), spec.name != "all" else {
                    throw fail(nameNode.line, p, "a daemon name is 1–64 characters without spaces, not 'all'")
                }
                if let first = seen[spec.name] {
                    throw fail(nameNode.line, p, "daemon name '\(spec.name)' is used twice (first on line \(first))")
                }
                seen[spec.name] = nameNode.line
                daemons.append(spec)
            }
        default:
            throw fail(
                daemonsNode.line,
                o.child("daemons"),
                "expected a count (1…8: daemons d1 … dN) or an array of names or {\"name\", \"connect\"} objects, got \(daemonsNode.kindName)"
            )
        }
        return E2EFederation(natsNodes: k, replicas: r, daemons: daemons, line: node.line)
    }

    /// A NATS node's name, `n1` … `nK`.
    func nodeName(_ node: JSONNode, _ path: String, nodes: [String]) throws(E2EScenarioError) -> String {
        let s = try string(node, path)
        guard nodes.contains(s) else {
            throw fail(
                node.line,
                path,
                "no NATS node named '\(s)'; the federation's nodes: \(nodes.joined(separator: ", "))"
            )
        }
        return s
    }

    /// A daemon's name where the scenario has a federation; without one, the field is refused.
    func daemonName(_ node: JSONNode, _ path: String, federation: E2EFederation?) throws(E2EScenarioError) -> String {
        let s = try string(node, path)
        guard let federation else {
            throw fail(
                node.line,
                path,
                "names daemon '\(s)' but the scenario has no federation block (one daemon); add \"federation\": {\"nats\": 3, \"daemons\": 3} or drop the field"
            )
        }
        let names = federation.daemons.map(\.name)
        guard names.contains(s) else {
            let near = NearMatch.closest(s, among: names, limit: 1).first
            throw fail(
                node.line,
                path,
                "no daemon named '\(s)'" + (near.map { " (did you mean '\($0)'?)" } ?? "")
                    + "; the federation's daemons: \(names.joined(separator: ", "))"
            )
        }
        return s
    }

    func sessions(_ node: JSONNode, federation: E2EFederation?) throws(E2EScenarioError) -> [E2ESessionSpec] {
        guard case .array(let items) = node.value else {
            throw fail(node.line, "sessions", "expected an array, got \(node.kindName)")
        }
        guard !items.isEmpty else { throw fail(node.line, "sessions", "needs at least one session") }
        var out: [E2ESessionSpec] = []
        var seen: [String: Int] = [:]
        for (i, item) in items.enumerated() {
            let path = "sessions[\(i)]"
            let o = try object(
                item,
                path,
                allowed: [
                    "name", "client", "device", "posture", "appState", "clockSkew", "clockDrift", "language", "os",
                    "count", "attachAt", "note", "daemon",
                ]
            )
            let nameNode = try required(o, "name")
            let name = try string(nameNode, o.child("name"))
            var spec = E2ESessionSpec(name: name, line: item.line)
            if let n = o.members["client"]?.value {
                spec.client = E2EClientKind(
                    rawValue: try choice(n, o.child("client"), E2EClientKind.allCases.map(\.rawValue))
                )!
            }
            if let n = o.members["device"]?.value {
                spec.device = try string(n, o.child("device"))
                if let known = knownDevices, !known.contains(spec.device) {
                    throw fail(
                        n.line,
                        o.child("device"),
                        "unknown device '\(spec.device)'; known: \(known.sorted().joined(separator: ", "))"
                    )
                }
            }
            if let n = o.members["posture"]?.value { spec.posture = try posture(n, o.child("posture")) }
            if let n = o.members["appState"]?.value {
                spec.appState = try choice(n, o.child("appState"), E2ESessionSpec.appStates)
            }
            if let n = o.members["clockSkew"]?.value {
                spec.clockSkewMilliseconds = try duration(n, o.child("clockSkew"), signed: true)
                guard abs(spec.clockSkewMilliseconds) <= 86_400_000 else {
                    throw fail(
                        n.line,
                        o.child("clockSkew"),
                        "must be within ±24h, got \(spec.clockSkewMilliseconds) ms"
                    )
                }
            }
            if let n = o.members["clockDrift"]?.value {
                spec.clockDriftPPM = try number(n, o.child("clockDrift"), in: -100_000...100_000)
            }
            if let n = o.members["language"]?.value {
                spec.language = try choice(n, o.child("language"), ["ko", "en"])
            }
            if let n = o.members["os"]?.value {
                let v = try string(n, o.child("os"))
                guard v == "newest" || E2EOSVersion(v) != nil else {
                    throw fail(
                        n.line,
                        o.child("os"),
                        "'\(v)' is not an OS version; give MAJOR.MINOR[.PATCH] such as 26.4 or 27.1, or newest"
                    )
                }
                spec.os = v
            }
            if let n = o.members["attachAt"]?.value { spec.attachAtMilliseconds = try duration(n, o.child("attachAt")) }
            if let n = o.members["daemon"]?.value {
                spec.daemon = try daemonName(n, o.child("daemon"), federation: federation)
            }
            var count: Int64 = 1
            let countNode = o.members["count"]?.value
            if let n = countNode { count = try integer(n, o.child("count"), in: 1...500) }
            let names = countNode == nil ? [name] : (1...count).map { "\(name)-\($0)" }
            for n in names {
                guard Decoding.validName(n) else {
                    throw fail(nameNode.line, o.child("name"), "'\(n)' must be 1–64 characters without spaces")
                }
                if let first = seen[n] {
                    throw fail(
                        nameNode.line,
                        o.child("name"),
                        "session name '\(n)' is used twice (first on line \(first))"
                    )
                }
                seen[n] = nameNode.line
                guard n != "all" else { throw fail(nameNode.line, o.child("name"), "'all' is reserved") }
                var copy = spec
                copy.name = n
                copy.group = name
                out.append(copy)
            }
        }
        guard out.count <= 500 else {
            throw fail(node.line, "sessions", "at most 500 sessions in all, got \(out.count)")
        }
        return out
    }

    func tolerances(_ node: JSONNode) throws(E2EScenarioError) -> E2ETolerances {
        let o = try object(
            node,
            "tolerances",
            allowed: ["remaining", "staleLatency", "settleAfterDisturbance", "maxDaemonRSSMiB"]
        )
        var t = E2ETolerances()
        if let n = o.members["remaining"]?.value { t.remainingMilliseconds = try duration(n, o.child("remaining")) }
        if let n = o.members["staleLatency"]?.value {
            t.staleLatencyMilliseconds = try duration(n, o.child("staleLatency"))
        }
        if let n = o.members["settleAfterDisturbance"]?.value {
            t.settleAfterDisturbanceMilliseconds = try duration(n, o.child("settleAfterDisturbance"))
        }
        if let n = o.members["maxDaemonRSSMiB"]?.value {
            t.maximumDaemonRSSMiB = try number(n, o.child("maxDaemonRSSMiB"), in: 1...65536)
        }
        return t
    }

    func expectations(_ node: JSONNode) throws(E2EScenarioError) -> E2EExpectations {
        let o = try object(node, "expect", allowed: ["finalStatus", "minimumOrders"])
        var e = E2EExpectations()
        if let n = o.members["finalStatus"] {
            guard case .object(let members) = n.value.value else {
                throw fail(n.value.line, o.child("finalStatus"), "expected an object, got \(n.value.kindName)")
            }
            for m in members {
                let p = "expect.finalStatus.\(m.key)"
                guard Decoding.validOrder(m.key) else { throw fail(m.keyLine, p, "not a valid order id") }
                guard e.finalStatus[m.key] == nil else { throw fail(m.keyLine, p, "field given twice") }
                e.finalStatus[m.key] = try choice(m.value, p, E2EStatusNames.all)
            }
        }
        if let n = o.members["minimumOrders"]?.value {
            e.minimumOrders = Int(try integer(n, o.child("minimumOrders"), in: 0...100_000))
        }
        return e
    }

    // MARK: - Actions

    static let actionFields: [String: [String]] = [
        "posture": ["session", "posture", "postures"],
        "appState": ["session", "appState"],
        "createOrder": ["order", "customer", "daemon", "expect"],
        "cancelOrder": ["order", "expect", "daemon"],
        "backendStall": ["order", "duration", "daemon"],
        "addToxic": ["label", "toxic", "target", "direction", "params", "toxicity", "seed", "duration"],
        "removeToxic": ["label", "all"],
        "clock": ["session", "step", "drift"],
        "killDaemon": ["daemon"],
        "restartDaemon": ["daemon"],
        "moveSession": ["session", "daemon"],
        "killNats": ["node"],
        "restartNats": ["node"],
        "suspendNats": ["node"],
        "resumeNats": ["node"],
        "partitionDaemon": ["daemon"],
        "healDaemon": ["daemon"],
        "suspendClient": ["session"],
        "resumeClient": ["session"],
    ]

    func target(_ o: Object, scenario: E2EScenario) throws(E2EScenarioError) -> E2ESessionTarget {
        let n = try required(o, "session")
        let s = try string(n, o.child("session"))
        if s == "all" { return .all }
        guard !scenario.sessionNames(for: .named(s)).isEmpty else {
            let groups = Array(Set(scenario.sessions.map(\.group))).sorted()
            let near = NearMatch.closest(s, among: scenario.sessions.map(\.name) + groups, limit: 1).first
            throw fail(
                n.line,
                o.child("session"),
                "no session or session group named '\(s)'" + (near.map { " (did you mean '\($0)'?)" } ?? "")
                    + "; sessions: all, \(groups.joined(separator: ", "))"
            )
        }
        return .named(s)
    }

    mutating func actions(_ node: JSONNode, scenario: E2EScenario) throws(E2EScenarioError) -> [E2EAction] {
        guard case .array(let items) = node.value else {
            throw fail(node.line, "actions", "expected an array, got \(node.kindName)")
        }
        var out: [E2EAction] = []
        var previousAt: Int64 = 0
        var labels: Set<String> = []
        // Daemons killed (or partitioned) and NATS nodes killed (or suspended) so far, by name ("" = the only daemon).
        var daemonsDown: Set<String> = []
        var partitioned: Set<String> = []
        var nodesDown: Set<String> = []
        var nodesSuspended: Set<String> = []
        let federation = scenario.federation
        let nodes = federation?.nodeNames ?? []
        var ids: [String: Int] = [:]
        var afters: [(String, Int, String)] = []
        for (i, item) in items.enumerated() {
            let path = "actions[\(i)]"
            guard case .object(let members) = item.value else {
                throw fail(item.line, path, "expected an object, got \(item.kindName)")
            }
            let typeMember = members.first { $0.key == "type" }
            guard let typeMember else { throw fail(item.line, "\(path).type", "missing required field") }
            let type = try string(typeMember.value, "\(path).type")
            if type == "assert" {
                let step = try assertion(item, path, scenario: scenario)
                if case .after(let id) = step.anchor { afters.append((id, step.line, "\(path).after")) }
                assertions.append(step)
                continue
            }
            guard let fields = Decoding.actionFields[type] else {
                throw fail(
                    typeMember.value.line,
                    "\(path).type",
                    "unknown action type '\(type)'; known: \((Decoding.actionFields.keys.sorted() + ["assert"]).sorted().joined(separator: ", "))"
                )
            }
            let o = try object(item, path, allowed: ["at", "type", "note", "repeat", "id"] + fields)
            var actionID: String?
            if let n = o.members["id"]?.value {
                let id = try string(n, o.child("id"))
                guard Decoding.validName(id) else {
                    throw fail(n.line, o.child("id"), "must be 1–64 characters without spaces")
                }
                if let first = ids[id] {
                    throw fail(n.line, o.child("id"), "id '\(id)' is used twice (first on line \(first))")
                }
                guard o.members["repeat"] == nil else {
                    throw fail(
                        n.line,
                        o.child("id"),
                        "a repeated action cannot have an id (an assert step's after names one performance)"
                    )
                }
                ids[id] = n.line
                actionID = id
            }
            let atNode = try required(o, "at")
            let at = try duration(atNode, o.child("at"))
            guard at >= previousAt else {
                throw fail(
                    atNode.line,
                    o.child("at"),
                    "actions must be in time order: \(at) ms is before the previous action's \(previousAt) ms"
                )
            }
            previousAt = at
            var note: String?
            if let n = o.members["note"]?.value { note = try string(n, o.child("note")) }
            var every: Int64 = 0
            var count: Int64 = 1
            if let r = o.members["repeat"]?.value {
                let ro = try object(r, o.child("repeat"), allowed: ["every", "count"])
                every = try duration(try required(ro, "every"), ro.child("every"), positive: true)
                count = try integer(try required(ro, "count"), ro.child("count"), in: 1...100_000)
            }
            var kinds: [E2EAction.Kind] = []
            var extra: [E2EAction] = []
            switch type {
            case "posture":
                let t = try target(o, scenario: scenario)
                var cycle: [E2EPosture] = []
                if let n = o.members["posture"]?.value { cycle = [try posture(n, o.child("posture"))] }
                if let n = o.members["postures"]?.value {
                    guard o.members["posture"] == nil else {
                        throw fail(n.line, o.child("postures"), "give either posture or postures, not both")
                    }
                    guard case .array(let ps) = n.value, !ps.isEmpty else {
                        throw fail(n.line, o.child("postures"), "expected a non-empty array of postures")
                    }
                    for (k, p) in ps.enumerated() { cycle.append(try posture(p, "\(o.child("postures"))[\(k)]")) }
                }
                guard !cycle.isEmpty else { throw fail(o.line, o.child("posture"), "missing required field") }
                for k in 0..<Int(count) { kinds.append(.posture(t, cycle[k % cycle.count])) }
            case "appState":
                let t = try target(o, scenario: scenario)
                let n = try required(o, "appState")
                kinds = [.appState(t, try choice(n, o.child("appState"), E2ESessionSpec.appStates))]
            case "createOrder":
                var id: String?
                var customer: String?
                if let n = o.members["order"]?.value {
                    let s = try string(n, o.child("order"))
                    guard Decoding.validOrder(s) else {
                        throw fail(n.line, o.child("order"), "order ids are 1–64 characters of A–Z a–z 0–9 - _ .")
                    }
                    guard count == 1 else {
                        throw fail(n.line, o.child("order"), "a repeated createOrder cannot name its order")
                    }
                    id = s
                }
                if let n = o.members["customer"]?.value {
                    customer = try string(n, o.child("customer"))
                    guard !customer!.isEmpty else { throw fail(n.line, o.child("customer"), "must not be empty") }
                }
                var daemon: String?
                if let n = o.members["daemon"]?.value {
                    daemon = try daemonName(n, o.child("daemon"), federation: federation)
                }
                var expect = E2ECreateExpectation.created
                if let e = o.members["expect"]?.value {
                    expect = E2ECreateExpectation(
                        rawValue: try choice(e, o.child("expect"), E2ECreateExpectation.allCases.map(\.rawValue))
                    )!
                    guard expect != .federationUnavailable || federation != nil else {
                        throw fail(
                            e.line,
                            o.child("expect"),
                            "federationUnavailable needs a federation block: a daemon without one never refuses for it"
                        )
                    }
                }
                kinds = [.createOrder(id: id, customer: customer, daemon: daemon, expect: expect)]
            case "cancelOrder":
                let n = try required(o, "order")
                let order = try string(n, o.child("order"))
                guard Decoding.validOrder(order) else {
                    throw fail(n.line, o.child("order"), "order ids are 1–64 characters of A–Z a–z 0–9 - _ .")
                }
                var expect = E2ECancelExpectation.any
                if let e = o.members["expect"]?.value {
                    expect = E2ECancelExpectation(
                        rawValue: try choice(
                            e,
                            o.child("expect"),
                            ["canceled", "cancelFailed", "any"] + (federation == nil ? [] : ["federationUnavailable"])
                        )
                    )!
                }
                var daemon: String?
                if let n = o.members["daemon"]?.value {
                    daemon = try daemonName(n, o.child("daemon"), federation: federation)
                }
                kinds = [.cancelOrder(order: order, expect: expect, daemon: daemon)]
            case "backendStall":
                var order: String?
                if let n = o.members["order"]?.value {
                    order = try string(n, o.child("order"))
                    guard Decoding.validOrder(order!) else {
                        throw fail(n.line, o.child("order"), "order ids are 1–64 characters of A–Z a–z 0–9 - _ .")
                    }
                }
                let d = try duration(try required(o, "duration"), o.child("duration"), positive: true)
                var daemon: String?
                if let n = o.members["daemon"]?.value {
                    daemon = try daemonName(n, o.child("daemon"), federation: federation)
                }
                kinds = [.backendStall(order: order, durationMilliseconds: d, daemon: daemon)]
            case "addToxic":
                let (toxic, removeAfter) = try toxic(o, scenario: scenario)
                guard count == 1 else { throw fail(o.line, o.child("repeat"), "addToxic cannot repeat") }
                guard !labels.contains(toxic.label) else {
                    throw fail(
                        o.members["label"]!.value.line,
                        o.child("label"),
                        "a toxic labelled '\(toxic.label)' is already added"
                    )
                }
                labels.insert(toxic.label)
                kinds = [.addToxic(toxic)]
                if let removeAfter {
                    extra.append(
                        E2EAction(
                            at: at + removeAfter,
                            .removeToxic(label: toxic.label),
                            line: item.line,
                            note: "end of \(toxic.label)"
                        )
                    )
                }
            case "removeToxic":
                let labelNode = o.members["label"]?.value
                let allNode = o.members["all"]?.value
                if let labelNode {
                    guard allNode == nil else {
                        throw fail(labelNode.line, o.child("label"), "give either label or all, not both")
                    }
                    let l = try string(labelNode, o.child("label"))
                    guard labels.contains(l) else {
                        throw fail(labelNode.line, o.child("label"), "no toxic labelled '\(l)' was added before")
                    }
                    kinds = [.removeToxic(label: l)]
                } else if let allNode {
                    guard case .bool(true) = allNode.value else {
                        throw fail(allNode.line, o.child("all"), "must be true")
                    }
                    kinds = [.removeToxic(label: nil)]
                } else {
                    throw fail(o.line, o.child("label"), "missing required field (or \"all\": true)")
                }
            case "clock":
                let t = try target(o, scenario: scenario)
                var step: Int64?
                var drift: Double?
                if let n = o.members["step"]?.value {
                    step = try duration(n, o.child("step"), signed: true)
                    guard abs(step!) <= 86_400_000 else {
                        throw fail(n.line, o.child("step"), "must be within ±24h, got \(step!) ms")
                    }
                }
                if let n = o.members["drift"]?.value { drift = try number(n, o.child("drift"), in: -100_000...100_000) }
                guard step != nil || drift != nil else {
                    throw fail(o.line, o.child("step"), "a clock action needs step, drift or both")
                }
                kinds = [.clock(t, stepMilliseconds: step, driftPPM: drift)]
            case "killDaemon", "restartDaemon":
                var daemon: String?
                if let n = o.members["daemon"]?.value {
                    daemon = try daemonName(n, o.child("daemon"), federation: federation)
                }
                let key = daemon ?? federation?.daemons.first?.name ?? ""
                let which = federation == nil ? "the daemon" : "daemon \(key)"
                guard count == 1 else { throw fail(o.line, o.child("repeat"), "\(type) cannot repeat") }
                if type == "killDaemon" {
                    guard !daemonsDown.contains(key) else {
                        throw fail(
                            typeMember.value.line,
                            o.child("type"),
                            "\(which) is already killed; restart it first"
                        )
                    }
                    daemonsDown.insert(key)
                    kinds = [.killDaemon(daemon: daemon)]
                } else {
                    guard daemonsDown.contains(key) else {
                        throw fail(
                            typeMember.value.line,
                            o.child("type"),
                            "restartDaemon needs an earlier killDaemon" + (federation == nil ? "" : " of \(key)")
                        )
                    }
                    daemonsDown.remove(key)
                    kinds = [.restartDaemon(daemon: daemon)]
                }
            case "moveSession":
                let t = try target(o, scenario: scenario)
                let n = try required(o, "daemon")
                kinds = [.moveSession(t, daemon: try daemonName(n, o.child("daemon"), federation: federation))]
            case "partitionDaemon", "healDaemon":
                let n = try required(o, "daemon")
                let d = try daemonName(n, o.child("daemon"), federation: federation)
                guard count == 1 else { throw fail(o.line, o.child("repeat"), "\(type) cannot repeat") }
                if type == "partitionDaemon" {
                    guard !partitioned.contains(d) else {
                        throw fail(n.line, o.child("daemon"), "daemon \(d) is already partitioned; heal it first")
                    }
                    partitioned.insert(d)
                    kinds = [.partitionDaemon(daemon: d)]
                } else {
                    guard partitioned.contains(d) else {
                        throw fail(n.line, o.child("daemon"), "healDaemon needs an earlier partitionDaemon of \(d)")
                    }
                    partitioned.remove(d)
                    kinds = [.healDaemon(daemon: d)]
                }
            case "killNats", "restartNats", "suspendNats", "resumeNats":
                guard federation != nil else {
                    throw fail(
                        typeMember.value.line,
                        o.child("type"),
                        "\(type) needs a federation block (NATS nodes); add \"federation\": {\"nats\": 3, \"daemons\": 3}"
                    )
                }
                let n = try required(o, "node")
                let node = try nodeName(n, o.child("node"), nodes: nodes)
                guard count == 1 else { throw fail(o.line, o.child("repeat"), "\(type) cannot repeat") }
                switch type {
                case "killNats":
                    guard !nodesDown.contains(node) else {
                        throw fail(n.line, o.child("node"), "node \(node) is already killed; restart it first")
                    }
                    guard !nodesSuspended.contains(node) else {
                        throw fail(n.line, o.child("node"), "node \(node) is suspended; resume it first")
                    }
                    nodesDown.insert(node)
                    kinds = [.killNats(node: node)]
                case "restartNats":
                    guard nodesDown.remove(node) != nil else {
                        throw fail(n.line, o.child("node"), "restartNats needs an earlier killNats of \(node)")
                    }
                    kinds = [.restartNats(node: node)]
                case "suspendNats":
                    guard !nodesDown.contains(node), !nodesSuspended.contains(node) else {
                        throw fail(
                            n.line,
                            o.child("node"),
                            "node \(node) is already \(nodesDown.contains(node) ? "killed" : "suspended")"
                        )
                    }
                    nodesSuspended.insert(node)
                    kinds = [.suspendNats(node: node)]
                default:
                    guard nodesSuspended.remove(node) != nil else {
                        throw fail(n.line, o.child("node"), "resumeNats needs an earlier suspendNats of \(node)")
                    }
                    kinds = [.resumeNats(node: node)]
                }
            case "suspendClient":
                kinds = [.suspendClient(try target(o, scenario: scenario))]
            case "resumeClient":
                kinds = [.resumeClient(try target(o, scenario: scenario))]
            default:
                break
            }
            for k in 0..<Int(count) {
                let kind = kinds.count == Int(count) ? kinds[k] : kinds[0]
                var a = E2EAction(at: at + every * Int64(k), kind, line: item.line, note: note)
                a.id = actionID
                out.append(a)
            }
            out += extra
        }
        for (id, line, path) in afters where ids[id] == nil {
            throw fail(
                line,
                path,
                "no action has the id '\(id)'; ids: \(ids.keys.sorted().joined(separator: ", "))\(ids.isEmpty ? "(none: give the action an \"id\")" : "")"
            )
        }
        if let d = daemonsDown.sorted().first {
            throw fail(
                node.line,
                "actions",
                (d.isEmpty ? "the daemon is" : "daemon \(d) is")
                    + " killed and never restarted; add a restartDaemon action"
            )
        }
        if let d = partitioned.sorted().first {
            throw fail(node.line, "actions", "daemon \(d) is partitioned and never healed; add a healDaemon action")
        }
        if let n = nodesDown.sorted().first {
            throw fail(node.line, "actions", "NATS node \(n) is killed and never restarted; add a restartNats action")
        }
        if let n = nodesSuspended.sorted().first {
            throw fail(node.line, "actions", "NATS node \(n) is suspended and never resumed; add a resumeNats action")
        }
        // Stable sort: equal times keep file order.
        return out.enumerated().sorted {
            ($0.element.atMilliseconds, $0.offset) < ($1.element.atMilliseconds, $1.offset)
        }
        .map(\.element)
    }

    /// An assertion step: `{"type": "assert", "at" | "after", "name"?, "note"?, "session", "order"?, "within"?,
    /// "expect": {…}}` (`Protocol/E2E.md` §2.4).
    func assertion(_ item: JSONNode, _ path: String, scenario: E2EScenario) throws(E2EScenarioError) -> E2EAssertion {
        let o = try object(
            item,
            path,
            allowed: ["type", "at", "after", "name", "note", "session", "order", "within", "expect"]
        )
        let index = assertions.count + 1
        let anchor: E2EAssertion.Anchor
        if let n = o.members["at"]?.value {
            guard o.members["after"] == nil else {
                throw fail(n.line, o.child("at"), "give either at or after, not both")
            }
            anchor = .at(try duration(n, o.child("at")))
        } else if let n = o.members["after"]?.value {
            anchor = .after(try string(n, o.child("after")))
        } else {
            throw fail(o.line, o.child("at"), "missing required field (or after: an action's id)")
        }
        var name = "step \(index)"
        if let n = o.members["name"]?.value {
            name = try string(n, o.child("name"))
            guard !name.isEmpty, name.count <= 200 else {
                throw fail(n.line, o.child("name"), "must be 1–200 characters")
            }
        }
        if let n = o.members["note"]?.value { _ = try string(n, o.child("note")) }
        let target = try self.target(o, scenario: scenario)
        var order: String?
        if let n = o.members["order"]?.value {
            let s = try string(n, o.child("order"))
            guard Decoding.validOrder(s) else {
                throw fail(n.line, o.child("order"), "order ids are 1–64 characters of A–Z a–z 0–9 - _ .")
            }
            order = s
        }
        var within: Int64 = 250
        if let n = o.members["within"]?.value { within = try duration(n, o.child("within")) }
        guard within <= 600_000 else {
            throw fail(o.members["within"]!.value.line, o.child("within"), "must be at most 10m, got \(within) ms")
        }
        let expectNode = try required(o, "expect")
        let e = try object(
            expectNode,
            o.child("expect"),
            allowed: [
                "status", "stale", "remaining", "island", "lockScreen", "arrangement", "sizeClass", "rects", "overflow",
                "fits", "sync",
            ]
        )
        var checks: [E2EAssertionCheck] = []
        func bool(_ n: JSONNode, _ p: String) throws(E2EScenarioError) -> Bool {
            guard case .bool(let b) = n.value else {
                throw fail(n.line, p, "expected true or false, got \(n.kindName)")
            }
            return b
        }
        for key in e.order {
            let n = e.members[key]!.value
            let p = e.child(key)
            switch key {
            case "status": checks.append(.status(try choice(n, p, E2EStatusNames.all)))
            case "stale": checks.append(.stale(try bool(n, p)))
            case "remaining":
                if case .object = n.value {
                    let r = try object(n, p, allowed: ["value", "tolerance"])
                    let v = try duration(try required(r, "value"), r.child("value"))
                    var tol: Int64 = 1000
                    if let t = r.members["tolerance"]?.value { tol = try duration(t, r.child("tolerance")) }
                    checks.append(.remaining(v, tolerance: tol))
                } else {
                    checks.append(.remaining(try duration(n, p), tolerance: 1000))
                }
            case "island": checks.append(.island(try choice(n, p, E2EAssertionCheck.islandValues)))
            case "lockScreen":
                switch n.value {
                case .bool(let b): checks.append(.onLockScreen(b))
                default: checks.append(.lockScreen(Int(try integer(n, p, in: 0...64))))
                }
            case "arrangement": checks.append(.arrangement(try choice(n, p, E2EAssertionCheck.arrangements)))
            case "sizeClass": checks.append(.sizeClass(try choice(n, p, E2EAssertionCheck.sizeClasses)))
            case "overflow": checks.append(.overflow(try bool(n, p)))
            case "fits":
                let list: [JSONNode]
                if case .array(let items) = n.value { list = items } else { list = [n] }
                guard !list.isEmpty else { throw fail(n.line, p, "expected an element name or a non-empty array") }
                for (k, x) in list.enumerated() {
                    let s = try string(x, list.count == 1 && n.kindName != "array" ? p : "\(p)[\(k)]")
                    guard !s.isEmpty else { throw fail(x.line, p, "must not be empty") }
                    checks.append(.fits(s))
                }
            case "sync": checks.append(.sync(try choice(n, p, E2EAssertionCheck.syncStates)))
            case "rects":
                guard case .array(let items) = n.value, !items.isEmpty else {
                    throw fail(n.line, p, "expected a non-empty array of {\"rect\": A, RELATION: B}")
                }
                let relations = E2ERectRelation.allCases.map(\.rawValue)
                for (k, x) in items.enumerated() {
                    let rp = "\(p)[\(k)]"
                    let ro = try object(x, rp, allowed: ["rect"] + relations)
                    let a = try string(try required(ro, "rect"), ro.child("rect"))
                    let given = ro.order.filter { $0 != "rect" }
                    guard given.count == 1, let rel = E2ERectRelation(rawValue: given[0]) else {
                        throw fail(
                            x.line,
                            rp,
                            "give exactly one relation of: \(relations.joined(separator: ", ")); got \(given.isEmpty ? "none" : given.joined(separator: ", "))"
                        )
                    }
                    let b = try string(ro.members[given[0]]!.value, ro.child(given[0]))
                    guard !a.isEmpty, !b.isEmpty else { throw fail(x.line, rp, "rect names must not be empty") }
                    checks.append(.rect(a, rel, b))
                }
            default: break
            }
        }
        guard !checks.isEmpty else {
            throw fail(
                expectNode.line,
                o.child("expect"),
                "needs at least one of: status, stale, remaining, island, lockScreen, arrangement, sizeClass, rects, overflow, fits, sync"
            )
        }
        return E2EAssertion(
            index: index,
            name: name,
            anchor: anchor,
            withinMilliseconds: within,
            target: target,
            order: order,
            checks: checks,
            line: item.line
        )
    }

    func toxic(_ o: Object, scenario: E2EScenario) throws(E2EScenarioError) -> (E2EToxic, Int64?) {
        let labelNode = try required(o, "label")
        let label = try string(labelNode, o.child("label"))
        guard Decoding.validName(label) else {
            throw fail(labelNode.line, o.child("label"), "must be 1–64 characters without spaces")
        }
        let kindNode = try required(o, "toxic")
        let kind = try choice(kindNode, o.child("toxic"), E2EToxic.parameters.keys.sorted())
        let targetNode = try required(o, "target")
        let to = try object(targetNode, o.child("target"), allowed: ["session", "scope"])
        let target: E2EToxicTarget
        if let n = to.members["session"]?.value {
            guard to.members["scope"] == nil else {
                throw fail(n.line, to.child("session"), "give either session or scope, not both")
            }
            let s = try string(n, to.child("session"))
            guard scenario.sessions.contains(where: { $0.name == s }) else {
                let near = NearMatch.closest(s, among: scenario.sessions.map(\.name), limit: 1).first
                throw fail(
                    n.line,
                    to.child("session"),
                    "no session named '\(s)'" + (near.map { " (did you mean '\($0)'?)" } ?? "")
                )
            }
            target = .session(s)
        } else if let n = to.members["scope"]?.value {
            target = .scope(try choice(n, to.child("scope"), ["all", "minority", "majority", "one"]))
        } else {
            throw fail(targetNode.line, to.child("session"), "missing required field (or scope)")
        }
        var direction = "down"
        if let n = o.members["direction"]?.value { direction = try choice(n, o.child("direction"), ["down", "up"]) }
        var params: [String: Double] = [:]
        let allowed = E2EToxic.parameters[kind]!
        if let n = o.members["params"]?.value {
            let po = try object(n, o.child("params"), allowed: allowed.keys.sorted())
            for key in po.order {
                let node = po.members[key]!.value
                let x = try number(node, po.child(key), in: allowed[key]!)
                if E2EToxic.integerParameters.contains(key) && x != x.rounded() {
                    throw fail(node.line, po.child(key), "must be a whole number, got \(x)")
                }
                params[key] = x
            }
        }
        var toxicity: Double?
        if let n = o.members["toxicity"]?.value { toxicity = try number(n, o.child("toxicity"), in: 0...1) }
        var seed: UInt64?
        if let n = o.members["seed"]?.value { seed = UInt64(try integer(n, o.child("seed"), in: 0...Int64.max)) }
        var removeAfter: Int64?
        if let n = o.members["duration"]?.value { removeAfter = try duration(n, o.child("duration"), positive: true) }
        return (
            E2EToxic(
                label: label,
                toxic: kind,
                target: target,
                direction: direction,
                params: params,
                toxicity: toxicity,
                seed: seed
            ), removeAfter
        )
    }
}

/// The order statuses of `PROTOCOL.md` §5.1, in lifecycle order.
public enum E2EStatusNames {
    /// Every status.
    public static let all = ["created", "cooking", "awaitingPickup", "pickedUp", "delivering", "delivered", "canceled"]
    /// The statuses that end an order.
    public static let terminal: Set<String> = ["delivered", "canceled"]
}
