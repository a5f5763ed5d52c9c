import Foundation
import Testing

/// A `livebusd` child with an APNs endpoint (always the h2c Unix socket `dir/apns.sock`, plus what `daemonArgs`
/// add) and phones attached with `livebus attach --json`, each logging to `dir/<name>.log`: the setup the APNs
/// delivery tests share.
final class APNsBus {
    let dir: String
    let sock: String
    let apnsSock: String
    let daemon: DaemonChild
    private var phones: [Process] = []

    /// Starts the daemon and waits (bounded) until its APNs socket exists.
    init(_ daemonArgs: [String], prefix: String = "lba") throws {
        dir = temporaryDirectory(prefix)
        sock = dir + "/bus.sock"
        apnsSock = dir + "/apns.sock"
        daemon = try DaemonChild(
            ["--socket", sock, "--memory", "--log-level", "info", "--apns-socket", apnsSock] + daemonArgs,
            log: dir + "/d.log"
        )
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: apnsSock) { usleep(10_000) }
    }

    /// Attaches phone `name` (`livebus attach --json` with `extra` arguments) for `duration`.
    func attach(_ name: String, _ extra: [String] = [], duration: String = "30s") throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: E2ECLIGoldenTests.bin + "/livebus")
        p.arguments = ["attach", "--socket", sock, "--name", name, "--json", "--duration", duration] + extra
        _ = FileManager.default.createFile(atPath: logPath(name), contents: nil)
        p.standardOutput = FileHandle(forWritingAtPath: logPath(name))
        p.standardError = FileHandle.nullDevice
        try p.run()
        phones.append(p)
    }

    func logPath(_ phone: String) -> String { dir + "/\(phone).log" }
    func phoneLog(_ phone: String) -> String { (try? String(contentsOfFile: logPath(phone), encoding: .utf8)) ?? "" }
    var daemonLog: String { (try? String(contentsOfFile: dir + "/d.log", encoding: .utf8)) ?? "" }

    /// The phone's `"type":"push"` lines.
    func pushLines(_ phone: String) -> [String] {
        phoneLog(phone).split(separator: "\n").map(String.init).filter { $0.contains(#""type":"push""#) }
    }

    /// Waits (at most `tries` × 10 ms) until `done()` holds; returns whether it did.
    @discardableResult
    func wait(tries: Int = 500, _ done: () -> Bool) -> Bool {
        for _ in 0..<tries {
            if done() { return true }
            usleep(10_000)
        }
        return done()
    }

    /// A push with curl over the Unix socket to `path` (default: the device token's).
    func curlPush(token: String, _ args: (args: [String], path: String)) -> CurlAnswer {
        curl(
            ["--http2-prior-knowledge", "--unix-socket", apnsSock] + args.args + ["http://localhost/3/device/\(token)"]
        )
    }

    func stop() {
        for p in phones where p.isRunning { p.terminate() }
        daemon.terminate()
        try? FileManager.default.removeItem(atPath: dir)
    }
}
