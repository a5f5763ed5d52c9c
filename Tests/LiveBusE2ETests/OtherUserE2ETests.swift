import Foundation
@testable import LiveBusDaemon
import LiveBusLoop
import LiveBusWire
import Testing

/// A throw-away local user made by the test (`useradd -M -s /usr/sbin/nologin livebus-t<random>`), removed with
/// `userdel` afterwards, and the built binaries as that user can run them. Only root can make one: every caller
/// skips with a message otherwise. Source: issue 14 "Another local user" and "Done when".
final class OtherUser {
    let name: String
    let uid: UInt32
    let gid: UInt32
    /// A directory holding `livebus` and `livebusd` (and their resource bundles) that the user may execute.
    let bin: String
    private var copiedBin: String?

    /// `nil` when not root, or when `useradd` is missing; the reason is printed.
    static func make() throws -> OtherUser? {
        guard getuid() == 0 else {
            print(
                "skipped: needs root to create a throw-away user (run the tests as root to cover issue 14's second-user cases)"
            )
            return nil
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd") else {
            print("skipped: useradd is not installed")
            return nil
        }
        return try OtherUser()
    }

    private init() throws {
        var g = SystemRandomNumberGenerator()
        name = "livebus-t\(UInt32.random(in: 0...UInt32.max, using: &g) % 1_000_000)"
        // useradd fails at once while another process holds /etc/passwd's lock (tests run in parallel): retry.
        var add = try OtherUser.sh("/usr/sbin/useradd", ["-M", "-s", "/usr/sbin/nologin", name])
        for _ in 0..<20 where add.exit != 0 && add.stderr.contains("lock") {
            usleep(100_000)
            add = try OtherUser.sh("/usr/sbin/useradd", ["-M", "-s", "/usr/sbin/nologin", name])
        }
        guard add.exit == 0, let pw = getpwnam(name) else {
            throw DaemonError("useradd \(name) failed: \(add.stderr)")
        }
        uid = pw.pointee.pw_uid
        gid = pw.pointee.pw_gid
        let original = E2ECLIGoldenTests.bin
        bin = original
        if try run(original + "/livebus", ["--version"]).exit != 0 {
            // The build directory is not reachable by the user: a 0755 copy of the binaries and resources.
            let copy = temporaryDirectory("lbbin")
            chmod(copy, 0o755)
            for item in try FileManager.default.contentsOfDirectory(atPath: original)
            where item == "livebus" || item == "livebusd" || item.hasSuffix(".resources") {
                _ = try OtherUser.sh("/bin/cp", ["-a", original + "/" + item, copy + "/"])
            }
            _ = try OtherUser.sh("/bin/chmod", ["-R", "a+rX", copy])
            copiedBin = copy
        }
    }

    /// The directory the user's binaries are in (a copy when the build directory is not reachable).
    var binaries: String { copiedBin ?? bin }

    deinit {
        // userdel, too, fails while /etc/passwd is locked by a parallel test: retry until the user is gone.
        for _ in 0..<20 {
            _ = try? OtherUser.sh("/usr/sbin/userdel", [name])
            if getpwnam(name) == nil { break }
            usleep(100_000)
        }
        if let copiedBin { try? FileManager.default.removeItem(atPath: copiedBin) }
    }

    struct Run {
        var exit: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a command to completion, as root (the test's user).
    static func sh(_ tool: String, _ args: [String], environment: [String: String]? = nil) throws -> Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        if let environment { p.environment = environment }
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Run(
            exit: p.terminationStatus,
            stdout: String(decoding: o, as: UTF8.self),
            stderr: String(decoding: e, as: UTF8.self)
        )
    }

    /// The environment the user's processes get: no `LIVEBUS_SOCKET` or `XDG_RUNTIME_DIR`, so defaults apply.
    static let environment = ["PATH": "/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8"]

    /// `setpriv` arguments that run `tool` as this user (no supplementary groups).
    func asUser(_ tool: String, _ args: [String]) -> [String] {
        ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", tool] + args
    }

