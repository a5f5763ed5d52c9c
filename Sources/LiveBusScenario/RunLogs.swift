import Foundation

/// One line of a client's JSON-lines log: an applied (or refused) update or an activity transition, as
/// `livebus attach --json` and `livebus_client.py attach` print them (`AppliedUpdate` in `LiveBusClient`).
public struct E2EClientRecord: Sendable, Equatable {
    /// `update`, or a transition: `stale`, `fresh`, `ended`, `dismissed`.
    public var type: String
    /// Topic, e.g. `orders/A1001`.
    public var topic: String
    /// Order id.
    public var order: String
    /// Topic sequence number.
    public var seq: UInt64
    /// `start`, `update`, `end` or `transition`.
    public var event: String
    /// Status shown, e.g. `cooking`.
    public var status: String
    /// Countdown target, **client clock**, ms since the Unix epoch.
    public var etaTarget: Int64?
    /// Remaining time shown, ms.
    public var remainingMs: Int64?
    /// Whether stale is shown after this record.
    public var stale: Bool
    /// Whether the Live Activity rules applied it.
    public var applied: Bool
    /// When the client wrote it, **client clock**, ms since the Unix epoch.
    public var clientTime: Int64
    /// Error bound of the converted instants, ms.
    public var uncertaintyMs: Int64
    /// `replay`, `snapshot` or nil (live).
    public var delivery: String?
    /// 1-based line in the log file.
    public var line: Int
    /// The log file's name (`pro.jsonl`), empty when not known.
    public var file: String = ""

    /// Creates a record.
    public init(
        type: String = "update",
        topic: String,
        seq: UInt64,
        event: String = "update",
        status: String,
        etaTarget: Int64? = nil,
        remainingMs: Int64? = nil,
        stale: Bool = false,
        applied: Bool = true,
        clientTime: Int64,
        uncertaintyMs: Int64 = 0,
        delivery: String? = nil,
        line: Int = 0
    ) {
        self.type = type
        self.topic = topic
        self.order = topic.hasPrefix("orders/") ? String(topic.dropFirst(7)) : topic
        self.seq = seq
        self.event = event
        self.status = status
        self.etaTarget = etaTarget
        self.remainingMs = remainingMs
        self.stale = stale
        self.applied = applied
        self.clientTime = clientTime
        self.uncertaintyMs = uncertaintyMs
        self.delivery = delivery
        self.line = line
    }
}

/// A layout the phone was in after a posture change (written by the runner from the layout engine, or by a client
/// that logs `{"type": "layout", …}` itself).
public struct E2ELayoutRecord: Sendable, Equatable {
    /// When, true (host) clock, ms since the Unix epoch.
    public var trueTime: Int64
    /// Catalog device id.
    public var device: String
    /// The posture laid out.
    public var posture: E2EPosture
    /// Each layout invariant and whether it held.
    public var invariants: [Outcome]
    /// 1-based line in the log file.
    public var line: Int
    /// For a layout the client logged itself: its clock's reading (``trueTime`` then holds the same number until
    /// the checker converts it), ms since the Unix epoch.
    public var clientTime: Int64?
    /// What triggered it (`attach`, `posture`, `update`), when the client says.
    public var trigger: String?
    /// The OS version the client laid out for (`27.1`), when the client says.
    public var os: String?
    /// The arrangement the client chose (`vertical`, `horizontal`…), when the client says.
    public var arrangement: String?
    /// The horizontal size class (`compact`, `regular`), when the line says.
    public var horizontalSizeClass: String?
    /// The layout engine's named rects, `[x, y, width, height]` in window points, when the line carries them.
    public var rects: [String: [Double]]?
    /// What overflows its space (`overflow compactTrailing.timer "2:20:13": 55.2 pt in 44 pt (width)`), when the
    /// line says; empty when nothing does.
    public var overflow: [String]?
    /// The Dynamic Island presentation per order (client lines only).
    public var island: [String: String]?
    /// The orders on the Lock Screen, top first (client lines only).
    public var lockScreen: [String]?
    /// The log file's name (`pro.layout.jsonl`), empty when not known.
    public var file: String = ""

