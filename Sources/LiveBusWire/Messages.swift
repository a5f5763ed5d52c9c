import Foundation

/// Encoding and decoding of frame bodies: UTF-8 JSON objects with sorted keys (deterministic bytes).
public enum WireJSON {
    /// Encodes `value` as compact JSON with sorted keys and unescaped slashes.
    /// - Throws: ``WireError`` `invalidBody` if the value cannot be encoded (a non-finite number).
    public static func encode(_ value: some Encodable) throws(WireError) -> [UInt8] {
        // The replies a daemon sends per probe, per second and per PUBLISH (PING, PONG, UPTODATE, ACK) are written
        // without Foundation, byte for byte what JSONEncoder writes below (WireJSONCompactTests): a JSONEncoder
        // per frame was half of the daemon's allocations in the fan-out workload (alloc-stacks, 100 sessions).
        if let c = value as? any CompactWireBody { return c.compactJSON() }
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return Array(try e.encode(value)) } catch {
            throw WireError(.invalidBody, "cannot encode body: \(error)")
        }
    }

    /// Decodes a body, naming the offending field in the error, and checks its instants (``WireValidated``).
    /// - Throws: ``WireError`` `invalidBody` with the field path, e.g. `field 'posture.foldState': expected a string`;
    ///   `invalidValue` when an instant or duration is outside ``WireRange`` (PROTOCOL.md §3).
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(WireError) -> T {
        let value: T
        do { value = try JSONDecoder().decode(T.self, from: Data(bytes)) } catch let error as DecodingError {
            // Foundation reports a number its integer type cannot hold as corrupted data with no field: find it.
            if case .dataCorrupted(let c) = error, c.codingPath.isEmpty, let e = unrepresentable(bytes, for: T.self) {
                throw e
            }
            throw WireError(.invalidBody, describe(error, for: T.self))
        } catch {
            let what = String(describing: T.self).replacingOccurrences(of: "Body", with: "")
            throw WireError(.invalidBody, "\(what) body is not valid JSON")
        }
        if let checked = value as? any WireValidated { try checked.validate() }
        return value
    }

    /// The first number in `bytes` that an integer field cannot hold, as the error that names it: `invalidValue` for
    /// an integer outside ±2^63 (past every range of PROTOCOL.md §3), `invalidBody` for a negative integer or a
    /// fraction (where an unsigned or whole number is expected). Keys are visited in sorted order, so the answer
    /// is the same every time. `nil` when the body is not JSON at all or holds no such number.
    static func unrepresentable<T>(_ bytes: [UInt8], for: T.Type) -> WireError? {
        guard let root = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else { return nil }
        let what = String(describing: T.self).replacingOccurrences(of: "Body", with: "")
        var huge: (String, Double)?
        var negative: (String, Double)?
        var fraction: (String, Double)?
        func visit(_ v: JSONValue, _ at: String) {
            switch v {
            case .number(let n):
                if n.rounded() != n {
                    if fraction == nil { fraction = (at, n) }
                } else if abs(n) >= 0x1p63 {  // 2^63: no Int64 holds it
                    if huge == nil { huge = (at, n) }
                } else if n < 0, negative == nil {
                    negative = (at, n)
                }
            case .array(let a): for (i, x) in a.enumerated() { visit(x, "\(at)[\(i)]") }
            case .object(let o):
                for k in o.keys.sorted() { visit(o[k]!, at.isEmpty ? k : "\(at).\(k)") }
            default: break
            }
        }
        visit(root, "")
        if let (field, n) = huge {
            return WireError(
                .invalidValue,
                "\(what) body: field '\(field)' is \(String(format: "%.0f", n)), outside ±2^63 (instants must be within ±\(WireRange.instantLimitMilliseconds) ms of the epoch, PROTOCOL.md §3)"
            )
        }
        if let (field, n) = negative {
            return WireError(
                .invalidBody,
                "\(what) body: field '\(field)' is \(String(format: "%.0f", n)); it must not be negative"
            )
        }
        if let (field, n) = fraction {
            return WireError(.invalidBody, "\(what) body: field '\(field)' is \(n); it must be a whole number")
        }
        return nil
    }

    static func path(_ p: [any CodingKey]) -> String {
        p.map { k in k.intValue.map { "[\($0)]" } ?? ".\(k.stringValue)" }.joined().drop { $0 == "." }.description
    }

    static func describe<T>(_ e: DecodingError, for: T.Type) -> String {
        let what = String(describing: T.self).replacingOccurrences(of: "Body", with: "")
        switch e {
        case .keyNotFound(let k, let c):
            let p = path(c.codingPath + [k])
            return "\(what) body: field '\(p)' is missing"
        case .typeMismatch(let t, let c):
            return "\(what) body: field '\(path(c.codingPath))' should be \(typeName(t))"
        case .valueNotFound(let t, let c):
            return "\(what) body: field '\(path(c.codingPath))' is null; expected \(typeName(t))"
        case .dataCorrupted(let c):
            if c.codingPath.isEmpty { return "\(what) body is not a valid JSON object" }
            let field = path(c.codingPath)
            var text = "\(what) body: field '\(field)' has a value that is not allowed"
            // Foundation says "Cannot initialize <Type> from invalid String value <v>": keep the value, not the type.
            if let r = c.debugDescription.range(of: "invalid String value ") {
                text =
                    "\(what) body: field '\(field)' has the value '\(c.debugDescription[r.upperBound...].prefix(64))', which is not allowed"
            }
            if field == "role" { text += "; use one of \(ClientRole.allCases.map(\.rawValue).joined(separator: ", "))" }
            return text
        @unknown default:
            return "\(what) body is invalid"
        }
    }

    static func typeName(_ t: Any.Type) -> String {
        switch t {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is UInt64.Type, is UInt16.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "\(t)".hasPrefix("Array") ? "a list" : "an object (PROTOCOL.md)"
        }
    }
}

