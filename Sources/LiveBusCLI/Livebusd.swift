import Foundation
import LiveBusDaemon
import LiveBusLoop

/// `livebusd`: the bus daemon's command line.
public enum LivebusdCommand {
    /// The help text (golden-tested).
    public static let help = """
        livebusd — the LiveBus daemon: one libuv loop serving client sessions on a Unix socket

        USAGE
          livebusd [--socket PATH] [--scenario NAME|FILE] [--time-scale X] [--seed N] [--data-dir DIR|--memory] [--fresh]
                   [--sync normal|full] [--log-level LEVEL] [--device-file FILE]

        OPTIONS
          --socket PATH        Unix socket to listen on (mode 0600, at most 107 bytes).
                               Default: $LIVEBUS_SOCKET, else $XDG_RUNTIME_DIR/livebus.sock, else /tmp/livebus-<uid>.sock
          --scenario NAME|FILE demo-120s, random (with --orders K; also random:K) or a timeline file
                               (Protocol/SCENARIOS.md). Default: none (orders only from `livebus order create`).
          --orders K           With --scenario random: how many orders (realistic phases, seeded). Default 5.
          --time-scale X       Play the scenario X times faster (10 plays demo-120s in 12 s). Default 1.
          --seed N             Seed for every random choice, so runs repeat. Default 1.
          --data-dir DIR       Where state is kept (SQLite, WAL): events, sequence counters, the replay log, session
                               resume records, the simulator. Default: PATH.d next to the socket. A restart on the same
                               directory (even after kill -9) carries on: phones resume, no acknowledged update is lost.
          --memory             Keep state in memory only (nothing survives a restart).
          --fresh              Discard the data directory's state first (it is never discarded silently).
          --sync full          fsync every commit (durable across power loss; default normal: across daemon crashes).
          --push-budget N      Priority-10 pushes a backgrounded phone may get per scenario hour before they are
                               throttled (ours: Apple publishes no number). Default 12; frequent updates: 5×.
          --coalesce-bytes N   Bytes queued to a phone above which its non-terminal updates are coalesced. Default 262144.
          --slow-consumer-bytes N  Bytes queued above which a phone is disconnected as a slow consumer. Default 4194304.
          --log-level LEVEL    debug, info, notice, warning or error. Default info. Logs go to stderr.
          --device-file FILE   A device of your own (one device in the catalog's format, Protocol/DEVICES.md),
                               validated like the catalog's; phones may then attach with its id.
          --version            Print the version.
          --help               Print this help.

        EXAMPLES
          livebusd --socket /tmp/bus.sock --scenario demo-120s --time-scale 10
          livebusd --socket /tmp/bus.sock --scenario random --orders 20 --seed 7
          livebusd --socket /tmp/bus.sock --scenario Protocol/scenarios/timeline-stall-recover.json
          livebusd --socket /tmp/bus.sock --scenario demo-120s --fresh      # start the demo over

        SIGNALS
          SIGINT, SIGTERM      say BYE to every session, remove the socket file, exit 0.

        EXIT CODES
          0 clean shutdown · 2 usage or invalid scenario · 3 socket already served by a live daemon or unusable
        """

    /// Runs the daemon; returns the process exit code.
    public static func run(_ argv: [String]) -> Int32 {
        let out = Output(json: false)
        if argv.contains("--help") || argv.contains("-h") {
            print(help)
            return 0
        }
        if argv.contains("--version") {
            print("livebusd \(liveBusVersion)")
            return 0
        }
        do throws(CLIError) {
            let a = try Arguments(
                argv,
                command: "livebusd",
                options: [
                    "socket", "scenario", "time-scale", "seed", "data-dir", "log-level", "sync", "push-budget",
                    "coalesce-bytes",
                    "slow-consumer-bytes", "orders", "device-file",
                ],
                flags: ["memory", "fresh"]
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
            var scenario = a.value("scenario")
            if a.value("orders") != nil {
                guard scenario == "random" else { throw CLIError.usage("--orders goes with --scenario random") }
                let k = try a.uint("orders", default: 5)
                guard k > 0 else { throw CLIError.usage("--orders must be at least 1") }
                scenario = "random:\(k)"
            }
            var options = DaemonOptions(
                socketPath: socket,
                dataDirectory: a.flag("memory") ? nil : (a.value("data-dir") ?? socket + ".d"),
                scenario: scenario,
                timeScale: try a.double("time-scale", default: 1, in: 0.001...10_000),
                seed: try a.uint("seed", default: 1)
            )
            options.fresh = a.flag("fresh")
            if a.value("push-budget") != nil {
                let n = Int(try a.uint("push-budget", default: 12))
                options.scheduler.priority10BudgetPerHour = n
                options.scheduler.frequentUpdatesPriority10BudgetPerHour = n * 5
            }
            options.coalesceThresholdBytes = Int(
                try a.uint("coalesce-bytes", default: UInt64(options.coalesceThresholdBytes))
            )
            options.slowConsumerLimitBytes = Int(
                try a.uint("slow-consumer-bytes", default: UInt64(options.slowConsumerLimitBytes))
            )
            guard options.slowConsumerLimitBytes > options.coalesceThresholdBytes else {
                throw CLIError.usage("--slow-consumer-bytes must be larger than --coalesce-bytes")
            }
            options.fullSync = try a.choice("sync", ["normal", "full"], default: "normal") == "full"
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
            let daemon = Daemon(options: options, loop: loop, logger: logger)
            do {
                try daemon.start()
            } catch {
                let isScenario =
                    error.message.hasPrefix("cannot load scenario") || error.message.contains("--fresh")
                    || error.message.contains("--data-dir")
                throw CLIError(
                    isScenario ? "invalidScenario" : "socketUnavailable",
                    error.message,
                    exit: isScenario ? .usage : .daemonUnreachable
                )
            }
            loop.run()
            loop.close()
            logger.log(.notice, "livebusd stopped")
            return 0
        } catch {
            out.failure(error)
            return error.exit.rawValue
        }
    }
}
