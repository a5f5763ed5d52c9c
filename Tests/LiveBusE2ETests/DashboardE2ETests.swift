import Foundation
import LiveBusActivity
import LiveBusClient
import LiveBusClock
import LiveBusLayout
import LiveBusLoop
import LiveBusWire
import Testing

@testable import LiveBusCLI
@testable import LiveBusDaemon

/// The dashboard served from the daemon's loop (issue 21), in process: the token on every request, and the phone's
/// drawing made of the same rects the phone computes itself. The browser checks are tools/dashboard-test.
@Suite(.serialized)
struct E2EDashboardTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("dashboard").path

    /// A blocking HTTP/1.1 request on another thread (the loop serves it meanwhile): the status and what was read
    /// until `enough` held or the peer closed.
    final class Request: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var status = 0
        var text = ""
        init(
            port: Int,
            path: String,
            post: String? = nil,
            enough: @escaping @Sendable (String) -> Bool = { _ in false }
        ) {
            let t = Thread { [self] in
                defer { done.signal() }
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var tv = timeval(tv_sec: 10, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
                var a = sockaddr_in()
                a.sin_family = sa_family_t(AF_INET)
                a.sin_port = in_port_t(UInt16(port).bigEndian)
                a.sin_addr.s_addr = inet_addr("127.0.0.1")
                let ok = withUnsafePointer(to: &a) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard ok == 0 else { return }
                let head =
                    post.map {
                        "POST \(path) HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: \($0.utf8.count)\r\n"
                    } ?? "GET \(path) HTTP/1.1\r\n"
                let req = Array((head + "Host: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n" + (post ?? "")).utf8)
                _ = req.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                var bytes: [UInt8] = []
                var buf = [UInt8](repeating: 0, count: 65536)
                while true {
                    let n = recv(fd, &buf, buf.count, 0)
                    if n <= 0 { break }
                    bytes += buf[0..<n]
                    if enough(String(decoding: bytes, as: UTF8.self)) { break }
                }
                text = String(decoding: bytes, as: UTF8.self)
                status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
            }
            t.start()
        }
    }

    static func freePort() -> Int { LoopbackPort.ephemeral() }

    @Test func tokenOnEveryRequestAndTheRectsThePhoneComputes() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 20)
        let duo = bus.session("duo") { o in
            o.device = "iphone-duo"
            o.posture = PostureBody(foldState: "half-opened", orientation: "landscape")
        }
        duo.start()
        #expect(bus.run(timeoutMs: 10_000) { duo.syncState == .live && !duo.board.activities.isEmpty })
        let port = Self.freePort()
        let url = try bus.daemon.startDashboard(
            DashboardOptions(address: "127.0.0.1:\(port)", root: Self.root, token: "test-token-0123456789")
        )
        #expect(url == "http://127.0.0.1:\(port)/?token=test-token-0123456789")
        func get(_ path: String, post: String? = nil, enough: @escaping @Sendable (String) -> Bool = { _ in false })
            -> Request
        {
            let r = Request(port: port, path: path, post: post, enough: enough)
            bus.run(timeoutMs: 10_000) { r.done.wait(timeout: .now()) == .success }
            return r
        }
        #expect(get("/").status == 403)
        #expect(get("/?token=test-token-0123456788").status == 403)
        #expect(get("/events").status == 403)
        #expect(get("/dashboard.js?token=").status == 403)
        let page = get("/?token=test-token-0123456789")
        #expect(page.status == 200)
        #expect(page.text.contains("set-cookie: livebus_dashboard=test-token-0123456789"))
        #expect(get("/../Package.swift?token=test-token-0123456789").status != 200)
        // The stream: the phone with the rects of its own layout.
        let events = get("/events?token=test-token-0123456789") {
            $0.contains("\"name\":\"duo\"") && $0.hasSuffix("\n\n")
        }
        #expect(events.status == 200)
        let line = try #require(
            events.text.split(separator: "\n").first { $0.hasPrefix("data: ") && $0.contains("\"name\":\"duo\"") }
        )
        let json = try JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8)) as? [String: Any]
        let layout = try #require(json?["layout"] as? [String: Any])
        let (_, own) = try #require(duo.layout)
        #expect(layout["arrangement"] as? String == "\(own.arrangement)")
        let drawn = (layout["rects"] as? [[String: Any]] ?? []).compactMap { r -> String? in
            guard let role = r["role"] as? String,
                ["map", "cardColumn", "reservedRegion", "hinge", "focusArea"].contains(role),
                let rect = r["rect"] as? [String: Double]
            else { return nil }
            return
                "\(r["name"] ?? "") \(rect["x"] ?? -1) \(rect["y"] ?? -1) \(rect["width"] ?? -1) \(rect["height"] ?? -1)"
        }
        let expected = own.rects.filter {
            ["map", "cardColumn", "reservedRegion", "hinge", "focusArea"].contains($0.role.rawValue)
        }.map { "\($0.name) \($0.rect.x) \($0.rect.y) \($0.rect.width) \($0.rect.height)" }
        #expect(!expected.isEmpty && drawn == expected, "the page's rects \(drawn) are the phone's \(expected)")
        #expect(json?["reservedRegion"] != nil, "half-opened: the reserved region is sent")
        // Controls: bad bodies are named, a control runs as the CLI's admin command and answers with its RESULT.
        let q = "/api/command?token=test-token-0123456789"
        let garbage = get(q, post: "not json")
        #expect(garbage.status == 400 && garbage.text.contains("is not {"), "\(garbage.text)")
        let unknown = get(q, post: #"{"command":"order.cancel","args":{"order":"A1001"}}"#)
        #expect(unknown.status == 400 && unknown.text.contains("not a dashboard control"), "\(unknown.text)")
        #expect(get(q.replacingOccurrences(of: "0123456789", with: "x"), post: "{}").status == 403)
        let fold = get(
            q,
            post: #"{"command":"session.posture","args":{"session":"duo","posture":{"foldState":"flat"}}}"#
        )
        #expect(fold.status == 200 && fold.text.contains("\"ok\":true"), "\(fold.text)")
        #expect(bus.run(timeoutMs: 5000) { duo.options.posture.foldState == "flat" }, "the phone unfolded")
        // An unknown session is 404 with the admin command's error, naming it (and the nearest attached name).
        let ghost = get(
            q,
            post: #"{"command":"session.posture","args":{"session":"dou","posture":{"foldState":"flat"}}}"#
        )
        #expect(ghost.status == 404, "\(ghost.text)")
        #expect(ghost.text.lowercased().contains("content-type: application/json"), "\(ghost.text)")
        #expect(
            ghost.text.contains(#""code":"unknownSession""#) && ghost.text.contains("'dou'")
                && ghost.text.contains("did you mean 'duo'"),
            "\(ghost.text)"
        )
        // A refusal for another reason is 400, still the command's JSON.
        let badFold = get(
            q,
            post: #"{"command":"session.posture","args":{"session":"duo","posture":{"fold":"flat"}}}"#
        )
        #expect(badFold.status == 400 && badFold.text.contains(#""ok":false"#), "\(badFold.text)")
        // A misspelled fold state gets the nearest one the device has.
        let typo = get(
            q,
            post: #"{"command":"session.posture","args":{"session":"duo","posture":{"foldState":"flatt"}}}"#
        )
        #expect(
            typo.status == 400 && typo.text.contains("fold state 'flatt' (did you mean 'flat'?) is not one of"),
            "\(typo.text)"
        )
        // A body over the limit is 413 as JSON like the other refusals.
        let pad = String(repeating: "x", count: DashboardServer.maximumBodyBytes + 10)
        let big = get(q, post: #"{"command":"session.posture","args":{"pad":""# + pad + #""}}"#)
        #expect(big.status == 413, "\(big.text.prefix(300))")
        #expect(
            big.text.lowercased().contains("content-type: application/json")
                && big.text.contains(#""code":"payloadTooLarge""#),
            "\(big.text.prefix(300))"
        )
        duo.close()
        bus.shutdown()
    }
}

