import Foundation

/// Which file a path named when a process created it: device, inode and file type (`lstat(2)`), so the process
/// removes the path at its end only while it still names that file, never a file that replaced it (issue 1 of the
/// 2026-12-03 review: a daemon stopping deleted the socket of a second daemon that had taken its path, even another
/// user's in a directory everyone may write).
///
/// Recorded right after `bind(2)` (or the write of the file); checked with `lstat(2)` just before `unlink(2)`. A
/// file put at the path between that check and the unlink is not protected (no POSIX call unlinks by inode).
public struct FileIdentity: Sendable, Equatable {
    /// `st_dev` of the file.
    public let device: UInt64
    /// `st_ino` of the file.
    public let inode: UInt64
    /// The file type bits of `st_mode` (`S_IFSOCK`, `S_IFREG`, …).
    public let type: UInt32

    /// What ``removeIfUnchanged(_:)`` did.
    public enum Removal: Sendable, Equatable {
        /// The path still named this file, which is now removed.
        case removed
        /// Nothing is at the path any more (someone removed it): nothing to do.
        case absent
        /// The path now names another file, owned by `owner` (uid): it is left in place.
        case replaced(owner: UInt32)
        /// `unlink(2)` failed with `errno`.
        case failed(errno: Int32)
    }

    /// The identity of the file at `path` itself (`lstat(2)`: a symbolic link is not followed).
    /// `nil` when nothing is there.
    /// - Parameter path: The file, e.g. a socket just bound.
    public init?(path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        type = UInt32(st.st_mode) & UInt32(S_IFMT)
    }

    /// The identity of the open file `descriptor` (`fstat(2)`): of a file just created, before it is renamed into
    /// place. `nil` when `fstat` fails.
    /// - Parameter descriptor: An open file descriptor.
    public init?(descriptor: Int32) {
        var st = stat()
        guard fstat(descriptor, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        type = UInt32(st.st_mode) & UInt32(S_IFMT)
    }

    /// Removes `path` only when it still names this file (same device, inode and type, by `lstat(2)`).
    /// - Parameter path: The path the file was created at.
    /// - Returns: ``Removal/removed``, ``Removal/absent``, ``Removal/replaced(owner:)`` (left in place), or
    ///   ``Removal/failed(errno:)``.
    public func removeIfUnchanged(_ path: String) -> Removal {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .absent }
        let now = FileIdentity(
            device: UInt64(st.st_dev),
            inode: UInt64(st.st_ino),
            type: UInt32(st.st_mode) & UInt32(S_IFMT)
        )
        guard now == self else { return .replaced(owner: st.st_uid) }
        return unlink(path) == 0 ? .removed : .failed(errno: errno)
    }

    private init(device: UInt64, inode: UInt64, type: UInt32) {
        self.device = device
        self.inode = inode
        self.type = type
    }
}
