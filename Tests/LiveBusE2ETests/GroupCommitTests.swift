import Foundation
import LiveBusCore
@testable import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// Group commit (ISSUE-15 item 2): everything a loop turn appends is one store batch; the ACKs of those PUBLISHes
/// go out only after that batch's commit, in the same turn's flush. An in-process daemon on a real socket, with a
/// store that counts its commits.
@Suite(.serialized)
struct GroupCommitTests {
    static func publishes(_ n: Int, firstID: UInt64 = 1) -> [UInt8] {
        var bytes: [UInt8] = []
        for i in 0..<n {
            var body = GoldenVectorsForTests.event
            // The marker is in a summary text: the status must be one of PROTOCOL.md §5.1's (PublishRules).
            body.contentState.summary.en = "s\(firstID - 1 + UInt64(i))"
            let f = Frame(
                type: .publish,
                sequence: firstID + UInt64(i),
                topic: "orders/G\(i % 4)",
                body: try! WireJSON.encode(body)
            )
            bytes += try! f.encoded()
        }
        return bytes
    }

    /// 200 PUBLISHes written at once are stored in a few batches (one per loop turn that read some of them), not
    /// 200 transactions; every ACK carries its topic's next sequence, in order, and a subscriber gets every event.
    @Test func publishesReadInOneTurnAreOneBatchAndAckedInOrder() throws {
        let bus = try TestBus(scenario: nil)
        let control = StoreSwitch()
        bus.daemon.store = FlakyStore(control: control)
        var publisher: RawPeer?
        var subscriber: RawPeer?
        RawPeer.connect(bus) { p in
            subscriber = p
            p.send(hello(role: .observer, device: nil))
            p.send(Frame(type: .subscribe, body: try! WireJSON.encode(SubscribeBody(patterns: ["orders/*"]))))
        }
        #expect(bus.run(timeoutMs: 5000) { subscriber?.frames.contains { $0.type == .upToDate } ?? false })
        RawPeer.connect(bus) { p in
            publisher = p
            p.send(hello(role: .publisher, device: nil))
            p.connection.write(Self.publishes(200))
        }
        #expect(bus.run(timeoutMs: 10_000) { (publisher?.frames.filter { $0.type == .ack }.count ?? 0) == 200 })
        let acks = publisher?.frames.filter { $0.type == .ack } ?? []
        #expect(acks.map(\.sequence) == Array(1...200), "ACKs in PUBLISH order")
        let seqs = acks.compactMap { try? WireJSON.decode(AckBody.self, from: $0.body).sequence }
        let expected: [UInt64] = (0..<200).map { (i: Int) -> UInt64 in UInt64(i / 4 + 1) }
        #expect(seqs == expected, "each topic numbered 1, 2, 3… in order")
        #expect(control.commits >= 1 && control.commits <= 20, "\(control.commits) commits for 200 PUBLISHes")
        #expect(
            bus.run(timeoutMs: 5000) { (subscriber?.frames.filter { $0.type == .event }.count ?? 0) == 200 },
            "the subscriber got \(subscriber?.frames.filter { $0.type == .event }.count ?? 0) events"
        )
        publisher?.connection.close()
        subscriber?.connection.close()
        bus.shutdown()
    }

    /// No ACK before the commit: a batch the store refuses gets the publisher an ERROR per PUBLISH (non-fatal
    /// `storeUnavailable`, in order, PROTOCOL.md §5.7) and not one ACK; the connection stays open.
    @Test func aRefusedBatchIsNeverAcknowledged() throws {
        let bus = try TestBus(scenario: nil)
        let control = StoreSwitch()
        control.full = true
        bus.daemon.store = FlakyStore(control: control)
        var publisher: RawPeer?
        RawPeer.connect(bus) { p in
            publisher = p
            p.send(hello(role: .publisher, device: nil))
            p.connection.write(Self.publishes(50))
        }
        #expect(bus.run(timeoutMs: 5000) { (publisher?.errors.count ?? 0) == 50 })
        #expect(publisher?.frames.contains { $0.type == .ack } == false)
        #expect(publisher?.frames.filter { $0.type == .error }.map(\.sequence) == Array(1...50), "in PUBLISH order")
        #expect(publisher?.errors.allSatisfy { $0.name == "storeUnavailable" && !$0.fatal } == true)
        #expect(publisher?.errors.first?.message.contains("nothing was stored") == true)
        #expect(publisher?.closed == false)
        #expect(control.commits == 0 && control.refusals >= 1)
        bus.shutdown()
    }

    /// PUBLISH and BYE in one write: the ACK still reaches the publisher before the connection closes.
    @Test func anAckGoesOutBeforeTheByeThatFollowsItsPublish() throws {
        let bus = try TestBus(scenario: nil)
        var publisher: RawPeer?
        RawPeer.connect(bus) { p in
            publisher = p
            p.send(hello(role: .publisher, device: nil))
            p.connection.write(Self.publishes(3) + (try! Frame(type: .bye, body: Array("{}".utf8)).encoded()))
        }
        #expect(bus.run(timeoutMs: 5000) { publisher?.closed ?? false })
        #expect(publisher?.frames.filter { $0.type == .ack }.map(\.sequence) == [1, 2, 3])
        bus.shutdown()
    }
}