extension E2EDashboardTests {
    /// The dashboard's own admin connection answers the daemon's keepalive PINGs: an idle page is not cut by the
    /// idle timeout (it was, every 3 minutes, and a control sent at that moment got 503).
    @Test func theDashboardsAdminConnectionAnswersKeepalives() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 20) { $0.limits.idleTimeoutMilliseconds = 600 }
        let port = Self.freePort()
        _ = try bus.daemon.startDashboard(
            DashboardOptions(address: "127.0.0.1:\(port)", root: Self.root, token: "test-token-keepalive-01")
        )
        // Five idle timeouts in a row with nothing but keepalives on the dashboard's admin connection.
        bus.run(timeoutMs: 3000) { false }
        let cut = bus.logLines.lines.filter { $0.contains("idle timeout") }
        #expect(cut.isEmpty, "the dashboard's admin connection was cut as idle: \(cut)")
        bus.shutdown()
    }
}

/// `livebus dashboard` prints the URL livebusd --http wrote next to its socket, and says when there is none; a
/// non-loopback --http address is refused before the daemon starts.
struct DashboardCommandTests {
    @Test func printsTheURLOrSaysThereIsNone() throws {
        let dir = temporaryDirectory("lbdc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/bus.sock"
        let none = try E2ECLIGoldenTests.run(["dashboard", "--socket", socket, "--print"])
        #expect(none.exit == 3 && none.stderr.contains("serves no dashboard"), "\(none.stderr)")
        try "http://127.0.0.1:8421/?token=abc\n".write(toFile: socket + ".dashboard", atomically: true, encoding: .utf8)
        let r = try E2ECLIGoldenTests.run(["dashboard", "--socket", socket, "--print"])
        #expect(r.exit == 0 && r.stdout == "http://127.0.0.1:8421/?token=abc\n", "\(r.stdout)")
        let remote = try E2ECLIGoldenTests.run(
            ["--socket", socket, "--memory", "--http", "0.0.0.0:8421"],
            tool: "livebusd"
        )
        #expect(remote.exit == 2 && remote.stderr.contains("not a loopback address"), "\(remote.stderr)")
        #expect(!remote.stderr.contains("listening"), "refused before the daemon started")
    }
}

/// A slow browser's queue: bounded and coalesced, newest state per phone wins (issue 21).
struct DashboardQueueTests {
    @Test func newestStatePerPhoneWinsAndLogLinesAreBounded() {
        var q = DashboardServer.Client()
        q.logLimit = 3
        for i in 0..<1000 {
            q.push(key: "phone:s\(i % 3)", frame: Array("state \(i)".utf8))
            q.push(key: "log:\(i)", frame: Array("line \(i)".utf8))
        }
        #expect(q.keys.count == 6, "three phones and three log lines, whatever was pushed")
        #expect(q.dropped == 997)
        var out: [String] = []
        while let f = q.pop() { out.append(String(decoding: f, as: UTF8.self)) }
        #expect(out == ["state 999", "state 997", "state 998", "line 997", "line 998", "line 999"])
        #expect(q.bytes == 0 && q.logCount == 0)
    }
}

/// The attach box measured in terminal cells (issue 21): Hangul 2, box drawing 1.
struct TerminalViewTests {
    @Test func cellWidths() {
        #expect(TerminalText.columns("배달 중") == 7)
        #expect(TerminalText.columns("┌─┐│└┘") == 6)
        #expect(TerminalText.columns("⟦픽업 완료 │ 0:19⟧") == 18)
        #expect(TerminalText.columns("abc") == 3)
        #expect(TerminalText.truncate("라이더가 배달 중이에요", to: 9) == "라이더가…")
        #expect(TerminalText.columns(TerminalText.fit("배달 중", width: 10)) == 10)
    }

