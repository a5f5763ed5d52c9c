import Foundation
import LiveBusLoop

/// `SOCKET.dashboard`: the dashboard's URL with its token, written by `livebusd --http` next to its socket (mode
/// 0600) and read by `livebus dashboard`.
///
/// The socket may sit in a directory other users can write (`/tmp`), so the file follows ``OwnedPath``'s rule
/// (fresh-user review F1): a symbolic link there, or a file of another user, is refused before the daemon starts
/// (exit 3, as another user's socket or data directory), never written through or into; the file is written as a new
/// file renamed into place, and removed at exit only while the path still names it.
enum DashboardFile {
    /// The file's path for `socket`.
    static func path(socket: String) -> String { socket + ".dashboard" }

    /// `nil` when the daemon may write `SOCKET.dashboard` (absent, or a regular file of this user); else the
    /// refusal naming the path, its owner or link, and what to do (exit 3).
    /// - Parameter socket: The daemon's `--socket`.
    /// - Returns: The refusal, or `nil`.
    static func writeRefusal(socket: String) -> CLIError? {
        let file = path(socket: socket)
        return OwnedPath.problem(file, kind: .file).map { refusal(file, $0) }
    }

    /// Writes `url` (and a newline) to `SOCKET.dashboard`, mode 0600, by ``OwnedPath/replace(_:with:mode:uid:)``.
    /// - Parameters:
    ///   - url: The dashboard's URL with its token.
    ///   - socket: The daemon's `--socket`.
    /// - Returns: The file written, for ``FileIdentity/removeIfUnchanged(_:)`` at exit.
    /// - Throws: ``CLIError`` (exit 3) when the path is refused, or the write fails.
    static func write(_ url: String, socket: String) throws(CLIError) -> FileIdentity {
        let file = path(socket: socket)
        do {
            return try OwnedPath.replace(file, with: Array((url + "\n").utf8), mode: 0o600)
        } catch {
            if let p = error.problem { throw refusal(file, p) }
            throw CLIError(
                "socketUnavailable",
                "\(error.description): the dashboard's URL cannot be written next to the socket",
                recovery: "choose a --socket in a directory you can write",
                exit: .daemonUnreachable
            )
        }
    }

    /// The refusal of `file`, whose problem is `problem`.
    private static func refusal(_ file: String, _ problem: OwnedPath.Problem) -> CLIError {
        let what = OwnedPath.describe(problem, path: file, kind: .file)
        let why: String
        switch problem {
        case .symbolicLink:
            why = "the dashboard's URL and token are never written through a link (its target would be overwritten)"
        case .owner:
            why = "its owner could read the dashboard's token and drive your phones through it"
        case .wrongKind, .openToOthers:
            why = "the dashboard's URL and token go in a regular file of yours"
        }
        return CLIError(
            "socketUnavailable",
            "\(what): \(why); nothing was started",
            recovery:
                "remove it (rm \(file)) and start again, or choose another --socket (the default, \(defaultSocketPath()), is private to you)",
            exit: .daemonUnreachable
        )
    }

    /// `nil` when `livebus dashboard` may trust `SOCKET.dashboard`: absent, or a regular file of this user or
    /// root (a daemon the CLI talks to runs as one of them: `SO_PEERCRED`); else the refusal (exit 3), so a URL
    /// planted by another user is never opened.
    /// - Parameter socket: The `--socket`.
    /// - Returns: The refusal, or `nil`.
    static func readRefusal(socket: String) -> CLIError? {
        let file = path(socket: socket)
        // A regular file of root's is trusted too (a link or another kind is judged before the owner).
        guard let problem = OwnedPath.problem(file, kind: .file), problem != .owner(0) else { return nil }
        return CLIError(
            "socketUnavailable",
            "\(OwnedPath.describe(problem, path: file, kind: .file)): its URL is not opened, another user may have put it there",
            recovery:
                "remove it (rm \(file)) and restart your livebusd --http, or pass the --socket of your own daemon",
            exit: .daemonUnreachable
        )
    }
}
