import Foundation
import LiveBusLoop
import Testing

/// Files livebusd writes next to its socket or in a shared place (fresh-user review F1, F2): `SOCKET.dashboard`
/// and the APNs CA are never written through a link or into another user's file, nor taken from a place others
/// can write; refused before anything starts, with exit 3 and what to do.
@Suite(.serialized)
struct E2ESharedFilesTests {
    static var root: String { E2EDashboardTests.root }

    static func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    /// Runs livebusd expecting a refusal: a daemon that started instead (the bug) is stopped after at most 20 s
    /// and reported as exit -1, so the test fails instead of waiting for it forever.
    static func livebusd(_ args: [String]) throws -> E2ECLIGoldenTests.Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: E2ECLIGoldenTests.bin + "/livebusd")
        p.arguments = args
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        for _ in 0..<2000 where p.isRunning { usleep(10_000) }
        let started = p.isRunning
        if started { p.terminate() }
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return .init(
            exit: started ? -1 : p.terminationStatus,
            stdout: "",
            stderr: String(decoding: e, as: UTF8.self) + (started ? "\n(the daemon started)" : "")
        )
    }

    static func dashboardArgs(_ socket: String) -> [String] {
        ["--socket", socket, "--memory", "--http", "127.0.0.1:0", "--http-root", root]
    }

    /// F1: a link planted at SOCKET.dashboard (in a mode-1777 directory) is refused; its target is not replaced and
    /// nothing is bound.
    @Test func dashboardFileThatIsALinkIsRefused() throws {
        let dir = sharedDirectory("lbdl")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/v3.sock"
        let victim = dir + "/victim"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        #expect(symlink(victim, socket + ".dashboard") == 0)
        let r = try Self.livebusd(Self.dashboardArgs(socket))
        #expect(r.exit == 3, "\(r.stderr)")
        #expect(r.stderr.contains("\(socket).dashboard is a symbolic link (to \(victim))"), "\(r.stderr)")
        #expect(r.stderr.contains("rm \(socket).dashboard"), "\(r.stderr)")
        #expect(!r.stderr.contains("livebusd listening"), "refused before the daemon started: \(r.stderr)")
        #expect(Self.read(victim) == "precious\n", "the link's target is untouched")
        #expect(access(socket, F_OK) != 0, "nothing was bound")
    }

    /// F1: a file of another user at SOCKET.dashboard (world-writable, so root could write into it) is refused and
    /// gets no token; `livebus dashboard` does not open a URL from such a file either.
    @Test func dashboardFileOfAnotherUserIsRefused() throws {
        guard getuid() == 0 else {
            print("skipped: needs root to give a file to another uid")
            return
        }
        let dir = sharedDirectory("lbdo")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/v3.sock"
        let file = socket + ".dashboard"
        try "http://attacker.example/\n".write(toFile: file, atomically: false, encoding: .utf8)
        chmod(file, 0o666)
        chown(file, 65534, 65534)
        let r = try Self.livebusd(Self.dashboardArgs(socket))
        #expect(r.exit == 3, "\(r.stderr)")
        #expect(
            r.stderr.contains("\(file) is owned by user \(userName(uid: 65534)), not by you (\(userName(uid: 0)))"),
            "\(r.stderr)"
        )
        #expect(r.stderr.contains("read the dashboard's token"), "\(r.stderr)")
        #expect(Self.read(file) == "http://attacker.example/\n", "no token was written into it")
        let open = try E2ECLIGoldenTests.run(["dashboard", "--socket", socket, "--print"])
        #expect(open.exit == 3, "\(open.stdout)\(open.stderr)")
        #expect(open.stderr.contains("\(file) is owned by user \(userName(uid: 65534))"), "\(open.stderr)")
        #expect(!open.stdout.contains("attacker"), "\(open.stdout)")
        unlink(file)
        #expect(symlink(dir + "/elsewhere", file) == 0)
        let link = try E2ECLIGoldenTests.run(["dashboard", "--socket", socket, "--print"])
        #expect(link.exit == 3 && link.stderr.contains("\(file) is a symbolic link"), "\(link.stderr)")
    }

    /// F1: an own file at the name is replaced by a new 0600 file (not written into), removed at exit while it is
    /// still the daemon's, and left in place when it has been replaced since.
    @Test func dashboardFileIsNewPrivateAndRemovedOnlyWhileOurs() throws {
        let dir = temporaryDirectory("lbdp")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let file = socket + ".dashboard"
        try "old\n".write(toFile: file, atomically: false, encoding: .utf8)
        chmod(file, 0o644)
        var before = stat()
        #expect(lstat(file, &before) == 0)
        func waitForToken() -> Bool {
            for _ in 0..<1000 where !(Self.read(file) ?? "").contains("token=") { usleep(10_000) }
            return (Self.read(file) ?? "").contains("token=")
        }
        var d = try DaemonChild(Self.dashboardArgs(socket), log: dir + "/d.log")
        #expect(waitForToken(), "\(Self.read(dir + "/d.log") ?? "")")
        var st = stat()
        #expect(lstat(file, &st) == 0)
        #expect(st.st_ino != before.st_ino, "a new file, renamed over the old one")
        #expect(st.st_mode & 0o7777 == 0o600 && st.st_uid == getuid())
        d.terminate()
        #expect(access(file, F_OK) != 0, "removed at exit")

        d = try DaemonChild(Self.dashboardArgs(socket), log: dir + "/d2.log")
        #expect(waitForToken(), "\(Self.read(dir + "/d2.log") ?? "")")
        try "someone else's\n".write(toFile: dir + "/other", atomically: false, encoding: .utf8)
        #expect(rename(dir + "/other", file) == 0)
        d.terminate()
        #expect(Self.read(file) == "someone else's\n", "a file that replaced it is left in place")
    }

    /// F2: an APNs CA directory open to others, another user's, or holding a key that is not the user's private
    /// file (or is a link) is refused before anything starts (exit 3), saying what to fix; a new one is made 0700
    /// with its key 0600.
    @Test func apnsCADirectoryMustBePrivate() throws {
        let dir = temporaryDirectory("lbca")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ca = dir + "/ca"
        let key = ca + "/apns-ca-key.pem"
        let args = ["--socket", dir + "/bus.sock", "--memory", "--apns", "127.0.0.1:0", "--apns-ca-dir", ca]

        // A new directory: 0700, the key 0600; the pair it made is reused by the next start.
        let first = try DaemonChild(args, log: dir + "/first.log")
        for _ in 0..<1000 where !(Self.read(dir + "/first.log") ?? "").contains("livebusd listening") {
            usleep(10_000)
        }
        first.terminate()
        var st = stat()
        #expect(lstat(ca, &st) == 0 && st.st_mode & 0o777 == 0o700, "\(Self.read(dir + "/first.log") ?? "")")
        #expect(lstat(key, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(lstat(ca + "/apns-ca.pem", &st) == 0 && st.st_mode & 0o777 == 0o644)
        let pair = Self.read(key)

        // The reviewer's case: a mode-777 directory with a CA in it.
        chmod(ca, 0o777)
        var r = try Self.livebusd(args)
        #expect(r.exit == 3, "\(r.stderr)")
        #expect(r.stderr.contains("\(ca) has mode 777"), "\(r.stderr)")
        #expect(r.stderr.contains("chmod 700 \(ca)"), "\(r.stderr)")
        #expect(!r.stderr.contains("livebusd listening"), "\(r.stderr)")
        chmod(ca, 0o700)

        chmod(key, 0o644)
        r = try Self.livebusd(args)
        #expect(r.exit == 3, "\(r.stderr)")
        #expect(r.stderr.contains("\(key) has mode 644") && r.stderr.contains("chmod 600 \(key)"), "\(r.stderr)")
        chmod(key, 0o600)

        #expect(rename(key, dir + "/key.pem") == 0)
        #expect(symlink(dir + "/key.pem", key) == 0)
        r = try Self.livebusd(args)
        #expect(r.exit == 3, "\(r.stderr)")
        #expect(r.stderr.contains("\(key) is a symbolic link (to \(dir)/key.pem)"), "\(r.stderr)")
        unlink(key)
        #expect(rename(dir + "/key.pem", key) == 0)

        if getuid() == 0 {
            chown(key, 65534, 65534)
            r = try Self.livebusd(args)
            #expect(r.exit == 3, "\(r.stderr)")
            #expect(r.stderr.contains("\(key) is owned by user \(userName(uid: 65534))"), "\(r.stderr)")
            chown(key, 0, 0)
            chown(ca, 65534, 65534)
            r = try Self.livebusd(args)
            #expect(r.exit == 3, "\(r.stderr)")
            #expect(r.stderr.contains("\(ca) is owned by user \(userName(uid: 65534))"), "\(r.stderr)")
            chown(ca, 0, 0)
        }
        #expect(Self.read(key) == pair, "nothing refused was rewritten")
        let again = try DaemonChild(args, log: dir + "/again.log")
        for _ in 0..<1000 where !(Self.read(dir + "/again.log") ?? "").contains("livebusd listening") {
            usleep(10_000)
        }
        again.terminate()
        #expect((Self.read(dir + "/again.log") ?? "").contains("livebusd listening"))
        #expect(Self.read(key) == pair, "the private pair is reused")
    }
}
