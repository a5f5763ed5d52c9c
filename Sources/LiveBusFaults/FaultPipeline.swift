/// What the daemon's loop must do for a pipeline, in the order returned.
///
/// A pipeline returns an action only once it is due: `atMs` is the monotonic instant (milliseconds) it became due and
/// is never after the `nowMs` passed to the call that returned it. Execute the actions at once, in order (the order of
/// `write`s is the order of the bytes), then arm one timer for `FaultPipeline.nextDeadlineMs`.
public enum FaultAction: Sendable, Equatable {
    /// Hand these bytes to the socket (downstream) or to the frame decoder (upstream).
    case write([UInt8], atMs: Int64)
    /// Close the connection gracefully (EOF): a requested close (`slow_close`), `limit_data` reached, `timeout` > 0.
    case closeGracefully(atMs: Int64)
    /// Close abruptly (`reset_peer`): no BYE, bytes in flight discarded. On a Unix socket the peer's `recv` gets
    /// `ECONNRESET` only when the closing side still has unread bytes from it queued, else EOF
    /// (faults-sync-libuv.md §1.5); there is no `SO_LINGER` 0 reset as on TCP.
    case reset(atMs: Int64)
}

/// Counters of what a pipeline did to the stream, for `livebus fault list`.
public struct FaultStats: Sendable, Equatable {
    /// Whole frames removed by `drop`.
    public var framesDropped = 0
    /// Whole frames sent twice by `duplicate`.
    public var framesDuplicated = 0
    /// Whole frames with one bit flipped by `corrupt`.
    public var framesCorrupted = 0
    /// Whole frames `reorder` released at another place than they arrived.
    public var framesReordered = 0
    /// Bytes sent while blackholed (`timeout`, `partition`), or in flight when it began, and discarded.
    public var bytesBlackholed = 0
    /// Bytes discarded because the connection was closing or closed (`limit_data`, `reset_peer`, `timeout` > 0).
    public var bytesDiscarded = 0

    /// All counters zero.
    public init() {}
}

/// One session's faults in one direction: a pure state machine over monotonic milliseconds.
///
/// The daemon passes every frame it writes to a session through the session's downstream pipeline and every chunk it
/// reads through the upstream one, executes the returned `FaultAction`s, and calls `advance(to:)` when the timer for
/// `nextDeadlineMs` fires. When `isActive` is false the pipeline holds nothing and has no toxic: bypass it.
///
/// Stages, in this fixed order whatever the order toxics were added (toxiproxy chains toxics in the order added; a
/// fixed order makes a preset mean the same thing however it was built):
/// 1. gate: closed or closing → discard; blackholed (`timeout`, `partition`) → discard (upstream chunks are split at
///    frame boundaries by `FrameSplitter`, so a frame is discarded or kept whole);
/// 2. frame toxics on whole frames only: `drop`, `corrupt`, `duplicate`, `reorder`;
/// 3. `latency` (per frame or chunk, never reordering: a chunk leaves no earlier than the one before it);
/// 4. `slicer` (pieces of average ± variation bytes, `delayUs` apart);
/// 5. `bandwidth` (slices of `rate × 100` bytes, each written when its transmission time at the rate has passed);
/// 6. `limit_data` (the piece that reaches the limit is cut there, then a graceful close).
///
/// - Note: Source: toxiproxy `f48fd7f` toxics (faults-sync-libuv.md §1.1); Jepsen partitions (§1.4).
public struct FaultPipeline: Sendable {
    private struct Installed: Sendable {
        var spec: ToxicSpec
        var isActive: Bool
        var random: FaultRandom
        var addedAtMs: Int64
    }

    private enum Item: Sendable {
        case bytes([UInt8], unit: UInt64)
        case close
    }

    private struct Pending: Sendable {
        var dueMs: Double
        var item: Item
    }

    /// A FIFO with O(1) amortised pops (bandwidth can queue thousands of slices).
    private struct PendingQueue: Sendable {
        private var items: [Pending] = []
        private var head = 0

        var isEmpty: Bool { head == items.count }
        var first: Pending? { isEmpty ? nil : items[head] }
        var entries: ArraySlice<Pending> { items[head...] }

        mutating func append(_ entry: Pending) { items.append(entry) }

        mutating func popFirst() -> Pending {
            let entry = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024, head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return entry
        }

        mutating func removeAll(where shouldRemove: (Pending) -> Bool) {
            items = items[head...].filter { !shouldRemove($0) }
            head = 0
        }

