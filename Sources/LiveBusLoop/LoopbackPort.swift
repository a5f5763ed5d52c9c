import Foundation

/// TCP ports on the IPv4 loopback address (127.0.0.1), for the processes a test or an e2e run starts itself
/// (`nats-server` nodes, the dashboard, the APNs endpoint). Blocking system calls: call them before a loop runs or
/// off the loop thread, never on it.
public enum LoopbackPort {
    /// Whether `bind(2)` to 127.0.0.1:`port` succeeds now (nothing listens or holds it).
    /// - Parameter port: A TCP port, 1–65535.
    /// - Returns: `true` when the port could be bound (it is released again before returning).
    public static func isFree(_ port: Int) -> Bool {
        onLoopback(port: port) { fd, address, length in bind(fd, address, length) == 0 } ?? false
    }

    /// A port the kernel picks from its ephemeral range, free at the moment of the call (bound to port 0, read back
    /// with `getsockname(2)`, then released; another process may take it before the caller binds it).
    /// - Returns: The port, or 0 when no socket could be made or bound.
    public static func ephemeral() -> Int {
        withSocket { fd in
            var address = loopback(port: 0)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
            }
            guard bound else { return 0 }
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
            }
            return named ? Int(UInt16(bigEndian: address.sin_port)) : 0
        } ?? 0
    }

    /// Whether a blocking `connect(2)` to 127.0.0.1:`port` succeeds now (something listens and accepts).
    /// - Parameter port: A TCP port, 1–65535.
    /// - Returns: `true` when the connection was made (it is closed again before returning).
    public static func accepts(_ port: Int) -> Bool {
        onLoopback(port: port) { fd, address, length in connect(fd, address, length) == 0 } ?? false
    }

    /// `call` (bind or connect) on a new TCP socket with the address 127.0.0.1:`port`; `nil` without a socket.
    private static func onLoopback(
        port: Int,
        _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool
    ) -> Bool? {
        withSocket { fd in
            var address = loopback(port: port)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        return address
    }

    private static func withSocket<T>(_ body: (Int32) -> T) -> T? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return body(fd)
    }
}
