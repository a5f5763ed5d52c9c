import Foundation
import LiveBusAPNs
import Testing

/// A `livebusd` child with the APNs endpoint on, its listening addresses read from its log.
final class APNsDaemon {
    let dir: String
    let daemon: DaemonChild
    let log: String
    var port = 0
    var caPath = ""
    var apnsSocket: String { dir + "/apns.sock" }

    init(_ extra: [String] = [], tls: Bool = false) throws {
        dir = temporaryDirectory("lba")
        log = dir + "/daemon.log"
        var args = ["--socket", dir + "/bus.sock", "--memory", "--log-level", "info", "--apns", "127.0.0.1:0"]
        args += tls ? ["--apns-ca-dir", dir + "/ca"] : ["--apns-h2c"]
        args += ["--apns-socket", dir + "/apns.sock"] + extra
        daemon = try DaemonChild(args, log: log)
        for _ in 0..<500 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let r = text.range(of: #"://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                port = Int(text[r].split(separator: ":").last!)!
                if let c = text.range(of: #"ca=[^ ]+"#, options: .regularExpression) {
                    caPath = String(text[c].dropFirst(3))
                }
                if text.contains("livebusd listening") { break }
            }
            usleep(10_000)
        }
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    func stop() {
        daemon.terminate()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// One curl run: the status line's code, the response headers (lower-case names) and the body.
struct CurlAnswer {
    var exitCode: Int32
    var status: Int
    var headers: [String: String]
    var body: String
    var reason: String? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String
    }
}

func curl(_ args: [String]) -> CurlAnswer {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    p.arguments = ["-s", "-i", "--max-time", "20"] + args
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = FileHandle.nullDevice
    try? p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    let parts = text.components(separatedBy: "\r\n\r\n")
    let head = parts.first ?? ""
    var headers: [String: String] = [:]
    let lines = head.components(separatedBy: "\r\n")
    let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    for l in lines.dropFirst() {
        if let c = l.firstIndex(of: ":") {
            headers[l[..<c].lowercased()] = l[l.index(after: c)...].trimmingCharacters(in: .whitespaces)
        }
    }
    return CurlAnswer(
        exitCode: p.terminationStatus,
        status: status,
        headers: headers,
        body: parts.dropFirst().joined(separator: "\r\n\r\n")
    )
}

let e2eToken = String(repeating: "ab", count: 32)
let e2eTopic = "com.example.delivery.push-type.liveactivity"
let e2eUpdate = #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking"}}}"#

/// A well-formed provider token nobody signed (accepted when no key is configured).
func e2eUnsignedJWT() -> String {
    let h = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8))
    let c = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":1767225600}"#.utf8))
    return "\(h).\(c).\(Base64URL.encode([UInt8](repeating: 1, count: 64)))"
}

/// curl arguments for one push: `headers` replace the defaults (a `nil` value drops one).
func pushArgs(
    _ headers: [String: String?] = [:],
    path: String = "/3/device/\(e2eToken)",
    method: String = "POST",
    body: String? = e2eUpdate,
    jwt: String? = e2eUnsignedJWT()
) -> (args: [String], path: String) {
    var h: [String: String?] = [
        "apns-push-type": "liveactivity", "apns-topic": e2eTopic, "apns-priority": "10",
        "authorization": jwt.map { "bearer \($0)" },
    ]
    for (k, v) in headers { h[k] = v }
    var args = ["-X", method]
    for (k, v) in h.sorted(by: { $0.key < $1.key }) { if let v { args += ["-H", "\(k): \(v)"] } }
    if let body { args += ["--data-binary", body] }
    return (args, path)
}

