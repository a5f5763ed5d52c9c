import Foundation

/// What the backend simulator plays: settings plus a timeline of explicit actions at explicit scenario times.
///
/// Scenario time is milliseconds from the scenario's start (`…Ms` offsets); ``DeliverySimulator`` maps it to the
/// server clock as `start + offset / timeScale`. Three sources make scenarios: ``builtIn(named:)`` (`demo-120s`),
/// ``random(orders:seed:)`` (realistic phases from delivery-reality.md §4, seeded), and timeline files
/// (``load(contentsOf:)``, format in `Protocol/SCENARIOS.md`).
public struct Scenario: Sendable, Hashable, Codable {
    /// A short name, e.g. `demo-120s` or `random-20-seed-7`.
    public var name: String
    /// What the scenario shows, for people.
    public var description: String
    /// Stale dates, dismissal delays, rider-position rate, cancel-failure rate.
    public var settings: ScenarioSettings
    /// The actions, sorted by ``TimelineEvent/atMs`` (ties keep their order).
    public var timeline: [TimelineEvent]

    /// Creates a scenario. The timeline is sorted by time, keeping the order of equal times.
    public init(name: String, description: String = "", settings: ScenarioSettings = .init(), timeline: [TimelineEvent])
    {
        self.name = name
        self.description = description
        self.settings = settings
        self.timeline = timeline.enumerated().sorted { ($0.element.atMs, $0.offset) < ($1.element.atMs, $1.offset) }
            .map(\.element)
    }

    /// The scenario time of the last timeline action, in milliseconds (0 for an empty timeline).
    public var lastActionMs: Int64 { timeline.last?.atMs ?? 0 }

    /// The names ``builtIn(named:)`` knows.
    public static let builtInNames = ["demo-120s"]

    /// A scenario that ships with LiveBus.
    ///
    /// - Parameter named: `demo-120s`: one order `A1001` through every phase in 120 scenario seconds, with a late
    ///   and an early ETA revision and a backend stall that outlasts the stale date, then recovers.
    /// - Returns: The scenario.
    /// - Throws: ``ScenarioError`` with code ``ScenarioError/Code/unknownScenario`` for any other name.
    /// - Note: Source: ../shared/reference/field-reports/001 (the 120-second automated demo; statuses 조리 중,
    ///   픽업 대기, 픽업 완료, 배달 중; countdown captures 1:44 and 1:28 while cooking).
    public static func builtIn(named: String) throws(ScenarioError) -> Scenario {
        switch named {
        case "demo-120s":
            return try load(json: Array(BuiltInScenarios.demo120s.utf8), fileName: "<built-in demo-120s>")
        default:
            throw ScenarioError(
                code: .unknownScenario,
                file: named,
                line: 0,
                field: "",
                message: "no built-in scenario named '\(named)'; known: \(builtInNames.joined(separator: ", "))"
            )
        }
    }

    /// A seeded random scenario: `orders` orders from many customers (1–3 concurrent orders each), with phase
    /// durations, distances and speeds drawn from delivery-reality.md §4, and occasional stalls, ETA revisions,
    /// cancellations and failing cancel requests at the rates ``OrderPlanner`` documents.
    ///
    /// - Parameters:
    ///   - orders: How many orders (negative counts as 0).
    ///   - seed: Equal seeds give equal scenarios.
    /// - Returns: The scenario, named `random-<orders>-seed-<seed>`.
    public static func random(orders: Int, seed: UInt64) -> Scenario {
        var rng = SimulationRNG(seed: seed)
        return OrderPlanner.randomScenario(orders: max(0, orders), seed: seed, rng: &rng)
    }

    /// Loads a timeline file (format in `Protocol/SCENARIOS.md`).
    ///
    /// - Parameter path: The file's path; errors name it as given.
    /// - Returns: The validated scenario.
    /// - Throws: ``ScenarioError`` naming the file, line and field of the first problem.
    public static func load(contentsOf path: String) throws(ScenarioError) -> Scenario {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ScenarioError(code: .unreadable, file: path, line: 0, field: "", message: "cannot read the file")
        }
        return try load(json: [UInt8](data), fileName: path)
    }

    /// Parses and validates a timeline file's bytes.
    ///
    /// - Parameters:
    ///   - json: UTF-8 JSON text.
    ///   - fileName: The name errors carry (usually the path).
    /// - Returns: The validated scenario.
    /// - Throws: ``ScenarioError`` naming `fileName`, the line and the field of the first problem.
    public static func load(json: [UInt8], fileName: String) throws(ScenarioError) -> Scenario {
        let root: JSONNode
        do {
            root = try LineJSON.parse(json)
        } catch {
            throw ScenarioError(code: .syntax, file: fileName, line: error.line, field: "", message: error.message)
        }
        return try TimelineDecoder(file: fileName).decode(root)
    }
}