    /// One invariant's outcome.
    public struct Outcome: Sendable, Equatable {
        /// Invariant name.
        public var name: String
        /// Whether it held.
        public var holds: Bool
        /// What was checked or what broke it.
        public var detail: String

        /// Creates an outcome.
        public init(name: String, holds: Bool, detail: String) {
            self.name = name
            self.holds = holds
            self.detail = detail
        }
    }

    /// Creates a layout record.
    public init(trueTime: Int64, device: String, posture: E2EPosture, invariants: [Outcome], line: Int = 0) {
        self.trueTime = trueTime
        self.device = device
        self.posture = posture
        self.invariants = invariants
        self.line = line
    }
}

/// A change the runner made to a phone's clock (`session.clock`).
public struct E2EClockEvent: Sendable, Equatable {
    /// When, true clock, ms since the Unix epoch.
    public var trueTime: Int64
    /// Step, ms (positive: forward).
    public var stepMilliseconds: Int64
    /// New drift, ppm, if it changed.
    public var driftPPM: Double?

    /// Creates an event.
    public init(trueTime: Int64, stepMilliseconds: Int64 = 0, driftPPM: Double? = nil) {
        self.trueTime = trueTime
        self.stepMilliseconds = stepMilliseconds
        self.driftPPM = driftPPM
    }
}

/// A phone moved to another daemon of the federation (`moveSession`, `Protocol/E2E.md` §2.5).
public struct E2EDaemonMove: Sendable, Equatable {
    /// When the runner pointed the phone at the daemon, true clock, ms since the Unix epoch.
    public var trueTime: Int64
    /// The daemon's name.
    public var daemon: String

    /// Creates a move.
    public init(trueTime: Int64, daemon: String) {
        self.trueTime = trueTime
        self.daemon = daemon
    }
}

/// Everything the runner knows about one session after the run.
public struct E2ESessionLog: Sendable, Equatable {
    /// Session name.
    public var name: String
    /// Client implementation.
    public var client: E2EClientKind
    /// Clock skew at start, ms; drift, ppm; and the true instant the clock was made (process start), ms.
    public var clockSkewMilliseconds: Int64
    /// Drift at start, ppm.
    public var clockDriftPPM: Double
    /// True (host) time the client process started, ms since the Unix epoch.
    public var clockEpochTrueMs: Int64
    /// Clock steps and drift changes, in time order.
    public var clockEvents: [E2EClockEvent]
    /// The client's records, in log order.
    public var records: [E2EClientRecord]
    /// Layouts after each posture (initial one first).
    public var layouts: [E2ELayoutRecord]
    /// Sync-state changes the client logged (`type: sync`), in log order.
    public var syncs: [E2ESyncRecord] = []
    /// Every log's lines by file name (for the log line of an assertion failure).
    public var rawLines: [String: [String]] = [:]
    /// Log lines that were not JSON objects of a known shape (line: text).
    public var malformed: [String]
    /// How the process ended: nil if the runner stopped it as planned, else what happened.
    public var abnormalExit: String?
    /// The federation daemon the phone attached to at start; nil without a federation.
    public var daemon: String?
    /// The phone's moves to other daemons (`moveSession`), in time order.
    public var moves: [E2EDaemonMove] = []

    /// The daemon the phone was placed on at true time `trueMs` (ms since the Unix epoch); nil without a federation.
    public func daemon(atTrueMs trueMs: Double) -> String? {
        moves.last { Double($0.trueTime) <= trueMs }?.daemon ?? daemon
    }

