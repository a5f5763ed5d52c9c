import Foundation
import LiveBusActivity
import LiveBusDaemon
import LiveBusLoop
import LiveBusSimulator

/// `livebusd`: the bus daemon's command line.
public enum LivebusdCommand {
    /// The help text (golden-tested).
    public static let help = """
        livebusd — the LiveBus daemon: one libuv loop serving client sessions on a Unix socket

        USAGE
          livebusd [--socket PATH] [--scenario NAME|FILE] [--time-scale X] [--seed N] [--data-dir DIR|--memory] [--fresh]
                   [--sync normal|full] [--log-level LEVEL] [--device-file FILE]
                   [--http HOST:PORT|unix:PATH [--http-root DIR] [--http-allow-remote]]
                   [--apns HOST:PORT [--apns-h2c]] [--apns-socket PATH] [--apns-key FILE.p8 --apns-team-id ID --apns-key-id ID]
                   [--federate nats://HOST:PORT[,…] [--federate-replicas N] [--federate-creds FILE|--federate-nkey FILE] [--federate-ca FILE] [--federate-optional]]

        OPTIONS
          --socket PATH        Unix socket to listen on (mode 0600, at most 107 bytes).
                               Default: $LIVEBUS_SOCKET, else the config file's "socket", else
                               $XDG_RUNTIME_DIR/livebus.sock (when it is yours, mode 0700), else
                               /tmp/livebus-<uid>/livebus.sock (the directory is created 0700 and checked).
                               A socket file of another user, or one that does not refuse connections, is never removed.
          --scenario NAME|FILE demo-120s, random (with --orders K; also random:K) or a timeline file
                               (Protocol/SCENARIOS.md). Default: none (orders only from `livebus order create`).
          --orders K           With --scenario random: how many orders (realistic phases, seeded). Default 5.
          --time-scale X       Play the scenario X times faster (10 plays demo-120s in 12 s). Default 1.
          --seed N             Seed for every random choice, so runs repeat. Default 1.
          --data-dir DIR       Where state is kept (SQLite, WAL): events, sequence counters, the replay log, session
                               resume records, the simulator. Default: PATH.d next to the socket. A restart on the same
                               directory (even after kill -9) carries on: phones resume, no acknowledged update is lost.
                               It must be yours, not writable by others, not a symbolic link; one daemon at a time
                               (DIR/lock holds its pid).
          --memory             Keep state in memory only (nothing survives a restart).
          --fresh              Discard the data directory's state first (it is never discarded silently).
          --sync full          fsync every commit (durable across power loss; default normal: across daemon crashes).
          --push-budget N      Priority-10 pushes a backgrounded phone may get per scenario hour before they are
                               throttled (ours: Apple publishes no number). Default 12; frequent updates: 5×.
          --coalesce-bytes SIZE  Bytes queued to a phone above which its non-terminal updates are coalesced; at
                               least 1 (0 would not turn coalescing off: nothing does). Default 256KiB. SIZE (every
                               size flag): whole bytes, bare or with B, KiB, MiB, GiB or TiB, a space before the
                               unit allowed ('256 KiB'): 262144 = 256KiB.
          --slow-consumer-bytes SIZE  Bytes queued above which a phone is disconnected as a slow consumer. Default 4MiB.
                               Larger than --coalesce-bytes.
          --resume-window D    How long a disconnected phone may resume (e.g. 30s, 10m); its name stays reserved for
                               it until then. Default 10m.

        LIMITS (per session unless said; past one a session is slowed, then cut with the code in brackets)
          --max-frames-per-second N  Frames a session may send per second (bursts of as many). Default 20000.
                               Past it the daemon stops reading the session [messageRateTooHigh after the grace].
          --max-subscriptions N    Topic patterns a session may hold. Default 1000 [tooManySubscriptions].
          --max-reply-bytes SIZE   Bytes of replies (PONG, ACK, RESULT…) queued to a session above which the daemon
                               stops reading it until they drain. Default 64KiB [replyQueueFull after the grace].
          --limit-grace D          How long a session may stay slowed by those two before it is cut. Default 5s.
          --handshake-timeout D    Time to complete HELLO after connecting. Default 10s [handshakeTimeout].
          --idle-timeout D         A session that sends nothing for this long is cut; a keepalive PING goes out
                               after half of it. Default 3m [idleTimeout].
          --max-connections N      Connections served at once; more are refused [tooManyConnections] and logged.
                               Default: the descriptor limit (ulimit -n) minus 64 kept for the daemon's files.
          --catch-up-window-bytes SIZE  Replay and snapshot bytes kept queued to a phone; more follow as it drains.
                               Counts apart from --coalesce-bytes and --slow-consumer-bytes. Default 256KiB.
          --activity-schema FILE  The app's ActivityAttributes/ContentState (Protocol/ACTIVITY-SCHEMA.md): pushes are
                               judged with it by phones that have none of their own. A bad file: exit 2, file:line.
                               Default: the built-in delivery activity (Protocol/activity-schemas/delivery.json).
          --log-level LEVEL    debug, info, notice, warning or error. Default info. Logs go to stderr.
          --device-file FILE   A device of your own (one device in the catalog's format, Protocol/DEVICES.md),
                               validated like the catalog's; phones may then attach with its id.
          --http HOST:PORT|unix:PATH  Serve the live dashboard (every attached phone drawn, with controls) on
                               this loopback address (port 0 picks a free one) or Unix socket; prints its URL (with
                               its token) and writes it to PATH.dashboard next to the socket (mode 0600) for
                               `livebus dashboard`.
          --http-root DIR      The page's files. Default: $LIVEBUS_DASHBOARD_DIR, else dashboard/ of the repository
                               the binary was built in, else /usr/local/share/livebus/dashboard.
          --http-allow-remote  Allow a non-loopback --http address (anyone with the URL controls the phones).
          --version            Print the version.
          --help               Print this help.

        APNs ENDPOINT (point your backend's APNs client at LiveBus; README "Point your backend at LiveBus")
          --apns HOST:PORT     Serve Apple's provider API (POST /3/device/<token>, POST /4/broadcasts/apps/<bundle>,
                               channel management on /1/apps/<bundle>/channels and /all-channels) over HTTP/2
                               with TLS (ALPN h2) on HOST:PORT; PORT 0 picks a free one (logged).
                               HOST must be loopback (127.0.0.1, ::1, localhost) unless --apns-allow-remote.
                               The certificate is issued by a CA LiveBus makes at first start: DIR/apns-ca.pem
                               (logged as ca=…; give it to your client), DIR = --apns-ca-dir, else the data
                               directory, else a temporary directory.
          --apns-h2c           Plaintext HTTP/2 with prior knowledge on --apns instead of TLS.
          --apns-socket PATH   Also serve h2c on a Unix socket (mode 0600; curl --unix-socket PATH).
          --apns-allow-remote  Let --apns bind a non-loopback address.
          --apns-ca-dir DIR    Where apns-ca.pem and apns-ca-key.pem are kept (reused when present; created
                               0700). DIR must be yours and not writable by others, the key yours with mode 0600,
                               none a symbolic link: else livebusd refuses to start (exit 3), saying what to fix.
          --apns-key FILE      The team's .p8 key (or its public key PEM): provider tokens (JWT ES256) are then
                               verified: signature, iss = --apns-team-id, kid = --apns-key-id, iat at most 1 h old
                               [403 InvalidProviderToken, ExpiredProviderToken], a new token at most every 20 min
                               [429 TooManyProviderTokenUpdates]. Without it any well-formed token is accepted.
          --apns-team-id ID    The team id tokens must name (iss); with --apns-key.
          --apns-key-id ID     The key id tokens must name (kid); with --apns-key.
          --apns-unregistered-delay D  How long after a token stops being valid 410 Unregistered is answered
                               (Apple delays it by an unspecified time; ours: default 0s).
          --apns-start-budget N  Push-to-start pushes one phone may get per rolling hour; beyond it the push is
                               accepted (200) and no activity starts (Apple publishes no number; ours: default 10).
          --apns-max-streams N Concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS). Default 100.
          --apns-stream-timeout D  A request not ended within D gets 400 IdleTimeout and is reset. Default 10s.
          --apns-handshake-timeout D  A connection without the HTTP/2 preface (and TLS handshake) within D is
                               closed. Default 10s. An HTTP/1.x request gets 505 and is closed.

        FEDERATION (daemons on many hosts share topics through NATS JetStream; README "More than one machine")
          --federate URLS      nats://HOST:PORT[,nats://HOST:PORT…]: keep events, the retained state and resume
                               records in the JetStream stream LIVEBUS instead of the data directory; a PUBLISH on any
                               daemon reaches subscribers on every daemon, a resume token is valid on every daemon.
                               Run --scenario on one daemon only (not with --federate-optional). NATS unreachable: exit 3.
          --federate-replicas N  The replicas the stream must have (created with them; fewer: refused at start).
                               Default 3 (tools/nats-cluster start); 1 for a single nats-server.
          --federate-creds FILE  A .creds file (user JWT and nkey seed) for servers that require one.
          --federate-nkey FILE A user nkey seed file (SU…, `nk -gen user`) for servers that list nkey users
                               (authorization { users: [{ nkey: U… }] }); not with --federate-creds. A missing,
                               unreadable or bad seed: exit 2. Credentials the servers refuse: exit 2, even with
                               --federate-optional.
          --federate-ca FILE   The PEM CA of the servers' TLS certificates (tls://HOST:PORT).
          --federate-optional  Start even when NATS cannot be reached now: phones attach, PUBLISH is refused with
                               federationUnavailable until the link is up (libnats reconnects every 250 ms).

        EXAMPLES
          livebusd --socket /tmp/bus.sock --scenario demo-120s --time-scale 10
          livebusd --socket /tmp/bus.sock --scenario random --orders 20 --seed 7
          livebusd --socket /tmp/bus.sock --scenario Protocol/scenarios/timeline-stall-recover.json
          livebusd --socket /tmp/bus.sock --scenario demo-120s --fresh      # start the demo over
          livebusd --socket /tmp/bus.sock --coalesce-bytes 64KiB --slow-consumer-bytes 1MiB  # a tight phone queue
          livebusd --socket /tmp/bus.sock --apns 127.0.0.1:8443 --apns-socket /tmp/apns.sock  # TLS + h2c endpoints

        CONFIG
          livebus.json in the current directory or a parent, else $XDG_CONFIG_HOME/livebus/config.json ($LIVEBUS_CONFIG
          names another; empty: none): "socket", "activitySchema" and "daemon": {these options in camelCase, e.g.
          "logLevel": "debug", "dataDir": "state", "memory": true}. Flags win over $LIVEBUS_SOCKET, which wins over the
          file. A wrong key or type: exit 2 with file:line. `livebus config show` prints what applies.

        SIGNALS
          SIGINT, SIGTERM      say BYE to every session, remove the socket file, exit 0.

        EXIT CODES
          0 clean shutdown · 2 usage, invalid scenario or activity schema · 3 socket already served by a live daemon or unusable
        """

