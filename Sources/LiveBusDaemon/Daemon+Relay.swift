import Foundation
import LiveBusClock
import LiveBusCore
import LiveBusLayout
import LiveBusLoop
import LiveBusWire

/// A command relayed to phones (push, clock fault) whose answers are gathered for the admin who asked.
final class PendingRelay {
    /// `nil` for a push that came through the APNs endpoint (answered there; the verdicts go to the push log).
    let admin: Session?
    let requestID: UInt64
    var waiting: Set<String>
    var answers: [String: JSONValue] = [:]
    var timer: (any BusTimer)?
    let kind: String
    /// Session id → name, for phones that do not answer.
    var names: [String: String] = [:]
    /// The push id (`push` relays), repeated in a timed-out phone's result.
    var pushID: JSONValue?

    init(admin: Session?, requestID: UInt64, waiting: Set<String>, kind: String) {
        self.admin = admin
        self.requestID = requestID
        self.waiting = waiting
        self.kind = kind
    }
}

/// Commands that act on phones from outside: posture, app state, profile, clock faults, pushes; and backend stalls.
/// Sessions are addressed like simctl addresses simulators: by name, by id, `all`, or `current` when exactly one
/// phone is attached.
extension Daemon {
    func resolveSessions(_ target: String?) -> Result<[Session], ResultErrorBody> {
        let phones = sessions.values.filter { $0.role == .session && $0.phase == .established }
            .sorted { $0.id.count < $1.id.count || ($0.id.count == $1.id.count && $0.id < $1.id) }
        guard let target, !target.isEmpty else {
            return .failure(
                ResultErrorBody(
                    code: "invalidArguments",
                    message: "no session given",
                    recovery: "pass a session name, id, all or current"
                )
            )
        }
        switch target {
        case "all":
            return phones.isEmpty
                ? .failure(
                    ResultErrorBody(code: "noSession", message: "no phone is attached", recovery: "livebus attach …")
                )
                : .success(phones)
        case "current":
            guard phones.count == 1 else {
                return .failure(
                    ResultErrorBody(
                        code: "ambiguousSession",
                        message: "'current' needs exactly one attached phone; \(phones.count) are attached",
                        recovery: "name one: \(phones.map(\.name).joined(separator: ", "))"
                    )
                )
            }
            return .success(phones)
        default:
            if let s = phones.first(where: { $0.name == target || $0.id == target }) { return .success([s]) }
            return .failure(
                ResultErrorBody(
                    code: "unknownSession",
                    message: "no attached phone named '\(target)'"
                        + (NearMatch.closest(target, among: phones.map(\.name), limit: 1).first.map {
                            " (did you mean '\($0)'?)"
                        } ?? ""),
                    recovery: phones.isEmpty
                        ? "no phone is attached" : "attached: \(phones.map(\.name).joined(separator: ", ")), or all"
                )
            )
        }
    }

