import Foundation
import LiveBusLoop
import Testing

/// The rule for files in shared places (fresh-user review F1, F2) and the directory of a socket path (F6).
struct OwnedPathTests {
    static func directory() -> String {
        var template = Array("/tmp/lbop-XXXXXX".utf8CString)
        return String(cString: mkdtemp(&template)!)
    }

    static func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    /// A symbolic link at the name is refused and its target left as it was; nothing else is left behind.
    @Test func replaceNeverWritesThroughALink() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "precious\n".write(toFile: dir + "/victim", atomically: false, encoding: .utf8)
        #expect(symlink(dir + "/victim", dir + "/f") == 0)
        #expect(throws: OwnedPath.ReplaceError.self) { try OwnedPath.replace(dir + "/f", with: Array("x".utf8)) }
        do {
            try OwnedPath.replace(dir + "/f", with: Array("x".utf8))
        } catch {
            #expect(error.problem == .symbolicLink(target: dir + "/victim"))
            #expect(error.description == "\(dir)/f is a symbolic link (to \(dir)/victim)")
        }
        #expect(Self.read(dir + "/victim") == "precious\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["f", "victim"])
    }

    /// An own file is replaced by a new file (another inode) of the mode asked for, whatever the umask and the old
    /// file's mode; its identity is the new file's.
    @Test func replaceMakesANewPrivateFile() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/f"
        try "old\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o666)
        var before = stat()
        #expect(lstat(path, &before) == 0)
        let old = umask(0)
        defer { umask(old) }
        let identity = try OwnedPath.replace(path, with: Array("new\n".utf8))
        var after = stat()
        #expect(lstat(path, &after) == 0)
        #expect(after.st_ino != before.st_ino, "a new file, not the old one written into")
        #expect(after.st_mode & 0o7777 == 0o600)
        #expect(Self.read(path) == "new\n")
        #expect(identity == FileIdentity(path: path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["f"], "no temporary file is left")
        try OwnedPath.replace(dir + "/g", with: [], mode: 0o644)
        #expect(lstat(dir + "/g", &after) == 0 && after.st_mode & 0o7777 == 0o644)
    }

    /// Another user's file, a directory where a file is expected, and forbidden mode bits are each told apart.
    @Test func problems() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(OwnedPath.problem(dir + "/absent", kind: .file) == nil)
        #expect(OwnedPath.problem(dir, kind: .file) == .wrongKind)
        #expect(OwnedPath.problem(dir, kind: .directory) == nil)
        chmod(dir, 0o777)
        #expect(OwnedPath.problem(dir, kind: .directory, forbiddenModeBits: 0o022) == .openToOthers(mode: 0o777))
        #expect(OwnedPath.describe(.openToOthers(mode: 0o777), path: dir, kind: .directory) == "\(dir) has mode 777")
        chmod(dir, 0o700)
        let theirs = dir + "/theirs"
        try "x".write(toFile: theirs, atomically: false, encoding: .utf8)
        #expect(OwnedPath.problem(theirs, kind: .file, uid: getuid() &+ 1) == .owner(getuid()))
        guard getuid() == 0 else { return }  // only root can give a file away
        chown(theirs, 65534, 65534)
        #expect(OwnedPath.problem(theirs, kind: .file) == .owner(65534))
        #expect(throws: OwnedPath.ReplaceError.self) { try OwnedPath.replace(theirs, with: Array("token".utf8)) }
        #expect(Self.read(theirs) == "x")
    }

    /// `dirname(1)`'s answer: "." for a bare file name, "/" at the root.
    @Test func directoryOfASocketPath() {
        #expect(SocketPath.directory(of: "f.sock") == ".")
        #expect(SocketPath.directory(of: "/f.sock") == "/")
        #expect(SocketPath.directory(of: "a/b.sock") == "a")
        #expect(SocketPath.directory(of: "./b.sock") == ".")
        #expect(SocketPath.directory(of: "/tmp/x//b.sock") == "/tmp/x")
        #expect(SocketPath.directory(of: "/tmp/x/b.sock") == "/tmp/x")
    }
}
