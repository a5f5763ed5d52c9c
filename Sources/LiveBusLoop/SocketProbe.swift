import Foundation

/// What is at a socket path before the daemon binds it.
public enum SocketProbe: Sendable, Equatable {
    /// Nothing exists at the path.
    case absent
    /// A socket file exists and a process accepts connections on it.
    case live
    /// A socket file exists but nothing listens (left by a crashed daemon): safe to remove.
    case stale
    /// Something other than a socket exists at the path.
    case notSocket

    /// Probes `path` with a blocking `connect(2)` (done once at start-up, before the loop runs).
    public static func probe(path: String) -> SocketProbe {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .absent }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { return .notSocket }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .stale }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return .notSocket }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return rc == 0 ? .live : .stale
    }
}