/// The APNs endpoint through a real daemon, driven with curl (Debian curl 7.88 has HTTP/2): every validation
/// answer, on h2c (Unix socket and TCP) and TLS with LiveBus's CA; bad HTTP/2 clients are cut within the limits.
@Suite(.serialized)
struct APNsEndpointE2ETests {
    /// Every validation answer curl can provoke, over the Unix-socket h2c listener, with Apple's status and reason;
    /// each answer carries apns-id (echoed when the client sent one) and apns-unique-id.
    @Test func everyValidationAnswerOverH2C() throws {
        let d = try APNsDaemon()
        defer { d.stop() }
        let big = #"{"aps":{},"p":""# + String(repeating: "x", count: 4097 - 17) + #""}"#
        let cases: [(String, (args: [String], path: String), Int, String)] = [
            ("priority", pushArgs(["apns-priority": "7"]), 400, "BadPriority"),
            ("collapse", pushArgs(["apns-collapse-id": String(repeating: "c", count: 65)]), 400, "BadCollapseId"),
            ("push type", pushArgs(["apns-push-type": "liveActivity"]), 400, "InvalidPushType"),
            ("no topic", pushArgs(["apns-topic": nil]), 400, "MissingTopic"),
            ("bad topic", pushArgs(["apns-topic": "com.example.delivery"]), 400, "BadTopic"),
            ("token form", pushArgs(path: "/3/device/1234"), 400, "BadDeviceToken"),
            ("unknown token", pushArgs(), 400, "BadDeviceToken"),
            ("expiration", pushArgs(["apns-expiration": "soon"]), 400, "BadExpirationDate"),
            ("empty", pushArgs(body: nil), 400, "PayloadEmpty"),
            ("not JSON", pushArgs(body: "{\"aps\":"), 400, "BadPayload"),
            ("too large", pushArgs(body: big), 413, "PayloadTooLarge"),
            ("apns-id", pushArgs(["apns-id": "123"]), 400, "BadMessageId"),
            ("no auth", pushArgs(jwt: nil), 403, "MissingProviderToken"),
            ("bad auth", pushArgs(jwt: "x.y"), 403, "InvalidProviderToken"),
            ("path", pushArgs(path: "/3/notifications"), 404, "BadPath"),
            ("method", pushArgs(method: "GET", body: nil), 405, "MethodNotAllowed"),
            ("no device", pushArgs(path: "/3/device/"), 400, "MissingDeviceToken"),
            (
                "broadcast channel", pushArgs(["apns-topic": nil], path: "/4/broadcasts/apps/com.example.delivery"),
                400, "MissingChannelId"
            ),
        ]
        for (name, c, status, reason) in cases {
            let a = curl(
                ["--http2-prior-knowledge", "--unix-socket", d.apnsSocket] + c.args + ["http://localhost\(c.path)"]
            )
            #expect(a.status == status, "\(name): \(a.status) \(a.body)")
            #expect(a.reason == reason, "\(name): \(a.body)")
            #expect(a.headers["apns-id"].map(APNsValidator.isCanonicalUUID) == true, "\(name)")
            #expect(a.headers["apns-unique-id"] != nil, "\(name)")
            #expect(a.body.contains("livebus-message"), "\(name)")
        }
        let id = "0C3B8F6E-1C4B-4E69-9E5A-6E1D7C1B2A3F"
        let echoed = curl(
            ["--http2-prior-knowledge", "--unix-socket", d.apnsSocket] + pushArgs(["apns-id": id]).args
                + ["http://localhost/3/device/\(e2eToken)"]
        )
        #expect(echoed.headers["apns-id"] == id)
        // Repeated headers: curl sends both.
        let dup = curl(
            ["--http2-prior-knowledge", "--unix-socket", d.apnsSocket, "-H", "apns-priority: 5"] + pushArgs().args
                + ["http://localhost/3/device/\(e2eToken)"]
        )
        #expect(dup.reason == "DuplicateHeaders", "\(dup.body)")
        #expect(d.logText.contains("reason=BadPriority"))
    }

    /// The TCP listener, h2c with prior knowledge; an HTTP/1.1 request gets 505 and the daemon keeps serving.
    @Test func tcpH2CAndHTTP11() throws {
        let d = try APNsDaemon()
        defer { d.stop() }
        #expect(d.port > 0)
        let url = "http://127.0.0.1:\(d.port)/3/device/\(e2eToken)"
        let a = curl(["--http2-prior-knowledge"] + pushArgs(["apns-priority": "1"]).args + [url])
        #expect(a.status == 400 && a.reason == "BadPriority", "\(a.body)")
        let h1 = curl(["--http1.1"] + pushArgs().args + [url])
        #expect(h1.status == 505, "\(h1.status) \(h1.body)")
        #expect(h1.body.contains("HTTP/2 only"))
        let again = curl(["--http2-prior-knowledge"] + pushArgs(["apns-expiration": "-5"]).args + [url])
        #expect(again.reason == "BadExpirationDate")
    }

