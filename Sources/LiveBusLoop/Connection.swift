import CLibUV
import Foundation

/// One Unix-socket stream (`uv_pipe_t`), either accepted by a ``PipeListener`` or made by ``connect(loop:path:_:)``.
///
/// Writes are gathered: everything written during one loop turn is flushed once, just before the loop blocks
/// (`uv_try_write` first, one queued `uv_write` for the rest). Write buffers live until their callback.
/// Source: ../shared/DESIGN.md "Where speed comes from"; libuv `docs/src/stream.rst`.
public final class Connection: LoopClosable {
    let pipe: UnsafeMutablePointer<uv_pipe_t>
    unowned let loop: EventLoop
    private var retained: Unmanaged<Connection>?
    // The state every write touches (one EVENT per subscriber of a fan-out writes here). Swift checks exclusive
    // access to a class's stored properties at run time, ≈75 instructions per access (callgrind, fan-out to 100
    // sessions: four per write). No access to these overlaps another: each is a read, an assignment, or `pending`'s
    // append in ``write(_:)-(([UInt8])->Void)``, whose body writes into the buffer it is given and nothing else (it
    // must not write to this connection). Release builds skip the check; debug builds (the tests) keep it, so an
    // overlap still traps there. Source: ISSUE-15 "Fan-out"; the Swift book, "Memory Safety".
    #if DEBUG
        private var pending: [UInt8] = []
        private var isDirty = false
        private var shutdownRequested = false
    #else
        @exclusivity(unchecked) private var pending: [UInt8] = []
        @exclusivity(unchecked) private var isDirty = false
        @exclusivity(unchecked) private var shutdownRequested = false
    #endif
    /// The loop's time (`uv_now`, ms) of the last flush that wrote something: a connection that writes rarely gives
    /// its output buffer back after each flush (``flush()``).
    private var lastFlushMs: UInt64 = 0
    /// A flush at least this long after the previous one gives the output buffer back (when it is small): an idle
    /// phone (a probe every few seconds) holds no output memory between its writes, while a streaming connection
    /// (flushes milliseconds apart) keeps its buffer and allocates nothing per write. massif, 1,000 idle sessions:
    /// 416 bytes per connection kept after the handshake's last write.
    static let idleFlushMilliseconds: UInt64 = 100
    /// Bytes offered to each read (`alloc_cb`): the loop's one shared read buffer (``EventLoop``), so an idle
    /// connection holds no read memory of its own.
    static let readBufferSize = EventLoop.readBufferSize
    private var closeDeadline: LoopTimer?

    #if DEBUG
        /// Bytes handed to libuv and not yet written to the socket.
        public private(set) var bytesInFlight = 0
        /// Every byte ever queued on this connection (a running offset: a frame written now ends at this value).
        public private(set) var bytesQueuedTotal = 0
        /// Every byte the kernel accepted so far; `bytesQueuedTotal - bytesSentTotal` is what is still outstanding.
        public private(set) var bytesSentTotal = 0
        /// `true` once closing began; writes are then ignored.
        public private(set) var isClosed = false
    #else
        /// Bytes handed to libuv and not yet written to the socket.
        @exclusivity(unchecked) public private(set) var bytesInFlight = 0
        /// Every byte ever queued on this connection (a running offset: a frame written now ends at this value).
        @exclusivity(unchecked) public private(set) var bytesQueuedTotal = 0
        /// Every byte the kernel accepted so far; `bytesQueuedTotal - bytesSentTotal` is what is still outstanding.
        @exclusivity(unchecked) public private(set) var bytesSentTotal = 0
        /// `true` once closing began; writes are then ignored.
        @exclusivity(unchecked) public private(set) var isClosed = false
    #endif
    /// Whether libuv is reading this stream (between ``startReading()`` and ``stopReading()``).
    public private(set) var isReading = false

    /// Called on the loop thread with each chunk of received bytes (valid only during the call).
    public var onRead: ((UnsafeRawBufferPointer) -> Void)?
    /// Called once when the connection closed: `nil` for an orderly end of stream or a local close.
    public var onClose: ((LoopError?) -> Void)?
    /// Called when all queued output was written (the queue drained), for back-pressure.
    public var onDrain: (() -> Void)?

