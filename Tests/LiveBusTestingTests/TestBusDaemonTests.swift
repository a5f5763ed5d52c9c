import LiveBusTesting
import Testing

/// `TestBus` runs the real daemon (embedded): sequences, fan-out, resume, clock conversion, the push relay.
struct TestBusDaemonTests {
    /// Five runs with one seed give identical reports: every frame each phone received (topic, sequence, delivery,
    /// verdict), its counters and sync state, and each activity's state at the end.
    @Test func fiveRunsOneSeedIdenticalReports() throws {
        func run() throws -> [String] {
            let bus = try TestBus(scenario: "random:5", seed: 11)
            let a = try bus.attach(name: "a", device: "iphone-16-pro")
            bus.advance(by: .seconds(30))
            let b = try bus.attach(name: "b", device: "iphone-duo", clockSkew: .seconds(-45))
            bus.advance(by: .seconds(60))
            b.disconnect()
            bus.advance(by: .seconds(40))
            b.reconnect()
            bus.advance(by: .seconds(300))
            let states = [a, b].flatMap { p in
                p.board.activities.map { "\(p.name) \($0.orderID) \($0.state) \($0.content.status)" }
            }
            return bus.report + states
        }
        let first = try run()
        #expect(first.filter { $0.hasPrefix("a orders/") }.count >= 9, "\(first)")
        #expect(first.contains { $0.hasPrefix("b ") && $0.contains(" replay ") }, "b catches up by replay")
        for _ in 1..<5 { #expect(try run() == first) }
    }

    /// Every event reaches every phone with the daemon's per-topic sequences 1, 2, 3… in order, applied once.
    @Test func fanOutWithSequences() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let p1 = try bus.attach(device: "iphone-16-pro")
        let p2 = try bus.attach(device: "iphone-16")
        bus.advance(by: .seconds(121))
        let s1 = p1.received.map(\.sequence)
        #expect(!s1.isEmpty)
        #expect(s1 == Array(1...UInt64(s1.count)), "\(s1)")
        #expect(p2.received.map(\.sequence) == s1)
        #expect(p1.received.allSatisfy { $0.verdict == "applied" }, "\(p1.received)")
        // The start at 0 s was published before the phones attached: it arrives in the SUBSCRIBE's catch-up.
        #expect(p1.received.map(\.delivery) == ["replay"] + Array(repeating: nil, count: s1.count - 1))
        #expect(p1.sequences["orders/A1001"] == UInt64(s1.count))
        #expect(p1.syncState == .live)
    }

    /// The daemon converts instants into each phone's clock: a phone 90 s fast holds the countdown's target 90 s
    /// later than one on true time, and both show the same remaining time.
    @Test func clockSkewIsConvertedByTheDaemon() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let exact = try bus.attach(device: "iphone-16-pro")
        let fast = try bus.attach(device: "iphone-16-pro", clockSkew: .seconds(90))
        bus.advance(by: .seconds(20))
        let t0 = try #require(exact.etaTarget("A1001")).millisecondsSinceEpoch
        let t1 = try #require(fast.etaTarget("A1001")).millisecondsSinceEpoch
        #expect(t1 - t0 == 90_000)
        #expect(fast.remainingMilliseconds("A1001") == exact.remainingMilliseconds("A1001"))
    }

    /// A phone that disconnects and resumes gets what it missed replayed and applies each update once.
    @Test func resumeAppliesEachUpdateOnce() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let steady = try bus.attach(name: "steady")
        let flaky = try bus.attach(name: "flaky")
        bus.advance(by: .seconds(25))
        flaky.disconnect()
        #expect(flaky.syncState == .disconnected)
        bus.advance(by: .seconds(50))
        #expect(flaky.status("A1001") != steady.status("A1001"), "it missed updates while away")
        flaky.reconnect()
        #expect(flaky.counters.resumes == 1)
        #expect(flaky.received.contains { $0.delivery == "replay" })
        bus.advance(by: .seconds(50))
        #expect(flaky.status("A1001") == .delivered)
        #expect(flaky.sequences == steady.sequences)
        let applied = flaky.received.filter { $0.verdict == "applied" }.map(\.sequence)
        #expect(applied == steady.received.map(\.sequence), "each sequence applied once, in order")
    }

    /// A push goes through the daemon's push relay to the phone, whose rules answer; a bad payload is refused with
    /// Apple's reason.
    @Test func pushThroughTheDaemon() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let p = try bus.attach(name: "p")
        bus.advance(by: .seconds(10))
        let ts = bus.now / 1000 + 1
        // etaEnd: seconds since 2001-01-01 (Apple's reference date), as a Swift Date in the content state encodes.
        let etaEnd = ts + 600 - 978_307_200
        let payload = """
            {"aps":{"timestamp":\(ts),"event":"update","content-state":{"status":"cooking","etaEnd":\(etaEnd)}}}
            """
        let outcome = try bus.push(payload, to: p, order: "A1001")
        #expect(outcome.applied, "\(outcome)")
        let bad = try bus.push("{not json", to: p, order: "A1001")
        #expect(!bad.applied && bad.reason != nil, "\(bad)")
        #expect(throws: TestBusError.self) {
            try bus.push(payload, to: TestBus(scenario: "demo-120s").attach(name: "elsewhere"), order: "A1001")
        }
    }

    /// The daemon's background refresh scheduling reaches a phone whose app is in the background: it gets the
    /// orders' updates later or fewer (coalesced into the latest) than a phone in the foreground, and the terminal
    /// update all the same (live-activities.md §2.4, §3).
    @Test func backgroundPhoneIsScheduledByTheDaemon() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let front = try bus.attach(name: "front")
        let back = try bus.attach(name: "back")
        back.appInForeground = false
        bus.advance(by: .seconds(121))
        let seen = Dictionary(front.received.map { ($0.sequence, $0.clientTime) }, uniquingKeysWith: min)
        let later = back.received.contains { r in seen[r.sequence].map { r.clientTime > $0 } ?? false }
        #expect(later || back.received.count < front.received.count, "front \(front.received) back \(back.received)")
        bus.advance(by: .seconds(600))
        #expect(back.sequences["orders/A1001"] == front.sequences["orders/A1001"], "the end reaches it")
    }
}