    /// TLS with ALPN h2 and the CA LiveBus made (curl --http2 --cacert); a client offering only HTTP/1.1 fails
    /// the handshake, and the CA is reused at the next start.
    @Test func tlsWithTheGeneratedCA() throws {
        let d = try APNsDaemon(tls: true)
        defer { d.stop() }
        #expect(d.caPath.hasSuffix("/apns-ca.pem"), "\(d.logText)")
        let url = "https://localhost:\(d.port)/3/device/\(e2eToken)"
        let a = curl(
            ["--http2", "--cacert", d.caPath] + pushArgs(["apns-collapse-id": String(repeating: "é", count: 33)]).args
                + [url]
        )
        #expect(a.status == 400 && a.reason == "BadCollapseId", "\(a.exitCode) \(a.body)")
        let ip = curl(
            ["--http2", "--cacert", d.caPath] + pushArgs().args + ["https://127.0.0.1:\(d.port)/3/device/\(e2eToken)"]
        )
        #expect(ip.reason == "BadDeviceToken", "\(ip.exitCode) \(ip.body)")
        let untrusted = curl(["--http2"] + pushArgs().args + [url])
        #expect(untrusted.exitCode == 60, "curl trusts only with --cacert: exit \(untrusted.exitCode)")
        let h1 = curl(["--http1.1", "--cacert", d.caPath] + pushArgs().args + [url])
        #expect(h1.exitCode != 0 && h1.status == 0, "HTTP/1.1 over TLS: ALPN refused (\(h1.exitCode))")
        let after = curl(["--http2", "--cacert", d.caPath] + pushArgs(["apns-priority": "x"]).args + [url])
        #expect(after.reason == "BadPriority")
        let ca = try String(contentsOfFile: d.caPath, encoding: .utf8)
        let second = try DaemonChild(
            [
                "--socket", d.dir + "/bus2.sock", "--memory", "--apns", "127.0.0.1:0", "--apns-ca-dir", d.dir + "/ca",
            ],
            log: d.dir + "/second.log"
        )
        for _ in 0..<300
        where !((try? String(contentsOfFile: d.dir + "/second.log", encoding: .utf8)) ?? "").contains("ca=") {
            usleep(10_000)
        }
        second.terminate()
        #expect(try String(contentsOfFile: d.caPath, encoding: .utf8) == ca)
    }

    /// With the team's key configured: a token it signed passes authentication, an old one is
    /// ExpiredProviderToken, one signed by another key or naming another team InvalidProviderToken.
    @Test func providerTokensWithAKey() throws {
        let dir = temporaryDirectory("lbk")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func makeKey(_ path: String) throws -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            p.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path]
            try p.run()
            p.waitUntilExit()
            return try String(contentsOfFile: path, encoding: .utf8)
        }
        let team = try makeKey(dir + "/AuthKey_KEY1234567.p8")
        let other = try makeKey(dir + "/other.p8")
        let d = try APNsDaemon([
            "--apns-key", dir + "/AuthKey_KEY1234567.p8", "--apns-team-id", "TEAM123456", "--apns-key-id", "KEY1234567",
        ])
        defer { d.stop() }
        #expect(d.logText.contains("verified (ES256"))
        let now = Int64(Date().timeIntervalSince1970)
        let signer = try ProviderTokenSigner(pem: team, keyID: "KEY1234567", teamID: "TEAM123456")
        let forger = try ProviderTokenSigner(pem: other, keyID: "KEY1234567", teamID: "TEAM123456")
        let wrongTeam = try ProviderTokenSigner(pem: team, keyID: "KEY1234567", teamID: "OTHERTEAM1")
        func send(_ jwt: String?) -> CurlAnswer {
            curl(
                ["--http2-prior-knowledge", "--unix-socket", d.apnsSocket] + pushArgs(jwt: jwt).args
                    + ["http://localhost/3/device/\(e2eToken)"]
            )
        }
        let good = send(signer.token(issuedAtSeconds: now - 60))
        #expect(good.reason == "BadDeviceToken", "authenticated, then no phone holds the token: \(good.body)")
        let old = send(signer.token(issuedAtSeconds: now - 3700))
        #expect(old.status == 403 && old.reason == "ExpiredProviderToken", "\(old.body)")
        #expect(send(forger.token(issuedAtSeconds: now - 60)).reason == "InvalidProviderToken")
        #expect(send(wrongTeam.token(issuedAtSeconds: now - 60)).reason == "InvalidProviderToken")
        #expect(send(e2eUnsignedJWT()).reason == "InvalidProviderToken")
        #expect(send(nil).reason == "MissingProviderToken")
        let newer = send(signer.token(issuedAtSeconds: now - 30))
        #expect(newer.status == 429 && newer.reason == "TooManyProviderTokenUpdates", "\(newer.body)")
    }
}

