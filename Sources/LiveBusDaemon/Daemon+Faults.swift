import Foundation
import LiveBusCore
import LiveBusFaults
import LiveBusLayout
import LiveBusLoop
import LiveBusWire

/// The fault layer in the daemon's transport: each session's bytes pass through its toxics (toxiproxy's names and
/// parameters; `Protocol/FAULTS.md`). Timers use the loop's monotonic clock, so a wall-clock jump disconnects nobody.
extension Daemon {
    var monotonicMs: Int64 { Int64(loop.nowMilliseconds) }

    /// Writes one encoded frame to a session, through its downstream toxics when it has any.
    func output(_ s: Session, _ encode: (inout [UInt8]) throws(WireError) -> Void) throws(WireError) {
        // Without toxics (the common case) the session's faults are not copied (a copy per delivered EVENT).
        guard s.hasFaults, var f = s.faults, f.downstream.isActive else {
            var failure: WireError?
            s.connection.write { buf in
                do throws(WireError) { try encode(&buf) } catch { failure = error }
            }
            if let failure { throw failure }
            return
        }
        var bytes: [UInt8] = []
        try encode(&bytes)
        let actions = f.downstream.send(bytes, isWholeFrame: true, at: monotonicMs)
        s.faults = f
        run(actions, on: s, direction: .downstream)
        armFaults(s)
    }

    /// Passes bytes read from a session through its upstream toxics; returns what reaches the decoder now.
    func input(_ s: Session, _ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard var f = s.faults, f.upstream.isActive else {
            s.faults?.upstream.noteBypassed(Array(bytes))
            return nil
        }
        let actions = f.upstream.send(Array(bytes), isWholeFrame: false, at: monotonicMs)
        s.faults = f
        run(actions, on: s, direction: .upstream)
        armFaults(s)
        return []
    }

    func run(_ actions: [FaultAction], on s: Session, direction: FaultDirection) {
        for a in actions {
            switch a {
            case .write(let bytes, _):
                if direction == .downstream {
                    s.connection.write(bytes)
                } else {
                    bytes.withUnsafeBytes { receivedAfterFaults($0, from: s) }
                }
            case .closeGracefully:
                closeSession(s, reason: "fault: connection closed by a toxic", flush: true)
            case .reset:
                closeSession(s, reason: "fault: connection reset by a toxic", flush: false)
            }
            if s.phase == .closed { return }
        }
    }

    func armFaults(_ s: Session) {
        s.faultTimer?.cancel()
        s.faultTimer = nil
        guard let f = s.faults, let deadline = f.nextDeadlineMs, s.phase != .closed else { return }
        let delay = max(0, deadline - monotonicMs)
        s.faultTimer = loop.scheduleTimer(after: UInt64(delay), repeat: 0) { [unowned self, weak s] in
            guard let s, var f = s.faults else { return }
            let now = self.monotonicMs
            let down = f.downstream.advance(to: now)
            let up = f.upstream.advance(to: now)
            s.faults = f
            self.run(down, on: s, direction: .downstream)
            self.run(up, on: s, direction: .upstream)
            self.armFaults(s)
        }
    }

    // MARK: - Commands

    /// The per-session `down` toxic that refuses this HELLO: by the name it asks for, or the name of the session its
    /// resume token resumes; nil when none does.
    func sessionDown(for h: HelloBody) -> (String, ToxicSpec)? {
        guard !sessionDownToxics.isEmpty,
            let name = h.name ?? h.resume.flatMap({ resumable[$0.token]?.name }),
            let t = sessionDownToxics[name]?.first(where: { $0.toxicity > 0 })
        else { return nil }
        return (name, t)
    }