/// Per-scenario knobs. Durations are scenario milliseconds.
public struct ScenarioSettings: Sendable, Hashable, Codable {
    /// How often a moving rider's position is published while delivering (default 10 s).
    public var positionIntervalMs: Int64
    /// Stale date per non-terminal status: the stale date of an event is its time plus this (see ``defaultStaleAfterMs``).
    public var staleAfterMs: [OrderStatus: Int64]
    /// Dismissal date of an `end` for `delivered`: the end's time plus this (default 15 min).
    public var dismissAfterDeliveredMs: Int64
    /// Dismissal date of an `end` for `canceled`: the end's time plus this (default 5 min).
    public var dismissAfterCanceledMs: Int64
    /// Probability that a cancel request made by hand (``DeliverySimulator/cancelOrder(id:at:)``) before pickup
    /// fails (the store refuses). Default 0.
    public var cancelFailureProbability: Double

    /// Default stale-after durations per status, scenario time.
    ///
    /// created 10 min (store acceptance times out at 10 min), cooking 20 min (quoted cook times run 5–40 min),
    /// awaiting pickup 10 min, picked up 5 min, delivering 2 min (positions come every 10 s, so two minutes of
    /// silence is a stall). Terminal statuses get no stale date.
    /// - Note: Source: delivery-reality.md §4 (acceptance timeout, quoted cook time, "backend stall … 1–5 min"); the
    ///   values are ours [A]. Apple: "When time reaches the configured stale date, the system considers the Live
    ///   Activity out of date" (live-activities.md §1.1, §1.7).
    public static let defaultStaleAfterMs: [OrderStatus: Int64] = [
        .created: 600_000, .cooking: 1_200_000, .awaitingPickup: 600_000, .pickedUp: 300_000, .delivering: 120_000,
    ]

    /// Creates settings; every parameter has the documented default.
    public init(
        positionIntervalMs: Int64 = 10_000,
        staleAfterMs: [OrderStatus: Int64] = ScenarioSettings.defaultStaleAfterMs,
        dismissAfterDeliveredMs: Int64 = 900_000,
        dismissAfterCanceledMs: Int64 = 300_000,
        cancelFailureProbability: Double = 0
    ) {
        self.positionIntervalMs = positionIntervalMs
        self.staleAfterMs = staleAfterMs
        self.dismissAfterDeliveredMs = dismissAfterDeliveredMs
        self.dismissAfterCanceledMs = dismissAfterCanceledMs
        self.cancelFailureProbability = cancelFailureProbability
    }
}

/// One action at one scenario time.
public struct TimelineEvent: Sendable, Hashable, Codable {
    /// Milliseconds from the scenario's start.
    public var atMs: Int64
    /// What happens.
    public var action: TimelineAction

    /// Creates a timeline event.
    public init(atMs: Int64, action: TimelineAction) {
        self.atMs = atMs
        self.action = action
    }
}

/// What a timeline can make the backend do. Instants (`…AtMs`) are scenario times.
public enum TimelineAction: Sendable, Hashable, Codable {
    /// A new order (status `created`, a `start` event).
    case createOrder(OrderSpec)
    /// The order moves to `status` (forward only, or to canceled). Optional: a new ETA, an explicit progress, a
    /// custom summary for this status, and (delivering) when the rider reaches the door.
    case setStatus(
        orderID: String,
        status: OrderStatus,
        etaAtMs: Int64?,
        progress: Double?,
        summary: CustomerSummary?,
        arriveAtMs: Int64?
    )
    /// A new ETA target (later or earlier); optionally when the rider reaches the door.
    case reviseEta(orderID: String, etaAtMs: Int64, arriveAtMs: Int64?)
    /// An explicit rider position (and optional progress); automatic movement stops for this order.
    case riderPosition(orderID: String, position: Coordinate, progress: Double?)
    /// No news from the backend for `durationMs`: about one order, or about every order when `orderID` is nil.
    /// Actions due meanwhile are held and published, in order, when the stall ends.
    case stall(orderID: String?, durationMs: Int64)
    /// A customer's cancel request: it succeeds (the order ends canceled) or fails (the order carries on).
    case cancelRequest(orderID: String, succeeds: Bool, reason: String?)