    init(loop: EventLoop, tcp: Bool = false) {
        self.loop = loop
        loop.openStreamCount += 1
        pipe = .allocate(capacity: 1)
        // A TCP stream lives in the same (larger) allocation: uv_tcp_t is a uv_stream_t, as uv_pipe_t is.
        if tcp {
            uv_tcp_init(loop.loop, UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_tcp_t.self))
        } else {
            uv_pipe_init(loop.loop, pipe, 0)
        }
        retained = Unmanaged.passRetained(self)
        pipe.pointee.data = retained!.toOpaque()
    }

    static func of(_ s: UnsafeMutablePointer<uv_stream_t>?) -> Connection {
        Unmanaged<Connection>.fromOpaque(s!.pointee.data).takeUnretainedValue()
    }

    /// Bytes written but not yet on the socket: gathered this turn plus in flight.
    public var outstandingBytes: Int { pending.count + bytesInFlight }

    /// The connected peer's user id and process id (`SO_PEERCRED`), or `nil`.
    public var peerCredentials: (uid: UInt32, pid: Int32)? {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(asHandle(pipe), &fd) == 0 else { return nil }
        var uid: UInt32 = 0
        var pid: Int32 = 0
        guard CLibUV_peer_uid(fd, &uid, &pid) == 0 else { return nil }
        return (uid, pid)
    }

    /// `nil` when the process at the other end runs as `uid` or as root, else an error naming the peer's user: a
    /// client calls it after connect and before it sends anything, so nothing reaches another user's socket
    /// (an impostor bound first). A peer whose credentials cannot be read is refused too.
    /// - Parameters:
    ///   - path: The socket path, for the message.
    ///   - uid: The user the peer must be. Default: the caller's real uid.
    /// - Returns: `EPERM` with what to do, or `nil`.
    public func checkPeer(path: String, uid: UInt32 = getuid()) -> LoopError? {
        guard let peer = peerCredentials else {
            return LoopError(
                name: "EPERM",
                message: "cannot read the credentials (SO_PEERCRED) of the process serving \(path); nothing was sent"
            )
        }
        if peer.uid == uid || peer.uid == 0 { return nil }
        return LoopError(
            name: "EPERM",
            message:
                "\(path) is served by a process of user \(userName(uid: peer.uid)) (pid \(peer.pid)), not by you (\(userName(uid: uid))); nothing was sent to it. Start your own daemon (livebusd) or pass the --socket of yours"
        )
    }

    /// Starts delivering received bytes to ``onRead``; does nothing when already reading or closed.
    /// - Throws: ``LoopError`` if the stream cannot be read.
    public func startReading() throws(LoopError) {
        guard !isReading, !isClosed else { return }
        try uvCheck(
            uv_read_start(
                asStream(pipe),
                { h, _, buf in
                    let c = Unmanaged<Connection>.fromOpaque(h!.pointee.data).takeUnretainedValue()
                    buf!.pointee = uv_buf_init(
                        c.loop.takeReadBuffer().assumingMemoryBound(to: CChar.self),
                        UInt32(Connection.readBufferSize)
                    )
                },
                { s, nread, buf in
                    let c = Connection.of(s)
                    // libuv hands back the buffer of alloc_cb with every read_cb (also for EOF, errors, and
                    // nread 0): it goes back to the loop after the bytes were handled.
                    let base = UnsafeMutableRawPointer(buf?.pointee.base)
                    let loop = c.loop
                    if nread > 0, let base {
                        c.onRead?(UnsafeRawBufferPointer(start: base, count: nread))
                    } else if nread < 0 {
                        let err: LoopError? = nread == Int(UV_EOF.rawValue) ? nil : LoopError(Int32(nread), "read")
                        c.closeNow(error: err)
                    }
                    if let base { loop.returnReadBuffer(base) }
                }
            ),
            "uv_read_start"
        )
        isReading = true
    }

    /// Stops reading (back-pressure); resume with ``startReading()``.
    public func stopReading() {
        guard !isClosed, isReading else { return }
        isReading = false
        uv_read_stop(asStream(pipe))
    }

    /// Queues `bytes` for this loop turn's flush.
    public func write(_ bytes: [UInt8]) {
        guard !isClosed, !shutdownRequested, !bytes.isEmpty else { return }
        pending.append(contentsOf: bytes)
        bytesQueuedTotal += bytes.count
        markDirty()
    }

    /// Queues bytes produced by `body` directly into the pending buffer (no intermediate array).
    /// - Parameter body: Appends to the buffer it is given; it must not write to this connection itself.
    public func write(_ body: (inout [UInt8]) throws -> Void) rethrows {
        guard !isClosed, !shutdownRequested else { return }
        let before = pending.count
        defer { bytesQueuedTotal += pending.count - before }
        try body(&pending)
        if !pending.isEmpty { markDirty() }
    }

    private func markDirty() {
        if !isDirty {
            isDirty = true
            loop.markDirty(self)
        }
    }

    /// Writes now what was gathered (called by the loop before it blocks; callable directly).
    func flush() {
        isDirty = false
        guard !isClosed, !pending.isEmpty else { return }
        var offset = 0
        if bytesInFlight == 0 {
            let rc = pending.withUnsafeMutableBytes { raw -> Int32 in
                var b = uv_buf_init(raw.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(raw.count))
                return uv_try_write(asStream(pipe), &b, 1)
            }
            if rc > 0 {
                offset = Int(rc)
                bytesSentTotal += offset
            } else if rc < 0 && rc != UV_EAGAIN.rawValue {
                closeNow(error: LoopError(rc, "write"))
                return
            }
        }
        let remaining = pending.count - offset
        if remaining > 0 {
            let mem = UnsafeMutableRawPointer.allocate(byteCount: remaining, alignment: 1)
            pending.withUnsafeBytes { raw in
                mem.copyMemory(from: raw.baseAddress! + offset, byteCount: remaining)
            }
            let req = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
            req.pointee.data = mem
            var b = uv_buf_init(mem.assumingMemoryBound(to: CChar.self), UInt32(remaining))
            bytesInFlight += remaining
            let rc = uv_write(req, asStream(pipe), &b, 1) { req, status in
                let r = req!
                let s = r.pointee.handle!
                let c = Connection.of(s)
                c.writeCompleted(req: r, status: status)
            }
            if rc < 0 {
                bytesInFlight -= remaining
                mem.deallocate()
                req.deallocate()
                closeNow(error: LoopError(rc, "uv_write"))
                return
            }
            inFlightSizes.append(remaining)
        }
        let now = loop.nowMilliseconds
        if now &- lastFlushMs >= Self.idleFlushMilliseconds && pending.capacity <= 4096 {
            pending = []
        } else {
            pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
        }
        lastFlushMs = now
        if bytesInFlight == 0 { afterDrain() }
    }

    private var inFlightSizes: [Int] = []

    private func writeCompleted(req: UnsafeMutablePointer<uv_write_t>, status: Int32) {
        req.pointee.data.deallocate()
        req.deallocate()
        let size = inFlightSizes.isEmpty ? 0 : inFlightSizes.removeFirst()
        bytesInFlight -= size
        if status >= 0 { bytesSentTotal += size }
        if status < 0 {
            if status != UV_ECANCELED.rawValue { closeNow(error: LoopError(status, "write")) }
            return
        }
        if bytesInFlight == 0 && pending.isEmpty { afterDrain() }
    }

    private func afterDrain() {
        if shutdownRequested {
            beginClose()
        } else {
            onDrain?()
        }
    }

    /// Flushes what is queued, then closes (used after a fatal ERROR frame, or BYE). A peer that does not read
    /// what is left is closed anyway after `timeoutMilliseconds` (monotonic), so it cannot hold its descriptor.
    public func closeAfterFlush(timeoutMilliseconds: UInt64 = 2000) {
        guard !isClosed, !shutdownRequested else { return }
        shutdownRequested = true
        closeDeadline = loop.schedule(after: timeoutMilliseconds) { [weak self] in self?.close() }
        closeDeadline?.unref()
        isDirty = false
        if !pending.isEmpty {
            shutdownRequested = false
            flush()
            shutdownRequested = true
        }
        if bytesInFlight == 0 && pending.isEmpty { beginClose() }
    }

    /// Closes at once; queued writes are dropped (their callbacks get ECANCELED).
    public func close() { closeNow(error: nil) }

    private func closeNow(error: LoopError?) {
        guard !isClosed else { return }
        isClosed = true
        pending = []
        closeDeadline?.cancel()
        closeDeadline = nil
        let cb = onClose
        onClose = nil
        onRead = nil
        onDrain = nil
        finishClose()
        cb?(error)
    }

    private func beginClose() { closeNow(error: nil) }

    private func finishClose() {
        guard uv_is_closing(asHandle(pipe)) == 0 else { return }
        uv_read_stop(asStream(pipe))
        uv_close(asHandle(pipe)) { h in
            let c = Unmanaged<Connection>.fromOpaque(h!.pointee.data)
            let conn = c.takeUnretainedValue()
            conn.loop.openStreamCount -= 1
            h!.deallocate()
            c.release()
        }
    }

    func closeFromLoop() { close() }

    /// Connects to the Unix socket at `path`; `completion` runs on the loop thread.
    /// - Note: Paths longer than the kernel's `sun_path` are rejected here, because libuv 1.44 truncates them.
    public static func connect(
        loop: EventLoop,
        path: String,
        _ completion: @escaping (Result<Connection, LoopError>) -> Void
    ) {
        if let e = PipeListener.checkPath(path) {
            completion(.failure(e))
            return
        }
        let c = Connection(loop: loop)
        let req = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        let box = Unmanaged.passRetained(ConnectBox(connection: c, completion: completion))
        req.pointee.data = box.toOpaque()
        uv_pipe_connect(req, c.pipe, path) { req, status in
            let box = Unmanaged<ConnectBox>.fromOpaque(req!.pointee.data).takeRetainedValue()
            req!.deallocate()
            if status < 0 {
                box.connection.close()
                box.completion(.failure(LoopError(status, "connect")))
            } else {
                box.completion(.success(box.connection))
            }
        }
    }
}

