import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusCLI

/// One toxic at a time on a real `livebusd` process: the phone it hits still converges to the backend's final state
/// with every sequence applied once and in order; the phone it does not hit sees no added delay.
/// Source: issue 7 "Done when"; Protocol/FAULTS.md.
@Suite(.serialized)
struct E2EFaultTests {
    struct Case: Sendable, CustomStringConvertible {
        var toxic: [String: JSONValue]
        /// Remove the toxic after this many ms (toxics that never let data through on their own).
        var removeAfterMs: UInt64?
        var description: String { toxic["kind"]?.stringValue ?? "?" }
    }

    static func toxic(_ kind: String, _ params: [String: JSONValue] = [:], direction: String = "down") -> [String:
        JSONValue]
    {
        [
            "id": .string(kind), "kind": .string(kind), "direction": .string(direction), "toxicity": .number(1),
            "params": .object(params),
        ]
    }

    static let cases: [Case] = [
        Case(toxic: toxic("latency", ["latencyMs": .number(120), "jitterMs": .number(40)])),
        Case(toxic: toxic("bandwidth", ["rateKBps": .number(4)])),
        Case(
            toxic: toxic("slicer", ["averageSize": .number(12), "sizeVariation": .number(8), "delayUs": .number(2000)])
        ),
        Case(toxic: toxic("slow_close", ["delayMs": .number(300)])),
        Case(toxic: toxic("limit_data", ["bytes": .number(2500)])),
        Case(toxic: toxic("timeout", ["timeoutMs": .number(0)]), removeAfterMs: 1500),
        Case(toxic: toxic("reset_peer", ["timeoutMs": .number(700)])),
        Case(toxic: toxic("drop", ["probability": .number(0.35)])),
        Case(toxic: toxic("duplicate", ["probability": .number(0.5)])),
        Case(toxic: toxic("reorder", ["probability": .number(0.5), "window": .number(3)])),
        Case(toxic: toxic("corrupt", ["probability": .number(0.25)])),
        Case(toxic: toxic("partition", ["durationMs": .number(1500)])),
        Case(toxic: toxic("latency", ["latencyMs": .number(80)], direction: "up")),
        Case(toxic: toxic("drop", ["probability": .number(0.3)], direction: "up")),
    ]