    /// Creates a session log.
    public init(
        name: String,
        client: E2EClientKind = .swift,
        clockSkewMilliseconds: Int64 = 0,
        clockDriftPPM: Double = 0,
        clockEpochTrueMs: Int64 = 0,
        clockEvents: [E2EClockEvent] = [],
        records: [E2EClientRecord] = [],
        layouts: [E2ELayoutRecord] = [],
        malformed: [String] = [],
        abnormalExit: String? = nil
    ) {
        self.name = name
        self.client = client
        self.clockSkewMilliseconds = clockSkewMilliseconds
        self.clockDriftPPM = clockDriftPPM
        self.clockEpochTrueMs = clockEpochTrueMs
        self.clockEvents = clockEvents
        self.records = records
        self.layouts = layouts
        self.malformed = malformed
        self.abnormalExit = abnormalExit
    }

    /// The clock model of this phone.
    public var clockModel: E2EClientClockModel {
        E2EClientClockModel(
            skewMilliseconds: clockSkewMilliseconds,
            driftPPM: clockDriftPPM,
            epochTrueMs: clockEpochTrueMs,
            events: clockEvents
        )
    }

    /// Appends the records and layouts of a JSON-lines log.
    ///
    /// Lines with `"type": "layout"` become ``layouts``, `"type": "sync"` ones ``syncs``; `"type": "error"` lines
    /// (connection notes) and `"type": "pushToken"` lines (the app's APNs push tokens) are skipped; every other object must carry the ``E2EClientRecord`` fields, else it is
    /// listed in ``malformed``.
    /// - Parameters:
    ///   - text: the log's text.
    ///   - file: the log file's name, kept with each record (and its lines in ``rawLines``) for messages.
    public mutating func appendLog(_ text: String, file: String = "") {
        var lineNumber = 0
        let decoder = JSONDecoder()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if !file.isEmpty { rawLines[file, default: []] += lines.map(String.init) }
        for raw in lines {
            lineNumber += 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            guard let line = try? decoder.decode(LogLine.self, from: Data(line.utf8)) else {
                malformed.append("\(lineNumber): \(line.prefix(120))")
                continue
            }
            if line.type == "error" || line.type == "pushToken" { continue }  // notes, push tokens (PROTOCOL.md §10)
            if line.type == "sync" {
                if let state = line.state, let c = line.clientTime {
                    syncs.append(E2ESyncRecord(state: state, clientTime: c, line: lineNumber, file: file))
                } else {
                    malformed.append("\(lineNumber): a sync line without state or clientTime")
                }
                continue
            }
            if line.type == "layout" {
                if var l = line.layoutRecord(line: lineNumber) {
                    l.file = file
                    layouts.append(l)
                } else {
                    malformed.append("\(lineNumber): a layout line without posture or invariants")
                }
                continue
            }
            guard let type = line.type, let topic = line.topic, let seq = line.seq, let status = line.status,
                let clientTime = line.clientTime
            else {
                malformed.append("\(lineNumber): a record without type, topic, seq, status or clientTime")
                continue
            }
            var r = E2EClientRecord(
                type: type,
                topic: topic,
                seq: seq,
                event: line.event ?? "",
                status: status,
                etaTarget: line.etaTarget,
                remainingMs: line.remainingMs,
                stale: line.stale ?? false,
                applied: line.applied ?? true,
                clientTime: clientTime,
                uncertaintyMs: line.uncertaintyMs ?? 0,
                delivery: line.delivery,
                line: lineNumber
            )
            if let order = line.order { r.order = order }
            r.file = file
            records.append(r)
        }
    }
}

/// The shape of one JSON line (every field optional; ``E2ESessionLog/appendLog(_:)`` checks what it needs).
private struct LogLine: Decodable {
    struct Posture: Decodable {
        var foldState: String
        var orientation: String
        var windowWidth: Double?
        var windowHeight: Double?

        var posture: E2EPosture {
            E2EPosture(
                foldState: foldState,
                orientation: orientation,
                windowWidth: windowWidth,
                windowHeight: windowHeight
            )
        }
    }

