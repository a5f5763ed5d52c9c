import Foundation
import LiveBusClock
import LiveBusCore
@testable import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// Issue 14, "name hijack": a disconnected phone's name is reserved for it while it may resume; `all`, `current`
/// and `s<digits>` are never names. Over the daemon's real socket, with raw connections.
@Suite(.serialized)
struct E2ENameReservationTests {
    /// HELLO as a phone named `name`, optionally resuming with `token`.
    static func phoneHello(_ name: String?, resume token: String? = nil) -> Frame {
        let body = HelloBody(
            client: "raw-test",
            role: .session,
            name: name,
            device: "iphone-16-pro",
            posture: PostureBody(foldState: "flat", orientation: "portrait"),
            appState: "foreground",
            clientTime: SystemServerClock().now().millisecondsSinceEpoch,
            resume: token.map { ResumeBody(token: $0, topics: [:]) }
        )
        return Frame(type: .hello, body: try! WireJSON.encode(body))
    }

    /// Every raw peer a test made: kept until the bus shuts down (a peer's callbacks hold it unowned).
    nonisolated(unsafe) static var keep: [RawPeer] = []

    /// Connects, sends `hello` and waits for WELCOME or ERROR.
    static func attach(_ bus: TestBus, _ hello: Frame) -> RawPeer? {
        var peer: RawPeer?
        RawPeer.connect(bus) { p in
            peer = p
            keep.append(p)
            p.send(hello)
        }
        bus.run(timeoutMs: 3000) {
            peer.map { p in p.frames.contains { $0.type == .welcome || $0.type == .error } } ?? false
        }
        return peer
    }

    static func welcome(_ p: RawPeer?) -> WelcomeBody? {
        p?.frames.first { $0.type == .welcome }.flatMap { try? WireJSON.decode(WelcomeBody.self, from: $0.body) }
    }

    /// Drops the connection without BYE (a phone in a tunnel) and lets the daemon notice.
    static func drop(_ bus: TestBus, _ p: RawPeer?) {
        p?.connection.close()
        _ = bus.run(timeoutMs: 300) { false }
    }

    @Test func disconnectedPhonesNameIsReservedUntilItResumes() throws {
        let bus = try TestBus(scenario: nil)
        defer {
            bus.shutdown()
            Self.keep.removeAll()
        }
        let real = Self.attach(bus, Self.phoneHello("pro"))
        let token = try #require(Self.welcome(real)?.resumeToken)
        Self.drop(bus, real)

        let impostor = Self.attach(bus, Self.phoneHello("pro"))
        #expect(Self.welcome(impostor) == nil)
        let refusal = try #require(impostor?.errors.first)
        #expect(refusal.name == "rejected")
        #expect(refusal.message.contains("the name 'pro' is reserved for a disconnected session"), "\(refusal.message)")
        // A forged token does not take it either.
        let forged = Self.attach(bus, Self.phoneHello("pro", resume: String(repeating: "0", count: 32)))
        #expect(Self.welcome(forged) == nil)
        #expect(forged?.errors.first?.name == "rejected")

        let back = Self.attach(bus, Self.phoneHello("pro", resume: token))
        let w = try #require(Self.welcome(back), "the real phone resumes: \(back?.errors ?? [])")
        #expect(w.resumed)
        #expect(w.name == "pro")
    }

    @Test func nameIsFreeOnceTheResumeWindowPassedOrAfterBye() throws {
        let bus = try TestBus(scenario: nil) { $0.resumeWindowMilliseconds = 400 }
        defer {
            bus.shutdown()
            Self.keep.removeAll()
        }
        let first = Self.attach(bus, Self.phoneHello("pro"))
        let token = try #require(Self.welcome(first)?.resumeToken)
        Self.drop(bus, first)
        #expect(Self.welcome(Self.attach(bus, Self.phoneHello("pro"))) == nil, "reserved within the window")
        _ = bus.run(timeoutMs: 1500) { false }  // the window (400 ms) and a sweep (every 1 s) pass
        let late = Self.attach(bus, Self.phoneHello("late", resume: token))
        #expect(late?.errors.first?.name == "resumeRejected", "an expired token is forgotten")
        let next = Self.attach(bus, Self.phoneHello("pro"))
        #expect(Self.welcome(next)?.name == "pro", "\(next?.errors ?? [])")

        // A phone that says BYE is over: its name is free at once.
        let duo = Self.attach(bus, Self.phoneHello("duo"))
        duo?.send(Frame(type: .bye, body: try WireJSON.encode(ByeBody(reason: "client exit"))))
        _ = bus.run(timeoutMs: 200) { false }
        #expect(Self.welcome(Self.attach(bus, Self.phoneHello("duo")))?.name == "duo")
    }

    /// After a restart on the data directory, the records found there reserve their names for the resume window
    /// from the start; the phone's own token takes its name back even when an older record of that name is there.
    @Test func restartedDaemonReservesRecordedNames() throws {
        let dir = temporaryDirectory("lbnr")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try SQLiteStore(directory: dir + "/data")
            let older = ResumeRecord(
                token: "a" + String(repeating: "0", count: 31),
                name: "pro",
                patterns: [],
                lastSent: [:]
            )
            let newer = ResumeRecord(
                token: "b" + String(repeating: "0", count: 31),
                name: "pro",
                patterns: [],
                lastSent: [:]
            )
            _ = store.commitInTurn(StoreBatch(resumeRecords: [older], nowMilliseconds: 1))
            _ = store.commitInTurn(StoreBatch(resumeRecords: [newer], nowMilliseconds: 2))
        }
        let bus = try TestBus(scenario: nil) { $0.dataDirectory = dir + "/data" }
        defer {
            bus.shutdown()
            Self.keep.removeAll()
        }
        let impostor = Self.attach(bus, Self.phoneHello("pro"))
        #expect(impostor?.errors.first?.name == "rejected", "\(impostor?.errors ?? [])")
        let back = Self.attach(bus, Self.phoneHello("pro", resume: "b" + String(repeating: "0", count: 31)))
        #expect(Self.welcome(back)?.resumed == true, "\(back?.errors ?? [])")
    }

    @Test func addressingWordsAndSessionIDsAreNotNames() throws {
        let bus = try TestBus(scenario: nil)
        defer {
            bus.shutdown()
            Self.keep.removeAll()
        }
        for name in ["all", "current", "s1", "s12345"] {
            let p = Self.attach(bus, Self.phoneHello(name))
            let e = try #require(p?.errors.first, "\(name)")
            #expect(e.name == "invalidBody", "\(name)")
            #expect(e.message.contains("field 'name'") && e.message.contains("'\(name)'"), "\(e.message)")
        }
        for name in ["s", "s1x", "alls", "session1"] {
            #expect(Self.welcome(Self.attach(bus, Self.phoneHello(name)))?.name == name, "\(name) is a name")
        }
    }

    /// The CLI refuses them before it connects (exit 2).
    @Test func cliRefusesReservedNamesLocally() throws {
        for name in ["all", "current", "s3"] {
            let r = try E2ECLIGoldenTests.run(["attach", "--name", name, "--socket", "/tmp/livebus-none.sock"])
            #expect(r.exit == 2, "\(name): \(r.stderr)")
            #expect(r.stderr.contains("--name '\(name)'"), "\(r.stderr)")
        }
    }
}