    /// The refusal of a `--slow-consumer-bytes` not above `--coalesce-bytes`: both values as sizes, and a fix (a
    /// slow-consumer limit 4× the threshold; when that would pass the 1 TiB cap, a threshold a quarter of the limit).
    /// - Parameters:
    ///   - slow: `--slow-consumer-bytes`, bytes.
    ///   - isDefault: Whether `slow` is the default (the flag was not given).
    ///   - coalesce: `--coalesce-bytes`, bytes.
    /// - Returns: The usage error.
    static func slowConsumerNotAboveCoalescing(slow: Int, isDefault: Bool, coalesce: Int) -> CLIError {
        let cap = 1 << 40
        let fix =
            coalesce < cap / 4
            ? "raise --slow-consumer-bytes, e.g. --slow-consumer-bytes \(Arguments.spokenSize(UInt64(coalesce * 4)))"
            : "lower --coalesce-bytes, e.g. --coalesce-bytes \(Arguments.spokenSize(UInt64(slow / 4 > 0 ? slow / 4 : 1)))"
        return CLIError.usage(
            "--slow-consumer-bytes (\(Arguments.spokenSize(UInt64(slow)))\(isDefault ? ", the default" : "")) must be larger than --coalesce-bytes (\(Arguments.spokenSize(UInt64(coalesce)))): \(fix)"
        )
    }

