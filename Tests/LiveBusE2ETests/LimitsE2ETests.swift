import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// Catch-up paced by the phone's drain, the connection cap and the handshake and idle timeouts, against a real
/// `livebusd`, each while good phones on this thread measure their delivery (printed). Source: issue 14 "Floods and
/// resource limits"; Protocol/PROTOCOL.md §5.3, §5.6.
@Suite(.serialized)
struct E2ELimitsTests {
    /// Publishes `count` events round-robin on `topics` topics named `prefix/<i>`, each with a summary of
    /// `summaryBytes`, and waits for every ACK. Returns the bytes of events published.
    static func preload(socket: String, prefix: String, topics: Int, count: Int, summaryBytes: Int) -> Int {
        guard let p = BlockingPeer(path: socket, timeoutMs: 2000) else { return 0 }
        defer { p.close() }
        p.sendAll(try! hello(role: .publisher, name: "preloader", device: nil).encoded())
        var e = GoldenVectorsForTests.event
        e.contentState.summary = SummaryBody(ko: "조리 중", en: String(repeating: "x", count: summaryBytes))
        let body = try! WireJSON.encode(e)
        var acks = 0
        var decoder = FrameDecoder()
        var bytes = 0
        var sent = 0
        while acks < count {
            if sent < count {
                var chunk: [UInt8] = []
                for _ in 0..<min(256, count - sent) {
                    chunk += try! Frame(
                        type: .publish,
                        sequence: UInt64(sent),
                        topic: "\(prefix)/\(sent % topics)",
                        body: body
                    ).encoded()
                    sent += 1
                    bytes += body.count
                }
                guard p.sendAll(chunk) else { return bytes }
            }
            guard let got = p.receive() else { return bytes }
            decoder.append(got)
            while let f = try? decoder.next() {
                if f.type == .ack { acks += 1 }
            }
        }
        return bytes
    }

    /// What a late joiner read.
    struct Joined: Sendable {
        var events = 0
        var replayed = 0
        var topicsUpToDate = 0
        var upToDateTopics = Set<String>()
        var subscribeUpToDate = false
        var errors: [String] = []
        var bytes = 0
        var ms: Int64 = 0
    }

    /// Subscribes to `pattern` and reads (slowly when `readDelayUs` > 0) until the SUBSCRIBE's final UPTODATE,
    /// an ERROR, the end of the stream or `timeoutMs`.
    static func join(socket: String, name: String, pattern: String, readDelayUs: UInt32, timeoutMs: Int64) -> Joined {
        var j = Joined()
        guard let p = BlockingPeer(path: socket, timeoutMs: 200) else { return j }
        defer { p.close() }
        let start = wallMs()
        p.sendAll(try! hello(name: name).encoded())
        p.sendAll(
            try! Frame(type: .subscribe, body: WireJSON.encode(SubscribeBody(patterns: [pattern]))).encoded()
        )
        var decoder = FrameDecoder()
        reading: while wallMs() - start < timeoutMs {
            guard let got = p.receive(max: 16 * 1024) else { break }
            j.bytes += got.count
            decoder.append(got)
            while let f = try? decoder.next() {
                switch f.type {
                case .event:
                    j.events += 1
                    if f.flags.contains(.replay) { j.replayed += 1 }
                case .upToDate where f.topic.isEmpty:
                    j.subscribeUpToDate = true
                    break reading
                case .upToDate:
                    j.upToDateTopics.insert(f.topic)  // also the daemon's once-a-second repeats (§5.4)
                    j.topicsUpToDate = j.upToDateTopics.count
                case .error:
                    j.errors.append((try? WireJSON.decode(ErrorBody.self, from: f.body))?.name ?? "?")
                    break reading
                default:
                    break
                }
            }
            if readDelayUs > 0 { usleep(readDelayUs) }
        }
        j.ms = wallMs() - start
        return j
    }

    /// A late joiner on 4.5 MB of retained log (five topics of 1,000 events), reading at about 1.5 MB/s, while the
    /// live slow-consumer limit is 1 MiB: it was cut as a slow consumer 0.3 s after its SUBSCRIBE. Now the replay
    /// follows its drain, a window at a time, apart from the live limit: it gets all 5,000 events and every UPTODATE,
    /// and the good phones are unaffected.
    @Test func lateJoinerOnALargeLogCatchesUpAtItsOwnPace() throws {
        let d = try FloodDaemon("lbcj", ["--slow-consumer-bytes", "1048576", "--coalesce-bytes", "262144"])
        defer { d.stop() }
        let published = Self.preload(socket: d.socket, prefix: "log", topics: 5, count: 5000, summaryBytes: 600)
        let joined = Shared(Joined())
        let r = try E2EFloodTests.run(
            d,
            baselineMs: 800,
            abuse: { socket, _ in
                let j = Self.join(
                    socket: socket,
                    name: "late-joiner",
                    pattern: "log/>",
                    readDelayUs: 10_000,
                    timeoutMs: 20_000
                )
                joined.update { $0 = j }
            },
            until: { joined.value.ms > 0 }
        )
        let j = joined.value
        print(
            """
            Late joiner: \(published / 1024) KiB of events retained; it read \(j.events) events (\(j.replayed) replayed), \
            \(j.topicsUpToDate) topic UPTODATEs, final UPTODATE \(j.subscribeUpToDate), \(j.bytes / 1024) KiB in \(j.ms) ms, \
            errors \(j.errors)
              \(r.baseline); \(r.flood)
            """
        )
        #expect(published > 4_000_000)
        #expect(j.errors.isEmpty, "the late joiner was cut: \(j.errors)")
        #expect(j.events == 5000 && j.replayed == 5000)
        #expect(j.topicsUpToDate == 5 && j.subscribeUpToDate)
        #expect(d.lines("slowConsumer").isEmpty)
        #expect(r.everyPhoneHasAll, "good phones: \(r.acknowledged) publishes acknowledged, not all applied")
    }

    /// A client subscribing to 20,000 topics (one event each) never caught up: it was cut as a slow consumer. Now
    /// it gets every topic's event and UPTODATE, then the SUBSCRIBE's.
    @Test func clientWithTwentyThousandTopicsCatchesUp() throws {
        let d = try FloodDaemon("lbct", ["--slow-consumer-bytes", "1048576", "--coalesce-bytes", "262144"])
        defer { d.stop() }
        _ = Self.preload(socket: d.socket, prefix: "many", topics: 20_000, count: 20_000, summaryBytes: 8)
        let j = Self.join(socket: d.socket, name: "many-topics", pattern: "many/>", readDelayUs: 0, timeoutMs: 60_000)
        print(
            "20,000 topics: \(j.events) events, \(j.topicsUpToDate) topic UPTODATEs, final \(j.subscribeUpToDate), \(j.bytes / 1024) KiB in \(j.ms) ms, errors \(j.errors)"
        )
        #expect(j.errors.isEmpty)
        #expect(j.events == 20_000 && j.topicsUpToDate == 20_000 && j.subscribeUpToDate)
    }

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
