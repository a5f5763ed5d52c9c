import LiveBusCore
import LiveBusWire
import Testing

/// The handshake as a value: inputs in, actions out, no socket, no clock (every instant passed in). Source:
/// Protocol/PROTOCOL.md §4.1 (HELLO, WELCOME, refusals), §5.3 (resume window, reserved names).
@Suite struct SessionHandshakeTests {
    static let config = SessionHandshake.Configuration(
        sessionID: "s7",
        timeoutMilliseconds: 10_000,
        maximumFrameSize: 65_536,
        ownUserID: 1000
    )
    static let now: Int64 = 1_767_225_600_000

    static func opened(at ms: Int64 = 500) -> SessionHandshake {
        var h = SessionHandshake(config)
        let r1 = h.handle(.opened(monotonicMilliseconds: ms))
        #expect(r1 == [.armTimer(atMonotonicMilliseconds: ms + 10_000)])
        return h
    }

    static func hello(
        versions: [Int] = Frame.supportedVersions,
        role: ClientRole = .session,
        name: String? = nil,
        appState: String? = nil,
        clientTime: Int64 = now + 1500,
        resume: ResumeBody? = nil
    ) -> HelloBody {
        HelloBody(
            versions: versions,
            client: "test/1",
            role: role,
            name: name,
            appState: appState,
            clientTime: clientTime,
            resume: resume
        )
    }

    static func facts(_ change: (inout SessionHandshake.HelloFacts) -> Void = { _ in }) -> SessionHandshake.HelloFacts {
        var f = SessionHandshake.HelloFacts(serverNowMilliseconds: now, newToken: "0123456789abcdef0123456789abcdef")
        change(&f)
        return f
    }

    /// The one refusal among `actions`, else `nil`.
    static func refusal(_ actions: [SessionHandshake.Action]) -> WireError? {
        for case .refuse(let e) in actions { return e }
        return nil
    }

    static func established(_ actions: [SessionHandshake.Action]) -> SessionHandshake.Established? {
        for case .establish(let e) in actions { return e }
        return nil
    }

