import CLibUV

/// An error from libuv or from the loop wrapper's own checks.
public struct LoopError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The libuv error number (negative errno), or 0 for the wrapper's own errors.
    public var errno: Int32
    /// libuv's name for the error, e.g. `EADDRINUSE`.
    public var name: String
    /// The call that failed and what to do.
    public var message: String

    /// Creates an error from a libuv result code.
    public init(_ rc: Int32, _ call: String) {
        errno = rc
        name = String(cString: uv_err_name(rc))
        message = "\(call): \(String(cString: uv_strerror(rc)))"
    }

    /// Creates a wrapper error.
    public init(name: String, message: String) {
        errno = 0
        self.name = name
        self.message = message
    }

    public var description: String { "\(message) (\(name))" }

    /// `true` for "address already in use".
    public var isAddressInUse: Bool { errno == UV_EADDRINUSE.rawValue }
    /// `true` for "connection refused" or "no such file" (nothing listens on a socket path).
    public var isNotListening: Bool { errno == UV_ECONNREFUSED.rawValue || errno == UV_ENOENT.rawValue }
}

/// Turns a negative libuv result into a thrown ``LoopError``.
@inline(__always)
func uvCheck(_ rc: Int32, _ call: @autoclosure () -> String) throws(LoopError) {
    if rc < 0 { throw LoopError(rc, call()) }
}

@inline(__always)
func asHandle<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
    UnsafeMutableRawPointer(p).assumingMemoryBound(to: uv_handle_t.self)
}

@inline(__always)
func asStream<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_stream_t> {
    UnsafeMutableRawPointer(p).assumingMemoryBound(to: uv_stream_t.self)
}
