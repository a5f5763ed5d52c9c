import CLibUV

/// What ``PipeListener`` and ``TCPListener`` share: a listening libuv stream whose `data` holds the listener
/// (retained from its init until its handle has closed), each pending connection accepted as a ``Connection``.
protocol StreamListening: AnyObject {
    var loop: EventLoop { get }
    /// Whether accepted connections are TCP streams (else Unix-socket pipes).
    static var acceptsTCP: Bool { get }
    /// Called with each accepted connection (not yet reading).
    var onConnection: ((Connection) -> Void)? { get }
    /// A failed accept: `status` is libuv's (negative errno).
    func acceptFailed(_ status: Int32)
    /// Stops listening (closes the handle).
    func close()
}

extension StreamListening {
    /// After a bind that returned `bindResult`, listens on `stream`; either failing closes the listener.
    /// - Throws: ``LoopError`` of `bind ADDRESS` or `listen ADDRESS` (`EADDRINUSE`, `EACCES`, …).
    func listen(
        afterBind bindResult: Int32,
        _ stream: UnsafeMutablePointer<uv_stream_t>,
        backlog: Int32,
        address: String
    ) throws(LoopError) {
        if bindResult < 0 {
            close()
            throw LoopError(bindResult, "bind \(address)")
        }
        let rc = listen(stream, backlog: backlog)
        if rc < 0 {
            close()
            throw LoopError(rc, "listen \(address)")
        }
    }

    /// `uv_listen` on `stream`, accepting each connection: a ``Connection`` to ``onConnection``, or closed when
    /// `uv_accept` fails; a failed listen callback goes to ``acceptFailed(_:)``.
    /// - Returns: libuv's result of `uv_listen` (0, or a negative errno).
    func listen(_ stream: UnsafeMutablePointer<uv_stream_t>, backlog: Int32) -> Int32 {
        uv_listen(stream, backlog) { server, status in
            guard let server, let data = server.pointee.data,
                let l = Unmanaged<AnyObject>.fromOpaque(data).takeUnretainedValue() as? any StreamListening
            else { return }
            guard status >= 0 else {
                l.acceptFailed(status)
                return
            }
            let c = Connection(loop: l.loop, tcp: type(of: l).acceptsTCP)
            if uv_accept(server, asStream(c.pipe)) == 0 {
                l.onConnection?(c)
            } else {
                c.close()
            }
        }
    }

    /// Closes the listening `handle`; once libuv has closed it, frees it and releases the listener its `data`
    /// holds.
    func closeHandle(_ handle: UnsafeMutablePointer<uv_handle_t>) {
        uv_close(handle) { h in
            let l = Unmanaged<AnyObject>.fromOpaque(h!.pointee.data)
            h!.deallocate()
            l.release()
        }
    }
}