/// A push to an activity's token reaches the phone through the same path as `livebus push`.
@Suite(.serialized)
struct APNsDeliveryE2ETests {
    /// An update sent with curl to the token of phone `solo`'s activity for A1001 is answered 200 (with the push
    /// id), applied by the phone (its `attach --json` log shows the state) and traced by `livebus explain`.
    @Test func anUpdateReachesThePhone() throws {
        let bus = try APNsBus(["--scenario", "demo-120s", "--time-scale", "2"], prefix: "lbd")
        defer { bus.stop() }
        let sock = bus.sock
        try bus.attach("solo", duration: "20s")
        bus.wait(tries: 300) { bus.phoneLog("solo").contains("A1001") }
        let now = Int64(Date().timeIntervalSince1970)
        let payload =
            #"{"aps":{"timestamp":\#(now + 5),"event":"update","content-state":{"status":"delivering","etaEnd":\#(now - 978_307_200 + 600)}}}"#
        let token = LiveBusPushTokens.activityToken(phone: "solo", order: "A1001")
        let a = bus.curlPush(token: token, pushArgs(body: payload))
        #expect(a.status == 200, "\(a.status) \(a.body)")
        let pushID = try #require(a.headers["livebus-push-id"])
        bus.wait(tries: 300) { !bus.pushLines("solo").isEmpty }
        let line = bus.pushLines("solo").first ?? ""
        #expect(line.contains(#""status":"delivering""#) && line.contains(#""applied":true"#), "\(line)")
        let explain = try E2ECLIGoldenTests.run(["explain", pushID, "--socket", sock, "--json"])
        #expect(explain.exit == 0 && explain.stdout.contains("solo"), "\(explain.stdout) \(explain.stderr)")
        // Another phone's token for the same order is unknown: 400 BadDeviceToken, never a silent 200.
        let other = LiveBusPushTokens.activityToken(phone: "nobody", order: "A1001")
        let b = bus.curlPush(token: other, pushArgs(body: payload))
        #expect(b.reason == "BadDeviceToken")
    }
}

/// APNs pushes go through the phone's refresh scheduler like the bus's own updates.
@Suite(.serialized)
struct APNsSchedulerE2ETests {
    /// A backgrounded phone with a budget of 2 priority-10 pushes per hour: two updates reach it, the third is
    /// held (throttled, logged with the scheduler's hold), a push with `apns-expiration: 0` held too; when the app
    /// comes to the foreground the third is delivered and the now-or-never push is expired (its verdict says so); of
    /// two queued pushes with one `apns-collapse-id` only the newer is delivered.
    @Test func priority10PushesAreThrottledByTheBudget() throws {
        // Time scale 0.01: the scenario's order starts at once and its next phase is hours away; the budget window
        // (a scenario hour) is 100 real hours, so a spent budget stays spent for the whole test.
        let bus = try APNsBus(
            ["--scenario", "demo-120s", "--time-scale", "0.01", "--push-budget", "2"],
            prefix: "lbs"
        )
        defer { bus.stop() }
        let sock = bus.sock
        try bus.attach("solo")
        func daemonLog() -> String { bus.daemonLog }
        func pushLines() -> [String] { bus.pushLines("solo") }
        bus.wait { bus.phoneLog("solo").contains("A1001") }
        let bg = try E2ECLIGoldenTests.run(["app-state", "solo", "background", "--socket", sock])
        #expect(bg.exit == 0, "\(bg.stderr)")
        usleep(200_000)
        let token = LiveBusPushTokens.activityToken(phone: "solo", order: "A1001")
        let now = Int64(Date().timeIntervalSince1970)
        func send(_ i: Int64, _ status: String, _ extra: [String: String?] = [:]) -> CurlAnswer {
            let body =
                #"{"aps":{"timestamp":\#(now + i),"event":"update","content-state":{"status":"\#(status)","etaEnd":\#(now - 978_307_200 + 900)}}}"#
            return bus.curlPush(token: token, pushArgs(extra, body: body))
        }
        #expect(send(5, "cooking").status == 200)
        #expect(send(6, "awaitingPickup").status == 200)
        for _ in 0..<300 where pushLines().count < 2 { usleep(10_000) }
        #expect(pushLines().count == 2)
        let third = send(7, "pickedUp")
        #expect(third.status == 200, "APNs accepted it; the phone's budget decides when it arrives")
        let nowOrNever = send(8, "delivering", ["apns-expiration": "0"])
        #expect(nowOrNever.status == 200)
        let collapsed = send(9, "cooking", ["apns-collapse-id": "eta"])
        let replacing = send(10, "delivering", ["apns-collapse-id": "eta"])
        #expect(collapsed.status == 200 && replacing.status == 200)
        usleep(300_000)
        #expect(pushLines().count == 2, "the third waits for budget: \(pushLines())")
        #expect(daemonLog().contains("hold=throttled"), "\(daemonLog())")
        let fg = try E2ECLIGoldenTests.run(["app-state", "solo", "foreground", "--socket", sock])
        #expect(fg.exit == 0)
        for _ in 0..<300 where pushLines().count < 4 { usleep(10_000) }
        let lines = pushLines()
        #expect(lines.count == 4 && lines[2].contains(#""status":"pickedUp""#), "\(lines)")
        #expect(lines.last?.contains(#""status":"delivering""#) == true, "the collapse id's newest push")
        let collapsedID = try #require(collapsed.headers["livebus-push-id"])
        let c = try E2ECLIGoldenTests.run(["explain", collapsedID, "--socket", sock, "--json"])
        #expect(c.stdout.contains("collapsed"), "\(c.stdout)")
        let id = try #require(nowOrNever.headers["livebus-push-id"])
        let explain = try E2ECLIGoldenTests.run(["explain", id, "--socket", sock, "--json"])
        #expect(explain.stdout.contains("expired") && explain.stdout.contains("now or never"), "\(explain.stdout)")
    }
}

