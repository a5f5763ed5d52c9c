import CLibWebSockets
import Foundation

// Why libwebsockets: Debian 12's libwebsockets-dev (4.1.6) is built with LWS_WITH_LIBUV, and its libuv event
// library (libwebsockets-evlib-uv) runs on a loop it is given ("foreign loop"), so HTTP is served from the daemon's
// own uv_loop_t, in the same turns as the bus: no thread, no second poller. It parses HTTP/1.1 (and h2), serves
// Server-Sent Events (lws_http_mark_sse) and Unix sockets. libmicrohttpd runs its own threads (or needs a
// select-driven adapter), libh2o in Debian is 2.2 with its own loop, and llhttp is only a parser.

/// The dashboard's HTTP server (libwebsockets on the daemon's loop): static files of the page, a Server-Sent Events
/// stream and a command endpoint, every request checked against the token (query `token=` or the cookie it sets).
///
/// Loop-bound. Each SSE client has a bounded, coalescing queue: one entry per key (`phone:<id>`: the newest
/// state wins) plus at most ``logQueueLimit`` log lines (the oldest are dropped and counted), so a slow browser
/// costs memory bounded by the number of phones and never holds up the loop or a phone.
final class DashboardServer {
    /// Log lines queued per SSE client before the oldest are dropped.
    static let logQueueLimit = 256
    /// Largest command body accepted, bytes.
    static let maximumBodyBytes = 65_536

    /// One browser's queue: one entry per `phone:` key (the newest state replaces what is queued), other keys (log
    /// lines) at most `logLimit`, the oldest dropped and counted. Pure.
    struct Client {
        var keys: [String] = []
        var payload: [String: [UInt8]] = [:]
        var logCount = 0
        /// Log lines dropped because the browser read too slowly.
        var dropped = 0
        var logLimit = DashboardServer.logQueueLimit

        /// Queues `frame` under `key`.
        mutating func push(key: String, frame: [UInt8]) {
            let isLog = !key.hasPrefix("phone:")
            if payload[key] == nil {
                keys.append(key)
                if isLog { logCount += 1 }
            }
            payload[key] = frame
            if isLog && logCount > logLimit, let i = keys.firstIndex(where: { !$0.hasPrefix("phone:") }) {
                payload[keys.remove(at: i)] = nil
                logCount -= 1
                dropped += 1
            }
        }

        /// The next frame to write, oldest key first.
        mutating func pop() -> [UInt8]? {
            guard !keys.isEmpty else { return nil }
            let k = keys.removeFirst()
            if !k.hasPrefix("phone:") { logCount -= 1 }
            return payload.removeValue(forKey: k)
        }

        /// Queued bytes.
        var bytes: Int { payload.values.reduce(0) { $0 + $1.count } }
    }

    struct Response {
        var status: UInt32
        var contentType: String
        var body: [UInt8]
    }

    private(set) var context: OpaquePointer?
    private let token: [UInt8]
    /// The directory the page's files are served from.
    let root: String
    private var clients: [Int: Client] = [:]
    private var wsis: [Int: OpaquePointer] = [:]
    private var bodies: [Int: [UInt8]] = [:]
    private var responses: [Int: Response] = [:]
    /// Requests refused for a missing or wrong token (for the log and tests).
    private(set) var refused = 0
    /// A POST /api/command body arrived: answer with ``respond(_:_:)`` (with the same key) when it is done.
    var onCommand: ((Int, [UInt8]) -> Void)?
    /// A new SSE client: queue the current state for it with ``enqueue(_:key:event:data:)``.
    var onSubscribe: ((Int) -> Void)?

    /// The port listened on (TCP), or nil.
    var port: Int? {
        guard let context else { return nil }
        let p = Int(livebus_lws_port(context))
        return p > 0 ? p : nil
    }

