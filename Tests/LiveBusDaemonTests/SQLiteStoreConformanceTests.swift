import Foundation
import LiveBusCore
import LiveBusDaemon
import Testing

/// The SQLite store against the core's store conformance suite, reopened from its directory for the durability
/// checks. Source: ISSUE-15 item 2 ("both implement the protocol and pass one shared conformance test suite").
struct SQLiteStoreConformanceTests {
    @Test(arguments: StoreConformance.checks)
    func sqliteStore(_ check: StoreConformance.Check) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lb-conf-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try check.run(
            StoreConformance.Harness(
                open: { try SQLiteStore(directory: dir, logCapacity: $0) },
                reopen: { try SQLiteStore(directory: dir, logCapacity: $0) }
            )
        )
    }

    /// `--sync full`: the same checks hold with an fsync per batch.
    @Test func fullSyncStorePassesTheBatchCheck() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lb-conf-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for check in StoreConformance.checks.prefix(2) {
            try check.run(
                StoreConformance.Harness(open: { try SQLiteStore(directory: dir + "/\($0)", fullSync: true) })
            )
        }
    }
}
