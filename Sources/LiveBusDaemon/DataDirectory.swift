import Foundation
import LiveBusLoop

/// Who may own the data directory and its files, and the lock that keeps one daemon per directory.
///
/// The daemon's state is written only into a directory of its own user that no other user can write, never through
/// a symbolic link: otherwise another local user could pre-create the directory, or link `livebus.db` to a file of
/// theirs, and receive every event (issue 14, "data-dir symlink"). The checks use `lstat(2)`; with the directory
/// private, nobody else can swap a file between the check and SQLite's open (which also refuses a link:
/// `SQLITE_OPEN_NOFOLLOW`).
public enum DataDirectory {
    /// The files of a data directory that must be the user's own regular files when they exist.
    public static let fileNames = ["livebus.db", "livebus.db-wal", "livebus.db-shm", "lock"]

    /// `nil` when `directory` is absent, or is a real directory of `uid` that no other user can write and whose
    /// existing ``fileNames`` are regular files of `uid`; else the error naming the path, what is wrong, what to do.
    /// - Parameters:
    ///   - directory: The `--data-dir`.
    ///   - uid: Who must own it. Default: the caller's real uid.
    /// - Returns: The refusal, or `nil` when the directory may be used.
    public static func check(_ directory: String, uid: UInt32 = getuid()) -> StoreOpenError? {
        // The rule every file next to the socket or in a shared place follows (OwnedPath), in this place's words.
        switch OwnedPath.problem(directory, kind: .directory, uid: uid, forbiddenModeBits: 0o022) {
        case nil: break
        case .symbolicLink(let target):
            return StoreOpenError(
                "the data directory \(directory) is a symbolic link\(target.map { " (to \($0))" } ?? ""); state is never written through a link: pass the real directory or choose another --data-dir"
            )
        case .wrongKind:
            return StoreOpenError("\(directory) exists and is not a directory; choose another --data-dir")
        case .owner(let owner):
            return StoreOpenError(
                "the data directory \(directory) is owned by user \(userName(uid: owner)), not by you (\(userName(uid: uid))); another user could read or replace the daemon's state there: choose a --data-dir of your own"
            )
        case .openToOthers(let mode):
            return StoreOpenError(
                "the data directory \(directory) has mode \(String(mode, radix: 8)): other users can replace its files; make it private (chmod 700 \(directory)) or choose another --data-dir"
            )
        }
        var st = stat()
        guard lstat(directory, &st) == 0 else { return nil }
        for name in fileNames {
            let file = directory + "/" + name
            switch OwnedPath.problem(file, kind: .file, uid: uid) {
            case nil: continue
            case .symbolicLink(let target):
                return StoreOpenError(
                    "\(file) is a symbolic link\(target.map { " (to \($0))" } ?? ""); the daemon's state is never written through a link: remove it (rm \(file)) or choose another --data-dir"
                )
            case .wrongKind:
                return StoreOpenError("\(file) is not a regular file; remove it or choose another --data-dir")
            case .owner(let owner):
                return StoreOpenError(
                    "\(file) is owned by user \(userName(uid: owner)), not by you (\(userName(uid: uid))); remove it or choose another --data-dir"
                )
            case .openToOthers:
                continue
            }
        }
        return nil
    }

    /// Creates `directory` (and missing parents) with mode 0700 when it does not exist.
    /// - Throws: ``StoreOpenError`` naming the directory and the system's reason.
    public static func create(_ directory: String) throws(StoreOpenError) {
        var st = stat()
        guard lstat(directory, &st) != 0 else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw StoreOpenError("cannot create data directory \(directory): \(error.localizedDescription)")
        }
    }
}

/// An exclusive `flock(2)` on `<data dir>/lock`, held for the daemon's lifetime, so two daemons never share one
/// data directory (issue 14, "shared data dir"). The file holds the holder's pid for the refusal message. The kernel
/// releases the lock when its process dies, so a daemon killed with SIGKILL leaves nothing to clean up.
public final class DataDirectoryLock {
    /// The lock file.
    public let path: String
    private var fd: Int32

    /// Creates the directory if needed, checks it (``DataDirectory/check(_:uid:)``) and takes the lock.
    /// - Parameter directory: The `--data-dir`.
    /// - Throws: ``StoreOpenError`` when the directory is refused, or another process holds the lock (naming it
    ///   and its pid).
    public init(directory: String) throws(StoreOpenError) {
        if let e = DataDirectory.check(directory) { throw e }
        try DataDirectory.create(directory)
        if let e = DataDirectory.check(directory) { throw e }
        path = directory + "/lock"
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreOpenError("cannot open \(path): \(String(cString: strerror(errno))); check the data directory")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buffer, buffer.count, 0)
            let holder = String(decoding: buffer.prefix(max(0, n)), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            Glibc.close(fd)
            fd = -1
            if code == EWOULDBLOCK {
                throw StoreOpenError(
                    "the data directory \(directory) is in use by another livebusd (pid \(holder.isEmpty ? "unknown" : holder)); stop that daemon or choose another --data-dir"
                )
            }
            throw StoreOpenError("cannot lock \(path): \(String(cString: strerror(code)))")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
    }

    /// Releases the lock (also done when the process exits, however it exits).
    public func release() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    deinit { release() }
}