    /// Runs `tool` as this user to completion.
    func run(_ tool: String, _ args: [String]) throws -> Run {
        try OtherUser.sh("/usr/bin/setpriv", asUser(tool, args), environment: OtherUser.environment)
    }

    /// Starts `livebusd` as this user, logging to `log`.
    func daemon(_ args: [String], log: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = asUser(binaries + "/livebusd", args)
        p.environment = OtherUser.environment
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        p.standardError = FileHandle(forWritingAtPath: log)!
        p.standardOutput = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return p
    }
}

/// A directory like /tmp: every user may create files in it (mode 1777).
func sharedDirectory(_ prefix: String) -> String {
    let d = temporaryDirectory(prefix)
    chmod(d, 0o1777)
    return d
}

func waitLive(_ socket: String, user: UInt32 = getuid()) -> Bool {
    for _ in 0..<500 where SocketProbe.probe(path: socket, user: user) != .live { usleep(10_000) }
    return SocketProbe.probe(path: socket, user: user) == .live
}

func stop(_ p: Process) {
    guard p.isRunning else { return }
    p.terminate()
    for _ in 0..<150 where p.isRunning { usleep(20_000) }
    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
    p.waitUntilExit()
}

/// Issue 14, "Another local user" and "Permission problems misread", over real processes and a second user.
@Suite(.serialized)
struct E2EOtherUserTests {
    static var livebus: String { E2ECLIGoldenTests.bin + "/livebus" }
    static var livebusd: String { E2ECLIGoldenTests.bin + "/livebusd" }

    /// Socket theft: another user's livebusd started on the path of a live daemon in a shared directory gets
    /// "permission denied" on its probe, and must neither delete the socket nor take the path. The victim keeps
    /// serving; the other user's status and doctor say whose daemon it is instead of "no daemon" or "stale".
    @Test func anotherUsersDaemonDoesNotTakeALiveSocket() throws {
        guard let other = try OtherUser.make() else { return }
        let dir = sharedDirectory("lbth")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let victim = try DaemonChild(["--socket", socket, "--memory"], log: dir + "/victim.log")
        defer { victim.terminate() }
        #expect(waitLive(socket))

        let thief = try other.run(other.binaries + "/livebusd", ["--socket", socket, "--memory"])
        #expect(thief.exit != 0)
        // It cannot connect (mode 0600), but /proc/net/unix lists a listener: not "stale", not "a livebusd".
        #expect(
            thief.stderr.contains("\(socket) is a socket of user root (uid 0) that a process is listening on"),
            "\(thief.stderr)"
        )
        #expect(SocketProbe.probe(path: socket) == .live, "the victim's socket is still there and served")
        let status = try OtherUser.sh(Self.livebus, ["status", "--socket", socket])
        #expect(status.exit == 0, "the victim keeps serving: \(status.stderr)")

        // Permission problems are named as such, as the other user sees them.
        let theirStatus = try other.run(other.binaries + "/livebus", ["status", "--socket", socket])
        #expect(theirStatus.exit == 3)
        #expect(theirStatus.stderr.contains("a daemon of user root (uid 0) owns this socket"), "\(theirStatus.stderr)")
        #expect(!theirStatus.stderr.contains("no daemon"), "\(theirStatus.stderr)")
        let attach = try other.run(other.binaries + "/livebus", ["attach", "--socket", socket, "--duration", "1s"])
        #expect(attach.exit == 3)
        #expect(attach.stderr.contains("a daemon of user root (uid 0) owns this socket"), "\(attach.stderr)")
        let doctor = try other.run(other.binaries + "/livebus", ["doctor", "--socket", socket])
        #expect(doctor.stdout.contains("a daemon of user root (uid 0) owns this socket"), "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("stale"), "\(doctor.stdout)")
        #expect(SocketProbe.probe(path: socket) == .live)
    }

