/// The version of the end-to-end scenario format this build reads (`Protocol/E2E.md`).
public let e2eScenarioFormatVersion = 1

/// One end-to-end scenario file (`Protocol/E2E.md` §2): what the backend plays, which phones attach, what happens
/// to them and to the daemon, and the tolerances the invariants use.
///
/// Times in ``E2EAction/atMilliseconds`` and ``durationMilliseconds`` are **scenario time**: the runner maps them to
/// the host's wall clock as `start + scenarioTime / timeScale`, exactly as the daemon maps the backend timeline.
public struct E2EScenario: Sendable, Equatable {
    /// Format version; always ``e2eScenarioFormatVersion``.
    public var version: Int
    /// The scenario's name (table, report).
    public var name: String
    /// Free text.
    public var description: String?
    /// What the daemon's backend simulator plays.
    public var backend: E2EBackend
    /// Default speed-up (scenario time / wall time); `livebus e2e --time-scale` overrides it.
    public var timeScale: Double
    /// Seed for the daemon and every seeded choice; `livebus e2e --seed` overrides it.
    public var seed: UInt64
    /// How long the timeline runs, scenario milliseconds; convergence is checked after it.
    public var durationMilliseconds: Int64
    /// How long the runner waits after ``durationMilliseconds`` for every session to converge, wall milliseconds.
    public var settleMilliseconds: Int64
    /// The sessions, with `count` already expanded (`name-1` … `name-N`).
    public var sessions: [E2ESessionSpec]
    /// The actions in time order, with `repeat` and toxic `duration` already expanded.
    public var actions: [E2EAction]
    /// What the backend must end with and which invariants apply.
    public var expect: E2EExpectations
    /// The tolerances of the timing invariants.
    public var tolerances: E2ETolerances
    /// The assertion steps (`"type": "assert"` items of `actions`), in file order; they are not actions.
    public var assertions: [E2EAssertion] = []
    /// The federation the scenario runs on (`Protocol/E2E.md` §2.5): nil = one daemon, no NATS (the default).
    public var federation: E2EFederation?

    /// The daemon names sessions and actions may name: the federation's, in file order; empty without one.
    public var daemonNames: [String] { federation?.daemons.map(\.name) ?? [] }

    /// The daemon a session attaches to at start: its own `daemon`, else the first of the federation; nil without
    /// a federation.
    public func daemon(of session: E2ESessionSpec) -> String? { session.daemon ?? federation?.daemons.first?.name }

    /// Creates a scenario (tests build them directly; files go through ``E2EScenarioDecoder``).
    public init(
        name: String,
        backend: E2EBackend = .none,
        timeScale: Double = 10,
        seed: UInt64 = 1,
        durationMilliseconds: Int64 = 0,
        settleMilliseconds: Int64 = 5000,
        sessions: [E2ESessionSpec] = [],
        actions: [E2EAction] = [],
        expect: E2EExpectations = E2EExpectations(),
        tolerances: E2ETolerances = E2ETolerances(),
        description: String? = nil
    ) {
        self.version = e2eScenarioFormatVersion
        self.name = name
        self.description = description
        self.backend = backend
        self.timeScale = timeScale
        self.seed = seed
        self.durationMilliseconds = durationMilliseconds
        self.settleMilliseconds = settleMilliseconds
        self.sessions = sessions
        self.actions = actions
        self.expect = expect
        self.tolerances = tolerances
    }

    /// The sessions an action's target names, in file order.
    /// - Parameter target: `all`, a session name, or the base name of a `count` group.
    /// - Returns: the matching session names (empty when nothing matches).
    public func sessionNames(for target: E2ESessionTarget) -> [String] {
        switch target {
        case .all: return sessions.map(\.name)
        case .named(let n): return sessions.filter { $0.name == n || $0.group == n }.map(\.name)
        }
    }
}

/// What the daemon's backend simulator plays (`livebusd --scenario`).
public enum E2EBackend: Sendable, Equatable {
    /// Nothing: orders come only from `createOrder` actions.
    case none
    /// A built-in timeline, e.g. `demo-120s`.
    case builtin(String)
    /// A backend timeline file (`Protocol/SCENARIOS.md`), path resolved against the scenario file's directory.
    case timeline(path: String)
    /// `random:K`: K orders with realistic timings.
    case random(orders: Int)

    /// The `livebusd --scenario` argument, or nil for none.
    public var daemonArgument: String? {
        switch self {
        case .none: nil
        case .builtin(let n): n
        case .timeline(let p): p
        case .random(let k): "random:\(k)"
        }
    }
}