/// Roles a connection can take in HELLO.
public enum ClientRole: String, Sendable, Codable, Hashable, CaseIterable {
    /// A simulated phone: subscribes, receives events converted to its clock, reports posture.
    case session
    /// A command-line tool: sends COMMANDs (status, order, push, fault); the admin role is checked with the
    /// socket's peer credentials.
    case admin
    /// A publisher: sends PUBLISH frames and receives ACKs.
    case publisher
    /// An observer (`livebus watch`): subscribes and receives every event as it is published, outside the phones'
    /// refresh scheduler, in server clock (its `client` block uses the handshake offset).
    case observer
}

/// A device posture as it travels on the wire; validated against the device catalog by the daemon.
public struct PostureBody: Sendable, Hashable, Codable {
    /// `flat`, `half-opened` or `folded`.
    public var foldState: String
    /// `portrait` or `landscape`.
    public var orientation: String
    /// Window width in points, when resized (iPad multitasking); else the full screen.
    public var windowWidth: Double?
    /// Window height in points, when resized.
    public var windowHeight: Double?
    /// Hinge angle in degrees, when known.
    public var hingeAngle: Double?
    /// Keyboard height in points when a text field has focus, else 0 or absent.
    public var keyboardHeight: Double?
    /// A pinned split-view width in points: the window keeps it across fold changes (clamped to the screen),
    /// while an unpinned window follows the screen. Absent = not pinned.
    public var splitViewWidth: Double?

    /// Creates a posture body.
    public init(
        foldState: String,
        orientation: String,
        windowWidth: Double? = nil,
        windowHeight: Double? = nil,
        hingeAngle: Double? = nil,
        keyboardHeight: Double? = nil,
        splitViewWidth: Double? = nil
    ) {
        self.foldState = foldState
        self.orientation = orientation
        self.windowWidth = windowWidth
        self.windowHeight = windowHeight
        self.hingeAngle = hingeAngle
        self.keyboardHeight = keyboardHeight
        self.splitViewWidth = splitViewWidth
    }
}