    /// Handles the session-addressed commands; returns `false` when `c` is not one of them.
    func relayCommand(_ c: CommandBody, id: UInt64, from admin: Session) -> Bool {
        switch c.command {
        case "session.posture", "session.app-state", "session.profile", "session.clock", "push", "session.simulate":
            break
        case "backend.stall":
            backendStall(c.args, id: id, from: admin)
            return true
        default:
            return false
        }
        let targets: [Session]
        switch resolveSessions(c.args["session"]?.stringValue) {
        case .failure(let e):
            reply(admin, id: id, ResultBody(ok: false, error: e))
            return true
        case .success(let t): targets = t
        }
        switch c.command {
        case "session.posture":
            guard case .object(let p)? = c.args["posture"], p["foldState"]?.stringValue != nil else {
                replyError(
                    admin,
                    id: id,
                    code: "invalidArguments",
                    "session.posture needs posture {foldState, orientation?}"
                )
                return true
            }
            // What is not given (orientation, keyboard) stays as the phone has it. The window follows the screen on
            // a fold or orientation change unless a split-view width is pinned (LiveBusLayout.WindowFollow);
            // `"window": "full"` clears window and pin.
            var bodies: [(Session, PostureBody)] = []
            var notes: [JSONValue] = []
            for s in targets {
                var merged = p
                let clearWindow = merged["window"]?.stringValue == "full"
                merged["window"] = nil
                if clearWindow {
                    for k in ["windowWidth", "windowHeight", "splitViewWidth"] { merged[k] = nil }
                }
                if let current = s.posture, merged["orientation"] == nil {
                    merged["orientation"] = .string(current.orientation)
                }
                if let pin = merged["splitViewWidth"]?.doubleValue, merged["windowWidth"] == nil,
                    case .success(let catalog) = PostureCatalog.catalog, let device = s.device,
                    let d = try? catalog.device(device),
                    let fold = FoldState(rawValue: p["foldState"]?.stringValue ?? ""),
                    let orientation = Orientation(rawValue: merged["orientation"]?.stringValue ?? "portrait")
                {
                    // A newly pinned split-view width: that width, the screen's height.
                    let pinned = WindowFollow.pinned(device: d, posture: (fold, orientation), width: pin)
                    if let w = pinned.window {
                        merged["windowWidth"] = .number(w.width)
                        merged["windowHeight"] = .number(w.height)
                    }
                    if let note = pinned.note { notes.append(.string("\(s.name): \(note)")) }
                }
                if let current = s.posture {
                    if !clearWindow && merged["windowWidth"] == nil && merged["splitViewWidth"] == nil {
                        let follow = Daemon.followWindow(current, merged, device: s.device)
                        if let w = follow.window {
                            merged["windowWidth"] = .number(w.width)
                            merged["windowHeight"] = .number(w.height)
                        }
                        if let pin = follow.splitViewWidth { merged["splitViewWidth"] = .number(pin) }
                        if let note = follow.note { notes.append(.string("\(s.name): \(note)")) }
                    }
                }
                guard let body = Daemon.postureBody(merged) else { continue }
                do { try Daemon.validate(posture: body, device: s.device) } catch {
                    replyError(
                        admin,
                        id: id,
                        code: error.code.name,
                        "\(s.name): \(error.message)",
                        recovery: "see `livebus devices`"
                    )
                    return true
                }
                bodies.append((s, body))
            }
            for (s, body) in bodies { send(s, .posture, body: PostureChangeBody(posture: body)) }
            var data: [String: JSONValue] = ["sessions": .array(targets.map { .string($0.name) })]
            if !notes.isEmpty { data["notes"] = .array(notes) }
            reply(admin, id: id, ResultBody(ok: true, data: .object(data)))
        case "session.app-state":
            guard let state = c.args["appState"]?.stringValue, Daemon.appStates.contains(state) else {
                replyError(
                    admin,
                    id: id,
                    code: "invalidArguments",
                    "appState must be one of \(Daemon.appStates.joined(separator: ", "))"
                )
                return true
            }
            for s in targets { send(s, .posture, body: PostureChangeBody(appState: state)) }
            reply(
                admin,
                id: id,
                ResultBody(ok: true, data: .object(["sessions": .array(targets.map { .string($0.name) })]))
            )
        case "session.profile":
            let p = ProfileBody(
                lowPowerMode: c.args["lowPowerMode"]?.boolValue,
                frequentUpdates: c.args["frequentUpdates"]?.boolValue,
                liveActivities: c.args["liveActivities"]?.stringValue
            )
            for s in targets { send(s, .posture, body: PostureChangeBody(profile: p)) }
            reply(
                admin,
                id: id,
                ResultBody(ok: true, data: .object(["sessions": .array(targets.map { .string($0.name) })]))
            )
        default:
            // clock, push, simulate: the phone does the work and answers.
            if let problem = Daemon.relayArgumentProblem(c) {
                replyError(admin, id: id, code: "invalidArguments", problem)
                return true
            }
            startRelay(c, id: id, admin: admin, targets: targets)
        }
        return true
    }

