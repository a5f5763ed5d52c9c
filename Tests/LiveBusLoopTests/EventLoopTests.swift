import Foundation
import LiveBusLoop
import Testing

/// The libuv wrapper: timers, Unix-socket listen/connect/read/write, cross-thread wake-ups, clean close.
/// Each test ends the libuv way: close every handle and check `uv_loop_close` returns 0 (libuv `test/task.h`).
struct EventLoopTests {
    static func tempSocketPath(_ name: String) -> String {
        let dir = "/tmp/lbt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(dir, 0o700)
        return "\(dir)/\(name).sock"
    }

    /// A one-shot timer fires once; a cancelled timer never fires.
    @Test func timers() throws {
        let loop = try EventLoop()
        var fired = 0
        var cancelledFired = false
        loop.schedule(after: 5) { fired += 1 }
        let t = loop.schedule(after: 10) { cancelledFired = true }
        t.cancel()
        loop.run()
        #expect(fired == 1)
        #expect(!cancelledFired)
        #expect(loop.close())
    }

    /// The end of a loop turn runs its handlers before the turn's flush (the daemon's group commit writes its ACKs
    /// there), and ``EventLoop/flushPendingWrites()`` writes what is gathered at once, before the turn ends (flush as
    /// you go).
    @Test func turnEndHandlersRunBeforeTheFlushAndFlushPendingWritesWritesNow() throws {
        let loop = try EventLoop()
        let path = Self.tempSocketPath("turn")
        let listener = try PipeListener(loop: loop, path: path)
        var serverSide: Connection?
        var staged: [UInt8] = []
        var outstandingBeforeFlush = -1
        var outstandingAfterFlush = -1
        listener.onConnection = { c in
            serverSide = c
            c.onRead = { _ in
                c.write(Array("early;".utf8))
                outstandingBeforeFlush = c.outstandingBytes
                loop.flushPendingWrites()
                outstandingAfterFlush = c.outstandingBytes
                staged = Array("at turn end;".utf8)
            }
            try? c.startReading()
        }
        loop.onTurnEnd {
            guard !staged.isEmpty, let c = serverSide else { return }
            c.write(staged)
            staged = []
        }
        var received: [UInt8] = []
        let expected = Array("early;at turn end;".utf8)
        Connection.connect(loop: loop, path: path) { result in
            guard case .success(let c) = result else {
                Issue.record("connect failed: \(result)")
                return
            }
            c.onRead = { bytes in
                received += bytes
                if received.count >= expected.count {
                    c.close()
                    serverSide?.close()
                    listener.close()
                }
            }
            try? c.startReading()
            c.write(Array("go".utf8))
        }
        loop.run()
        #expect(outstandingBeforeFlush == 6, "gathered, not yet written")
        #expect(outstandingAfterFlush == 0, "written by flushPendingWrites before the turn ended")
        #expect(received == expected)
        #expect(loop.close())
    }

    /// Echo over a Unix socket, with output gathered per loop turn: 100 writes arrive as the same bytes.
    @Test func echoOverUnixSocket() throws {
        let loop = try EventLoop()
        let path = Self.tempSocketPath("echo")
        let listener = try PipeListener(loop: loop, path: path)
        var serverSide: Connection?
        listener.onConnection = { c in
            serverSide = c
            c.onRead = { bytes in c.write(Array(bytes)) }
            try? c.startReading()
        }
        var received: [UInt8] = []
        var expected: [UInt8] = []
        Connection.connect(loop: loop, path: path) { result in
            guard case .success(let c) = result else {
                Issue.record("connect failed: \(result)")
                return
            }
            c.onRead = { bytes in
                received += bytes
                if received.count == expected.count {
                    c.close()
                    serverSide?.close()
                    listener.close()
                }
            }
            try? c.startReading()
            for i in 0..<100 {
                let chunk = Array("message \(i);".utf8)
                expected += chunk
                c.write(chunk)
            }
        }
        loop.run()
        #expect(received == expected)
        #expect(access(path, F_OK) != 0, "the socket file is removed on close")
        #expect(loop.close())
    }

    /// The socket file is created with mode 0600.
    @Test func socketModeIs0600() throws {
        let loop = try EventLoop()
        let path = Self.tempSocketPath("mode")
        let listener = try PipeListener(loop: loop, path: path)
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        listener.close()
        #expect(loop.close())
    }

    /// Paths longer than sun_path are rejected instead of silently truncated (libuv 1.44 truncates).
    @Test func longSocketPathIsRejected() throws {
        let loop = try EventLoop()
        let path = "/tmp/" + String(repeating: "x", count: 120)
        #expect(throws: LoopError.self) { _ = try PipeListener(loop: loop, path: path) }
        #expect(loop.close())
    }

    /// A second bind on a live path fails with EADDRINUSE; the probe reports live, then stale after a crash-like unlink-less close.
    /// A socket in a directory that does not exist is refused with ENOENT and what to do (libuv says EACCES).
    @Test func missingSocketDirectoryIsNamed() throws {
        let loop = try EventLoop()
        defer { _ = loop.close() }
        do {
            _ = try PipeListener(loop: loop, path: "/tmp/livebus-no-such-dir-\(getpid())/bus.sock")
            Issue.record("bound in a missing directory")
        } catch {
            #expect(error.name == "ENOENT")
            #expect(error.message.contains("does not exist; create it (mkdir -p /tmp/livebus-no-such-dir-"))
        }
    }