/// Device settings that change outcomes (HELLO `profile`).
public struct ProfileBody: Sendable, Hashable, Codable {
    /// Low Power Mode: fewer background refresh windows; priority-10 pushes may not wake the device.
    public var lowPowerMode: Bool?
    /// The app's frequent-updates setting (`NSSupportsLiveActivitiesFrequentUpdates`): a larger push budget.
    public var frequentUpdates: Bool?
    /// Live Activities authorization: `authorized`, `denied` or `activitiesDisabled`.
    public var liveActivities: String?
    /// The app's bundle id (its push tokens' topic is `<bundleID>.push-type.liveactivity`); `nil`:
    /// `com.example.delivery` (issue 17).
    public var bundleID: String?
    /// Broadcast channel ids (`apns-channel-id`) the app's activities listen on, as
    /// `Activity.request(…, pushType: .channel(id))` subscribes them (iOS 18); `nil`: none.
    public var channels: [String]?

    /// Creates a profile.
    public init(
        lowPowerMode: Bool? = nil,
        frequentUpdates: Bool? = nil,
        liveActivities: String? = nil,
        bundleID: String? = nil,
        channels: [String]? = nil
    ) {
        self.lowPowerMode = lowPowerMode
        self.frequentUpdates = frequentUpdates
        self.liveActivities = liveActivities
        self.bundleID = bundleID
        self.channels = channels
    }

    /// This profile with the settings `change` names replaced; the ones it leaves out stay.
    public func merging(_ change: ProfileBody) -> ProfileBody {
        ProfileBody(
            lowPowerMode: change.lowPowerMode ?? lowPowerMode,
            frequentUpdates: change.frequentUpdates ?? frequentUpdates,
            liveActivities: change.liveActivities ?? liveActivities,
            bundleID: change.bundleID ?? bundleID,
            channels: change.channels ?? channels
        )
    }
}

/// A resume request inside HELLO: the token from an earlier WELCOME, the last applied sequence per topic, and the
/// topic patterns the client subscribed to.
public struct ResumeBody: Sendable, Hashable, Codable {
    /// The resume token from the earlier session's WELCOME.
    public var token: String
    /// Topic → last sequence number the client applied.
    public var topics: [String: UInt64]
    /// The topic patterns the client subscribed to (its SUBSCRIBEs), or `nil` (a client that does not send them).
    /// The daemon subscribes the resumed session to each one its record lacks: a daemon killed after a SUBSCRIBE
    /// but before its batch was stored resumes from an older record (PROTOCOL.md §5.3).
    public var patterns: [String]?

    /// Creates a resume request.
    /// - Parameters:
    ///   - token: The earlier WELCOME's resume token.
    ///   - topics: Topic → last applied sequence.
    ///   - patterns: The patterns subscribed to, or `nil`.
    public init(token: String, topics: [String: UInt64], patterns: [String]? = nil) {
        self.token = token
        self.topics = topics
        self.patterns = patterns
    }
}

/// HELLO body (client → daemon).
public struct HelloBody: Sendable, Hashable, Codable {
    /// Protocol versions the client speaks, e.g. `[2]`.
    public var versions: [Int]
    /// Client software and version, e.g. `livebus-swift/0.1`.
    public var client: String
    /// The role this connection takes.
    public var role: ClientRole
    /// A session name chosen by the user (`attach --name`), unique among live sessions, or absent.
    public var name: String?
    /// Device model id from the catalog (`livebus devices`), for sessions.
    public var device: String?
    /// The device posture, for sessions.
    public var posture: PostureBody?
    /// `foreground`, `background`, `suspended` or `terminated`, for sessions.
    public var appState: String?
    /// The OS version the session runs, e.g. `27.1`.
    public var os: String?
    /// The client's wall clock when it sent HELLO, milliseconds since the Unix epoch, client clock.
    public var clientTime: Int64
    /// Present when resuming an earlier session.
    public var resume: ResumeBody?
    /// Device settings that change outcomes.
    public var profile: ProfileBody?
    /// Optional frames the client understands (PROTOCOL.md §4.1): ``HelloBody/syncFeature`` (`sync`) asks for SYNC
    /// frames (§5.9). A daemon ignores names it does not know; `nil` (an older client): none.
    public var features: [String]?