/// Which client implementation a session runs.
public enum E2EClientKind: String, Sendable, Equatable, CaseIterable {
    /// `livebus attach --json` (Swift).
    case swift
    /// `tools/pyclient/livebus_client.py attach` (Python).
    case python
}

/// A device posture as the wire carries it (`PROTOCOL.md` §4.1).
public struct E2EPosture: Sendable, Equatable {
    /// `flat`, `half-opened` or `folded`.
    public var foldState: String
    /// `portrait` or `landscape`.
    public var orientation: String
    /// Window width, points; nil = full screen.
    public var windowWidth: Double?
    /// Window height, points; nil = full screen.
    public var windowHeight: Double?

    /// Creates a posture.
    public init(foldState: String, orientation: String, windowWidth: Double? = nil, windowHeight: Double? = nil) {
        self.foldState = foldState
        self.orientation = orientation
        self.windowWidth = windowWidth
        self.windowHeight = windowHeight
    }

    /// Fold states the format accepts.
    public static let foldStates = ["flat", "half-opened", "folded"]
    /// Orientations the format accepts.
    public static let orientations = ["portrait", "landscape"]
}

/// One phone (`Protocol/E2E.md` §2.2).
public struct E2ESessionSpec: Sendable, Equatable {
    /// Unique session name (the HELLO `name`).
    public var name: String
    /// The `name` before `count` expansion (equal to ``name`` without `count`).
    public var group: String
    /// Which client implementation runs it.
    public var client: E2EClientKind
    /// Catalog device id.
    public var device: String
    /// Posture at attach time.
    public var posture: E2EPosture
    /// App state at attach time: `foreground`, `background`, `suspended`, `terminated`.
    public var appState: String
    /// The phone's clock minus true time at attach, ms.
    public var clockSkewMilliseconds: Int64
    /// The phone's clock rate error, ppm (positive runs fast).
    public var clockDriftPPM: Double
    /// The language of the phone (`ko` or `en`): the Live Activity text its layout is measured with.
    public var language: String
    /// The scenario-time delay before this session attaches, ms.
    public var attachAtMilliseconds: Int64
    /// The OS version the phone runs as written (`26.4`, `27.1.2` or `newest`), passed to the client as `--os`;
    /// nil = not declared (the clients' default, the newest version the layout engine knows).
    public var os: String?
    /// The 1-based line of the session's object in the file.
    public var line: Int
    /// The federation daemon the phone attaches to at start (`sessions[].daemon`); nil = the first (or the only
    /// daemon, without a federation).
    public var daemon: String?

    /// The declared version, nil when none is declared or it is `newest`.
    public var osVersion: E2EOSVersion? { os.flatMap(E2EOSVersion.init) }

    /// Creates a session.
    public init(
        name: String,
        client: E2EClientKind = .swift,
        device: String = "iphone-16-pro",
        posture: E2EPosture = E2EPosture(foldState: "flat", orientation: "portrait"),
        appState: String = "foreground",
        clockSkewMilliseconds: Int64 = 0,
        clockDriftPPM: Double = 0,
        language: String = "ko",
        attachAtMilliseconds: Int64 = 0,
        os: String? = nil,
        group: String? = nil,
        line: Int = 0
    ) {
        self.name = name
        self.group = group ?? name
        self.client = client
        self.device = device
        self.posture = posture
        self.appState = appState
        self.clockSkewMilliseconds = clockSkewMilliseconds
        self.clockDriftPPM = clockDriftPPM
        self.language = language
        self.attachAtMilliseconds = attachAtMilliseconds
        self.os = os
        self.line = line
    }

    /// App states the format accepts.
    public static let appStates = ["foreground", "background", "suspended", "terminated"]
}

/// An OS version as scenario files write it: `MAJOR.MINOR[.PATCH]`, each part 1–4 digits (`26.4`, `27.1.2`).
///
/// The scenario module does not import the layout engine; this mirrors the format and order of its `OSVersion`
/// (part by part, a missing patch is 0). `livebus e2e` checks every declared version with the engine's own parser
/// before running.
public struct E2EOSVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Major version, e.g. 27.
    public var major: Int
    /// Minor version, e.g. 1.
    public var minor: Int
    /// Patch version, 0 when not written.
    public var patch: Int

    /// Creates a version from its parts.
    public init(_ major: Int, _ minor: Int, _ patch: Int = 0) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// Parses `MAJOR.MINOR[.PATCH]`; nil for anything else (including `newest`).
    /// - Parameter text: e.g. `26.4` or `27.1.2`.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard (1...4).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(part)
            else { return nil }
            numbers.append(n)
        }
        self.init(numbers[0], numbers[1], numbers.count == 3 ? numbers[2] : 0)
    }

    /// The first version with `ArrangementView`, the split arrangement on an unfolded foldable (the layout engine's
    /// `OSVersion.arrangementAPI`): 27.1.
    public static let arrangementAPI = E2EOSVersion(27, 1)

    /// `27.1` or `26.4.1`: the patch is written only when it is not 0 (as the clients log it).
    public var description: String { patch == 0 ? "\(major).\(minor)" : "\(major).\(minor).\(patch)" }

    /// Part-by-part order.
    public static func < (a: E2EOSVersion, b: E2EOSVersion) -> Bool {
        (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
    }
}