    static let steadyTimeline: String = {
        var events = [
            #"{"at": "0s", "type": "createOrder", "order": "A1001", "customer": "C1", "store": {"latitude": 37.5563, "longitude": 126.9236}, "destination": {"latitude": 37.5509, "longitude": 126.941}, "etaAt": "100s"}"#
        ]
        let steps = [("10s", "cooking"), ("30s", "awaitingPickup"), ("40s", "pickedUp"), ("50s", "delivering")]
        for (at, status) in steps {
            events.append(#"{"at": "\#(at)", "type": "setStatus", "order": "A1001", "status": "\#(status)"}"#)
        }
        for (i, t) in [60, 70, 80].enumerated() {
            let lat = 37.555 - Double(i) * 0.001
            events.append(
                #"{"at": "\#(t)s", "type": "riderPosition", "order": "A1001", "position": {"latitude": \#(lat), "longitude": 126.93}, "progress": \#(0.6 + Double(i) * 0.1)}"#
            )
        }
        events.append(#"{"at": "90s", "type": "setStatus", "order": "A1001", "status": "delivered"}"#)
        return #"{"version": 1, "name": "steady", "events": ["# + events.joined(separator: ", ") + "]}"
    }()

    @Test(arguments: cases)
    func phoneConvergesUnderToxic(_ c: Case) throws {
        let dir = temporaryDirectory("lbf")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        // A steady order (no backend stall), so every event's delay from its timestamp is the transport's alone.
        let timeline = dir + "/steady.json"
        try Self.steadyTimeline.write(toFile: timeline, atomically: true, encoding: .utf8)
        let daemon = try DaemonChild(
            ["--socket", socket, "--memory", "--scenario", timeline, "--time-scale", "20", "--log-level", "warning"],
            log: dir + "/daemon.log"
        )
        defer { daemon.terminate() }
        for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        let loop = try EventLoop()
        let hit = ClientSession(
            loop: loop,
            options: ClientOptions(socketPath: socket, name: "hit"),
            trueClock: SystemServerClock()
        )
        let clean = ClientSession(
            loop: loop,
            options: ClientOptions(socketPath: socket, name: "clean"),
            trueClock: SystemServerClock()
        )
        var applied: [String: [AppliedUpdate]] = [:]
        var cleanDelays: [Int64] = []
        for s in [hit, clean] {
            s.onUpdate = { u in
                guard u.type == "update" else { return }
                applied[u.session, default: []].append(u)
                if u.session == "clean", u.delivery == nil, let t = u.eventTime { cleanDelays.append(u.clientTime - t) }
            }
            s.start()
        }
        // Attach both, then add the toxic to "hit" only.
        let ready = loop.schedule(after: 400) { loop.stop() }
        loop.run()
        ready.cancel()
        let added = try AdminClient.request(
            socket: socket,
            command: "fault.add",
            args: ["session": .string("hit"), "toxic": .object(c.toxic)]
        )
        #expect(added.ok, "fault.add: \(added.error?.message ?? "")")
        if let after = c.removeAfterMs {
            let t = loop.schedule(after: after) { loop.stop() }
            loop.run()
            t.cancel()
            let removed = try AdminClient.request(socket: socket, command: "fault.remove", args: ["all": .bool(true)])
            #expect(removed.ok)
        }
        let deadline = loop.schedule(after: 25_000) { loop.stop() }
        let check = loop.schedule(after: 20, repeat: 20) {
            if ["hit", "clean"].allSatisfy({ applied[$0]?.last?.status == "delivered" }) { loop.stop() }
        }
        loop.run()
        deadline.cancel()
        check.cancel()
        for n in ["hit", "clean"] {
            let u = applied[n] ?? []
            #expect(u.last?.status == "delivered", "\(c): \(n) ended at \(u.last?.status ?? "nothing")")
            let seqs = u.map(\.seq)
            #expect(seqs == Array(1...UInt64(max(1, seqs.count))), "\(c): \(n) applied \(seqs)")
        }
        #expect(
            applied["hit"]?.last?.seq == applied["clean"]?.last?.seq,
            "\(c): both end at the backend's final sequence"
        )
        // The phone without toxics is untouched by the other's: once live, every update it applied came live (no
        // replay, no snapshot over coalesced ones). Its delays are printed as figures, not asserted (wall-clock time on a
        // loaded machine says nothing about the bus).
        let untouched = applied["clean"] ?? []
        #expect(cleanDelays.count >= 5)
        let live = untouched[(untouched.firstIndex { $0.delivery == nil } ?? untouched.count)...]
        #expect(
            live.allSatisfy { $0.delivery == nil || $0.delivery == "reconvert" },
            "\(c): the phone without toxics got \(live.compactMap { $0.delivery }) deliveries"
        )
        let worst = cleanDelays.max() ?? -1
        print("\(c): the phone without toxics waited up to \(worst) ms (\(cleanDelays.count) updates)")
        hit.close()
        clean.close()
        loop.run()
        loop.close()
    }

