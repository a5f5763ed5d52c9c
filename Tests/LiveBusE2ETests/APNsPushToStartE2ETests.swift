import Foundation
import LiveBusAPNs
import Testing

/// The JSON lines of `log` whose `type` is `type`.
private func lines(_ log: String, type: String) -> [[String: Any]] {
    log.split(separator: "\n").compactMap {
        (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
    }.filter { $0["type"] as? String == type }
}

/// Push-to-start and broadcast channels through a real daemon, driven with curl over the h2c Unix socket.
@Suite(.serialized)
struct APNsPushToStartE2ETests {
    /// A backgrounded phone's push-to-start token is in its JSON log and in `livebus status --json`; a start push
    /// without alert is accepted (200) and starts nothing (the verdict says aps.alert is required); one with alert,
    /// input-push-token and a channel starts the activity while the app stays in the background, and the activity's
    /// own token (in the log) takes the next update; the token is another bundle's topic: 400 DeviceTokenNotForTopic.
    @Test func aStartPushStartsAnActivityOnABackgroundedPhone() throws {
        let bus = try APNsBus([], prefix: "lbp")
        defer { bus.stop() }
        try bus.attach("pa", ["--app-state", "background"])
        #expect(bus.wait { !lines(bus.phoneLog("pa"), type: "pushToken").isEmpty }, "\(bus.phoneLog("pa"))")
        let pts = try #require(lines(bus.phoneLog("pa"), type: "pushToken").first)
        #expect(pts["kind"] as? String == "pushToStart" && pts["bundleID"] as? String == "com.example.delivery")
        let token = try #require(pts["token"] as? String)
        #expect(token == LiveBusPushTokens.pushToStartToken(phone: "pa", bundleID: "com.example.delivery"))
        let status = try E2ECLIGoldenTests.run(["status", "--socket", bus.sock, "--json"])
        #expect(status.stdout.contains(token), "livebus status --json shows the push-to-start token: \(status.stdout)")
        let text = try E2ECLIGoldenTests.run(["status", "--socket", bus.sock])
        #expect(text.stdout.contains(token), "livebus status shows it too: \(text.stdout)")

        let now = Int64(Date().timeIntervalSince1970)
        let state = #"{"status":"cooking","etaEnd":\#(now - 978_307_200 + 900)}"#
        let noAlert =
            #"{"aps":{"timestamp":\#(now),"event":"start","content-state":\#(state),"attributes-type":"OrderAttributes","attributes":{"orderID":"S1"}}}"#
        let a = bus.curlPush(token: token, pushArgs(body: noAlert))
        #expect(a.status == 200, "\(a.body)")
        let noAlertID = try #require(a.headers["livebus-push-id"])
        usleep(300_000)
        let explain = try E2ECLIGoldenTests.run(["explain", noAlertID, "--socket", bus.sock, "--json"])
        #expect(explain.stdout.contains("aps.alert"), "without alert nothing starts: \(explain.stdout)")
        #expect(bus.pushLines("pa").isEmpty)

        let start =
            #"{"aps":{"timestamp":\#(now),"event":"start","content-state":\#(state),"attributes-type":"OrderAttributes","attributes":{"orderID":"S1"},"alert":{"title":"Order","body":"Cooking"},"input-push-token":1}}"#
        #expect(bus.curlPush(token: token, pushArgs(body: start)).status == 200)
        #expect(bus.wait { !bus.pushLines("pa").isEmpty })
        let started = bus.pushLines("pa").first ?? ""
        #expect(started.contains(#""order":"S1""#) && started.contains(#""applied":true"#), "\(started)")
        #expect(bus.wait { lines(bus.phoneLog("pa"), type: "pushToken").count >= 2 })
        let activity = try #require(
            lines(bus.phoneLog("pa"), type: "pushToken").first { $0["kind"] as? String == "activity" }
        )
        let activityToken = try #require(activity["token"] as? String)
        #expect(activityToken == LiveBusPushTokens.activityToken(phone: "pa", order: "S1"))
        let update =
            #"{"aps":{"timestamp":\#(now + 1),"event":"update","content-state":{"status":"pickedUp","etaEnd":\#(now - 978_307_200 + 600)}}}"#
        #expect(bus.curlPush(token: activityToken, pushArgs(body: update)).status == 200)
        #expect(
            bus.wait { bus.pushLines("pa").contains { $0.contains(#""status":"pickedUp""#) } },
            "\(bus.pushLines("pa"))"
        )
        let again = try E2ECLIGoldenTests.run(["status", "--socket", bus.sock, "--json"])
        #expect(again.stdout.contains(activityToken), "the activity token is in status: \(again.stdout)")
        // A second start for the same order makes a second activity (Apple does not de-duplicate); LiveBus warns.
        #expect(bus.curlPush(token: token, pushArgs(body: start)).status == 200)
        #expect(bus.wait { bus.pushLines("pa").contains { $0.contains(#""order":"S1-2""#) } }, "\(bus.pushLines("pa"))")
        #expect(bus.daemonLog.contains("a second start for the same activity"))
        let wrongTopic = bus.curlPush(token: token, pushArgs(["apns-topic": "com.other.app.push-type.liveactivity"]))
        #expect(wrongTopic.reason == "DeviceTokenNotForTopic", "\(wrongTopic.body)")
    }

    /// The channel management API (create 201 with apns-channel-id, read, list, delete 204; MissingChannelId,
    /// BadChannelId, ChannelNotRegistered, BadMessageStoragePolicy) and broadcasts: one reaches both phones whose
    /// activities listen on the channel, an unknown channel is 400 BadChannelId, a broadcast start starts nothing.
    @Test func channelsAndBroadcasts() throws {
        let bus = try APNsBus([], prefix: "lbc")
        defer { bus.stop() }
        let base = ["--http2-prior-knowledge", "--unix-socket", bus.apnsSock]
        let auth = ["-H", "authorization: bearer \(e2eUnsignedJWT())"]
        let url = "http://localhost/1/apps/com.example.delivery/channels"
        let create = curl(
            base + auth + [
                "-X", "POST", "--data-binary", #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#, url,
            ]
        )
        #expect(create.status == 201, "\(create.body)")
        let channel = try #require(create.headers["apns-channel-id"])
        #expect(create.headers["apns-request-id"].map(APNsValidator.isCanonicalUUID) == true)
        let read = curl(base + auth + ["-H", "apns-channel-id: \(channel)", url])
        #expect(read.status == 200 && read.body.contains(#""message-storage-policy":1"#), "\(read.body)")
        let all = curl(base + auth + ["http://localhost/1/apps/com.example.delivery/all-channels"])
        #expect(
            all.status == 200 && all.body.contains(channel.replacingOccurrences(of: "/", with: "\\/")),
            "\(all.body)"
        )
        #expect(curl(base + auth + [url]).reason == "MissingChannelId")
        #expect(curl(base + auth + ["-H", "apns-channel-id: not base64!", url]).reason == "BadChannelId")
        let unknown = curl(base + auth + ["-H", "apns-channel-id: bm9uZQ==", url])
        #expect(unknown.status == 404 && unknown.reason == "ChannelNotRegistered", "\(unknown.body)")
        let badPolicy = curl(
            base + auth + [
                "-X", "POST", "--data-binary", #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#, url,
            ]
        )
        #expect(badPolicy.status == 400 && badPolicy.reason == "BadMessageStoragePolicy", "\(badPolicy.body)")
        #expect(curl(base + ["-H", "apns-channel-id: \(channel)", url]).reason == "MissingProviderToken")
        let doomed =
            curl(
                base + auth + [
                    "-X", "POST", "--data-binary", #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#, url,
                ]
            ).headers["apns-channel-id"] ?? ""
        #expect(curl(base + auth + ["-X", "DELETE", "-H", "apns-channel-id: \(doomed)", url]).status == 204)
        #expect(curl(base + auth + ["-H", "apns-channel-id: \(doomed)", url]).reason == "ChannelNotRegistered")

        // Two backgrounded phones start activities listening on the channel (input-push-channel).
        try bus.attach("pa", ["--app-state", "background"])
        try bus.attach("pb", ["--app-state", "background"])
        #expect(
            bus.wait {
                !lines(bus.phoneLog("pa"), type: "pushToken").isEmpty
                    && !lines(bus.phoneLog("pb"), type: "pushToken").isEmpty
            }
        )
        let now = Int64(Date().timeIntervalSince1970)
        let start =
            #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{"status":"cooking","etaEnd":\#(now - 978_307_200 + 900)},"attributes-type":"OrderAttributes","attributes":{"orderID":"G1"},"alert":{"title":"Game","body":"Kick-off"},"input-push-channel":"\#(channel)"}}"#
        for phone in ["pa", "pb"] {
            let t = LiveBusPushTokens.pushToStartToken(phone: phone, bundleID: "com.example.delivery")
            #expect(bus.curlPush(token: t, pushArgs(body: start)).status == 200)
        }
        #expect(bus.wait { !bus.pushLines("pa").isEmpty && !bus.pushLines("pb").isEmpty })
        let broadcastURL = "http://localhost/4/broadcasts/apps/com.example.delivery"
        let update =
            #"{"aps":{"timestamp":\#(now + 1),"event":"update","content-state":{"status":"delivering","etaEnd":\#(now - 978_307_200 + 300)}}}"#
        let b = curl(
            base + auth + [
                "-H", "apns-channel-id: \(channel)", "-H", "apns-push-type: liveactivity", "--data-binary", update,
                broadcastURL,
            ]
        )
        #expect(b.status == 200 && b.headers["apns-request-id"] != nil, "\(b.status) \(b.body)")
        for phone in ["pa", "pb"] {
            #expect(
                bus.wait {
                    bus.pushLines(phone).contains {
                        $0.contains(#""status":"delivering""#) && $0.contains(#""order":"G1""#)
                    }
                },
                "\(phone): \(bus.pushLines(phone))"
            )
        }
        let unknownChannel = curl(
            base + auth + [
                "-H", "apns-channel-id: bm9uZQ==", "-H", "apns-push-type: liveactivity", "--data-binary", update,
                broadcastURL,
            ]
        )
        #expect(unknownChannel.status == 400 && unknownChannel.reason == "BadChannelId", "\(unknownChannel.body)")
        let broadcastStart = curl(
            base + auth + [
                "-H", "apns-channel-id: \(channel)", "-H", "apns-push-type: liveactivity", "--data-binary", start,
                broadcastURL,
            ]
        )
        #expect(broadcastStart.status == 200)
        let id = try #require(broadcastStart.headers["livebus-push-id"])
        let explain = try E2ECLIGoldenTests.run(["explain", id, "--socket", bus.sock, "--json"])
        #expect(explain.stdout.contains("broadcastCannotStart"), "\(explain.stdout)")
    }
}

