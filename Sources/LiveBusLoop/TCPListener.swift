import CLibUV
import Foundation

/// A listening TCP socket (`uv_tcp_t` + `uv_listen`), for the APNs endpoint. Accepted streams are
/// ``Connection``s, gathered writes and all, as on the Unix socket.
public final class TCPListener: LoopClosable {
    private let tcp: UnsafeMutablePointer<uv_tcp_t>
    unowned let loop: EventLoop
    private var retained: Unmanaged<TCPListener>?
    private var closed = false
    /// The address it was asked to bind (`127.0.0.1`, `::1`, …).
    public let host: String
    /// The port it listens on (the kernel's choice when asked for port 0).
    public private(set) var port: Int = 0
    /// Called on the loop thread with each accepted connection (not yet reading).
    public var onConnection: ((Connection) -> Void)?
    /// Called on the loop thread when accepting failed.
    public var onAcceptError: ((LoopError) -> Void)?

    /// Whether `host` is a loopback address (127.0.0.0/8 or ::1), the only ones LiveBus binds unless told
    /// otherwise.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "::1" || host == "localhost" { return true }
        let parts = host.split(separator: ".")
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Binds `host:port` (IPv4 or IPv6 literal, or `localhost` for 127.0.0.1) and listens.
    /// - Throws: ``LoopError`` (`EINVAL` for an address that is not an IP literal, `EADDRINUSE`, `EACCES`, …).
    public init(loop: EventLoop, host: String, port: Int, backlog: Int32 = 511) throws(LoopError) {
        guard (0...65535).contains(port) else {
            throw LoopError(name: "EINVAL", message: "port \(port) is not 0…65535")
        }
        self.loop = loop
        self.host = host
        tcp = .allocate(capacity: 1)
        uv_tcp_init(loop.loop, tcp)
        retained = Unmanaged.passRetained(self)
        tcp.pointee.data = retained!.toOpaque()
        let literal = host == "localhost" ? "127.0.0.1" : host
        var storage = sockaddr_storage()
        var rc = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { uv_ip4_addr(literal, Int32(port), $0) }
        }
        if rc != 0 {
            rc = withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { uv_ip6_addr(literal, Int32(port), $0) }
            }
        }
        if rc != 0 {
            close()
            throw LoopError(name: "EINVAL", message: "\(host) is not an IPv4 or IPv6 address")
        }
        rc = withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(tcp, $0, 0) }
        }
        try listen(afterBind: rc, asStream(tcp), backlog: backlog, address: "\(host):\(port)")
        var bound = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let grc = withUnsafeMutablePointer(to: &bound) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(tcp, $0, &length) }
        }
        if grc == 0 {
            self.port = withUnsafePointer(to: &bound) { p in
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        }
    }

    /// Stops listening.
    public func close() {
        guard !closed else { return }
        closed = true
        onConnection = nil
        closeHandle(asHandle(tcp))
    }

    func closeFromLoop() { close() }
}

extension TCPListener: StreamListening {
    static var acceptsTCP: Bool { true }
    func acceptFailed(_ status: Int32) { onAcceptError?(LoopError(status, "accept")) }
}
