import Foundation
import LiveBusClient
import LiveBusClock
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// Upstream floods against a real `livebusd`: a PING flood (read and unread), a PUBLISH flood and a SUBSCRIBE
/// flood, each from its own thread while well-behaved phones on this thread measure their delivery before and
/// during it. Each prints the figures and checks that the good phones received every update, that the abuser was
/// slowed or cut with its reason code (in the daemon's log), and, for the PING flood, that the daemon's memory
/// stayed bounded. Source: issue 14 "Floods and resource limits"; Protocol/PROTOCOL.md §5.6.
@Suite(.serialized)
struct E2EFloodTests {
    struct Run {
        var floodStart: Int64 = 0
        var floodEnd: Int64 = 0
        var rssBefore = 0
        var rssMax = 0
        var everyPhoneHasAll = false
        var published = 0
        var acknowledged = 0
        var baseline = ""
        var flood = ""
        var floodP50: Int64 = -1
        var errors: [String] = []
    }

    /// Good traffic for `baselineMs`, then `abuse` on its own thread until `done` holds (or `maxMs`), then the
    /// good traffic stops and the phones get what is in flight.
    static func run(
        _ d: FloodDaemon,
        baselineMs: UInt64 = 1200,
        maxMs: UInt64 = 15_000,
        abuse: @escaping @Sendable (String, Shared<Bool>) -> Void,
        until done: @escaping () -> Bool
    ) throws -> Run {
        let loop = try EventLoop()
        let traffic = GoodTraffic(loop: loop, socket: d.socket, phones: 4)
        let stop = Shared(false)
        var r = Run()
        loop.schedule(after: 400) { traffic.startPublishing() }
        loop.schedule(after: 400 + baselineMs) {
            r.floodStart = wallMs()
            r.rssBefore = residentKiB(pid: d.pid) ?? 0
            let socket = d.socket
            Thread { abuse(socket, stop) }.start()
        }
        var ending = false
        let check = loop.schedule(after: 100, repeat: 100) {
            if r.floodStart > 0 { r.rssMax = max(r.rssMax, residentKiB(pid: d.pid) ?? 0) }
            if r.floodStart > 0, !ending, done() {
                ending = true
                r.floodEnd = wallMs()
                loop.schedule(after: 500) {
                    traffic.stopPublishing()
                    stop.update { $0 = true }
                }
            }
            if ending, r.floodEnd + 600 < wallMs(), traffic.everyPhoneHasAll { loop.stop() }
            if ending, r.floodEnd + 4000 < wallMs() { loop.stop() }
        }
        let deadline = loop.schedule(after: maxMs) { loop.stop() }
        loop.run()
        check.cancel()
        deadline.cancel()
        stop.update { $0 = true }
        if r.floodEnd == 0 { r.floodEnd = wallMs() }
        r.everyPhoneHasAll = traffic.everyPhoneHasAll
        r.published = traffic.published
        r.acknowledged = traffic.acknowledged
        r.baseline = traffic.report("before the flood", from: 0, to: r.floodStart)
        r.flood = traffic.report("during the flood", from: r.floodStart, to: r.floodEnd)
        r.floodP50 = traffic.stats(from: r.floodStart, to: r.floodEnd).p50
        r.errors = traffic.errors
        traffic.close()
        loop.schedule(after: 100) { loop.stop() }
        loop.run()
        loop.close()
        usleep(300_000)  // let the abuser thread see its stop flag
        return r
    }