    /// The feature name that asks for SYNC frames.
    public static let syncFeature = "sync"

    /// Whether the client asked for SYNC frames.
    public var wantsSync: Bool { features?.contains(Self.syncFeature) ?? false }

    /// Creates a HELLO body.
    public init(
        versions: [Int] = Frame.supportedVersions,
        client: String,
        role: ClientRole,
        name: String? = nil,
        device: String? = nil,
        posture: PostureBody? = nil,
        appState: String? = nil,
        os: String? = nil,
        clientTime: Int64,
        resume: ResumeBody? = nil,
        profile: ProfileBody? = nil,
        features: [String]? = nil
    ) {
        self.versions = versions
        self.client = client
        self.role = role
        self.name = name
        self.device = device
        self.posture = posture
        self.appState = appState
        self.os = os
        self.clientTime = clientTime
        self.resume = resume
        self.profile = profile
        self.features = features
    }
}

/// WELCOME body (daemon → client).
public struct WelcomeBody: Sendable, Hashable, Codable {
    /// The protocol version chosen (the highest both speak).
    public var version: Int
    /// The session id, e.g. `s3`.
    public var session: String
    /// The session name (given or assigned).
    public var name: String
    /// Token to present in HELLO.resume after a disconnect.
    public var resumeToken: String
    /// The daemon's wall clock when it sent WELCOME, milliseconds since the Unix epoch, server clock.
    public var serverTime: Int64
    /// `true` when the HELLO's resume token was accepted and a catch-up follows.
    public var resumed: Bool
    /// The largest frame either side may send, in bytes.
    public var maxFrameSize: Int

    /// Creates a WELCOME body.
    public init(
        version: Int,
        session: String,
        name: String,
        resumeToken: String,
        serverTime: Int64,
        resumed: Bool,
        maxFrameSize: Int
    ) {
        self.version = version
        self.session = session
        self.name = name
        self.resumeToken = resumeToken
        self.serverTime = serverTime
        self.resumed = resumed
        self.maxFrameSize = maxFrameSize
    }
}

/// SUBSCRIBE and UNSUBSCRIBE body.
public struct SubscribeBody: Sendable, Hashable, Codable {
    /// Topic patterns: segments separated by `/`, `*` matches one segment, a final `>` matches the rest.
    public var patterns: [String]

    /// Creates a body.
    public init(patterns: [String]) { self.patterns = patterns }
}

/// Customer-facing summary in Korean and English.
public struct SummaryBody: Sendable, Hashable, Codable {
    /// Korean text, e.g. 조리 중.
    public var ko: String
    /// English text, e.g. Cooking.
    public var en: String
    /// Korean detail line for the lock screen, e.g. 주문하신 메뉴를 준비하고 있어요.
    public var detailKo: String?
    /// English detail line for the lock screen.
    public var detailEn: String?

    /// Creates a summary.
    public init(ko: String, en: String, detailKo: String? = nil, detailEn: String? = nil) {
        self.ko = ko
        self.en = en
        self.detailKo = detailKo
        self.detailEn = detailEn
    }
}

/// A latitude/longitude pair in degrees.
public struct PositionBody: Sendable, Hashable, Codable {
    /// Latitude, degrees.
    public var latitude: Double
    /// Longitude, degrees.
    public var longitude: Double

    /// Creates a position.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// Where an order comes from and goes to, for the phone's map (not part of the content state).
public struct PlacesBody: Sendable, Hashable, Codable {
    /// The store, degrees.
    public var store: PositionBody?
    /// The customer's address, degrees.
    public var customer: PositionBody?

    /// Creates places.
    public init(store: PositionBody?, customer: PositionBody?) {
        self.store = store
        self.customer = customer
    }
}

/// The content state of an order's Live Activity, server clock.
public struct ContentStateBody: Sendable, Hashable, Codable {
    /// `cooking`, `awaitingPickup`, `pickedUp`, `delivering`, `delivered`, `canceled` (or `created`).
    public var status: String
    /// Customer-facing summary.
    public var summary: SummaryBody
    /// Countdown target, milliseconds since the Unix epoch, server clock.
    public var etaTarget: Int64
    /// Progress 0…1.
    public var progress: Double
    /// Rider position while picked up or delivering.
    public var riderPosition: PositionBody?
    /// When the backend last confirmed the status, ms since the Unix epoch, server clock.
    public var lastConfirmed: Int64

