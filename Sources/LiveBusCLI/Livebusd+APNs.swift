import Foundation
import LiveBusDaemon

extension LivebusdCommand {
    /// The APNs endpoint's valued options (issue 17).
    static let apnsOptionNames: Set<String> = [
        "apns", "apns-socket", "apns-ca-dir", "apns-key", "apns-team-id", "apns-key-id", "apns-unregistered-delay",
        "apns-max-streams", "apns-stream-timeout", "apns-handshake-timeout", "apns-start-budget",
    ]
    /// The APNs endpoint's boolean flags.
    static let apnsFlagNames: Set<String> = ["apns-h2c", "apns-allow-remote"]

    /// Reads `--apns HOST:PORT` and the other `--apns-*` options.
    /// - Throws: ``CLIError`` (usage) naming the flag and what it needs.
    static func apnsOptions(_ a: Arguments) throws(CLIError) -> APNsOptions {
        var o = APNsOptions()
        if let v = a.value("apns") {
            if let colon = v.lastIndex(of: ":"), let port = Int(v[v.index(after: colon)...]),
                !(0...65535).contains(port)
            {
                throw CLIError.usage(
                    "--apns '\(v)': port \(port) is out of range; give a port in 0 … 65535 (0 picks a free one)",
                    recovery: "e.g. --apns 127.0.0.1:8443"
                )
            }
            guard let colon = v.lastIndex(of: ":"), let port = Int(v[v.index(after: colon)...]),
                (0...65535).contains(port)
            else {
                throw CLIError.usage(
                    "--apns '\(v)' is not HOST:PORT",
                    recovery: "e.g. --apns 127.0.0.1:8443 ([::1]:8443 for IPv6; port 0 picks a free one)"
                )
            }
            var host = String(v[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else {
                throw CLIError.usage("--apns '\(v)' names no host", recovery: "e.g. --apns 127.0.0.1:8443")
            }
            o.host = host
            o.port = port
        }
        o.tls = !a.flag("apns-h2c")
        if a.flag("apns-h2c") && o.host == nil {
            throw CLIError.usage(
                "--apns-h2c goes with --apns HOST:PORT",
                recovery: "the Unix socket (--apns-socket) is always h2c"
            )
        }
        o.allowRemote = a.flag("apns-allow-remote")
        o.socketPath = a.value("apns-socket")
        o.caDirectory = a.value("apns-ca-dir")
        if let path = a.value("apns-key") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw CLIError.usage(
                    "--apns-key: cannot read \(path)",
                    recovery: "give the .p8 file Apple issued (or its public key PEM)"
                )
            }
            o.keyPEM = text
            o.teamID = a.value("apns-team-id")
            o.keyID = a.value("apns-key-id")
            guard o.teamID != nil, o.keyID != nil else {
                throw CLIError.usage(
                    "--apns-key needs --apns-team-id and --apns-key-id",
                    recovery: "the 10-character team id (iss) and key id (kid) your provider tokens carry"
                )
            }
        } else if a.value("apns-team-id") != nil || a.value("apns-key-id") != nil {
            throw CLIError.usage("--apns-team-id and --apns-key-id go with --apns-key FILE.p8")
        }
        if let v = a.value("apns-unregistered-delay") {
            o.unregisteredDelayMilliseconds = try parseDuration(
                v,
                flag: "apns-unregistered-delay",
                allowed: 0...7 * 86_400_000
            )
        }
        o.pushToStartBudgetPerHour = try a.uint("apns-start-budget", default: 10, in: 0...100_000)
        o.limits.maxConcurrentStreams = UInt32(try a.uint("apns-max-streams", default: 100, in: 1...100_000))
        if let v = a.value("apns-stream-timeout") {
            o.limits.streamTimeoutMilliseconds = UInt64(
                try parseDuration(v, flag: "apns-stream-timeout", allowed: 1...3_600_000)
            )
        }
        if let v = a.value("apns-handshake-timeout") {
            o.limits.handshakeTimeoutMilliseconds = UInt64(
                try parseDuration(v, flag: "apns-handshake-timeout", allowed: 1...3_600_000)
            )
        }
        return o
    }
}