    /// Writes `frame` over and over, as fast as the kernel takes it (frames are never cut: a partial send goes on
    /// where it stopped), until `stop` or until the connection is gone. Returns whether it was gone.
    static func flood(_ peer: BlockingPeer, _ frames: [UInt8], stop: Shared<Bool>) -> Bool {
        var off = 0
        while !stop.value {
            let n = Array(frames[off...]).withUnsafeBytes {
                Glibc.send(peer.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                off = (off + n) % frames.count
            } else if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK {
                return true
            }
        }
        return false
    }

    static func repeated(_ f: Frame, toBytes n: Int) -> [UInt8] {
        let one = try! f.encoded()
        return Array([[UInt8]](repeating: one, count: max(1, n / one.count)).joined())
    }

    /// Reads and decodes everything on `peer` until the connection ends or `stop`, noting ERROR codes.
    static func reader(_ peer: BlockingPeer, codes: Shared<[String]>, stop: Shared<Bool>) {
        var decoder = FrameDecoder()
        while !stop.value, let bytes = peer.receive() {
            decoder.append(bytes)
            while let f = try? decoder.next() {
                if f.type == .error, let e = try? WireJSON.decode(ErrorBody.self, from: f.body) {
                    codes.update { $0.append(e.name) }
                }
            }
        }
    }

    /// A PING flood, 2.4 M in 15 s in the issue (RSS 26 → 194 MB). Two flooders: one never reads its PONGs (the
    /// daemon stops reading it once 64 KiB of replies are queued, then cuts it with `replyQueueFull`), one reads
    /// them (held to the frame rate, then cut with `messageRateTooHigh`). The daemon's memory stays bounded and the
    /// good phones receive every update.
    @Test func pingFloodIsSlowedThenCutAndMemoryStaysBounded() throws {
        let d = try FloodDaemon(
            "lbfp",
            ["--max-frames-per-second", "2000", "--limit-grace", "2s"]
        )
        defer { d.stop() }
        let ping = Frame(type: .ping, body: try WireJSON.encode(PingBody(t1: 1_767_225_600_000)))
        let frames = Self.repeated(ping, toBytes: 64 * 1024)
        let seenByReader = Shared<[String]>([])
        let sent = Shared(0)
        let r = try Self.run(
            d,
            abuse: { socket, stop in
                let group = DispatchGroup()
                for reads in [false, true] {
                    group.enter()
                    Thread {
                        defer { group.leave() }
                        guard let p = BlockingPeer(path: socket) else { return }
                        defer { p.close() }
                        p.sendAll(try! hello(role: .publisher, name: reads ? "ping-reader" : "ping-deaf").encoded())
                        let readerDone = DispatchSemaphore(value: 0)
                        if reads {
                            Thread {
                                Self.reader(p, codes: seenByReader, stop: stop)
                                readerDone.signal()
                            }
                            .start()
                        }
                        _ = Self.flood(p, frames, stop: stop)
                        if reads { _ = readerDone.wait(timeout: .now() + 3) }  // it reads the ERROR before the close
                        sent.update { $0 += 1 }
                    }
                    .start()
                }
                group.wait()
            },
            until: { d.lines("session cut by a limit").count >= 2 }
        )
        let deaf = d.lines("session cut by a limit", "session.name=ping-deaf")
        let reader = d.lines("session cut by a limit", "session.name=ping-reader")
        let growthMiB = Double(r.rssMax - r.rssBefore) / 1024
        print(
            """
            PING flood: \(r.baseline); \(r.flood)
              daemon RSS \(r.rssBefore / 1024) MiB before, at most \(r.rssMax / 1024) MiB during (+\(String(format: "%.1f", growthMiB)) MiB)
              ping-deaf: \(deaf.first.map(String.init) ?? "not cut")
              ping-reader: \(reader.first.map(String.init) ?? "not cut"); it read \(seenByReader.value)
              slowed: \(d.lines("session slowed").count) log lines
            """
        )
        #expect(r.everyPhoneHasAll, "good phones: \(r.acknowledged) publishes acknowledged, not all applied")
        #expect(r.errors.filter { !$0.contains("cannot connect") }.isEmpty, "good phones saw \(r.errors)")
        #expect(deaf.first?.contains("code=replyQueueFull") == true, "the flooder that never reads is cut")
        #expect(reader.first?.contains("code=messageRateTooHigh") == true, "the reading flooder is cut")
        #expect(seenByReader.value.contains("messageRateTooHigh"), "the reading flooder got the ERROR with its code")
        #expect(!d.lines("session slowed: replies queued", "ping-deaf").isEmpty)
        #expect(!d.lines("session slowed: frame rate", "ping-reader").isEmpty)
        // Before the limits this flood grew the daemon by ~11 MB/s without end; bounded now (generous margin).
        #expect(growthMiB < 48, "the daemon grew by \(growthMiB) MiB under the PING flood")
    }

    /// A PUBLISH flood (the good phones' median went from 11 ms to 699 ms in the issue): the flooder's frames are
    /// handled a turn's budget at a time, interleaved with everyone else's, held to the frame rate and cut with
    /// `messageRateTooHigh`; the good phones get every update, their delays printed against the baseline.
    @Test func publishFloodDoesNotStarveOtherPhones() throws {
        let d = try FloodDaemon("lbfu", ["--max-frames-per-second", "3000", "--limit-grace", "2500ms"])
        defer { d.stop() }
        let codes = Shared<[String]>([])
        let r = try Self.run(
            d,
            abuse: { socket, stop in
                guard let p = BlockingPeer(path: socket) else { return }
                defer { p.close() }
                p.sendAll(try! hello(role: .publisher, name: "publish-flooder", device: nil).encoded())
                Thread { Self.reader(p, codes: codes, stop: stop) }.start()
                let body = try! WireJSON.encode(GoldenVectorsForTests.event)
                var frames: [UInt8] = []
                for i in 0..<200 {
                    frames += try! Frame(type: .publish, sequence: UInt64(i), topic: "flood/\(i % 50)", body: body)
                        .encoded()
                }
                _ = Self.flood(p, frames, stop: stop)
            },
            until: { !d.lines("session cut by a limit", "publish-flooder").isEmpty }
        )
        let cut = d.lines("session cut by a limit", "publish-flooder")
        print(
            """
            PUBLISH flood: \(r.baseline); \(r.flood)
              publish-flooder: \(cut.first.map(String.init) ?? "not cut"); it read \(codes.value)
            """
        )
        #expect(r.everyPhoneHasAll, "good phones: \(r.acknowledged) publishes acknowledged, not all applied")
        #expect(r.errors.filter { !$0.contains("cannot connect") }.isEmpty, "good phones saw \(r.errors)")
        #expect(cut.first?.contains("code=messageRateTooHigh") == true, "the flooder is cut with its code")
        #expect(codes.value.contains("messageRateTooHigh"))
        // Generous: the issue's starved median was 699 ms in a release build; debug and a shared machine get slack.
        #expect(r.floodP50 >= 0 && r.floodP50 < 1000, "median delay during the flood \(r.floodP50) ms")
    }

    /// The same PUBLISH flood with the frame rate out of reach (1,000,000/s): what keeps the other phones on time
    /// is the per-turn budget alone (64 frames per session per loop turn; libuv reads up to 32 × 64 KiB from one
    /// socket in one callback, 2 MiB of PUBLISH frames handled back to back before). Figures printed against the
    /// baseline; the good phones get every update, and the flooder gets its ACKs in order.
    @Test func publishFloodIsInterleavedByTheTurnBudget() throws {
        let d = try FloodDaemon("lbfi", ["--max-frames-per-second", "1000000"])
        defer { d.stop() }
        let acks = Shared((count: 0, inOrder: true, last: -1))
        let started = Shared<Int64>(0)
        let r = try Self.run(
            d,
            abuse: { socket, stop in
                guard let p = BlockingPeer(path: socket) else { return }
                defer { p.close() }
                p.sendAll(try! hello(role: .publisher, name: "publish-flooder", device: nil).encoded())
                started.update { $0 = wallMs() }
                Thread {
                    var decoder = FrameDecoder()
                    while !stop.value, let bytes = p.receive() {
                        decoder.append(bytes)
                        while let f = try? decoder.next() {
                            guard f.type == .ack else { continue }
                            acks.update {
                                $0.count += 1
                                if Int(f.sequence) != ($0.last + 1) % 200 { $0.inOrder = false }
                                $0.last = Int(f.sequence)
                            }
                        }
                    }
                }
                .start()
                let body = try! WireJSON.encode(GoldenVectorsForTests.event)
                var frames: [UInt8] = []
                for i in 0..<200 {
                    frames += try! Frame(type: .publish, sequence: UInt64(i), topic: "flood/\(i % 50)", body: body)
                        .encoded()
                }
                _ = Self.flood(p, frames, stop: stop)
            },
            until: { started.value > 0 && wallMs() - started.value > 2500 }
        )
        let a = acks.value
        print(
            """
            PUBLISH flood, turn budget only: \(r.baseline); \(r.flood)
              publish-flooder: \(a.count) publishes acknowledged, in order: \(a.inOrder); cut: \(d.lines("session cut by a limit").count)
            """
        )
        #expect(r.everyPhoneHasAll, "good phones: \(r.acknowledged) publishes acknowledged, not all applied")
        #expect(a.count > 1000 && a.inOrder, "the flooder is served too, in order")
        #expect(d.lines("session cut by a limit").isEmpty)
        #expect(r.floodP50 >= 0 && r.floodP50 < 1000, "median delay during the flood \(r.floodP50) ms")
    }

    /// 42,000 SUBSCRIBE patterns in 5 s froze the daemon for 5.5 s (each SUBSCRIBE re-encoded and stored every
    /// pattern so far: quadratic). Past `--max-subscriptions` the session is cut with `tooManySubscriptions`; the
    /// good phones keep receiving.
    @Test func subscribeFloodIsCappedAndDoesNotFreezeTheDaemon() throws {
        let d = try FloodDaemon("lbfs", [])
        defer { d.stop() }
        let codes = Shared<[String]>([])
        let r = try Self.run(
            d,
            abuse: { socket, stop in
                guard let p = BlockingPeer(path: socket) else { return }
                defer { p.close() }
                p.sendAll(try! hello(name: "subscribe-flooder").encoded())
                Thread { Self.reader(p, codes: codes, stop: stop) }.start()
                for k in 0..<420 where !stop.value {
                    let patterns = (0..<100).map { "flood/\(k)/\($0)" }
                    let f = Frame(type: .subscribe, body: try! WireJSON.encode(SubscribeBody(patterns: patterns)))
                    guard p.sendAll(try! f.encoded()) else { return }
                }
            },
            until: { !d.lines("protocol error", "tooManySubscriptions").isEmpty }
        )
        let cut = d.lines("protocol error", "tooManySubscriptions")
        print(
            """
            SUBSCRIBE flood: \(r.baseline); \(r.flood)
              subscribe-flooder: \(cut.first.map(String.init) ?? "not cut"); it read \(codes.value)
            """
        )
        #expect(r.everyPhoneHasAll, "good phones: \(r.acknowledged) publishes acknowledged, not all applied")
        #expect(!cut.isEmpty, "the SUBSCRIBE flooder is cut with tooManySubscriptions")
        #expect(codes.value.contains("tooManySubscriptions"))
    }
}
