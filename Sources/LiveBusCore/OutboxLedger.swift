/// What each byte queued to a connection was for, by its running offset (``BusConnection/bytesQueuedTotal`` and
/// ``BusConnection/bytesSentTotal``), so that replies and catch-up are counted apart from live events.
/// Pure.
public struct OutboxLedger: Sendable, Equatable {
    /// What a run of queued bytes carries.
    public enum Kind: Sendable, Equatable {
        /// Answers to the session's own frames (PONG, ACK, RESULT, UPTODATE, ERROR).
        case reply
        /// Replayed and snapshot events of a catch-up.
        case catchUp
    }

    private struct Run: Sendable, Equatable {
        var start: Int
        var end: Int
        var kind: Kind
    }

    private var runs: [Run] = []
    /// Runs before this index are sent (usable from inline code, for ``mayHaveOutstanding``).
    @usableFromInline var head = 0
    /// `runs.count`, kept beside it for inline code.
    @usableFromInline var runCount = 0

    /// An empty ledger.
    public init() {}

    /// Records that bytes `start..<end` (running offsets) were queued for `kind`.
    public mutating func record(_ kind: Kind, from start: Int, to end: Int) {
        guard end > start else { return }
        if head < runs.count, runs[runs.count - 1].kind == kind, runs[runs.count - 1].end == start {
            runs[runs.count - 1].end = end
        } else {
            runs.append(Run(start: start, end: end, kind: kind))
            runCount = runs.count
        }
    }

    /// Whether any run is kept: when `false`, ``outstanding(_:sent:)`` is 0 for every kind and sent offset.
    @inlinable
    public var mayHaveOutstanding: Bool { head < runCount }

    /// Bytes of `kind` queued and not yet sent, when `sent` bytes (running offset) have been sent.
    public mutating func outstanding(_ kind: Kind, sent: Int) -> Int {
        while head < runs.count, runs[head].end <= sent { head += 1 }
        if head > 64 && head * 2 > runs.count {
            runs.removeFirst(head)
            runCount = runs.count
            head = 0
        }
        var total = 0
        for r in runs[head...] where r.kind == kind { total += r.end - max(r.start, sent) }
        return total
    }
}
