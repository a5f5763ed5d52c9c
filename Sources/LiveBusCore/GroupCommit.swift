import Foundation

/// The group commit of one loop turn: every append, resume record and metadata value staged during the turn,
/// taken whole at the end of the turn as one ``StoreBatch`` (one transaction, one fsync under `--sync full`).
///
/// Each staged event carries a `Waiter` (the daemon's: the publishing session and its frame id), handed back in
/// the same order with the batch, so the ACKs and the fan-out follow the commit ("batch committed").
/// Pure: no clock, no store. Source: ISSUE-15 item 2; ../shared/DESIGN.md "The core and its adapters".
public struct GroupCommit<Waiter> {
    private var items: [StoreItem] = []
    private var waiters: [Waiter] = []
    private var encoded: [[UInt8]?] = []
    private var resume: [ResumeRecord] = []
    private var resumeIndex: [String: Int] = [:]
    private var removed: [String] = []
    private var meta: [(key: String, value: String)] = []
    /// Whether a resume record was staged that must not wait (``saveResume(_:deferrable:)``).
    private var urgentResume = false

    /// Creates an empty turn.
    public init() {}

    /// Whether nothing is staged.
    public var isEmpty: Bool { items.isEmpty && resume.isEmpty && removed.isEmpty && meta.isEmpty }
    /// Events staged so far.
    public var eventCount: Int { items.count }
    /// Whether what is staged must be committed at the end of this turn: an event, a deletion, metadata or a resume
    /// record staged without `deferrable`. `false` when only deferrable resume records wait (or nothing does): they
    /// stay staged for a later turn's batch.
    public var mustCommit: Bool { !items.isEmpty || !removed.isEmpty || !meta.isEmpty || urgentResume }

    /// Stages an event.
    /// - Parameters:
    ///   - item: The topic and body.
    ///   - body: The body already encoded (``StoreBatch/encodedBodies``), or `nil`.
    ///   - waiter: Who waits for it to be committed.
    public mutating func append(_ item: StoreItem, encoded body: [UInt8]? = nil, waiter: Waiter) {
        items.append(item)
        encoded.append(body)
        waiters.append(waiter)
    }

    /// Stages a resume record; a later record of the same token staged before the next ``take(nowMilliseconds:)``
    /// replaces it.
    /// - Parameters:
    ///   - record: The record.
    ///   - deferrable: Whether the record may wait for a later batch (``mustCommit`` stays as it was): a SUBSCRIBE's
    ///     change, which a resume's `patterns` repeat (PROTOCOL.md §5.3). A new session's record, whose WELCOME
    ///     waits for its commit, is not deferrable.
    public mutating func saveResume(_ record: ResumeRecord, deferrable: Bool = false) {
        if !deferrable { urgentResume = true }
        removed.removeAll { $0 == record.token }
        if let i = resumeIndex[record.token] {
            resume[i] = record
        } else {
            resumeIndex[record.token] = resume.count
            resume.append(record)
        }
    }

    /// Stages the deletion of a resume record; it cancels a record of the same token staged earlier in the turn.
    /// - Parameter token: The resume token.
    public mutating func removeResume(token: String) {
        if let i = resumeIndex.removeValue(forKey: token) {
            resume.remove(at: i)
            for (t, j) in resumeIndex where j > i { resumeIndex[t] = j - 1 }
        }
        if !removed.contains(token) { removed.append(token) }
    }

    /// Stages a metadata value.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    public mutating func setMeta(_ key: String, _ value: String) { meta.append((key, value)) }

    /// Takes everything staged as one batch and empties the turn.
    /// - Parameter nowMilliseconds: Server-clock milliseconds, stored with the resume records.
    /// - Returns: The batch and the waiters of its events, in the same order.
    public mutating func take(nowMilliseconds: Int64) -> (batch: StoreBatch, waiters: [Waiter]) {
        let batch = StoreBatch(
            events: items,
            encodedBodies: encoded,
            resumeRecords: resume,
            removedResumeTokens: removed,
            meta: meta,
            nowMilliseconds: nowMilliseconds
        )
        let w = waiters
        items.removeAll(keepingCapacity: true)
        encoded.removeAll(keepingCapacity: true)
        waiters.removeAll(keepingCapacity: true)
        resume.removeAll(keepingCapacity: true)
        resumeIndex.removeAll(keepingCapacity: true)
        removed.removeAll(keepingCapacity: true)
        meta.removeAll(keepingCapacity: true)
        urgentResume = false
        return (batch, w)
    }
}
