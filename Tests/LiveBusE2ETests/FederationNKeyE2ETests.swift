import Foundation
import LiveBusFederation
import LiveBusLoop
import Testing

/// `livebusd --federate-nkey FILE` against a real `nats-server` whose `authorization` lists one nkey user: the
/// user's seed signs in and publishes; another seed, a damaged seed file and `--federate-creds` beside it are each
/// refused with exit 2 and a message naming the file. The key pairs are made here from random bytes
/// (``NKeyUserSeed/encode(rawSeed:)``, checked against the NATS documentation's example in NKeySeedTests); the
/// server checks independently that libnats' signature, made from the seed file, matches the public key derived here.
/// Source: ISSUE-19 "Federation" (credentials or an nkey file).
@Suite(.serialized, .enabled(if: NATSCluster.available, "nats-server is not installed: run tools/setup"))
struct FederationNKeyE2ETests {
    /// A seed file of a fresh random user key pair; returns its path and public key.
    static func makeUser(_ dir: String, _ name: String) throws -> (file: String, publicKey: String) {
        var g = SystemRandomNumberGenerator()
        let seed = NKeyUserSeed.encode(rawSeed: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) })
        let file = dir + "/\(name).nk"
        try (seed + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        return (file, try NKeyUserSeed(seed).publicKey)
    }

    /// Runs a `livebusd` that is expected to exit at start; returns its exit status and what it wrote to stderr.
    static func refusedStart(_ dir: String, _ name: String, _ args: [String]) throws -> (Int32, String) {
        let log = dir + "/\(name).log"
        let d = try DaemonChild(["--socket", dir + "/\(name).sock"] + args, log: log)
        // A generous guard, not a measured duration: libnats' connect times out after 2 s per server.
        for _ in 0..<600 where d.process.isRunning { usleep(50_000) }
        let running = d.process.isRunning
        d.terminate()
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return (running ? -1 : d.process.terminationStatus, text)
    }

    @Test func nkeyUserSignsInAndAWrongSeedIsRefused() throws {
        let dir = temporaryDirectory("lbnk")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let user = try Self.makeUser(dir, "user")
        let stranger = try Self.makeUser(dir, "stranger")
        var port = 0
        for _ in 0..<50 {
            let p = Int.random(in: 26_000..<30_000)
            if NATSCluster.isFree(p) {
                port = p
                break
            }
        }
        try #require(port != 0, "no free loopback port for nats-server")
        let conf = dir + "/nats.conf"
        try """
        listen: 127.0.0.1:\(port)
        jetstream { store_dir: "\(dir)/js" }
        authorization { users: [ { nkey: \(user.publicKey) } ] }
        """.write(toFile: conf, atomically: true, encoding: .utf8)
        let server = Process()
        server.executableURL = URL(
            fileURLWithPath: ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            }!
        )
        server.arguments = ["-c", conf]
        let serverLog = dir + "/nats.log"
        _ = FileManager.default.createFile(atPath: serverLog, contents: nil)
        server.standardOutput = FileHandle(forWritingAtPath: serverLog)
        server.standardError = FileHandle(forWritingAtPath: serverLog)
        try server.run()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        for _ in 0..<200 where NATSCluster.isFree(port) { usleep(50_000) }
        try #require(!NATSCluster.isFree(port), "nats-server did not listen: \(dir)/nats.log")
        let url = "nats://127.0.0.1:\(port)"
        let federate = ["--federate", url, "--federate-replicas", "1", "--log-level", "info"]

        // The user's seed: the daemon signs in, serves, and an acknowledged PUBLISH is in the stream.
        let socket = dir + "/d.sock"
        let log = dir + "/d.log"
        let d = try DaemonChild(["--socket", socket, "--federate-nkey", user.file] + federate, log: log)
        defer { d.terminate() }
        for _ in 0..<1000 where SocketProbe.probe(path: socket) != .live && d.process.isRunning { usleep(10_000) }
        try #require(
            SocketProbe.probe(path: socket) == .live,
            "livebusd did not serve with the user's seed: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
        )
        let loop = try EventLoop()
        let pub = FederatedPublisher(loop: loop, socket: socket)
        let first = pub.publish(topic: "orders/nk1", status: "created", event: "start")
        #expect((try? first.get()) == 1)
        let second = pub.publish(topic: "orders/nk1", status: "cooking", event: "update")
        #expect((try? second.get()) == 2)
        pub.close()

        // Another user's seed: the server refuses it; exit 2, the file and the public key named, even with
        // --federate-optional (waiting does not help).
        for extra in [[], ["--federate-optional"]] {
            let (status, text) = try Self.refusedStart(
                dir,
                "stranger\(extra.count)",
                ["--federate-nkey", stranger.file] + federate + extra
            )
            #expect(status == 2, "exit \(status): \(text)")
            #expect(text.contains("refused the nkey of --federate-nkey \(stranger.file)"), "\(text)")
            #expect(text.contains("public key \(stranger.publicKey)"), "\(text)")
            #expect(text.contains("Authorization Violation"), "\(text)")
        }

        // No credentials at all: the server asks for them.
        let (status0, text0) = try Self.refusedStart(dir, "none", federate)
        #expect(status0 == 2, "exit \(status0): \(text0)")
        #expect(text0.contains("asks for credentials"), "\(text0)")

        // A damaged seed, a missing file, and both ways to sign in: refused before connecting, exit 2.
        let damaged = dir + "/damaged.nk"
        let good = try String(contentsOfFile: user.file, encoding: .utf8)
        try (String(good.prefix(10)) + "1" + String(good.dropFirst(11))).write(
            toFile: damaged,
            atomically: true,
            encoding: .utf8
        )
        let (status1, text1) = try Self.refusedStart(dir, "damaged", ["--federate-nkey", damaged] + federate)
        #expect(status1 == 2, "exit \(status1): \(text1)")
        #expect(text1.contains("--federate-nkey \(damaged): character 11 of the seed, '1', is not base32"), "\(text1)")
        let (status2, text2) = try Self.refusedStart(dir, "missing", ["--federate-nkey", dir + "/nope.nk"] + federate)
        #expect(status2 == 2, "exit \(status2): \(text2)")
        #expect(text2.contains("--federate-nkey \(dir)/nope.nk: no readable file there"), "\(text2)")
        let (status3, text3) = try Self.refusedStart(
            dir,
            "both",
            ["--federate-nkey", user.file, "--federate-creds", user.file] + federate
        )
        #expect(status3 == 2, "exit \(status3): \(text3)")
        #expect(text3.contains("--federate-nkey and --federate-creds are two ways to sign in"), "\(text3)")
    }
}
