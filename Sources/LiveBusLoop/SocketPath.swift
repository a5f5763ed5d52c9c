import Foundation

/// Where the socket lives by default, and the private directory that holds it.
///
/// The default socket is in a directory only its user can enter (owner = the user, mode 0700), so no other user can
/// bind the path first and pose as the daemon ("squatting", issue 14): `$XDG_RUNTIME_DIR` when it is such a
/// directory (systemd-logind creates it 0700 per user), else `/tmp/livebus-<uid>/`, created 0700 by the daemon and
/// checked by daemon and CLI. Source: XDG Base Directory Specification (`XDG_RUNTIME_DIR`: "MUST be owned by the
/// user, and he MUST be the only one having read and write access to it. Its Unix access mode MUST be 0700").
public enum SocketPath {
    /// The socket's file name inside its directory.
    public static let fileName = "livebus.sock"

    /// The directory `path` is in, as `dirname(1)` says it: `.` for a bare file name (`f.sock`: the current
    /// directory, where `bind(2)` puts it), `/` for `/f.sock`, else everything before the last slash (fresh-user
    /// review F6: a bare name gave an empty directory name).
    /// - Parameter path: A socket path (or any file path).
    /// - Returns: Its directory, never empty.
    public static func directory(of path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "." }
        var d = p[..<slash]
        while d.count > 1 && d.hasSuffix("/") { d = d.dropLast() }
        return d.isEmpty ? "/" : String(d)
    }

    /// `/tmp/livebus-<uid>`: the private directory used when `$XDG_RUNTIME_DIR` is unset or not private.
    /// - Parameter uid: The user. Default: the caller's real uid.
    /// - Returns: The directory's path.
    public static func fallbackDirectory(uid: UInt32 = getuid()) -> String { "/tmp/livebus-\(uid)" }

    /// The default socket path: `$LIVEBUS_SOCKET`, else `$XDG_RUNTIME_DIR/livebus.sock` when that directory is the
    /// user's own with mode 0700, else `/tmp/livebus-<uid>/livebus.sock`.
    /// - Parameter environment: The process environment (a parameter so tests can pass their own).
    /// - Returns: The socket path.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let s = environment["LIVEBUS_SOCKET"], !s.isEmpty { return s }
        if let d = environment["XDG_RUNTIME_DIR"], !d.isEmpty, checkPrivateDirectory(d) == nil {
            return "\(d)/\(fileName)"
        }
        return "\(fallbackDirectory())/\(fileName)"
    }

    /// `nil` when `directory` is a real directory (not a symbolic link) owned by `uid` that no other user may enter
    /// (no group or other permission bits), else an error naming the directory, what is wrong and what to do.
    /// - Parameters:
    ///   - directory: The directory to check (`lstat(2)`: a symbolic link is refused, never followed).
    ///   - uid: Who must own it. Default: the caller's real uid.
    /// - Returns: The refusal (`ENOENT`, `ELOOP`, `ENOTDIR`, `EPERM`), or `nil`.
    public static func checkPrivateDirectory(_ directory: String, uid: UInt32 = getuid()) -> LoopError? {
        var st = stat()
        guard lstat(directory, &st) == 0 else {
            return LoopError(name: "ENOENT", message: "the directory \(directory) does not exist")
        }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            return LoopError(
                name: "ELOOP",
                message:
                    "\(directory) is a symbolic link, not a directory: someone may be redirecting the socket; remove it (rm \(directory)) and start again"
            )
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            return LoopError(
                name: "ENOTDIR",
                message: "\(directory) exists and is not a directory; remove it or choose another --socket"
            )
        }
        if st.st_uid != uid {
            return LoopError(
                name: "EPERM",
                message:
                    "\(directory) is owned by user \(userName(uid: st.st_uid)), not by you (\(userName(uid: uid))): another user created it and could pose as your daemon; have it removed (as root: rm -r \(directory)) or choose another --socket"
            )
        }
        let mode = st.st_mode & 0o777
        if mode & 0o077 != 0 {
            return LoopError(
                name: "EPERM",
                message:
                    "\(directory) has mode \(String(mode, radix: 8)), so other users can reach its socket; make it private (chmod 700 \(directory)) and start again"
            )
        }
        return nil
    }

    /// For a socket in ``fallbackDirectory(uid:)``: creates that directory with mode 0700 when `create` is true and
    /// it is missing, then checks it with ``checkPrivateDirectory(_:uid:)``. For any other path (a `--socket` or
    /// `$LIVEBUS_SOCKET` of the user's choice, or `$XDG_RUNTIME_DIR`, already checked): `nil`.
    /// - Parameters:
    ///   - socket: The socket path.
    ///   - create: Whether to create the missing directory (the daemon does; a client only checks).
    /// - Returns: The refusal (as ``checkPrivateDirectory(_:uid:)``, or `EACCES` when it cannot be created), or `nil`.
    public static func preparePrivateDirectory(for socket: String, create: Bool) -> LoopError? {
        let directory = fallbackDirectory()
        guard socket.hasPrefix(directory + "/") else { return nil }
        if create && mkdir(directory, 0o700) != 0 && errno != EEXIST {
            return LoopError(
                name: "EACCES",
                message: "cannot create \(directory): \(String(cString: strerror(errno))); choose another --socket"
            )
        }
        return checkPrivateDirectory(directory)
    }
}
