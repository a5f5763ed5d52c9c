import LiveBusTesting
import Testing

/// `LiveBusTesting` on the 120-second demo, on the virtual clock: what an iPhone Duo half-opened with its clock
/// 90 s fast shows, and the same run twice gives the same verdicts.
struct TestBusTests {
    /// Cooking at 20 s with 1:40 left; the stall (74…100 s) shows stale at 87 s (72 s + 15 s), not before; the
    /// recovery clears it; delivered at 120 s. The half-opened layout keeps the cards right of the reserved region.
    @Test func demoOnAHalfOpenedDuo() throws {
        let bus = try TestBus(scenario: "demo-120s", seed: 7)
        let duo = try bus.attach(
            device: "iphone-duo",
            fold: .halfOpened,
            orientation: .landscape,
            clockSkew: .seconds(90)
        )
        bus.advance(by: .seconds(20))
        #expect(duo.status("A1001") == .cooking)
        #expect(
            duo.remainingMilliseconds("A1001") == 100_000,
            "the skew cancels out: target and now on the phone's clock"
        )
        #expect(!duo.isStale("A1001"))
        #expect(duo.presentation.assignment("A1001")?.island == .compact)
        bus.advance(by: .seconds(66))  // 86 s
        #expect(duo.status("A1001") == .delivering && !duo.isStale("A1001"))
        bus.advance(by: .seconds(2))  // 88 s
        #expect(duo.isStale("A1001"))
        let layout = try duo.layout()
        let cards = try #require(layout.rect("cardColumn"))
        let reserved = try #require(layout.rect("reservedRegion"))
        #expect(cards.minX >= reserved.maxX)
        #expect(layout.arrangement == .horizontal)
        bus.advance(by: .seconds(14))  // 102 s
        #expect(!duo.isStale("A1001"))
        bus.advance(by: .seconds(20))  // 122 s
        #expect(duo.status("A1001") == .delivered)
        #expect(duo.verdicts.allSatisfy { $0.verdict.applied }, "\(duo.verdicts)")
    }

    /// Five runs with one seed give the same verdicts and the same countdowns at every second.
    @Test func sameSeedSameRun() throws {
        func run() throws -> [String] {
            let bus = try TestBus(scenario: "random:5", seed: 3)
            let p = try bus.attach(device: "iphone-16-pro")
            var out: [String] = []
            for _ in 0..<600 {
                bus.advance(by: .seconds(1))
                for a in p.board.activities {
                    out.append(
                        "\(a.orderID) \(a.content.status) \(p.remainingMilliseconds(a.orderID) ?? -1) \(p.isStale(a.orderID))"
                    )
                }
            }
            return out + p.verdicts.map { "\($0.orderID) \($0.verdict.applied)" }
        }
        let a = try run()
        #expect(a.count > 600, "five orders over ten minutes: \(a.count) lines")
        for _ in 1..<5 { #expect(a == (try run())) }
    }

    /// An order created by hand starts on a foreground phone only; a stall makes it stale; a cancel the backend
    /// accepts ends it.
    @Test func ordersByHand() throws {
        let bus = try TestBus(scenario: "random:1", seed: 2, start: 1_800_000_000_000)
        let front = try bus.attach(device: "iphone-16-pro")
        let back = try bus.attach(device: "iphone-16")
        back.appInForeground = false
        let id = try bus.createOrder(id: "T1")
        #expect(id == "T1")
        #expect(front.status("T1") == .created)
        #expect(back.activity("T1") == nil, "an activity starts only in the foreground")
        #expect(back.verdicts.last.map { !$0.verdict.applied } == true)
        let outcome = bus.cancel(order: "T1")
        if outcome == .canceled {
            #expect(front.activity("T1")?.state == .ended)
        } else {
            #expect(front.status("T1") == .created, "\(outcome): a refused cancel keeps the order")
        }
        #expect(throws: (any Error).self) { try bus.stall(order: "nope", for: .seconds(5)) }
    }

    /// A posture the device cannot take is refused and the phone keeps its posture.
    @Test func impossiblePostureIsRefused() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let pro = try bus.attach(device: "iphone-16-pro")
        #expect(throws: (any Error).self) { try pro.change(fold: .halfOpened, orientation: .landscape) }
        #expect(pro.fold == .flat)
    }
}
