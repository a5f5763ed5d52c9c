import LiveBusCore
import LiveBusDaemon
import Testing

/// The pure parts of the limits, on a virtual monotonic clock (milliseconds). Source: issue 14 "Floods and
/// resource limits"; Protocol/PROTOCOL.md §5.6.
struct TokenBucketTests {
    /// A full bucket gives its burst at once, then one token per 1/rate second.
    @Test func burstThenRate() {
        var b = TokenBucket(ratePerSecond: 1000, burst: 100, nowMs: 0)
        var taken = 0
        while b.take(nowMs: 0) { taken += 1 }
        #expect(taken == 100)
        #expect(b.throttledSinceMs == 0)
        let v1 = b.take(nowMs: 0)
        #expect(!v1)
        let v2 = b.available(nowMs: 5)
        #expect(v2 == 5)  // 1000/s = 1 per ms
        let v3 = b.millisecondsUntil(tokens: 10, nowMs: 5)
        #expect(v3 == 5)
        let v4 = b.millisecondsUntil(tokens: 5, nowMs: 5)
        #expect(v4 == 0)
    }

    /// A slow rate refills in thousandths: 3 frames/s gives a token after 334 ms, not 333.
    @Test func fractionalRefillIsExact() {
        var b = TokenBucket(ratePerSecond: 3, burst: 1, nowMs: 0)
        let v5 = b.take(nowMs: 0)
        #expect(v5)
        let v6 = b.take(nowMs: 333)
        #expect(!v6)
        let v7 = b.millisecondsUntil(tokens: 1, nowMs: 333)
        #expect(v7 == 1)
        let v8 = b.take(nowMs: 334)
        #expect(v8)
    }

    /// A long quiet period fills the bucket to its burst and no further; a clock that goes back adds nothing;
    /// an hour-long gap neither overflows nor gives more than the burst.
    @Test func refillSaturates() {
        var b = TokenBucket(ratePerSecond: 20_000, burst: 20_000, nowMs: 0)
        for _ in 0..<20_000 { _ = b.take(nowMs: 0) }
        let v9 = b.available(nowMs: 0)
        #expect(v9 == 0)
        let v10 = b.available(nowMs: -50)
        #expect(v10 == 0)
        let v11 = b.available(nowMs: Int64(Int32.max) * 1000)
        #expect(v11 == 20_000)
    }

    /// A flood keeps the bucket under half, so it stays throttled and passes the grace period; a burst that then
    /// goes quiet lets the bucket refill and is forgiven.
    @Test func floodPassesGraceBurstIsForgiven() {
        var flood = TokenBucket(ratePerSecond: 100, burst: 100, nowMs: 0)
        var t: Int64 = 0
        while t <= 6000 {
            while flood.take(nowMs: t) {}
            t += 10
        }
        #expect(flood.isOverGrace(nowMs: 6000, graceMs: 5000))
        #expect(!flood.isOverGrace(nowMs: 6000, graceMs: 7000))

        var burst = TokenBucket(ratePerSecond: 100, burst: 100, nowMs: 0)
        while burst.take(nowMs: 0) {}
        #expect(burst.throttledSinceMs == 0)
        let v12 = burst.take(nowMs: 600)
        #expect(v12)  // 60 tokens back: over half, forgiven
        #expect(burst.throttledSinceMs == nil)
        #expect(!burst.isOverGrace(nowMs: 10_000, graceMs: 5000))
    }
}