    /// A port the kernel hands out is free until a listener takes it; then it is not free and accepts connections.
    @Test func loopbackPortFreeThenListening() throws {
        let port = LoopbackPort.ephemeral()
        #expect(port > 0 && port <= 65_535)
        #expect(LoopbackPort.isFree(port))
        #expect(!LoopbackPort.accepts(port))
        let loop = try EventLoop()
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: port)
        #expect(!LoopbackPort.isFree(port))
        #expect(LoopbackPort.accepts(port))
        listener.close()
        loop.runOnce()
        #expect(LoopbackPort.isFree(port))
        #expect(loop.close())
    }

    @Test func probeLiveAndStale() throws {
        let loop = try EventLoop()
        let path = Self.tempSocketPath("probe")
        #expect(SocketProbe.probe(path: path) == .absent)
        let listener = try PipeListener(loop: loop, path: path)
        #expect(SocketProbe.probe(path: path) == .live)
        #expect(throws: LoopError.self) { _ = try PipeListener(loop: loop, path: path) }
        listener.close()
        loop.runOnce()
        // A file that is a socket but has no listener (what a crash leaves):
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
        }
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(fd)
        #expect(SocketProbe.probe(path: path) == .stale)
        unlink(path)
        #expect(loop.close())
    }

    /// A socket owned by another uid is `foreign` (never removable), whatever connect would say; a symbolic link is
    /// not followed. The owner check needs no second user: the probe is asked for another uid.
    @Test func probeNamesAnotherUsersSocket() throws {
        let loop = try EventLoop()
        let path = Self.tempSocketPath("foreign")
        let listener = try PipeListener(loop: loop, path: path)
        #expect(SocketProbe.probe(path: path, user: getuid() &+ 1) == .foreign(owner: getuid()))
        #expect(SocketProbe.owner(of: path) == getuid())
        let link = path + ".link"
        #expect(symlink(path, link) == 0)
        #expect(SocketProbe.probe(path: link) == .notSocket)
        unlink(link)
        listener.close()
        loop.runOnce()
        #expect(loop.close())
    }

    /// The default socket: `$LIVEBUS_SOCKET`, else a private `$XDG_RUNTIME_DIR`, else `/tmp/livebus-<uid>/`.
    @Test func defaultSocketPathNeedsAPrivateDirectory() throws {
        let fallback = "/tmp/livebus-\(getuid())/livebus.sock"
        #expect(SocketPath.defaultPath(environment: [:]) == fallback)
        #expect(SocketPath.defaultPath(environment: ["LIVEBUS_SOCKET": "/x/bus.sock"]) == "/x/bus.sock")
        #expect(SocketPath.defaultPath(environment: ["XDG_RUNTIME_DIR": "/tmp"]) == fallback, "/tmp is 1777")
        var template = Array("/tmp/lbx-XXXXXX".utf8CString)
        let dir = String(cString: mkdtemp(&template)!)
        defer { rmdir(dir) }
        #expect(SocketPath.defaultPath(environment: ["XDG_RUNTIME_DIR": dir]) == dir + "/livebus.sock")
        chmod(dir, 0o750)
        #expect(SocketPath.defaultPath(environment: ["XDG_RUNTIME_DIR": dir]) == fallback)
        #expect(SocketPath.checkPrivateDirectory(dir)?.message.contains("has mode 750") == true)
        #expect(SocketPath.checkPrivateDirectory(dir, uid: getuid() &+ 1)?.message.contains("is owned by user") == true)
        #expect(SocketPath.preparePrivateDirectory(for: dir + "/bus.sock", create: true) == nil, "not the default")
    }

    /// Work queued from another thread runs on the loop thread; coalesced wake-ups lose no work.
    @Test func crossThreadExecute() throws {
        let loop = try EventLoop()
        let handle = loop.handle
        let count = Counter()
        let keepAlive = loop.schedule(after: 5000) {}
        let t = Thread {
            for _ in 0..<100 { handle.execute { _ in count.increment() } }
            handle.execute { l in l.stop() }
        }
        t.start()
        loop.run()
        #expect(count.value == 100)
        keepAlive.cancel()
        #expect(loop.close())
    }

    /// Connecting to a path where nothing listens fails with a clear error instead of hanging.
    @Test func connectRefused() throws {
        let loop = try EventLoop()
        var error: LoopError?
        Connection.connect(loop: loop, path: Self.tempSocketPath("nothing")) { r in
            if case .failure(let e) = r { error = e }
        }
        loop.run()
        #expect(error?.isNotListening == true)
        #expect(loop.close())
    }
}

/// A counter touched only on the loop thread (the test checks that), so unchecked Sendable is sound here.
final class Counter: @unchecked Sendable {
    private(set) var value = 0
    func increment() { value += 1 }
}