    /// Creates a content state body.
    public init(
        status: String,
        summary: SummaryBody,
        etaTarget: Int64,
        progress: Double,
        riderPosition: PositionBody?,
        lastConfirmed: Int64
    ) {
        self.status = status
        self.summary = summary
        self.etaTarget = etaTarget
        self.progress = progress
        self.riderPosition = riderPosition
        self.lastConfirmed = lastConfirmed
    }
}

/// The per-session part of an EVENT: its instants converted into the receiving client's clock (on the wire, the
/// frame's ``EventTrailer``).
public struct ClientInstantsBody: Sendable, Hashable, Codable {
    /// The event timestamp, ms since the Unix epoch, client clock.
    public var timestamp: Int64
    /// The countdown target, ms, client clock.
    public var etaTarget: Int64
    /// The stale date, ms, client clock.
    public var staleDate: Int64?
    /// The dismissal date, ms, client clock.
    public var dismissalDate: Int64?
    /// When the backend last confirmed the status, ms, client clock.
    public var lastConfirmed: Int64
    /// Uncertainty of every converted instant, milliseconds (the clock estimate's error bound).
    public var uncertaintyMs: Int

    /// Creates a per-session block.
    public init(
        timestamp: Int64,
        etaTarget: Int64,
        staleDate: Int64?,
        dismissalDate: Int64?,
        lastConfirmed: Int64,
        uncertaintyMs: Int
    ) {
        self.timestamp = timestamp
        self.etaTarget = etaTarget
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.lastConfirmed = lastConfirmed
        self.uncertaintyMs = uncertaintyMs
    }
}

/// EVENT body (and PUBLISH body, which has no `client` member): a Live Activity push-shaped change.
public struct EventBody: Sendable, Hashable, Codable {
    /// `start`, `update` or `end`.
    public var event: String
    /// When the backend produced the change, ms since the Unix epoch, server clock.
    public var timestamp: Int64
    /// The new content state.
    public var contentState: ContentStateBody
    /// Stale date, ms, server clock.
    public var staleDate: Int64?
    /// Relevance score (higher is more relevant).
    public var relevanceScore: Double
    /// Dismissal date for `end`, ms, server clock.
    public var dismissalDate: Int64?
    /// APNs priority, 5 or 10.
    public var priority: Int
    /// The order's store and customer locations, for the map.
    public var places: PlacesBody?
    /// Instants converted to the receiving client's clock: on the wire (v2) the EVENT's ``EventTrailer``, never a
    /// body member; a client sets it from ``Frame/trailer`` after decoding the body.
    public var client: ClientInstantsBody?

    /// Creates an event body.
    public init(
        event: String,
        timestamp: Int64,
        contentState: ContentStateBody,
        staleDate: Int64?,
        relevanceScore: Double,
        dismissalDate: Int64?,
        priority: Int,
        places: PlacesBody? = nil,
        client: ClientInstantsBody? = nil
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.dismissalDate = dismissalDate
        self.priority = priority
        self.places = places
        self.client = client
    }
}

/// ACK body: for a PUBLISH, the sequence the topic assigned.
public struct AckBody: Sendable, Hashable, Codable {
    /// The topic's sequence number assigned to the published event.
    public var sequence: UInt64

    /// Creates an ACK body.
    public init(sequence: UInt64) { self.sequence = sequence }
}

/// PING body: `t1` is the sender's transmit time, ms since the Unix epoch, on the sender's clock.
public struct PingBody: Sendable, Hashable, Codable {
    /// Origin timestamp (sender's clock), ms.
    public var t1: Int64

