import Foundation
import LiveBusDaemon
import LiveBusFederation

extension LivebusdCommand {
    /// Federation's valued options (issue 19).
    static let federateOptionNames: Set<String> = [
        "federate", "federate-creds", "federate-ca", "federate-replicas", "federate-nkey",
    ]
    /// Federation's boolean flags.
    static let federateFlagNames: Set<String> = ["federate-optional"]

    /// Reads `--federate nats://HOST:PORT[,…]` and the other `--federate-*` options.
    /// - Throws: ``CLIError`` (usage) naming the flag and what it needs.
    static func federationOptions(_ a: Arguments, replayLogCapacity: Int) throws(CLIError) -> FederationOptions? {
        guard let v = a.value("federate") else {
            for name in federateOptionNames.subtracting(["federate"]).sorted() where a.value(name) != nil {
                throw CLIError.usage("--\(name) goes with --federate nats://HOST:PORT[,…]")
            }
            if a.flag("federate-optional") {
                throw CLIError.usage("--federate-optional goes with --federate nats://HOST:PORT[,…]")
            }
            return nil
        }
        var o: FederationOptions
        do {
            o = FederationOptions(servers: try FederationOptions.parseServers(v))
        } catch {
            throw CLIError.usage(error.message)
        }
        o.replicas = Int(try a.uint("federate-replicas", default: 3, in: 1...5))
        for (name, path) in [("federate-creds", a.value("federate-creds")), ("federate-ca", a.value("federate-ca"))] {
            guard let path else { continue }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw CLIError.usage("--\(name) \(path): no readable file there")
            }
        }
        o.credentialsFile = a.value("federate-creds")
        if let path = a.value("federate-nkey") {
            // libnats signs in one way: natsOptions_SetNKeyFromSeed and natsOptions_SetUserCredentialsFromFiles each
            // replace the other's signature handler (nats.h), so one of the two would be silently dropped.
            guard o.credentialsFile == nil else {
                throw CLIError.usage(
                    "--federate-nkey and --federate-creds are two ways to sign in and libnats uses only one (the later replaces the other); give --federate-creds for a JWT user (its .creds file holds the nkey seed too), --federate-nkey for a user the server lists by nkey"
                )
            }
            do {
                o.nkey = (path, try NKeyUserSeed.read(file: path))
            } catch {
                throw CLIError.usage(error.message)
            }
        }
        o.caFile = a.value("federate-ca")
        o.logCapacity = replayLogCapacity
        return o
    }
}
