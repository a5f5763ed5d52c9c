import LiveBusClock
import LiveBusCore
import LiveBusFaults
import LiveBusScheduler
import LiveBusWire

/// One client connection as the daemon sees it: handshake state, identity, posture, subscriptions, clock.
///
/// Loop-bound: used only on the daemon's loop thread.
final class Session {
    enum Phase: String {
        case awaitingHello, established, closed
    }

    let id: String
    /// The connection number (`id` is `s<number>`): the session's key in the daemon's topic index.
    let number: Int
    let connection: any BusConnection
    var decoder = FrameDecoder()
    // What every delivery of a fan-out reads or writes (phase, role, scheduler, per-topic state, outbox, the kept
    // conversion, faults, counters). Swift checks exclusive access to a class's stored properties at run time, ≈75
    // instructions per access, and a delivery made about twenty (callgrind, fan-out to 100 sessions). No access to
    // these overlaps another: each is a read, an assignment, or a mutating call on a value (RefreshScheduler,
    // Outbox, the topic states) that does not reach back into the session. Release builds skip the check; debug
    // builds (the tests) keep it, so an overlap still traps there. Source: ISSUE-15 "Fan-out".
    #if DEBUG
        var phase = Phase.awaitingHello
        var role = ClientRole.session
        /// Decides when an update may reach this phone (app state, push priority and budget, coalescing).
        var scheduler: RefreshScheduler?
        /// Per-topic state by slot (slots are never reused while the session lives).
        private(set) var topicStates: ContiguousArray<TopicState> = []
        /// What the session's connection is sent under pressure: coalescing, terminal events, the slow-consumer
        /// limit.
        var outbox: Outbox
        /// This session's toxics, boxed (``faults``), or `nil`.
        private var faultsBox: FaultsBox?
        var eventsSent = 0
        /// The server instant (ms) of the kept ``conversion(at:)``: one evaluation of the clock estimate per session
        /// and server millisecond, not one per delivery; forgotten whenever ``clock`` or the handshake offset
        /// changes.
        private var conversionAt: Int64?
        private var conversionOffset: Int64 = 0
        private var conversionUncertainty = 0
        /// ``clock``'s conversion as plain numbers (``ClockSync/conversionMap``), taken whenever ``clock`` changes.
        private var conversionMap: ClockConversionMap?
    #else
        @exclusivity(unchecked) var phase = Phase.awaitingHello
        @exclusivity(unchecked) var role = ClientRole.session
        /// Decides when an update may reach this phone (app state, push priority and budget, coalescing).
        @exclusivity(unchecked) var scheduler: RefreshScheduler?
        /// Per-topic state by slot (slots are never reused while the session lives).
        @exclusivity(unchecked) private(set) var topicStates: ContiguousArray<TopicState> = []
        /// What the session's connection is sent under pressure: coalescing, terminal events, the slow-consumer
        /// limit.
        @exclusivity(unchecked) var outbox: Outbox
        /// This session's toxics, boxed (``faults``), or `nil`.
        @exclusivity(unchecked) private var faultsBox: FaultsBox?
        @exclusivity(unchecked) var eventsSent = 0
        /// The server instant (ms) of the kept ``conversion(at:)``: one evaluation of the clock estimate per session
        /// and server millisecond, not one per delivery; forgotten whenever ``clock`` or the handshake offset
        /// changes.
        @exclusivity(unchecked) private var conversionAt: Int64?
        @exclusivity(unchecked) private var conversionOffset: Int64 = 0
        @exclusivity(unchecked) private var conversionUncertainty = 0
        /// ``clock``'s conversion as plain numbers (``ClockSync/conversionMap``), taken whenever ``clock`` changes.
        @exclusivity(unchecked) private var conversionMap: ClockConversionMap?
    #endif
    /// The handshake's state machine (LiveBusCore): the daemon feeds it and carries out its actions.
    var handshake: SessionHandshake
    /// Whether its HELLO asked for SYNC frames (`features: ["sync"]`, PROTOCOL.md §5.9).
    var wantsSync = false
    var name: String
    var client = ""
    var device: String?
    var posture: PostureBody?
    var appState = "foreground"
    var os: String?
    var resumeToken = ""
    /// What the session holds per topic, by slot (the fan-out's lists name each subscriber's slot, so a delivery
    /// finds its topic's state without hashing the topic's name): ISSUE-15 "Fan-out lookup".
    struct TopicState {
        /// The topic.
        let topic: String
        /// The fan-out's number of the topic (``FanOutTable``), or -1 before its first fan-out.
        var number = -1
        /// The highest sequence written to this session, when ``hasSent``.
        var sent: UInt64 = 0
        /// Whether ``sent`` was set (a written event, a resume record, a forced catch-up).
        var hasSent = false
        /// The ETA target as last converted for this session (to re-send after steps and drift).
        var converted: ConvertedInstant?
    }
    /// Topic → its slot in ``topicStates``.
    private var slots: [String: Int] = [:]

