import LiveBusWire

/// The handshake of one connection as a value: awaiting HELLO → established, or refused.
///
/// Inputs (``Input``) go in, actions (``Action``) come out; it holds no socket and reads no clock: every instant is
/// passed in. What only the adapter knows (which names are live or reserved, what a resume token refers to, the
/// daemon's `down` toxics, the device catalog's verdict) arrives as ``HelloFacts`` with the HELLO. The checks run
/// in the order PROTOCOL.md §4.1 lists the refusals, each with its specific code and message:
///
/// 1. no common version: `unsupportedVersion`;
/// 2. the daemon's policy (a `down` toxic): its refusal, as the adapter words it;
/// 3. the admin role from another user: `notPermitted`;
/// 4. the name: malformed (`invalidBody`), held by a live session (`rejected`), reserved for a disconnected session
///    that may still resume (`rejected`, naming when it frees up), unless the HELLO resumes a session that may;
/// 5. `appState` not one of ``appStates``: `invalidBody`;
/// 6. the posture, device or OS: the adapter's catalog verdict (`invalidPosture`, `unknownDevice`, …);
/// 7. a resume token that refers to nothing that may resume: `resumeRejected`;
/// 8. a resume's `patterns`: a malformed one (`invalidTopic`), or, with the session's own patterns, more than
///    `--max-subscriptions` (`tooManySubscriptions`).
///
/// Source: Protocol/PROTOCOL.md §4.1 (HELLO, WELCOME, refusals), §5.3 (resume window, reserved names); issue 14
/// "name hijack"; issue 15 item 1 (sessions as values with explicit state machines).
public struct SessionHandshake: Sendable {
    /// What does not change during one handshake.
    public struct Configuration: Sendable, Equatable {
        /// The session id the daemon gave the connection, e.g. `s3` (WELCOME `session`, the default name).
        public var sessionID: String
        /// A connection that has not completed HELLO this long after it opened is refused, milliseconds
        /// (`--handshake-timeout`).
        public var timeoutMilliseconds: Int64
        /// The largest frame either side may send, bytes (WELCOME `maxFrameSize`).
        public var maximumFrameSize: Int
        /// The daemon's own user id: only this user may take the admin role (peer credentials).
        public var ownUserID: UInt32
        /// The most topic patterns a session may hold (`--max-subscriptions`): a resume whose `patterns`, together
        /// with the resumed session's own (``ResumeCandidate/patterns``), go beyond it is refused
        /// (`tooManySubscriptions`), as a SUBSCRIBE is.
        public var maximumSubscriptions: Int

        /// Creates a configuration.
        /// - Parameters:
        ///   - sessionID: The session id, e.g. `s3`.
        ///   - timeoutMilliseconds: The handshake timeout, milliseconds.
        ///   - maximumFrameSize: The largest frame, bytes.
        ///   - ownUserID: The daemon's user id.
        ///   - maximumSubscriptions: The most topic patterns a session may hold; default 1,000 (the daemon's
        ///     `--max-subscriptions` default).
        public init(
            sessionID: String,
            timeoutMilliseconds: Int64,
            maximumFrameSize: Int,
            ownUserID: UInt32,
            maximumSubscriptions: Int = 1_000
        ) {
            self.sessionID = sessionID
            self.timeoutMilliseconds = timeoutMilliseconds
            self.maximumFrameSize = maximumFrameSize
            self.ownUserID = ownUserID
            self.maximumSubscriptions = maximumSubscriptions
        }
    }

    /// Where the handshake is.
    public enum Phase: Sendable, Equatable {
        /// The connection is open and no HELLO was accepted yet.
        case awaitingHello
        /// HELLO was accepted and WELCOME written.
        case established
        /// The handshake failed with this code; the connection is being closed.
        case refused(WireError.Code)
    }