    /// The per-session limits and the connection cap from the flags (each at least 1).
    static func limits(_ a: Arguments) throws(CLIError) -> SessionLimits {
        var l = SessionLimits()
        func positive(_ name: String, _ value: Int) throws(CLIError) -> Int {
            let raw = try a.uint(name, default: UInt64(value))
            guard let v = Int(exactly: raw), v >= 1, v <= Int(Int32.max) else {
                throw CLIError.usage("--\(name) \(raw) is out of range 1…\(Int32.max)")
            }
            return v
        }
        l.framesPerSecond = try positive("max-frames-per-second", l.framesPerSecond)
        l.frameBurst = l.framesPerSecond
        l.maximumSubscriptions = try positive("max-subscriptions", l.maximumSubscriptions)
        l.maximumReplyBytes = try a.bytes("max-reply-bytes", default: l.maximumReplyBytes, in: 1...UInt64(Int32.max))
        func duration(_ name: String, _ value: Int64) throws(CLIError) -> Int64 {
            guard let v = a.value(name) else { return value }
            return try parseDuration(v, flag: name, allowed: 1...86_400_000)
        }
        l.graceMilliseconds = try duration("limit-grace", l.graceMilliseconds)
        l.handshakeTimeoutMilliseconds = try duration("handshake-timeout", l.handshakeTimeoutMilliseconds)
        l.idleTimeoutMilliseconds = try duration("idle-timeout", l.idleTimeoutMilliseconds)
        l.catchUpWindowBytes = try a.bytes(
            "catch-up-window-bytes",
            default: l.catchUpWindowBytes,
            in: 1...UInt64(Int32.max)
        )
        if a.value("max-connections") != nil {
            l.maximumConnections = try positive("max-connections", 1)
            do throws(DaemonError) {
                _ = try l.effectiveConnectionCap(descriptorLimit: Daemon.descriptorLimit())
            } catch {
                throw CLIError.usage(error.message)
            }
        }
        return l
    }

