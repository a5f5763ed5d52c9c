import Foundation
import LiveBusClock

/// An order to create by hand (`livebus order create`). Missing places are drawn at random around Seoul.
public struct OrderRequest: Sendable, Hashable, Codable {
    /// The order id, or `nil` to let the simulator pick `M0001`, `M0002`, … (`<tag>-M0001`, … on a federated
    /// daemon: ``DeliverySimulator/federationTag(daemonID:)``, PROTOCOL.md §5.8).
    public var id: String?
    /// The customer's id.
    public var customerID: String
    /// The store's location, or `nil` for a random store 0.2–8 km from the customer.
    public var store: Coordinate?
    /// The customer's location, or `nil` for a random place within 8 km of Seoul City Hall.
    public var destination: Coordinate?
    /// Custom text while the order is `created`, or `nil` for the default wording.
    public var summary: CustomerSummary?

    /// Creates a request.
    public init(
        id: String? = nil,
        customerID: String = "C-manual",
        store: Coordinate? = nil,
        destination: Coordinate? = nil,
        summary: CustomerSummary? = nil
    ) {
        self.id = id
        self.customerID = customerID
        self.store = store
        self.destination = destination
        self.summary = summary
    }
}

/// What a cancel request achieved.
public enum CancelOutcome: Sendable, Hashable, Codable {
    /// The order is canceled; an `end` event was emitted.
    case canceled
    /// The backend refused; the order carries on unchanged (it is never erased).
    case failed(reason: String)
    /// The order had already been delivered or canceled.
    case alreadyTerminal
    /// No order has that id.
    case unknownOrder
}

/// One cancel request and its outcome, whether made by hand or by the scenario's timeline.
public struct CancelRecord: Sendable, Hashable, Codable {
    /// The order.
    public var orderID: String
    /// When the backend answered, server clock, milliseconds since the Unix epoch.
    public var atMs: Int64
    /// The outcome.
    public var outcome: CancelOutcome
    /// `true` when made through ``DeliverySimulator/cancelOrder(id:at:)``, `false` when from the timeline.
    public var byHand: Bool
}

/// What the simulator knows about one order, for `livebus order list` and for building snapshots.
public struct OrderSnapshot: Sendable, Hashable {
    /// The order id; its topic is `orders/<id>`.
    public var id: String
    /// The customer's id.
    public var customerID: String
    /// The store's location.
    public var store: Coordinate
    /// The customer's location.
    public var destination: Coordinate
    /// The current status (as last published).
    public var status: OrderStatus
    /// The content state last published.
    public var contentState: ContentState
    /// The event last published for this order.
    public var lastEvent: OrderEvent
    /// When the order was created, server clock.
    public var createdAt: ServerInstant
}

/// The delivery backend simulator: a pure, seeded state machine that plays a ``Scenario`` and emits
/// ``OrderEvent``s shaped like Live Activity pushes.
///
/// It never reads a clock: the caller passes the server instant to ``advance(to:)`` and arms a timer for
/// ``nextDeadline``. Scenario time maps to the server clock as `start + scenarioMs / timeScale` (rounded down to the
/// millisecond), and every instant in an event (timestamp, ETA target, stale date, dismissal date, last confirmed)
/// is mapped the same way, so a compressed demo stays consistent.
///
/// Publishing rules (``PublishPolicy``, ``ScenarioSettings``): one `start` when an order is created, an `update`
/// for every change, an `end` with a dismissal date when it is delivered or canceled; each non-terminal event
/// carries a stale date (its time plus the status's stale-after duration); priority 10 when the status or the ETA
/// target changed, 5 for position-only updates. While delivering, the rider moves along the route (store, waypoints,
/// customer) and reaches the door at the scenario's `arriveAt` or else at the ETA target; the position is published
/// every ``ScenarioSettings/positionIntervalMs``. During a stall nothing about the stalled order is published; the
/// actions due meanwhile are published in order when it ends, or a confirming update if there were none.
/// - Note: Source: live-activities.md §1.1, §1.4, §1.7, §2.2 (event, timestamp, content state, stale date,
///   relevance score, dismissal date); field report 001 (statuses, "never invent delivered at 0:00": the simulator
///   only says delivered when the scenario does).
public struct DeliverySimulator: Sendable {
    /// Version of the ``savedState()`` format.
    public static let stateFormatVersion = 1

