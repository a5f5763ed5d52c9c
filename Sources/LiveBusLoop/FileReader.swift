import CLibUV
import Foundation

/// Reads a file descriptor on the loop, a chunk at a time as it arrives, with back-pressure: a pipe, FIFO, socket
/// or terminal through libuv (`uv_pipe_t`, `uv_tty_t` in its normal, line-buffered mode: a slow producer's line
/// arrives when it is written), a regular file or a device (`/dev/null`), which epoll cannot watch, by `read(2)`
/// of at most ``chunkSize`` bytes per loop iteration (``EventLoop/runSoon(_:)``), so timers, signals and sockets
/// are served between chunks.
///
/// Reading starts paused: call ``resume()``. Bytes go to ``onBytes`` (valid during the call only); the end of the
/// input (EOF) or a read error goes to ``onEnd`` once, after which nothing more is read. Source: libuv
/// `docs/src/stream.rst` (`uv_read_start`, `uv_read_stop`), `docs/src/pipe.rst` (`uv_pipe_open`),
/// `docs/src/tty.rst`.
public final class FileReader: LoopClosable {
    /// Bytes read at most per read: libuv's buffer for a stream, one `read(2)` for a file.
    public static let chunkSize = 65536

    /// Each chunk read; the bytes are valid during the call only. It may call ``pause()`` or ``close()``.
    public var onBytes: ((UnsafeRawBufferPointer) -> Void)?
    /// The end of the input: `nil` at EOF, else the read error. Runs once; nothing is read after it.
    public var onEnd: ((LoopError?) -> Void)?

    private let loop: EventLoop
    private let fd: Int32
    private let closesDescriptor: Bool
    private var pipe: UnsafeMutablePointer<uv_pipe_t>?
    private var tty: UnsafeMutablePointer<uv_tty_t>?
    private let buffer = UnsafeMutableRawPointer.allocate(byteCount: FileReader.chunkSize, alignment: 16)
    private var wanted = false
    private var reading = false
    private var sliceQueued = false
    private var ended = false
    private var closed = false

    /// Prepares to read `fd` (paused).
    /// - Parameters:
    ///   - loop: The loop to read on.
    ///   - fd: An open, readable descriptor (0 for standard input).
    ///   - closesDescriptor: Whether ``close()`` closes `fd` too (a file this reader opened; not standard input).
    /// - Throws: ``LoopError`` when libuv cannot take a pipe or terminal descriptor.
    public init(loop: EventLoop, fd: Int32, closesDescriptor: Bool) throws(LoopError) {
        self.loop = loop
        self.fd = fd
        self.closesDescriptor = closesDescriptor
        var st = stat()
        let kind = fstat(fd, &st) == 0 ? st.st_mode & S_IFMT : 0
        if isatty(fd) == 1 {
            let t = UnsafeMutablePointer<uv_tty_t>.allocate(capacity: 1)
            let rc = uv_tty_init(loop.loop, t, fd, 1)
            guard rc == 0 else {
                t.deallocate()
                buffer.deallocate()
                throw LoopError(rc, "uv_tty_init")
            }
            tty = t
            t.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        } else if kind == S_IFIFO || kind == S_IFSOCK {
            let p = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
            uv_pipe_init(loop.loop, p, 0)
            p.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            let rc = uv_pipe_open(p, fd)
            guard rc == 0 else {
                p.pointee.data = nil
                uv_close(asHandle(p)) { $0?.deallocate() }
                buffer.deallocate()
                throw LoopError(rc, "uv_pipe_open")
            }
            pipe = p
        }
    }

    private var stream: UnsafeMutablePointer<uv_stream_t>? {
        if let t = tty { return asStream(t) }
        if let p = pipe { return asStream(p) }
        return nil
    }

    /// Reads on (or starts reading); does nothing after the end or ``close()``.
    public func resume() {
        guard !closed, !ended else { return }
        wanted = true
        if let s = stream {
            guard !reading else { return }
            reading = true
            uv_read_start(
                s,
                { h, _, buf in
                    let r = Unmanaged<FileReader>.fromOpaque(h!.pointee.data).takeUnretainedValue()
                    buf!.pointee = uv_buf_init(
                        r.buffer.assumingMemoryBound(to: CChar.self),
                        UInt32(FileReader.chunkSize)
                    )
                },
                { s, n, _ in
                    let r = Unmanaged<FileReader>.fromOpaque(s!.pointee.data).takeUnretainedValue()
                    if n > 0 {
                        r.onBytes?(UnsafeRawBufferPointer(start: r.buffer, count: n))
                    } else if n < 0 {
                        r.end(n == Int(UV_EOF.rawValue) ? nil : LoopError(Int32(n), "read"))
                    }
                }
            )
        } else if !sliceQueued {
            sliceQueued = true
            loop.runSoon { [weak self] in self?.readSlice() }
        }
    }

    /// Stops reading until ``resume()`` (back-pressure: a pipe's writer then blocks once the pipe is full).
    public func pause() {
        wanted = false
        if let s = stream, reading, !closed {
            reading = false
            uv_read_stop(s)
        }
    }

    /// One `read(2)` of a regular file or device, then the next in the next iteration while not paused.
    private func readSlice() {
        sliceQueued = false
        guard wanted, !closed, !ended else { return }
        var n: Int
        repeat { n = read(fd, buffer, FileReader.chunkSize) } while n < 0 && errno == EINTR
        if n > 0 {
            onBytes?(UnsafeRawBufferPointer(start: buffer, count: n))
            if wanted && !closed && !ended && !sliceQueued {
                sliceQueued = true
                loop.runSoon { [weak self] in self?.readSlice() }
            }
        } else {
            end(n == 0 ? nil : LoopError(name: "E\(errno)", message: String(cString: strerror(errno))))
        }
    }

    private func end(_ error: LoopError?) {
        guard !ended else { return }
        ended = true
        pause()
        let cb = onEnd
        onEnd = nil
        cb?(error)
    }

    /// Stops reading and releases the handle (and the descriptor when it was given to the reader).
    public func close() {
        guard !closed else { return }
        pause()
        closed = true
        onBytes = nil
        onEnd = nil
        if let t = tty {
            uv_close(asHandle(t)) { $0?.deallocate() }
        }
        if let p = pipe {
            uv_close(asHandle(p)) { $0?.deallocate() }
        }
        if closesDescriptor && pipe == nil && tty == nil { Glibc.close(fd) }
        // libuv's pipe and tty handles own their descriptor and close it with the handle; no read callback runs
        // after uv_read_stop, so the buffer can go now.
        buffer.deallocate()
    }

    func closeFromLoop() { close() }
}
