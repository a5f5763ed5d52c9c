import Foundation
import LiveBusAPNs
import LiveBusLoop

/// The APNs-compatible HTTP/2 endpoint on the daemon's libuv loop: listeners (loopback TCP with TLS or `h2c`,
/// a Unix socket with `h2c`), one nghttp2 session per connection fed with the bytes libuv reads, and the
/// limits of ``HTTP2Limits``. Each complete request goes to ``onRequest``; its answer is written back on the
/// same stream.
///
/// Bad input: an HTTP/1.x request gets `505 HTTP Version Not Supported` (APNs speaks HTTP/2 only) and is
/// closed; other bytes that are not the HTTP/2 preface close the connection; a connection without a complete
/// preface (or TLS handshake) after ``HTTP2Limits/handshakeTimeoutMilliseconds`` is closed; a stream whose
/// request does not end within ``HTTP2Limits/streamTimeoutMilliseconds`` gets 400 `IdleTimeout` and is reset;
/// streams beyond ``HTTP2Limits/maxConcurrentStreams`` are refused by nghttp2 (RST_STREAM REFUSED_STREAM).
public final class APNsServer {
    unowned let loop: EventLoop
    /// The limits every connection gets.
    public let limits: HTTP2Limits
    /// Handles one request; call `respond` once (now or later, on the loop thread).
    public var onRequest: ((APNsRequest, @escaping (APNsResponse) -> Void) -> Void)?
    /// One line per notable connection event (refused preface, timeouts), for the daemon's log.
    public var onLog: ((String) -> Void)?
    private var tcpListeners: [TCPListener] = []
    private var pipeListeners: [PipeListener] = []
    fileprivate var connections: [ObjectIdentifier: H2Connection] = [:]
    private let tls: TLSServerContext?

    /// A server; `tls` is needed for ``listenTCP(host:port:tls:)`` with `tls: true`.
    public init(loop: EventLoop, limits: HTTP2Limits = HTTP2Limits(), tls: TLSServerContext? = nil) {
        self.loop = loop
        self.limits = limits
        self.tls = tls
    }

    /// Listens on `host:port` (TLS with ALPN `h2` when `tls`, else `h2c` with prior knowledge).
    /// - Returns: the port (the kernel's choice for 0).
    /// - Throws: ``LoopError`` from binding.
    @discardableResult
    public func listenTCP(host: String, port: Int, tls useTLS: Bool) throws(LoopError) -> Int {
        let l = try TCPListener(loop: loop, host: host, port: port)
        l.onConnection = { [unowned self] c in self.accept(c, tls: useTLS ? self.tls : nil) }
        tcpListeners.append(l)
        return l.port
    }

    /// Listens on the Unix socket `path` (`h2c`, mode 0600).
    /// - Throws: ``LoopError`` from binding.
    public func listenUnix(path: String) throws(LoopError) {
        let l = try PipeListener(loop: loop, path: path)
        l.onConnection = { [unowned self] c in self.accept(c, tls: nil) }
        pipeListeners.append(l)
    }

    /// How many client connections are open.
    public var connectionCount: Int { connections.count }

    private func accept(_ c: Connection, tls: TLSServerContext?) {
        let tlsState: TLSConnection?
        if let tls {
            guard let t = TLSConnection(context: tls) else {
                onLog?("apns: TLS session could not be created; connection closed")
                c.close()
                return
            }
            tlsState = t
        } else {
            tlsState = nil
        }
        let h = H2Connection(server: self, connection: c, tls: tlsState)
        connections[ObjectIdentifier(h)] = h
        h.start()
    }

    fileprivate func closed(_ h: H2Connection) { connections[ObjectIdentifier(h)] = nil }

    fileprivate func log(_ s: String) { onLog?(s) }

    /// Stops listening and closes every connection.
    public func close() {
        for l in tcpListeners { l.close() }
        for l in pipeListeners { l.close() }
        tcpListeners = []
        pipeListeners = []
        for h in Array(connections.values) { h.shutdown() }
    }
}

/// The client preface every HTTP/2 connection starts with (RFC 9113 §3.4).
let http2Preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

private final class H2Connection {
    unowned let server: APNsServer
    let connection: Connection
    let tls: TLSConnection?
    let session: HTTP2Session
    var prefaceSeen: [UInt8] = []
    var prefaceDone = false
    var handshakeTimer: LoopTimer?
    var streamTimers: [Int32: LoopTimer] = [:]
    var closing = false

    init(server: APNsServer, connection: Connection, tls: TLSConnection?) {
        self.server = server
        self.connection = connection
        self.tls = tls
        session = HTTP2Session(limits: server.limits)
    }