    /// A socket file of another user is never removed, even when nothing listens on it.
    @Test func anotherUsersStaleSocketIsNotRemoved() throws {
        guard let other = try OtherUser.make() else { return }
        let dir = sharedDirectory("lbst")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/bus.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(fd)
        chown(path, other.uid, other.gid)
        #expect(SocketProbe.probe(path: path) == .foreign(owner: other.uid))
        let r = try OtherUser.sh(Self.livebusd, ["--socket", path, "--memory"])
        #expect(r.exit == 3, "\(r.stderr)")
        // Named as what it is: a stale file, no daemon (review finding 11).
        let stale = "\(path) is a stale socket file of user \(other.name) (uid \(other.uid)) (nothing listening)"
        #expect(r.stderr.contains(stale + "; it is not removed"), "\(r.stderr)")
        #expect(!r.stderr.contains("a daemon of user"), "\(r.stderr)")
        let status = try OtherUser.sh(Self.livebus, ["status", "--socket", path])
        #expect(status.exit == 3, "\(status.stderr)")
        #expect(status.stderr.contains(stale + ": no daemon runs there"), "\(status.stderr)")
        #expect(SocketProbe.owner(of: path) == other.uid, "the other user's socket file is still there")
        // The other way round: root's stale socket (mode 0600), which the other user may not connect to (EACCES):
        // /proc/net/unix lists no listener on it, so it is stale too, not "a daemon".
        chown(path, 0, 0)
        chmod(path, 0o600)
        let theirs = try other.run(other.binaries + "/livebusd", ["--socket", path, "--memory"])
        #expect(theirs.exit == 3, "\(theirs.stderr)")
        #expect(
            theirs.stderr.contains("\(path) is a stale socket file of user root (uid 0) (nothing listening)"),
            "\(theirs.stderr)"
        )
        #expect(SocketProbe.owner(of: path) == 0, "root's socket file is still there")
    }

    /// Another user's APNs endpoint socket (EACCES on connect) is named as theirs, as the bus socket is, not as a
    /// daemon without --apns-socket (review finding 10).
    @Test func anotherUsersAPNsSocketIsNamedAsTheirs() throws {
        guard let other = try OtherUser.make() else { return }
        let dir = sharedDirectory("lbas")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/apns.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        listen(fd, 4)
        defer { close(fd) }
        chmod(path, 0o600)
        let body = dir + "/u.json"
        try #"{"aps":{"event":"update","content-state":{}}}"#.write(toFile: body, atomically: true, encoding: .utf8)
        chmod(body, 0o644)
        let r = try other.run(
            other.binaries + "/livebus",
            ["push", body, "--via", "http2", "--token", String(repeating: "0", count: 64), "--apns-socket", path]
        )
        #expect(r.exit == 3, "\(r.stderr)")
        #expect(r.stderr.contains("a daemon of user root (uid 0) owns this socket (\(path))"), "\(r.stderr)")
        #expect(r.stderr.contains("livebusd --apns-socket PATH"), "\(r.stderr)")
        #expect(!r.stderr.contains("is livebusd running"), "\(r.stderr)")
    }

    /// A socket file of the daemon's own user on which connect fails with EACCES (mode 0000) is not provably stale:
    /// it is refused, not removed.
    @Test func ownSocketThatDeniesConnectIsNotRemoved() throws {
        guard let user = try OtherUser.make() else { return }
        let dir = sharedDirectory("lbac")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/bus.sock"
        let made = try user.run(
            "/usr/bin/python3",
            ["-c", "import os,socket; s=socket.socket(socket.AF_UNIX); s.bind('\(path)'); os.chmod('\(path)', 0)"]
        )
        #expect(made.exit == 0, "\(made.stderr)")
        let r = try user.run(user.binaries + "/livebusd", ["--socket", path, "--memory"])
        #expect(r.exit == 3)
        #expect(
            r.stderr.contains("\(path) is a socket that cannot be probed (connect: Permission denied)"),
            "\(r.stderr)"
        )
        #expect(SocketProbe.owner(of: path) == user.uid, "the socket file is still there")
    }

    /// Squatting: a `/tmp/livebus-<uid>` made by someone else (or open to others, or a symbolic link) is refused by
    /// the daemon and the CLI of the user it would serve, with what to do; a private one is used.
    @Test func squattedDefaultDirectoryIsRefused() throws {
        guard let victim = try OtherUser.make() else { return }
        let squat = SocketPath.fallbackDirectory(uid: victim.uid)
        try? FileManager.default.removeItem(atPath: squat)
        defer { try? FileManager.default.removeItem(atPath: squat) }
        #expect(mkdir(squat, 0o755) == 0)  // made by root: another user than the victim
        var d = try victim.run(victim.binaries + "/livebusd", ["--memory"])
        #expect(d.exit == 3)
        #expect(d.stderr.contains("\(squat) is owned by user root (uid 0), not by you"), "\(d.stderr)")
        #expect(access(squat + "/livebus.sock", F_OK) != 0, "nothing was bound in the squatted directory")
        let status = try victim.run(victim.binaries + "/livebus", ["status"])
        #expect(status.exit == 3)
        #expect(status.stderr.contains("\(squat) is owned by user root (uid 0)"), "\(status.stderr)")
        let doctor = try victim.run(victim.binaries + "/livebus", ["doctor"])
        #expect(doctor.stdout.contains("✗ socket directory is private to you — \(squat) is owned by user root"))

        chown(squat, victim.uid, victim.gid)  // the victim's own, but open to others
        d = try victim.run(victim.binaries + "/livebusd", ["--memory"])
        #expect(d.exit == 3)
        #expect(d.stderr.contains("\(squat) has mode 755"), "\(d.stderr)")

        rmdir(squat)
        #expect(symlink("/tmp", squat) == 0)
        d = try victim.run(victim.binaries + "/livebusd", ["--memory"])
        #expect(d.exit == 3)
        #expect(d.stderr.contains("\(squat) is a symbolic link"), "\(d.stderr)")
        unlink(squat)

        // No directory: the daemon creates it 0700 and serves the default path; its user's CLI reaches it.
        let logDir = temporaryDirectory("lbsq")
        defer { try? FileManager.default.removeItem(atPath: logDir) }
        let p = try victim.daemon(["--memory"], log: logDir + "/daemon.log")
        defer { stop(p) }
        let sock = squat + "/livebus.sock"
        #expect(waitLive(sock, user: victim.uid))
        var st = stat()
        #expect(lstat(squat, &st) == 0 && st.st_uid == victim.uid && st.st_mode & 0o777 == 0o700)
        let ok = try victim.run(victim.binaries + "/livebus", ["status"])
        #expect(ok.exit == 0, "\(ok.stderr)")
    }

    /// The CLI checks the daemon's user (SO_PEERCRED) before it sends anything: a socket served by another user's
    /// process is refused with exit 3, and that process receives no HELLO.
    @Test func cliRefusesADaemonOfAnotherUser() throws {
        guard let other = try OtherUser.make() else { return }
        let dir = sharedDirectory("lbpc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let log = dir + "/impostor.log"
        let impostor = try other.daemon(["--socket", socket, "--memory", "--log-level", "debug"], log: log)
        defer { stop(impostor) }
        #expect(waitLive(socket, user: other.uid))
        // The file is made to look like ours: only the peer's credentials tell the impostor apart.
        chown(socket, getuid(), getgid())
        #expect(SocketProbe.probe(path: socket) == .live)
        for args in [["status"], ["order", "list"], ["watch", "--duration", "1s"], ["attach", "--duration", "2s"]] {
            let r = try OtherUser.sh(Self.livebus, args + ["--socket", socket])
            #expect(r.exit == 3, "\(args): \(r.stderr)")
            #expect(
                r.stderr.contains("is served by a process of user \(other.name) (uid \(other.uid))"),
                "\(args): \(r.stderr)"
            )
            #expect(r.stderr.contains("nothing was sent"), "\(args): \(r.stderr)")
        }
        // The Python client checks the same (SO_PEERCRED) before its HELLO.
        let py = try OtherUser.sh(
            "/usr/bin/python3",
            [
                E2ECLIGoldenTests.root.appendingPathComponent("tools/pyclient/livebus_client.py").path, "attach",
                "--socket", socket, "--no-reconnect",
            ]
        )
        #expect(py.exit == 3, "\(py.stderr)")
        #expect(py.stderr.contains("is served by a process of uid \(other.uid)"), "\(py.stderr)")
        usleep(200_000)
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(!text.contains("session attached"), "\(text)")
        #expect(!text.contains("protocol error"), "a HELLO reached the impostor: \(text)")
        #expect(text.contains("session closed"), "the connections were made (and closed unused): \(text)")
    }

    /// Fresh-user review F1 as the reviewer ran it: another user pre-creates a world-writable SOCKET.dashboard in a
    /// shared directory; root's livebusd refuses it (exit 3) instead of writing its dashboard token into it, so that
    /// user never reads the token (and cannot drive root's phones through /api/command).
    @Test func dashboardFileOfAnotherUserGetsNoToken() throws {
        guard let other = try OtherUser.make() else { return }
        let dir = sharedDirectory("lbdt")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/v3.sock"
        let file = socket + ".dashboard"
        let made = try other.run("/bin/sh", ["-c", "umask 0; : > '\(file)'"])
        #expect(made.exit == 0 && SocketProbe.owner(of: file) == other.uid, "\(made.stderr)")
        let r = try E2ESharedFilesTests.livebusd(
            ["--socket", socket, "--memory", "--http", "127.0.0.1:0", "--http-root", E2EDashboardTests.root]
        )
        #expect(r.exit == 3, "\(r.stderr)")
        #expect(r.stderr.contains("\(file) is owned by user \(other.name) (uid \(other.uid))"), "\(r.stderr)")
        let read = try other.run("/bin/cat", [file])
        #expect(read.exit == 0 && !read.stdout.contains("token="), "\(read.stdout)")
    }

    /// A data directory, or a database in it, owned by another user is refused, naming the path.
    @Test func dataDirectoryOfAnotherUserIsRefused() throws {
        guard let other = try OtherUser.make() else { return }
        let dir = temporaryDirectory("lbdo")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let data = dir + "/data"
        #expect(mkdir(data, 0o700) == 0)
        chown(data, other.uid, other.gid)
        var r = try OtherUser.sh(Self.livebusd, ["--socket", dir + "/bus.sock", "--data-dir", data])
        #expect(r.exit != 0)
        #expect(r.stderr.contains("the data directory \(data) is owned by user \(other.name)"), "\(r.stderr)")
        #expect(access(data + "/livebus.db", F_OK) != 0, "nothing was written there")

        chown(data, 0, 0)
        let theirs = dir + "/theirs.db"
        _ = FileManager.default.createFile(atPath: theirs, contents: nil)
        chown(theirs, other.uid, other.gid)
        #expect(symlink(theirs, data + "/livebus.db") == 0)
        r = try OtherUser.sh(Self.livebusd, ["--socket", dir + "/bus.sock", "--data-dir", data])
        #expect(r.exit != 0)
        #expect(r.stderr.contains("\(data)/livebus.db is a symbolic link (to \(theirs))"), "\(r.stderr)")
        #expect((try? FileManager.default.attributesOfItem(atPath: theirs)[.size] as? Int) == 0)

        unlink(data + "/livebus.db")
        _ = FileManager.default.createFile(atPath: data + "/livebus.db-wal", contents: nil)
        chown(data + "/livebus.db-wal", other.uid, other.gid)
        r = try OtherUser.sh(Self.livebusd, ["--socket", dir + "/bus.sock", "--data-dir", data])
        #expect(r.exit != 0)
        #expect(r.stderr.contains("\(data)/livebus.db-wal is owned by user \(other.name)"), "\(r.stderr)")
    }
}