private final class ConnectBox {
    let connection: Connection
    let completion: (Result<Connection, LoopError>) -> Void
    init(connection: Connection, completion: @escaping (Result<Connection, LoopError>) -> Void) {
        self.connection = connection
        self.completion = completion
    }
}

/// A listening Unix socket (`uv_pipe_t` + `uv_listen`).
public final class PipeListener: LoopClosable {
    private let pipe: UnsafeMutablePointer<uv_pipe_t>
    unowned let loop: EventLoop
    private var retained: Unmanaged<PipeListener>?
    private var closed = false
    /// The socket path.
    public let path: String
    /// The socket file bound at ``path`` (`lstat(2)` right after the bind), `nil` before a successful bind.
    private var bound: FileIdentity?
    /// What ``close()`` did with the socket file: `nil` before the close (or when the bind failed).
    public private(set) var socketFileRemoval: FileIdentity.Removal?
    /// Called on the loop thread with each accepted connection (not yet reading).
    public var onConnection: ((Connection) -> Void)?
    /// Called on the loop thread when accepting failed (`EMFILE`, `ENFILE`, …), after the pending connection was
    /// answered with ``refusal`` and closed through the reserve descriptor; the `Int` is how many were refused so.
    public var onAcceptError: ((LoopError, Int) -> Void)?
    /// Bytes written to a connection refused for lack of descriptors (e.g. an ERROR frame), best effort.
    public var refusal: [UInt8] = []
    /// A descriptor held in reserve (`/dev/null`): closed to accept and refuse a connection when the process is out
    /// of descriptors, then reopened. libuv keeps one of its own, but when it cannot use it, its accept loop calls
    /// back with `EMFILE` over and over without returning; taking the pending connection here ends that loop.
    /// Source: libuv `src/unix/stream.c` (`uv__server_io`, `uv__emfile_trick`).
    private var reserveDescriptor: Int32 = -1