        mutating func removeAll() {
            items.removeAll()
            head = 0
        }
    }

    private struct Held: Sendable {
        var bytes: [UInt8]
        var heldAtMs: Int64
    }

    private enum Phase: Sendable {
        case open
        case closing
        case closed
    }

    private enum Control {
        case timeoutClose
        case reset
        case heal(String)
        case flushReorder
    }

    private let seed: UInt64
    private var installed: [Installed] = []
    private var pending = PendingQueue()
    private var held: [Held] = []
    private var nextUnit: UInt64 = 0
    private var lastEmittedUnit: UInt64?
    private var latencyCursorMs = -Double.infinity
    private var bandwidthCursorMs = -Double.infinity
    private var lastScheduledMs = -Double.infinity
    private var limitSentBytes: Int64 = 0
    private var phase = Phase.open
    private var splitter = FrameSplitter()
    private var currentFrameUnit: UInt64 = 0
    private var currentFrameDropped = false
    private var reassembly: [UInt8]?

    /// What the pipeline has done so far.
    public private(set) var stats = FaultStats()

    /// An empty pipeline whose chances all derive from `seed` (each toxic draws from its own generator, seeded with
    /// `seed` and the toxic's id, so adding another toxic does not change what this one does).
    public init(seed: UInt64) { self.seed = seed }

    /// The toxics in the pipeline, in the order added (including inactive ones, whose toxicity draw failed).
    public var toxics: [ToxicSpec] { installed.map(\.spec) }

    /// The ids of the toxics whose toxicity draw succeeded: the ones acting on this session.
    public var activeToxicIDs: [String] { installed.filter(\.isActive).map(\.spec.id) }

    /// False when the pipeline has no toxic, holds nothing and is between frames: the daemon can bypass it at zero
    /// cost. Stays true while delayed bytes are in flight after the last toxic was removed, so that later bytes cannot
    /// overtake them, and until the frame being read upstream is complete.
    public var isActive: Bool {
        phase != .open || !installed.isEmpty || !pending.isEmpty || !held.isEmpty || !splitter.isAtBoundary
    }

    /// True while a `timeout` or `partition` toxic acts: everything sent is discarded, the connection stays open.
    public var isBlackholed: Bool {
        installed.contains { $0.isActive && ($0.spec.kind == .timeout || $0.spec.kind == .partition) }
    }

    /// True once a close or reset has been returned: the pipeline discards everything after it.
    public var isClosed: Bool { phase == .closed }

    /// The monotonic instant (milliseconds) at which `advance(to:)` has something to do, or nil.
    public var nextDeadlineMs: Int64? {
        guard phase != .closed else { return nil }
        var earliest = pending.first?.dueMs
        if let control = nextControl(), earliest.map({ control.atMs < $0 }) ?? true { earliest = control.atMs }
        return earliest.map { Int64($0.rounded(.up)) }
    }

    /// Whether a daemon with these toxics refuses new connections: true when any of them is `down`.
    ///
    /// `down` is not a per-session toxic (no session exists before the connection): the daemon keeps it in its own list
    /// and checks this when it accepts. toxiproxy's equivalent, disabling a proxy, also closes existing connections;
    /// ours does not (combine with `reset_peer` for that).
    public static func refusesConnections(_ toxics: [ToxicSpec]) -> Bool {
        toxics.contains { $0.kind == .down && $0.toxicity > 0 }
    }

    // MARK: - Toxics

    /// Adds a toxic at `nowMs`; its toxicity is drawn now, once (toxiproxy draws once per link).
    ///
    /// Adding `timeout` or `partition` discards what is in flight, except the rest of a frame already partly written,
    /// so the stream stays decodable when the blackhole heals. `timeout`, `reset_peer` and `partition` count their
    /// milliseconds from `nowMs`.
    /// - Parameters:
    ///   - spec: the toxic; validated here.
    ///   - nowMs: monotonic milliseconds.
    /// - Returns: actions due by `nowMs` (earlier deadlines, or `reset_peer` with timeout 0).
    /// - Throws: `FaultError` `.invalidParameter` (see `ToxicSpec.validate()`), `.duplicateToxic` when the id or the
    ///   kind is already in this pipeline (one toxic of each kind per session and direction).
    @discardableResult
    public mutating func add(_ spec: ToxicSpec, at nowMs: Int64) throws(FaultError) -> [FaultAction] {
        try add(spec, seed: nil, at: nowMs)
    }

