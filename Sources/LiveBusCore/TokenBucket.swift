/// A token bucket on a caller's monotonic clock (milliseconds): the daemon's `--max-frames-per-second` tokens a second
/// up to its frame burst, one per frame. Pure: the time is passed in. It also tracks since when the
/// session has been throttled without ever letting the bucket refill to half, the sign of a flood rather than a
/// burst. Tokens are kept in thousandths, so refills are exact integers.
public struct TokenBucket: Sendable, Equatable {
    /// Tokens (frames) per second.
    public let ratePerSecond: Int
    /// Largest number of tokens held.
    public let burst: Int
    private var milliTokens: Int64
    private var lastRefillMs: Int64
    /// The monotonic instant (ms) since which the bucket has been empty at least once and not refilled to half,
    /// or `nil`.
    public private(set) var throttledSinceMs: Int64?

    /// A full bucket at `nowMs`.
    public init(ratePerSecond: Int, burst: Int, nowMs: Int64) {
        self.ratePerSecond = max(1, ratePerSecond)
        self.burst = max(1, burst)
        milliTokens = Int64(self.burst) * 1000
        lastRefillMs = nowMs
    }

    private mutating func refill(_ nowMs: Int64) {
        guard nowMs > lastRefillMs else { return }  // a clock that did not advance (or went back) adds nothing
        let capacity = Int64(burst) * 1000
        // Saturate: a long quiet period fills the bucket, it never overflows the arithmetic.
        let elapsed = min(nowMs - lastRefillMs, capacity / Int64(ratePerSecond) + 1)
        milliTokens = min(capacity, milliTokens + elapsed * Int64(ratePerSecond))
        lastRefillMs = nowMs
    }

    /// Whole tokens available at `nowMs`.
    public mutating func available(nowMs: Int64) -> Int {
        refill(nowMs)
        return Int(milliTokens / 1000)
    }

    /// Takes one token if there is one; records the start of throttling when there is none.
    /// - Returns: whether the frame may be handled now.
    public mutating func take(nowMs: Int64) -> Bool {
        refill(nowMs)
        guard milliTokens >= 1000 else {
            if throttledSinceMs == nil { throttledSinceMs = nowMs }
            return false
        }
        milliTokens -= 1000
        if milliTokens * 2 >= Int64(burst) * 1000 { throttledSinceMs = nil }
        return true
    }

    /// Milliseconds until `tokens` tokens are available (0 when they are), at most the time to fill the bucket.
    public mutating func millisecondsUntil(tokens: Int, nowMs: Int64) -> Int64 {
        refill(nowMs)
        let wanted = Int64(min(max(1, tokens), burst)) * 1000
        guard milliTokens < wanted else { return 0 }
        let missing = wanted - milliTokens
        return (missing + Int64(ratePerSecond) - 1) / Int64(ratePerSecond)
    }

    /// Whether the session has been throttled for longer than `graceMs` at `nowMs`.
    public func isOverGrace(nowMs: Int64, graceMs: Int64) -> Bool {
        guard let since = throttledSinceMs else { return false }
        return nowMs - since > graceMs
    }
}