/// A real APNs client library from PyPI (aioapns, pinned in tools/setup) against the TLS endpoint, its CA and a
/// verified team key: tools/apns-client-e2e.py starts an activity with push-to-start on two backgrounded phones,
/// updates one, broadcasts to both through a channel, ends one, and receives APNs's errors (413 PayloadTooLarge,
/// 400 BadPriority, 410 Unregistered, 400 BadDeviceToken, BadChannelId, MissingChannelId); each phone's JSON log
/// is checked at each step.
@Suite(.serialized)
struct APNsClientLibraryE2ETests {
    @Test func aioapnsDrivesLiveBus() throws {
        let keyDir = temporaryDirectory("lbk")
        defer { try? FileManager.default.removeItem(atPath: keyDir) }
        let key = keyDir + "/AuthKey_KEY1234567.p8"
        let gen = Process()
        gen.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        gen.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key]
        try gen.run()
        gen.waitUntilExit()
        let bus = try APNsBus(
            [
                "--apns", "127.0.0.1:0", "--apns-ca-dir", keyDir + "/ca", "--apns-key", key, "--apns-team-id",
                "TEAM123456", "--apns-key-id", "KEY1234567",
            ],
            prefix: "lbl"
        )
        defer { bus.stop() }
        var port = 0
        var ca = ""
        bus.wait {
            let t = bus.daemonLog
            guard let r = t.range(of: #"://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
                let c = t.range(of: #"ca=[^ ]+"#, options: .regularExpression)
            else { return false }
            port = Int(t[r].split(separator: ":").last!) ?? 0
            ca = String(t[c].dropFirst(3))
            return true
        }
        #expect(port > 0, "\(bus.daemonLog)")
        try bus.attach("pa", ["--app-state", "background"], duration: "60s")
        try bus.attach("pb", ["--app-state", "background"], duration: "60s")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools/apns-client-e2e.py").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [
            "python3", script, "--port", "\(port)", "--ca", ca, "--key", key, "--key-id", "KEY1234567", "--team-id",
            "TEAM123456", "--phone-a", bus.logPath("pa"), "--phone-b", bus.logPath("pb"),
        ]
        let err = Pipe()
        let out = Pipe()
        p.standardError = err
        p.standardOutput = out
        try p.run()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let outText = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(outText)\n\(errText)\ndaemon:\n\(bus.daemonLog.suffix(3000))")
        #expect(outText.contains("apns-client-e2e: ok"), "\(outText)")
    }
}

