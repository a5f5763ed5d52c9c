import CLibUV
import Foundation
import LiveBusLoop
import LiveBusWire

/// Who holds a socket path, told apart so that the daemon's and the CLI's messages say what is there (review
/// finding 11: a listener that is not livebusd was called "another livebusd", another user's stale socket "a
/// daemon").
///
/// Found by ``SocketProbe/probe(path:user:)`` (`lstat(2)` and `connect(2)`), then for a socket on which `connect(2)`
/// succeeds by a HELLO: any LiveBus frame back (WELCOME, or ERROR) is a livebusd; other bytes, or a close, are a
/// program that does not speak the protocol; nothing within the timeout is a process that does not answer (a
/// stopped livebusd, or another program). Another user's socket that cannot be connected to (mode 0600: `EACCES`)
/// is told listening or not from `/proc/net/unix` (the kernel's table of bound Unix sockets, `proc(5)`).
public enum SocketHolder: Sendable, Equatable {
    /// Nothing at the path.
    case absent
    /// Something other than a socket (a symbolic link is never followed).
    case notSocket
    /// A socket file of this user with nothing listening (`ECONNREFUSED`): safe to remove.
    case stale
    /// A livebusd answered the HELLO; `user` runs it (`SO_PEERCRED`), `owner` owns the file.
    case livebusd(owner: UInt32, user: UInt32, pid: Int32)
    /// A process accepts connections but answered the HELLO with bytes that are not a LiveBus frame, or closed.
    case otherProtocol(owner: UInt32, user: UInt32, pid: Int32)
    /// A process accepts connections and sent nothing within `timeoutMs` ms after the HELLO.
    case silent(owner: UInt32, user: UInt32, pid: Int32, timeoutMs: Int)
    /// A process accepts connections; no HELLO was sent (a socket that speaks another protocol by design).
    case listening(owner: UInt32, user: UInt32, pid: Int32)
    /// Another user's socket file with nothing listening on it (connect refused, or no listener in
    /// `/proc/net/unix`).
    case foreignStale(owner: UInt32)
    /// Another user's socket file that a process listens on; it may not be connected to (`EACCES`), so whether it
    /// is a livebusd cannot be told.
    case foreignListening(owner: UInt32)
    /// A socket file on which `connect(2)` failed with `errno` (not `ECONNREFUSED`) and no listener table settled
    /// it: whether anything serves it cannot be told.
    case undecided(owner: UInt32, errno: Int32)

