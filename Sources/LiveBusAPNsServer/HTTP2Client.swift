import CNghttp2
import Foundation
import LiveBusAPNs

/// A blocking HTTP/2 client for one request over plaintext HTTP/2 with prior knowledge (`h2c`), on a Unix socket
/// or a TCP address, over nghttp2: what `livebus push --via http2` sends to the daemon's APNs endpoint.
public enum HTTP2Client {
    /// Why a request got no answer.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// `unreachable` (connect failed), `timedOut`, or `protocol` (an HTTP/2 error).
        public var kind: String
        /// What happened.
        public var description: String
    }

    /// Sends `request` (its `:method`, `:path`, headers and body) and waits for the whole response.
    /// - Parameters:
    ///   - request: the request (`authority` is sent as `:authority`).
    ///   - unixSocket: a Unix socket path, or `nil` for `host:port`.
    ///   - host: TCP host (IPv4 or IPv6 literal, or a name) when `unixSocket` is `nil`.
    ///   - port: TCP port.
    ///   - timeoutMilliseconds: how long to wait for the answer in all.
    /// - Returns: the response (status, headers, body).
    /// - Throws: ``Failure``.
    public static func send(
        _ request: APNsRequest,
        unixSocket: String?,
        host: String = "127.0.0.1",
        port: Int = 0,
        timeoutMilliseconds: Int = 15_000
    ) throws(Failure) -> APNsResponse {
        let fd = try connect(unixSocket: unixSocket, host: host, port: port)
        defer { close(fd) }
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let state = ClientState(body: request.body)
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        nghttp2_session_callbacks_set_on_header_callback(cbs) { _, frame, name, namelen, value, valuelen, _, user in
            let s = Unmanaged<ClientState>.fromOpaque(user!).takeUnretainedValue()
            guard frame?.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            let n = String(decoding: UnsafeBufferPointer(start: name, count: namelen), as: UTF8.self)
            let v = String(decoding: UnsafeBufferPointer(start: value, count: valuelen), as: UTF8.self)
            if n == ":status" { s.status = Int(v) ?? 0 } else { s.headers.append((n, v)) }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { _, _, _, data, len, user in
            let s = Unmanaged<ClientState>.fromOpaque(user!).takeUnretainedValue()
            if let data { s.received.append(contentsOf: UnsafeBufferPointer(start: data, count: len)) }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { _, _, code, user in
            let s = Unmanaged<ClientState>.fromOpaque(user!).takeUnretainedValue()
            s.closed = true
            s.resetCode = code
            return 0
        }
        var session: OpaquePointer?
        nghttp2_session_client_new(&session, cbs, Unmanaged.passUnretained(state).toOpaque())
        defer { nghttp2_session_del(session) }
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil, 0)
        let authority = unixSocket == nil ? (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)") : "localhost"
        let fields: [(String, String)] =
            [(":method", request.method), (":scheme", "http"), (":path", request.path), (":authority", authority)]
            + request.headers.map { ($0.name, $0.value) }
        var provider = nghttp2_data_provider(
            source: nghttp2_data_source(ptr: nil),
            read_callback: { _, _, buf, length, flags, _, user in
                let s = Unmanaged<ClientState>.fromOpaque(user!).takeUnretainedValue()
                let n = min(length, s.body.count - s.offset)
                if n > 0, let buf {
                    s.body.withUnsafeBufferPointer { buf.update(from: $0.baseAddress! + s.offset, count: n) }
                }
                s.offset += n
                if s.offset >= s.body.count { flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return n
            }
        )
        let copies = fields.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        var allocations: [UnsafeMutablePointer<UInt8>] = []
        defer { for p in allocations { p.deallocate() } }
        func copy(_ b: [UInt8]) -> UnsafeMutablePointer<UInt8> {
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, b.count))
            p.initialize(from: b, count: b.count)
            allocations.append(p)
            return p
        }
        var nva = copies.map {
            nghttp2_nv(
                name: copy($0.0),
                value: copy($0.1),
                namelen: $0.0.count,
                valuelen: $0.1.count,
                flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
            )
        }
        let streamID = nva.withUnsafeMutableBufferPointer { nv in
            withUnsafePointer(to: &provider) { p in
                nghttp2_submit_request(session, nil, nv.baseAddress, nv.count, request.body.isEmpty ? nil : p, nil)
            }
        }
        guard streamID > 0 else {
            throw Failure(kind: "protocol", description: "nghttp2 could not submit the request (\(streamID))")
        }
        let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !state.closed {
            while true {
                var p: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &p)
                if n < 0 { throw Failure(kind: "protocol", description: String(cString: nghttp2_strerror(Int32(n)))) }
                if n == 0 { break }
                var sent = 0
                while sent < n {
                    let w = Glibc.send(fd, p! + sent, n - sent, Int32(MSG_NOSIGNAL))
                    if w <= 0 { throw Failure(kind: "protocol", description: "the endpoint closed the connection") }
                    sent += w
                }
            }
            guard Date() < deadline else {
                throw Failure(kind: "timedOut", description: "no answer within \(timeoutMilliseconds) ms")
            }
            let r = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if r == 0 { throw Failure(kind: "protocol", description: "the endpoint closed the connection first") }
            if r < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                throw Failure(kind: "protocol", description: String(cString: strerror(errno)))
            }
            let rc = buffer.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, r) }
            if rc < 0 { throw Failure(kind: "protocol", description: String(cString: nghttp2_strerror(Int32(rc)))) }
        }
        guard state.status > 0 else {
            throw Failure(kind: "protocol", description: "the stream was reset (HTTP/2 error \(state.resetCode))")
        }
        return APNsResponse(status: state.status, headers: state.headers, body: state.received)
    }

    private final class ClientState {
        let body: [UInt8]
        var offset = 0
        var status = 0
        var headers: [(name: String, value: String)] = []
        var received: [UInt8] = []
        var closed = false
        var resetCode: UInt32 = 0
        init(body: [UInt8]) { self.body = body }
    }

    private static func connect(unixSocket: String?, host: String, port: Int) throws(Failure) -> Int32 {
        if let path = unixSocket {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var a = sockaddr_un()
            a.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: a.sun_path) else {
                close(fd)
                throw Failure(kind: "unreachable", description: "socket path \(path) is too long")
            }
            withUnsafeMutableBytes(of: &a.sun_path) { raw in
                for (i, b) in bytes.enumerated() { raw[i] = b }
            }
            let rc = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard rc == 0 else {
                let why = String(cString: strerror(errno))
                close(fd)
                throw Failure(kind: "unreachable", description: "cannot connect to \(path): \(why)")
            }
            return fd
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &res) == 0, let first = res else {
            throw Failure(kind: "unreachable", description: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(res) }
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            if fd >= 0, Glibc.connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return fd }
            if fd >= 0 { close(fd) }
            ai = a.pointee.ai_next
        }
        throw Failure(
            kind: "unreachable",
            description: "cannot connect to \(host):\(port): \(String(cString: strerror(errno)))"
        )
    }
}
