import Foundation
import LiveBusAPNs
import LiveBusAPNsServer
import LiveBusLoop
import LiveBusWire

/// `livebus push FILE --via http2 (--token HEX | --channel ID) …`: sends the payload through the daemon's APNs
/// endpoint (h2c on `--apns-socket PATH` or `--apns HOST:PORT`) as a backend's APNs client would, instead of the
/// admin socket, so the request meets APNs's validation, the push tokens and the refresh scheduler (issue 17).
enum PushHTTP2 {
    /// The options only `--via http2` takes.
    static let options: Set<String> = [
        "via", "header", "token", "channel", "priority", "collapse-id", "expiration", "topic", "apns-socket", "apns",
        "request",
    ]

    /// Runs it. Exit status: 0 when APNs accepted the request (2xx), 2 when it refused it (its status and reason
    /// printed), 3 when the endpoint is unreachable, 4 when it did not answer in 15 s.
    static func run(_ a: Arguments, out: Output) throws(CLIError) -> Int32 {
        // A request file (--request) brings its own path, headers and body; a Simulator .apns file its app.
        var fileRequest: APNsRequestFile.Request?
        if let rf = a.value("request") {
            guard a.positionals.isEmpty else {
                throw .usage(
                    "livebus push --via http2 --request FILE takes the body from FILE, not from \(a.positionals[0])",
                    recovery: "put the body after the request file's blank line"
                )
            }
            let bytes = try readFile(rf)
            do {
                fileRequest = try APNsRequestFile.parse(bytes)
            } catch {
                throw CLIError(
                    "badRequestFile",
                    "\(rf): \(error.description)",
                    recovery:
                        "a request file is an optional request line (POST /3/device/TOKEN), header lines, a blank line and the body",
                    exit: .usage
                )
            }
        } else if a.positionals.count != 1 {
            throw .usage(
                "livebus push --via http2 takes one FILE (or -) and --token or --channel, or --request FILE",
                recovery: "e.g. livebus push update.json --via http2 --token HEX --apns-socket /tmp/apns.sock"
            )
        }
        var body: [UInt8]
        if let r = fileRequest { body = r.body } else { body = try readFile(a.positionals[0]) }
        let simulator = APNsRequestFile.simulatorPayload(body)
        body = simulator.payload
        let fileTopic = fileRequest?.headers.last { $0.name == "apns-topic" }?.value
        let topic =
            a.value("topic") ?? fileTopic ?? simulator.bundleID.map { $0 + liveActivityTopicSuffix }
            ?? LiveBusPushTokens.defaultBundleID + liveActivityTopicSuffix
        var headers: [(name: String, value: String)] = [("apns-push-type", "liveactivity")]
        let requestPath: String
        switch (a.value("token"), a.value("channel"), fileRequest?.path) {
        case (let token?, nil, _):
            requestPath = "/3/device/\(token)"
            headers.append(("apns-topic", topic))
        case (nil, let channel?, _):
            requestPath = "/4/broadcasts/apps/\(APNsValidator.bundleID(ofTopic: topic))"
            headers.append(("apns-channel-id", channel))
        case (nil, nil, let path?):
            requestPath = path
            if path.hasPrefix("/3/") { headers.append(("apns-topic", topic)) }
        default:
            throw .usage(
                "livebus push --via http2 needs --token HEX (a device or push-to-start token) or --channel ID (a broadcast), not both, or a request file whose request line names the path",
                recovery: "tokens: `livebus status` (APNS PUSH TOKENS)"
            )
        }
        if let m = fileRequest?.method, m != "POST" {
            throw .usage(
                "the request file's method is \(m); pushes are POST (channel management: curl, see the README)",
                recovery: "start the request file with POST /3/device/TOKEN"
            )
        }
        if let p = a.value("priority") { headers.append(("apns-priority", p)) }
        if let c = a.value("collapse-id") { headers.append(("apns-collapse-id", c)) }
        if let e = a.value("expiration") {
            // Apple: apns-expiration is "a UNIX epoch date expressed in seconds (UTC)"; 0 means "attempt delivery
            // only once" (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
            guard !e.isEmpty, e.allSatisfy({ $0.isASCII && $0.isNumber }), UInt64(e) != nil else {
                throw .usage(
                    "--expiration '\(e)' is not a Unix timestamp: it is a whole number of seconds since 1970-01-01 UTC (APNs's apns-expiration), 0 for now or never",
                    recovery: "e.g. --expiration $(( $(date +%s) + 3600 )) for one hour from now, or --expiration 0"
                )
            }
            headers.append(("apns-expiration", e))
        }
        headers.append(("authorization", "bearer \(unsignedProviderToken())"))
        // Each --header replaces the default of the same name; a name given twice is sent twice (APNs then
        // answers 400 DuplicateHeaders, as it would to your client).
        var given: [(name: String, value: String)] = fileRequest?.headers ?? []
        for h in a.values("header") {
            guard let colon = h.firstIndex(of: ":") else {
                throw .usage("--header '\(h)' is not NAME:VALUE", recovery: "e.g. --header 'apns-priority: 5'")
            }
            let name = h[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = h[h.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_")
            guard !name.isEmpty, name.allSatisfy({ allowed.contains($0) }) else {
                throw .usage(
                    "--header '\(h)': '\(name)' is not a header name (letters, digits, - and _)",
                    recovery: "e.g. --header 'apns-priority: 5'"
                )
            }
            given.append((name, value))
        }
        headers.removeAll { h in given.contains { $0.name == h.name } }
        headers += given
        var unixSocket = a.value("apns-socket")
        var host = "127.0.0.1"
        var port = 0
        if let hp = a.value("apns") {
            guard let colon = hp.lastIndex(of: ":"), let p = Int(hp[hp.index(after: colon)...]), (1...65535).contains(p)
            else {
                throw .usage("--apns '\(hp)' is not HOST:PORT", recovery: "the h2c listener of livebusd --apns-h2c")
            }
            host = String(hp[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            port = p
            unixSocket = nil
        }
        guard unixSocket != nil || port > 0 else {
            throw .usage(
                "livebus push --via http2 needs the endpoint: --apns-socket PATH (livebusd --apns-socket) or --apns HOST:PORT (livebusd --apns HOST:PORT --apns-h2c)",
                recovery: "TLS is for your own APNs client; this command speaks h2c"
            )
        }
        let request = APNsRequest(method: "POST", path: requestPath, headers: headers, body: body)
        let response: APNsResponse
        do {
            response = try HTTP2Client.send(request, unixSocket: unixSocket, host: host, port: port)
        } catch {
            switch error.kind {
            case "unreachable":
                if let path = unixSocket, let owner = SocketProbe.owner(of: path), owner != getuid() {
                    throw CLIError.foreignSocket(path, owner: owner, flag: "--apns-socket")
                }
                throw CLIError(
                    "daemonUnreachable",
                    error.description,
                    recovery: "is livebusd running with --apns-socket?",
                    exit: .daemonUnreachable
                )
            case "timedOut": throw CLIError("timedOut", error.description, exit: .timedOut)
            default: throw CLIError("http2Error", error.description, exit: .daemonUnreachable)
            }
        }
        let answer = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        var data: [String: JSONValue] = ["status": .number(Double(response.status))]
        for (k, v) in response.headers where !v.isEmpty { data[k] = .string(v) }
        if let r = answer?["reason"] as? String { data["reason"] = .string(r) }
        if let m = answer?["livebus-message"] as? String { data["message"] = .string(m) }
        var text = "APNs \(response.status)"
        if let id = response.header("apns-id") { text += " apns-id \(id)" }
        if let p = response.header("livebus-push-id"), !p.isEmpty { text += " · push \(p) (livebus explain \(p))" }
        if let r = answer?["reason"] as? String {
            text += ": \(r)"
            if let m = answer?["livebus-message"] as? String { text += " — \(m)" }
        }
        guard (200..<300).contains(response.status) else {
            // A refusal: with --json the error envelope, APNs's reason as its code, the answer kept as data;
            // for people the same line as a success, on stdout (exit 2 either way).
            guard out.json else {
                out.success(text, data: .object(data))
                return ExitCode.usage.rawValue
            }
            let reason = answer?["reason"] as? String
            throw CLIError(
                reason ?? "http\(response.status)",
                (answer?["livebus-message"] as? String).map { "APNs \(response.status) \(reason ?? ""): \($0)" }
                    ?? "APNs \(response.status)\(reason.map { " \($0)" } ?? "")",
                recovery: refusalRecovery(reason),
                exit: .usage,
                data: .object(data)
            )
        }
        out.success(text, data: .object(data))
        return 0
    }

    /// The bytes of `path`, or standard input for `-`.
    /// What to do about APNs's refusal `reason` (Apple's reason names; `nil` when the answer had none).
    static func refusalRecovery(_ reason: String?) -> String {
        switch reason {
        case "BadDeviceToken", "Unregistered", "DeviceTokenNotForTopic":
            "use a token from `livebus status` (APNS PUSH TOKENS) and its bundle id as --topic"
        case "BadChannelId", "MissingChannelId":
            "use a channel id from POST /1/apps/BUNDLE/channels (livebus status -j lists each phone's channels)"
        case "BadExpirationDate": "--expiration is Unix seconds (UTC), 0 for now or never"
        case "BadPriority": "--priority is 10, 5 or 1"
        case "BadCollapseId": "--collapse-id is at most 64 bytes"
        case "PayloadTooLarge": "shorten the payload (4096 bytes, 5120 for VoIP)"
        case "BadPayload", "PayloadEmpty": "the body must be a JSON object with an aps dictionary"
        case "TooManyRequests": "wait and retry with backoff"
        default: "see the reason in Apple's table: Handling notification responses from APNs"
        }
    }

    /// - Throws: ``CLIError`` `fileUnreadable` (exit 2) naming the path.
    static func readFile(_ path: String) throws(CLIError) -> [UInt8] {
        if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        guard let d = FileManager.default.contents(atPath: path) else {
            throw CLIError("fileUnreadable", "cannot read \(path)", recovery: "check the path", exit: .usage)
        }
        return Array(d)
    }

    /// A well-formed provider token nobody signed, issued now: accepted by an endpoint without `--apns-key`
    /// (give your own with `--header 'authorization: bearer …'` otherwise).
    static func unsignedProviderToken() -> String {
        let h = Base64URL.encode(Array(#"{"alg":"ES256","kid":"LIVEBUSCLI"}"#.utf8))
        let c = Base64URL.encode(Array(#"{"iss":"LIVEBUSCLI","iat":\#(Int64(Date().timeIntervalSince1970))}"#.utf8))
        return "\(h).\(c).\(Base64URL.encode([UInt8](repeating: 0, count: 64)))"
    }
}