    /// Adds a toxic at `nowMs` (see ``add(_:at:)``) whose generator derives from `seed` and its id instead of the
    /// pipeline's seed (`nil`: the pipeline's): a toxic added by another `fault add --seed`.
    @discardableResult
    public mutating func add(_ spec: ToxicSpec, seed: UInt64?, at nowMs: Int64) throws(FaultError) -> [FaultAction] {
        try spec.validate()
        if let other = installed.first(where: { $0.spec.id == spec.id || $0.spec.kind == spec.kind }) {
            throw FaultError(
                .duplicateToxic,
                "\(spec.kind.rawValue): this session already has toxic '\(other.spec.id)' (\(other.spec.kind.rawValue))"
                    + " in this direction; remove it first"
            )
        }
        var out = advance(to: nowMs)
        var random = FaultRandom(seed: seed ?? self.seed, label: spec.id)
        let isActive = random.chance(spec.toxicity)
        installed.append(Installed(spec: spec, isActive: isActive, random: random, addedAtMs: nowMs))
        if isActive, spec.kind == .timeout || spec.kind == .partition { discardForBlackhole() }
        out += advance(to: nowMs)
        return out
    }

    /// Removes the toxic `id` at `nowMs`.
    ///
    /// Bytes already delayed by `latency`, `bandwidth` or `slicer` keep their times. Frames held by `reorder` are
    /// released now, in the order they were held. Removing `timeout` or `partition` ends the blackhole: what was sent
    /// during it stays lost (toxiproxy: "drop the data on the ground"). Removing `timeout`/`reset_peer` before its
    /// deadline cancels the close/reset. A close already delayed by `slow_close` keeps its time.
    /// - Returns: actions due by `nowMs`; empty when no toxic has that id.
    public mutating func remove(id: String, at nowMs: Int64) -> [FaultAction] {
        var out = advance(to: nowMs)
        guard let index = installed.firstIndex(where: { $0.spec.id == id }) else { return out }
        let removed = installed.remove(at: index)
        if removed.spec.kind == .reorder { releaseHeld(shuffled: false, atMs: Double(nowMs)) }
        out += advance(to: nowMs)
        return out
    }

    /// Removes every toxic at `nowMs` (see `remove(id:at:)`).
    public mutating func removeAll(at nowMs: Int64) -> [FaultAction] {
        var out: [FaultAction] = []
        for spec in toxics { out += remove(id: spec.id, at: nowMs) }
        return out
    }

    // MARK: - Data

    /// Sends bytes through the pipeline at `nowMs`.
    /// - Parameters:
    ///   - bytes: downstream, one whole encoded frame; upstream, whatever bytes arrived.
    ///   - isWholeFrame: true when `bytes` is exactly one frame; frame toxics act on whole frames only.
    ///   - nowMs: monotonic milliseconds.
    /// - Returns: actions due by `nowMs`, in order; the bytes themselves appear when their delay has passed.
    /// - Complexity: O(size of `bytes` + toxics + frames in flight).
    public mutating func send(_ bytes: [UInt8], isWholeFrame: Bool, at nowMs: Int64) -> [FaultAction] {
        var out = advance(to: nowMs)
        if isWholeFrame { sendFrame(bytes, at: nowMs) } else { sendChunk(bytes, at: nowMs) }
        out += advance(to: nowMs)
        return out
    }

    /// Tells an inactive pipeline about bytes the daemon passed around it (`isActive` false), so that its frame
    /// boundaries stay right for the upstream; cheap (no allocation). Not needed downstream, where every `send` is a
    /// whole frame, nor when the pipeline is created and first given a toxic while no frame is partly read.
    public mutating func noteBypassed(_ bytes: [UInt8]) { splitter.skip(bytes) }

    /// Asks to close the connection gracefully at `nowMs` (the daemon closes a session, or the client sent EOF).
    ///
    /// The close comes after every byte in flight, and with `slow_close` no earlier than `nowMs + delayMs`. Frames held
    /// by `reorder` are released first. Sends after this are discarded.
    /// - Returns: actions due by `nowMs`; the `closeGracefully` itself when it is due.
    public mutating func close(at nowMs: Int64) -> [FaultAction] {
        var out = advance(to: nowMs)
        guard phase == .open else { return out }
        releaseHeld(shuffled: false, atMs: Double(nowMs))
        var delayMs: Int64 = 0
        if let i = activeIndex(.slowClose) {
            delayMs = installed[i].spec.params.delayMs ?? ToxicParams.Defaults.slowCloseDelayMs
        }
        let dueMs = max(Double(nowMs + delayMs), lastScheduledMs)
        lastScheduledMs = dueMs
        pending.append(Pending(dueMs: dueMs, item: .close))
        phase = .closing
        out += advance(to: nowMs)
        return out
    }