    /// Every row of the attach box (with its layout drawing) for a Korean status is exactly the terminal's width,
    /// at 80 and 100 columns; with few rows the title and sync lines stay.
    @Test func attachBoxRowsAreTheTerminalWidth() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 20)
        let duo = bus.session("duo") { o in
            o.device = "iphone-duo"
            o.posture = PostureBody(foldState: "half-opened", orientation: "landscape")
        }
        duo.start()
        #expect(
            bus.run(timeoutMs: 10_000) { duo.syncState == .live && duo.layout != nil && !duo.board.activities.isEmpty }
        )
        for width in [80, 100] {
            let lines = SessionView.render(duo, showLayout: true, width: width)
            #expect(
                lines.contains { $0.unicodeScalars.contains { (0xAC00...0xD7A3).contains($0.value) } },
                "a Korean status"
            )
            #expect(lines.contains { $0.contains("─") && $0.hasPrefix("│") }, "the layout drawing's box lines")
            for l in lines {
                #expect(TerminalText.columns(l) == width, "\(width) columns: '\(l)' is \(TerminalText.columns(l))")
            }
            let kept = TerminalText.fitRows(lines, rows: 8, head: 2, tail: 1) {
                SessionView.pad("… \($0) more", width: width)
            }
            #expect(kept.count == 8 && kept[0] == lines[0] && kept[1] == lines[1] && kept.last == lines.last)
        }
        duo.close()
        bus.shutdown()
    }
}