    struct Invariant: Decodable {
        var name: String
        var holds: Bool
        var detail: String?
    }

    var type: String?
    var topic: String?
    var order: String?
    var seq: UInt64?
    var event: String?
    var status: String?
    var etaTarget: Int64?
    var remainingMs: Int64?
    var stale: Bool?
    var applied: Bool?
    var clientTime: Int64?
    var uncertaintyMs: Int64?
    var delivery: String?
    var trueTime: Int64?
    var device: String?
    var posture: Posture?
    var invariants: [Invariant]?
    var foldState: String?
    var orientation: String?
    var invariantsHeld: Bool?
    var failedInvariants: [String]?
    var trigger: String?
    var os: String?
    var arrangement: String?
    var horizontalSizeClass: String?
    var rects: [String: [Double]]?
    var overflow: [String]?
    var island: [String: String]?
    var lockScreen: [String]?
    var state: String?

    /// A layout line in either shape: the runner's (`trueTime`, `posture`, `invariants`) or the Swift client's
    /// (`clientTime`, `foldState`, `orientation`, `invariantsHeld`, `failedInvariants`, `trigger`).
    func layoutRecord(line: Int) -> E2ELayoutRecord? {
        if let t = trueTime, let p = posture, let inv = invariants {
            var r = E2ELayoutRecord(
                trueTime: t,
                device: device ?? "",
                posture: p.posture,
                invariants: inv.map { .init(name: $0.name, holds: $0.holds, detail: $0.detail ?? "") },
                line: line
            )
            r.arrangement = arrangement
            r.horizontalSizeClass = horizontalSizeClass
            r.rects = rects
            r.overflow = overflow
            return r
        }
        guard let c = clientTime, let f = foldState, let o = orientation, let held = invariantsHeld else { return nil }
        let failed = failedInvariants ?? []
        var r = E2ELayoutRecord(
            trueTime: c,
            device: device ?? "",
            posture: E2EPosture(foldState: f, orientation: o),
            invariants: failed.isEmpty
                ? [.init(name: "all", holds: held, detail: held ? "" : "invariantsHeld is false")]
                : failed.map { .init(name: String($0.prefix { $0 != ":" }), holds: false, detail: $0) },
            line: line
        )
        r.clientTime = c
        r.trigger = trigger
        r.os = os
        r.arrangement = arrangement
        r.horizontalSizeClass = horizontalSizeClass
        r.rects = rects
        r.overflow = overflow
        r.island = island
        r.lockScreen = lockScreen
        return r
    }
}

/// One look at the backend's state of an order (`order.list`), taken by the runner.
public struct E2EBackendObservation: Sendable, Equatable {
    /// When, true clock, ms since the Unix epoch.
    public var trueTime: Int64
    /// Order id.
    public var order: String
    /// Status.
    public var status: String
    /// The topic's latest sequence number.
    public var seq: UInt64
    /// Countdown target, **server clock**, ms since the Unix epoch.
    public var etaTarget: Int64
    /// When the backend last confirmed the order (the event's timestamp), server clock, ms.
    public var lastConfirmed: Int64

    /// Creates an observation.
    public init(trueTime: Int64, order: String, status: String, seq: UInt64, etaTarget: Int64, lastConfirmed: Int64) {
        self.trueTime = trueTime
        self.order = order
        self.status = status
        self.seq = seq
        self.etaTarget = etaTarget
        self.lastConfirmed = lastConfirmed
    }
}

/// What the runner saw of the daemon.
public struct E2EDaemonLog: Sendable, Equatable {
    /// One exit of a daemon process.
    public struct Exit: Sendable, Equatable {
        /// When, true clock, ms.
        public var trueTime: Int64
        /// Whether the runner killed it (a scheduled kill or the final stop).
        public var scheduled: Bool
        /// How it ended, e.g. `signal 9` or `exit 0`, with the log's last lines when unscheduled.
        public var description: String