    /// The slot of `topic` (made now when the session has none).
    /// - Parameters:
    ///   - topic: The topic.
    ///   - number: The fan-out's number of the topic, when known (-1: not known here).
    /// - Returns: The index of the topic's state in ``topicStates``.
    func slot(for topic: String, number: Int = -1) -> Int {
        if let i = slots[topic] {
            if number >= 0 { topicStates[i].number = number }
            return i
        }
        let i = topicStates.count
        topicStates.append(TopicState(topic: topic, number: number))
        slots[topic] = i
        return i
    }

    /// The highest sequence of `topic` written to this session (0 when none).
    func sent(_ topic: String) -> UInt64 { slots[topic].map { topicStates[$0].sent } ?? 0 }

    /// The highest sequence of slot `slot` written to this session (0 when none).
    @inline(__always)
    func sent(slot: Int) -> UInt64 {
        // Read in place: `topicStates[slot].sent` copied the whole state (its topic retained and released; callgrind).
        topicStates.withUnsafeBufferPointer { states in
            precondition(slot >= 0 && slot < states.count, "topic slot \(slot) of \(states.count)")
            return states[slot].sent
        }
    }

    /// Sets what the session counts as written of slot `slot`.
    func setSent(slot: Int, _ sequence: UInt64) {
        topicStates[slot].sent = sequence
        topicStates[slot].hasSent = true
    }

    /// Keeps the conversion of the ETA target last written on slot `slot`.
    @inline(__always)
    func setConverted(slot: Int, _ c: ConvertedInstant) { topicStates[slot].converted = c }

    /// Topic → highest sequence written to this session (a view of ``topicStates`` for status, resume records and
    /// the handshake; deliveries use slots). Setting it replaces every topic's value.
    var lastSent: [String: UInt64] {
        get {
            var out: [String: UInt64] = [:]
            for t in topicStates where t.hasSent { out[t.topic] = t.sent }
            return out
        }
        set {
            for i in topicStates.indices {
                topicStates[i].sent = 0
                topicStates[i].hasSent = false
            }
            for (topic, sequence) in newValue { setSent(slot: slot(for: topic), sequence) }
        }
    }
    /// Topic → highest sequence the client acknowledged.
    var lastAcked: [String: UInt64] = [:]
    var clock = ClockSync() {
        didSet {
            conversionAt = nil
            conversionMap = clock.conversionMap
        }
    }
    /// Offset (client − server, ms) seen in HELLO; used until the first probe converges.
    var handshakeOffsetMilliseconds: Double = 0 { didSet { conversionAt = nil } }
    var probeTimer: (any BusTimer)?
    var probesSent = 0
    /// `t1` of the PING awaiting its PONG.
    var outstandingProbe: Int64?
    var lastProbeRoundTripMilliseconds: Double?
    var connectedAt: ServerInstant
    var peerUID: UInt32?
    /// Held events replaced by a newer one of their topic.
    var coalescedCount: Int { outbox.coalescedCount }
    /// This session's toxics (downstream and upstream pipelines), or `nil`. Kept in a box: the two pipelines are
    /// about 470 bytes, held inline by every session though almost none has toxics (massif, 1,000 idle sessions).
    var faults: SessionFaults? {
        get { faultsBox?.value }
        set {
            if let v = newValue {
                if let b = faultsBox { b.value = v } else { faultsBox = FaultsBox(v) }
            } else {
                faultsBox = nil
            }
        }
    }
    /// Whether the session has toxics, read without copying them (every write of a fan-out asks).
    var hasFaults: Bool { faultsBox != nil }
    private final class FaultsBox {
        var value: SessionFaults
        init(_ value: SessionFaults) { self.value = value }
    }
    var faultTimer: (any BusTimer)?
    var schedulerTimer: (any BusTimer)?
    /// Low-power mode, frequent updates, Live Activities authorization, as the phone declared them.
    var profile = ProfileBody()
    /// Frame rate, queued replies, paced catch-up, liveness (Daemon+Limits.swift).
    let limits = SessionLimitState()