    func start() {
        session.onStreamOpened = { [unowned self] id in
            self.streamTimers[id]?.cancel()
            self.streamTimers[id] = self.server.loop.schedule(after: self.server.limits.streamTimeoutMilliseconds) {
                [weak self] in self?.streamTimedOut(id)
            }
        }
        session.onRequest = { [unowned self] id, request in
            self.streamTimers.removeValue(forKey: id)?.cancel()
            self.server.onRequest?(request) { [weak self] response in
                guard let self, !self.closing else { return }
                self.session.respond(id, response)
                self.flush()
            }
        }
        connection.onRead = { [unowned self] bytes in self.received(bytes) }
        connection.onClose = { [unowned self] _ in self.finished() }
        connection.onDrain = { [weak self] in
            guard let self, !self.closing else { return }
            try? self.connection.startReading()
        }
        handshakeTimer = server.loop.schedule(after: server.limits.handshakeTimeoutMilliseconds) { [weak self] in
            guard let self, !self.prefaceDone else { return }
            self.server.log(
                "apns: closed a connection that sent no HTTP/2 preface\(self.tls != nil ? " (or finished no TLS handshake)" : "") within \(self.server.limits.handshakeTimeoutMilliseconds) ms"
            )
            self.shutdown()
        }
        do { try connection.startReading() } catch { shutdown() }
    }

    func received(_ bytes: UnsafeRawBufferPointer) {
        guard !closing else { return }
        if let tls {
            switch tls.receive(bytes) {
            case .failure(let message):
                server.log("apns: TLS: \(message); connection closed")
                write(tls.takeNetworkOutput())
                shutdownAfterFlush()
            case .success(let plain):
                write(tls.takeNetworkOutput())
                if !plain.isEmpty { plain.withUnsafeBytes { plaintext($0) } }
            }
        } else {
            plaintext(bytes)
        }
    }

    func plaintext(_ bytes: UnsafeRawBufferPointer) {
        guard !closing, bytes.count > 0 else { return }
        if !prefaceDone {
            let take = min(http2Preface.count - prefaceSeen.count, bytes.count)
            prefaceSeen += bytes.prefix(take)
            guard prefaceSeen.elementsEqual(http2Preface.prefix(prefaceSeen.count)) else {
                refuseNonHTTP2(Array(bytes))
                return
            }
            if prefaceSeen.count == http2Preface.count {
                prefaceDone = true
                handshakeTimer?.cancel()
                handshakeTimer = nil
                let ok = http2Preface.withUnsafeBytes { session.receive($0) }
                let rest = UnsafeRawBufferPointer(rebasing: bytes[take...])
                if ok && rest.count > 0 { _ = session.receive(rest) }
            }
            flush()
            return
        }
        _ = session.receive(bytes)
        flush()
    }

    /// Not the HTTP/2 preface: an HTTP/1.x request gets 505 and an explanation; anything else is closed.
    func refuseNonHTTP2(_ first: [UInt8]) {
        let text = String(decoding: (prefaceSeen.count > first.count ? prefaceSeen : first).prefix(64), as: UTF8.self)
        let firstLine = text.split(separator: "\r\n").first.map(String.init) ?? text
        if firstLine.range(of: #"^[A-Z]+ \S+ HTTP/1\.[01]"#, options: .regularExpression) != nil
            || firstLine.range(of: #"^[A-Z]+ \S*$"#, options: .regularExpression) != nil
        {
            let body = Array(
                #"{"livebus-message":"APNs speaks HTTP/2 only: this was HTTP/1.x. Use an HTTP/2 client (curl --http2-prior-knowledge on the h2c listener, curl --http2 on the TLS one)"}"#
                    .utf8
            )
            let head =
                "HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: application/json\r\ncontent-length: \(body.count)\r\nconnection: close\r\n\r\n"
            server.log("apns: refused an HTTP/1.x request (\(firstLine.prefix(60))) with 505")
            write(Array(head.utf8) + body)
        } else {
            server.log("apns: closed a connection that did not start with the HTTP/2 preface")
        }
        shutdownAfterFlush()
    }

    func streamTimedOut(_ id: Int32) {
        streamTimers[id] = nil
        guard !closing, session.isIncomplete(id) else { return }
        server.log(
            "apns: stream \(id) sent no complete request within \(server.limits.streamTimeoutMilliseconds) ms: 400 IdleTimeout"
        )
        let id16 = UUID().uuidString
        session.respond(
            id,
            APNsResponse.failure(
                APNsRejection(
                    .idleTimeout,
                    "the request did not end within \(server.limits.streamTimeoutMilliseconds) ms"
                ),
                apnsID: id16,
                uniqueID: UUID().uuidString.lowercased()
            )
        )
        flush()
    }

    func flush() {
        guard !closing else { return }
        let out = session.takeOutput()
        if let tls {
            if !out.isEmpty { tls.send(out) }
            write(tls.takeNetworkOutput())
        } else {
            write(out)
        }
        if session.failure != nil || session.isFinished {
            shutdownAfterFlush()
            return
        }
        if connection.outstandingBytes > server.limits.maxOutstandingBytes { connection.stopReading() }
    }

    func write(_ bytes: [UInt8]) {
        if !bytes.isEmpty { connection.write(bytes) }
    }

    func shutdownAfterFlush() {
        guard !closing else { return }
        closing = true
        cancelTimers()
        connection.closeAfterFlush()
    }

    func shutdown() {
        guard !closing else {
            connection.close()
            return
        }
        closing = true
        cancelTimers()
        connection.close()
    }

    func cancelTimers() {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        for t in streamTimers.values { t.cancel() }
        streamTimers = [:]
    }

    func finished() {
        closing = true
        cancelTimers()
        server.closed(self)
    }
}