    /// What a resume token refers to, as the adapter found it.
    public struct ResumeCandidate: Sendable, Equatable {
        /// Who holds the token's session now.
        public enum Holder: Sendable, Equatable {
            /// A session of this daemon that disconnected: its record (and clock estimate) is in memory.
            case disconnected
            /// A session of an earlier daemon on the same data directory: its record was read from the store.
            case persisted
            /// A connection that is still open (the client saw it die first): it is taken over.
            case live
        }
        /// Who holds it.
        public var holder: Holder
        /// The session's name.
        public var name: String
        /// When its resume window ends, ms since the epoch, server clock; `nil` when it has none (a live session).
        public var deadlineMilliseconds: Int64?
        /// The topic patterns the session holds (its record's, or the live connection's): the resumed session
        /// keeps them, and adds those of HELLO `resume.patterns` they lack, within `--max-subscriptions`.
        public var patterns: [String]

        /// Creates a candidate.
        /// - Parameters:
        ///   - holder: Who holds the session.
        ///   - name: Its name.
        ///   - deadlineMilliseconds: When its resume window ends (ms since the epoch, server clock), or `nil`.
        ///   - patterns: The topic patterns the session holds; default none.
        public init(holder: Holder, name: String, deadlineMilliseconds: Int64?, patterns: [String] = []) {
            self.holder = holder
            self.name = name
            self.deadlineMilliseconds = deadlineMilliseconds
            self.patterns = patterns
        }
    }

    /// What the adapter knows about a HELLO's name and token, and its own verdicts, when the HELLO arrives.
    public struct HelloFacts: Sendable {
        /// Now, ms since the epoch, server clock (WELCOME `serverTime`, the handshake's clock offset, resume windows).
        public var serverNowMilliseconds: Int64
        /// The peer's user id (`SO_PEERCRED`), or `nil` when unknown.
        public var peerUserID: UInt32?
        /// The daemon's policy refusal of this HELLO (a `down` toxic), or `nil`.
        public var policyRefusal: WireError?
        /// Whether an established session other than this connection is named as the HELLO asks.
        public var nameIsLive: Bool
        /// The latest end of the resume windows of the disconnected sessions named as the HELLO asks (ms since the
        /// epoch, server clock), or `nil` when none holds the name.
        public var nameReservedUntilMilliseconds: Int64?
        /// What the HELLO's resume token refers to; `nil` when it refers to nothing (or the HELLO has none).
        public var resume: ResumeCandidate?
        /// The catalog's verdict on the HELLO's posture, device and OS, or `nil` when they pass.
        public var deviceRefusal: WireError?
        /// The resume token a new session gets (32 hex digits from a random source).
        public var newToken: String

        /// Creates facts; by default nothing is live, reserved, refused or resumable.
        /// - Parameters:
        ///   - serverNowMilliseconds: Now, ms since the epoch, server clock.
        ///   - peerUserID: The peer's user id, or `nil`.
        ///   - policyRefusal: The policy's refusal, or `nil`.
        ///   - nameIsLive: Whether a live session holds the name.
        ///   - nameReservedUntilMilliseconds: The end of the name's reservation (ms, server clock), or `nil`.
        ///   - resume: What the resume token refers to, or `nil`.
        ///   - deviceRefusal: The catalog's refusal, or `nil`.
        ///   - newToken: The token of a new session.
        public init(
            serverNowMilliseconds: Int64,
            peerUserID: UInt32? = nil,
            policyRefusal: WireError? = nil,
            nameIsLive: Bool = false,
            nameReservedUntilMilliseconds: Int64? = nil,
            resume: ResumeCandidate? = nil,
            deviceRefusal: WireError? = nil,
            newToken: String
        ) {
            self.serverNowMilliseconds = serverNowMilliseconds
            self.peerUserID = peerUserID
            self.policyRefusal = policyRefusal
            self.nameIsLive = nameIsLive
            self.nameReservedUntilMilliseconds = nameReservedUntilMilliseconds
            self.resume = resume
            self.deviceRefusal = deviceRefusal
            self.newToken = newToken
        }
    }