    /// PUBLISHes of this session staged in the loop turn's batch, whose ACKs wait for its commit.
    var pendingAcks = 0
    /// A new session's WELCOME while its resume record is being committed; its input is not read meanwhile.
    var heldWelcome: HeldWelcome?
    /// The topic of this session's last accepted PUBLISH (``Topic/validate(_:)`` passed): a publisher's next
    /// PUBLISH to the same topic is not validated again.
    var lastPublishTopic: String?

    init(
        number: Int,
        connection: any BusConnection,
        now: ServerInstant,
        outbox limits: Outbox.Limits,
        handshake: SessionHandshake.Configuration
    ) {
        self.outbox = Outbox(limits: limits)
        self.handshake = SessionHandshake(handshake)
        self.id = handshake.sessionID
        self.number = number
        self.connection = connection
        self.name = "s\(number)"
        self.connectedAt = now
    }

    /// Told when ``patterns`` change (the daemon keeps its topic → subscribers index current).
    var onPatternsChanged: ((Session) -> Void)?
    /// The session's subscriptions (LiveBusCore's value): its patterns, compiled once per change.
    private(set) var subscriptions = SessionSubscriptions()
    /// The session's topic patterns (SUBSCRIBE), in the order subscribed; setting them replaces them all (resume).
    var patterns: [String] {
        get { subscriptions.patterns }
        set {
            subscriptions = SessionSubscriptions(patterns: newValue)
            onPatternsChanged?(self)
        }
    }

    /// Adds a SUBSCRIBE's patterns (``SessionSubscriptions/subscribe(_:limit:)``).
    /// - Returns: The SUBSCRIBE's patterns, compiled.
    /// - Throws: ``WireError`` as ``SessionSubscriptions/subscribe(_:limit:)``; nothing changes then.
    func subscribe(_ new: [String], limit: Int) throws(WireError) -> [CompiledPattern] {
        let compiled = try subscriptions.subscribe(new, limit: limit)
        onPatternsChanged?(self)
        return compiled
    }

    /// Removes an UNSUBSCRIBE's patterns.
    func unsubscribe(_ gone: [String]) {
        if subscriptions.unsubscribe(gone) { onPatternsChanged?(self) }
    }

    /// Whether one of the session's patterns matches `topic`.
    func isSubscribed(to topic: String) -> Bool { subscriptions.matches(topic) }

    /// The conversion into this session's clock at server instant `now`: the offset added to a server instant
    /// (whole ms, as ``ServerInstant/toClientClock(offsetMilliseconds:)`` rounds it) and the uncertainty (ms), as
    /// ``convert(_:now:)`` gives them for any instant. Kept for the millisecond of `now`, so it is the same value.
    /// - Parameter now: The server's current time.
    /// - Returns: The offset to add (ms) and the uncertainty (ms).
    @inline(__always)
    func conversion(at now: ServerInstant) -> (offset: Int64, uncertainty: Int) {
        let ms = now.millisecondsSinceEpoch
        if conversionAt == ms { return (conversionOffset, conversionUncertainty) }
        conversionAt = ms
        if let map = conversionMap {
            // The estimate's arithmetic on plain numbers (the same values as `convert`, to the bit): no copy of the
            // ClockSync, no array retained (≈ 400 instructions per miss before; at N = 1,000 every delivery misses).
            (conversionOffset, conversionUncertainty) = map.conversion(at: now)
        } else {
            let c = convert(ServerInstant(millisecondsSinceEpoch: 0), now: now)
            conversionOffset = c.client.millisecondsSinceEpoch
            conversionUncertainty = c.uncertaintyMilliseconds
        }
        return (conversionOffset, conversionUncertainty)
    }

    /// Converts a server instant into this session's clock, keeping the full conversion.
    func convert(_ s: ServerInstant, now: ServerInstant) -> ConvertedInstant {
        if let c = clock.toClient(s, now: now) { return c }
        return ConvertedInstant(
            client: s.toClientClock(offsetMilliseconds: handshakeOffsetMilliseconds),
            server: s,
            uncertaintyMilliseconds: 1000
        )
    }
}
