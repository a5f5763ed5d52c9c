import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// The daemon's journal that `livebus record` reads (Protocol/PROTOCOL.md §8 `journal`, RECORD.md): numbered
/// entries, pages after the last number read, and what was dropped before it could be read.
struct AdminJournalTests {
    @Test func pagesAfterTheLastNumberReadAndCountsWhatWasDropped() {
        let j = AdminJournal()
        for i in 1...5 { j.append("command", uptimeMs: Int64(i * 10), ["command": .string("push\(i)")]) }
        let page = j.page(after: 3)
        guard case .array(let entries)? = page["entries"] else {
            Issue.record("no entries")
            return
        }
        #expect(entries.map { $0["n"]?.int64Value } == [4, 5])
        #expect(entries.first?["kind"]?.stringValue == "command" && entries.first?["uptimeMs"]?.int64Value == 40)
        #expect(page["missed"]?.doubleValue == 0 && page["total"]?.doubleValue == 5)
        if case .array(let none)? = j.page(after: 5)["entries"] { #expect(none.isEmpty) }
        // Past the capacity the oldest go: a reader still at 0 is told how many it missed.
        for i in 6...(AdminJournal.capacity + 10) { j.append("detach", uptimeMs: Int64(i), ["session": .string("s")]) }
        let late = j.page(after: 0)
        #expect(late["missed"]?.doubleValue == 10)
        if case .array(let e)? = late["entries"] { #expect(e.first?["n"]?.int64Value == 11) }
    }

    @Test func bigEntriesAreCappedByBytesAndAPageHoldsAtLeastOne() {
        let j = AdminJournal()
        let payload = JSONValue.string(String(repeating: "x", count: 60_000))
        j.append("command", uptimeMs: 1, ["args": payload])
        j.append("command", uptimeMs: 2, ["args": payload])
        guard case .array(let first)? = j.page(after: 0)["entries"] else {
            Issue.record("no entries")
            return
        }
        #expect(first.count == 1, "one entry over the page size still comes, alone")
        for i in 0..<200 { j.append("command", uptimeMs: Int64(i), ["args": payload]) }
        #expect((j.page(after: 0)["missed"]?.doubleValue ?? 0) > 50, "8 MiB hold about 140 entries of 60 kB")
    }
}