    private var state: State
    private var index: [String: Int]

    /// The time scales every command accepts (`livebusd`, `demo`, `e2e`, `replay`, a scenario's and a recording's
    /// `timeScale`): one rule, so a recording of any daemon can be replayed. 0.001 (a scenario minute lasts
    /// 16.7 hours) to 10,000 (a scenario hour lasts 0.36 s).
    public static let timeScaleRange: ClosedRange<Double> = 0.001...10_000

    /// Creates a simulator about to play `scenario`.
    ///
    /// - Parameters:
    ///   - scenario: What to play.
    ///   - start: The server instant at which scenario time 0 happens.
    ///   - timeScale: Scenario speed-up: 10 means a scenario minute lasts 6 s of server time. Values that are not
    ///     finite and positive count as 1.
    ///   - seed: Seeds the simulator's own draws (orders created by hand, failing cancel requests).
    public init(scenario: Scenario, start: ServerInstant, timeScale: Double, seed: UInt64) {
        let scale = timeScale.isFinite && timeScale > 0 ? timeScale : 1
        var queue: [QueueItem] = []
        queue.reserveCapacity(scenario.timeline.count)
        for (i, event) in scenario.timeline.enumerated() {
            queue.append(
                QueueItem(atMs: event.atMs, phase: QueueItem.normal, seq: Int64(i), action: .timeline(event.action))
            )
        }
        // A sorted array is a valid min-heap.
        queue.sort(by: QueueItem.before)
        state = State(
            formatVersion: Self.stateFormatVersion,
            scenarioName: scenario.name,
            settings: scenario.settings,
            startMs: start.millisecondsSinceEpoch,
            timeScale: scale,
            rng: SimulationRNG(seed: seed),
            queue: queue,
            nextSeq: Int64(queue.count),
            clockMs: 0,
            orders: [],
            globalStallUntilMs: nil,
            cancelLog: [],
            manualCounter: 0
        )
        index = [:]
    }

    /// Restores a simulator from ``savedState()``; it carries on exactly where the saved one was (same queue, same
    /// random draws).
    ///
    /// - Parameter data: JSON from ``savedState()``.
    /// - Throws: ``SimulatorError`` with code ``SimulatorError/Code/corruptState`` when the data cannot be decoded or
    ///   has another format version.
    public init(restoring data: Data) throws(SimulatorError) {
        let decoded: State
        do {
            decoded = try JSONDecoder().decode(State.self, from: data)
        } catch {
            throw SimulatorError(
                code: .corruptState,
                message: "saved simulator state cannot be decoded (\(error)); restart the scenario instead"
            )
        }
        guard decoded.formatVersion == Self.stateFormatVersion else {
            throw SimulatorError(
                code: .corruptState,
                message: "saved simulator state has format version \(decoded.formatVersion), this build reads "
                    + "\(Self.stateFormatVersion); restart the scenario instead"
            )
        }
        guard decoded.timeScale.isFinite, decoded.timeScale > 0 else {
            throw SimulatorError(
                code: .corruptState,
                message: "saved simulator state has time scale \(decoded.timeScale); restart the scenario instead"
            )
        }
        // Not Dictionary(uniqueKeysWithValues:): it traps on a repeated key, and the state is data.
        var index: [String: Int] = [:]
        for (i, o) in decoded.orders.enumerated() {
            guard index.updateValue(i, forKey: o.spec.id) == nil else {
                throw SimulatorError(
                    code: .corruptState,
                    message: "saved simulator state has order \(o.spec.id) twice; restart the scenario instead"
                )
            }
        }
        state = decoded
        self.index = index
    }