    @Test func aNewSessionIsEstablishedAndWelcomed() throws {
        var h = Self.opened()
        let actions = h.handle(.hello(Self.hello(name: "pro"), Self.facts()))
        let e = try #require(Self.established(actions))
        #expect(h.phase == .established && h.isEstablished)
        #expect(e.name == "pro" && e.resumeToken == "0123456789abcdef0123456789abcdef" && e.resumedFrom == nil)
        #expect(e.appState == "foreground" && e.role == .session)
        #expect(e.clientOffsetMilliseconds == 1500)
        #expect(
            e.welcome
                == WelcomeBody(
                    version: Int(Frame.version),
                    session: "s7",
                    name: "pro",
                    resumeToken: e.resumeToken,
                    serverTime: Self.now,
                    resumed: false,
                    maxFrameSize: 65_536
                )
        )
        // The timer is cancelled first, the WELCOME written last, its body the compact encoding of `welcome`.
        #expect(actions.first == .cancelTimer)
        #expect(actions.last == .write(.welcome, body: e.welcome.compactJSON()))
        #expect(try WireJSON.decode(WelcomeBody.self, from: e.welcome.compactJSON()) == e.welcome)
    }

    @Test func withoutANameTheSessionIsNamedByItsID() throws {
        var h = Self.opened()
        let e = try #require(Self.established(h.handle(.hello(Self.hello(appState: "background"), Self.facts()))))
        #expect(e.name == "s7" && e.appState == "background")
    }

    @Test func noCommonVersionIsRefusedNamingBoth() throws {
        var h = Self.opened()
        let actions = h.handle(.hello(Self.hello(versions: [1]), Self.facts()))
        let e = try #require(Self.refusal(actions))
        #expect(e.code == .unsupportedVersion)
        #expect(
            e.message
                == "client speaks versions [1]; this daemon speaks \(Frame.supportedVersions). Upgrade the client or the daemon"
        )
        #expect(h.phase == .refused(.unsupportedVersion) && Self.established(actions) == nil)
        // The version is checked before anything else: a policy refusal does not hide it.
        var g = Self.opened()
        let both = g.handle(
            .hello(Self.hello(versions: [9]), Self.facts { $0.policyRefusal = WireError(.rejected, "down") })
        )
        #expect(Self.refusal(both)?.code == .unsupportedVersion)
    }

    @Test func aFrameBeforeHelloIsRefusedAndASecondHelloToo() throws {
        var h = Self.opened()
        let r2 = h.handle(.frame(.hello))
        #expect(r2.isEmpty)  // the adapter decodes it and feeds `.hello`
        let before = h.handle(.frame(.subscribe))
        #expect(Self.refusal(before) == WireError(.handshakeRequired, "the first frame must be HELLO, got SUBSCRIBE"))
        var g = Self.opened()
        _ = g.handle(.hello(Self.hello(), Self.facts()))
        let r3 = g.handle(.frame(.subscribe))
        #expect(r3.isEmpty)
        let r4 = g.handle(.frame(.hello))
        #expect(Self.refusal(r4)?.code == .duplicateHello)
        let r5 = g.handle(.hello(Self.hello(), Self.facts()))
        #expect(Self.refusal(r5)?.code == .duplicateHello)
    }

    @Test func anUnreadableHelloIsRefusedWithItsError() {
        var h = Self.opened()
        let e = WireError(.invalidBody, "Hello body: field 'clientTime' is missing")
        let r6 = h.handle(.unreadable(e))
        #expect(r6 == [.cancelTimer, .refuse(e)])
        #expect(h.phase == .refused(.invalidBody))
    }

    @Test func theTimeoutRefusesOnlyAnUnfinishedHandshakeAfterItsDeadline() throws {
        var h = Self.opened(at: 500)
        #expect(h.deadlineMilliseconds == 10_500)
        let r7 = h.handle(.timerFired(monotonicMilliseconds: 10_500))
        #expect(r7.isEmpty)  // not yet past it
        let late = h.handle(.timerFired(monotonicMilliseconds: 10_501))
        #expect(
            Self.refusal(late)
                == WireError(.handshakeTimeout, "no complete HELLO within 10000 ms of connecting (--handshake-timeout)")
        )
        var g = Self.opened(at: 500)
        _ = g.handle(.hello(Self.hello(), Self.facts()))
        let r8 = g.handle(.timerFired(monotonicMilliseconds: 99_999))
        #expect(r8.isEmpty)
        #expect(g.isEstablished)
    }

    @Test func adminRoleIsOnlyForTheDaemonsUser() throws {
        var other = Self.opened()
        let refused = other.handle(.hello(Self.hello(role: .admin), Self.facts { $0.peerUserID = 1001 }))
        #expect(Self.refusal(refused)?.code == .notPermitted)
        #expect(Self.refusal(refused)?.message.contains("uid 1000") == true)
        var own = Self.opened()
        #expect(
            Self.established(own.handle(.hello(Self.hello(role: .admin), Self.facts { $0.peerUserID = 1000 }))) != nil
        )
        var unknown = Self.opened()  // no peer credentials (an embedded connection): not refused
        let r9 = unknown.handle(.hello(Self.hello(role: .admin), Self.facts()))
        #expect(Self.established(r9) != nil)
    }

    @Test func namesAreCheckedForFormLiveHoldersAndReservation() throws {
        var h = Self.opened()
        let r10 = h.handle(.hello(Self.hello(name: "s12"), Self.facts()))
        #expect(Self.refusal(r10)?.code == .invalidBody)
        var live = Self.opened()
        let l = live.handle(.hello(Self.hello(name: "pro"), Self.facts { $0.nameIsLive = true }))
        #expect(Self.refusal(l) == WireError(.rejected, "a live session is already named 'pro'; choose another --name"))
        // Reserved for 4.2 s more: the refusal says 5 s (rounded up).
        var reserved = Self.opened()
        let r = reserved.handle(
            .hello(Self.hello(name: "pro"), Self.facts { $0.nameReservedUntilMilliseconds = Self.now + 4200 })
        )
        #expect(
            Self.refusal(r)
                == WireError(
                    .rejected,
                    "the name 'pro' is reserved for a disconnected session that may resume for 5 s more; the phone resumes with its token, or choose another --name"
                )
        )
        // A reservation that ended is no reservation.
        var ended = Self.opened()
        let done = ended.handle(
            .hello(Self.hello(name: "pro"), Self.facts { $0.nameReservedUntilMilliseconds = Self.now })
        )
        #expect(Self.established(done)?.name == "pro")
    }

    @Test func thePhoneComingBackWithItsTokenTakesItsReservedName() throws {
        var h = Self.opened()
        let token = "feedfacefeedfacefeedfacefeedface"
        let actions = h.handle(
            .hello(
                Self.hello(name: "pro", resume: ResumeBody(token: token, topics: ["orders/A1": 3])),
                Self.facts {
                    $0.nameReservedUntilMilliseconds = Self.now + 60_000
                    $0.resume = .init(holder: .disconnected, name: "pro", deadlineMilliseconds: Self.now + 60_000)
                }
            )
        )
        let e = try #require(Self.established(actions))
        #expect(e.resumedFrom == .disconnected && e.resumeToken == token && e.name == "pro" && e.welcome.resumed)
    }

    @Test func aResumeAdoptsTheHeldSessionsNameUnlessTheHelloNamesOne() throws {
        let token = "feedfacefeedfacefeedfacefeedface"
        for holder in [SessionHandshake.ResumeCandidate.Holder.disconnected, .persisted] {
            var h = Self.opened()
            let e = try #require(
                Self.established(
                    h.handle(
                        .hello(
                            Self.hello(resume: ResumeBody(token: token, topics: [:])),
                            Self.facts {
                                $0.resume = .init(holder: holder, name: "duo", deadlineMilliseconds: Self.now + 1)
                            }
                        )
                    )
                )
            )
            #expect(e.name == "duo" && e.resumedFrom == holder && e.resumeToken == token)
        }
    }

    @Test func aLiveHolderIsTakenOverBeforeTheSessionIsEstablished() throws {
        var h = Self.opened()
        let token = "feedfacefeedfacefeedfacefeedface"
        let actions = h.handle(
            .hello(
                Self.hello(resume: ResumeBody(token: token, topics: [:])),
                Self.facts { $0.resume = .init(holder: .live, name: "pro", deadlineMilliseconds: nil) }
            )
        )
        let take = try #require(actions.firstIndex(of: .takeOver(token: token)))
        let establish = try #require(actions.firstIndex { if case .establish = $0 { true } else { false } })
        #expect(take < establish)
        #expect(Self.established(actions)?.resumedFrom == .live)
    }

    /// A resume's `patterns` and the held session's own count together, each once, against `--max-subscriptions`:
    /// past it the HELLO is refused with `tooManySubscriptions` giving the count, the limit and what to do, before
    /// a live holder is taken over. Source: PROTOCOL.md §5.3; review finding (a).
    @Test func aResumePastTheSubscriptionLimitWithTheHeldPatternsIsRefused() throws {
        var config = Self.config
        config.maximumSubscriptions = 3
        let token = "feedfacefeedfacefeedfacefeedface"
        func resume(
            _ patterns: [String]?,
            held: [String],
            holder: SessionHandshake.ResumeCandidate.Holder = .disconnected
        ) -> [SessionHandshake.Action] {
            var h = SessionHandshake(config)
            _ = h.handle(.opened(monotonicMilliseconds: 500))
            return h.handle(
                .hello(
                    Self.hello(resume: ResumeBody(token: token, topics: [:], patterns: patterns)),
                    Self.facts {
                        $0.resume = .init(
                            holder: holder,
                            name: "duo",
                            deadlineMilliseconds: holder == .live ? nil : Self.now + 1,
                            patterns: held
                        )
                    }
                )
            )
        }
        // Within the limit: the union is 3 (b is held and resumed).
        #expect(Self.established(resume(["b", "c", "c"], held: ["a", "b"])) != nil)
        for holder in [SessionHandshake.ResumeCandidate.Holder.disconnected, .persisted, .live] {
            let actions = resume(["c", "d"], held: ["a", "b"], holder: holder)
            #expect(!actions.contains(.takeOver(token: token)))
            #expect(Self.established(actions) == nil)
            let e = try #require(Self.refusal(actions))
            #expect(
                e
                    == WireError(
                        .tooManySubscriptions,
                        "resuming would hold 4 topic patterns (2 held by the session, 2 in HELLO resume.patterns); a session may hold 3 (--max-subscriptions): raise the daemon's --max-subscriptions, or resume with fewer patterns"
                    )
            )
        }
        // A record past the limit by itself (a daemon restarted with a lower one): fewer patterns cannot help.
        for patterns in [nil, ["a"]] as [[String]?] {
            let e = try #require(Self.refusal(resume(patterns, held: ["a", "b", "c", "d"])))
            #expect(e.code == .tooManySubscriptions)
            #expect(e.message.contains("hold 4 topic patterns") && e.message.contains("attach as a new session"))
        }
    }

    @Test func anUnknownOrExpiredTokenIsRefusedAndAnExpiredRecordForgotten() throws {
        let token = "feedfacefeedfacefeedfacefeedface"
        var unknown = Self.opened()
        let u = unknown.handle(.hello(Self.hello(resume: ResumeBody(token: token, topics: [:])), Self.facts()))
        #expect(
            u == [
                .cancelTimer,
                .refuse(WireError(.resumeRejected, "resume token is unknown or expired; attach as a new session")),
            ]
        )
        var expired = Self.opened()
        let x = expired.handle(
            .hello(
                Self.hello(name: "pro", resume: ResumeBody(token: token, topics: [:])),
                Self.facts {
                    $0.resume = .init(holder: .disconnected, name: "pro", deadlineMilliseconds: Self.now)
                    $0.nameReservedUntilMilliseconds = nil
                }
            )
        )
        #expect(x.first == .forgetResume(token: token))
        #expect(Self.refusal(x)?.code == .resumeRejected)
        #expect(expired.phase == .refused(.resumeRejected))
    }

    @Test func refusalsComeInTheDocumentedOrder() {
        // Everything wrong at once; each fix in turn uncovers the next check's refusal.
        var hello = Self.hello(
            versions: [9],
            role: .admin,
            name: "pro",
            appState: "sleeping",
            resume: ResumeBody(token: "x", topics: [:])
        )
        var facts = Self.facts {
            $0.policyRefusal = WireError(.rejected, "down")
            $0.peerUserID = 1001
            $0.nameIsLive = true
            $0.deviceRefusal = WireError(.unknownDevice, "no such device")
        }
        let fixes: [(inout HelloBody, inout SessionHandshake.HelloFacts) -> Void] = [
            { h, _ in h.versions = [Int(Frame.version)] },
            { _, f in f.policyRefusal = nil },
            { _, f in f.peerUserID = 1000 },
            { _, f in f.nameIsLive = false },
            { h, _ in h.appState = nil },
            { _, f in f.deviceRefusal = nil },
        ]
        var seen: [String] = []
        for k in 0...fixes.count {
            if k > 0 { fixes[k - 1](&hello, &facts) }
            var h = Self.opened()
            seen.append(Self.refusal(h.handle(.hello(hello, facts)))?.code.name ?? "established")
        }
        #expect(
            seen == [
                "unsupportedVersion", "rejected", "notPermitted", "rejected", "invalidBody", "unknownDevice",
                "resumeRejected",
            ]
        )
    }
}

/// A generator that returns the values it was given, in order (then zeros).
private struct FixedGenerator: RandomNumberGenerator {
    var values: [UInt64]
    mutating func next() -> UInt64 { values.isEmpty ? 0 : values.removeFirst() }
}

extension SessionHandshakeTests {
    @Test func aTokenIs32LowercaseHexDigitsOfTheGeneratorsBits() {
        var g = FixedGenerator(values: [0x0123_4567_89ab_cdef, 0x0000_0000_ffff_fff0])
        #expect(SessionHandshake.makeToken(using: &g) == "0123456789abcdef00000000fffffff0")
        var system = SystemRandomNumberGenerator()
        let a = SessionHandshake.makeToken(using: &system)
        let b = SessionHandshake.makeToken(using: &system)
        #expect(a.count == 32 && a != b)
        #expect(a.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
    }
}