    /// The session a HELLO established.
    public struct Established: Sendable, Equatable {
        /// The role the connection took.
        public var role: ClientRole
        /// The session's name: the HELLO's, else the resumed session's, else the session id.
        public var name: String
        /// The session's resume token: the resumed session's, else a new one.
        public var resumeToken: String
        /// Who held the session this HELLO resumed, or `nil` for a new session.
        public var resumedFrom: ResumeCandidate.Holder?
        /// `appState`, `foreground` when the HELLO left it out.
        public var appState: String
        /// The client's clock minus the server's at the handshake (`clientTime` − server now), milliseconds: the
        /// conversion used until the first clock probe converges.
        public var clientOffsetMilliseconds: Double
        /// The WELCOME body sent.
        public var welcome: WelcomeBody
    }

    /// What the adapter does for the handshake.
    public enum Action: Sendable, Equatable {
        /// Arm the handshake deadline: feed ``Input/timerFired(monotonicMilliseconds:)`` at this instant
        /// (monotonic ms) or later. The daemon's liveness sweep is this timer for every connection.
        case armTimer(atMonotonicMilliseconds: Int64)
        /// The deadline no longer applies.
        case cancelTimer
        /// Forget the resume record of this token: its window passed (the HELLO is refused as for an unknown token).
        case forgetResume(token: String)
        /// Close the still-open connection of this token's session: this one takes it over.
        case takeOver(token: String)
        /// Adopt this identity (and, for a resume, the held session's subscriptions, clock and record).
        case establish(Established)
        /// Write this frame (WELCOME, its body already encoded).
        case write(FrameType, body: [UInt8])
        /// Send this fatal ERROR and close the connection.
        case refuse(WireError)
    }

    /// An input to the handshake.
    public enum Input: Sendable {
        /// The connection opened at this instant (monotonic ms).
        case opened(monotonicMilliseconds: Int64)
        /// A HELLO arrived, decoded, with what the adapter knows about its name and token.
        case hello(HelloBody, HelloFacts)
        /// A frame other than a HELLO to decode: refused before the handshake (`handshakeRequired`); a HELLO
        /// after it is refused too (`duplicateHello`); anything else passes (no action).
        case frame(FrameType)
        /// The HELLO's body could not be read: this error refuses it.
        case unreadable(WireError)
        /// The handshake timer fired at this instant (monotonic ms).
        case timerFired(monotonicMilliseconds: Int64)
    }

    /// The app states a HELLO may declare (PROTOCOL.md §4.1).
    public static let appStates = ["foreground", "background", "suspended", "terminated"]

    /// The configuration.
    public let configuration: Configuration
    /// Where the handshake is.
    public private(set) var phase: Phase = .awaitingHello
    /// When the connection opened, monotonic ms (``Input/opened(monotonicMilliseconds:)``).
    public private(set) var openedAtMilliseconds: Int64 = 0

    /// Creates a handshake awaiting ``Input/opened(monotonicMilliseconds:)``.
    /// - Parameter configuration: The session id, timeout, frame size and the daemon's user id.
    public init(_ configuration: Configuration) { self.configuration = configuration }

    /// Whether HELLO was accepted.
    public var isEstablished: Bool { phase == .established }

    /// When the handshake times out, monotonic ms.
    public var deadlineMilliseconds: Int64 { openedAtMilliseconds.saturatingAdding(configuration.timeoutMilliseconds) }