struct OutboxLedgerTests {
    /// Replies and catch-up are counted by running offset, apart from each other, as the kernel takes bytes.
    @Test func countsByKindAndOffset() {
        var l = OutboxLedger()
        l.record(.reply, from: 0, to: 100)
        l.record(.catchUp, from: 100, to: 1100)
        l.record(.catchUp, from: 1100, to: 2100)  // merged with the run before
        l.record(.reply, from: 2500, to: 2600)  // live bytes 2100..<2500 belong to neither
        let v13 = l.outstanding(.reply, sent: 0)
        #expect(v13 == 200)
        let v14 = l.outstanding(.catchUp, sent: 0)
        #expect(v14 == 2000)
        let v15 = l.outstanding(.reply, sent: 50)
        #expect(v15 == 150)
        let v16 = l.outstanding(.catchUp, sent: 600)
        #expect(v16 == 1500)
        let v17 = l.outstanding(.catchUp, sent: 2100)
        #expect(v17 == 0)
        let v18 = l.outstanding(.reply, sent: 2550)
        #expect(v18 == 50)
        let v19 = l.outstanding(.reply, sent: 3000)
        #expect(v19 == 0)
        l.record(.reply, from: 3000, to: 3000)  // nothing
        let v20 = l.outstanding(.reply, sent: 3000)
        #expect(v20 == 0)
    }

    /// Thousands of runs that were sent are dropped, and what is left is still counted right.
    @Test func compactsSentRuns() {
        var l = OutboxLedger()
        for i in 0..<10_000 { l.record(i % 2 == 0 ? .reply : .catchUp, from: i * 10, to: i * 10 + 10) }
        let v21 = l.outstanding(.reply, sent: 99_980)
        #expect(v21 == 10)
        let v22 = l.outstanding(.catchUp, sent: 99_980)
        #expect(v22 == 10)
        let v23 = l.outstanding(.reply, sent: 100_000)
        #expect(v23 == 0)
    }
}

struct LivenessAndCapTests {
    static var limits: SessionLimits {
        var l = SessionLimits()
        l.handshakeTimeoutMilliseconds = 1000
        l.idleTimeoutMilliseconds = 4000
        return l
    }

    /// Handshake timeout counts from accept whatever arrives (a 1-byte/s HELLO); idle counts from the last bytes,
    /// with one keepalive PING after half the idle timeout, and again only after something arrived.
    @Test func verdicts() {
        let l = Self.limits
        func v(_ est: Bool, last: Int64, ka: Int64? = nil, now: Int64) -> LivenessVerdict {
            .of(established: est, acceptedMs: 0, lastReceivedMs: last, keepaliveSentMs: ka, nowMs: now, limits: l)
        }
        #expect(v(false, last: 999, now: 1000) == .ok)
        #expect(v(false, last: 1000, now: 1001) == .handshakeTimedOut)
        #expect(v(true, last: 0, now: 2000) == .ok)
        #expect(v(true, last: 0, now: 2001) == .sendKeepalive)
        #expect(v(true, last: 0, ka: 2001, now: 3000) == .ok)
        #expect(v(true, last: 2500, ka: 2001, now: 4502) == .sendKeepalive)
        #expect(v(true, last: 2001, ka: 2001, now: 4002) == .sendKeepalive)  // answered within the PING's millisecond
        #expect(v(true, last: 0, ka: 2001, now: 4001) == .idleTimedOut)
        #expect(v(true, last: 1000, ka: 2001, now: 3500) == .ok)  // PING sent, no answer yet: no second PING
        #expect(v(true, last: 3000, ka: 2001, now: 4001) == .ok)
    }

    /// The cap stays below the descriptor limit, with a reserve for the daemon's own files; a larger
    /// `--max-connections` is refused naming the numbers.
    @Test func connectionCap() throws {
        #expect(SessionLimits.connectionCap(descriptorLimit: 20_000) == 19_936)
        #expect(SessionLimits.connectionCap(descriptorLimit: 100) == 50)
        #expect(SessionLimits.connectionCap(descriptorLimit: 1) == 1)
        var l = SessionLimits()
        #expect(try l.effectiveConnectionCap(descriptorLimit: 1024) == 960)
        l.maximumConnections = 20
        #expect(try l.effectiveConnectionCap(descriptorLimit: 1024) == 20)
        l.maximumConnections = 2000
        #expect(throws: DaemonError.self) { try l.effectiveConnectionCap(descriptorLimit: 1024) }
        do {
            _ = try l.effectiveConnectionCap(descriptorLimit: 1024)
        } catch {
            #expect(error.message.contains("RLIMIT_NOFILE 1024") && error.message.contains("960"))
        }
    }
}