    /// Returns every action due by `nowMs` (monotonic milliseconds), in time order; at equal times bytes come before
    /// the close, reset or heal due at the same instant.
    public mutating func advance(to nowMs: Int64) -> [FaultAction] {
        var out: [FaultAction] = []
        let now = Double(nowMs)
        while phase != .closed {
            let pendingDue = pending.first?.dueMs
            let control = nextControl()
            if let due = pendingDue, due <= now, control.map({ due <= $0.atMs }) ?? true {
                let entry = pending.popFirst()
                let atMs = Int64(entry.dueMs.rounded(.up))
                switch entry.item {
                case .bytes(let bytes, let unit):
                    lastEmittedUnit = unit
                    out.append(.write(bytes, atMs: atMs))
                case .close:
                    out.append(.closeGracefully(atMs: atMs))
                    finish()
                }
            } else if let control, control.atMs <= now {
                let atMs = Int64(control.atMs.rounded(.up))
                switch control.event {
                case .timeoutClose:
                    out.append(.closeGracefully(atMs: atMs))
                    finish()
                case .reset:
                    out.append(.reset(atMs: atMs))
                    finish()
                case .heal(let id):
                    installed.removeAll { $0.spec.id == id }
                case .flushReorder:
                    releaseHeld(shuffled: true, atMs: control.atMs)
                }
            } else {
                break
            }
        }
        return out
    }

    // MARK: - Corruption

    /// A copy of `frame` with one bit flipped where the receiver's CRC catches it and nothing else does.
    ///
    /// The flipped byte is in the sequence field (bytes 8–15), the CRC field (20–23), the topic or the body (24…):
    /// never the 4-byte length (which would desynchronise the stream), nor version/type/flags/topicLength/reserved
    /// (4–7, 16–19), which a reader checks before the CRC (PROTOCOL.md §2), so the receiver always sees
    /// `checksumMismatch`. Shorter inputs (not a frame) get a bit flipped after byte 3; 4 bytes or fewer are unchanged.
    public static func corrupted(_ frame: [UInt8], using random: inout FaultRandom) -> [UInt8] {
        var positions: [Int]
        if frame.count >= 24 {
            positions = Array(8..<16) + Array(20..<frame.count)
        } else if frame.count > 4 {
            positions = Array(4..<frame.count)
        } else {
            return frame
        }
        var copy = frame
        let position = positions[random.below(positions.count)]
        copy[position] ^= UInt8(1) << UInt8(random.below(8))
        return copy
    }

    // MARK: - Private

    private func activeIndex(_ kind: ToxicKind) -> Int? {
        installed.firstIndex { $0.isActive && $0.spec.kind == kind }
    }

    private mutating func roll(_ index: Int, _ probability: Double) -> Bool {
        installed[index].random.chance(probability)
    }

    private func nextControl() -> (atMs: Double, event: Control)? {
        var best: (atMs: Double, event: Control)?
        func consider(_ atMs: Double, _ event: Control) {
            if best.map({ atMs < $0.atMs }) ?? true { best = (atMs, event) }
        }
        for toxic in installed where toxic.isActive {
            let p = toxic.spec.params
            switch toxic.spec.kind {
            case .timeout:
                let timeoutMs = p.timeoutMs ?? ToxicParams.Defaults.timeoutMs
                if timeoutMs > 0 { consider(Double(toxic.addedAtMs + timeoutMs), .timeoutClose) }
            case .resetPeer:
                consider(Double(toxic.addedAtMs + (p.timeoutMs ?? ToxicParams.Defaults.timeoutMs)), .reset)
            case .partition:
                consider(
                    Double(toxic.addedAtMs + (p.durationMs ?? ToxicParams.Defaults.durationMs)),
                    .heal(toxic.spec.id)
                )
            case .reorder:
                if let first = held.first {
                    consider(Double(first.heldAtMs + (p.delayMs ?? ToxicParams.Defaults.reorderDelayMs)), .flushReorder)
                }
            default:
                break
            }
        }
        return best
    }

    private mutating func finish() {
        phase = .closed
        for entry in pending.entries {
            if case .bytes(let bytes, _) = entry.item { stats.bytesDiscarded += bytes.count }
        }
        for frame in held { stats.bytesDiscarded += frame.bytes.count }
        pending.removeAll()
        held.removeAll()
    }