    /// Creates a PING body.
    public init(t1: Int64) { self.t1 = t1 }
}

/// PONG body: `t1` echoed, `t2` receive time and `t3` transmit time on the responder's clock (RFC 5905 §8).
public struct PongBody: Sendable, Hashable, Codable {
    /// The PING's origin timestamp, echoed (requester's clock), ms.
    public var t1: Int64
    /// When the responder received the PING (responder's clock), ms.
    public var t2: Int64
    /// When the responder sent this PONG (responder's clock), ms.
    public var t3: Int64

    /// Creates a PONG body.
    public init(t1: Int64, t2: Int64, t3: Int64) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
    }
}

/// ERROR body.
public struct ErrorBody: Sendable, Hashable, Codable {
    /// Numeric code (`Protocol/errors.json`).
    public var code: UInt16
    /// Stable name of the code.
    public var name: String
    /// What was wrong and what to do.
    public var message: String
    /// `true` when the daemon closes the connection after this frame.
    public var fatal: Bool

    /// Creates an ERROR body.
    public init(code: UInt16, name: String, message: String, fatal: Bool) {
        self.code = code
        self.name = name
        self.message = message
        self.fatal = fatal
    }

    /// The body for a ``WireError``.
    public init(_ e: WireError, fatal: Bool) {
        self.init(code: e.code.rawValue, name: e.code.name, message: e.message, fatal: fatal)
    }
}

/// BYE body.
public struct ByeBody: Sendable, Hashable, Codable {
    /// Why the sender is leaving, e.g. `client exit`, `shutdown`.
    public var reason: String

    /// Creates a BYE body.
    public init(reason: String) { self.reason = reason }
}

/// POSTURE body (client → daemon): a new posture, app state, or both.
public struct PostureChangeBody: Sendable, Hashable, Codable {
    /// The new posture, if it changed.
    public var posture: PostureBody?
    /// The new app state, if it changed.
    public var appState: String?
    /// New device settings, if they changed.
    public var profile: ProfileBody?
    /// `true` when the client's wall clock just changed discontinuously (it was set or stepped), as iOS tells an
    /// app with `UIApplication.significantTimeChangeNotification`; the daemon probes at once instead of waiting up
    /// to its probe interval (16 s, 60 s in the background). Client → daemon only. CLOCKSYNC.md §3.
    public var clockChanged: Bool?

    /// Creates a posture change.
    public init(
        posture: PostureBody? = nil,
        appState: String? = nil,
        profile: ProfileBody? = nil,
        clockChanged: Bool? = nil
    ) {
        self.posture = posture
        self.appState = appState
        self.profile = profile
        self.clockChanged = clockChanged
    }
}

/// RESEND body (client → daemon): resend events of the frame's topic from `fromSequence` (inclusive).
public struct ResendBody: Sendable, Hashable, Codable {
    /// First sequence the client is missing.
    public var fromSequence: UInt64

    /// Creates a RESEND body.
    public init(fromSequence: UInt64) { self.fromSequence = fromSequence }
}

/// UPTODATE body (daemon → client): the catch-up of the frame's topic ended at `sequence`.
public struct UpToDateBody: Sendable, Hashable, Codable {
    /// The topic's latest sequence at the end of the catch-up.
    public var sequence: UInt64

    /// Creates an UPTODATE body.
    public init(sequence: UInt64) { self.sequence = sequence }
}

/// The daemon's sync state with the federation it belongs to (SYNC `state`, PROTOCOL.md §5.9).
public enum DaemonSyncState: String, Sendable, Codable, Hashable, CaseIterable {
    /// Everything the federation holds reaches the phone as it is published (a daemon without federation is
    /// always live and sends no SYNC).
    case live
    /// The daemon lost its NATS JetStream cluster (or has not joined it yet): PUBLISH is refused
    /// (`federationUnavailable`), events published on other daemons do not arrive, so the phone's replica may be
    /// behind; what it has is kept.
    case degraded
    /// The link is back and the daemon's stream consumer is taking what it missed; the phone gets it as usual.
    case catchingUp
}

