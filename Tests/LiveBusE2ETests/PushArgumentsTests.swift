import Foundation
import Testing

@testable import LiveBusCLI

/// `livebus push` checks every argument before it sends anything (new-user review 2026-12-03, finding 4: `--expect
/// maybe` printed a usage error after the push had gone out).
@Suite(.serialized)
struct PushArgumentsTests {
    /// A listening Unix socket at `path` (non-blocking, so ``accepted(_:)`` can tell whether anyone connected).
    static func listener(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        listen(fd, 8)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// How many connections are waiting on the listener.
    static func accepted(_ fd: Int32) -> Int {
        var n = 0
        while true {
            let c = accept(fd, nil, nil)
            guard c >= 0 else { return n }
            close(c)
            n += 1
        }
    }

    /// A bad `--expect` is a usage error (exit 2) and nothing connects: not to the daemon's socket, not to the APNs
    /// endpoint's (`--via http2`).
    @Test func aBadExpectIsRefusedBeforeAnythingIsSent() throws {
        let dir = temporaryDirectory("lbexpect")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socketPath = dir + "/bus.sock"
        let fd = Self.listener(socketPath)
        defer { close(fd) }
        let payload = dir + "/ok.json"
        try
            #"{"aps":{"timestamp":1767225660,"event":"update","content-state":{"status":"pickedUp","etaEnd":788919300}}}"#
            .write(toFile: payload, atomically: true, encoding: .utf8)
        let token = String(repeating: "0", count: 64)
        let runs: [[String]] = [
            ["all", payload, "--order", "G1", "--socket", socketPath, "--expect", "maybe"],
            [payload, "--via", "http2", "--token", token, "--apns-socket", socketPath, "--expect", "maybe"],
        ]
        for argv in runs {
            var refusal: CLIError?
            do {
                _ = try ControlCommands.push(argv, out: Output(json: true))
            } catch {
                refusal = error
            }
            #expect(refusal?.exit == .usage, "\(argv): \(String(describing: refusal))")
            #expect(refusal?.message.contains("--expect 'maybe' is not one of: applied, ignored") == true)
            #expect(Self.accepted(fd) == 0, "\(argv): something connected before the usage error")
        }
    }
}