    /// Discards what is in flight, keeping the rest of a frame already partly written and any pending close.
    private mutating func discardForBlackhole() {
        pending.removeAll { (entry: Pending) in
            guard case .bytes(let bytes, let unit) = entry.item, unit != lastEmittedUnit else { return false }
            stats.bytesBlackholed += bytes.count
            return true
        }
        for frame in held { stats.bytesBlackholed += frame.bytes.count }
        held.removeAll()
        if !splitter.isAtBoundary, currentFrameUnit != lastEmittedUnit {
            stats.bytesBlackholed += reassembly?.count ?? 0
            reassembly = nil
            currentFrameDropped = true
        }
    }

    private var hasFrameToxics: Bool {
        installed.contains { $0.isActive && $0.spec.kind.isFrameToxic }
    }

    private func appliesToFrame(_ index: Int, _ frame: [UInt8]) -> Bool {
        let types = installed[index].spec.params.frameTypes ?? ToxicParams.Defaults.frameTypes
        return frame.count > 5 && types.contains(frame[5])
    }

    /// The index of the active frame toxic of `kind` when it covers this frame's type and its probability roll hits.
    private mutating func frameToxic(_ kind: ToxicKind, for frame: [UInt8]) -> Int? {
        guard let i = activeIndex(kind), appliesToFrame(i, frame) else { return nil }
        return roll(i, installed[i].spec.params.probability ?? ToxicParams.Defaults.probability) ? i : nil
    }

    private mutating func newUnit() -> UInt64 {
        nextUnit += 1
        return nextUnit
    }

    /// Gate and frame toxics for one whole frame, then the timing stages.
    private mutating func sendFrame(_ bytes: [UInt8], at nowMs: Int64) {
        guard phase == .open else {
            stats.bytesDiscarded += bytes.count
            return
        }
        if isBlackholed {
            stats.bytesBlackholed += bytes.count
            return
        }
        var copies = [bytes]
        if frameToxic(.drop, for: bytes) != nil {
            stats.framesDropped += 1
            return
        }
        if let i = frameToxic(.corrupt, for: bytes) {
            let corrupted = Self.corrupted(bytes, using: &installed[i].random)
            if corrupted != bytes { stats.framesCorrupted += 1 }
            copies = [corrupted]
        }
        if frameToxic(.duplicate, for: bytes) != nil {
            stats.framesDuplicated += 1
            copies.append(copies[0])
        }
        let reorders = activeIndex(.reorder).map { appliesToFrame($0, bytes) } ?? false
        for copy in copies {
            if reorders {
                reorder(copy, atMs: nowMs)
            } else {
                schedule(copy, readyMs: Double(nowMs), unit: newUnit())
            }
        }
    }

    /// Bytes in arbitrary pieces (upstream): split at frame boundaries; a frame is dropped by a blackhole only whole
    /// (decided at its first byte), and with frame toxics active a frame is collected whole and treated as one.
    private mutating func sendChunk(_ bytes: [UInt8], at nowMs: Int64) {
        guard phase == .open else {
            stats.bytesDiscarded += bytes.count
            return
        }
        for segment in splitter.split(bytes) {
            guard segment.isFramed else {
                if isBlackholed {
                    stats.bytesBlackholed += segment.bytes.count
                } else {
                    schedule(Array(segment.bytes), readyMs: Double(nowMs), unit: newUnit())
                }
                continue
            }
            if segment.startsFrame {
                currentFrameUnit = newUnit()
                currentFrameDropped = isBlackholed
                reassembly = hasFrameToxics ? [] : nil
            }
            if currentFrameDropped {
                stats.bytesBlackholed += segment.bytes.count
                continue
            }
            if reassembly != nil {
                reassembly! += segment.bytes
                if segment.endsFrame, let whole = reassembly {
                    reassembly = nil
                    sendFrame(whole, at: nowMs)
                }
            } else {
                schedule(Array(segment.bytes), readyMs: Double(nowMs), unit: currentFrameUnit)
            }
        }
    }

    /// `reorder`: with the toxic's probability a frame opens a window; it and the next window−1 frames are held, then
    /// released in an order shuffled by the toxic's generator. A window not yet full is released (shuffled) once its
    /// first frame has waited `delayMs`. A frame therefore moves at most window−1 places.
    private mutating func reorder(_ frame: [UInt8], atMs nowMs: Int64) {
        guard let i = activeIndex(.reorder) else { return schedule(frame, readyMs: Double(nowMs), unit: newUnit()) }
        let p = installed[i].spec.params
        let window = p.window ?? ToxicParams.Defaults.window
        if held.isEmpty {
            guard roll(i, p.probability ?? ToxicParams.Defaults.probability) else {
                return schedule(frame, readyMs: Double(nowMs), unit: newUnit())
            }
        }
        held.append(Held(bytes: frame, heldAtMs: nowMs))
        if held.count >= window { releaseHeld(shuffled: true, atMs: Double(nowMs)) }
    }

