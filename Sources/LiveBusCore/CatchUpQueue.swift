/// One catch-up of one topic (replay from the log or a snapshot, then UPTODATE), or `topic == nil`: the UPTODATE
/// that ends a whole SUBSCRIBE (PROTOCOL.md §5.3).
public struct CatchUpJob {
    /// The topic caught up, or `nil` for the UPTODATE ending a SUBSCRIBE.
    public var topic: String?
    /// The catch-up sends the topic's events after this sequence.
    public var after: UInt64
    /// Whether its events were fetched (a job that started no longer takes repeats).
    public var started = false
    /// The events fetched, oldest first.
    public var events: [StoredEvent] = []
    /// How many of ``events`` were written.
    public var index = 0

    /// A job not started.
    public init(topic: String?, after: UInt64) {
        self.topic = topic
        self.after = after
    }
}

/// A session's queue of catch-ups as a state machine (pure): SUBSCRIBE, RESEND and resume queue them, the
/// session's drain paces them (the daemon writes the head job a window at a time).
///
/// A repeat of a topic whose catch-up has not started joins it (from the lower sequence), so repeats cannot grow
/// the queue; live events of a topic being caught up wait for that catch-up, which sends them in order.
/// Source: issue 14 "Floods and resource limits"; Protocol/PROTOCOL.md §5.3.
public struct CatchUpQueue {
    private var jobs: [CatchUpJob] = []
    private var head = 0
    /// The running number of `jobs[0]` (jobs are numbered as queued).
    private var base = 0
    /// Topic → running number of its queued catch-up that has not started: a new one for the topic joins it.
    private var pendingTopicJob: [String: Int] = [:]
    /// Topic → catch-ups queued for it (usable from inline code: ``isCatchingUp(topic:)`` is inlined into every
    /// live delivery, which then reads this dictionary in place instead of copying the whole queue).
    @usableFromInline var catchingUp: [String: Int] = [:]

    /// An empty queue.
    public init() {}

    /// Whether a catch-up is queued and not finished.
    public var hasWork: Bool { head < jobs.count }

    /// Catch-ups queued and not finished.
    public var count: Int { jobs.count - head }

    /// The job to work on, or `nil`.
    public var current: CatchUpJob? { hasWork ? jobs[head] : nil }

    /// Whether live events of `topic` wait for a catch-up of it.
    /// - Complexity: O(1); without hashing `topic` when nothing is being caught up (every live delivery asks).
    @inlinable
    public func isCatchingUp(topic: String) -> Bool { !catchingUp.isEmpty && catchingUp[topic] != nil }

    /// Queues the catch-up of `topic` after sequence `after` (or, with `topic == nil`, a SUBSCRIBE's UPTODATE).
    /// - Returns: `true` when it joined the topic's queued catch-up that had not started (the queue did not grow).
    @discardableResult
    public mutating func enqueue(topic: String?, after: UInt64) -> Bool {
        if let topic, let n = pendingTopicJob[topic] {
            let i = n - base
            if i >= head, i < jobs.count, !jobs[i].started {
                jobs[i].after = min(jobs[i].after, after)
                return true
            }
        }
        if let topic {
            pendingTopicJob[topic] = base + jobs.count
            catchingUp[topic, default: 0] += 1
        }
        jobs.append(CatchUpJob(topic: topic, after: after))
        return false
    }

    /// Marks the current job started: later repeats of its topic queue a new job.
    public mutating func startCurrent() {
        guard hasWork, !jobs[head].started else { return }
        jobs[head].started = true
        if let topic = jobs[head].topic, pendingTopicJob[topic] == base + head { pendingTopicJob[topic] = nil }
    }

    /// Replaces the current job (its events and progress) with `job`.
    public mutating func updateCurrent(_ job: CatchUpJob) {
        guard hasWork else { return }
        jobs[head] = job
    }

    /// Ends the current job and moves to the next.
    public mutating func finishCurrent() {
        guard hasWork else { return }
        if let topic = jobs[head].topic {
            let n = (catchingUp[topic] ?? 1) - 1
            catchingUp[topic] = n > 0 ? n : nil
        }
        head += 1
        if head == jobs.count {
            base += jobs.count
            jobs.removeAll(keepingCapacity: false)
            head = 0
        } else if head > 1024 && head * 2 > jobs.count {
            base += head
            jobs.removeFirst(head)
            head = 0
        }
    }

    /// Drops every job (the session closed).
    public mutating func removeAll() {
        jobs = []
        head = 0
        catchingUp = [:]
        pendingTopicJob = [:]
    }
}
