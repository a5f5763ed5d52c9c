import Foundation
import LiveBusClient
import LiveBusWire
import Testing

@testable import LiveBusCLI
@testable import LiveBusDaemon

/// `livebus status` shows every session although one answer holds only what fits in a frame: the daemon pages its
/// sessions with `sessionOffset` and the CLI reads every page (Protocol/PROTOCOL.md §10 `status`). Found by a
/// fresh-user review: the header counted 30 sessions while the list showed one answer's worth.
@Suite(.serialized)
struct StatusPagesTests {
    @Test func statusReadsEverySessionPastOneAnswer() throws {
        // A small frame so that 30 phones do not fit in one answer.
        let bus = try TestBus(scenario: nil) { $0.maximumFrameSize = 16 * 1024 }
        let phones = (0..<30).map { i in bus.session("p\(i)") }
        for p in phones { p.start() }
        #expect(
            bus.run(timeoutMs: 20_000) { Int(bus.daemon.statusData()["sessionCount"]?.doubleValue ?? 0) == 30 },
            "30 phones attached"
        )
        func names(_ d: JSONValue) -> [String] {
            guard case .array(let a)? = d["sessions"] else { return [] }
            return a.compactMap { $0["name"]?.stringValue }
        }
        let one = bus.daemon.statusData()
        #expect(names(one).count < 30, "one answer holds fewer than all 30 (\(names(one).count))")
        let last = names(bus.daemon.statusData(sessionOffset: 29))
        #expect(last.count == 1 && !names(one).contains(last[0]), "a page starts at its offset: \(last)")
        var asked: [Int] = []
        let all = try StatusPages.all(args: ["explain": .bool(false)]) { a in
            let offset = Int(a["sessionOffset"]?.doubleValue ?? 0)
            asked.append(offset)
            #expect(a["explain"] == .bool(false), "every page is asked with the same arguments")
            return bus.daemon.statusData(sessionOffset: offset)
        }
        #expect(asked.count > 1 && asked.first == 0, "pages asked: \(asked)")
        #expect(Set(names(all)) == Set((0..<30).map { "p\($0)" }) && names(all).count == 30, "\(names(all))")
        #expect(all["sessionCount"]?.doubleValue == 30)
        let text = StatusText.render(all)
        for i in 0..<30 { #expect(text.contains(" p\(i) [session]"), "p\(i) is listed") }
        #expect(!text.contains("could not be read"), "nothing is left out")
        // A page that holds none (a session larger than an answer) ends the reading and the text says so.
        let stuck = try StatusPages.all { a in
            let offset = Int(a["sessionOffset"]?.doubleValue ?? 0)
            guard offset == 0, case .object(var o) = one, case .array(let list)? = one["sessions"] else {
                return .object(["sessions": .array([]), "sessionCount": .number(30)])
            }
            o["sessions"] = .array(Array(list.prefix(3)))
            o["sessionCount"] = .number(30)
            return .object(o)
        }
        #expect(names(stuck).count == 3)
        #expect(StatusText.render(stuck).contains("… 27 more of 30 sessions could not be read"))
        for p in phones { p.close() }
        bus.shutdown()
    }

    /// APNS PUSH TOKENS appears only on a daemon with an APNs endpoint (review finding 14): without one nothing
    /// accepts a push to these tokens.
    @Test func apnsTokensOnlyWithAnEndpoint() {
        let phone: JSONValue = .object([
            "session": .string("pa"), "topic": .string("com.example.delivery.push-type.liveactivity"),
            "pushToStartToken": .string("ab"), "activities": .array([]),
        ])
        let on: JSONValue = .object(["endpoint": .bool(true), "phones": .array([phone]), "channels": .array([])])
        let off: JSONValue = .object(["endpoint": .bool(false), "phones": .array([phone]), "channels": .array([])])
        #expect(StatusText.apnsTokens(on).contains("APNS PUSH TOKENS"))
        #expect(StatusText.apnsTokens(off).isEmpty)
    }
}