    /// Starts listening on `loop` (a `uv_loop_t *`).
    /// - Parameters:
    ///   - loop: the daemon's `uv_loop_t *` (``EventLoop/rawLoop``).
    ///   - host: an IPv4 address, or the socket path when `unixPath`.
    ///   - port: TCP port (1…65535), ignored for a Unix socket.
    ///   - unixPath: listen on the Unix socket at `host`.
    ///   - token: the secret every request must carry.
    ///   - root: the page's directory.
    /// - Throws: ``DaemonError`` naming the address when libwebsockets cannot listen.
    init(loop: UnsafeMutableRawPointer, host: String, port: Int, unixPath: Bool, token: String, root: String)
        throws(DaemonError)
    {
        self.token = Array(token.utf8)
        self.root = root
        let me = Unmanaged.passUnretained(self).toOpaque()
        let ctx = host.withCString { h in
            livebus_lws_create(loop, h, Int32(port), unixPath ? 1 : 0, me, dashboardCallback)
        }
        guard let ctx else {
            throw DaemonError(
                "--http: cannot listen on \(unixPath ? "unix:" : "")\(host)\(unixPath ? "" : ":\(port)") (in use, or not an address of this host); pick another port or path"
            )
        }
        context = ctx
    }

    /// Stops listening and closes every connection (libwebsockets closes its libuv handles in later turns).
    ///
    /// libwebsockets calls back while its handles close (in later loop turns, after the daemon let go of this
    /// object), so the object is kept alive from here on, answering those calls with the default handler: a few
    /// hundred bytes once per daemon.
    func close() {
        guard let c = context else { return }
        context = nil
        clients = [:]
        wsis = [:]
        bodies = [:]
        responses = [:]
        onCommand = nil
        onSubscribe = nil
        _ = Unmanaged.passRetained(self)
        lws_context_destroy(c)
    }

    /// Queues `data` as SSE event `event` for one client (`to`) or all (nil). A `key` starting with `phone:`
    /// replaces what is queued under it; other keys are log lines, bounded per client.
    func enqueue(_ to: Int?, key: String, event: String, data: [UInt8]) {
        var frame = Array("event: \(event)\ndata: ".utf8)
        // SSE data may not hold a newline: JSON from our encoder has none, but be safe.
        frame += data.map { $0 == 10 ? 32 : $0 }
        frame += [10, 10]
        let targets = to.map { [$0] } ?? Array(clients.keys)
        for k in targets {
            guard var c = clients[k] else { continue }
            c.push(key: key, frame: frame)
            clients[k] = c
            if let w = wsis[k] { lws_callback_on_writable(w) }
        }
    }

    /// How many SSE clients are connected.
    var subscriberCount: Int { clients.count }

    /// Answers a command request later (from the loop).
    func respond(_ key: Int, _ r: Response) {
        guard let w = wsis[key] else { return }
        responses[key] = r
        lws_callback_on_writable(w)
    }

    // MARK: - libwebsockets callbacks