/// kill -9 with PUBLISH batches in flight (ISSUE-15 "Done when"): a publisher pipelines PUBLISHes to a `livebusd`
/// process with a data directory, the daemon is killed mid-stream, and every PUBLISH that was acknowledged is in
/// the store under the sequence its ACK named, with its body; nothing acknowledged is lost.
@Suite(.serialized)
struct GroupCommitKillTests {
    @Test func everyAcknowledgedPublishSurvivesAKillNineWithBatchesInFlight() throws {
        let dir = temporaryDirectory("lbgk")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let daemon = try DaemonChild(
            ["--socket", socket, "--data-dir", dir + "/data", "--log-level", "notice"],
            log: dir + "/daemon.log"
        )
        defer { daemon.terminate() }
        for _ in 0..<300 where SocketProbe.probe(path: socket) != .live { usleep(10_000) }
        #expect(SocketProbe.probe(path: socket) == .live)
        let loop = try EventLoop()
        var publisher: RawPeer?
        Connection.connect(loop: loop, path: socket) { r in
            guard case .success(let c) = r else { return }
            let p = RawPeer(c)
            publisher = p
            p.send(hello(role: .publisher, device: nil))
        }
        var next: UInt64 = 1
        var killed = false
        let pump = loop.schedule(after: 20, repeat: 2) {
            guard let p = publisher, !killed else { return }
            // Keep about 400 PUBLISHes unacknowledged: several batches are in flight at any moment.
            let acked = UInt64(p.frames.filter { $0.type == .ack }.count)
            guard next - 1 - acked < 400 else { return }
            p.connection.write(GroupCommitTests.publishes(100, firstID: next))
            next += 100
            if acked >= 1500 {
                killed = true
                daemon.kill9()
                loop.stop()
            }
        }
        let deadline = loop.schedule(after: 30_000) { loop.stop() }
        loop.run()
        pump.cancel()
        deadline.cancel()
        #expect(killed, "the publisher did not get 1500 ACKs before the deadline")
        let acks = publisher?.frames.filter { $0.type == .ack } ?? []
        publisher?.connection.close()
        loop.run()
        loop.close()
        let store = try SQLiteStore(directory: dir + "/data")
        var checked = 0
        for a in acks {
            guard let seq = try? WireJSON.decode(AckBody.self, from: a.body).sequence else { continue }
            let stored = store.events(topic: a.topic, from: seq, limit: 1)?.first
            // The PUBLISH with frame id `a.sequence` carried the summary "s<index>", index = id − 1.
            #expect(stored?.sequence == seq, "ACK \(a.sequence) on \(a.topic) seq \(seq) is not stored")
            #expect(stored?.body.contentState.summary.en == "s\(a.sequence - 1)", "ACK \(a.sequence): wrong body")
            checked += 1
        }
        #expect(checked >= 1500)
        print("kill -9 with batches in flight: \(checked) acknowledged PUBLISHes checked, \(next - 1) sent")
    }
}