    /// `down` refuses new phones while present, with a reason, but never the admin interface that removes it; after
    /// `fault remove` phones attach again.
    @Test func downRefusesNewPhonesButNotAdmin() throws {
        let dir = temporaryDirectory("lbf")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let daemon = try DaemonChild(
            ["--socket", socket, "--memory", "--log-level", "warning"],
            log: dir + "/daemon.log"
        )
        defer { daemon.terminate() }
        for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        #expect(
            try AdminClient.request(socket: socket, command: "fault.add", args: ["toxic": .object(Self.toxic("down"))])
                .ok
        )
        #expect(try AdminClient.request(socket: socket, command: "status", timeoutMs: 2000).ok, "admin still answered")
        let loop = try EventLoop()
        let phone = ClientSession(
            loop: loop,
            options: ClientOptions(socketPath: socket, name: "p", reconnect: false),
            trueClock: SystemServerClock()
        )
        var errors: [String] = []
        phone.onError = { errors.append($0) }
        phone.start()
        let t = loop.schedule(after: 800) { loop.stop() }
        loop.run()
        t.cancel()
        #expect(errors.contains { $0.contains("down") }, "the phone was refused with the reason: \(errors)")
        #expect(try AdminClient.request(socket: socket, command: "fault.remove", args: ["all": .bool(true)]).ok)
        phone.close()
        loop.run()
        loop.close()
    }

    /// A first `livebus attach` (reconnect on) while `down` is present backs off instead of exiting 2
    /// (`connectionsRefused` is retried), and attaches once the toxic is removed (FAULTS.md §6: "backoff until the
    /// toxic is removed, then attach or resume"; fresh-user review 2026-12-03, finding 5).
    @Test func attachUnderDownBacksOffAndAttachesOnceRemoved() throws {
        let dir = temporaryDirectory("lbfd")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let daemon = try DaemonChild(
            ["--socket", socket, "--memory", "--log-level", "warning"],
            log: dir + "/daemon.log"
        )
        defer { daemon.terminate() }
        for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        #expect(
            try AdminClient.request(socket: socket, command: "fault.add", args: ["toxic": .object(Self.toxic("down"))])
                .ok
        )
        let phone = Process()
        phone.executableURL = URL(fileURLWithPath: E2ECLIGoldenTests.bin + "/livebus")
        phone.arguments = ["attach", "--socket", socket, "--name", "dn", "--json", "--duration", "60s"]
        let out = Pipe()
        phone.standardOutput = out
        phone.standardError = FileHandle.nullDevice
        try phone.run()
        defer {
            if phone.isRunning { phone.terminate() }
            phone.waitUntilExit()
        }
        // Refused at least twice (its backoff retried) while the toxic is present, and still running.
        var refusals = 0
        var seen = Data()
        for _ in 0..<500 where refusals < 2 && phone.isRunning {
            usleep(20_000)
            seen.append(out.fileHandleForReading.availableData)
            refusals = String(decoding: seen, as: UTF8.self).components(separatedBy: "connectionsRefused").count - 1
        }
        #expect(phone.isRunning, "attach gave up under down: \(String(decoding: seen, as: UTF8.self))")
        #expect(refusals >= 2, "\(String(decoding: seen, as: UTF8.self))")
        #expect(try AdminClient.request(socket: socket, command: "fault.remove", args: ["all": .bool(true)]).ok)
        var attached = false
        for _ in 0..<500 where !attached {
            let s = try? AdminClient.request(socket: socket, command: "status", timeoutMs: 2000)
            if case .array(let a)? = s?.data?["sessions"], a.contains(where: { $0["name"]?.stringValue == "dn" }) {
                attached = true
            } else {
                usleep(20_000)
            }
        }
        #expect(attached, "the phone attached once the toxic was removed")
    }
}

/// Admin commands with absurd values, sent raw (as any admin client could, bypassing the CLI's checks), are refused by
/// the daemon with `invalidArguments` naming the range; the phone is never asked to act on them and keeps running.
/// Source: review finding (a clock step of +99999999 h and a 9e18 ms stall were accepted).
@Suite(.serialized)
struct E2EAdminArgumentTests {
    @Test func absurdRelayedValuesAreRefused() throws {
        let dir = temporaryDirectory("lba")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let daemon = try DaemonChild(
            ["--socket", socket, "--memory", "--scenario", "demo-120s", "--log-level", "warning"],
            log: dir + "/daemon.log"
        )
        defer { daemon.terminate() }
        for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        let phone = Process()
        phone.executableURL = URL(fileURLWithPath: E2ECLIGoldenTests.bin + "/livebus")
        phone.arguments = ["attach", "--socket", socket, "--name", "p", "--json", "--duration", "20s"]
        phone.standardOutput = FileHandle.nullDevice
        phone.standardError = FileHandle.nullDevice
        try phone.run()
        defer {
            phone.terminate()
            phone.waitUntilExit()
        }
        for _ in 0..<200 {
            let s = try? AdminClient.request(socket: socket, command: "status", timeoutMs: 2000)
            if case .array(let a)? = s?.data?["sessions"], a.contains(where: { $0["name"]?.stringValue == "p" }) {
                break
            }
            usleep(20_000)
        }
        let absurd: [(String, [String: JSONValue])] = [
            ("session.clock", ["stepMs": .number(360_000_000_000_000)]),
            ("session.clock", ["driftPPM": .number(1e12)]),
            ("session.clock", [:]),
            ("session.simulate", ["notReadyMs": .number(-5)]),
            ("session.simulate", ["startFailures": .number(1e15)]),
            ("backend.stall", ["durationMs": .number(9e18)]),
        ]
        for (command, args) in absurd {
            let r = try AdminClient.request(
                socket: socket,
                command: command,
                args: args.merging(["session": .string("p")]) { a, _ in a }
            )
            #expect(!r.ok, "\(command) \(args) was accepted")
            #expect(r.error?.code == "invalidArguments", "\(command) \(args): \(String(describing: r.error))")
            #expect(r.error?.message.contains("…") == true, "\(command): names the range: \(r.error?.message ?? "")")
        }
        // The phone still answers a sane step, and the daemon still runs.
        let ok = try AdminClient.request(
            socket: socket,
            command: "session.clock",
            args: ["session": .string("p"), "stepMs": .number(30_000)]
        )
        #expect(ok.ok, "\(String(describing: ok.error))")
        #expect(phone.isRunning)
    }
}

