import Foundation
import LiveBusCore
import LiveBusWire

/// Why the store refuses writes, as `livebus status` and `livebus doctor` name it.
public enum StoreCondition: String, Sendable, Codable {
    /// SQLITE_FULL: the disk, the user's quota or the database's page limit is exhausted.
    case full
    /// SQLITE_IOERR: the operating system failed a read or write (ENOSPC and EDQUOT can surface here too).
    case ioError
    /// Any other failure of the store.
    case storeError

    /// The condition of a store failure, from its SQLite result code (primary code = low 8 bits).
    /// Source: https://www.sqlite.org/rescode.html (SQLITE_FULL 13, SQLITE_IOERR 10 and its extended codes).
    /// - Parameter error: The failure.
    public init(_ error: StoreError) {
        switch (error.resultCode ?? 0) & 0xff {
        case 13: self = .full
        case 10: self = .ioError
        default: self = .storeError
        }
    }

    /// What the condition means, in words.
    public var words: String {
        switch self {
        case .full: "the disk (or quota) holding the data directory is full"
        case .ioError: "the disk holding the data directory fails writes (I/O error; a full disk or quota can cause it)"
        case .storeError: "the store refuses writes"
        }
    }
}

/// Simulator events the store has not taken yet, oldest first: the daemon's side of the acknowledged store path.
///
/// A client PUBLISH is acknowledged only once stored, and refused with an error otherwise. The simulator's events go
/// through the same path (``EventStore/commit(_:completion:)``, with the simulator state that produced them in
/// the same transaction); when the store refuses them (SQLITE_FULL, SQLITE_IOERR, a quota) they are held here in
/// order instead of dropped, and later events queue behind them. ``retry(simulatorState:store:nowMs:)`` stores
/// everything held in one transaction, in order, once the store accepts writes again, so nothing is skipped and a
/// sequence number is assigned only to what was stored (never reused, never skipped). Held events were never shown
/// to a phone: the state saved with the stored events stays the simulator's state after them, so after a kill -9 a
/// restart replays the held ones from the simulator.
///
/// Pure logic: no clock and no timer. The caller passes `nowMs` (any monotonic milliseconds; the daemon uses its
/// server clock) and arms the retry after ``retryDelayMilliseconds``.
public struct HeldEvents {
    /// An event waiting for the store.
    public typealias Item = StoreItem

    /// How the store came back after refusing writes.
    public struct Recovery: Sendable, Equatable {
        /// Events held and then stored.
        public var heldEvents: Int
        /// Milliseconds from the first refusal to the successful write.
        public var heldMilliseconds: Int64
        /// Failed attempts (the first refusal included).
        public var failedAttempts: Int
    }

    /// What ``publish(_:simulatorState:store:nowMs:)`` and ``retry(simulatorState:store:nowMs:)`` did.
    public enum Outcome {
        /// Stored (everything held before included, oldest first); `recovery` is set when this ended a refusal.
        case stored([StoredEvent], recovery: Recovery?)
        /// Held; `began` is `true` when this refusal started the degraded period.
        case held(StoreError, began: Bool)
    }

    /// The degraded period, while the store refuses writes.
    public struct Degradation: Sendable {
        /// The last refusal.
        public var error: StoreError
        /// Its condition.
        public var condition: StoreCondition { StoreCondition(error) }
        /// `nowMs` of the first refusal.
        public var sinceMs: Int64
        /// Failed attempts so far.
        public var failedAttempts: Int
    }

    /// First retry delay after a refusal, milliseconds; doubled after each failed retry.
    public static let firstRetryDelayMilliseconds: Int64 = 100
    /// The longest retry delay, milliseconds.
    public static let maximumRetryDelayMilliseconds: Int64 = 2000

    /// Held events past which the caller stops the simulator (it then emits nothing more, so nothing is lost:
    /// it catches up once the store takes what is held).
    public let limit: Int
    /// The held events, oldest first.
    public private(set) var items: [Item] = []
    /// Set while the store refuses writes.
    public private(set) var degradation: Degradation?

    /// Creates an empty queue.
    /// - Parameter limit: Held events at which ``isFull`` becomes `true` (at least 1).
    public init(limit: Int = 10_000) { self.limit = max(1, limit) }

    /// Whether the store refuses writes (since the last refusal, until a write succeeds).
    public var isDegraded: Bool { degradation != nil }
    /// The number of held events.
    public var count: Int { items.count }
    /// Whether ``limit`` events are held.
    public var isFull: Bool { items.count >= limit }

    /// Milliseconds to wait before the next retry: 100 ms doubling per failed attempt, at most 2 s.
    public var retryDelayMilliseconds: Int64 {
        let doublings = max(0, min(10, (degradation?.failedAttempts ?? 1) - 1))
        return min(Self.maximumRetryDelayMilliseconds, Self.firstRetryDelayMilliseconds << Int64(doublings))
    }

    /// Stores `events` after everything already held, or holds them.
    ///
    /// While degraded nothing is attempted: the events queue behind the held ones and wait for
    /// ``retry(simulatorState:store:nowMs:)``, so they never overtake.
    /// - Parameters:
    ///   - events: New events, oldest first.
    ///   - simulatorState: The simulator's state after `events` (saved in the same transaction), or `nil`.
    ///   - store: The store.
    ///   - nowMs: The current time, milliseconds.
    /// - Returns: What was stored (with the held events before it), or that everything is held.
    public mutating func publish(
        _ events: [Item],
        simulatorState: Data?,
        store: any EventStore,
        nowMs: Int64
    ) -> Outcome {
        items += events
        if let d = degradation { return .held(d.error, began: false) }
        return attempt(simulatorState: simulatorState, store: store, nowMs: nowMs)
    }