    /// Schedules every held frame at `atMs`, shuffled by the `reorder` toxic's generator or in the order held.
    private mutating func releaseHeld(shuffled: Bool, atMs: Double) {
        guard !held.isEmpty else { return }
        var order = Array(held.indices)
        if shuffled, let i = activeIndex(.reorder) { order = installed[i].random.shuffled(order) }
        stats.framesReordered += order.enumerated().filter { $0.offset != $0.element }.count
        let frames = held
        held.removeAll()
        for index in order { schedule(frames[index].bytes, readyMs: atMs, unit: newUnit()) }
    }

    /// Stages 3–6: latency, slicer, bandwidth, limit_data.
    private mutating func schedule(_ bytes: [UInt8], readyMs: Double, unit: UInt64) {
        var t = readyMs
        if let i = activeIndex(.latency) {
            let p = installed[i].spec.params
            let latencyMs = p.latencyMs ?? ToxicParams.Defaults.latencyMs
            let jitterMs = p.jitterMs ?? ToxicParams.Defaults.jitterMs
            var delayMs = latencyMs
            if jitterMs > 0 { delayMs += Int64(installed[i].random.below(Int(jitterMs * 2))) - jitterMs }
            t = max(t + Double(max(0, delayMs)), latencyCursorMs)
            latencyCursorMs = t
        }
        var pieces: [(bytes: ArraySlice<UInt8>, atMs: Double)] = []
        if let i = activeIndex(.slicer) {
            let p = installed[i].spec.params
            let average = p.averageSize ?? ToxicParams.Defaults.averageSize
            let variation = p.sizeVariation ?? ToxicParams.Defaults.sizeVariation
            let gapMs = Double(p.delayUs ?? ToxicParams.Defaults.delayUs) / 1000
            var start = 0
            var pieceTime = t
            while start < bytes.count {
                var size = average
                if variation > 0 { size += installed[i].random.below(2 * variation + 1) - variation }
                let end = min(bytes.count, start + max(1, size))
                pieces.append((bytes[start..<end], pieceTime))
                pieceTime += gapMs
                start = end
            }
        } else {
            pieces = [(bytes[...], t)]
        }
        for piece in pieces {
            if let i = activeIndex(.bandwidth) {
                let bytesPerMs = installed[i].spec.params.rateKBps ?? ToxicParams.Defaults.rateKBps
                let sliceSize = max(1, Int(bytesPerMs * 100))
                var start = piece.bytes.startIndex
                while start < piece.bytes.endIndex {
                    let end = min(piece.bytes.endIndex, start + sliceSize)
                    let begin = max(piece.atMs, bandwidthCursorMs)
                    let done = begin + Double(end - start) / bytesPerMs
                    bandwidthCursorMs = done
                    enqueue(Array(piece.bytes[start..<end]), unit: unit, dueMs: done)
                    start = end
                }
            } else {
                enqueue(Array(piece.bytes), unit: unit, dueMs: piece.atMs)
            }
        }
    }

    private mutating func enqueue(_ bytes: [UInt8], unit: UInt64, dueMs: Double) {
        guard phase == .open else {
            stats.bytesDiscarded += bytes.count
            return
        }
        let due = max(dueMs, lastScheduledMs)
        lastScheduledMs = due
        guard let i = activeIndex(.limitData) else {
            pending.append(Pending(dueMs: due, item: .bytes(bytes, unit: unit)))
            return
        }
        let limit = installed[i].spec.params.bytes ?? 0
        let remaining = Int(max(0, limit - limitSentBytes))
        if bytes.count >= remaining {
            if remaining > 0 {
                pending.append(Pending(dueMs: due, item: .bytes(Array(bytes.prefix(remaining)), unit: unit)))
            }
            stats.bytesDiscarded += bytes.count - remaining
            limitSentBytes += Int64(remaining)
            pending.append(Pending(dueMs: due, item: .close))
            phase = .closing
        } else {
            limitSentBytes += Int64(bytes.count)
            pending.append(Pending(dueMs: due, item: .bytes(bytes, unit: unit)))
        }
    }
}