/// SYNC body (daemon → client): `{"state", "since", "uncertaintyMs", "reason"}`.
public struct SyncBody: Sendable, Hashable, Codable {
    /// The state.
    public var state: DaemonSyncState
    /// When the daemon entered it, ms since the Unix epoch, **client clock** (converted by the daemon as an EVENT's
    /// instants are).
    public var since: Int64
    /// The conversion's error bound, ms.
    public var uncertaintyMs: Int
    /// Why, for people (`degraded`: the link's state, e.g. `NATS link reconnecting`); `nil` when live.
    public var reason: String?

    /// Creates a SYNC body.
    public init(state: DaemonSyncState, since: Int64, uncertaintyMs: Int, reason: String? = nil) {
        self.state = state
        self.since = since
        self.uncertaintyMs = uncertaintyMs
        self.reason = reason
    }
}

extension SyncBody: WireValidated {
    /// Checks `since` and `uncertaintyMs`.
    /// - Throws: ``WireError`` `invalidValue` naming the field.
    public func validate() throws(WireError) {
        try WireRange.checkInstant(since, field: "since", in: "SYNC")
        try WireRange.checkDuration(Int64(uncertaintyMs), field: "uncertaintyMs", in: "SYNC")
    }
}

/// COMMAND body (CLI → daemon).
public struct CommandBody: Sendable, Hashable, Codable {
    /// The command, e.g. `status`, `order.create`, `push`, `fault.add`, `posture`, `app-state`, `clock`.
    public var command: String
    /// Command arguments.
    public var args: [String: JSONValue]

    /// Creates a command.
    public init(command: String, args: [String: JSONValue] = [:]) {
        self.command = command
        self.args = args
    }
}

/// An error inside a RESULT, shaped like the CLI's `--json` envelope.
public struct ResultErrorBody: Error, Sendable, Hashable, Codable {
    /// Stable error name.
    public var code: String
    /// What went wrong.
    public var message: String
    /// What to do about it.
    public var recovery: String?

    /// Creates an error.
    public init(code: String, message: String, recovery: String? = nil) {
        self.code = code
        self.message = message
        self.recovery = recovery
    }
}

/// RESULT body (daemon → CLI): `{"ok": true, "data": …}` or `{"ok": false, "error": …}`.
public struct ResultBody: Sendable, Hashable, Codable {
    /// Whether the command succeeded.
    public var ok: Bool
    /// The command's data on success.
    public var data: JSONValue?
    /// The error on failure.
    public var error: ResultErrorBody?

    /// Creates a result.
    public init(ok: Bool, data: JSONValue? = nil, error: ResultErrorBody? = nil) {
        self.ok = ok
        self.data = data
        self.error = error
    }
}

/// A body whose JSON ``WireJSON/encode(_:)`` writes by hand: the same bytes as JSONEncoder with sorted keys,
/// one allocation (the result).
protocol CompactWireBody {
    /// The body's JSON.
    func compactJSON() -> [UInt8]
}

extension CompactWireBody {
    /// `{"<key>":<v>}` for one integer member.
    func oneInteger(_ prefix: StaticString, _ v: some BinaryInteger) -> [UInt8] {
        var w = JSONWriter()
        w.out.reserveCapacity(32)
        w.raw(prefix)
        w.integer(v)
        w.out.append(UInt8(ascii: "}"))
        return w.out
    }
}

extension AckBody: CompactWireBody {
    func compactJSON() -> [UInt8] { oneInteger("{\"sequence\":", sequence) }
}

extension UpToDateBody: CompactWireBody {
    func compactJSON() -> [UInt8] { oneInteger("{\"sequence\":", sequence) }
}

extension PingBody: CompactWireBody {
    func compactJSON() -> [UInt8] { oneInteger("{\"t1\":", t1) }
}

extension PongBody: CompactWireBody {
    func compactJSON() -> [UInt8] {
        var w = JSONWriter()
        w.out.reserveCapacity(72)
        w.raw("{\"t1\":")
        w.integer(t1)
        w.raw(",\"t2\":")
        w.integer(t2)
        w.raw(",\"t3\":")
        w.integer(t3)
        w.out.append(UInt8(ascii: "}"))
        return w.out
    }
}