/// Which sessions an action addresses.
public enum E2ESessionTarget: Sendable, Equatable, CustomStringConvertible {
    /// Every session.
    case all
    /// One session, or every session of a `count` group.
    case named(String)

    public var description: String {
        switch self {
        case .all: "all"
        case .named(let n): n
        }
    }
}

/// Whom a toxic applies to (`fault.add` `target`).
public enum E2EToxicTarget: Sendable, Equatable {
    /// One session by name.
    case session(String)
    /// `all`, `minority`, `majority` or `one` of the sessions connected when it is added.
    case scope(String)
}

/// One toxic (`fault.add`): a network fault between the daemon and its sessions.
public struct E2EToxic: Sendable, Equatable {
    /// The label a `removeToxic` action names.
    public var label: String
    /// `latency`, `bandwidth`, `slicer`, `slow_close`, `timeout`, `reset_peer`, `limit_data`, `down`, `drop`,
    /// `duplicate`, `reorder`, `corrupt` or `partition`.
    public var toxic: String
    /// Whom it applies to.
    public var target: E2EToxicTarget
    /// `down` (daemon → client) or `up`.
    public var direction: String
    /// The toxic's parameters (numbers only), as `fault.add` takes them.
    public var params: [String: Double]
    /// The fraction of connections or frames it applies to, 0…1.
    public var toxicity: Double?
    /// Seed of the toxic's random choices.
    public var seed: UInt64?

    /// Each toxic's parameters and their allowed ranges (`Protocol/FAULTS.md` §3, `Protocol/E2E.md` §2.3).
    public static let parameters: [String: [String: ClosedRange<Double>]] = [
        "latency": ["latencyMs": 0...600_000, "jitterMs": 0...600_000],
        "bandwidth": ["rateKBps": 0.001...1_000_000],
        "slicer": ["averageSize": 1...65536, "sizeVariation": 0...65536, "delayUs": 0...10_000_000],
        "slow_close": ["delayMs": 0...600_000],
        "timeout": ["timeoutMs": 0...3_600_000],
        "reset_peer": ["timeoutMs": 0...3_600_000],
        "limit_data": ["bytes": 0...2_147_483_647],
        "down": [:],
        "drop": ["probability": 0...1],
        "duplicate": ["probability": 0...1],
        "reorder": ["window": 2...64, "probability": 0...1, "delayMs": 0...600_000],
        "corrupt": ["probability": 0...1],
        "partition": ["durationMs": 1...3_600_000],
    ]

    /// Parameters that must be whole numbers (the daemon reads them as integers).
    public static let integerParameters: Set<String> = [
        "latencyMs", "jitterMs", "averageSize", "sizeVariation", "delayUs", "delayMs", "timeoutMs", "bytes", "window",
        "durationMs",
    ]
}

/// What a cancel request is expected to do.
public enum E2ECancelExpectation: String, Sendable, Equatable {
    /// The order ends `canceled`.
    case canceled
    /// The backend refuses (`cancelFailed`); the order carries on.
    case cancelFailed
    /// Either is fine.
    case any
    /// The daemon refuses with `federationUnavailable` (it is cut off from its NATS cluster): the publish an
    /// order's cancel makes cannot be stored.
    case federationUnavailable
}

/// What an order's creation is expected to do.
public enum E2ECreateExpectation: String, Sendable, Equatable, CaseIterable {
    /// The daemon creates it (the default).
    case created
    /// The daemon refuses with `federationUnavailable` (cut off from its NATS cluster): nothing is stored, and the
    /// refusal is not a failure.
    case federationUnavailable
    /// Either is fine.
    case any
}

