import Foundation
import LiveBusDaemon
import LiveBusLoop
import Testing

/// "Who holds the socket" messages say what is there (review finding 11): a livebusd, a process that does not
/// speak the LiveBus protocol, one that does not answer, another user's stale file; and an empty `--socket` is a
/// usage error (2) for every command. Another user's cases without root: OtherUserE2ETests.
@Suite(.serialized)
struct E2ESocketHolderTests {
    static func run(_ args: [String], tool: String = "livebus") throws -> E2ECLIGoldenTests.Run {
        try E2ECLIGoldenTests.run(args, tool: tool)
    }

    /// A listener that answers a HELLO with HTTP is "a process that does not speak the LiveBus protocol", not
    /// "another livebusd"; one that never answers says so; a real livebusd is "another livebusd".
    @Test func livebusdNamesWhatListensOnItsPath() throws {
        let dir = temporaryDirectory("lbsh")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let http = TestListener(path: dir + "/http.sock", reply: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        defer { http.close() }
        let me = getuid()
        #expect(SocketHolder.identify(path: http.path) == .otherProtocol(owner: me, user: me, pid: getpid()))
        let a = try Self.run(["--socket", http.path, "--memory"], tool: "livebusd")
        #expect(a.exit == 3, "\(a.stderr)")
        #expect(
            a.stderr.contains("\(http.path) is held by a process that does not speak the LiveBus protocol (user "),
            "\(a.stderr)"
        )
        #expect(a.stderr.contains("pid \(getpid())"), "\(a.stderr)")
        #expect(!a.stderr.contains("another livebusd"), "\(a.stderr)")

        let silent = TestListener(path: dir + "/silent.sock")
        defer { silent.close() }
        let b = try Self.run(["--socket", silent.path, "--memory"], tool: "livebusd")
        #expect(b.exit == 3, "\(b.stderr)")
        #expect(b.stderr.contains("did not answer a LiveBus HELLO within 1000 ms"), "\(b.stderr)")
        #expect(!b.stderr.contains("another livebusd"), "\(b.stderr)")

        let socket = dir + "/bus.sock"
        let d = try DaemonChild(["--socket", socket, "--memory"], log: dir + "/d.log")
        defer { d.terminate() }
        #expect(waitUntilAnswering(socket), "the daemon did not come up")
        let c = try Self.run(["--socket", socket, "--memory"], tool: "livebusd")
        #expect(c.exit == 3, "\(c.stderr)")
        #expect(
            c.stderr.contains("another livebusd is already serving \(socket) (a running livebusd (user "),
            "\(c.stderr)"
        )
        #expect(c.stderr.contains("pid \(d.process.processIdentifier))"), "\(c.stderr)")
        #expect(SocketProbe.probe(path: socket) == .live)
    }

    /// Another user's stale socket (nothing listening) is named a stale file, not a daemon, by livebusd and
    /// livebus, and is left in place. Needs root (to give the file to another uid).
    @Test(.enabled(if: getuid() == 0, "needs root to give a socket file to another user"))
    func anotherUsersStaleSocketIsCalledStale() throws {
        let dir = temporaryDirectory("lbss")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stale = TestListener(path: dir + "/bus.sock")
        stale.closeKeepingFile()
        chown(stale.path, 65534, 65534)
        let holder = SocketHolder.identify(path: stale.path)
        #expect(holder == .foreignStale(owner: 65534))
        let d = try Self.run(["--socket", stale.path, "--memory"], tool: "livebusd")
        #expect(d.exit == 3, "\(d.stderr)")
        let what = "\(stale.path) is a stale socket file of user \(userName(uid: 65534)) (nothing listening)"
        #expect(d.stderr.contains(what + "; it is not removed"), "\(d.stderr)")
        #expect(!d.stderr.contains("a daemon of user"), "\(d.stderr)")
        let s = try Self.run(["status", "--socket", stale.path])
        #expect(s.exit == 3, "\(s.stderr)")
        #expect(s.stderr.contains(what + ": no daemon runs there"), "\(s.stderr)")
        let doctor = try Self.run(["doctor", "--socket", stale.path])
        #expect(doctor.stdout.contains(what), "\(doctor.stdout)")
        #expect(SocketProbe.owner(of: stale.path) == 65534, "the other user's socket file is still there")
    }

    /// `--socket ''` (and `--socket=`) is a usage error, exit 2, for livebusd and every command that takes it.
    @Test func emptySocketIsAUsageErrorEverywhere() throws {
        let cases: [([String], String)] = [
            (["status", "--socket", ""], "livebus"), (["status", "--socket="], "livebus"),
            (["doctor", "--socket", ""], "livebus"), (["attach", "--socket", ""], "livebus"),
            (["order", "list", "--socket", ""], "livebus"), (["watch", "--socket", ""], "livebus"),
            (["fault", "list", "--socket", ""], "livebus"), (["--socket", "", "--memory"], "livebusd"),
        ]
        for (argv, tool) in cases {
            let r = try Self.run(argv, tool: tool)
            #expect(r.exit == 2, "\(tool) \(argv): exit \(r.exit) \(r.stderr)")
            #expect(r.stderr.contains("--socket is empty"), "\(tool) \(argv): \(r.stderr)")
        }
    }
}

extension TestListener {
    /// Closes the listening socket and leaves its file: a stale socket, as a `kill -9`ed daemon leaves.
    func closeKeepingFile() { closeDescriptor() }
}