    /// Longest clock step, stall or "not ready" period a command may ask for, in milliseconds (24 hours).
    static let longestCommandDurationMilliseconds: Int64 = 86_400_000

    /// Why a relayed command's arguments are out of range (the phone would otherwise act on absurd values), or
    /// `nil`: `stepMs` within ±24 h, `driftPPM` within ±100 000, `notReadyMs` 0…24 h, `startFailures` 0…1000.
    static func relayArgumentProblem(_ c: CommandBody) -> String? {
        let day = longestCommandDurationMilliseconds
        func int(_ key: String, _ range: ClosedRange<Int64>, _ what: String) -> String? {
            guard let v = c.args[key] else { return nil }
            guard let n = v.int64Value, range.contains(n) else {
                return "\(c.command): \(key) must be an integer in \(range.lowerBound)…\(range.upperBound) (\(what))"
            }
            return nil
        }
        switch c.command {
        case "session.clock":
            if c.args["stepMs"] == nil && c.args["driftPPM"] == nil {
                return "session.clock needs stepMs (-86400000…86400000 ms) and/or driftPPM (-100000…100000)"
            }
            if let v = c.args["driftPPM"], !(v.doubleValue.map { abs($0) <= 100_000 } ?? false) {
                return "session.clock: driftPPM must be a number in -100000…100000 (parts per million)"
            }
            return int("stepMs", -day...day, "milliseconds, at most 24 h either way")
        case "session.simulate":
            return int("notReadyMs", 0...day, "milliseconds, at most 24 h")
                ?? int("startFailures", 0...1000, "how many starts fail")
        default:
            return nil
        }
    }

    static func postureBody(_ p: [String: JSONValue]) -> PostureBody? {
        guard let fold = p["foldState"]?.stringValue else { return nil }
        return PostureBody(
            foldState: fold,
            orientation: p["orientation"]?.stringValue ?? "portrait",
            windowWidth: p["windowWidth"]?.doubleValue,
            windowHeight: p["windowHeight"]?.doubleValue,
            hingeAngle: p["hingeAngle"]?.doubleValue,
            keyboardHeight: p["keyboardHeight"]?.doubleValue,
            splitViewWidth: p["splitViewWidth"]?.doubleValue
        )
    }

    /// The window a phone gets when `session.posture` moves it from `current` to `requested` without naming a
    /// window: the rule of ``WindowFollow`` on the session's catalog device. An unknown device or fold state
    /// keeps the current window (the posture check then reports the problem).
    static func followWindow(_ current: PostureBody, _ requested: [String: JSONValue], device: String?)
        -> WindowFollow.Outcome
    {
        var window: Size?
        if let w = current.windowWidth, let h = current.windowHeight { window = Size(width: w, height: h) }
        let keep = WindowFollow.Outcome(window: window, splitViewWidth: current.splitViewWidth, note: nil)
        guard let device, case .success(let catalog) = PostureCatalog.catalog, let d = try? catalog.device(device),
            let fromFold = FoldState(rawValue: current.foldState),
            let fromOrientation = Orientation(rawValue: current.orientation),
            let toFold = FoldState(rawValue: requested["foldState"]?.stringValue ?? ""),
            let toOrientation = Orientation(rawValue: requested["orientation"]?.stringValue ?? current.orientation)
        else { return keep }
        return WindowFollow.next(
            device: d,
            from: (fromFold, fromOrientation),
            window: window,
            splitViewWidth: current.splitViewWidth,
            to: (toFold, toOrientation)
        )
    }

