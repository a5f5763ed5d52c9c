import Foundation

/// A small structured logger in swift-log's shape: a constant message plus dotted metadata keys.
///
/// Components receive a `Logger`; they never make their own. Tests pass a capturing handler.
/// Source: swift-log `Docs.docc/BestPractices/002-StructuredLogging.md`, `003-AcceptingLoggers.md`.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case debug, info, notice, warning, error
        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    /// Where records go: level, message, metadata (already flattened to strings).
    public typealias Handler = @Sendable (Level, String, [(String, String)]) -> Void

    /// The lowest level emitted.
    public var minimumLevel: Level
    private let handler: Handler

    /// Creates a logger writing through `handler`.
    public init(minimumLevel: Level = .info, handler: @escaping Handler) {
        self.minimumLevel = minimumLevel
        self.handler = handler
    }

    /// A logger that writes one line per record to standard error: `time level message key=value …`.
    public static func standardError(label: String, minimumLevel: Level = .info) -> Logger {
        Logger(minimumLevel: minimumLevel) { level, message, metadata in
            var line = "\(timestamp()) \(label) \(level) \(message)"
            for (k, v) in metadata { line += " \(k)=\(v.contains(" ") ? "\"\(v)\"" : v)" }
            line += "\n"
            StandardStream.write(Array(line.utf8), to: 2)
        }
    }

    /// A logger that drops everything.
    public static let none = Logger(minimumLevel: .error) { _, _, _ in }

    /// Emits a record when `level` ≥ ``minimumLevel``. The message and the metadata are built only then (a
    /// connect's `session attached` line formatted seven values at `--log-level warning`, where nothing is written).
    public func log(
        _ level: Level,
        _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> [(String, String)] = []
    ) {
        guard level >= minimumLevel else { return }
        handler(level, message(), metadata())
    }

    /// Emits an info record.
    public func info(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [(String, String)] = []) {
        log(.info, message(), metadata())
    }

    /// Emits a warning record.
    public func warning(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [(String, String)] = []) {
        log(.warning, message(), metadata())
    }

    /// Emits a debug record.
    public func debug(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [(String, String)] = []) {
        log(.debug, message(), metadata())
    }

    private static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = tm()
        var secs = ts.tv_sec
        gmtime_r(&secs, &t)
        return String(
            format: "%02d:%02d:%02d.%03d",
            t.tm_hour,
            t.tm_min,
            t.tm_sec,
            Int(ts.tv_nsec / 1_000_000)
        )
    }
}

/// Writes to a file descriptor without Foundation's `FileHandle.write`, which traps on a closed pipe
/// (`livebus attach --json | head` must end quietly, not crash).
public enum StandardStream {
    /// Writes all of `bytes` to `fd`. When the reader went away (EPIPE) the process exits 0 for stdout, as `yes | head`
    /// does; other errors are ignored (nowhere left to report them).
    public static func write(_ bytes: [UInt8], to fd: Int32) {
        if !offer(bytes, to: fd) && fd == 1 { exit(0) }
    }

    /// Writes all of `bytes` to `fd` and never ends the process, for a caller with something to clean up first (the
    /// demo's private daemon and directory, which `exit` would leave behind).
    /// - Returns: false when the reader went away (EPIPE); other errors are ignored, as ``write(_:to:)`` does.
    @discardableResult
    public static func offer(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return !(n < 0 && errno == EPIPE)
            }
        }
        return true
    }

    /// Writes `text` to standard output.
    public static func out(_ text: String) { write(Array(text.utf8), to: 1) }
    /// Writes `text` to standard error.
    public static func err(_ text: String) { write(Array(text.utf8), to: 2) }
}