    /// Longest socket path accepted, in bytes.
    public static var maximumPathLength: Int { Int(CLibUV_max_socket_path()) }

    /// An error when `path` cannot be a socket path, else `nil`.
    public static func checkPath(_ path: String) -> LoopError? {
        if path.isEmpty { return LoopError(name: "EINVAL", message: "socket path is empty") }
        if path.utf8.count > maximumPathLength {
            return LoopError(
                name: "ENAMETOOLONG",
                message:
                    "socket path is \(path.utf8.count) bytes; Unix sockets allow at most \(maximumPathLength). Use a shorter path, e.g. under /tmp"
            )
        }
        return nil
    }

    /// `ENOENT` naming what to do when the directory that would hold the socket `path` does not exist (uv_pipe_bind
    /// reports it as EACCES on Linux), else `nil`.
    public static func checkDirectory(of path: String) -> LoopError? {
        let directory = SocketPath.directory(of: path)
        var st = stat()
        guard stat(directory, &st) != 0 else { return nil }
        return LoopError(
            name: "ENOENT",
            message:
                "the directory \(directory) does not exist; create it (mkdir -p \(directory)) or choose another path"
        )
    }

    /// Binds `path` with mode 0600 and listens.
    /// - Throws: ``LoopError`` (`EADDRINUSE` when the path exists, `ENAMETOOLONG`, `EACCES`, …).
    public init(loop: EventLoop, path: String, backlog: Int32 = 511) throws(LoopError) {
        if let e = PipeListener.checkPath(path) ?? PipeListener.checkDirectory(of: path) { throw e }
        self.loop = loop
        self.path = path
        pipe = .allocate(capacity: 1)
        uv_pipe_init(loop.loop, pipe, 0)
        retained = Unmanaged.passRetained(self)
        pipe.pointee.data = retained!.toOpaque()
        reserveDescriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
        let old = umask(0o177)  // the socket file is created 0600: only the daemon's user may connect
        let rc = uv_pipe_bind(pipe, path)
        umask(old)
        if rc == 0 {
            // The socket file this listener made, so close removes only it: libuv would unlink whatever is at the
            // path when the handle closes (src/unix/pipe.c, uv__pipe_close), so its copy of the path is taken back.
            bound = FileIdentity(path: path)
            if let name = pipe.pointee.pipe_fname {
                free(UnsafeMutableRawPointer(mutating: name))
                pipe.pointee.pipe_fname = nil
            }
        }
        try listen(afterBind: rc, asStream(pipe), backlog: backlog, address: path)
    }

