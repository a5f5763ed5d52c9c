import LiveBusClient
import LiveBusWire
import Testing

@testable import LiveBusCLI

/// What a phone shows from its connection's state and its federated daemon's SYNC (PROTOCOL.md §5.3, §5.9), and
/// the line `livebus attach` prints for it. Pure: no daemon.
struct SyncStateShownTests {
    @Test(arguments: [
        (SyncState.live, DaemonSyncState?.none, SyncState.live),
        (.catchingUp, nil, .catchingUp),
        (.live, .live, .live),
        (.live, .degraded, .degraded),
        (.catchingUp, .degraded, .degraded),
        (.live, .catchingUp, .catchingUp),
        (.catchingUp, .live, .catchingUp),
        (.connecting, .degraded, .connecting),
        (.disconnected, .degraded, .disconnected),
        (.closed, .live, .closed),
    ])
    func shownState(connection: SyncState, daemon: DaemonSyncState?, shown: SyncState) {
        #expect(SyncState.shown(connection: connection, daemon: daemon) == shown)
    }

    @Test func attachSaysSinceWhenOnThePhoneClockAndWhy() {
        let since: Int64 = 1_767_225_631_000  // 00:00:31 UTC
        let degraded = SyncBody(state: .degraded, since: since, uncertaintyMs: 3, reason: "NATS link reconnecting")
        let line = SessionView.syncLine(.degraded, degraded)
        #expect(line.hasPrefix("sync: degraded (daemon degraded since "), "\(line)")
        #expect(line.contains(SessionView.timeOfDay(since)) && line.hasSuffix(" client time) · NATS link reconnecting"))
        let back = SessionView.syncLine(.live, SyncBody(state: .live, since: since, uncertaintyMs: 3))
        #expect(back == "sync: live (daemon live since \(SessionView.timeOfDay(since)) client time)")
    }
}