/// `livebus push`'s exit status follows one rule for every verdict (help push): 2 when every phone refused the
/// payload as unreadable (a content state that does not decode is as unreadable as bad JSON), 1 for an unmet
/// --expect, otherwise 0 whatever the activity rules decided.
@Suite(.serialized)
struct PushExitStatusE2ETests {
    @Test func oneRuleForEveryVerdict() throws {
        let bus = try APNsBus(["--scenario", "demo-120s", "--time-scale", "2"], prefix: "lbx")
        defer { bus.stop() }
        try bus.attach("solo")
        #expect(bus.wait { bus.phoneLog("solo").contains("A1001") })
        let now = Int64(Date().timeIntervalSince1970)
        func push(_ body: String, _ extra: [String] = []) throws -> E2ECLIGoldenTests.Run {
            let file = bus.dir + "/p.json"
            try body.write(toFile: file, atomically: true, encoding: .utf8)
            return try E2ECLIGoldenTests.run(["push", "solo", file, "--order", "A1001", "--socket", bus.sock] + extra)
        }
        let typeMismatch = try push(
            #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"status":7,"etaEnd":1}}}"#
        )
        #expect(typeMismatch.exit == 2 && typeMismatch.stdout.contains("typeMismatch"), "\(typeMismatch.stdout)")
        let old = try push(
            #"{"aps":{"timestamp":1000,"event":"update","content-state":{"status":"cooking","etaEnd":1}}}"#
        )
        #expect(old.exit == 0 && old.stdout.contains("olderTimestamp"), "\(old.stdout) \(old.stderr)")
        let expected = try push(
            #"{"aps":{"timestamp":1000,"event":"update","content-state":{"status":"cooking","etaEnd":1}}}"#,
            ["--expect", "applied"]
        )
        #expect(expected.exit == 1, "\(expected.stdout)")
    }
}