/// A re-expressed start (the `reconvert` flag: the same event, its instants moved into the phone's clock after a
/// clock step) updates the activity it started: as a start it was refused (`alreadyStarted`) and the countdown
/// stayed where the old clock estimate put it.
struct ReconvertedStartTests {
    @Test func aReconvertedStartMovesTheCountdown() {
        let t: Int64 = 1_800_000_000_000
        var body = EventBody(
            event: "start",
            timestamp: t,
            contentState: ContentStateBody(
                status: "created",
                summary: SummaryBody(ko: "주문 접수", en: "Order received", detailKo: nil, detailEn: nil),
                etaTarget: t + 600_000,
                progress: 0,
                riderPosition: nil,
                lastConfirmed: t
            ),
            staleDate: t + 900_000,
            relevanceScore: 50,
            dismissalDate: nil,
            priority: 10
        )
        func converted(_ offset: Int64) -> ClientInstantsBody {
            ClientInstantsBody(
                timestamp: t + offset,
                etaTarget: t + 600_000 + offset,
                staleDate: t + 900_000 + offset,
                dismissalDate: nil,
                lastConfirmed: t + offset,
                uncertaintyMs: 5
            )
        }
        var mirror = PhoneMirror(liveActivities: nil, foreground: true)
        body.client = converted(0)
        let started = mirror.apply(
            topic: "orders/A1",
            sequence: 1,
            body: body,
            now: ClientInstant(millisecondsSinceEpoch: t)
        )
        #expect(started.applied)
        // The phone's clock turned out 90 s fast: the daemon re-expresses the same start.
        body.client = converted(90_000)
        let again = mirror.apply(
            topic: "orders/A1",
            sequence: 1,
            body: body,
            now: ClientInstant(millisecondsSinceEpoch: t + 90_000),
            reconvert: true
        )
        #expect(again.applied, "a reconverted start is applied: \(again)")
        #expect(mirror.board.activity("A1")?.etaTarget.millisecondsSinceEpoch == t + 690_000)
        // A second start that is not a re-expression is still refused, as iOS refuses it.
        let duplicate = mirror.apply(
            topic: "orders/A1",
            sequence: 1,
            body: body,
            now: ClientInstant(millisecondsSinceEpoch: t + 90_000)
        )
        #expect(!duplicate.applied)
    }
}
