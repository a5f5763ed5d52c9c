import Foundation
import Testing

@testable import LiveBusDaemon

/// Push ids (`p<n>`, in `livebus push` answers, phones' verdicts and APNs pushes) never repeat across restarts of a
/// daemon with a data directory: a review found them starting again at p1.
@Suite struct PushIDTests {
    @Test func pushIDsCarryOnAcrossARestartOfTheDataDirectory() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("livebus-pushids-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var o = DaemonOptions.embedded()
        o.dataDirectory = dir.path
        var first: [String] = []
        do {
            let bus = try EmbeddedDaemon(options: o)
            first = (0..<3).map { _ in bus.engine.newPushID() }
            bus.engine.shutdown(reason: "test")
        }
        #expect(first == ["p1", "p2", "p3"])
        let again = try EmbeddedDaemon(options: o)
        let next = again.engine.newPushID()
        let n = Int(next.dropFirst()) ?? 0
        #expect(n > 3, "after a restart the daemon handed out \(next) again")
        again.engine.shutdown(reason: "test")
    }

    /// A federated daemon tags its push ids (`<tag>-p<n>`, PROTOCOL.md §5.8), so two daemons' ids never meet; a
    /// single daemon's stay `p<n>` and its reservation key `pushIDsReserved`.
    @Test func federatedPushIDsCarryTheDaemonsTag() throws {
        #expect(Daemon.pushID(7, tag: nil) == "p7")
        #expect(Daemon.pushID(7, tag: "0a1b2c3d") == "0a1b2c3d-p7")
        let bus = try EmbeddedDaemon(options: .embedded())
        #expect(bus.engine.federationTag == nil && bus.engine.pushIDsMetaKey == "pushIDsReserved")
    }

    @Test func anInMemoryDaemonCountsFromOne() throws {
        let bus = try EmbeddedDaemon(options: .embedded())
        #expect(bus.engine.newPushID() == "p1")
        #expect(bus.engine.newPushID() == "p2")
    }
}