    func startRelay(_ c: CommandBody, id: UInt64, admin: Session?, targets: [Session]) {
        nextRelayID += 1
        let relayID = nextRelayID
        let relay = PendingRelay(admin: admin, requestID: id, waiting: Set(targets.map(\.id)), kind: c.command)
        relays[relayID] = relay
        var args = c.args
        if c.command == "push" {
            if args["pushID"] == nil {  // APNs pushes come with the id their 200 answer named
                args["pushID"] = .string(newPushID())
            }
            relay.pushID = args["pushID"]
            if let schema = options.activitySchemaText { args["activitySchema"] = .string(schema) }
            dashboardPushRelayed(args)
        }
        for s in targets { relay.names[s.id] = s.name }
        for s in targets {
            send(s, .command, sequence: relayID, body: CommandBody(command: c.command, args: args))
        }
        relay.timer = loop.scheduleTimer(after: 3000, repeat: 0) { [unowned self] in self.finishRelay(relayID) }
    }

    /// A phone's RESULT for a relayed command.
    func relayAnswered(_ f: Frame, from s: Session) {
        guard let relay = relays[f.sequence], relay.waiting.contains(s.id) else { return }
        let body = try? WireJSON.decode(ResultBody.self, from: f.body)
        var answer: [String: JSONValue] = ["session": .string(s.name), "ok": .bool(body?.ok ?? false)]
        if let d = body?.data { answer["data"] = d }
        if let e = body?.error { answer["error"] = Daemon.jsonValue(e) }
        relay.answers[s.id] = .object(answer)
        relay.waiting.remove(s.id)
        if relay.kind == "push", let d = body?.data {
            pushLog.append(d)
            journalVerdict(d, from: s)
            dashboardPushAnswered(d, from: s)
            apnsPushAnswered(d, from: s)
            if pushLog.count > 1000 { pushLog.removeFirst(pushLog.count - 1000) }
        }
        if relay.waiting.isEmpty { finishRelay(f.sequence) }
    }

    private func finishRelay(_ relayID: UInt64) {
        guard let relay = relays.removeValue(forKey: relayID) else { return }
        relay.timer?.cancel()
        var results = relay.answers.keys.sorted().compactMap { relay.answers[$0] }
        for missing in relay.waiting.sorted() {
            var result: [String: JSONValue] = [
                "session": .string(relay.names[missing] ?? missing), "ok": .bool(false),
                "error": .object([
                    "code": .string("timedOut"),
                    "message": .string("the phone did not answer within 3 s (is it reading? see `livebus status`)"),
                ]),
            ]
            if let id = relay.pushID { result["data"] = .object(["pushID": id]) }
            results.append(.object(result))
        }
        guard let admin = relay.admin, admin.phase == .established else { return }
        reply(admin, id: relay.requestID, ResultBody(ok: true, data: .object(["results": .array(results)])))
    }

    private func backendStall(_ args: [String: JSONValue], id: UInt64, from admin: Session) {
        guard simulator != nil else {
            replyError(
                admin,
                id: id,
                code: "noScenario",
                "no simulator is running",
                recovery: "start livebusd with --scenario"
            )
            return
        }
        guard let ms = args["durationMs"]?.int64Value, ms > 0, ms <= Daemon.longestCommandDurationMilliseconds else {
            replyError(
                admin,
                id: id,
                code: "invalidArguments",
                "backend.stall needs durationMs in 1…86400000 (scenario milliseconds, at most 24 h)"
            )
            return
        }
        if refuseWhileDegraded(admin, id: id) { return }
        do {
            let undo = simulator
            let events = try simulator!.stall(orderID: args["order"]?.stringValue, durationMs: ms, at: clock.now())
            if let e = publish(events, undo: undo) {
                replyStoreRefusal(admin, id: id, e)
                return
            }
            rearmSimulator()
            reply(
                admin,
                id: id,
                ResultBody(
                    ok: true,
                    data: .object(["stalled": args["order"] ?? .string("all"), "durationMs": .number(Double(ms))])
                )
            )
        } catch {
            replyError(admin, id: id, code: "rejected", error.message)
        }
    }
}
