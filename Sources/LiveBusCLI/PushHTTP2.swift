import Foundation
import LiveBusAPNs
import LiveBusAPNsServer
import LiveBusWire

/// `livebus push FILE --via http2 (--token HEX | --channel ID) …`: sends the payload through the daemon's APNs
/// endpoint (h2c on `--apns-socket PATH` or `--apns HOST:PORT`) as a backend's APNs client would, instead of the
/// admin socket, so the request meets APNs's validation, the push tokens and the refresh scheduler (issue 17).
enum PushHTTP2 {
    /// The options only `--via http2` takes.
    static let options: Set<String> = [
        "via", "header", "token", "channel", "priority", "collapse-id", "expiration", "topic", "apns-socket", "apns",
    ]

    /// Runs it. Exit status: 0 when APNs accepted the request (2xx), 2 when it refused it (its status and reason
    /// printed), 3 when the endpoint is unreachable, 4 when it did not answer in 15 s.
    static func run(_ a: Arguments, out: Output) throws(CLIError) -> Int32 {
        guard a.positionals.count == 1 else {
            throw .usage(
                "livebus push --via http2 takes one FILE (or -) and --token or --channel",
                recovery: "e.g. livebus push update.json --via http2 --token HEX --apns-socket /tmp/apns.sock"
            )
        }
        let path = a.positionals[0]
        let body: [UInt8]
        if path == "-" {
            body = Array(FileHandle.standardInput.readDataToEndOfFile())
        } else {
            guard let d = FileManager.default.contents(atPath: path) else {
                throw CLIError("fileUnreadable", "cannot read \(path)", recovery: "check the path", exit: .usage)
            }
            body = Array(d)
        }
        let topic = a.value("topic") ?? LiveBusPushTokens.defaultBundleID + liveActivityTopicSuffix
        var headers: [(name: String, value: String)] = [("apns-push-type", "liveactivity")]
        let requestPath: String
        switch (a.value("token"), a.value("channel")) {
        case (let token?, nil):
            requestPath = "/3/device/\(token)"
            headers.append(("apns-topic", topic))
        case (nil, let channel?):
            requestPath = "/4/broadcasts/apps/\(APNsValidator.bundleID(ofTopic: topic))"
            headers.append(("apns-channel-id", channel))
        default:
            throw .usage(
                "livebus push --via http2 needs --token HEX (a device or push-to-start token) or --channel ID (a broadcast), not both",
                recovery: "tokens: `livebus status` (APNS PUSH TOKENS)"
            )
        }
        if let p = a.value("priority") { headers.append(("apns-priority", p)) }
        if let c = a.value("collapse-id") { headers.append(("apns-collapse-id", c)) }
        if let e = a.value("expiration") { headers.append(("apns-expiration", e)) }
        headers.append(("authorization", "bearer \(unsignedProviderToken())"))
        // Each --header replaces the default of the same name; a name given twice is sent twice (APNs then
        // answers 400 DuplicateHeaders, as it would to your client).
        var given: [(name: String, value: String)] = []
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
        for (k, v) in response.headers { data[k] = .string(v) }
        if let r = answer?["reason"] as? String { data["reason"] = .string(r) }
        if let m = answer?["livebus-message"] as? String { data["message"] = .string(m) }
        var text = "APNs \(response.status)"
        if let id = response.header("apns-id") { text += " apns-id \(id)" }
        if let p = response.header("livebus-push-id"), !p.isEmpty { text += " · push \(p) (livebus explain \(p))" }
        if let r = answer?["reason"] as? String {
            text += ": \(r)"
            if let m = answer?["livebus-message"] as? String { text += " — \(m)" }
        }
        out.success(text, data: .object(data))
        return (200..<300).contains(response.status) ? 0 : ExitCode.usage.rawValue
    }

    /// A well-formed provider token nobody signed, issued now: accepted by an endpoint without `--apns-key`
    /// (give your own with `--header 'authorization: bearer …'` otherwise).
    static func unsignedProviderToken() -> String {
        let h = Base64URL.encode(Array(#"{"alg":"ES256","kid":"LIVEBUSCLI"}"#.utf8))
        let c = Base64URL.encode(Array(#"{"iss":"LIVEBUSCLI","iat":\#(Int64(Date().timeIntervalSince1970))}"#.utf8))
        return "\(h).\(c).\(Base64URL.encode([UInt8](repeating: 0, count: 64)))"
    }
}