/// Issue 14 cases that need no second user: links in the data directory, one daemon per data directory.
@Suite(.serialized)
struct E2EDataDirectoryTests {
    /// A data directory reached through a symbolic link, or a database that is one, is refused naming the path; the
    /// link's target is not written.
    @Test func symbolicLinksAreRefused() throws {
        let dir = temporaryDirectory("lbsl")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let real = dir + "/real"
        #expect(mkdir(real, 0o700) == 0)
        #expect(symlink(real, dir + "/link") == 0)
        var r = try OtherUser.sh(
            E2EOtherUserTests.livebusd,
            ["--socket", dir + "/bus.sock", "--data-dir", dir + "/link"]
        )
        #expect(r.exit != 0)
        #expect(r.stderr.contains("the data directory \(dir)/link is a symbolic link (to \(real))"), "\(r.stderr)")
        #expect(access(real + "/livebus.db", F_OK) != 0)

        let target = dir + "/elsewhere.db"
        _ = FileManager.default.createFile(atPath: target, contents: nil)
        #expect(symlink(target, real + "/livebus.db") == 0)
        r = try OtherUser.sh(E2EOtherUserTests.livebusd, ["--socket", dir + "/bus.sock", "--data-dir", real])
        #expect(r.exit != 0)
        #expect(r.stderr.contains("\(real)/livebus.db is a symbolic link (to \(target))"), "\(r.stderr)")
        #expect((try? FileManager.default.attributesOfItem(atPath: target)[.size] as? Int) == 0)
        // The store refuses it on its own too.
        #expect(throws: StoreOpenError.self) { _ = try SQLiteStore(directory: real) }

        unlink(real + "/livebus.db")
        chmod(real, 0o777)
        r = try OtherUser.sh(E2EOtherUserTests.livebusd, ["--socket", dir + "/bus.sock", "--data-dir", real])
        #expect(r.exit != 0)
        #expect(r.stderr.contains("the data directory \(real) has mode 777"), "\(r.stderr)")
    }

