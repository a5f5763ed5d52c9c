import LiveBusTesting
import Testing
import XCTest

/// Written from README "LiveBus in your own tests" only: the 120-second demo on the virtual clock.
struct DeliveryTests {
    @Test func halfOpenedDuoShowsStaleDuringTheStall() throws {
        let bus = try TestBus(scenario: "demo-120s", seed: 7)
        let duo = try bus.attach(
            device: "iphone-duo",
            fold: .halfOpened,
            orientation: .landscape,
            clockSkew: .seconds(90)
        )
        bus.advance(by: .seconds(40))
        #expect(duo.status("A1001") == .awaitingPickup)
        #expect(!duo.isStale("A1001"))
        bus.advance(by: .seconds(48))  // 88 s: the stall began at 74 s, the 72 s update went stale at 87 s
        #expect(duo.isStale("A1001"))
        let layout = try duo.layout()
        #expect(try #require(layout.rect("cardColumn")).minX >= (try #require(layout.rect("reservedRegion")).maxX))
        bus.advance(by: .seconds(34))  // 122 s
        #expect(duo.status("A1001") == .delivered)
    }

    @Test func countdownOnAnIPhone16Pro() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let pro = try bus.attach(device: "iphone-16-pro")
        bus.advance(by: .seconds(30))
        #expect(pro.remainingMilliseconds("A1001") == 90_000)
        #expect(pro.presentation.lockScreenOrder == ["A1001"])
    }

    /// The bus itself: a phone that loses its connection for 50 s resumes with its token, the daemon replays what
    /// it missed, and it applies every update once, in sequence order, like a phone that never left.
    @Test func phoneThatResumesAppliesEveryUpdateOnce() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let steady = try bus.attach(name: "steady", device: "iphone-16-pro")
        let tunnel = try bus.attach(name: "tunnel", device: "iphone-16-pro", clockSkew: .seconds(-20))
        bus.advance(by: .seconds(25))
        tunnel.disconnect()
        bus.advance(by: .seconds(50))
        tunnel.reconnect()
        #expect(tunnel.received.contains { $0.delivery == "replay" })
        bus.advance(by: .seconds(50))
        #expect(tunnel.status("A1001") == .delivered)
        let applied = tunnel.received.filter { $0.verdict == "applied" }.map(\.sequence)
        #expect(applied == steady.received.map(\.sequence))
    }
}

/// The same under XCTest.
final class DeliveryXCTests: XCTestCase {
    func testDeliveredAtTwoMinutes() throws {
        let bus = try TestBus(scenario: "demo-120s")
        let phone = try bus.attach(device: "iphone-16-pro", clockSkew: .seconds(-30))
        bus.advance(by: .seconds(121))
        XCTAssertEqual(phone.status("A1001"), .delivered)
    }
}
