import LiveBusCore
import LiveBusWire
import Testing

/// The federated daemon's sync state machine (PROTOCOL.md §5.9) on a virtual clock: degraded when the link is lost,
/// catching up once it is back, live only when the consumer applied the stream's last sequence as read after the
/// link came back. Source: ISSUE-19 "NATS lost while running".
struct FederationSyncTests {
    typealias O = FederationSync.Observation
    static let t0: Int64 = 1_767_225_600_000

    /// The value under test, held by reference so that `#expect` can take a step's answer.
    final class Machine {
        var s: FederationSync
        init(_ link: FederationSync.Link, _ now: Int64) { s = FederationSync(link: link, nowMilliseconds: now) }
        func observe(_ o: O, nowMilliseconds: Int64) -> Bool { s.observe(o, nowMilliseconds: nowMilliseconds) }
        var state: DaemonSyncState { s.state }
        var sinceMilliseconds: Int64 { s.sinceMilliseconds }
        var reason: String? { s.reason }
        var target: UInt64? { s.target }
    }

    static func seen(
        _ link: FederationSync.Link,
        applied: UInt64 = 10,
        reads: UInt64 = 1,
        last: UInt64? = 10
    ) -> O {
        O(link: link, appliedStreamSequence: applied, streamReads: reads, streamLastSequence: last)
    }

    @Test func aJoinedDaemonStartsLiveAndStaysSilentWhileNothingChanges() {
        let s = Machine(.connected, Self.t0)
        #expect(s.state == .live && s.sinceMilliseconds == Self.t0 && s.reason == nil)
        for k in 1...5 {
            #expect(!s.observe(Self.seen(.connected, applied: UInt64(10 + k)), nowMilliseconds: Self.t0 + Int64(k)))
        }
        #expect(s.state == .live && s.sinceMilliseconds == Self.t0)
    }

    @Test func lostThenBackThenCaughtUpIsDegradedCatchingUpLiveWithTheirInstants() {
        let s = Machine(.connected, Self.t0)
        #expect(s.observe(Self.seen(.lost("reconnecting")), nowMilliseconds: Self.t0 + 500))
        #expect(s.state == .degraded && s.sinceMilliseconds == Self.t0 + 500)
        #expect(s.reason?.contains("NATS link reconnecting") == true)
        #expect(s.reason?.contains("federationUnavailable") == true)
        // Still lost (closed now): one degraded period, its first instant kept.
        #expect(!s.observe(Self.seen(.lost("closed")), nowMilliseconds: Self.t0 + 1000))
        #expect(s.sinceMilliseconds == Self.t0 + 500)

        #expect(s.observe(Self.seen(.connected, applied: 10, reads: 3, last: 10), nowMilliseconds: Self.t0 + 9000))
        #expect(s.state == .catchingUp && s.sinceMilliseconds == Self.t0 + 9000 && s.reason == nil)
        // The read from before the loss (reads still 3) says 10, and the consumer has 10: not a catch-up target.
        #expect(!s.observe(Self.seen(.connected, applied: 10, reads: 3, last: 10), nowMilliseconds: Self.t0 + 9500))
        #expect(s.state == .catchingUp && s.target == nil)
        // The first read after the link came back: the stream holds 14 (other daemons published meanwhile).
        #expect(!s.observe(Self.seen(.connected, applied: 11, reads: 4, last: 14), nowMilliseconds: Self.t0 + 10_000))
        #expect(s.state == .catchingUp && s.target == 14)
        // A later read does not move the target: live means "has what the stream held when the link came back".
        #expect(!s.observe(Self.seen(.connected, applied: 13, reads: 5, last: 20), nowMilliseconds: Self.t0 + 10_200))
        #expect(s.target == 14)
        #expect(s.observe(Self.seen(.connected, applied: 14, reads: 5, last: 20), nowMilliseconds: Self.t0 + 10_300))
        #expect(s.state == .live && s.sinceMilliseconds == Self.t0 + 10_300 && s.target == nil)
    }

    @Test func aLossWhileCatchingUpIsDegradedAgainAndNeedsAFreshRead() {
        let s = Machine(.connected, Self.t0)
        _ = s.observe(Self.seen(.lost("reconnecting")), nowMilliseconds: Self.t0 + 1)
        _ = s.observe(Self.seen(.connected, reads: 1), nowMilliseconds: Self.t0 + 2)
        _ = s.observe(Self.seen(.connected, applied: 10, reads: 2, last: 12), nowMilliseconds: Self.t0 + 3)
        #expect(s.state == .catchingUp && s.target == 12)
        #expect(s.observe(Self.seen(.lost("reconnecting"), applied: 11), nowMilliseconds: Self.t0 + 4))
        #expect(s.state == .degraded && s.target == nil)
        #expect(s.observe(Self.seen(.connected, applied: 12, reads: 2, last: 12), nowMilliseconds: Self.t0 + 5))
        #expect(s.state == .catchingUp)
        // applied 12 = the old target, but no read since this return: still catching up.
        #expect(!s.observe(Self.seen(.connected, applied: 12, reads: 2, last: 12), nowMilliseconds: Self.t0 + 6))
        #expect(s.observe(Self.seen(.connected, applied: 12, reads: 3, last: 12), nowMilliseconds: Self.t0 + 7))
        #expect(s.state == .live)
    }

    @Test func anUnjoinedDaemonStartsDegradedAndGoesLiveOnceJoinedAndCaughtUp() {
        let s = Machine(.unjoined, Self.t0)
        #expect(s.state == .degraded && s.reason?.contains("--federate-optional") == true)
        #expect(!s.observe(Self.seen(.unjoined, applied: 0, reads: 0, last: nil), nowMilliseconds: Self.t0 + 2000))
        #expect(s.observe(Self.seen(.connected, applied: 30, reads: 0, last: nil), nowMilliseconds: Self.t0 + 4000))
        #expect(s.state == .catchingUp)
        #expect(s.observe(Self.seen(.connected, applied: 30, reads: 1, last: 30), nowMilliseconds: Self.t0 + 4500))
        #expect(s.state == .live && s.sinceMilliseconds == Self.t0 + 4500)
    }

    @Test func anEmptyStreamAfterTheLinkCameBackIsCaughtUpAtOnce() {
        let s = Machine(.lost("reconnecting"), Self.t0)
        #expect(s.state == .degraded)
        _ = s.observe(Self.seen(.connected, applied: 0, reads: 0, last: nil), nowMilliseconds: Self.t0 + 1)
        #expect(s.observe(Self.seen(.connected, applied: 0, reads: 1, last: 0), nowMilliseconds: Self.t0 + 2))
        #expect(s.state == .live)
    }
}