    /// Runs the daemon; returns the process exit code.
    public static func run(_ argv: [String]) -> Int32 { run(argv, check: nil) }

    /// With `check`: parses and validates `argv` as given (no config file applied), starts nothing, and passes
    /// the first refusal (or `nil`) to `check`: `livebus config show` validates the daemon's settings this way.
    static func run(_ argv: [String], check: ((CLIError?) -> Void)?) -> Int32 {
        let out = Output(json: false)
        if argv.contains("--help") || argv.contains("-h") {
            print(help)
            return 0
        }
        if argv.contains("--version") {
            print("livebusd \(liveBusVersion)")
            return 0
        }
        var applied: [(flag: String, source: ConfigSource)] = []
        do throws(CLIError) {
            // The config file's "socket", "activitySchema" and "daemon" settings, under the flags and environment.
            let (argv, fromConfig) =
                check != nil
                ? (argv, [])
                : ConfigFile.apply(
                    command: "livebusd",
                    argv: argv,
                    environment: ProcessInfo.processInfo.environment,
                    file: try ConfigFile.current()
                )
            applied = fromConfig
            let a = try Arguments(
                argv,
                command: "livebusd",
                options: ([
                    "socket", "scenario", "time-scale", "seed", "data-dir", "log-level", "sync", "push-budget",
                    "coalesce-bytes",
                    "slow-consumer-bytes", "orders", "resume-window", "max-frames-per-second", "max-subscriptions",
                    "max-reply-bytes", "limit-grace", "handshake-timeout", "idle-timeout", "max-connections",
                    "catch-up-window-bytes", "activity-schema", "device-file", "http", "http-root",
                ] as Set<String>).union(apnsOptionNames).union(federateOptionNames),
                flags: Set(["memory", "fresh", "http-allow-remote"]).union(apnsFlagNames).union(federateFlagNames)
            )
            guard a.positionals.isEmpty else {
                throw CLIError.usage("unexpected argument '\(a.positionals[0])'", recovery: "see `livebusd --help`")
            }
            // A user's own device, validated like the catalog's, accepted in HELLO and POSTURE from now on.
            _ = try LivebusCommand.catalog(deviceFile: a.value("device-file"))
            let level = try a.choice("log-level", ["debug", "info", "notice", "warning", "error"], default: "info")
            let socket = a.value("socket") ?? defaultSocketPath()
            if a.flag("memory") && a.value("data-dir") != nil {
                throw CLIError.usage("--memory and --data-dir exclude each other")
            }
            // Flags that cannot do anything together are refused, not ignored (review finding).
            if a.flag("memory") && a.flag("fresh") {
                throw CLIError.usage(
                    "--fresh discards a data directory's state, and --memory has none: give one of them",
                    recovery: "--memory for a daemon that keeps nothing, or --fresh to start a data directory over"
                )
            }
            if a.flag("memory") && a.value("federate") != nil {
                throw CLIError.usage(
                    "--memory and --federate exclude each other: a federated daemon keeps its state in JetStream",
                    recovery: "drop --memory (with --federate nothing is kept in a data directory)"
                )
            }
            var scenario = a.value("scenario")
            if a.value("orders") != nil {
                guard scenario == "random" else { throw CLIError.usage("--orders goes with --scenario random") }
                let k = try a.uint("orders", default: 5, in: 1...100_000)
                scenario = "random:\(k)"
            }
            var options = DaemonOptions(
                socketPath: socket,
                dataDirectory: a.flag("memory") ? nil : (a.value("data-dir") ?? socket + ".d"),
                scenario: scenario,
                timeScale: try a.double("time-scale", default: 1, in: DeliverySimulator.timeScaleRange),
                seed: try a.uint("seed", default: 1)
            )
            options.fresh = a.flag("fresh")
            if a.value("push-budget") != nil {
                let n = try a.uint("push-budget", default: 12, in: 0...1_000_000)
                options.scheduler.priority10BudgetPerHour = n
                options.scheduler.frequentUpdatesPriority10BudgetPerHour = n * 5
            }
            // Sizes must fit an Int (a larger one trapped): at most 1 TiB.
            options.coalesceThresholdBytes = try a.bytes(
                "coalesce-bytes",
                default: options.coalesceThresholdBytes,
                in: 0...(1 << 40)
            )
            // The outbox coalesces past `queued > threshold` (Outbox.offer): 0 does not turn coalescing off, it
            // coalesces behind any backlog at all. Nothing turns it off, so 0 is refused rather than misread.
            guard options.coalesceThresholdBytes > 0 else {
                throw CLIError.usage(
                    "--coalesce-bytes 0 would coalesce every update that finds anything queued to the phone; it does not turn coalescing off (nothing does)",
                    recovery:
                        "give the bytes queued past which a phone gets only each order's latest update, e.g. --coalesce-bytes 64KiB (default 256KiB)"
                )
            }
            options.slowConsumerLimitBytes = try a.bytes(
                "slow-consumer-bytes",
                default: options.slowConsumerLimitBytes,
                in: 1...(1 << 40)
            )
            guard options.slowConsumerLimitBytes > options.coalesceThresholdBytes else {
                throw slowConsumerNotAboveCoalescing(
                    slow: options.slowConsumerLimitBytes,
                    isDefault: a.value("slow-consumer-bytes") == nil,
                    coalesce: options.coalesceThresholdBytes
                )
            }
            options.fullSync = try a.choice("sync", ["normal", "full"], default: "normal") == "full"
            if let v = a.value("resume-window") {
                options.resumeWindowMilliseconds = try parseDuration(
                    v,
                    flag: "resume-window",
                    allowed: 1...7 * 86_400_000
                )
            }
            options.limits = try limits(a)
            if let path = a.value("activity-schema") {
                options.activitySchemaText = try ActivitySchemaFile.read(path).text
            }
            options.apns = try apnsOptions(a)
            options.federation = try federationOptions(a, replayLogCapacity: options.replayLogCapacity)
            options.federationOptional = a.flag("federate-optional")
            let logger = Logger.standardError(
                label: "livebusd",
                minimumLevel: [
                    "debug": .debug, "info": .info, "notice": .notice, "warning": .warning, "error": .error,
                ][
                    level
                ]!
            )
            let loop: EventLoop
            do { loop = try EventLoop() } catch { throw CLIError("internal", "\(error)", exit: .daemonUnreachable) }
            // A bad --http address is a usage error before anything starts.
            if let http = a.value("http") {
                do {
                    _ = try DashboardOptions(address: http, allowRemote: a.flag("http-allow-remote"), root: "").parsed()
                } catch { throw CLIError.usage(error.message) }
                // The page directory too, before the daemon starts and logs "listening".
                let root = a.value("http-root") ?? LivebusdCommand.dashboardRoot()
                guard check != nil || FileManager.default.fileExists(atPath: root + "/index.html") else {
                    throw CLIError.usage(
                        "--http-root \(root): no index.html there",
                        recovery:
                            "point --http-root (or LIVEBUS_DASHBOARD_DIR) at the repository's dashboard/ directory"
                    )
                }
            }
            if let check {
                loop.close()
                check(nil)
                return 0
            }
            // SOCKET.dashboard is refused before anything starts when it is a link or another user's file (F1).
            if a.value("http") != nil, let e = DashboardFile.writeRefusal(socket: options.socketPath) {
                loop.close()
                throw e
            }
            let daemon = Daemon(options: options, loop: loop, logger: logger)
            do {
                try daemon.start()
            } catch {
                let isScenario =
                    error.message.hasPrefix("cannot load scenario") || error.message.contains("--fresh")
                    || error.message.contains("--data-dir")
                // README's exit codes: 3 only for a socket or data directory a live daemon or another user holds;
                // a bad address, a too-long path or a missing directory is a usage or input error (2).
                throw CLIError(
                    isScenario ? "invalidScenario" : error.unreachable ? "socketUnavailable" : "usage",
                    error.message,
                    exit: error.unreachable ? .daemonUnreachable : .usage
                )
            }
            var urlFile: FileIdentity?
            if let http = a.value("http") {
                let root = a.value("http-root") ?? LivebusdCommand.dashboardRoot()
                let url: String
                do {
                    url = try daemon.startDashboard(
                        DashboardOptions(address: http, allowRemote: a.flag("http-allow-remote"), root: root)
                    )
                } catch {
                    daemon.shutdown(reason: "dashboard failed")
                    throw CLIError.usage(error.message)
                }
                do { urlFile = try DashboardFile.write(url, socket: options.socketPath) } catch {
                    daemon.shutdown(reason: "dashboard failed")
                    throw error
                }
                print("dashboard: \(url)")
                fflush(nil)
            }
            loop.run()
            // Only the file this daemon wrote: a daemon that took the socket path since wrote its own.
            _ = urlFile?.removeIfUnchanged(DashboardFile.path(socket: options.socketPath))
            loop.close()
            logger.log(.notice, "livebusd stopped")
            return 0
        } catch {
            if let check {
                check(error)
                return error.exit.rawValue
            }
            let e = ConfigFile.annotate(error, applied: applied)
            out.failure(e)
            return e.exit.rawValue
        }
    }

    /// Where the dashboard's page is: `$LIVEBUS_DASHBOARD_DIR`, else `dashboard/` in a directory above the binary
    /// (the repository it was built in: `.build/debug/livebusd`), else `/usr/local/share/livebus/dashboard`.
    public static func dashboardRoot() -> String {
        if let d = ProcessInfo.processInfo.environment["LIVEBUS_DASHBOARD_DIR"], !d.isEmpty { return d }
        var dir = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
        ).deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = dir.appendingPathComponent("dashboard")
            if FileManager.default.fileExists(atPath: candidate.path + "/index.html") { return candidate.path }
            dir = dir.deletingLastPathComponent()
        }
        return "/usr/local/share/livebus/dashboard"
    }
}