    /// Handles one input.
    /// - Returns: What the adapter does, in order. Empty when the input changes nothing.
    /// - Complexity: O(size of the HELLO) for a HELLO, O(1) otherwise.
    public mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .opened(let now):
            guard phase == .awaitingHello else { return [] }
            openedAtMilliseconds = now
            return [.armTimer(atMonotonicMilliseconds: deadlineMilliseconds)]
        case .frame(let type):
            switch (phase, type) {
            case (.awaitingHello, .hello):
                return []  // the adapter decodes it and feeds `.hello`
            case (.awaitingHello, _):
                return refuse(WireError(.handshakeRequired, "the first frame must be HELLO, got \(type)"))
            case (.established, .hello):
                return [.refuse(WireError(.duplicateHello, "HELLO was already received on this connection"))]
            default:
                return []
            }
        case .unreadable(let e):
            guard phase == .awaitingHello else { return [] }
            return refuse(e)
        case .timerFired(let now):
            guard phase == .awaitingHello, now - openedAtMilliseconds > configuration.timeoutMilliseconds else {
                return []
            }
            return refuse(
                WireError(
                    .handshakeTimeout,
                    "no complete HELLO within \(configuration.timeoutMilliseconds) ms of connecting (--handshake-timeout)"
                )
            )
        case .hello(let h, let facts):
            switch phase {
            case .awaitingHello: break
            case .established:
                return [.refuse(WireError(.duplicateHello, "HELLO was already received on this connection"))]
            case .refused: return []
            }
            do throws(WireError) {
                return try accept(h, facts)
            } catch {
                // A token whose window passed is forgotten, and the HELLO refused as for an unknown token.
                let expired = error.code == .resumeRejected && facts.resume != nil
                return (expired ? h.resume.map { [.forgetResume(token: $0.token)] } ?? [] : []) + refuse(error)
            }
        }
    }

    /// Checks a resume's `patterns` as a SUBSCRIBE's would be (PROTOCOL.md §5.3): each must be well formed, and the
    /// session's own patterns (`held`) together with them, each counted once, may not exceed `limit`.
    /// - Parameters:
    ///   - patterns: HELLO `resume.patterns` (`[]` for a resume without them).
    ///   - held: The patterns the resumed session holds already (``ResumeCandidate/patterns``).
    ///   - limit: The most patterns a session may hold (`--max-subscriptions`).
    /// - Throws: ``WireError`` `invalidTopic` naming the bad pattern, or `tooManySubscriptions` when the union is
    ///   past `limit`, giving the count, the limit and what to do.
    static func check(resumePatterns patterns: [String], held: [String], limit: Int) throws(WireError) {
        for p in patterns {
            do throws(WireError) { try Topic.validatePattern(p) } catch {
                throw WireError(error.code, "HELLO resume.patterns: \(error.message)")
            }
        }
        let own = Set(held)
        let count = own.union(patterns).count
        guard count <= limit else {
            // A record over the limit by itself (a daemon restarted with a lower limit): fewer patterns in the
            // HELLO cannot help; a new session can.
            let remedy =
                own.count > limit
                ? "raise the daemon's --max-subscriptions, or attach as a new session (without resume)"
                : "raise the daemon's --max-subscriptions, or resume with fewer patterns"
            throw WireError(
                .tooManySubscriptions,
                "resuming would hold \(count) topic patterns (\(own.count) held by the session, \(Set(patterns).count) in HELLO resume.patterns); a session may hold \(limit) (--max-subscriptions): \(remedy)"
            )
        }
    }

    private mutating func refuse(_ e: WireError) -> [Action] {
        phase = .refused(e.code)
        return [.cancelTimer, .refuse(e)]
    }

    private mutating func accept(_ h: HelloBody, _ facts: HelloFacts) throws(WireError) -> [Action] {
        guard h.versions.contains(where: Frame.supportedVersions.contains) else {
            throw WireError(
                .unsupportedVersion,
                "client speaks versions \(h.versions); this daemon speaks \(Frame.supportedVersions). Upgrade the client or the daemon"
            )
        }
        if let refusal = facts.policyRefusal { throw refusal }
        if h.role == .admin, let uid = facts.peerUserID, uid != configuration.ownUserID {
            throw WireError(
                .notPermitted,
                "the admin role is only for the daemon's own user (uid \(configuration.ownUserID))"
            )
        }
        let now = facts.serverNowMilliseconds
        // A resume that may still happen: its window has not passed (a live session has none).
        let mayResume = facts.resume.map { ($0.deadlineMilliseconds ?? .max) > now } ?? false
        if let name = h.name {
            // Names go into logs, status tables and file names, and commands address sessions by them.
            if let problem = SessionName.problem(name) {
                throw WireError(.invalidBody, "HELLO body: field 'name' \(problem)")
            }
            if facts.nameIsLive {
                throw WireError(.rejected, "a live session is already named '\(name)'; choose another --name")
            }
            // The real phone coming back with its token may take its reserved name (or any other: an older record
            // of the same name, left by a build without this rule, does not block it).
            let resumesDisconnected = mayResume && facts.resume?.holder != .live
            if !resumesDisconnected, let deadline = facts.nameReservedUntilMilliseconds, deadline > now {
                let seconds = (deadline - now + 999) / 1000
                throw WireError(
                    .rejected,
                    "the name '\(name)' is reserved for a disconnected session that may resume for \(seconds) s more; the phone resumes with its token, or choose another --name"
                )
            }
        }
        if let state = h.appState, !Self.appStates.contains(state) {
            throw WireError(
                .invalidBody,
                "HELLO body: field 'appState' is '\(state)'; expected one of \(Self.appStates.joined(separator: ", "))"
            )
        }
        if let refusal = facts.deviceRefusal { throw refusal }
        var actions: [Action] = [.cancelTimer]
        var name = configuration.sessionID
        var token = facts.newToken
        var resumedFrom: ResumeCandidate.Holder?
        if let r = h.resume {
            guard let c = facts.resume, mayResume else {
                throw WireError(.resumeRejected, "resume token is unknown or expired; attach as a new session")
            }
            try Self.check(
                resumePatterns: r.patterns ?? [],
                held: c.patterns,
                limit: configuration.maximumSubscriptions
            )
            if c.holder == .live { actions.append(.takeOver(token: r.token)) }
            name = c.name
            token = r.token
            resumedFrom = c.holder
        }
        if let n = h.name { name = n }
        let welcome = WelcomeBody(
            version: Int(Frame.version),
            session: configuration.sessionID,
            name: name,
            resumeToken: token,
            serverTime: now,
            resumed: resumedFrom != nil,
            maxFrameSize: configuration.maximumFrameSize
        )
        let e = Established(
            role: h.role,
            name: name,
            resumeToken: token,
            resumedFrom: resumedFrom,
            appState: h.appState ?? "foreground",
            clientOffsetMilliseconds: Double(h.clientTime) - Double(now),
            welcome: welcome
        )
        phase = .established  // the identity goes to the adapter, not kept here (memory of idle sessions)
        actions.append(.establish(e))
        actions.append(.write(.welcome, body: welcome.compactJSON()))
        return actions
    }
}

extension SessionHandshake {
    /// A new resume token: 128 bits from `generator` as 32 lowercase hex digits (what `%08x` four times wrote,
    /// without `String(format:)`, which was 47 k instructions of every connect: callgrind, sessions workload).
    /// - Parameter generator: The random source (the daemon passes `SystemRandomNumberGenerator`).
    /// - Returns: The token, e.g. `0f3a…` (32 characters).
    public static func makeToken(using generator: inout some RandomNumberGenerator) -> String {
        let digits: StaticString = "0123456789abcdef"
        return digits.withUTF8Buffer { hex in
            String(unsafeUninitializedCapacity: 32) { out in
                for word in 0..<2 {
                    let v = generator.next()
                    for k in 0..<16 { out[word * 16 + k] = hex[Int((v >> UInt64(60 - 4 * k)) & 0xF)] }
                }
                return 32
            }
        }
    }
}
