import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// The issue's crashing inputs against a real daemon: each is refused with `invalidValue` (or, for seeds, a RESULT
/// error), nothing is acknowledged or stored, and the daemon keeps serving. Source: issue 14 "Crashes".
@Suite(.serialized)
struct OutOfRangeE2ETests {
    static func frame(_ type: FrameType, _ json: String, topic: String = "", sequence: UInt64 = 0) -> Frame {
        Frame(type: type, sequence: sequence, topic: topic, body: Array(json.utf8))
    }

    /// A PUBLISH body with `member` (a JSON member, as text) put in place of the golden event's own.
    static func publish(replacing old: String, with new: String) -> Frame {
        let text = String(decoding: try! WireJSON.encode(GoldenVectorsForTests.event), as: UTF8.self)
        #expect(text.contains(old))
        return frame(.publish, text.replacingOccurrences(of: old, with: new), topic: "orders/X", sequence: 7)
    }

    /// PUBLISHes with instants near ±2^63 are refused alone (non-fatal) and stored nowhere, while a phone an hour ahead (a positive
    /// offset) stays attached and then gets the good event that follows, converted.
    @Test func publishOutOfRangeIsRefusedAndNothingIsStored() throws {
        let bus = try TestBus(scenario: nil)
        let phone = bus.session("ahead") { $0.clockSkewMilliseconds = 3_600_000 }
        var statuses: [String] = []
        phone.onUpdate = { statuses.append($0.status) }
        phone.start()
        let eta = "\"etaTarget\":\(GoldenVectorsForTests.event.contentState.etaTarget)"
        let ts = "\"timestamp\":\(GoldenVectorsForTests.event.timestamp)"
        let confirmed = "\"lastConfirmed\":\(GoldenVectorsForTests.event.contentState.lastConfirmed)"
        let bad: [(Frame, String)] = [
            (Self.publish(replacing: eta, with: "\"etaTarget\":-9223372036854775808"), "contentState.etaTarget"),
            (Self.publish(replacing: ts, with: "\"timestamp\":9223372036854775807"), "timestamp"),
            (
                Self.publish(
                    replacing: "\"event\":\"update\"",
                    with: "\"event\":\"update\",\"staleDate\":9223372036854775806"
                ),
                "staleDate"
            ),
            (
                Self.publish(replacing: confirmed, with: "\"lastConfirmed\":9223372036854775807"),
                "contentState.lastConfirmed"
            ),
            (
                Self.publish(
                    replacing: "\"event\":\"update\"",
                    with: "\"dismissalDate\":9223372036854775807,\"event\":\"end\""
                ),
                "dismissalDate"
            ),
        ]
        for (f, field) in bad {
            var peer: RawPeer?
            RawPeer.connect(bus) { p in
                peer = p
                p.send(hello(role: .publisher, device: nil))
                p.send(f)
            }
            // Refused alone (PROTOCOL.md §6): a non-fatal ERROR with the PUBLISH's id; the connection stays open.
            #expect(bus.run(timeoutMs: 10_000) { peer?.errors.isEmpty == false })
            let frames = peer?.frames ?? []
            #expect(!frames.contains { $0.type == .ack }, "\(field): acknowledged")
            #expect(peer?.errors.first?.name == "invalidValue", "\(field): \(peer?.errors ?? [])")
            #expect(peer?.errors.first?.fatal == false, "\(field): \(peer?.errors ?? [])")
            #expect(frames.first { $0.type == .error }?.sequence == 7, "\(field): the ERROR names the PUBLISH's id")
            #expect(peer?.errors.first?.message.contains("field '\(field)'") == true, "\(peer?.errors ?? [])")
            #expect(peer?.closed == false, "\(field): the connection was closed")
            #expect(bus.daemon.store.topics.isEmpty, "\(field): stored")
            peer?.connection.close()
        }
        var good: RawPeer?
        RawPeer.connect(bus) { p in
            good = p
            p.send(hello(role: .publisher, device: nil))
            p.send(Self.publish(replacing: "\"event\":\"update\"", with: "\"event\":\"update\""))
        }
        #expect(bus.run(timeoutMs: 10_000) { good?.frames.contains { $0.type == .ack } == true && !statuses.isEmpty })
        #expect(statuses == ["cooking"])
        #expect(bus.daemon.store.latest(topic: "orders/X")?.sequence == 1)
        phone.close()
        bus.shutdown()
    }