        /// Creates an exit.
        public init(trueTime: Int64, scheduled: Bool, description: String) {
            self.trueTime = trueTime
            self.scheduled = scheduled
            self.description = description
        }
    }

    /// Exits, in time order.
    public var exits: [Exit]
    /// Resident memory samples: (true time ms, KiB).
    public var rssKiB: [(trueTime: Int64, kib: Int64)]
    /// When a new daemon was started after a kill, true clock, ms.
    public var restarts: [Int64]

    /// Creates a daemon log.
    public init(exits: [Exit] = [], rssKiB: [(trueTime: Int64, kib: Int64)] = [], restarts: [Int64] = []) {
        self.exits = exits
        self.rssKiB = rssKiB
        self.restarts = restarts
    }

    public static func == (a: E2EDaemonLog, b: E2EDaemonLog) -> Bool {
        a.exits == b.exits && a.restarts == b.restarts && a.rssKiB.map(\.trueTime) == b.rssKiB.map(\.trueTime)
            && a.rssKiB.map(\.kib) == b.rssKiB.map(\.kib)
    }
}

/// What one scenario action did.
public struct E2EActionOutcome: Sendable, Equatable {
    /// The action's line in the scenario file.
    public var line: Int
    /// Scenario time, ms.
    public var atMilliseconds: Int64
    /// e.g. `posture all → folded/portrait`.
    public var description: String
    /// Whether it did what the scenario expects.
    public var ok: Bool
    /// What the daemon answered, or why it is not ok.
    public var message: String
    /// For a successful posture action: the sessions whose posture changed.
    public var postureTargets: [String]

    /// Creates an outcome.
    public init(
        line: Int,
        atMilliseconds: Int64,
        description: String,
        ok: Bool,
        message: String = "",
        postureTargets: [String] = []
    ) {
        self.line = line
        self.atMilliseconds = atMilliseconds
        self.description = description
        self.ok = ok
        self.message = message
        self.postureTargets = postureTargets
    }
}

/// Everything the checker reads: the sessions' logs, the backend's observed states, the daemon's exits and memory,
/// and what the actions did.
public struct E2ERunLogs: Sendable, Equatable {
    /// Per session.
    public var sessions: [E2ESessionLog]
    /// The backend's states, polled during the run.
    public var observations: [E2EBackendObservation]
    /// The backend's final state per order (the last `order.list` before the clients were stopped).
    public var final: [String: E2EBackendObservation]
    /// The backend's state per order after the clients were stopped (before the daemon was); empty if unknown.
    public var finalAfterStop: [String: E2EBackendObservation] = [:]
    /// Statuses the backend timeline file publishes per order (in addition to observed ones).
    public var timelineStatuses: [String: Set<String>]
    /// Stale-after per status, **wall** ms (the timeline's scenario durations divided by the time scale).
    public var staleAfterMs: [String: Int64]
    /// The daemon.
    public var daemon: E2EDaemonLog
    /// The actions.
    public var actions: [E2EActionOutcome]
    /// When the run's timeline started and ended, true clock, ms.
    public var startTrueMs: Int64
    /// See ``startTrueMs``.
    public var endTrueMs: Int64

    /// Creates run logs.
    public init(
        sessions: [E2ESessionLog] = [],
        observations: [E2EBackendObservation] = [],
        final: [String: E2EBackendObservation] = [:],
        timelineStatuses: [String: Set<String>] = [:],
        staleAfterMs: [String: Int64] = [:],
        daemon: E2EDaemonLog = E2EDaemonLog(),
        actions: [E2EActionOutcome] = [],
        startTrueMs: Int64 = 0,
        endTrueMs: Int64 = 0
    ) {
        self.sessions = sessions
        self.observations = observations
        self.final = final
        self.timelineStatuses = timelineStatuses
        self.staleAfterMs = staleAfterMs
        self.daemon = daemon
        self.actions = actions
        self.startTrueMs = startTrueMs
        self.endTrueMs = endTrueMs
    }

