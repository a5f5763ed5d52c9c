import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// The connection cap against a real `livebusd` under `ulimit -n` (real descriptors), while good phones on this
/// thread measure their delivery (printed). Catch-up paced by the phone's drain (a late joiner on a large log, a
/// client of 20,000 topics) is tested on the embedded daemon: EmbeddedCatchUpTests. Source: issue 14 "Floods and
/// resource limits"; Protocol/PROTOCOL.md §5.3, §5.6.
@Suite(.serialized)
struct E2ELimitsTests {
    /// 20,600 idle connections exhausted the descriptors and new phones were refused with nothing logged. Under
    /// `ulimit -n 128` the cap is 64 connections: the 100 idle connections past the good phones are refused with
    /// ERROR `tooManyConnections` once the cap is reached, logged; the good phones keep receiving, and once idle
    /// connections go, a new phone gets in.
    @Test func connectionCapRefusesWithAReasonAndKeepsPhonesServed() throws {
        let d = try FloodDaemon("lbcc", [], descriptorLimit: 128)
        defer { d.stop() }
        let outcome = Shared((accepted: 0, refused: 0, codes: Set<String>(), welcomeAfter: false, fds: 0))
        let pid = d.pid
        let r = try E2EFloodTests.run(
            d,
            baselineMs: 800,
            abuse: { socket, _ in
                var peers: [BlockingPeer] = []
                for _ in 0..<100 { if let p = BlockingPeer(path: socket, timeoutMs: 100) { peers.append(p) } }
                usleep(500_000)
                var accepted: [BlockingPeer] = []
                for p in peers {
                    let errors = p.pendingErrors() ?? []
                    if errors.isEmpty {
                        accepted.append(p)
                    } else {
                        outcome.update {
                            $0.refused += 1
                            for e in errors { $0.codes.insert(e.name) }
                        }
                        p.close()
                    }
                }
                outcome.update { $0.accepted = accepted.count }
                let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
                outcome.update { $0.fds = fds }
                for p in accepted.prefix(10) { p.close() }
                usleep(300_000)
                if let p = BlockingPeer(path: socket, timeoutMs: 1000) {
                    p.sendAll(try! hello(name: "after-the-cap").encoded())
                    var decoder = FrameDecoder()
                    if let got = p.receive() {
                        decoder.append(got)
                        if let f = try? decoder.next(), f.type == .welcome { outcome.update { $0.welcomeAfter = true } }
                    }
                    p.close()
                }
                for p in accepted.dropFirst(10) { p.close() }
            },
            until: { outcome.value.accepted > 0 && !d.lines("connection refused").isEmpty && outcome.value.fds > 0 }
        )
        usleep(800_000)
        let o = outcome.value
        let refusedLog = d.lines("connection refused: connection cap reached")
        print(
            """
            Connection cap (ulimit -n 128, cap 64): \(o.accepted) idle connections accepted, \(o.refused) refused with \(o.codes); \
            daemon descriptors \(o.fds); a new phone after 10 closed: welcomed \(o.welcomeAfter)
              \(refusedLog.first.map(String.init) ?? "no refusal logged")
              \(r.baseline); \(r.flood)
            """
        )
        #expect(o.accepted + o.refused == 100)
        #expect(o.refused >= 30 && o.codes == ["tooManyConnections"])
        #expect(o.fds > 0 && o.fds < 128, "the daemon held \(o.fds) descriptors")
        #expect(!refusedLog.isEmpty && refusedLog[0].contains("cap=64"))
        #expect(o.welcomeAfter, "a new phone gets in once connections went")
        #expect(r.everyPhoneHasAll, "good phones: \(r.acknowledged) publishes acknowledged, not all applied")
    }
}
