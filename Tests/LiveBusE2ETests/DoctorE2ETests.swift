import Foundation
import LiveBusLoop
import Testing

/// A Unix socket listener made by a test: it accepts connections (the kernel queues them) and never answers, or,
/// with `reply`, accepts each one on a thread, writes `reply` and closes it (a program that does not speak the
/// LiveBus protocol).
final class TestListener: @unchecked Sendable {
    let path: String
    private let fd: Int32

    init(path: String, reply: [UInt8]? = nil) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        chmod(path, 0o600)
        listen(fd, 64)
        guard let reply else { return }
        let server = fd
        Thread.detachNewThread {
            while true {
                let c = accept(server, nil, nil)
                guard c >= 0 else { return }
                _ = reply.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                Glibc.close(c)
            }
        }
    }

    /// Stops listening (the accepting thread ends) and leaves the socket file.
    func closeDescriptor() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    /// Stops listening and removes the socket file.
    func close() {
        closeDescriptor()
        unlink(path)
    }
}

/// Waits (up to about a minute on a loaded machine) until `livebus status` answers on `socket`.
/// - Returns: Whether it did.
func waitUntilAnswering(_ socket: String) -> Bool {
    for _ in 0..<600 {
        if (try? E2ECLIGoldenTests.run(["status", "--socket", socket]).exit) == 0 { return true }
        usleep(100_000)
    }
    return false
}

/// `livebus doctor` checks that a daemon answers, not only that a socket accepts (review finding 3): a request
/// and its answer within 5 s, else "✗ daemon not answering" and exit 4, as `livebus status`.
@Suite(.serialized)
struct E2EDoctorTests {
    static func run(_ args: [String]) throws -> E2ECLIGoldenTests.Run { try E2ECLIGoldenTests.run(args) }

    /// A listener that accepts and never answers fails doctor's daemon check with the timeout exit code (4).
    @Test func doctorFailsForASocketThatNeverAnswers() throws {
        let dir = temporaryDirectory("lbdoc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let listener = TestListener(path: dir + "/bus.sock")
        defer { listener.close() }
        #expect(SocketProbe.probe(path: listener.path) == .live)
        let doctor = try Self.run(["doctor", "--socket", listener.path])
        #expect(doctor.exit == 4, "\(doctor.stdout)\(doctor.stderr)")
        #expect(
            doctor.stdout.contains("✗ daemon not answering within 5000 ms on \(listener.path) — a process accepts"),
            "\(doctor.stdout)"
        )
        #expect(!doctor.stdout.contains("✓ daemon answering"), "\(doctor.stdout)")
        let json = try Self.run(["doctor", "--socket", listener.path, "--json"])
        #expect(json.exit == 4)
        #expect(json.stdout.contains(#""ok":false"#), "\(json.stdout)")
    }

    /// A real daemon stopped with SIGSTOP fails the check (exit 4); resumed, it passes it.
    @Test func doctorFailsForAStoppedDaemonAndPassesOnceItResumes() throws {
        let dir = temporaryDirectory("lbdos")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let d = try DaemonChild(["--socket", socket, "--memory"], log: dir + "/d.log")
        defer {
            kill(d.process.processIdentifier, SIGCONT)
            d.terminate()
        }
        #expect(waitUntilAnswering(socket), "the daemon did not come up: \(dir)/d.log")
        kill(d.process.processIdentifier, SIGSTOP)
        let stopped = try Self.run(["doctor", "--socket", socket])
        #expect(stopped.exit == 4, "\(stopped.stdout)")
        #expect(stopped.stdout.contains("✗ daemon not answering within 5000 ms on \(socket)"), "\(stopped.stdout)")
        kill(d.process.processIdentifier, SIGCONT)
        let resumed = try Self.run(["doctor", "--socket", socket])
        #expect(resumed.stdout.contains("✓ daemon answering on \(socket)"), "\(resumed.stdout)")
        #expect(resumed.stdout.contains("✓ daemon's store accepts writes"), "\(resumed.stdout)")
        #expect(resumed.exit != 4 && resumed.exit != 3, "\(resumed.stdout)")
    }

    /// No daemon at all: the daemon check fails as unreachable (exit 3), as `livebus status`.
    @Test func doctorWithoutDaemonIsUnreachable() throws {
        let dir = temporaryDirectory("lbdon")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let doctor = try Self.run(["doctor", "--socket", dir + "/none.sock"])
        #expect(doctor.exit == 3, "\(doctor.stdout)")
        #expect(doctor.stdout.contains("✗ daemon answering on \(dir)/none.sock — start one"), "\(doctor.stdout)")
    }

    /// Fresh-user review F6: a bare file name's directory is "." (not an empty name), and `--json`'s envelope says
    /// "ok" as the exit code does, with the failed check's own "ok" false.
    @Test func bareSocketNameIsInTheCurrentDirectoryAndJSONAgreesWithTheExitCode() throws {
        let dir = temporaryDirectory("lbdob")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func doctor(_ extra: [String]) throws -> E2ECLIGoldenTests.Run {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: E2ECLIGoldenTests.bin + "/livebus")
            p.arguments = ["doctor", "--socket", "f.sock"] + extra
            p.currentDirectoryURL = URL(fileURLWithPath: dir)
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            p.standardInput = FileHandle.nullDevice
            try p.run()
            let o = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return .init(exit: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: "")
        }
        let text = try doctor([])
        #expect(text.exit == 3, "no daemon: \(text.stdout)")
        #expect(text.stdout.contains("✓ socket directory . is writable"), "\(text.stdout)")
        #expect(!text.stdout.contains("directory  is"), "\(text.stdout)")
        let json = try doctor(["--json"])
        #expect(json.exit == 3)
        let envelope = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any],
            "\(json.stdout)"
        )
        #expect(envelope["ok"] as? Bool == false, "exit 3 is not ok: \(json.stdout)")
        let checks = envelope["data"] as? [[String: Any]] ?? []
        #expect(
            checks.contains { $0["check"] as? String == "socket directory . is writable" && $0["ok"] as? Bool == true }
        )
        #expect(
            checks.contains {
                ($0["check"] as? String ?? "").hasPrefix("daemon answering") && $0["ok"] as? Bool == false
            }
        )
    }
}
