import LiveBusCore
import LiveBusWire
import Testing

/// The embedded driver itself: virtual time, timer order, the turn's order (work, turn end, flush, I/O), the
/// peer's receive window and drain, back-pressure on reads, closes. Source: swift-nio `EmbeddedEventLoop` /
/// `EmbeddedChannel` semantics; libuv's loop iteration order (docs/src/design.rst).
@Suite struct EmbeddedLoopTests {
    /// Echoes every read back, records drains and closes, and can stop reading.
    final class Echo: BusEngine {
        let loop: EmbeddedLoop
        var drains = 0
        var closes: [TransportError?] = []
        var turnEnds = 0
        var pauseAfterRead = false
        init(loop: EmbeddedLoop) {
            self.loop = loop
            loop.onTurnEnd { [unowned self] in self.turnEnds += 1 }
        }
        func accept(_ c: any BusConnection) {
            c.setHandlers(
                onRead: { [unowned self, unowned c] bytes in
                    c.write(Array(bytes))
                    if self.pauseAfterRead { c.stopReading() }
                },
                onClose: { [unowned self] e in self.closes.append(e) },
                onDrain: { [unowned self] in self.drains += 1 }
            )
            try? c.resumeReading()
        }
    }

    @Test func timersFireInDeadlineOrderAtTheirOwnInstants() throws {
        let loop = EmbeddedLoop(startEpochMilliseconds: 1000)
        var fired: [(String, UInt64, Int64)] = []
        func note(_ n: String) {
            fired.append((n, loop.nowMilliseconds, loop.serverClock.now().millisecondsSinceEpoch))
        }
        loop.armTimer(after: 30) { note("c") }
        loop.armTimer(after: 10) { note("a") }
        loop.armTimer(after: 10) { note("b") }
        let cancelled = loop.armTimer(after: 20) { note("never") }
        let repeating = loop.armTimer(after: 15, repeat: 10) { note("r") }
        cancelled.cancel()
        loop.advance(by: 9)
        #expect(fired.isEmpty)
        loop.advance(by: 31)
        #expect(fired.map(\.0) == ["a", "b", "r", "r", "c", "r"])
        let instants: [UInt64] = [10, 10, 15, 25, 30, 35]
        #expect(fired.map(\.1) == instants)
        #expect(fired.allSatisfy { $0.2 == 1000 + Int64($0.1) }, "the server clock follows virtual time")
        repeating.cancel()
        loop.advance(by: 100)
        #expect(fired.count == 6)
        #expect(loop.nowMilliseconds == 140 && loop.pendingTimers.isEmpty)
    }

    @Test func writesAreFlushedAtTurnEndAndEchoed() throws {
        let bus = EmbeddedBus(makeEngine: { Echo(loop: $0) })
        let c = bus.connect()
        c.writeInbound([1, 2, 3])
        #expect(c.readOutbound() == [1, 2, 3])
        #expect(c.bytesQueuedTotal == 3 && c.bytesSentTotal == 3 && c.outstandingBytes == 0)
        #expect(bus.engine.drains == 1, "a flush that wrote everything is a drain")
        #expect(bus.engine.turnEnds >= 1)
        #expect(bus.elapsedMilliseconds == 0, "time moves only when advanced")
    }

    @Test func aFullReceiveWindowKeepsBytesInFlightUntilThePeerReads() throws {
        let bus = EmbeddedBus(makeEngine: { Echo(loop: $0) })
        let c = bus.connect()
        c.peerReceiveWindowBytes = 4
        c.writeInbound(Array(0..<10))
        #expect(c.outstandingBytes == 6 && c.bytesSentTotal == 4 && bus.engine.drains == 0)
        #expect(c.readOutbound() == [0, 1, 2, 3])
        #expect(c.readOutbound() == [4, 5, 6, 7])
        #expect(c.outstandingBytes == 0 && bus.engine.drains == 1, "drained once nothing is in flight")
        #expect(c.readOutbound() == [8, 9])
        #expect(bus.engine.drains == 1)
    }

    @Test func bytesWaitWhileTheBusDoesNotRead() throws {
        let bus = EmbeddedBus(makeEngine: { Echo(loop: $0) })
        bus.engine.pauseAfterRead = true
        let c = bus.connect()
        c.writeInbound([1])
        c.writeInbound([2, 3])
        #expect(c.readOutbound() == [1])
        #expect(c.unreadInboundBytes == 2 && !c.isReading)
        try c.resumeReading()
        bus.run()
        #expect(c.readOutbound() == [2, 3] && c.unreadInboundBytes == 0)
    }

    @Test func closes() throws {
        let bus = EmbeddedBus(makeEngine: { Echo(loop: $0) })
        let a = bus.connect()
        a.closeInbound(error: TransportError(name: "ECONNRESET", message: "read: connection reset by peer"))
        #expect(
            a.isClosed
                && a.closeReason
                    == .closedByPeer(TransportError(name: "ECONNRESET", message: "read: connection reset by peer"))
        )
        #expect(bus.engine.closes.count == 1 && bus.engine.closes[0]?.name == "ECONNRESET")
        let b = bus.connect()
        b.peerReceiveWindowBytes = 0
        b.write([9, 9])
        b.closeAfterFlush(timeoutMilliseconds: 500)
        #expect(!b.isClosed, "waits for the peer to take its bytes")
        bus.advance(by: 499)
        #expect(!b.isClosed)
        bus.advance(by: 1)
        #expect(b.isClosed && b.closeReason == .closedByBus)
        let c = bus.connect()
        c.write([7])
        c.closeAfterFlush(timeoutMilliseconds: 500)
        #expect(c.isClosed && c.closeReason == .closedAfterFlush && c.readOutbound() == [7])
    }

    @Test func outboundFramesAreDecodedAcrossReads() throws {
        let bus = EmbeddedBus(makeEngine: { Echo(loop: $0) })
        let c = bus.connect()
        let bytes = try Frame(type: .ping, body: Array(#"{"t1":1}"#.utf8)).encoded()
        c.writeInbound(Array(bytes.prefix(7)))
        #expect(try c.readOutboundFrames().isEmpty)
        c.writeInbound(Array(bytes.dropFirst(7)))
        let frames = try c.readOutboundFrames()
        #expect(frames.map(\.type) == [.ping] && frames.first?.body == Array(#"{"t1":1}"#.utf8))
    }
}