    /// Handles `fault.add`, `fault.list`, `fault.remove`, `fault.preset`; returns `false` for other commands.
    func faultCommand(_ c: CommandBody, id: UInt64, from admin: Session) -> Bool {
        switch c.command {
        case "fault.add": faultAdd(c.args, preset: nil, id: id, admin: admin)
        case "fault.preset":
            do {
                let preset = try NetworkPreset.named(c.args["preset"]?.stringValue ?? "")
                faultAdd(c.args, preset: preset, id: id, admin: admin)
            } catch {
                replyError(
                    admin,
                    id: id,
                    code: "unknownPreset",
                    error.message
                        + (NearMatch.closest(
                            c.args["preset"]?.stringValue ?? "",
                            among: NetworkPreset.allCases.map(\.rawValue),
                            limit: 1
                        ).first.map { "; did you mean '\($0)'?" } ?? ""),
                    recovery: "presets: \(NetworkPreset.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
        case "fault.list":
            reply(admin, id: id, ResultBody(ok: true, data: faultList()))
        case "fault.remove": faultRemove(c.args, id: id, admin: admin)
        default: return false
        }
        return true
    }

    func faultList() -> JSONValue {
        var out: [JSONValue] = []
        if !daemonToxics.isEmpty {
            out.append(.object(["session": .string("(daemon)"), "toxics": reportedToxics(daemonToxics)]))
        }
        for s in phones() where !(s.faults?.toxics.isEmpty ?? true) || sessionDownToxics[s.name] != nil {
            let f = s.faults ?? SessionFaults(seed: options.seed, session: s.name)
            out.append(
                .object([
                    "session": .string(s.name),
                    "toxics": reportedToxics(f.toxics + (sessionDownToxics[s.name] ?? []), defaultSeed: f.seed),
                    "seed": .number(Double(f.seed)),
                    "stats": .object([
                        "down": Daemon.statsJSON(f.downstream.stats), "up": Daemon.statsJSON(f.upstream.stats),
                    ]),
                ])
            )
        }
        // Toxics of phones disconnected right now (a reset_peer or limit_data toxic closed them): they come back
        // when the phone resumes, so they are listed and removed like the others.
        for (token, f) in resumedFaults.sorted(by: { $0.key < $1.key }) where !f.toxics.isEmpty {
            out.append(
                .object([
                    "session": .string(resumable[token]?.name ?? "(disconnected)"), "disconnected": .bool(true),
                    "toxics": reportedToxics(
                        f.toxics + (resumable[token].flatMap { sessionDownToxics[$0.name] } ?? []),
                        defaultSeed: f.seed
                    ),
                ])
            )
        }
        let listed = Set(phones().map(\.name)).union(resumedFaults.keys.compactMap { resumable[$0]?.name })
        for (name, downs) in sessionDownToxics.sorted(by: { $0.key < $1.key }) where !listed.contains(name) {
            out.append(
                .object([
                    "session": .string(name), "disconnected": .bool(true), "toxics": reportedToxics(downs),
                ])
            )
        }
        return .array(out)
    }

    /// Toxics as `fault add` and `fault list` report them: `{"id", "kind", "direction", "toxicity", "params",
    /// "seed"}`, each with its effective parameters (defaults filled in, FAULTS.md §3) and its own seed
    /// (``ToxicSpec/reported(defaultSeed:)``; `defaultSeed` nil: the daemon's `--seed`).
    func reportedToxics(_ toxics: [ToxicSpec], defaultSeed: UInt64? = nil) -> JSONValue {
        Daemon.jsonValue(toxics.map { $0.reported(defaultSeed: defaultSeed ?? options.seed) })
    }

    /// What a pipeline did: frames dropped, duplicated, corrupted and reordered, bytes blackholed and discarded.
    static func statsJSON(_ x: FaultStats) -> JSONValue {
        .object([
            "framesDropped": .number(Double(x.framesDropped)), "framesDuplicated": .number(Double(x.framesDuplicated)),
            "framesCorrupted": .number(Double(x.framesCorrupted)),
            "framesReordered": .number(Double(x.framesReordered)),
            "bytesBlackholed": .number(Double(x.bytesBlackholed)), "bytesDiscarded": .number(Double(x.bytesDiscarded)),
        ])
    }

    func phones() -> [Session] {
        sessions.values.filter { $0.role == .session && $0.phase == .established }.sorted { $0.name < $1.name }
    }

    /// The largest seed a COMMAND can carry: JSON numbers are exact integers up to 2^53 (RFC 8259 §6).
    static let largestCommandSeed: UInt64 = 1 << 53

    /// The seed of a `fault.add` command: its `seed` argument, or the daemon's `--seed` (any `UInt64`) without one.
    /// - Returns: The seed, or an `invalidValue` error naming the argument when it is not an integer in
    ///   0…2^53 (a negative, fractional or larger number could not be a seed without losing bits).
    static func faultSeed(_ args: [String: JSONValue], default d: UInt64) -> Result<UInt64, ResultErrorBody> {
        guard let v = args["seed"] else { return .success(d) }
        guard let n = v.doubleValue, n.rounded() == n, n >= 0, n <= Double(largestCommandSeed) else {
            return .failure(
                ResultErrorBody(
                    code: "invalidValue",
                    message: "fault seed \(v) is not an integer in 0…\(largestCommandSeed)",
                    recovery: "pass --seed with a whole number from 0 to \(largestCommandSeed), or leave it out"
                )
            )
        }
        return .success(UInt64(n))
    }

    private func targets(_ args: [String: JSONValue], seed: UInt64) -> Result<[Session], ResultErrorBody> {
        let all = phones()
        let scope: FaultScope
        if let name = args["session"]?.stringValue, !["all", "minority", "majority", "one"].contains(name) {
            guard all.contains(where: { $0.name == name || $0.id == name }) else {
                return .failure(
                    ResultErrorBody(
                        code: "unknownSession",
                        message: "no attached phone named '\(name)'"
                            + (NearMatch.closest(name, among: all.map(\.name), limit: 1).first.map {
                                " (did you mean '\($0)'?)"
                            } ?? ""),
                        recovery: all.isEmpty
                            ? "no phone is attached" : "attached: \(all.map(\.name).joined(separator: ", ")), or all"
                    )
                )
            }
            let resolved = all.first { $0.name == name || $0.id == name }!.name
            scope = .session(resolved)
        } else {
            switch args["scope"]?.stringValue ?? args["session"]?.stringValue ?? "all" {
            case "minority": scope = .minority
            case "majority": scope = .majority
            case "one": scope = .one
            default: scope = .all
            }
        }
        let chosen = Set(FaultTargeting.choose(scope: scope, among: all.map(\.name), seed: seed))
        return .success(all.filter { chosen.contains($0.name) })
    }

    /// A toxic id as FAULTS.md §1 allows: `[A-Za-z0-9_.-]`, 1–64 characters.
    static func isValidToxicID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
                    || c == 0x2E || c == 0x2D
            }
    }