/// A scenario's federation (`Protocol/E2E.md` §2.5): a NATS JetStream cluster of `natsNodes` nodes and daemons
/// that each run `livebusd --federate` to it with their own socket and data directory.
public struct E2EFederation: Sendable, Equatable {
    /// How many `nats-server` nodes the cluster has (`n1` … `nK`), 1…5.
    public var natsNodes: Int
    /// The stream's replicas (`livebusd --federate-replicas`), 1…``natsNodes``.
    public var replicas: Int
    /// The daemons, in file order; the first runs the scenario's `backend`.
    public var daemons: [E2EDaemonSpec]
    /// The 1-based line of the `federation` object in the file.
    public var line: Int

    /// Creates a federation.
    public init(natsNodes: Int, replicas: Int, daemons: [E2EDaemonSpec], line: Int = 0) {
        self.natsNodes = natsNodes
        self.replicas = replicas
        self.daemons = daemons
        self.line = line
    }

    /// The node names, `n1` … `nK`.
    public var nodeNames: [String] { (1...max(1, natsNodes)).map { "n\($0)" } }

    /// The daemons some action partitions (each runs in a network namespace of its own).
    public static func partitioned(_ actions: [E2EAction]) -> Set<String> {
        Set(
            actions.compactMap {
                if case .partitionDaemon(let d) = $0.kind { return d }
                return nil
            }
        )
    }
}

extension E2EScenario {
    /// What this host lacks to run the scenario, as an error naming the file, line and field; nil when nothing.
    ///
    /// A `federation` block needs `nats-server`; a `partitionDaemon` needs network namespaces (root and iproute2),
    /// for which there is no fallback (`Protocol/E2E.md` §2.5).
    /// - Parameters:
    ///   - file: the scenario file, for the message.
    ///   - natsServer: whether `nats-server` is installed.
    ///   - namespaces: whether network namespaces can be made (root, `/usr/sbin/ip`).
    /// - Returns: the first problem, or nil.
    public func hostProblem(file: String, natsServer: Bool, namespaces: Bool) -> E2EScenarioError? {
        guard let f = federation else { return nil }
        guard natsServer else {
            return E2EScenarioError(
                file: file,
                line: f.line,
                field: "federation",
                message:
                    "needs nats-server, which is not installed: run tools/setup (or apt-get install -y nats-server)"
            )
        }
        for a in actions {
            guard case .partitionDaemon(let d) = a.kind, !namespaces else { continue }
            return E2EScenarioError(
                file: file,
                line: a.line,
                field: "partitionDaemon",
                message:
                    "partitioning daemon \(d) needs a network namespace of its own, which needs root and iproute2 (/usr/sbin/ip); run livebus e2e as root, or drop the partitionDaemon and healDaemon actions"
            )
        }
        return nil
    }
}

/// One daemon of a federation.
public struct E2EDaemonSpec: Sendable, Equatable {
    /// Its name (`d1`, or as written): what `sessions[].daemon` and the actions name.
    public var name: String
    /// The nodes its `--federate` lists, in order (`n1` …); libnats connects to the first that answers and learns
    /// the others from the cluster. Default: every node.
    public var connect: [String]

    /// Creates a daemon.
    public init(name: String, connect: [String]) {
        self.name = name
        self.connect = connect
    }
}

/// One thing that happens at a scenario time (`Protocol/E2E.md` §2.3).
public struct E2EAction: Sendable, Equatable {
    /// What happens.
    public enum Kind: Sendable, Equatable {
        /// `session.posture`: the phones fold, unfold, rotate or resize.
        case posture(E2ESessionTarget, E2EPosture)
        /// `session.app-state`: the app goes to the background or comes back.
        case appState(E2ESessionTarget, String)
        /// `order.create` on a daemon (nil: the first), with the expected outcome.
        case createOrder(id: String?, customer: String?, daemon: String? = nil, expect: E2ECreateExpectation = .created)
        /// `order.cancel` on a daemon (nil: the first; an order is canceled where it was created), with the expected
        /// outcome.
        case cancelOrder(order: String, expect: E2ECancelExpectation, daemon: String? = nil)
        /// `backend.stall`: no news about one order (or any) for a duration, scenario ms (the runner divides by the
        /// time scale before sending it), on a daemon (nil: the first).
        case backendStall(order: String?, durationMilliseconds: Int64, daemon: String? = nil)
        /// `fault.add`.
        case addToxic(E2EToxic)
        /// `fault.remove` by label, or all toxics (nil).
        case removeToxic(label: String?)
        /// `session.clock`: step the phone's clock (ms) and/or set its drift (ppm).
        case clock(E2ESessionTarget, stepMilliseconds: Int64?, driftPPM: Double?)
        /// `kill -9` a daemon: the named one of the federation, or the first (the only one without a federation).
        case killDaemon(daemon: String?)
        /// Start a new daemon on the same socket and data dir (and federation) as the killed one.
        case restartDaemon(daemon: String?)
        /// Move phones to another daemon of the federation: they disconnect and resume there with their tokens.
        case moveSession(E2ESessionTarget, daemon: String)
        /// `kill -9` a NATS node of the federation (`n1` …).
        case killNats(node: String)
        /// Start the killed NATS node again with the same configuration and JetStream store.
        case restartNats(node: String)
        /// SIGSTOP a NATS node (it freezes: connections stay open and unanswered).
        case suspendNats(node: String)
        /// SIGCONT a suspended NATS node.
        case resumeNats(node: String)
        /// Cut a daemon off from the NATS cluster (its network namespace's link goes down); its phones stay attached.
        case partitionDaemon(daemon: String)
        /// Join a partitioned daemon to the cluster again.
        case healDaemon(daemon: String)
        /// SIGSTOP a client process (it stops reading: a slow consumer).
        case suspendClient(E2ESessionTarget)
        /// SIGCONT a suspended client process.
        case resumeClient(E2ESessionTarget)
    }

