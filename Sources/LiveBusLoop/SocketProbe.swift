import Foundation

/// What is at a socket path before the daemon binds it, or before a client connects.
///
/// Only ``stale`` may be removed: a socket file of the caller's own user on which `connect(2)` fails with
/// `ECONNREFUSED` (nothing listens). A socket of another user, or one where `connect(2)` fails otherwise (`EACCES`,
/// `EPERM`, `EAGAIN` from a full backlog), is never removed: another user's daemon may be serving it
/// (issue 14, "socket theft").
public enum SocketProbe: Sendable, Equatable {
    /// Nothing exists at the path.
    case absent
    /// A socket file of this user exists and a process accepts connections on it.
    case live
    /// A socket file of this user exists and connecting is refused (`ECONNREFUSED`): left by a crashed daemon, safe
    /// to remove.
    case stale
    /// Something other than a socket exists at the path (a symbolic link is never followed).
    case notSocket
    /// A socket file owned by another user (`owner` is its uid): never removed, whether it answers or not.
    case foreign(owner: UInt32)
    /// A socket file of this user on which `connect(2)` failed with `errno` other than `ECONNREFUSED`: whether a
    /// daemon listens cannot be told, so it is not removed.
    case undecided(errno: Int32)

    /// Probes `path` with `lstat(2)` and a blocking `connect(2)` (done once at start-up, before the loop runs).
    /// - Parameters:
    ///   - path: The socket path (a symbolic link is not followed).
    ///   - user: The uid the socket must belong to. Default: the caller's real uid (`getuid()`).
    /// - Returns: What is there.
    public static func probe(path: String, user: UInt32 = getuid()) -> SocketProbe {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .absent }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { return .notSocket }
        if st.st_uid != user { return .foreign(owner: st.st_uid) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .undecided(errno: errno) }
        defer { close(fd) }
        guard let rc = connectUnix(fd, path: path) else { return .notSocket }
        if rc == 0 { return .live }
        return errno == ECONNREFUSED ? .stale : .undecided(errno: errno)
    }

    /// A blocking `connect(2)` of the socket `fd` to the Unix socket at `path`.
    /// - Returns: `connect`'s result (0, or -1 with `errno` set), or `nil` when `path` does not fit `sun_path`.
    public static func connectUnix(_ fd: Int32, path: String) -> Int32? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    /// The owner of the file at `path` itself (`lstat(2)`: a symbolic link is not followed).
    /// - Parameter path: The file.
    /// - Returns: Its uid, or `nil` when nothing is there.
    public static func owner(of path: String) -> UInt32? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return st.st_uid
    }
}

/// A user's login name for messages (`getpwuid_r(3)`), or `uid N` when the account has no name.
/// - Parameter uid: The user id.
/// - Returns: `name (uid N)`, or `uid N`.
public func userName(uid: UInt32) -> String {
    var pwd = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 4096)
    guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else {
        return "uid \(uid)"
    }
    return "\(String(cString: name)) (uid \(uid))"
}
