import Dispatch
import Foundation
import LiveBusDaemon

/// Every child process and private directory `livebus e2e` made, so that an interrupt (SIGINT, SIGTERM, SIGHUP)
/// kills the processes and removes the sockets, data and logs before the runner exits.
///
/// The runner registers and unregisters from its own thread; the signal handler reads from a Dispatch queue.
final class E2EProcesses: @unchecked Sendable {
    // @unchecked: every member is guarded by `lock`.
    private let lock = NSLock()
    private var pids: Set<pid_t> = []
    private var directories: Set<String> = []
    /// Network namespaces (and their host links) of federated scenarios' partitioned daemons.
    private var namespaces: [String: String] = [:]
    private var sources: [any DispatchSourceSignal] = []

    /// The one registry of this process.
    static let shared = E2EProcesses()

    /// Remembers a child.
    func add(_ pid: pid_t) { lock.withLock { _ = pids.insert(pid) } }
    /// Forgets a child that was reaped.
    func remove(_ pid: pid_t) { lock.withLock { _ = pids.remove(pid) } }
    /// Remembers a private directory.
    func add(directory: String) { lock.withLock { _ = directories.insert(directory) } }
    /// Forgets a directory the runner removed or keeps on purpose.
    func remove(directory: String) { lock.withLock { _ = directories.remove(directory) } }
    /// Remembers a network namespace and its host link (`ip netns del`, `ip link del` on an interrupt).
    func add(namespace: String, link: String) { lock.withLock { namespaces[namespace] = link } }
    /// Forgets a namespace the runner removed.
    func remove(namespace: String) { lock.withLock { _ = namespaces.removeValue(forKey: namespace) } }

    /// Installs the handlers: on SIGINT, SIGTERM or SIGHUP, SIGKILL every child, remove every directory, exit 130.
    ///
    /// First unblocks the signals the children rely on: a parent that blocked them (a test runner does) would
    /// pass the blocked mask on, and a Python client would then never see its SIGTERM or SIGUSR2.
    func installSignalHandlers() {
        var set = sigset_t()
        sigemptyset(&set)
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCONT, SIGCHLD] { sigaddset(&set, sig) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        lock.withLock {
            guard sources.isEmpty else { return }
            for sig in [SIGINT, SIGTERM, SIGHUP] {
                signal(sig, SIG_IGN)
                let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                s.setEventHandler { [self] in
                    self.cleanUpAll()
                    StandardStream.err("\nlivebus e2e: interrupted; children stopped, sockets removed\n")
                    exit(130)
                }
                s.resume()
                sources.append(s)
            }
        }
    }

    /// SIGKILLs every registered child and removes every registered directory.
    func cleanUpAll() {
        let (ps, ds, ns) = lock.withLock { (pids, directories, namespaces) }
        for p in ps {
            kill(p, SIGCONT)
            kill(p, SIGKILL)
        }
        for p in ps { waitpid(p, nil, WNOHANG) }
        for d in ds { try? FileManager.default.removeItem(atPath: d) }
        for (n, link) in ns {
            try? E2ENetworkNamespace.ip(["link", "del", link])
            try? E2ENetworkNamespace.ip(["netns", "del", n])
        }
    }
}

/// One client process (`livebus attach --json` or the Python client) with its log files.
final class E2EClientProcess {
    let spec: E2ESessionSpecView
    let process: Process
    let logPath: String
    let errPath: String
    let layoutPath: String
    /// True time the process was started (its clock's epoch), ms since the Unix epoch.
    let startedTrueMs: Int64
    /// Set when the process ended before the runner stopped it.
    var earlyExit: String?
    var suspended = false

    init(
        spec: E2ESessionSpecView,
        process: Process,
        logPath: String,
        errPath: String,
        layoutPath: String,
        startedTrueMs: Int64
    ) {
        self.spec = spec
        self.process = process
        self.logPath = logPath
        self.errPath = errPath
        self.layoutPath = layoutPath
        self.startedTrueMs = startedTrueMs
    }
}

/// The parts of a session spec the process layer needs (kept apart so this file does not import the scenario
/// module's types into every signature).
struct E2ESessionSpecView {
    var name: String
    var arguments: [String]
    var executable: String
}

/// Host wall clock, ms since the Unix epoch (true time for the e2e checker: `livebusd` runs on the same clock).
func e2eNowMs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// The last `n` non-empty lines of a file, joined with ` | `.
func e2eTail(_ path: String, lines n: Int = 3) -> String {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "" }
    return text.split(separator: "\n").suffix(n).joined(separator: " | ")
}

/// Resident set size of a process, KiB, from `/proc/PID/status` (`VmRSS`); nil when it is gone.
func e2eResidentKiB(_ pid: pid_t) -> Int64? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.split(separator: " ").compactMap { Int64($0) }
        return digits.first
    }
    return nil
}