/// The token of an ended activity: 200 with a verdict that no phone holds it during the delay, 410 after.
@Suite(.serialized)
struct APNsUnregisteredE2ETests {
    @Test func anEndedActivitysTokenIsUnregistered() throws {
        let bus = try APNsBus(
            ["--scenario", "demo-120s", "--time-scale", "40", "--apns-unregistered-delay", "6s"],
            prefix: "lbu"
        )
        defer { bus.stop() }
        let sock = bus.sock
        let apnsSock = bus.apnsSock
        try bus.attach("solo")
        func phoneLog() -> String { bus.phoneLog("solo") }
        bus.wait(tries: 1500) { phoneLog().contains(#""status":"delivered""#) }
        #expect(phoneLog().contains(#""status":"delivered""#))
        let token = LiveBusPushTokens.activityToken(phone: "solo", order: "A1001")
        let url = "http://localhost/3/device/\(token)"
        let early = curl(["--http2-prior-knowledge", "--unix-socket", apnsSock] + pushArgs().args + [url])
        #expect(early.status == 200, "inside the delay APNs still answers 200: \(early.body)")
        let id = try #require(early.headers["livebus-push-id"])
        let explain = try E2ECLIGoldenTests.run(["explain", id, "--socket", sock, "--json"])
        #expect(explain.stdout.contains("no phone holds token"), "\(explain.stdout)")
        // The delay is long enough for a loaded machine to ask inside it (the first check), short enough to wait out.
        var late = early
        for _ in 0..<300 {
            late = curl(["--http2-prior-knowledge", "--unix-socket", apnsSock] + pushArgs().args + [url])
            if late.status != 200 { break }
            usleep(100_000)
        }
        #expect(late.status == 410 && late.reason == "Unregistered", "\(late.body)")
        let body = try JSONSerialization.jsonObject(with: Data(late.body.utf8)) as? [String: Any]
        #expect((body?["timestamp"] as? NSNumber).map { $0.int64Value > 1_700_000_000_000 } == true)
    }
}

/// A daemon killed with -9 leaves its APNs socket file behind: the restart removes it as it removes the bus's
/// (it refused to start, EADDRINUSE, and left no bus socket for the phones to resume on).
@Suite(.serialized)
struct APNsRestartE2ETests {
    @Test func aStaleAPNsSocketIsRemovedOnRestart() throws {
        let dir = temporaryDirectory("lbk")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let args = ["--socket", dir + "/bus.sock", "--memory", "--apns-socket", dir + "/apns.sock"]
        func started(_ d: DaemonChild, _ log: String) -> Bool {
            for _ in 0..<500 {
                if ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("livebusd listening") {
                    return true
                }
                if !d.process.isRunning { return false }
                usleep(10_000)
            }
            return false
        }
        let first = try DaemonChild(args, log: dir + "/1.log")
        #expect(started(first, dir + "/1.log"))
        first.kill9()
        #expect(FileManager.default.fileExists(atPath: dir + "/apns.sock"), "kill -9 leaves the socket file")
        let second = try DaemonChild(args, log: dir + "/2.log")
        defer { second.terminate() }
        let log = { (try? String(contentsOfFile: dir + "/2.log", encoding: .utf8)) ?? "" }
        #expect(started(second, dir + "/2.log"), "the restart failed: \(log())")
        #expect(log().contains("removing stale socket file"))
        let answer = curl([
            "--http2-prior-knowledge", "--unix-socket", dir + "/apns.sock", "http://localhost/3/device/00",
        ])
        #expect(
            answer.status == 400 || answer.status == 403,
            "the restarted endpoint answers: \(answer.status) \(answer.body)"
        )
    }
}