    /// Tries again to store everything held, in one transaction with `simulatorState`. The transaction writes the
    /// simulator state even with no event held, so it tells whether the store accepts writes.
    /// - Parameters:
    ///   - simulatorState: The simulator's current state (after every held event), or `nil`.
    ///   - store: The store.
    ///   - nowMs: The current time, milliseconds.
    /// - Returns: What was stored, or that everything is still held.
    public mutating func retry(simulatorState: Data?, store: any EventStore, nowMs: Int64) -> Outcome {
        attempt(simulatorState: simulatorState, store: store, nowMs: nowMs)
    }

    /// Whether a retry would write anything (events held, or a simulator state to save). Without, it cannot tell
    /// whether the store takes writes; the next write made elsewhere (a client PUBLISH) does.
    /// - Parameter simulatorState: The simulator state a retry would save, or `nil`.
    /// - Returns: `true` when ``retry(simulatorState:store:nowMs:)`` would write.
    public func canProbe(simulatorState: Data?) -> Bool { !items.isEmpty || simulatorState != nil }

    /// Notes that a write outside the queue (a client PUBLISH) was refused: starts or continues the degraded period.
    /// - Parameters:
    ///   - refusal: The store's error.
    ///   - nowMs: The current time, milliseconds.
    /// - Returns: `true` when this started the degraded period.
    public mutating func noteRefused(_ refusal: StoreError, nowMs: Int64) -> Bool { failed(refusal, nowMs: nowMs) }

    /// Notes that a write outside the queue (a client PUBLISH) succeeded: with nothing held, the store takes writes
    /// again and the degraded period ends.
    /// - Parameter nowMs: The current time, milliseconds.
    /// - Returns: How the period ended, or `nil` when there was none or events are still held.
    public mutating func noteStored(nowMs: Int64) -> Recovery? {
        guard let d = degradation, items.isEmpty else { return nil }
        degradation = nil
        return Recovery(heldEvents: 0, heldMilliseconds: nowMs - d.sinceMs, failedAttempts: d.failedAttempts)
    }

    /// Stores `events` now or not at all (for a command, which is refused rather than held when the store fails).
    /// A refusal starts or continues the degraded period; the events are not held.
    /// Refused without trying when events are held (they came first).
    /// - Parameters:
    ///   - events: The events, oldest first.
    ///   - simulatorState: The simulator's state after them, or `nil`.
    ///   - store: The store.
    ///   - nowMs: The current time, milliseconds.
    /// - Returns: The stored events, or the store's error.
    public mutating func storeNow(
        _ events: [Item],
        simulatorState: Data?,
        store: any EventStore,
        nowMs: Int64
    ) -> Result<[StoredEvent], StoreError> {
        // Never ahead of held events (a caller refuses commands while degraded; this keeps the order regardless).
        guard items.isEmpty else { return .failure(degradation?.error ?? StoreError("simulator events are held")) }
        items = events
        switch attempt(simulatorState: simulatorState, store: store, nowMs: nowMs) {
        case .stored(let stored, _):
            return .success(stored)
        case .held(let e, _):
            items = []
            return .failure(e)
        }
    }

    /// Holds `events` behind the held ones without trying the store (a failure found before it was reached).
    /// - Parameters:
    ///   - events: The events, oldest first.
    ///   - refusal: Why they could not be stored.
    ///   - nowMs: The current time, milliseconds.
    /// - Returns: `true` when this started the degraded period.
    public mutating func hold(_ events: [Item], refusal: StoreError, nowMs: Int64) -> Bool {
        items += events
        return failed(refusal, nowMs: nowMs)
    }

    private mutating func failed(_ e: StoreError, nowMs: Int64) -> Bool {
        if var d = degradation {
            d.error = e
            d.failedAttempts += 1
            degradation = d
            return false
        }
        degradation = Degradation(error: e, sinceMs: nowMs, failedAttempts: 1)
        return true
    }

    private mutating func attempt(simulatorState: Data?, store: any EventStore, nowMs: Int64) -> Outcome {
        do {
            let batch = StoreBatch(events: items, simulatorState: simulatorState, nowMilliseconds: nowMs)
            // The held events' order is kept only by answering within the turn: the in-memory and SQLite stores
            // complete before returning. A store that completes later is refused here (retried), never overtaken.
            guard let outcome = store.commitInTurn(batch) else {
                throw StoreError("the store did not complete within the loop turn; retrying")
            }
            let stored = try outcome.get()
            let recovery = degradation.map {
                Recovery(
                    heldEvents: items.count,
                    heldMilliseconds: nowMs - $0.sinceMs,
                    failedAttempts: $0.failedAttempts
                )
            }
            items = []
            degradation = nil
            return .stored(stored, recovery: recovery)
        } catch {
            let e = error as? StoreError ?? StoreError("\(error)")
            return .held(e, began: failed(e, nowMs: nowMs))
        }
    }
}