    /// The order the action is about (`nil` for a whole-backend stall).
    public var orderID: String? {
        switch self {
        case .createOrder(let spec): spec.id
        case .setStatus(let id, _, _, _, _, _), .reviseEta(let id, _, _), .riderPosition(let id, _, _),
            .cancelRequest(let id, _, _):
            id
        case .stall(let id, _): id
        }
    }
}

/// A new order as a scenario creates it.
public struct OrderSpec: Sendable, Hashable, Codable {
    /// Order id, e.g. `A1001` (letters, digits, `-`, `_`, `.`; at most 64 bytes): the topic is `orders/<id>`.
    public var id: String
    /// The customer's id; one customer can have several concurrent orders.
    public var customerID: String
    /// The store's location.
    public var store: Coordinate
    /// The customer's location (where the order is delivered).
    public var destination: Coordinate
    /// Points the rider passes between store and destination (may be empty: a straight line).
    public var waypoints: [Coordinate]
    /// The first ETA target, scenario milliseconds.
    public var etaAtMs: Int64
    /// Custom text for the `created` status, or `nil` for the default wording.
    public var summary: CustomerSummary?

    /// Creates an order spec.
    public init(
        id: String,
        customerID: String,
        store: Coordinate,
        destination: Coordinate,
        waypoints: [Coordinate] = [],
        etaAtMs: Int64,
        summary: CustomerSummary? = nil
    ) {
        self.id = id
        self.customerID = customerID
        self.store = store
        self.destination = destination
        self.waypoints = waypoints
        self.etaAtMs = etaAtMs
        self.summary = summary
    }

    /// The rider's route: store, waypoints, destination.
    public var route: [Coordinate] { [store] + waypoints + [destination] }

    /// `true` for ids that are safe in a topic name: 1–64 bytes of `A–Z a–z 0–9 - _ .`.
    public static func isValidID(_ id: String) -> Bool {
        let utf8 = Array(id.utf8)
        return (1...64).contains(utf8.count)
            && utf8.allSatisfy { c in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || c == UInt8(ascii: "-")
                    || c == UInt8(ascii: "_") || c == UInt8(ascii: ".")
            }
    }
}

/// A scenario that could not be loaded: the file, the 1-based line (0 when no line applies), the field path
/// (`events[3].at`, empty for syntax errors) and what to fix.
public struct ScenarioError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem. A struct over a private enum, so codes can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case unreadable, syntax, unknownField, missingField, duplicateField, invalidValue, outOfOrder
            case unknownScenario
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The file could not be read.
        public static let unreadable = Code(.unreadable)
        /// The text is not valid JSON.
        public static let syntax = Code(.syntax)
        /// A field the format does not define.
        public static let unknownField = Code(.unknownField)
        /// A required field is missing.
        public static let missingField = Code(.missingField)
        /// The same field appears twice in one object.
        public static let duplicateField = Code(.duplicateField)
        /// A value of the wrong type or an impossible value.
        public static let invalidValue = Code(.invalidValue)
        /// An event earlier than the one before it.
        public static let outOfOrder = Code(.outOfOrder)
        /// No built-in scenario has that name.
        public static let unknownScenario = Code(.unknownScenario)

        public var description: String { wrapped.rawValue }
    }

    /// The kind of problem.
    public var code: Code
    /// The file name as given to the loader.
    public var file: String
    /// The 1-based line, or 0 when the problem has no line (unreadable file, unknown built-in name).
    public var line: Int
    /// The field path, e.g. `events[3].at`; empty for syntax errors.
    public var field: String
    /// What is wrong and what is expected.
    public var message: String

    /// Creates an error.
    public init(code: Code, file: String, line: Int, field: String, message: String) {
        self.code = code
        self.file = file
        self.line = line
        self.field = field
        self.message = message
    }

    /// `file:line: field 'path': message` (the parts that apply).
    public var description: String {
        let place = line > 0 ? "\(file):\(line)" : file
        return field.isEmpty ? "\(place): \(message)" : "\(place): field '\(field)': \(message)"
    }
}