    /// Adds one toxic (`fault.add`) or a preset's toxics (`fault.preset`) to the target sessions, all or nothing:
    /// a toxic that one chosen session cannot take (`duplicateToxic`) leaves every session as it was.
    /// Ids: `toxic.id` if given, else toxiproxy's `<kind>_<downstream|upstream>`; a preset's are
    /// `<preset>-<kind>-<down|up>` and the result's `id` is the preset's name (FAULTS.md §1).
    private func faultAdd(
        _ args: [String: JSONValue],
        preset: NetworkPreset?,
        id: UInt64,
        admin: Session
    ) {
        var specs: [ToxicSpec]
        let faultID: String
        if let preset {
            specs = preset.toxics
            faultID = preset.rawValue
        } else {
            guard case .object(let t)? = args["toxic"], let bytes = try? WireJSON.encode(JSONValue.object(t)) else {
                replyError(
                    admin,
                    id: id,
                    code: "invalidArguments",
                    "fault.add needs a toxic {kind, direction, toxicity, params}"
                )
                return
            }
            let kinds = ToxicKind.allCases.map(\.rawValue).joined(separator: ", ")
            guard let kind = t["kind"]?.stringValue.flatMap(ToxicKind.init(rawValue:)) else {
                replyError(
                    admin,
                    id: id,
                    code: "invalidArguments",
                    "toxic.kind must be one of \(kinds)",
                    recovery: "see `livebus help fault`"
                )
                return
            }
            do { specs = [try JSONDecoder().decode(ToxicSpec.self, from: Data(bytes))] } catch {
                replyError(
                    admin,
                    id: id,
                    code: "invalidArguments",
                    "the \(kind.rawValue) toxic is not valid: direction must be down or up, toxicity a number 0…1, params an object of numbers (frameTypes a list of type codes)",
                    recovery: "see Protocol/FAULTS.md §3 and `livebus help fault`"
                )
                return
            }
            if let given = t["id"]?.stringValue {
                guard Daemon.isValidToxicID(given) else {
                    replyError(
                        admin,
                        id: id,
                        code: "invalidArguments",
                        "toxic id '\(given.prefix(80))' is not valid: use 1–64 of A–Z a–z 0–9 _ . -",
                        recovery: "e.g. --id latency_downstream"
                    )
                    return
                }
                specs[0].id = given
            } else {
                specs[0].id = ToxicSpec(kind: specs[0].kind, direction: specs[0].direction).id
            }
            faultID = specs[0].id
        }
        for spec in specs {
            do { try spec.validate() } catch {
                replyError(admin, id: id, code: "invalidToxic", error.message, recovery: "see `livebus help fault`")
                return
            }
        }
        let ids: JSONValue = .array(specs.map { .string($0.id) })
        let seed: UInt64
        switch Daemon.faultSeed(args, default: options.seed) {
        case .failure(let e):
            reply(admin, id: id, ResultBody(ok: false, error: e))
            return
        case .success(let v): seed = v
        }
        // Each toxic keeps the seed it was added with (FAULTS.md §1): the result and `fault list` show it.
        for i in specs.indices { specs[i].seed = seed }
        // The result: the ids, the toxics with their effective parameters and seed, the seed, the sessions.
        let added: [ToxicSpec] = specs
        func result(_ sessions: [String]) -> ResultBody {
            ResultBody(
                ok: true,
                data: .object([
                    "id": .string(faultID), "ids": ids, "seed": .number(Double(seed)),
                    "toxics": reportedToxics(added, defaultSeed: seed),
                    "sessions": .array(sessions.map { .string($0) }),
                ])
            )
        }
        // `down` aimed at phones (`--session X`, `--minority`, …) refuses only their new connections; without a
        // target it is daemon-wide, as toxiproxy's disabled proxy.
        var sessionDowns: (names: [String], toxics: [ToxicSpec])?
        if specs.contains(where: { $0.kind == .down }), args["session"] != nil || args["scope"] != nil {
            let downs = specs.filter { $0.kind == .down }
            let names: [String]
            switch targets(args, seed: seed) {
            case .failure(let e):
                reply(admin, id: id, ResultBody(ok: false, error: e))
                return
            case .success(let t): names = t.map(\.name)
            }
            for n in names {
                if let held = sessionDownToxics[n]?.first(where: { d in downs.contains { $0.id == d.id } }) {
                    replyError(
                        admin,
                        id: id,
                        code: "invalidToxic",
                        "\(n) already has toxic '\(held.id)' (down); remove it first",
                        recovery: "livebus fault remove \(held.id)"
                    )
                    return
                }
            }
            sessionDowns = (names, downs)
            specs.removeAll { $0.kind == .down }
        }
        func commitSessionDowns() {
            guard let (names, downs) = sessionDowns else { return }
            for n in names {
                sessionDownToxics[n, default: []].append(contentsOf: downs)
                logger.log(.notice, "fault added", [("fault", faultID), ("toxic", "down"), ("session.name", n)])
            }
        }
        if sessionDowns != nil, specs.isEmpty {
            commitSessionDowns()
            reply(admin, id: id, result(sessionDowns!.names))
            return
        }
        if specs.contains(where: { $0.kind == .down }) {
            let downs = specs.filter { $0.kind == .down }
            if let held = daemonToxics.first(where: { d in downs.contains { $0.id == d.id } }) {
                replyError(
                    admin,
                    id: id,
                    code: "invalidToxic",
                    "the daemon already has toxic '\(held.id)' (down); remove it first",
                    recovery: "livebus fault remove \(held.id)"
                )
                return
            }
            daemonToxics.append(contentsOf: downs)
            logger.log(.notice, "fault added", [("fault", faultID), ("toxic", "down"), ("target", "daemon")])
            specs.removeAll { $0.kind == .down }
            if specs.isEmpty {
                reply(admin, id: id, result([]))
                return
            }
        }
        let chosen: [Session]
        switch targets(args, seed: seed) {
        case .failure(let e):
            reply(admin, id: id, ResultBody(ok: false, error: e))
            return
        case .success(let t): chosen = t
        }
        // Every chosen session first, committed only if all can take the toxics.
        var planned: [(Session, SessionFaults, [FaultAction], [FaultAction])] = []
        for s in chosen {
            var f =
                s.faults
                ?? SessionFaults(seed: seed, session: s.name)
            var downActions: [FaultAction] = []
            var upActions: [FaultAction] = []
            do {
                for spec in specs {
                    let (d, u) = try f.add(spec, at: monotonicMs)
                    downActions += d
                    upActions += u
                }
            } catch {
                replyError(
                    admin,
                    id: id,
                    code: "invalidToxic",
                    "\(s.name): \(error.message); nothing was added",
                    recovery: "livebus fault list"
                )
                return
            }
            planned.append((s, f, downActions, upActions))
        }
        commitSessionDowns()
        var applied: [String] = []
        for (s, f, downActions, upActions) in planned {
            s.faults = f
            run(downActions, on: s, direction: .downstream)
            run(upActions, on: s, direction: .upstream)
            armFaults(s)
            applied.append(s.name)
            logger.log(
                .notice,
                "fault added",
                [
                    ("fault", faultID), ("session.name", s.name),
                    ("toxics", specs.map(\.kind.rawValue).joined(separator: ",")),
                ]
            )
        }
        reply(admin, id: id, result(applied))
    }

