import CLibUV
import Foundation

/// Reads standard input on the loop: keys from a terminal in raw mode (`uv_tty_t`), or bytes from a pipe.
public final class InputReader: LoopClosable {
    private var tty: UnsafeMutablePointer<uv_tty_t>?
    private var pipe: UnsafeMutablePointer<uv_pipe_t>?
    private var closed = false
    private let body: ([UInt8]) -> Void
    private var buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 1)

    /// Whether standard input is a terminal.
    public static var isTerminal: Bool { isatty(0) == 1 }
    /// Whether standard output is a terminal.
    public static var outputIsTerminal: Bool { isatty(1) == 1 }

    /// Starts reading standard input; `body` gets each chunk. Returns `nil` when stdin is neither a terminal nor a
    /// pipe (e.g. /dev/null or a file), which is not an error.
    public init?(loop: EventLoop, rawMode: Bool, _ body: @escaping ([UInt8]) -> Void) {
        self.body = body
        var st = stat()
        guard fstat(0, &st) == 0 else { return nil }
        let kind = st.st_mode & S_IFMT
        let stream: UnsafeMutablePointer<uv_stream_t>
        if isatty(0) == 1 {
            let t = UnsafeMutablePointer<uv_tty_t>.allocate(capacity: 1)
            guard uv_tty_init(loop.loop, t, 0, 1) == 0 else {
                t.deallocate()
                return nil
            }
            if rawMode { uv_tty_set_mode(t, UV_TTY_MODE_RAW) }
            tty = t
            stream = asStream(t)
        } else if kind == S_IFIFO || kind == S_IFSOCK {
            let p = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
            uv_pipe_init(loop.loop, p, 0)
            guard uv_pipe_open(p, 0) == 0 else {
                uv_close(asHandle(p)) { $0?.deallocate() }
                return nil
            }
            pipe = p
            stream = asStream(p)
        } else {
            return nil
        }
        stream.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_read_start(
            stream,
            { h, _, buf in
                let r = Unmanaged<InputReader>.fromOpaque(h!.pointee.data).takeUnretainedValue()
                buf!.pointee = uv_buf_init(r.buffer.assumingMemoryBound(to: CChar.self), 256)
            },
            { s, n, _ in
                let r = Unmanaged<InputReader>.fromOpaque(s!.pointee.data).takeUnretainedValue()
                if n > 0 {
                    r.body(Array(UnsafeRawBufferPointer(start: r.buffer, count: n)))
                } else if n < 0 {
                    r.close()
                }
            }
        )
        uv_unref(asHandle(stream))  // input alone does not keep the loop running
    }

    /// Stops reading and restores the terminal mode.
    public func close() {
        guard !closed else { return }
        closed = true
        if tty != nil { uv_tty_reset_mode() }
        let buf = buffer
        if let t = tty {
            uv_read_stop(asStream(t))
            uv_close(asHandle(t)) { $0?.deallocate() }
        }
        if let p = pipe {
            uv_read_stop(asStream(p))
            uv_close(asHandle(p)) { $0?.deallocate() }
        }
        // The read buffer is only used during read callbacks, which cannot run after uv_read_stop.
        buf.deallocate()
    }

    func closeFromLoop() { close() }
}