    func acceptFailed(_ status: Int32) {
        var refused = 0
        if status == UV_EMFILE.rawValue || status == UV_ENFILE.rawValue {
            var fd: uv_os_fd_t = -1
            if uv_fileno(asHandle(pipe), &fd) == 0 {
                if reserveDescriptor >= 0 { Glibc.close(reserveDescriptor) }
                reserveDescriptor = -1
                while true {
                    let c = Glibc.accept(fd, nil, nil)
                    guard c >= 0 else { break }
                    _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK)
                    refused += 1
                    if !refusal.isEmpty { _ = refusal.withUnsafeBytes { Glibc.write(c, $0.baseAddress, $0.count) } }
                    Glibc.close(c)
                }
                reserveDescriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            }
        }
        onAcceptError?(LoopError(status, "accept"), refused)
    }

    /// Stops listening and removes the socket file when ``path`` still names the socket this listener bound (same
    /// device and inode, ``FileIdentity``); a file that replaced it (another daemon's socket) is left in place.
    /// What happened is in ``socketFileRemoval``. The file is removed before the descriptor closes, as libuv does,
    /// so a socket bound at the path after the close is never the one removed.
    public func close() {
        guard !closed else { return }
        closed = true
        if reserveDescriptor >= 0 { Glibc.close(reserveDescriptor) }
        reserveDescriptor = -1
        onConnection = nil
        socketFileRemoval = bound?.removeIfUnchanged(path)
        closeHandle(asHandle(pipe))
    }

    func closeFromLoop() { close() }
}

extension PipeListener: StreamListening {
    static var acceptsTCP: Bool { false }
}