/// Fault ids as FAULTS.md §1 documents them: toxiproxy's `<kind>_<stream>` by default, `--id` when given, a preset's
/// `<preset>-<kind>-<down|up>` removed together by the preset's name; `--frame-types` by name; an add that one session
/// cannot take adds nothing anywhere. Source: review finding (CLI and FAULTS.md disagreed on ids and flags).
@Suite(.serialized)
struct E2EFaultIDTests {
    @Test func idsFlagsAndAllOrNothing() throws {
        let dir = temporaryDirectory("lbi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try E2EReviewFindingsTests.shell(
            """
            set -u
            B=\(E2EReviewFindingsTests.bin); S=\(dir)/b.sock
            $B/livebusd --socket $S --memory --scenario demo-120s --time-scale 5 2>/dev/null &
            for i in $(seq 100); do [ -S $S ] && break; sleep 0.05; done
            $B/livebus attach --socket $S --name a --duration 20s --json >/dev/null 2>&1 &
            $B/livebus attach --socket $S --name b --duration 20s --json >/dev/null 2>&1 &
            for i in $(seq 100); do [ "$($B/livebus status --socket $S --json | grep -o '"name":"[ab]"' | wc -l)" -ge 2 ] && break; sleep 0.1; done
            $B/livebus fault add latency --all --latency 5ms --socket $S
            $B/livebus fault add drop --session a --probability 0.5 --frame-types EVENT,ping --id lose-events --socket $S
            $B/livebus fault add drop --all --probability 0.1 --socket $S; echo "dup=$?"
            $B/livebus fault add drop --all --frame-types BOGUS --socket $S 2>&1; echo "badtype=$?"
            $B/livebus fault add latency --all --id 'bad id!' --socket $S 2>&1; echo "badid=$?"
            $B/livebus fault list --socket $S --json > \(dir)/list.json
            $B/livebus fault preset 3g --session b --socket $S; echo "taken=$?"
            $B/livebus fault remove latency_downstream --socket $S
            $B/livebus fault preset 3g --session b --socket $S
            $B/livebus fault remove 3g --socket $S
            $B/livebus fault list --socket $S --json > \(dir)/after.json
            pkill -f "livebus attach --socket $S"; pkill -f "livebusd --socket $S"
            echo end
            """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("latency added as latency_downstream on a, b"), "\(text)")
        #expect(text.contains("drop added as lose-events on a"), "\(text)")
        #expect(text.contains("dup=") && !text.contains("dup=0"), "a second drop on a is refused: \(text)")
        #expect(text.contains("nothing was added"), "\(text)")
        #expect(text.contains("'BOGUS' is not a frame type") && text.contains("badtype=2"), "\(text)")
        #expect(text.contains("is not valid: use 1–64 of") && !text.contains("badid=0"), "\(text)")
        #expect(text.contains("already has toxic 'latency_downstream'") && text.contains("taken=2"), "\(text)")
        #expect(text.contains("3g-latency-down"), "\(text)")
        #expect(text.contains("removed 4 toxic(s)"), "the preset's four toxics: \(text)")
        #expect(text.contains("removed 2 toxic(s)"), "latency_downstream on a and b: \(text)")
        let list = (try? String(contentsOfFile: dir + "/list.json", encoding: .utf8)) ?? ""
        #expect(list.contains("\"frameTypes\":[6,8]"), "EVENT,ping → codes 6, 8: \(list)")
        // The refused all-sessions drop left b without a drop toxic.
        #expect(list.components(separatedBy: "\"kind\":\"drop\"").count - 1 == 1, "\(list)")
        let after = (try? String(contentsOfFile: dir + "/after.json", encoding: .utf8)) ?? ""
        #expect(after.contains("lose-events") && !after.contains("latency_downstream") && !after.contains("3g-"))
    }
}