    /// When, scenario milliseconds from the start.
    public var atMilliseconds: Int64
    /// What.
    public var kind: Kind
    /// The 1-based line of the action's object in the file.
    public var line: Int
    /// Free text.
    public var note: String?
    /// The action's `id`, which an assertion step's `after` names; nil when it has none.
    public var id: String?

    /// Creates an action.
    public init(at atMilliseconds: Int64, _ kind: Kind, line: Int = 0, note: String? = nil) {
        self.atMilliseconds = atMilliseconds
        self.kind = kind
        self.line = line
        self.note = note
    }

    /// The action's type word as written in files.
    public var typeName: String {
        switch kind {
        case .posture: "posture"
        case .appState: "appState"
        case .createOrder: "createOrder"
        case .cancelOrder: "cancelOrder"
        case .backendStall: "backendStall"
        case .addToxic: "addToxic"
        case .removeToxic: "removeToxic"
        case .clock: "clock"
        case .killDaemon: "killDaemon"
        case .restartDaemon: "restartDaemon"
        case .moveSession: "moveSession"
        case .killNats: "killNats"
        case .restartNats: "restartNats"
        case .suspendNats: "suspendNats"
        case .resumeNats: "resumeNats"
        case .partitionDaemon: "partitionDaemon"
        case .healDaemon: "healDaemon"
        case .suspendClient: "suspendClient"
        case .resumeClient: "resumeClient"
        }
    }
}

/// What must hold at the end besides the invariants.
public struct E2EExpectations: Sendable, Equatable {
    /// The backend's final status per order id (checked against `order.list` at the end).
    public var finalStatus: [String: String]
    /// At least this many orders exist at the end.
    public var minimumOrders: Int

    /// Creates expectations.
    public init(finalStatus: [String: String] = [:], minimumOrders: Int = 1) {
        self.finalStatus = finalStatus
        self.minimumOrders = minimumOrders
    }
}

/// The tolerances of the timing invariants (`Protocol/E2E.md` §3), all on the true (host) clock.
public struct E2ETolerances: Sendable, Equatable {
    /// Shown remaining time vs. true remaining time: allowed error on top of the record's `uncertaintyMs`, ms.
    public var remainingMilliseconds: Int64
    /// How late after the stale date a phone may show stale (on top of `uncertaintyMs`), ms.
    public var staleLatencyMilliseconds: Int64
    /// After a clock step, drift change, daemon restart or a session's reconnect, how long timing checks of the
    /// affected sessions are suspended, ms.
    public var settleAfterDisturbanceMilliseconds: Int64
    /// The daemon's resident memory must stay at or below this, MiB.
    public var maximumDaemonRSSMiB: Double

    /// Creates tolerances with the documented defaults.
    public init(
        remainingMilliseconds: Int64 = 500,
        staleLatencyMilliseconds: Int64 = 1000,
        settleAfterDisturbanceMilliseconds: Int64 = 3000,
        maximumDaemonRSSMiB: Double = 512
    ) {
        self.remainingMilliseconds = remainingMilliseconds
        self.staleLatencyMilliseconds = staleLatencyMilliseconds
        self.settleAfterDisturbanceMilliseconds = settleAfterDisturbanceMilliseconds
        self.maximumDaemonRSSMiB = maximumDaemonRSSMiB
    }
}
