import Foundation

/// The one rule for every file and directory the daemon and the CLI keep in a place other local users may reach
/// (the socket's directory, `/tmp`, a `--data-dir`, an `--apns-ca-dir`): the path is the user's own, of the kind
/// expected, open to nobody else as far as `forbiddenModeBits` say, and never a symbolic link. Checked with
/// `lstat(2)`, so a link planted by another user is never followed (fresh-user review F1: a link at
/// `SOCKET.dashboard` made root overwrite its target; F2: another user's CA in a mode-777 `--apns-ca-dir` was
/// used). ``replace(_:with:mode:uid:)`` writes a file under this rule without ever opening the existing name.
public enum OwnedPath {
    /// What a path must be.
    public enum Kind: Sendable {
        /// A regular file.
        case file
        /// A directory.
        case directory
    }

    /// Why a path may not be used.
    public enum Problem: Sendable, Equatable {
        /// A symbolic link, with its target when it can be read.
        case symbolicLink(target: String?)
        /// Not of the ``Kind`` expected (a directory where a file is expected, a socket, a FIFO, …).
        case wrongKind
        /// Owned by `owner` (uid), not by the user.
        case owner(UInt32)
        /// The user's own, with `mode` (the permission bits) giving others a forbidden permission.
        case openToOthers(mode: UInt32)
    }

    /// `nil` when `path` is absent, or is a `kind` (not a symbolic link) owned by `uid` whose permission bits have
    /// none of `forbiddenModeBits`; else the problem.
    /// - Parameters:
    ///   - path: The file or directory (`lstat(2)`: a symbolic link is judged, not followed).
    ///   - kind: What it must be.
    ///   - uid: Who must own it. Default: the caller's real uid.
    ///   - forbiddenModeBits: Permission bits it must not have, e.g. `0o022` (writable by group or others) or
    ///     `0o077` (any access for them). Default: none.
    /// - Returns: The problem, or `nil`.
    public static func problem(
        _ path: String,
        kind: Kind,
        uid: UInt32 = getuid(),
        forbiddenModeBits: UInt32 = 0
    ) -> Problem? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        let type = UInt32(st.st_mode) & UInt32(S_IFMT)
        if type == UInt32(S_IFLNK) {
            return .symbolicLink(target: try? FileManager.default.destinationOfSymbolicLink(atPath: path))
        }
        guard type == UInt32(kind == .file ? S_IFREG : S_IFDIR) else { return .wrongKind }
        if st.st_uid != uid { return .owner(st.st_uid) }
        let mode = UInt32(st.st_mode) & 0o7777
        if mode & forbiddenModeBits != 0 { return .openToOthers(mode: mode & 0o777) }
        return nil
    }

    /// The problem in words, naming the path: "P is a symbolic link (to T)", "P is not a regular file", "P is owned
    /// by user rev2 (uid 1001), not by you (root (uid 0))", "P has mode 777".
    /// - Parameters:
    ///   - problem: From ``problem(_:kind:uid:forbiddenModeBits:)``.
    ///   - path: The path it is about.
    ///   - kind: What it must be.
    ///   - uid: Who must own it.
    /// - Returns: The sentence, without what to do.
    public static func describe(_ problem: Problem, path: String, kind: Kind, uid: UInt32 = getuid()) -> String {
        switch problem {
        case .symbolicLink(let target): return "\(path) is a symbolic link" + (target.map { " (to \($0))" } ?? "")
        case .wrongKind: return "\(path) is not a \(kind == .file ? "regular file" : "directory")"
        case .owner(let owner):
            return "\(path) is owned by user \(userName(uid: owner)), not by you (\(userName(uid: uid)))"
        case .openToOthers(let mode): return "\(path) has mode \(String(mode, radix: 8))"
        }
    }

    /// Why ``replace(_:with:mode:uid:)`` wrote nothing.
    public struct ReplaceError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The path that was to be written.
        public var path: String
        /// What is at `path`, when it may not be replaced; `nil` when a system call failed.
        public var problem: Problem?
        /// The failed call and its `strerror(3)` text, when `problem` is `nil`.
        public var failure: String?
        public var description: String {
            problem.map { OwnedPath.describe($0, path: path, kind: .file) } ?? "cannot write \(path): \(failure ?? "")"
        }
    }

    /// Writes `bytes` as the file `path`, mode `mode`, without opening whatever is at `path`: into a new file in
    /// the same directory (`O_CREAT|O_EXCL|O_NOFOLLOW`, a random name, so nothing planted there is opened) that is
    /// then renamed over `path` (`rename(2)` replaces a name, never follows it). Refused, writing nothing, when
    /// `path` exists and is not a regular file of `uid` (a symbolic link, another user's file: ``problem(_:kind:uid:forbiddenModeBits:)``).
    /// - Parameters:
    ///   - path: The file to write.
    ///   - bytes: Its whole content.
    ///   - mode: Its permission bits (set with `fchmod`, whatever the umask). Default: 0600.
    ///   - uid: Who must own an existing file at `path`. Default: the caller's real uid.
    /// - Returns: The identity of the file written, for ``FileIdentity/removeIfUnchanged(_:)`` at exit.
    /// - Throws: ``ReplaceError`` with the problem of the existing path, or the system call that failed.
    @discardableResult
    public static func replace(
        _ path: String,
        with bytes: [UInt8],
        mode: mode_t = 0o600,
        uid: UInt32 = getuid()
    ) throws(ReplaceError) -> FileIdentity {
        if let p = problem(path, kind: .file, uid: uid) { throw ReplaceError(path: path, problem: p) }
        func failed(_ call: String, _ code: Int32) -> ReplaceError {
            ReplaceError(path: path, failure: "\(call): \(String(cString: strerror(code)))")
        }
        var fd: Int32 = -1
        var temporary = ""
        for _ in 0..<16 {
            temporary = path + ".tmp-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw failed("open \(temporary)", errno) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            written += n
        }
        let code = errno
        let identity = FileIdentity(descriptor: fd)
        let ok = written == bytes.count && fchmod(fd, mode) == 0 && fsync(fd) == 0
        Glibc.close(fd)
        guard ok, let identity else {
            unlink(temporary)
            throw failed("write \(temporary)", code)
        }
        // Checked again right before the rename: a link planted meanwhile is replaced, never written through.
        if let p = problem(path, kind: .file, uid: uid) {
            unlink(temporary)
            throw ReplaceError(path: path, problem: p)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw failed("rename \(temporary)", code)
        }
        return identity
    }
}