    /// A phone whose clock reads 2070 (the top of the range) gets an event due at the top of the range: the converted
    /// instants are clamped into the range, so the phone's own decoder accepts the EVENT.
    @Test func convertedInstantsStayInRange() throws {
        let bus = try TestBus(scenario: nil)
        let limit = WireRange.instantLimitMilliseconds
        var h = try WireJSON.decode(HelloBody.self, from: hello(name: "far").body)
        h.clientTime = limit
        var phone: RawPeer?
        RawPeer.connect(bus) { p in
            phone = p
            p.send(Frame(type: .hello, body: try! WireJSON.encode(h)))
            p.send(Frame(type: .subscribe, body: Array(#"{"patterns":["orders/>"]}"#.utf8)))
        }
        #expect(bus.run(timeoutMs: 10_000) { phone?.frames.contains { $0.type == .upToDate } == true })
        var publisher: RawPeer?
        RawPeer.connect(bus) { p in
            publisher = p
            p.send(hello(role: .publisher, device: nil))
            p.send(
                Self.publish(
                    replacing: "\"etaTarget\":\(GoldenVectorsForTests.event.contentState.etaTarget)",
                    with: "\"etaTarget\":\(limit)"
                )
            )
        }
        #expect(bus.run(timeoutMs: 10_000) { phone?.frames.contains { $0.type == .event } == true })
        let event = try #require(phone?.frames.first { $0.type == .event })
        let body = try EventJSON.decode(event.body)
        #expect(event.trailer?.etaTarget == limit)  // wire v2: the converted instants are the trailer
        #expect(body.contentState.etaTarget == limit)
        #expect(publisher?.errors.isEmpty == true)
        bus.shutdown()
    }

    /// HELLO `clientTime` at −2^63 (trapped before the handshake) and 2^63 − 1 (trapped at the first event).
    @Test(arguments: [Int64.min, Int64.max])
    func helloClientTimeOutOfRangeIsRefused(_ t: Int64) throws {
        let bus = try TestBus(scenario: nil)
        var h = try WireJSON.decode(HelloBody.self, from: hello().body)
        h.clientTime = 0
        let text = String(decoding: try WireJSON.encode(h), as: UTF8.self)
            .replacingOccurrences(of: "\"clientTime\":0", with: "\"clientTime\":\(t)")
        var peer: RawPeer?
        RawPeer.connect(bus) { p in
            peer = p
            p.send(Self.frame(.hello, text))
        }
        #expect(bus.run(timeoutMs: 10_000) { peer?.closed == true })
        #expect(peer?.errors.map(\.name) == ["invalidValue"])
        #expect(peer?.errors.first?.message.contains("field 'clientTime' is \(t) ms") == true)
        #expect(!(peer?.frames.contains { $0.type == .welcome } ?? true))
        // The daemon still serves.
        var next: RawPeer?
        RawPeer.connect(bus) { p in
            next = p
            p.send(hello())
        }
        #expect(bus.run(timeoutMs: 10_000) { next?.frames.contains { $0.type == .welcome } == true })
        bus.shutdown()
    }

    /// PONG answering the daemon's own PING with t2 = −2^63, or t2 = −1 and t3 = 2^63 − 1.
    @Test(arguments: [("-9223372036854775808", "1", "t2"), ("-1", "9223372036854775807", "t3")])
    func pongOutOfRangeIsRefused(_ t2: String, _ t3: String, _ field: String) throws {
        let bus = try TestBus(scenario: nil)
        var peer: RawPeer?
        var answered = false
        RawPeer.connect(bus) { p in
            peer = p
            p.send(hello())
        }
        let ok = bus.run(timeoutMs: 10_000) {
            guard let p = peer else { return false }
            if !answered, let ping = p.frames.first(where: { $0.type == .ping }),
                let b = try? WireJSON.decode(PingBody.self, from: ping.body)
            {
                answered = true
                p.send(Self.frame(.pong, "{\"t1\":\(b.t1),\"t2\":\(t2),\"t3\":\(t3)}"))
            }
            return p.closed
        }
        #expect(ok)
        #expect(peer?.errors.map(\.name) == ["invalidValue"])
        #expect(peer?.errors.first?.message.contains("PONG body: field '\(field)'") == true, "\(peer?.errors ?? [])")
        bus.shutdown()
    }

    /// `fault add --seed -1` (and other seeds a JSON number cannot carry exactly) is refused; a daemon whose own
    /// `--seed` is at or above 2^63 adds a fault without a seed (both trapped before).
    @Test func faultSeedsNeverTrap() throws {
        let bus = try TestBus(scenario: nil, seed: UInt64.max)
        var phone: RawPeer?
        var admin: RawPeer?
        RawPeer.connect(bus) { p in
            phone = p
            p.send(hello(name: "victim"))
        }
        #expect(bus.run(timeoutMs: 10_000) { phone?.frames.contains { $0.type == .welcome } == true })
        let toxic = #"{"kind":"latency","direction":"down","toxicity":1,"params":{"latencyMs":5}}"#
        RawPeer.connect(bus) { p in
            admin = p
            p.send(hello(role: .admin, device: nil))
            for (i, seed) in ["-1", "1e19", "0.5", "18014398509481984"].enumerated() {
                p.send(
                    Self.frame(
                        .command,
                        "{\"command\":\"fault.add\",\"args\":{\"seed\":\(seed),\"toxic\":\(toxic)}}",
                        sequence: UInt64(i + 1)
                    )
                )
            }
            p.send(Self.frame(.command, "{\"command\":\"fault.add\",\"args\":{\"toxic\":\(toxic)}}", sequence: 9))
        }
        #expect(bus.run(timeoutMs: 10_000) { (admin?.frames.filter { $0.type == .result }.count ?? 0) == 5 })
        let results = (admin?.frames ?? []).filter { $0.type == .result }
            .compactMap { try? WireJSON.decode(ResultBody.self, from: $0.body) }
        #expect(results.prefix(4).allSatisfy { $0.ok == false && $0.error?.code == "invalidValue" }, "\(results)")
        #expect(results.first?.error?.message.contains("fault seed -1 is not an integer in 0…9007199254740992") == true)
        #expect(results.last?.ok == true, "\(results.last.map { "\($0)" } ?? "")")
        #expect(bus.daemon.sessions.values.first { $0.name == "victim" }?.faults?.seed == UInt64.max)
        bus.shutdown()
    }
}

/// The CLI refuses a fault seed it cannot carry exactly (JSON numbers are exact to 2^53) or a negative one, with
/// exit 2 and the range, before it connects.
@Test func cliFaultSeedOutOfRangeIsAUsageError() throws {
    for (seed, text) in [
        ("18446744073709551615", "--seed 18446744073709551615 is too large for a fault seed"),
        ("-1", "--seed '-1' is not a whole number ≥ 0"),
    ] {
        let r = try E2ECLIGoldenTests.run(["fault", "add", "latency", "--seed", seed, "--socket", "/tmp/lb-none.sock"])
        #expect(r.exit == 2, "\(r)")
        #expect(r.stderr.contains(text), "\(r.stderr)")
    }
}

/// Review findings: a seed past 64 bits is "out of range" with the range (it was "not a non-negative integer"),
/// `--orders 0` says the range as `--orders 100001` does, and flags that cannot act together are refused.
@Test func livebusdNamesRangesAndRefusesFlagsThatCannotGoTogether() throws {
    for (args, text) in [
        (["--seed", "99999999999999999999"], "--seed 99999999999999999999 is out of range; give a whole number in 0…"),
        (["--scenario", "random", "--orders", "0"], "--orders 0 is out of range; give a whole number in 1…100000"),
        (["--fresh"], "--fresh discards a data directory's state, and --memory has none"),
        (["--federate", "nats://127.0.0.1:1"], "--memory and --federate exclude each other"),
    ] {
        let r = try E2ECLIGoldenTests.run(["--socket", "/tmp/lb-none.sock", "--memory"] + args, tool: "livebusd")
        #expect(r.exit == 2, "\(args): \(r)")
        #expect(r.stderr.contains(text), "\(args): \(r.stderr)")
    }
}

/// `livebusd` numbers that did not fit an `Int` trapped at start; each is now a usage error naming its range.
@Test func livebusdSizesAndCountsOutOfRangeAreUsageErrors() throws {
    for (flag, value, text) in [
        ("--push-budget", "18446744073709551615", "--push-budget 18446744073709551615 is out of range"),
        ("--coalesce-bytes", "9223372036854775808", "--coalesce-bytes 9223372036854775808 is out of range"),
        ("--slow-consumer-bytes", "18446744073709551615", "--slow-consumer-bytes 18446744073709551615 is out of"),
    ] {
        let r = try E2ECLIGoldenTests.run(["--socket", "/tmp/lb-none.sock", "--memory", flag, value], tool: "livebusd")
        #expect(r.exit == 2, "\(flag): \(r)")
        #expect(r.stderr.contains(text), "\(r.stderr)")
    }
    let r = try E2ECLIGoldenTests.run(
        ["--socket", "/tmp/lb-none.sock", "--memory", "--scenario", "random", "--orders", "100001"],
        tool: "livebusd"
    )
    #expect(r.exit == 2 && r.stderr.contains("--orders 100001 is out of range; give a whole number in 1…100000"))
}

/// The poison case through a real `livebusd` with a data directory: a PUBLISH with `etaTarget` −2^63 is refused and
/// not stored, so after a kill -9 and restart the daemon starts, a phone subscribes and gets the good event (it used
/// to crash at every restart until `--fresh`). Then a store poisoned by hand is refused at start with `--fresh`.
@Suite(.serialized)
struct PoisonRestartE2ETests {
    @Test func refusedPublishDoesNotPoisonTheStore() throws {
        let dir = temporaryDirectory("lbp")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let data = dir + "/data"
        let args = ["--socket", socket, "--data-dir", data, "--log-level", "info"]
        var daemon = try DaemonChild(args, log: dir + "/d.log")
        defer { daemon.terminate() }
        let loop = try EventLoop()
        func waitSocket() -> Bool {
            for _ in 0..<500 {
                if case .live = SocketProbe.probe(path: socket) { return true }
                usleep(20_000)
            }
            return false
        }
        #expect(waitSocket())
        let bad = OutOfRangeE2ETests.publish(
            replacing: "\"etaTarget\":\(GoldenVectorsForTests.event.contentState.etaTarget)",
            with: "\"etaTarget\":-9223372036854775808"
        )
        let good = OutOfRangeE2ETests.publish(replacing: "\"event\":\"update\"", with: "\"event\":\"update\"")
        func exchange(_ frames: [Frame], until done: @escaping (RawPeer) -> Bool) -> RawPeer? {
            var peer: RawPeer?
            Connection.connect(loop: loop, path: socket) { r in
                guard case .success(let c) = r else { return }
                let p = RawPeer(c)
                peer = p
                for f in frames { p.send(f) }
            }
            let deadline = loop.schedule(after: 10_000) { loop.stop() }
            let check = loop.schedule(after: 5, repeat: 5) { if let p = peer, done(p) { loop.stop() } }
            loop.run()
            deadline.cancel()
            check.cancel()
            return peer
        }
        let refused = exchange([hello(role: .publisher, device: nil), bad]) { $0.closed }
        #expect(refused?.errors.map(\.name) == ["invalidValue"])
        #expect(!(refused?.frames.contains { $0.type == .ack } ?? true))
        let accepted = exchange([hello(role: .publisher, device: nil), good]) { $0.frames.contains { $0.type == .ack } }
        #expect(accepted?.frames.contains { $0.type == .ack } == true)
        accepted?.connection.close()
        daemon.kill9()
        daemon = try DaemonChild(args, log: dir + "/d.log")
        #expect(
            waitSocket(),
            "the daemon did not restart: \((try? String(contentsOfFile: dir + "/d.log", encoding: .utf8)) ?? "")"
        )
        let phone = exchange([hello(), Frame(type: .subscribe, body: Array(#"{"patterns":["orders/>"]}"#.utf8))]) {
            $0.frames.contains { $0.type == .event }
        }
        let event = phone?.frames.first { $0.type == .event }
        #expect(event?.topic == "orders/X")
        #expect(event?.sequence == 1)
        phone?.connection.close()
        daemon.terminate()
        _ = loop.close()

        // A store poisoned by hand (as an older livebusd could have left it): refused at start, naming what to do.
        StoreValidationTests.sql(
            data,
            """
            UPDATE events SET body = CAST(replace(CAST(body AS TEXT), '"etaTarget":1767226800000',
                '"etaTarget":-9223372036854775808') AS BLOB)
            """
        )
        let poisoned = try DaemonChild(args, log: dir + "/p.log")
        poisoned.process.waitUntilExit()
        let log = (try? String(contentsOfFile: dir + "/p.log", encoding: .utf8)) ?? ""
        #expect(poisoned.process.terminationStatus != 0)
        #expect(log.contains("event 1 of topic 'orders/X' cannot be served (invalidValue"), "\(log)")
        #expect(log.contains("--fresh"), "\(log)")
    }
}

/// Review finding: `--angle --socket X` said "unexpected argument 'X'" (and `--angle --json` "'--json' is not a
/// number"): an option followed by another option of the command has no value.
@Test func anOptionFollowedByAnotherOptionNeedsAValue() throws {
    for next in ["--socket", "--json"] {
        let r = try E2ECLIGoldenTests.run(["posture", "duo", "half-opened", "--angle", next, "/tmp/lb-none.sock"])
        #expect(r.exit == 2, "\(r)")
        // With --json anywhere on the line the error is the JSON envelope on stdout.
        let said = r.stderr + r.stdout
        #expect(said.contains("--angle needs a value (\(next) after it is another option)"), "\(said)")
    }
}

/// Review finding: `fault add bandwidth --rate 0` passed the CLI's check (0…1e9) and the daemon refused it as
/// `rateKBps`; `simulate --start-failures 99999999999` was refused by the daemon as `startFailures`. The CLI now
/// checks the daemon's ranges with its own flag names, before it connects.
@Test func faultAndSimulateFlagsAreCheckedWithTheDaemonsRanges() throws {
    for (args, text) in [
        (["fault", "add", "bandwidth", "--all", "--rate", "0"], "--rate"),
        (["fault", "add", "latency", "--all", "--latency", "11m"], "--latency '11m' is out of range"),
        (["simulate", "duo", "--start-failures", "99999999999"], "--start-failures 99999999999 is out of range"),
    ] {
        let r = try E2ECLIGoldenTests.run(args + ["--socket", "/tmp/lb-none.sock"])
        #expect(r.exit == 2, "\(args): \(r)")
        #expect(r.stderr.contains(text) && !r.stderr.contains("no daemon"), "\(args): \(r.stderr)")
    }
}
