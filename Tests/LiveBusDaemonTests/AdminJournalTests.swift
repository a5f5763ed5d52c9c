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

    /// A phone's attach is kept as its fields and read back as the JSON entry it always was, with its number, and
    /// measured as that JSON's length.
    @Test func anAttachIsKeptAsFieldsAndReadAsItsJSON() throws {
        let j = AdminJournal()
        j.append("command", uptimeMs: 5, ["command": .string("order.create")])
        let postures: [PostureBody?] = [
            PostureBody(foldState: "half-opened", orientation: "landscape", windowWidth: 512.5, hingeAngle: 90),
            nil,
        ]
        for (i, p) in postures.enumerated() {
            j.appendAttach { n in
                AdminJournal.Attach(
                    n: n,
                    uptimeMs: 1_234 + Int64(i),
                    session: i == 0 ? "pro \"q\"" : "s7",
                    device: i == 0 ? "iphone-duo" : nil,
                    posture: p,
                    appState: "background",
                    os: i == 0 ? "27.1" : nil,
                    profile: ProfileBody(lowPowerMode: true, liveActivities: "denied"),
                    client: "livebus-swift/0.1",
                    resumed: i == 0,
                    clockSkewMs: i == 0 ? -1_500 : 0
                )
            }
        }
        guard case .array(let entries)? = j.page(after: 0)["entries"] else {
            Issue.record("no entries")
            return
        }
        #expect(entries.count == 3)
        let a = entries[1]
        #expect(a["n"]?.int64Value == 2 && a["kind"]?.stringValue == "attach" && a["uptimeMs"]?.int64Value == 1_234)
        #expect(a["session"]?.stringValue == "pro \"q\"" && a["device"]?.stringValue == "iphone-duo")
        #expect(a["posture"] == Daemon.journalValue(postures[0]!) && a["os"]?.stringValue == "27.1")
        #expect(a["profile"] == Daemon.journalValue(ProfileBody(lowPowerMode: true, liveActivities: "denied")))
        #expect(a["appState"]?.stringValue == "background" && a["client"]?.stringValue == "livebus-swift/0.1")
        #expect(a["resumed"] == .bool(true) && a["clockSkewMs"]?.doubleValue == -1_500)
        #expect(entries[2]["device"] == .null && entries[2]["posture"] == .null && entries[2]["os"] == .null)
        #expect(entries[2]["n"]?.int64Value == 3 && entries[2]["resumed"] == .bool(false))
        for (i, e) in entries.enumerated().dropFirst() {
            let kept = AdminJournal.Attach(
                n: i + 1,
                uptimeMs: 1_234 + Int64(i - 1),
                session: i == 1 ? "pro \"q\"" : "s7",
                device: i == 1 ? "iphone-duo" : nil,
                posture: postures[i - 1],
                appState: "background",
                os: i == 1 ? "27.1" : nil,
                profile: ProfileBody(lowPowerMode: true, liveActivities: "denied"),
                client: "livebus-swift/0.1",
                resumed: i == 1,
                clockSkewMs: i == 1 ? -1_500 : 0
            )
            #expect(kept.json == e)
            #expect(kept.encodedSize == (try WireJSON.encode(e).count), "\(e)")
        }
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

/// The journal's entries are measured and built without Foundation, as Foundation would have made them.
struct AdminJournalEncodingTests {
    @Test func theSizeOfAnEntryIsTheLengthOfItsJSON() throws {
        let values: [JSONValue] = [
            .null, .bool(true), .bool(false), .number(0), .number(-7), .number(1_767_225_600_000), .number(0.5),
            .number(-1e300), .number(8.99e15), .string(""), .string("a\"b\\c\n\t\u{1}\u{7f}한/😀"),
            .array([]), .array([.number(1), .string("x"), .null]), .object([:]),
            .object(["session": .string("pro"), "posture": .object(["foldState": .string("flat")]), "n": .number(3)]),
        ]
        for v in values {
            #expect(AdminJournal.encodedSize(v) == (try WireJSON.encode(v).count), "\(v)")
        }
    }

    @Test func postureAndProfileAreWhatTheEncoderRoundTripMakes() {
        let postures = [
            PostureBody(foldState: "flat", orientation: "portrait"),
            PostureBody(
                foldState: "half-opened",
                orientation: "landscape",
                windowWidth: 512.5,
                windowHeight: 700,
                hingeAngle: 90,
                keyboardHeight: 0,
                splitViewWidth: 320
            ),
        ]
        for p in postures { #expect(Daemon.journalValue(p) == Daemon.jsonValue(p)) }
        for p in [ProfileBody(), ProfileBody(lowPowerMode: true, frequentUpdates: false, liveActivities: "denied")] {
            #expect(Daemon.journalValue(p) == Daemon.jsonValue(p))
        }
    }
}