    private func faultRemove(_ args: [String: JSONValue], id: UInt64, admin: Session) {
        let all = args["all"]?.boolValue ?? false
        guard all || args["id"]?.stringValue != nil else {
            replyError(
                admin,
                id: id,
                code: "invalidArguments",
                "fault.remove needs an id or all",
                recovery: "livebus fault list"
            )
            return
        }
        let faultID = args["id"]?.stringValue ?? ""
        // An id, or a preset's name for all of its toxics (`3g` → `3g-latency-down`, …).
        let isPreset = NetworkPreset(rawValue: faultID) != nil
        func matches(_ toxicID: String) -> Bool {
            all || toxicID == faultID || (isPreset && toxicID.hasPrefix(faultID + "-"))
        }
        // The ids there are now, for a "did you mean" when none matches.
        let known =
            daemonToxics.map(\.id) + sessionDownToxics.values.flatMap { $0.map(\.id) }
            + resumedFaults.values.flatMap { $0.toxics.map(\.id) }
            + phones().flatMap { $0.faults?.toxics.map(\.id) ?? [] }
        var removed = 0
        let beforeDaemon = daemonToxics.count
        daemonToxics.removeAll { matches($0.id) }
        removed += beforeDaemon - daemonToxics.count
        for (name, downs) in sessionDownToxics {
            let kept = downs.filter { !matches($0.id) }
            removed += downs.count - kept.count
            sessionDownToxics[name] = kept.isEmpty ? nil : kept
        }
        for (token, var f) in resumedFaults {
            for t in f.toxics where matches(t.id) {
                _ = f.remove(id: t.id, at: monotonicMs)
                removed += 1
            }
            resumedFaults[token] = f.toxics.isEmpty ? nil : f
        }
        for s in phones() {
            guard var f = s.faults else { continue }
            for t in f.toxics where matches(t.id) {
                let (d, u) = f.remove(id: t.id, at: monotonicMs)
                removed += 1
                s.faults = f
                run(d, on: s, direction: .downstream)
                run(u, on: s, direction: .upstream)
            }
            armFaults(s)
        }
        // Removing all is idempotent (toxiproxy's reset): nothing left is not an error; an unknown id is.
        guard removed > 0 || all else {
            let near = NearMatch.closest(faultID, among: known, limit: 1).first
            replyError(
                admin,
                id: id,
                code: "unknownFault",
                "no fault \(faultID)" + (near.map { " (did you mean '\($0)'?)" } ?? ""),
                recovery: known.isEmpty ? "no fault is set (livebus fault list)" : "see `livebus fault list`"
            )
            return
        }
        reply(admin, id: id, ResultBody(ok: true, data: .object(["removed": .number(Double(removed))])))
    }
}