    /// The backend timeline's default stale-after per status, scenario ms (`Protocol/SCENARIOS.md` "settings").
    public static let defaultStaleAfterScenarioMs: [String: Int64] = [
        "created": 600_000, "cooking": 1_200_000, "awaitingPickup": 600_000, "pickedUp": 300_000,
        "delivering": 120_000,
    ]
}

/// A phone's clock as the runner set it up: `client = true + skew + drift · (true − epoch) + steps`, piecewise
/// linear with a new piece at every step or drift change (the model of `SimulatedClientClock` and of the Python
/// client's `SimClock`).
public struct E2EClientClockModel: Sendable {
    struct Piece {
        var trueStart: Double
        var clientStart: Double
        var rate: Double
    }

    var pieces: [Piece]

    /// Builds the model.
    /// - Parameters:
    ///   - skewMilliseconds: client − true at `epochTrueMs`, ms.
    ///   - driftPPM: rate error, ppm.
    ///   - epochTrueMs: true time the clock was made, ms since the Unix epoch.
    ///   - events: steps and drift changes, true time order.
    public init(skewMilliseconds: Int64, driftPPM: Double, epochTrueMs: Int64, events: [E2EClockEvent]) {
        var ps = [
            Piece(
                trueStart: Double(epochTrueMs),
                clientStart: Double(epochTrueMs + skewMilliseconds),
                rate: 1 + driftPPM * 1e-6
            )
        ]
        for e in events.sorted(by: { $0.trueTime < $1.trueTime }) {
            let last = ps[ps.count - 1]
            let t = Double(e.trueTime)
            let c = last.clientStart + (t - last.trueStart) * last.rate + Double(e.stepMilliseconds)
            ps.append(Piece(trueStart: t, clientStart: c, rate: e.driftPPM.map { 1 + $0 * 1e-6 } ?? last.rate))
        }
        pieces = ps
    }

    /// The phone's reading at a true instant, ms.
    /// - Parameter trueMs: true (host) time, ms since the Unix epoch.
    /// - Returns: client clock, ms since the Unix epoch.
    public func clientTime(atTrue trueMs: Double) -> Double {
        let p = pieces.last { $0.trueStart <= trueMs } ?? pieces[0]
        return p.clientStart + (trueMs - p.trueStart) * p.rate
    }

    /// Where the previous record of a log fell, so that readings repeated by a backwards step resolve forwards.
    public struct Cursor: Sendable {
        var piece = 0
        var lastTrue = -Double.infinity

        /// A cursor before the first record.
        public init() {}
    }

    /// The true instant at which the phone read `clientMs`.
    ///
    /// After a backwards step a reading is ambiguous; records being in time order, `cursor` picks the earliest
    /// piece, at or after the previous record's, that contains the reading no earlier than the previous record.
    /// - Parameters:
    ///   - clientMs: the phone's reading, ms since the Unix epoch.
    ///   - cursor: the previous record's place; updated to this record's.
    /// - Returns: true time, ms since the Unix epoch.
    public func trueTime(ofClient clientMs: Double, cursor: inout Cursor) -> Double {
        let slack = 50.0
        for k in max(0, cursor.piece)..<pieces.count {
            let p = pieces[k]
            let t = p.trueStart + (clientMs - p.clientStart) / p.rate
            let end = k + 1 < pieces.count ? pieces[k + 1].trueStart : Double.infinity
            if (k == 0 || t >= p.trueStart - slack) && t < end + slack && t >= cursor.lastTrue - slack {
                cursor.piece = k
                cursor.lastTrue = max(cursor.lastTrue, t)
                return t
            }
        }
        let p = pieces[pieces.count - 1]
        let t = p.trueStart + (clientMs - p.clientStart) / p.rate
        cursor.piece = pieces.count - 1
        cursor.lastTrue = max(cursor.lastTrue, t)
        return t
    }
}
