import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// Clock probes, resume, slow consumers and coalescing, and the limits (rates, caps, timeouts), on the embedded
/// daemon: virtual time, no socket, no sleep. Moved from LimitsE2ETests and extended (issue 15, item 6).
/// Sources: Protocol/PROTOCOL.md §5.3–§5.6, Protocol/CLOCKSYNC.md.
@Suite struct EmbeddedSessionTests {
    static let hour: Int64 = 3_600_000

    /// Answers every PING in `frames` as a phone whose clock is `offset` ms ahead of the server's, with no delay.
    static func answerPings(_ frames: [Frame], on phone: EmbeddedConnection, offset: Int64) throws {
        for f in frames where f.type == .ping {
            let ping = try WireJSON.decode(PingBody.self, from: f.body)
            let t = ping.t1 + offset
            try phone.writeInbound(frame(.pong, PongBody(t1: ping.t1, t2: t, t3: t)))
        }
    }

    // MARK: - Clock probes

    /// The daemon probes at once after WELCOME, re-probes as ClockSync asks, and converts an event's instants into
    /// the phone's clock: a phone one hour ahead gets etaTarget + 1 h, to the millisecond (round trips of 0 ms).
    @Test func probesConvergeAndEventsArriveInThePhonesClock() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        let clientNow = bus.now.millisecondsSinceEpoch + Self.hour
        var (_, frames) = try phone.attach(helloFrame(name: "ahead", clientTime: clientNow))
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
        var pings = 0
        // The phone answers each PING at once (a round trip of 0 ms): virtual time moves 1 ms at a time.
        for _ in 0..<10_000 {
            pings += frames.filter { $0.type == .ping }.count
            try Self.answerPings(frames, on: phone, offset: Self.hour)
            bus.advance(by: 1)
            frames = try phone.readOutboundFrames()
        }
        #expect(pings >= 3, "probes sent: \(pings)")
        let s = try #require(bus.engine.sessions.values.first { $0.name == "ahead" })
        #expect(s.probesSent == pings)
        #expect(s.lastProbeRoundTripMilliseconds == 0)
        #expect(s.outstandingProbe == nil)
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let body = eventBody()
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 1, body))
        let events = try phone.readOutboundFrames().filter { $0.type == .event }
        let trailer = try #require(events.first?.trailer)
        #expect(trailer.etaTarget == body.contentState.etaTarget + Self.hour)
        #expect(trailer.lastConfirmed == body.contentState.lastConfirmed + Self.hour)
        #expect(trailer.staleDate == body.staleDate.map { $0 + Self.hour })
        #expect(trailer.uncertaintyMs < 50, "uncertainty \(trailer.uncertaintyMs) ms")
    }

    /// A PING from the phone gets a PONG stamped with the server clock (virtual: exactly `now`).
    @Test func pingIsAnsweredWithServerTimes() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "p"))
        bus.advance(by: 1234)
        _ = try phone.readOutboundFrames()
        try phone.writeInbound(frame(.ping, PingBody(t1: 42)))
        let pong = try #require(try phone.readOutboundFrames().first(.pong, as: PongBody.self))
        #expect(pong.t1 == 42)
        #expect(pong.t2 == bus.now.millisecondsSinceEpoch && pong.t3 == pong.t2)
    }

    /// A PONG to no outstanding probe (late, or made up) changes nothing.
    @Test func aPongToNoProbeIsIgnored() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "p"))
        try phone.writeInbound(frame(.pong, PongBody(t1: 7, t2: 8, t3: 9)))
        let s = try #require(bus.engine.sessions.values.first)
        #expect(s.outstandingProbe != nil && s.outstandingProbe != 7)
        #expect(s.lastProbeRoundTripMilliseconds == nil)
        #expect(!phone.isClosed)
    }

    // MARK: - Resume

    /// A phone that disconnects resumes with its token: same name, its subscriptions kept, and only the events it
    /// missed replayed, then UPTODATE.
    @Test func resumeReplaysOnlyWhatWasMissed() throws {
        let (bus, _) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let phone = bus.connect()
        let (welcome, _) = try phone.attach(helloFrame(name: "pro"))
        let token = try #require(welcome?.resumeToken)
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
        _ = try phone.readOutboundFrames()
        try publisher.writeInbound([publishFrame(topic: "orders/A1", id: 1), publishFrame(topic: "orders/A1", id: 2)])
        let live = try phone.readOutboundFrames().filter { $0.type == .event }
        #expect(live.map(\.sequence) == [1, 2])
        phone.closeInbound()
        for id in 3...5 { try publisher.writeInbound(publishFrame(topic: "orders/A1", id: UInt64(id))) }
        _ = try publisher.readOutboundFrames()
        let again = bus.connect()
        let (w2, first) = try again.attach(
            helloFrame(name: "pro", resume: ResumeBody(token: token, topics: ["orders/A1": 2]))
        )
        #expect(w2?.resumed == true && w2?.name == "pro" && w2?.resumeToken == token)
        let frames = first + (try again.readAllOutboundFrames())
        let events = frames.filter { $0.type == .event }
        #expect(events.map(\.sequence) == [3, 4, 5])
        #expect(events.allSatisfy { $0.flags.contains(.replay) })
        #expect(frames.contains { $0.type == .upToDate && $0.topic == "orders/A1" })
        // Its subscription came back with it: a new event is delivered live.
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 6))
        #expect(try again.readOutboundFrames().filter { $0.type == .event }.map(\.sequence) == [6])
    }

    /// A daemon killed after it answered a SUBSCRIBE but before that turn's batch was stored comes back with the
    /// session's record from WELCOME, which holds no patterns. The phone's resume names its patterns: the daemon
    /// restores the ones the record lacks and catches the phone up on them; a resume without `patterns` (an older
    /// client) gets the record's only. Before, such a phone resumed subscribed to nothing and applied nothing more
    /// (FederationE2ETests' `phonesOnEveryDaemonFollowTheDemoToDelivered` under load: a kill -9 0.1 s after its
    /// SUBSCRIBE). Source: PROTOCOL.md §5.3.
    @Test(arguments: [true, false]) func aResumeRestoresThePatternsItsRecordLacks(sendsPatterns: Bool) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("livebus-resume-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        var o = DaemonOptions.embedded()
        o.dataDirectory = dir.path
        var token = ""
        do {
            // The state such a kill leaves: the phone's record without its SUBSCRIBE, and an event on its topic.
            let bus = try EmbeddedDaemon(options: o)
            let phone = bus.connect()
            token = try #require(try phone.attach(helloFrame(name: "h1")).0?.resumeToken)
            let publisher = bus.connect()
            try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
            try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 1))
            #expect(try publisher.readOutboundFrames().types.contains(.ack))
            bus.engine.shutdown(reason: "test")
        }
        let bus = try EmbeddedDaemon(options: o)
        let phone = bus.connect()
        let resume = ResumeBody(token: token, topics: [:], patterns: sendsPatterns ? ["orders/>"] : nil)
        let (welcome, first) = try phone.attach(helloFrame(name: "h1", resume: resume))
        #expect(welcome?.resumed == true)
        let frames = first + (try phone.readAllOutboundFrames())
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        try publisher.writeInbound(publishFrame(topic: "orders/A1", id: 2))
        let live = try phone.readAllOutboundFrames().filter { $0.type == .event }.map(\.sequence)
        if sendsPatterns {
            #expect(frames.filter { $0.type == .event }.map(\.sequence) == [1])
            #expect(frames.contains { $0.type == .upToDate && $0.topic == "orders/A1" })
            #expect(live == [2])
        } else {
            #expect(frames.filter { $0.type == .event }.isEmpty && live.isEmpty)
        }
        bus.engine.shutdown(reason: "test")
    }

    /// A resume's patterns are checked as a SUBSCRIBE's: a malformed one or too many refuse the HELLO, naming it.
    @Test func aResumeWithBadPatternsIsRefused() throws {
        let (bus, _) = try embeddedDaemon { $0.limits.maximumSubscriptions = 2 }
        let phone = bus.connect()
        let token = try #require(try phone.attach(helloFrame(name: "pro")).0?.resumeToken)
        phone.closeInbound()
        for (patterns, code) in [(["orders/>/x"], "invalidTopic"), (["a", "b", "c"], "tooManySubscriptions")] {
            let again = bus.connect()
            let (_, frames) = try again.attach(
                helloFrame(name: "pro", resume: ResumeBody(token: token, topics: [:], patterns: patterns))
            )
            #expect(frames.errors.map(\.name) == [code], "\(patterns): \(frames.errors)")
            #expect(frames.errors.first?.message.contains("resume.patterns") == true)
        }
    }

    /// A resume's patterns count with the session's record's: past `--max-subscriptions` together, the HELLO is
    /// refused (`tooManySubscriptions`, with the count, the limit and what to do), not accepted with a log line and
    /// patterns silently dropped; the record stays, and a resume within the limit is accepted. Source: PROTOCOL.md
    /// §5.3; review finding (a).
    @Test func aResumeWhosePatternsWithTheRecordsPassTheLimitIsRefused() throws {
        let (bus, log) = try embeddedDaemon { $0.limits.maximumSubscriptions = 2 }
        let phone = bus.connect()
        let token = try #require(try phone.attach(helloFrame(name: "pro")).0?.resumeToken)
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["a", "b"])))
        #expect(try phone.readOutboundFrames().errors.isEmpty)
        phone.closeInbound()
        let over = bus.connect()
        let (welcome, frames) = try over.attach(
            helloFrame(name: "pro", resume: ResumeBody(token: token, topics: [:], patterns: ["b", "c"]))
        )
        #expect(welcome == nil)
        #expect(frames.errors.map(\.name) == ["tooManySubscriptions"], "\(frames.errors)")
        let message = frames.errors.first?.message ?? ""
        #expect(message.contains("3 topic patterns") && message.contains("may hold 2"), "\(message)")
        #expect(message.contains("--max-subscriptions") && message.contains("fewer patterns"), "\(message)")
        #expect(over.isClosed)
        #expect(log.lines("resume patterns not restored").isEmpty)
        let within = bus.connect()
        let (resumed, _) = try within.attach(
            helloFrame(name: "pro", resume: ResumeBody(token: token, topics: [:], patterns: ["b"]))
        )
        #expect(resumed?.resumed == true && resumed?.resumeToken == token)
    }

    @Test func anUnknownResumeTokenIsRefused() throws {
        let (bus, _) = try embeddedDaemon()
        let phone = bus.connect()
        let (_, frames) = try phone.attach(
            helloFrame(name: "pro", resume: ResumeBody(token: String(repeating: "0", count: 32), topics: [:]))
        )
        #expect(frames.errors.map(\.name) == ["resumeRejected"])
        #expect(phone.isClosed)
    }

    /// The name of a disconnected session is reserved for its resume window, then free (virtual minutes).
    @Test func aDisconnectedNameIsReservedForTheResumeWindow() throws {
        let (bus, _) = try embeddedDaemon { $0.resumeWindowMilliseconds = 60_000 }
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "pro"))
        phone.closeInbound()
        let thief = bus.connect()
        let (_, refused) = try thief.attach(helloFrame(name: "pro"))
        #expect(refused.errors.map(\.name) == ["rejected"])
        #expect(refused.errors.first?.message.contains("reserved") == true)
        bus.advance(by: 61_000)
        let later = bus.connect()
        let (welcome, _) = try later.attach(helloFrame(name: "pro"))
        #expect(welcome?.name == "pro" && welcome?.resumed == false)
    }

    // MARK: - Slow consumer and coalescing

    /// A phone that stops reading has its live events coalesced (newest per topic, sent as a snapshot once it
    /// drains), then, once terminal events push its queue past the limit, is cut as a slow consumer; another
    /// phone gets every event in order with nothing coalesced.
    @Test func slowConsumerIsCoalescedThenCutWhileAnotherPhoneGetsEverything() throws {
        let (bus, log) = try embeddedDaemon {
            $0.coalesceThresholdBytes = 4096
            $0.slowConsumerLimitBytes = 32768
        }
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let good = bus.connect()
        try good.attach(helloFrame(name: "good"))
        let slow = bus.connect()
        try slow.attach(helloFrame(name: "slow"))
        for p in [good, slow] {
            try p.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["orders/>"])))
            _ = try p.readOutboundFrames()
        }
        slow.peerReceiveWindowBytes = 1024
        let big = eventBody(summary: String(repeating: "x", count: 1500))
        var goodSeen: [UInt64] = []
        for id in 1...40 {
            try publisher.writeInbound(publishFrame(topic: "orders/A1", id: UInt64(id), big))
            goodSeen += try good.readOutboundFrames().filter { $0.type == .event }.map(\.sequence)
        }
        let s = try #require(bus.engine.sessions.values.first { $0.name == "slow" })
        #expect(s.coalescedCount > 0, "the slow phone's updates were coalesced")
        #expect(!slow.isClosed)
        // It reads again: what was held goes out as one snapshot of the newest state.
        slow.peerReceiveWindowBytes = nil
        let caught = try slow.readAllOutboundFrames().filter { $0.type == .event }
        #expect(caught.last?.sequence == 40 && caught.last?.flags.contains(.snapshot) == true)
        #expect(caught.count < 40)
        // Stops again; terminal events are never held, so its queue grows past the limit and it is cut.
        slow.peerReceiveWindowBytes = 1024
        let end = eventBody("end", summary: String(repeating: "y", count: 1500))
        for id in 1...40 {
            try publisher.writeInbound(publishFrame(topic: "orders/B\(id)", id: UInt64(100 + id), end))
            goodSeen += try good.readOutboundFrames().filter { $0.type == .event }.map(\.sequence)
        }
        #expect(
            !log.lines("protocol error", "code=slowConsumer", "session.id=\(s.id)").isEmpty,
            "outstanding \(s.connection.outstandingBytes) \(log.lines.suffix(5))"
        )
        bus.advance(by: 3000)  // its ERROR cannot be flushed to a peer that does not read: closed at the deadline
        #expect(slow.isClosed)
        #expect(goodSeen.count == 80 && !good.isClosed)
        let g = try #require(bus.engine.sessions.values.first { $0.name == "good" })
        #expect(g.coalescedCount == 0)
    }

    // MARK: - Limits

    /// No HELLO within the handshake timeout: cut with handshakeTimeout. Silent past half the idle timeout: a
    /// keepalive PING; past all of it: cut with idleTimeout. A session that answers stays.
    @Test func handshakeAndIdleTimeoutsKeepKeepalives() throws {
        let (bus, log) = try embeddedDaemon {
            $0.limits.handshakeTimeoutMilliseconds = 600
            $0.limits.idleTimeoutMilliseconds = 2000
        }
        let trickle = bus.connect()
        let hello = try helloFrame(name: "trickle").encoded()
        trickle.writeInbound(Array(hello.prefix(10)))
        let silent = bus.connect()
        try silent.attach(helloFrame(role: .publisher, name: "silent", device: nil))
        let answers = bus.connect()
        try answers.attach(helloFrame(role: .publisher, name: "answers", device: nil))
        bus.advance(by: 500)
        #expect(!trickle.isClosed)
        bus.advance(by: 400)
        #expect(try trickle.readOutboundFrames().errors.map(\.name) == ["handshakeTimeout"])
        #expect(trickle.isClosed)
        var silentSaw: [FrameType] = []
        for _ in 0..<30 {
            bus.advance(by: 100)
            silentSaw += try silent.readOutboundFrames().types
            try Self.answerPings(try answers.readOutboundFrames(), on: answers, offset: 0)
        }
        #expect(silentSaw.contains(.ping) && silentSaw.last == .error, "\(silentSaw)")
        #expect(silent.isClosed && !answers.isClosed)
        #expect(log.lines("session cut by a limit", "code=handshakeTimeout").count == 1)
        let idle = log.lines("session cut by a limit", "code=idleTimeout")
        #expect(idle.count == 1 && idle[0].contains("session.name=silent"))
    }

    /// A flood of PINGs past the frame rate is slowed (not read), then cut with messageRateTooHigh after the grace
    /// period; a phone within the rate is untouched.
    @Test func aFloodPastTheFrameRateIsCutAfterTheGrace() throws {
        let (bus, log) = try embeddedDaemon {
            $0.limits.framesPerSecond = 1000
            $0.limits.frameBurst = 1000
            $0.limits.graceMilliseconds = 1000
        }
        let calm = bus.connect()
        try calm.attach(helloFrame(name: "calm"))
        let flooder = bus.connect()
        try flooder.attach(helloFrame(role: .publisher, name: "flooder", device: nil))
        let ping = try frame(.ping, PingBody(t1: 1)).encoded()
        var flood: [UInt8] = []
        for _ in 0..<20_000 { flood += ping }
        flooder.writeInbound(flood)
        #expect(flooder.unreadInboundBytes > 0, "the daemon stopped reading the flooder")
        #expect(!log.lines("session slowed: frame rate", "session.name=flooder").isEmpty)
        for _ in 0..<30 {
            bus.advance(by: 100)
            try calm.writeInbound(frame(.ping, PingBody(t1: 2)))
            try Self.answerPings(try calm.readOutboundFrames(), on: calm, offset: 0)
        }
        #expect(flooder.isClosed)
        #expect(log.lines("session cut by a limit", "code=messageRateTooHigh", "session.name=flooder").count == 1)
        #expect(!calm.isClosed)
    }

    @Test func subscriptionsPastTheCapAreRefused() throws {
        let (bus, _) = try embeddedDaemon { $0.limits.maximumSubscriptions = 3 }
        let phone = bus.connect()
        try phone.attach(helloFrame(name: "p"))
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["a", "b", "c"])))
        #expect(try phone.readOutboundFrames().errors.isEmpty)
        try phone.writeInbound(frame(.subscribe, SubscribeBody(patterns: ["a", "d"])))
        let errs = try phone.readOutboundFrames().errors
        #expect(errs.map(\.name) == ["tooManySubscriptions"])
        #expect(errs.first?.message.contains("4 topic patterns") == true)
    }

    @Test func connectionCapRefusesWithAReasonAndKeepsSessionsServed() throws {
        let (bus, log) = try embeddedDaemon { $0.limits.maximumConnections = 2 }
        let a = bus.connect()
        try a.attach(helloFrame(name: "a"))
        let b = bus.connect()
        try b.attach(helloFrame(name: "b"))
        let c = bus.connect()
        #expect(try c.readOutboundFrames().errors.map(\.name) == ["tooManyConnections"])
        #expect(c.isClosed && !a.isClosed && !b.isClosed)
        #expect(log.lines("connection refused: connection cap reached").count == 1)
        b.closeInbound()
        let d = bus.connect()
        let (welcome, _) = try d.attach(helloFrame(name: "d"))
        #expect(welcome != nil)
    }

    /// A peer that reads nothing while sending PINGs has its replies queued to the limit; the daemon stops reading
    /// it, then cuts it with replyQueueFull after the grace period.
    @Test func repliesQueuedPastTheLimitAreCut() throws {
        let (bus, log) = try embeddedDaemon {
            $0.limits.maximumReplyBytes = 4096
            $0.limits.graceMilliseconds = 1000
        }
        let peer = bus.connect()
        try peer.attach(helloFrame(role: .publisher, name: "deaf", device: nil))
        peer.peerReceiveWindowBytes = 0
        let ping = try frame(.ping, PingBody(t1: 1)).encoded()
        var many: [UInt8] = []
        for _ in 0..<5000 { many += ping }
        peer.writeInbound(many)
        #expect(peer.unreadInboundBytes > 0)
        #expect(!log.lines("session slowed: replies queued", "session.name=deaf").isEmpty)
        bus.advance(by: 5000)
        #expect(peer.isClosed)
        #expect(log.lines("session cut by a limit", "code=replyQueueFull").count == 1)
    }

    /// A client that stops reading and repeats SUBSCRIBE `t/>` 300 times over 200 topics: repeats join the topic's
    /// queued catch-up, so the queue holds at most one per topic plus one UPTODATE per SUBSCRIBE, and the queued
    /// bytes stay within the catch-up window. Once it reads, it gets every topic once and one UPTODATE per SUBSCRIBE.
    @Test func repeatedSubscribesDoNotGrowTheCatchUpQueue() throws {
        let (bus, _) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        try publisher.writeInbound((0..<200).map { publishFrame(topic: "t/\($0)", id: UInt64($0)) })
        let peer = bus.connect()
        try peer.attach(helloFrame(name: "repeater"))
        peer.peerReceiveWindowBytes = 0
        let f = frame(.subscribe, SubscribeBody(patterns: ["t/>"]))
        try peer.writeInbound(Array(repeating: f, count: 300))
        bus.run()
        let s = try #require(bus.engine.sessions.values.first { $0.name == "repeater" })
        #expect(s.limits.pendingCatchUps <= 200 + 300)
        #expect(s.connection.outstandingBytes < 2 * bus.engine.options.limits.catchUpWindowBytes)
        peer.peerReceiveWindowBytes = nil
        let frames = try peer.readAllOutboundFrames()
        let events = frames.filter { $0.type == .event }
        #expect(Set(events.map(\.topic)).count == 200 && events.count == 200)
        #expect(frames.filter { $0.type == .upToDate && $0.topic.isEmpty }.count == 300)
        #expect(s.limits.pendingCatchUps == 0)
    }
}