    /// A second daemon on the same data directory is refused with the path and the first one's pid, `--fresh`
    /// included (the first one's state is untouched); once the first is killed with SIGKILL, the kernel has
    /// released the lock and a new daemon starts on it.
    @Test func secondDaemonOnTheSameDataDirectoryIsRefused() throws {
        let dir = temporaryDirectory("lbdl")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let data = dir + "/data"
        let first = try DaemonChild(
            ["--socket", dir + "/a.sock", "--data-dir", data, "--scenario", "demo-120s", "--time-scale", "10"],
            log: dir + "/a.log"
        )
        #expect(waitLive(dir + "/a.sock"))
        let pid = first.process.processIdentifier
        for extra in [[], ["--fresh"]] {
            let r = try OtherUser.sh(
                E2EOtherUserTests.livebusd,
                ["--socket", dir + "/b.sock", "--data-dir", data, "--scenario", "demo-120s", "--time-scale", "10"]
                    + extra
            )
            #expect(r.exit != 0)
            #expect(
                r.stderr.contains("the data directory \(data) is in use by another livebusd (pid \(pid))"),
                "\(r.stderr)"
            )
            #expect(access(dir + "/b.sock", F_OK) != 0)
        }
        #expect(access(data + "/livebus.db", F_OK) == 0, "--fresh of the refused daemon removed nothing")
        let before = try OtherUser.sh(
            E2ECLIGoldenTests.bin + "/livebus",
            ["order", "list", "--socket", dir + "/a.sock"]
        )
        #expect(before.exit == 0, "the first daemon keeps serving: \(before.stderr)")
        first.kill9()
        let second = try DaemonChild(
            ["--socket", dir + "/b.sock", "--data-dir", data, "--scenario", "demo-120s", "--time-scale", "10"],
            log: dir + "/b.log"
        )
        defer { second.terminate() }
        #expect(waitLive(dir + "/b.sock"), "a killed daemon's lock is released by the kernel")
        let lock = (try? String(contentsOfFile: data + "/lock", encoding: .utf8)) ?? ""
        #expect(lock.trimmingCharacters(in: .whitespacesAndNewlines) == "\(second.process.processIdentifier)")
    }
}