    /// Probes `path` (blocking; done once, before a loop runs or from a command).
    /// - Parameters:
    ///   - path: The socket path (a symbolic link is not followed).
    ///   - hello: Whether to send a HELLO once connected; without it a listener is ``listening(owner:user:pid:)``.
    ///   - timeoutMs: How long to wait for an answer to the HELLO, in ms (also bounds a connect blocked on a full
    ///     backlog).
    /// - Returns: Who holds it.
    public static func identify(path: String, hello: Bool = true, timeoutMs: Int = 1000) -> SocketHolder {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .absent }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { return .notSocket }
        let owner = st.st_uid
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .undecided(owner: owner, errno: errno) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutMs / 1000, tv_usec: (timeoutMs % 1000) * 1000)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let rc = SocketProbe.connectUnix(fd, path: path) else { return .notSocket }
        if rc != 0 {
            let code = errno
            if code == ECONNREFUSED { return owner == getuid() ? .stale : .foreignStale(owner: owner) }
            if owner != getuid(), let listening = listenerListed(path: path) {
                return listening ? .foreignListening(owner: owner) : .foreignStale(owner: owner)
            }
            return .undecided(owner: owner, errno: code)
        }
        var peerUID: UInt32 = 0
        var peerPID: Int32 = 0
        let known = CLibUV_peer_uid(fd, &peerUID, &peerPID) == 0
        let user = known ? peerUID : owner
        let pid = known ? peerPID : 0
        guard hello else { return .listening(owner: owner, user: user, pid: pid) }
        switch helloAnswer(fd: fd, timeoutMs: timeoutMs) {
        case .liveBus: return .livebusd(owner: owner, user: user, pid: pid)
        case .other: return .otherProtocol(owner: owner, user: user, pid: pid)
        case .nothing: return .silent(owner: owner, user: user, pid: pid, timeoutMs: timeoutMs)
        }
    }

    /// What the process behind a socket holds: for messages, e.g. "a livebusd of user alice (uid 1000), pid 42".
    public var who: String {
        func process(_ user: UInt32, _ pid: Int32) -> String {
            "user \(userName(uid: user))" + (pid > 0 ? ", pid \(pid)" : "")
        }
        switch self {
        case .absent: return "nothing"
        case .notSocket: return "a file that is not a socket"
        case .stale: return "a stale socket file of yours (nothing listening)"
        case .livebusd(_, let user, let pid): return "a running livebusd (\(process(user, pid)))"
        case .otherProtocol(_, let user, let pid):
            return "a process that does not speak the LiveBus protocol (\(process(user, pid)))"
        case .silent(_, let user, let pid, let ms):
            return
                "a process that accepts connections but did not answer a LiveBus HELLO within \(ms) ms (\(process(user, pid))): a stopped or stuck livebusd, or another program"
        case .listening(_, let user, let pid): return "a process that is listening on it (\(process(user, pid)))"
        case .foreignStale(let owner):
            return "a stale socket file of user \(userName(uid: owner)) (nothing listening)"
        case .foreignListening(let owner):
            return
                "a socket of user \(userName(uid: owner)) that a process is listening on (you may not connect to it, so whether it is a livebusd cannot be told)"
        case .undecided(let owner, let code):
            return
                "a socket of user \(userName(uid: owner)) that cannot be probed (connect: \(String(cString: strerror(code))))"
        }
    }

    private enum Answer { case liveBus, other, nothing }

    /// Sends a HELLO (role admin) on the connected `fd` and reads until a frame decodes, the bytes cannot be one,
    /// the peer closes, or `timeoutMs` passes.
    private static func helloAnswer(fd: Int32, timeoutMs: Int) -> Answer {
        var frame: [UInt8] = []
        let body = (try? WireJSON.encode(HelloBody(client: "livebusd-probe", role: .admin, clientTime: 0))) ?? []
        guard (try? Frame.encode(type: .hello, body: body, into: &frame)) != nil else { return .nothing }
        _ = frame.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var decoder = FrameDecoder()
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let deadline = Int(clock.tv_sec) * 1000 + Int(clock.tv_nsec) / 1_000_000 + timeoutMs
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            clock_gettime(CLOCK_MONOTONIC, &clock)
            let left = deadline - (Int(clock.tv_sec) * 1000 + Int(clock.tv_nsec) / 1_000_000)
            guard left > 0 else { return .nothing }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(left))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return .nothing }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return .other }
            decoder.append(Array(buffer[..<n]))
            do {
                if try decoder.next() != nil { return .liveBus }
            } catch {
                return .other
            }
        }
    }

    /// From `/proc/net/unix`: `true` when a listening socket is bound at `path`, `false` when none is, `nil` when
    /// the table cannot be read. The table lists the path given to `bind(2)`: an absolute one must be `path` (made
    /// absolute); a relative one (relative to its binder's directory, unknown here) counts when `path` ends with
    /// it. Not seen: a socket file renamed after its bind, and listeners in another network namespace.
    static func listenerListed(path: String) -> Bool? {
        // Read to the end with read(2): a /proc file has size 0, and its text comes a page per read.
        let fd = open("/proc/net/unix", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        let table = String(decoding: bytes, as: UTF8.self)
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        for line in table.split(separator: "\n").dropFirst() {
            // Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 is __SO_ACCEPTCON (listening).
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, let flags = Int(fields[3], radix: 16), flags & 0x10000 != 0 else { continue }
            let listed = fields[7...].joined(separator: " ")
            if listed == path || listed == absolute || (!listed.hasPrefix("/") && absolute.hasSuffix("/" + listed)) {
                return true
            }
        }
        return false
    }
}