    /// The whole simulator state (orders, pending actions, random generator) as JSON with sorted keys.
    ///
    /// - Returns: Data for ``init(restoring:)``.
    /// - Throws: `EncodingError` (not expected: every value is finite).
    public func savedState() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(state)
    }

    // MARK: - Clock mapping

    /// The scenario's name.
    public var scenarioName: String { state.scenarioName }
    /// The server instant of scenario time 0.
    public var start: ServerInstant { ServerInstant(millisecondsSinceEpoch: state.startMs) }
    /// The time scale in use (scenario milliseconds per server millisecond).
    public var timeScale: Double { state.timeScale }
    /// Every cancel request so far with its outcome, oldest first.
    public var cancelLog: [CancelRecord] { state.cancelLog }

    /// The server instant of a scenario time: `start + scenarioMs / timeScale`, rounded down.
    ///
    /// - Parameter scenarioMs: Milliseconds from the scenario's start.
    /// - Returns: The server instant.
    public func serverInstant(atScenarioMs scenarioMs: Int64) -> ServerInstant {
        ServerInstant(
            millisecondsSinceEpoch: state.startMs.saturatingAdding(
                Int64(saturating: (Double(scenarioMs) / state.timeScale).rounded(.down))
            )
        )
    }

    /// The scenario time of a server instant (rounded down, never before 0).
    ///
    /// - Parameter now: A server instant.
    /// - Returns: Milliseconds from the scenario's start.
    public func scenarioMs(at now: ServerInstant) -> Int64 {
        // Saturating (a restored state's start is data): differences in Double, exact below 2^53 ms.
        let elapsed = Double(now.millisecondsSinceEpoch) - Double(state.startMs)
        return max(0, Int64(saturating: (elapsed * state.timeScale).rounded(.down)))
    }

    // MARK: - Running

    /// Emits, in order, every event due at or before `now`. Calling again with the same `now` emits nothing.
    ///
    /// - Parameter now: The current server instant.
    /// - Returns: The events, oldest first (timestamps never decrease).
    /// - Complexity: O(k log n) for k due actions among n pending ones.
    public mutating func advance(to now: ServerInstant) -> [OrderEvent] {
        var out: [OrderEvent] = []
        while let top = state.queue.first, serverInstant(atScenarioMs: top.atMs) <= now {
            let t = top.atMs
            state.clockMs = max(state.clockMs, t)
            var recovering: [String] = []
            while let next = state.queue.first, next.atMs == t {
                let item = popQueue()
                process(item, at: t, into: &out, recovering: &recovering)
            }
            for id in recovering {
                guard let i = index[id], state.orders[i].pendingRecovery, !state.orders[i].status.isTerminal else {
                    continue
                }
                out.append(emit(i, .update, at: t))
            }
        }
        dropDeadItems()
        return out
    }

    /// Pops pending items that can no longer do anything (position ticks of orders that stopped moving, actions
    /// about orders that ended), so ``nextDeadline`` does not name an instant with nothing to do.
    private mutating func dropDeadItems() {
        while let top = state.queue.first, isDead(top) { _ = popQueue() }
    }

    private func isDead(_ item: QueueItem) -> Bool {
        switch item.action {
        case .positionTick(let id):
            guard let i = index[id] else { return true }
            return state.orders[i].status != .delivering || state.orders[i].manualRider
        case .stallEnd(let id):
            guard let id else { return false }
            return index[id].map { state.orders[$0].status.isTerminal } ?? true
        case .timeline(let action):
            if case .createOrder = action { return false }
            guard let id = action.orderID, let i = index[id] else { return false }
            return state.orders[i].status.isTerminal
        }
    }

    /// The next server instant at which ``advance(to:)`` has work, or `nil` when nothing is pending.
    ///
    /// Usually something is emitted then; a few internal steps (a stall beginning, or a stall ending for an order that
    /// published at that instant anyway) emit nothing, and `advance` then returns `[]`. It is never later than the
    /// next event.
    public var nextDeadline: ServerInstant? {
        state.queue.first.map { serverInstant(atScenarioMs: $0.atMs) }
    }

    /// `true` once every order is delivered or canceled and the timeline has no more actions.
    public var isFinished: Bool {
        guard state.orders.allSatisfy(\.status.isTerminal) else { return false }
        return state.queue.allSatisfy { item in
            switch item.action {
            case .stallEnd: true
            case .positionTick: true
            case .timeline(let action):
                switch action {
                case .createOrder: false
                case .stall(nil, _): true
                default: action.orderID.flatMap { index[$0] }.map { state.orders[$0].status.isTerminal } ?? false
                }
            }
        }
    }

    /// Every order created so far, in creation order.
    public func orders() -> [OrderSnapshot] {
        state.orders.compactMap { o in
            guard let last = o.lastEvent else { return nil }
            return OrderSnapshot(
                id: o.spec.id,
                customerID: o.spec.customerID,
                store: o.spec.store,
                destination: o.spec.destination,
                status: o.status,
                contentState: last.contentState,
                lastEvent: last,
                createdAt: serverInstant(atScenarioMs: o.createdAtMs)
            )
        }
    }

    /// Creates an order by hand with a realistic lifecycle drawn from the simulator's seeded generator (no hazards).
    ///
    /// First emits everything due up to `now` (so events stay in order), then the new order's `start` event. During
    /// a whole-backend stall the order is created when the stall ends, and its `start` comes from a later
    /// ``advance(to:)``.
    /// - Parameters:
    ///   - request: The order; missing places are drawn at random.
    ///   - now: The current server instant.
    ///   - idTag: The federated daemon's tag (``federationTag(daemonID:)``): an id the simulator picks is then
    ///     `<tag>-M0001`, `<tag>-M0002`, … instead of `M0001`, …, so no two daemons of a federation pick the same.
    ///   - takenElsewhere: Whether an id is already in use outside this simulator (a federated daemon: its topic
    ///     has events in the stream); ids it picks skip those.
    /// - Returns: The events due up to `now`, then the `start` of the new order.
    /// - Throws: ``SimulatorError``: ``SimulatorError/Code/duplicateOrder`` when the id exists or is still to be
    ///   created by the timeline; ``SimulatorError/Code/invalidRequest`` for an unsafe id, an empty customer or a
    ///   coordinate out of range; ``SimulatorError/Code/contentStateTooLarge`` when the summary would make the content
    ///   state larger than 4096 bytes. Nothing changes when it throws.
    public mutating func createOrder(
        _ request: OrderRequest,
        at now: ServerInstant,
        idTag: String? = nil,
        takenElsewhere: (String) -> Bool = { _ in false }
    ) throws(SimulatorError) -> [OrderEvent] {
        if let id = request.id {
            guard OrderSpec.isValidID(id) else {
                throw SimulatorError(
                    code: .invalidRequest,
                    message: "order id '\(id)' must be 1–64 characters of A–Z a–z 0–9 - _ ."
                )
            }
            guard !idIsTaken(id) else {
                throw SimulatorError(code: .duplicateOrder, message: "an order with id '\(id)' already exists")
            }
        }
        guard !request.customerID.isEmpty else {
            throw SimulatorError(code: .invalidRequest, message: "customer id must not be empty")
        }
        for (name, place) in [("store", request.store), ("destination", request.destination)] {
            if let place, !place.isValid {
                throw SimulatorError(
                    code: .invalidRequest,
                    message: "\(name) coordinate \(place.latitude), \(place.longitude) is out of range "
                        + "(latitude −90…90, longitude −180…180)"
                )
            }
        }
        if let summary = request.summary {
            let size = ContentState.worstCaseSize(summary: summary)
            if size > ContentState.maximumEncodedBytes {
                throw SimulatorError(
                    code: .contentStateTooLarge,
                    message: "the summary makes the content state up to \(size) bytes as JSON, more than Apple's "
                        + "\(ContentState.maximumEncodedBytes)-byte limit; shorten the texts"
                )
            }
        }
        var out = advance(to: now)
        let id = request.id ?? nextManualID(tag: idTag, takenElsewhere: takenElsewhere)
        let destination = request.destination ?? OrderPlanner.randomPlaces(rng: &state.rng).home
        let store = request.store ?? OrderPlanner.randomStore(near: destination, rng: &state.rng)
        let spec = OrderSpec(
            id: id,
            customerID: request.customerID,
            store: store,
            destination: destination,
            etaAtMs: 0,
            summary: request.summary
        )
        let t = max(scenarioMs(at: now), state.clockMs)
        for event in OrderPlanner.plan(spec, createdAtMs: t, hazards: false, rng: &state.rng) {
            pushQueue(
                QueueItem(atMs: event.atMs, phase: QueueItem.normal, seq: takeSeq(), action: .timeline(event.action))
            )
        }
        out += advance(to: now)
        return out
    }

    /// A customer's cancel request, made by hand (`livebus order cancel`).
    ///
    /// First emits everything due up to `now`. The request fails (and the order carries on, never erased) while the
    /// backend is stalled for this order, once the rider has picked the order up, or at the scenario's
    /// ``ScenarioSettings/cancelFailureProbability``; otherwise the order ends canceled.
    /// - Parameters:
    ///   - id: The order id.
    ///   - now: The current server instant.
    /// - Returns: The outcome, and the events due up to `now` followed by the `end` event if it was canceled.
    /// - Note: Source: field report 001 ("a failed cancel must not erase a created order"); delivery-reality.md §1.8
    ///   (cancellation is hard once cooking starts).
    public mutating func cancelOrder(id: String, at now: ServerInstant) -> (CancelOutcome, [OrderEvent]) {
        var out = advance(to: now)
        let t = max(scenarioMs(at: now), state.clockMs)
        guard let i = index[id] else { return (.unknownOrder, out) }
        let outcome: CancelOutcome
        if state.orders[i].status.isTerminal {
            outcome = .alreadyTerminal
        } else if stallEnd(forOrder: i) > t {
            outcome = .failed(reason: "the backend is not responding (stalled); try again later")
        } else if state.orders[i].status.rank >= OrderStatus.pickedUp.rank {
            outcome = .failed(reason: "the rider has already picked up the order")
        } else if state.settings.cancelFailureProbability > 0
            && state.rng.chance(state.settings.cancelFailureProbability)
        {
            outcome = .failed(
                reason:
                    "the restaurant refused the cancel request (the scenario refuses a cancel with its cancelFailureProbability)"
            )
        } else {
            outcome = .canceled
            setStatus(i, .canceled, at: t)
            out.append(emit(i, .end, at: t))
        }
        state.cancelLog.append(
            CancelRecord(
                orderID: id,
                atMs: serverInstant(atScenarioMs: t).millisecondsSinceEpoch,
                outcome: outcome,
                byHand: true
            )
        )
        dropDeadItems()
        return (outcome, out)
    }

    // MARK: - Internals

    private func idIsTaken(_ id: String) -> Bool {
        if index[id] != nil { return true }
        return state.queue.contains { item in
            if case .timeline(.createOrder(let spec)) = item.action { return spec.id == id }
            return false
        }
    }

    private mutating func nextManualID(tag: String?, takenElsewhere: (String) -> Bool) -> String {
        while true {
            state.manualCounter += 1
            let id = (tag.map { $0 + "-" } ?? "") + "M" + OrderPlanner.padded(state.manualCounter, 4)
            if !idIsTaken(id) && !takenElsewhere(id) { return id }
        }
    }

    /// A federated daemon's tag in the ids it makes (orders `<tag>-M0001`, push ids `<tag>-p1`): the 32-bit
    /// FNV-1a hash of its daemon id (`<data dir>/federation-id`), as 8 lowercase hex digits. Stable across
    /// restarts (the id is kept), and distinct for distinct daemons but for a hash collision, which the ids'
    /// other checks catch (an order id whose topic has events is skipped or refused). Source: PROTOCOL.md §5.8.
    /// - Parameter daemonID: The daemon's federation id.
    /// - Returns: 8 characters of `0-9 a-f`.
    public static func federationTag(daemonID: String) -> String {
        var h: UInt32 = 0x811c_9dc5
        for b in daemonID.utf8 {
            h ^= UInt32(b)
            h = h &* 0x0100_0193
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    private mutating func takeSeq() -> Int64 {
        defer { state.nextSeq += 1 }
        return state.nextSeq
    }

    /// The scenario time until which news about order `i` is held (0 when not stalled).
    private func stallEnd(forOrder i: Int) -> Int64 {
        max(state.orders[i].stalledUntilMs ?? 0, state.globalStallUntilMs ?? 0)
    }

    private mutating func process(
        _ item: QueueItem,
        at t: Int64,
        into out: inout [OrderEvent],
        recovering: inout [String]
    ) {
        switch item.action {
        case .positionTick(let id):
            guard let i = index[id], state.orders[i].status == .delivering, !state.orders[i].manualRider else { return }
            let held = stallEnd(forOrder: i)
            if held > t {
                // Resume on the first tick of the grid at or after the stall's end, not every interval meanwhile.
                let interval = max(1, state.settings.positionIntervalMs)
                scheduleTick(i, after: t + (held - t - 1) / interval * interval)
                return
            }
            // Skip the tick when this order already published at this instant (a status change or revision).
            if state.orders[i].lastEvent?.timestamp != serverInstant(atScenarioMs: t) {
                out.append(emit(i, .update, at: t))
            }
            if state.orders[i].routeFraction < 1 { scheduleTick(i, after: t) }
        case .stallEnd(let id):
            if let id {
                guard let i = index[id], let until = state.orders[i].stalledUntilMs, until <= t else { return }
                state.orders[i].stalledUntilMs = nil
                if (state.globalStallUntilMs ?? 0) <= t { markRecovering(i, &recovering) }
            } else {
                guard let until = state.globalStallUntilMs, until <= t else { return }
                state.globalStallUntilMs = nil
                for i in state.orders.indices where (state.orders[i].stalledUntilMs ?? 0) <= t {
                    markRecovering(i, &recovering)
                }
            }
        case .timeline(let action):
            // An action about an order whose creation is itself held by a whole-backend stall is held too.
            let global = state.globalStallUntilMs ?? 0
            let holdUntil: Int64
            switch action {
            case .stall(nil, _): holdUntil = 0
            case .stall(let id?, _): holdUntil = index[id] == nil ? global : 0
            case .createOrder: holdUntil = global
            default: holdUntil = action.orderID.flatMap { index[$0] }.map { stallEnd(forOrder: $0) } ?? global
            }
            if holdUntil > t {
                pushQueue(QueueItem(atMs: holdUntil, phase: QueueItem.deferred, seq: item.seq, action: item.action))
                return
            }
            apply(action, at: t, into: &out)
        }
    }

    private mutating func markRecovering(_ i: Int, _ recovering: inout [String]) {
        guard !state.orders[i].status.isTerminal else { return }
        state.orders[i].pendingRecovery = true
        recovering.append(state.orders[i].spec.id)
    }

    private mutating func apply(_ action: TimelineAction, at t: Int64, into out: inout [OrderEvent]) {
        switch action {
        case .createOrder(let spec):
            guard index[spec.id] == nil else { return }
            index[spec.id] = state.orders.count
            state.orders.append(OrderRecord(spec: spec, createdAtMs: t))
            out.append(emit(state.orders.count - 1, .start, at: t))
        case .setStatus(let id, let status, let eta, let progress, let summary, let arrive):
            guard let i = index[id], state.orders[i].status.canMove(to: status) else { return }
            if let eta { state.orders[i].etaAtMs = eta }
            setStatus(i, status, at: t, summary: summary, arriveAtMs: arrive)
            if let progress { state.orders[i].progress = progress }
            out.append(emit(i, status.isTerminal ? .end : .update, at: t, explicitProgress: progress != nil))
        case .reviseEta(let id, let eta, let arrive):
            guard let i = index[id], !state.orders[i].status.isTerminal else { return }
            if state.orders[i].status == .delivering && !state.orders[i].manualRider {
                _ = advanceRoute(i, to: t)  // the rider's progress so far follows the old ETA
            }
            state.orders[i].etaAtMs = eta
            if let arrive { state.orders[i].arriveAtMs = arrive }
            out.append(emit(i, .update, at: t))
        case .riderPosition(let id, let position, let progress):
            guard let i = index[id], !state.orders[i].status.isTerminal else { return }
            state.orders[i].manualRider = true
            state.orders[i].riderPosition = position
            if let progress { state.orders[i].progress = progress }
            out.append(emit(i, .update, at: t, explicitProgress: true))
        case .stall(let id, let duration):
            let until = t + duration
            if let id {
                guard let i = index[id], !state.orders[i].status.isTerminal else { return }
                state.orders[i].stalledUntilMs = max(state.orders[i].stalledUntilMs ?? 0, until)
            } else {
                state.globalStallUntilMs = max(state.globalStallUntilMs ?? 0, until)
            }
            pushQueue(QueueItem(atMs: until, phase: QueueItem.stallEnd, seq: takeSeq(), action: .stallEnd(id)))
        case .cancelRequest(let id, let succeeds, let reason):
            guard let i = index[id], !state.orders[i].status.isTerminal else { return }
            let outcome: CancelOutcome =
                succeeds ? .canceled : .failed(reason: reason ?? "the store refused the cancel request")
            state.cancelLog.append(
                CancelRecord(
                    orderID: id,
                    atMs: serverInstant(atScenarioMs: t).millisecondsSinceEpoch,
                    outcome: outcome,
                    byHand: false
                )
            )
            if succeeds {
                setStatus(i, .canceled, at: t)
                out.append(emit(i, .end, at: t))
            }
        }
    }

    /// Moves order `i` to `status`: progress, rider position and route follow.
    private mutating func setStatus(
        _ i: Int,
        _ status: OrderStatus,
        at t: Int64,
        summary: CustomerSummary? = nil,
        arriveAtMs: Int64? = nil
    ) {
        var o = state.orders[i]
        o.status = status
        o.summary = summary
        if let base = PublishPolicy.baseProgress(status) { o.progress = max(o.progress, base) }
        switch status {
        case .pickedUp:
            o.riderPosition = Route.rounded(o.spec.store)
        case .delivering:
            o.arriveAtMs = arriveAtMs
            o.routeAnchorMs = t
            o.routeFraction = 0
            o.manualRider = false
            o.riderPosition = Route.rounded(o.spec.store)
        case .delivered, .canceled, .created, .cooking, .awaitingPickup:
            o.riderPosition = nil
        }
        state.orders[i] = o
        if status == .delivering { scheduleTick(i, after: t) }
    }

    private mutating func scheduleTick(_ i: Int, after t: Int64) {
        let interval = max(1, state.settings.positionIntervalMs)
        pushQueue(
            QueueItem(
                atMs: t + interval,
                phase: QueueItem.normal,
                seq: takeSeq(),
                action: .positionTick(state.orders[i].spec.id)
            )
        )
    }

    /// Moves the rider of order `i` along the route to scenario time `t`, heading for the door at `arriveAt` or
    /// else the ETA target. Returns the route fraction (0…1).
    private mutating func advanceRoute(_ i: Int, to t: Int64) -> Double {
        var o = state.orders[i]
        let arrival = o.arriveAtMs ?? o.etaAtMs
        if t >= arrival {
            o.routeFraction = 1
        } else if t > o.routeAnchorMs {
            o.routeFraction += (1 - o.routeFraction) * Double(t - o.routeAnchorMs) / Double(arrival - o.routeAnchorMs)
        }
        o.routeAnchorMs = max(o.routeAnchorMs, t)
        o.riderPosition = Route.position(along: o.spec.route, fraction: o.routeFraction)
        state.orders[i] = o
        return o.routeFraction
    }

    /// Publishes order `i`'s current state as an event at scenario time `t`.
    private mutating func emit(_ i: Int, _ kind: ActivityEventKind, at t: Int64, explicitProgress: Bool = false)
        -> OrderEvent
    {
        if state.orders[i].status == .delivering && !state.orders[i].manualRider {
            let f = advanceRoute(i, to: t)
            if !explicitProgress {
                state.orders[i].progress = max(
                    state.orders[i].progress,
                    PublishPolicy.deliveringProgress(routeFraction: f)
                )
            }
        }
        let o = state.orders[i]
        let timestamp = serverInstant(atScenarioMs: t)
        let content = ContentState(
            status: o.status,
            etaTarget: serverInstant(atScenarioMs: o.etaAtMs),
            progress: o.progress,
            riderPosition: o.riderPosition,
            lastConfirmed: timestamp,
            summary: o.summary ?? (o.status == .created ? o.spec.summary : nil)
        )
        let staleDate: ServerInstant? =
            o.status.isTerminal
            ? nil : state.settings.staleAfterMs[o.status].map { serverInstant(atScenarioMs: t + $0) }
        let dismissal: ServerInstant? =
            kind == .end
            ? serverInstant(
                atScenarioMs: t
                    + (o.status == .delivered
                        ? state.settings.dismissAfterDeliveredMs : state.settings.dismissAfterCanceledMs)
            ) : nil
        let changed =
            o.lastEvent.map { $0.contentState.status != o.status || $0.contentState.etaTarget != content.etaTarget }
            ?? true
        let event = OrderEvent(
            orderID: o.spec.id,
            event: kind,
            timestamp: timestamp,
            contentState: content,
            staleDate: staleDate,
            relevanceScore: PublishPolicy.relevanceScore(status: o.status, progress: o.progress),
            dismissalDate: dismissal,
            priority: PublishPolicy.priority(kind: kind, statusOrEtaChanged: changed)
        )
        state.orders[i].lastEvent = event
        state.orders[i].pendingRecovery = false
        return event
    }

    /// Stalls the backend by hand (`livebus backend stall`): no news about `orderID` (or about any order when `nil`)
    /// for `durationMs` of scenario time from `now`; what falls due meanwhile is released when the stall ends.
    ///
    /// - Parameters:
    ///   - orderID: The order to stall, or `nil` for the whole backend.
    ///   - durationMs: Scenario milliseconds, > 0.
    ///   - now: The current server instant.
    /// - Returns: The events due up to `now` (emitted before the stall begins).
    /// - Throws: ``SimulatorError`` ``SimulatorError/Code/invalidRequest`` for an unknown or ended order or a
    ///   non-positive duration.
    public mutating func stall(orderID: String?, durationMs: Int64, at now: ServerInstant) throws(SimulatorError)
        -> [OrderEvent]
    {
        guard durationMs > 0 else {
            throw SimulatorError(code: .invalidRequest, message: "a stall needs a positive duration")
        }
        if let orderID {
            guard let i = index[orderID], !state.orders[i].status.isTerminal else {
                throw SimulatorError(code: .invalidRequest, message: "no ongoing order '\(orderID)' to stall")
            }
        }
        let out = advance(to: now)
        let t = max(state.clockMs, scenarioMs(at: now))
        pushQueue(
            QueueItem(
                atMs: t,
                phase: QueueItem.normal,
                seq: takeSeq(),
                action: .timeline(.stall(orderID: orderID, durationMs: durationMs))
            )
        )
        return out
    }

    // MARK: - The pending-action queue (a binary min-heap on (atMs, phase, seq))

    private mutating func pushQueue(_ item: QueueItem) {
        state.queue.append(item)
        var child = state.queue.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard QueueItem.before(state.queue[child], state.queue[parent]) else { break }
            state.queue.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popQueue() -> QueueItem {
        let top = state.queue[0]
        let last = state.queue.removeLast()
        guard !state.queue.isEmpty else { return top }
        state.queue[0] = last
        var parent = 0
        let n = state.queue.count
        while true {
            let l = 2 * parent + 1
            let r = l + 1
            var smallest = parent
            if l < n && QueueItem.before(state.queue[l], state.queue[smallest]) { smallest = l }
            if r < n && QueueItem.before(state.queue[r], state.queue[smallest]) { smallest = r }
            if smallest == parent { break }
            state.queue.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}

// MARK: - Saved state

extension DeliverySimulator {
    struct State: Codable, Sendable {
        var formatVersion: Int
        var scenarioName: String
        var settings: ScenarioSettings
        var startMs: Int64
        var timeScale: Double
        var rng: SimulationRNG
        /// Binary min-heap on ``QueueItem/before(_:_:)``.
        var queue: [QueueItem]
        var nextSeq: Int64
        /// The latest scenario time processed.
        var clockMs: Int64
        var orders: [OrderRecord]
        var globalStallUntilMs: Int64?
        var cancelLog: [CancelRecord]
        var manualCounter: Int
    }

    /// One pending action. At equal times, stall ends come first, then actions held by the stall (in their original
    /// order), then everything else in insertion order.
    struct QueueItem: Codable, Sendable {
        static let stallEnd = 0
        static let deferred = 1
        static let normal = 2

        var atMs: Int64
        var phase: Int
        var seq: Int64
        var action: QueueAction

        static func before(_ a: QueueItem, _ b: QueueItem) -> Bool {
            (a.atMs, a.phase, a.seq) < (b.atMs, b.phase, b.seq)
        }
    }

    enum QueueAction: Codable, Sendable {
        case timeline(TimelineAction)
        case positionTick(String)
        case stallEnd(String?)
    }

    struct OrderRecord: Codable, Sendable {
        var spec: OrderSpec
        var createdAtMs: Int64
        var status: OrderStatus = .created
        var etaAtMs: Int64
        var progress: Double = 0
        /// Custom text for the current status, if the scenario gave one.
        var summary: CustomerSummary?
        var riderPosition: Coordinate?
        /// Scenario time at which the rider reaches the door, if the scenario says; else the ETA target.
        var arriveAtMs: Int64?
        var routeAnchorMs: Int64 = 0
        var routeFraction: Double = 0
        /// The timeline sets positions explicitly; no automatic movement.
        var manualRider = false
        var stalledUntilMs: Int64?
        var pendingRecovery = false
        var lastEvent: OrderEvent?

        init(spec: OrderSpec, createdAtMs: Int64) {
            self.spec = spec
            self.createdAtMs = createdAtMs
            self.etaAtMs = spec.etaAtMs
        }
    }
}
