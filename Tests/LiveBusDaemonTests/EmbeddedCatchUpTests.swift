import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// Catch-up paced by the phone's drain, on the embedded daemon: a late joiner on a large retained log and a client
/// subscribing to 20,000 topics, with a receive window as a socket's and virtual time between reads. Moved from
/// LimitsE2ETests (a real daemon, 50–120 s of wall time there; issue 15, item 6). Source: issue 14 "Floods and
/// resource limits"; Protocol/PROTOCOL.md §5.3, §5.4, §5.6.
@Suite struct EmbeddedCatchUpTests {
    /// What a joiner read.
    struct Joined {
        var events = 0
        var replayed = 0
        var upToDateTopics = Set<String>()
        var subscribeUpToDate = false
        var errors: [String] = []
        var reads = 0
    }

    /// Publishes `count` events round-robin on `topics` topics named `prefix/<i>` (256 frames a read every 20
    /// virtual ms, as LimitsE2ETests' preloader did over a socket) and returns how many were acknowledged, the body
    /// bytes published and the ERRORs received.
    static func preload(
        _ bus: EmbeddedDaemon,
        prefix: String,
        topics: Int,
        count: Int,
        summaryBytes: Int
    ) throws -> (acks: Int, bytes: Int, errors: [String]) {
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "preloader", device: nil))
        let body = try EventJSON.encode(eventBody(summary: String(repeating: "x", count: summaryBytes)))
        var acks = 0
        var bytes = 0
        var sent = 0
        var errors: [String] = []
        func read(_ frames: [Frame]) {
            acks += frames.filter { $0.type == .ack }.count
            errors += frames.errors.map { "\($0.name): \($0.message)" }
        }
        while sent < count {
            let n = min(256, count - sent)
            let chunk = (sent..<(sent + n)).map { i in
                Frame(type: .publish, sequence: UInt64(i), topic: "\(prefix)/\(i % topics)", body: body)
            }
            try publisher.writeInbound(chunk)
            sent += n
            bytes += n * body.count
            read(try publisher.readOutboundFrames())
            bus.advance(by: 20)  // 12,800 frames/s: within the frame rate (SessionLimits.framesPerSecond)
        }
        read(try publisher.readAllOutboundFrames())
        publisher.closeInbound()
        return (acks, bytes, errors)
    }

    /// Reads `peer` (its receive window as set) every `readEveryMs` virtual milliseconds until the SUBSCRIBE's
    /// final UPTODATE, an ERROR, its close or `maxReads` reads; `between` runs after each read.
    static func readUntilUpToDate(
        _ bus: EmbeddedDaemon,
        _ peer: EmbeddedConnection,
        readEveryMs: UInt64,
        maxReads: Int,
        between: (Int) throws -> Void = { _ in }
    ) throws -> Joined {
        var j = Joined()
        reading: while j.reads < maxReads, !peer.isClosed {
            j.reads += 1
            for f in try peer.readOutboundFrames() {
                switch f.type {
                case .event:
                    j.events += 1
                    if f.flags.contains(.replay) { j.replayed += 1 }
                case .upToDate where f.topic.isEmpty:
                    j.subscribeUpToDate = true
                    break reading
                case .upToDate:
                    j.upToDateTopics.insert(f.topic)  // also the daemon's once-a-second repeats (§5.4)
                case .error:
                    j.errors.append((try? WireJSON.decode(ErrorBody.self, from: f.body))?.name ?? "?")
                    break reading
                default:
                    break
                }
            }
            try between(j.reads)
            bus.advance(by: readEveryMs)
        }
        return j
    }

    /// A late joiner on 4.5 MB of retained log (five topics of 1,000 events), reading 16 KiB every 10 ms (about
    /// 1.6 MB/s) while the live slow-consumer limit is 1 MiB: it was cut as a slow consumer 0.3 s after its
    /// SUBSCRIBE. The replay follows its drain, a window at a time, apart from the live limit: it gets all 5,000
    /// events and every UPTODATE, and a good phone gets each live event published meanwhile at once.
    @Test func lateJoinerOnALargeLogCatchesUpAtItsOwnPace() throws {
        let (bus, log) = try embeddedDaemon {
            $0.slowConsumerLimitBytes = 1_048_576
            $0.coalesceThresholdBytes = 262_144
        }
        let (acks, published, errors) = try Self.preload(bus, prefix: "log", topics: 5, count: 5000, summaryBytes: 600)
        #expect(acks == 5000 && errors.isEmpty, "\(errors)")
        #expect(published > 4_000_000)
        let good = bus.connect()
        try good.attach(helloFrame(name: "good"))
        try good.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["live/>"])))
        _ = try good.readAllOutboundFrames()
        let livePublisher = bus.connect()
        try livePublisher.attach(helloFrame(role: .publisher, name: "live", device: nil))
        let joiner = bus.connect()
        try joiner.attach(helloFrame(name: "late-joiner"))
        joiner.peerReceiveWindowBytes = 16 * 1024
        try joiner.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["log/>"])))
        var livePublished = 0
        var liveAtOnce = 0
        let j = try Self.readUntilUpToDate(bus, joiner, readEveryMs: 10, maxReads: 20_000) { read in
            guard read % 25 == 0 else { return }
            livePublished += 1
            try livePublisher.writeInbound(publishFrame(topic: "live/\(livePublished)", id: UInt64(livePublished)))
            let got = try good.readOutboundFrames().filter { $0.type == .event && $0.topic == "live/\(livePublished)" }
            liveAtOnce += got.count
        }
        #expect(j.errors.isEmpty, "the late joiner was cut: \(j.errors)")
        #expect(j.events == 5000 && j.replayed == 5000, "\(j.events) events, \(j.replayed) replayed")
        #expect(j.upToDateTopics.count == 5 && j.subscribeUpToDate)
        #expect(j.reads > 100, "paced by its reads: \(j.reads) reads of 16 KiB")
        #expect(log.lines("slowConsumer").isEmpty)
        #expect(!joiner.isClosed)
        #expect(
            livePublished > 0 && liveAtOnce == livePublished,
            "\(liveAtOnce) of \(livePublished) live events at once"
        )
    }

    /// A client subscribing to 20,000 topics (one event each) never caught up: it was cut as a slow consumer. Now,
    /// reading through a 64 KiB window, it gets every topic's event and UPTODATE, then the SUBSCRIBE's.
    @Test func clientWithTwentyThousandTopicsCatchesUp() throws {
        let (bus, log) = try embeddedDaemon {
            $0.slowConsumerLimitBytes = 1_048_576
            $0.coalesceThresholdBytes = 262_144
        }
        let (acks, _, errors) = try Self.preload(bus, prefix: "many", topics: 20_000, count: 20_000, summaryBytes: 8)
        #expect(acks == 20_000 && errors.isEmpty, "\(errors)")
        let peer = bus.connect()
        try peer.attach(helloFrame(name: "many-topics"))
        peer.peerReceiveWindowBytes = 64 * 1024
        try peer.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["many/>"])))
        let j = try Self.readUntilUpToDate(bus, peer, readEveryMs: 1, maxReads: 200_000)
        #expect(j.errors.isEmpty, "\(j.errors)")
        #expect(
            j.events == 20_000 && j.upToDateTopics.count == 20_000 && j.subscribeUpToDate,
            "\(j.events) events, \(j.upToDateTopics.count) topic UPTODATEs, final \(j.subscribeUpToDate), \(j.reads) reads"
        )
        #expect(log.lines("slowConsumer").isEmpty)
    }
}