    fileprivate func callback(
        _ wsi: OpaquePointer,
        _ reason: lws_callback_reasons,
        _ user: UnsafeMutableRawPointer?,
        _ input: UnsafeMutableRawPointer?,
        _ len: Int
    ) -> Int32 {
        guard context != nil else { return lws_callback_http_dummy(wsi, reason, user, input, len) }
        let key = Int(bitPattern: UnsafeRawPointer(wsi))
        switch reason {
        case LWS_CALLBACK_HTTP:
            let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/"
            return request(wsi, key: key, path: path)
        case LWS_CALLBACK_HTTP_BODY:
            guard var b = bodies[key] else { return 0 }
            if let input, len > 0 { b += UnsafeRawBufferPointer(start: input, count: len) }
            if b.count > Self.maximumBodyBytes {
                bodies[key] = nil
                let body = Self.errorBody(
                    "the command body is over \(Self.maximumBodyBytes) bytes; send {\"command\", \"args\"} within it",
                    code: "payloadTooLarge"
                )
                _ = send(wsi, 413, "application/json", String(decoding: body, as: UTF8.self))
                return -1
            }
            bodies[key] = b
            return 0
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            guard let b = bodies.removeValue(forKey: key) else { return 0 }
            wsis[key] = wsi
            onCommand?(key, b)
            return 0
        case LWS_CALLBACK_HTTP_WRITEABLE:
            if let r = responses.removeValue(forKey: key) {
                wsis[key] = nil
                return r.body.withUnsafeBufferPointer { b in
                    livebus_lws_respond(wsi, r.status, r.contentType, b.baseAddress, b.count, nil, nil)
                } != 0 ? -1 : 0
            }
            guard var c = clients[key], let frame = c.pop() else { return 0 }
            let more = !c.keys.isEmpty
            clients[key] = c
            let failed = frame.withUnsafeBufferPointer { livebus_lws_sse_write(wsi, $0.baseAddress, $0.count) }
            if failed != 0 { return -1 }
            if more { lws_callback_on_writable(wsi) }
            return 0
        case LWS_CALLBACK_CLOSED_HTTP:
            clients[key] = nil
            wsis[key] = nil
            bodies[key] = nil
            responses[key] = nil
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, len)
        }
    }

    private func request(_ wsi: OpaquePointer, key: Int, path: String) -> Int32 {
        let isPost = livebus_lws_is_post(wsi) != 0
        guard let how = authorized(wsi) else {
            refused += 1
            _ = send(wsi, 403, "text/plain", "403 forbidden: this page needs the token of the URL livebusd printed\n")
            return -1
        }
        let cookie =
            how == .query
            ? "livebus_dashboard=\(String(decoding: token, as: UTF8.self)); HttpOnly; SameSite=Strict; Path=/" : nil
        switch (path, isPost) {
        case ("/api/command", true):
            bodies[key] = []
            return 0
        case ("/events", false):
            if livebus_lws_sse_start(wsi) != 0 { return -1 }
            clients[key] = Client()
            wsis[key] = wsi
            onSubscribe?(key)
            lws_callback_on_writable(wsi)
            return 0
        case (_, false):
            let name = path == "/" ? "index.html" : String(path.dropFirst())
            // Only plain file names of the page's directory: no subdirectories, no dot files, no `..`.
            let allowed = CharacterSet(
                charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
            )
            guard !name.isEmpty, !name.hasPrefix("."), name.unicodeScalars.allSatisfy(allowed.contains),
                let data = FileManager.default.contents(atPath: root + "/" + name)
            else {
                return send(wsi, 404, "text/plain", "404 not found: \(path)\n")
            }
            let types = [
                "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "json": "application/json",
            ]
            let type = types[String(name.split(separator: ".").last ?? "")] ?? "application/octet-stream"
            let bytes = [UInt8](data)
            return bytes.withUnsafeBufferPointer { b in
                livebus_lws_respond(wsi, 200, type, b.baseAddress, b.count, cookie == nil ? nil : "set-cookie:", cookie)
            } != 0 ? -1 : 0
        default:
            return send(wsi, 405, "text/plain", "405: POST only to /api/command\n")
        }
    }

    private enum Authorization { case query, cookie }

    /// The request's token (query `token=`, else cookie `livebus_dashboard`) compared in constant time.
    private func authorized(_ wsi: OpaquePointer) -> Authorization? {
        var buf = [CChar](repeating: 0, count: 512)
        if let v = livebus_lws_urlarg(wsi, "token=", &buf, Int32(buf.count)) {
            return Self.constantTimeEqual(Array(String(cString: v).utf8), token) ? .query : nil
        }
        buf = [CChar](repeating: 0, count: 4096)
        guard livebus_lws_cookie(wsi, &buf, Int32(buf.count)) > 0 else { return nil }
        let cookie = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        for part in cookie.split(separator: ";") {
            let kv = part.trimmingCharacters(in: .whitespaces)
            if kv.hasPrefix("livebus_dashboard=") {
                return Self.constantTimeEqual(Array(kv.dropFirst("livebus_dashboard=".count).utf8), token)
                    ? .cookie : nil
            }
        }
        return nil
    }

    /// Byte strings compared in time independent of where they differ (the length is not secret).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) {
            diff |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return diff == 0
    }

    private func send(_ wsi: OpaquePointer, _ status: UInt32, _ type: String, _ text: String) -> Int32 {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { b in
            livebus_lws_respond(wsi, status, type, b.baseAddress, b.count, nil, nil)
        } != 0 ? -1 : 0
    }
}

/// The one libwebsockets callback: finds the server from the context's user pointer.
private func dashboardCallback(
    _ wsi: OpaquePointer?,
    _ reason: lws_callback_reasons,
    _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?,
    _ len: Int
) -> Int32 {
    guard let wsi, let ctx = lws_get_context(wsi), let u = lws_context_user(ctx) else {
        return lws_callback_http_dummy(wsi, reason, user, input, len)
    }
    return Unmanaged<DashboardServer>.fromOpaque(u).takeUnretainedValue().callback(wsi, reason, user, input, len)
}