/// `livebus push --via http2` sends through the daemon's APNs endpoint: APNs's answer and exit status (0 accepted,
/// 2 refused with the reason printed), --header replacing a default, a start push to a push-to-start token.
@Suite(.serialized)
struct PushViaHTTP2E2ETests {
    @Test func pushThroughTheEndpoint() throws {
        let bus = try APNsBus(["--scenario", "demo-120s", "--time-scale", "2"], prefix: "lbh")
        defer { bus.stop() }
        // In the foreground: the scenario's own updates would spend a backgrounded phone's budget first.
        try bus.attach("solo")
        #expect(bus.wait { bus.phoneLog("solo").contains("A1001") })
        let now = Int64(Date().timeIntervalSince1970)
        let file = bus.dir + "/u.json"
        try
            #"{"aps":{"timestamp":\#(now + 5),"event":"update","content-state":{"status":"delivering","etaEnd":\#(now - 978_307_200 + 600)}}}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let token = LiveBusPushTokens.activityToken(phone: "solo", order: "A1001")
        let via = ["--via", "http2", "--apns-socket", bus.apnsSock]
        let ok = try E2ECLIGoldenTests.run(["push", file, "--token", token] + via)
        #expect(
            ok.exit == 0 && ok.stdout.hasPrefix("APNs 200") && ok.stdout.contains("push p"),
            "\(ok.stdout) \(ok.stderr)"
        )
        #expect(bus.wait { bus.pushLines("solo").contains { $0.contains(#""status":"delivering""#) } })
        let bad = try E2ECLIGoldenTests.run(["push", file, "--token", token, "--header", "apns-priority: 7"] + via)
        #expect(bad.exit == 2 && bad.stdout.contains("400") && bad.stdout.contains("BadPriority"), "\(bad.stdout)")
        let json = try E2ECLIGoldenTests.run(["push", file, "--token", token, "--priority", "5", "--json"] + via)
        #expect(json.exit == 0 && json.json?["data"]?["status"]?.doubleValue == 200, "\(json.stdout)")
        // A refusal with --json is the error envelope: APNs's reason as the code, the answer kept as data.
        let refusedJSON = try E2ECLIGoldenTests.run(
            ["push", file, "--token", String(repeating: "0", count: 64), "--json"] + via
        )
        #expect(refusedJSON.exit == 2, "\(refusedJSON.stdout)")
        #expect(refusedJSON.json?["ok"]?.boolValue == false, "\(refusedJSON.stdout)")
        #expect(refusedJSON.json?["error"]?["code"]?.stringValue == "BadDeviceToken", "\(refusedJSON.stdout)")
        #expect(refusedJSON.json?["error"]?["recovery"]?.stringValue?.contains("livebus status") == true)
        #expect(refusedJSON.json?["data"]?["status"]?.doubleValue == 400, "\(refusedJSON.stdout)")
        #expect(refusedJSON.json?["data"]?["reason"]?.stringValue == "BadDeviceToken", "\(refusedJSON.stdout)")
        // --expiration is checked before sending: whole Unix seconds, 0 for now or never.
        let hour = try E2ECLIGoldenTests.run(["push", file, "--token", token, "--expiration", "1h"] + via)
        #expect(hour.exit == 2 && hour.stderr.contains("--expiration '1h' is not a Unix timestamp"), "\(hour.stderr)")
        #expect(hour.stdout.isEmpty, "nothing was sent: \(hour.stdout)")
        let zero = try E2ECLIGoldenTests.run(["push", file, "--token", token, "--expiration", "0"] + via)
        #expect(zero.exit == 0 && zero.stdout.hasPrefix("APNs 200"), "\(zero.stdout) \(zero.stderr)")
        let unknown = try E2ECLIGoldenTests.run(["push", file, "--token", String(repeating: "0", count: 64)] + via)
        #expect(unknown.exit == 2 && unknown.stdout.contains("BadDeviceToken"), "\(unknown.stdout)")
        let channel = try E2ECLIGoldenTests.run(["push", file, "--channel", "bm9uZQ=="] + via)
        #expect(channel.exit == 2 && channel.stdout.contains("BadChannelId"), "\(channel.stdout)")
        let start = bus.dir + "/s.json"
        try
            #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{"status":"cooking","etaEnd":\#(now - 978_307_200 + 900)},"attributes-type":"OrderAttributes","attributes":{"orderID":"V1"},"alert":{"title":"Order","body":"Cooking"}}}"#
            .write(toFile: start, atomically: true, encoding: .utf8)
        let pts = LiveBusPushTokens.pushToStartToken(phone: "solo", bundleID: "com.example.delivery")
        #expect(try E2ECLIGoldenTests.run(["push", start, "--token", pts] + via).exit == 0)
        #expect(
            bus.wait { bus.pushLines("solo").contains { $0.contains(#""order":"V1""#) } },
            "\(bus.pushLines("solo"))"
        )
        // A request file as curl users keep one (request line, headers, blank line, body), and a Simulator .apns file.
        let request = bus.dir + "/push.http"
        try
            "POST https://api.sandbox.push.apple.com/3/device/\(token)\napns-push-type: liveactivity\napns-topic: com.example.delivery.push-type.liveactivity\napns-priority: 10\n\n"
            .appending(
                #"{"aps":{"timestamp":\#(now + 7),"event":"update","content-state":{"status":"delivering","etaEnd":\#(now - 978_307_200 + 480)}}}"#
            )
            .write(toFile: request, atomically: true, encoding: .utf8)
        let fromFile = try E2ECLIGoldenTests.run(["push", "--request", request] + via)
        #expect(fromFile.exit == 0 && fromFile.stdout.hasPrefix("APNs 200"), "\(fromFile.stdout) \(fromFile.stderr)")
        let badFile = bus.dir + "/bad.http"
        try "POST /3/device/\(token)\nnot a header\n\n{}".write(toFile: badFile, atomically: true, encoding: .utf8)
        let refused = try E2ECLIGoldenTests.run(["push", "--request", badFile] + via)
        #expect(refused.exit == 2 && refused.stderr.contains("bad.http: line 2"), "\(refused.stderr)")
        let simctl = bus.dir + "/update.apns"
        try
            #"{"Simulator Target Bundle":"com.example.delivery","aps":{"timestamp":\#(now + 9),"event":"update","content-state":{"status":"delivering","etaEnd":\#(now - 978_307_200 + 420)}}}"#
            .write(toFile: simctl, atomically: true, encoding: .utf8)
        let fromSimctl = try E2ECLIGoldenTests.run(["push", simctl, "--token", token] + via)
        #expect(fromSimctl.exit == 0 && fromSimctl.stdout.hasPrefix("APNs 200"), "\(fromSimctl.stdout)")
        let misuse = try E2ECLIGoldenTests.run(["push", file, "--token", token])
        #expect(misuse.exit == 2 && misuse.stderr.contains("--token goes with --via http2"), "\(misuse.stderr)")
        let gone = try E2ECLIGoldenTests.run([
            "push", file, "--token", token, "--via", "http2", "--apns-socket", bus.dir + "/no.sock",
        ])
        #expect(gone.exit == 3, "\(gone.stderr)")
    }
}
