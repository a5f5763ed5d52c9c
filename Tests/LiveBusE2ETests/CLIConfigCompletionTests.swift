import Foundation
import LiveBusLayout
import Testing

@testable import LiveBusCLI

/// Issue 22, pure parts: the config file (discovery, precedence, errors with file:line), completion candidates from
/// the help texts' usage lines, near matches, `-j`, and the man pages' content.
@Suite struct CLIConfigCompletionTests {
    static func config(_ text: String, path: String = "/home/u/proj/livebus.json") throws(CLIError) -> ConfigFile {
        try ConfigFile.parse(Array(text.utf8), path: path)
    }

    static func error(_ text: String) -> CLIError? {
        do throws(CLIError) {
            _ = try config(text)
            return nil
        } catch { return error }
    }

    @Test func discoveryFindsTheNearestLivebusJsonThenTheUserConfig() {
        let files: Set<String> = ["/a/livebus.json", "/a/b/c/livebus.json", "/x/cfg/livebus/config.json"]
        let exists = { (p: String) in files.contains(p) }
        #expect(ConfigFile.discover(from: "/a/b/c/d", environment: [:], exists: exists) == "/a/b/c/livebus.json")
        #expect(ConfigFile.discover(from: "/a/b", environment: [:], exists: exists) == "/a/livebus.json")
        #expect(ConfigFile.discover(from: "/a", environment: [:], exists: exists) == "/a/livebus.json")
        #expect(
            ConfigFile.discover(from: "/z/y", environment: ["XDG_CONFIG_HOME": "/x/cfg"], exists: exists)
                == "/x/cfg/livebus/config.json"
        )
        #expect(ConfigFile.discover(from: "/z/y", environment: ["HOME": "/x"], exists: exists) == nil)
        #expect(
            ConfigFile.discover(
                from: "/z",
                environment: ["HOME": "/x", "XDG_CONFIG_HOME": "relative"],
                exists: { $0 == "/x/.config/livebus/config.json" }
            )
                == "/x/.config/livebus/config.json"
        )
        // $LIVEBUS_CONFIG names the file; empty means none, even where a livebus.json exists.
        #expect(
            ConfigFile.discover(from: "/a/b", environment: ["LIVEBUS_CONFIG": "/etc/lb.json"], exists: exists)
                == "/etc/lb.json"
        )
        #expect(ConfigFile.discover(from: "/a/b", environment: ["LIVEBUS_CONFIG": ""], exists: exists) == nil)
    }

    @Test func precedenceIsFlagThenEnvironmentThenFileThenDefault() throws {
        let file = try Self.config(
            """
            {
              "socket": "bus.sock",
              "attach": {"device": "iphone-duo", "posture": "half-opened", "clockSkew": "+90s", "clockDrift": 5},
              "e2e": {"timeScale": 20, "report": "out/e2e.json"},
              "daemon": {"logLevel": "debug", "memory": true, "resumeWindow": "30s"}
            }
            """
        )
        let socket = ConfigFile.settings.first { $0.key == "socket" }!
        // A relative path is taken from the config file's directory.
        #expect(
            ConfigFile.resolve(socket, argv: [], environment: [:], file: file) == (
                "/home/u/proj/bus.sock", .file("/home/u/proj/livebus.json", line: 2)
            )
        )
        #expect(
            ConfigFile.resolve(socket, argv: [], environment: ["LIVEBUS_SOCKET": "/e.sock"], file: file) == (
                "/e.sock", .env("LIVEBUS_SOCKET")
            )
        )
        #expect(
            ConfigFile.resolve(
                socket,
                argv: ["--socket", "/f.sock"],
                environment: ["LIVEBUS_SOCKET": "/e.sock"],
                file: file
            ) == ("/f.sock", .flag)
        )
        #expect(
            ConfigFile.resolve(socket, argv: ["--socket=/g.sock"], environment: [:], file: file) == ("/g.sock", .flag)
        )
        #expect(ConfigFile.resolve(socket, argv: [], environment: ["LIVEBUS_SOCKET": ""], file: nil).1 == .default)

        let (argv, applied) = ConfigFile.apply(
            command: "attach",
            argv: ["--posture", "folded", "--name", "p"],
            environment: ["LIVEBUS_DEVICE": "iphone-16"],
            file: file
        )
        #expect(argv.contains("--device=iphone-16"), "env beats the file: \(argv)")
        #expect(!argv.contains("--posture=half-opened"), "the flag beats the file: \(argv)")
        #expect(argv.contains("--clock-skew=+90s") && argv.contains("--clock-drift=5"))
        #expect(argv.contains("--socket=/home/u/proj/bus.sock"))
        #expect(Array(argv.suffix(4)) == ["--posture", "folded", "--name", "p"], "the user's words come last")
        #expect(applied.contains { $0.flag == "device" && $0.source == .env("LIVEBUS_DEVICE") })
        // --device-file keeps the configured device away.
        let withFile = ConfigFile.apply(
            command: "attach",
            argv: ["--device-file", "d.json"],
            environment: [:],
            file: file
        )
        #expect(!withFile.argv.contains { $0.hasPrefix("--device=") })
        // The daemon: booleans become the bare flag; --data-dir on the command line keeps "memory" away.
        let daemon = ConfigFile.apply(command: "livebusd", argv: [], environment: [:], file: file).argv
        #expect(
            daemon.contains("--memory") && daemon.contains("--log-level=debug")
                && daemon.contains("--resume-window=30s")
        )
        #expect(
            !ConfigFile.apply(command: "livebusd", argv: ["--data-dir", "/d"], environment: [:], file: file).argv
                .contains("--memory")
        )
        // e2e defaults go to e2e only.
        let e2e = ConfigFile.apply(command: "e2e", argv: ["x.json"], environment: [:], file: file).argv
        #expect(e2e.contains("--time-scale=20") && e2e.contains("--report=/home/u/proj/out/e2e.json"))
        #expect(
            !ConfigFile.apply(command: "status", argv: [], environment: [:], file: file).argv.contains {
                $0.hasPrefix("--time-scale")
            }
        )
    }

    @Test func pathsAreTakenFromTheFilesDirectoryAndScenarioNamesStayNames() throws {
        let file = try Self.config(
            #"{"activitySchema": "../schemas/ride.json", "daemon": {"scenario": "demo-120s", "deviceFile": "/abs/d.json"}}"#
        )
        #expect(file.values["activitySchema"]?.value == "/home/u/schemas/ride.json")
        #expect(file.values["daemon.scenario"]?.value == "demo-120s")
        #expect(file.values["daemon.deviceFile"]?.value == "/abs/d.json")
        let timeline = try Self.config(#"{"daemon": {"scenario": "timelines/t.json"}}"#)
        #expect(timeline.values["daemon.scenario"]?.value == "/home/u/proj/timelines/t.json")
    }

    /// The daemons and phones `demo` and `e2e` start read no config file and no setting's variable.
    @Test func privateChildrenIgnoreTheUsersSettings() {
        let env = ConfigFile.privateEnvironment(["LIVEBUS_SOCKET": "/s", "LIVEBUS_DEVICE": "x", "PATH": "/bin"])
        #expect(env == ["LIVEBUS_CONFIG": "", "PATH": "/bin"])
        #expect(ConfigFile.discover(from: "/", environment: env, exists: { _ in true }) == nil)
    }

    @Test func aWrongKeyOrTypeNamesTheFileAndLine() {
        let unknown = Self.error("{\n  \"socket\": \"/s\",\n  \"atach\": {}\n}")
        #expect(unknown?.message == "/home/u/proj/livebus.json:3: unknown key 'atach'; did you mean 'attach'?")
        #expect(unknown?.exit == .usage && unknown?.code == "invalidConfig")
        let nested = Self.error("{\n  \"attach\": {\n    \"devcie\": \"iphone-duo\"\n  }\n}")
        #expect(
            nested?.message == "/home/u/proj/livebus.json:3: unknown key 'attach.devcie'; did you mean 'attach.device'?"
        )
        #expect(
            nested?.recovery?.contains("device, posture, clockSkew, clockDrift") == true,
            "\(nested?.recovery ?? "")"
        )
        let daemonKey = Self.error("{\"daemon\": {\n\"loglevel\": \"debug\"}}")
        #expect(
            daemonKey?.message.hasSuffix(":2: unknown key 'daemon.loglevel'; did you mean 'daemon.logLevel'?") == true
        )
        let type = Self.error("{\n  \"attach\": {\n    \"clockDrift\": \"5\"\n  }\n}")
        #expect(type?.message == "/home/u/proj/livebus.json:3: attach.clockDrift must be a number, found a string")
        let bool = Self.error("{\"daemon\": {\"memory\": \"yes\"}}")
        #expect(bool?.message == "/home/u/proj/livebus.json:1: daemon.memory must be true or false, found a string")
        let duration = Self.error("{\n\"attach\": {\"clockSkew\": \"90\"}}")
        #expect(
            duration?.message.contains(":2: attach.clockSkew: --clock-skew '90' has no unit") == true,
            "\(duration?.message ?? "")"
        )
        let twice = Self.error("{\n\"socket\": \"/a\",\n\"socket\": \"/b\"}")
        #expect(twice?.message == "/home/u/proj/livebus.json:3: socket is given twice (first on line 2)")
        #expect(
            Self.error("{\n\"socket\": \"/a\",,}")?.message.hasPrefix("/home/u/proj/livebus.json:2: not valid JSON")
                == true
        )
        #expect(
            Self.error("[1]")?.message
                == "/home/u/proj/livebus.json:1: the config must be a JSON object, found an array"
        )
        #expect(
            Self.error("{\"attach\": 3}")?.message
                == "/home/u/proj/livebus.json:1: attach must be an object, found a number"
        )
    }

    @Test func everyDaemonOptionIsAConfigKeyAndDefaultsComeFromTheHelp() {
        let keys = Set(ConfigFile.settings.map(\.key))
        for o in HelpSections(LivebusdCommand.help).daemonOptions
        where !["help", "version", "fresh", "socket", "activity-schema"].contains(o.name) {
            #expect(ConfigFile.settings.contains { $0.flag == o.name && $0.commands == ["livebusd"] }, "--\(o.name)")
        }
        #expect(
            keys.isSuperset(of: ["daemon.logLevel", "daemon.dataDir", "daemon.maxFramesPerSecond", "daemon.scenario"])
        )
        let d = Dictionary(uniqueKeysWithValues: ConfigFile.settings.map { ($0.key, $0.defaultText) })
        #expect(d["daemon.pushBudget"] == "12" && d["daemon.logLevel"] == "info" && d["daemon.sync"] == "normal")
        #expect(d["daemon.maxSubscriptions"] == "1000" && d["daemon.resumeWindow"] == "10m")
    }

    static let source = CompletionSource(
        sessions: { ["duo", "pro"] },
        devices: { ["iphone-16-pro", "iphone-duo"] },
        orders: { ["A1001"] }
    )

    @Test func completionListsCommandsFlagsAndValuesFromTheUsageLines() {
        let c = { (words: [String]) in Completion.candidates(words, source: Self.source) }
        #expect(c([""]).contains("attach") && c([""]).contains("completion") && !c([""]).contains("__complete"))
        #expect(c(["att"]) == ["attach"])
        let attachFlags = c(["attach", "--"])
        for f in ["--device", "--posture", "--clock-skew", "--json", "--socket", "--exit-when", "--no-reconnect"] {
            #expect(attachFlags.contains(f), "\(f) in \(attachFlags)")
        }
        #expect(c(["attach", "-"]).contains("-j"))
        #expect(c(["attach", "--device", ""]) == ["iphone-16-pro", "iphone-duo"])
        #expect(c(["attach", "--posture", "h"]) == ["half-opened"])
        #expect(c(["attach", "--socket", ""]) == [Completion.fileMarker])
        #expect(c(["posture", ""]) == ["duo", "pro", "all", "current"])
        #expect(c(["posture", "duo", ""]).contains("half-opened"))
        #expect(c(["posture", "duo", "--orientation", ""]) == ["portrait", "landscape"])
        #expect(c(["order", ""]) == ["list", "create", "cancel"])
        #expect(c(["order", "cancel", ""]) == ["A1001"])
        #expect(c(["fault", ""]) == ["add", "list", "remove", "preset"])
        #expect(c(["fault", "preset", ""]).contains("very-bad"))
        #expect(c(["fault", "add", "latency", "--session", ""]) == ["duo", "pro"])
        #expect(c(["profile", "duo", "--low-power", ""]) == ["on", "off"])
        #expect(c(["watch", "--topic", ""]) == ["orders/A1001", ">", "orders/*"])
        #expect(c(["completion", ""]) == ["bash", "zsh", "fish"])
        #expect(c(["man", ""]) == ["livebus", "livebusd"])
        #expect(c(["e2e", ""]) == [Completion.fileMarker])
        #expect(c(["help", "de"]) == ["demo", "devices"])
        #expect(Completion.daemonCandidates(["--log"]) == ["--log-level"])
        #expect(Completion.daemonCandidates(["--log-level", ""]) == ["debug", "info", "notice", "warning", "error"])
        #expect(
            Completion.daemonCandidates(["--sync", ""]) == ["normal", "full"]
                || Completion.daemonCandidates(["--sync", ""]) == ["full"]
        )
        #expect(Completion.daemonCandidates(["--data-dir", ""]).first == Completion.fileMarker)
        // The APNs endpoint's flags (their own help section) complete too, FILE/DIR values as files.
        let apns = Completion.daemonCandidates(["--apns"])
        for flag in [
            "--apns", "--apns-h2c", "--apns-socket", "--apns-key", "--apns-unregistered-delay", "--apns-start-budget",
        ] {
            #expect(apns.contains(flag), "\(flag) in \(apns)")
        }
        #expect(Completion.daemonCandidates(["--apns-key", ""]).first == Completion.fileMarker)
        #expect(Completion.daemonCandidates(["--apns-ca-dir", ""]).first == Completion.fileMarker)
    }

    /// Review finding: completion offered no toxic names, fault ids, scenario names, and the literal word
    /// "target" after `fault preset NAME`.
    @Test func completionOffersToxicsFaultIdsAndScenarioNames() {
        let source = CompletionSource(
            sessions: { ["duo", "pro"] },
            devices: { ["iphone-16-pro"] },
            orders: { ["A1001"] },
            faults: { ["3g-latency-down", "latency_downstream"] }
        )
        let c = { (words: [String]) in Completion.candidates(words, source: source) }
        #expect(c(["fault", "add", ""]) == FaultCommand.toxics, "\(c(["fault", "add", ""]))")
        #expect(c(["fault", "add", "sl"]) == ["slicer", "slow_close"])
        #expect(
            c(["fault", "remove", ""]) == [
                "3g-latency-down", "latency_downstream", "3g", "edge", "lossy", "very-bad", "airplane",
            ]
        )
        #expect(c(["fault", "remove", "3"]) == ["3g-latency-down", "3g"])
        #expect(!c(["fault", "preset", "3g", ""]).contains("target"), "\(c(["fault", "preset", "3g", ""]))")
        #expect(c(["fault", "preset", "3g", "--session", ""]) == ["duo", "pro"])
        #expect(c(["demo", "--scenario", ""]) == [Completion.fileMarker, "demo-120s", "random"])
        #expect(c(["demo", "--scenario", "r"]) == [Completion.fileMarker, "random"])
        #expect(Completion.daemonCandidates(["--scenario", "d"]) == [Completion.fileMarker, "demo-120s"])
        #expect(c(["simulate", ""]) == ["duo", "pro", "all", "current"])
        // No daemon answering: no session names, at once (the completion must not hang the shell).
        let none = CompletionSource.live(socket: temporaryDirectory("lbnone") + "/none.sock")
        #expect(none.sessions().isEmpty && none.faults().isEmpty)
    }

    /// Review finding: `config show` printed values that the command using them refuses. It reports each with the
    /// file, line and key, as the command would (the same parsers), and what is accepted.
    @Test func configShowReportsEveryValueItsCommandWouldRefuse() throws {
        let file = try Self.config(
            """
            {
              "attach": {"device": "iphone-du", "posture": "flatt", "clockSkew": "90s"},
              "e2e": {"timeScale": 50000},
              "daemon": {"timeScale": -5, "sync": "fast", "seed": 7}
            }
            """
        )
        let p = ConfigFile.problems(environment: [:], file: file)
        let at = "/home/u/proj/livebus.json"
        func has(_ prefix: String, _ words: String) -> Bool {
            p.contains { $0.hasPrefix(prefix) && $0.contains(words) }
        }
        #expect(has("\(at):2: attach.device: ", "did you mean 'iphone-duo'"), "\(p)")
        #expect(has("\(at):2: attach.posture: ", "flat, half-opened, folded"), "\(p)")
        #expect(has("\(at):3: e2e.timeScale: ", "10000"), "\(p)")
        #expect(has("\(at):4: daemon.timeScale: ", "10000"), "\(p)")
        #expect(has("\(at):4: daemon.sync: ", "normal"), "\(p)")
        #expect(p.count == 5, "the valid clockSkew and seed are not reported: \(p)")
        let env = ConfigFile.problems(environment: ["LIVEBUS_POSTURE": "sideways"], file: nil)
        #expect(env.count == 1 && env.first?.hasPrefix("$LIVEBUS_POSTURE: attach.posture: ") == true, "\(env)")
        let good = try Self.config(#"{"attach": {"device": "iphone-duo"}, "daemon": {"timeScale": 20}}"#)
        #expect(ConfigFile.problems(environment: [:], file: good).isEmpty)
        // One time-scale rule for the daemon and the commands that start one (review finding: e2e, demo and replay
        // took 0.1…1000, livebusd 0.001…10000, so a recording of a daemon at 5000× could not be replayed).
        let fast = try Self.config(#"{"e2e": {"timeScale": 5000}, "daemon": {"timeScale": 5000}}"#)
        #expect(ConfigFile.problems(environment: [:], file: fast).isEmpty)
    }

    @Test func nearMatchesAreCaseInsensitive() {
        #expect(NearMatch.closest("jsn", among: ["json", "socket"]) == ["json"])
        #expect(NearMatch.closest("sockt", among: ["json", "socket"]) == ["socket"])
        #expect(NearMatch.closest("iPhone-16-Pro", among: ["iphone-16", "iphone-16-pro"]).first == "iphone-16-pro")
        #expect(NearMatch.closest("stauts", among: ["status", "simulate"]) == ["status"])
        #expect(NearMatch.closest("frobnicate", among: ["status", "simulate"]).isEmpty)
        #expect(NearMatch.closestTopics("M0001", among: ["orders/A1001", "orders/M0001"]) == ["orders/M0001"])
        #expect(NearMatch.closestTopics("m0001", among: ["orders/M0001"]) == ["orders/M0001"])
        #expect(
            NearMatch.closestTopics("orders/M0010", among: ["orders/M0001", "orders/Z9999"]).first == "orders/M0001"
        )
        #expect(NearMatch.closestTopics("zzz", among: ["orders/M0001"]).isEmpty)
        let u = WatchCommand.unmatched(["M0001", "orders/*"], topics: ["orders/M0001"])
        #expect(u.count == 1 && u[0].0 == "M0001" && u[0].1 == ["orders/M0001"])
    }

    /// A drift is in ppm, bare or with its unit written out (review finding: `--clock-drift 50ppm` was refused).
    @Test func clockDriftTakesPPMBareOrWithItsUnit() throws {
        func drift(_ v: String) throws(CLIError) -> Double {
            try Arguments(["--clock-drift", v], command: "attach", options: ["clock-drift"], flags: [])
                .ppm("clock-drift", default: 0, in: -100_000...100_000)
        }
        #expect(try drift("50") == 50)
        #expect(try drift("50ppm") == 50)
        #expect(try drift("-20ppm") == -20)
        #expect(try drift("+3.5ppm") == 3.5)
        for bad in ["50ms", "ppm", "2e6", "nanppm", "fast"] {
            do throws(CLIError) {
                _ = try drift(bad)
                Issue.record("--clock-drift \(bad) accepted")
            } catch {
                #expect(error.message.contains("is not a drift in ppm within -100000…100000"), "\(error.message)")
                #expect(error.recovery?.contains("-20ppm") == true)
            }
        }
    }

    /// A size is bytes, bare or with a binary unit, under one rule for every size flag; a decimal or bare unit is
    /// refused naming the binary one, and every refusal gives an example (review finding: no example was given).
    @Test func sizesAreBytesBareOrWithABinaryUnit() throws {
        func size(_ v: String) throws(CLIError) -> Int {
            try Arguments(["--coalesce-bytes", v], command: "livebusd", options: ["coalesce-bytes"], flags: [])
                .bytes("coalesce-bytes", default: 0, in: 0...(1 << 40))
        }
        #expect(try size("262144") == 262_144)
        #expect(try size("256KiB") == 262_144)
        #expect(try size("4MiB") == 4 << 20)
        #expect(try size("1GiB") == 1 << 30)
        #expect(try size("1TiB") == 1 << 40)
        #expect(try size("512B") == 512)
        let refusals = [
            ("256KB", "did you mean 256KiB?"), ("4M", "did you mean 4MiB?"), ("12 furlongs", "unknown size unit"),
            ("big", "is not a size"), ("-1", "is not a size"),
            ("2TiB", "is out of range; give a size in 0…1099511627776 bytes"),
            ("99999999999TiB", "is out of range"),
        ]
        for (bad, why) in refusals {
            do throws(CLIError) {
                _ = try size(bad)
                Issue.record("--coalesce-bytes \(bad) accepted")
            } catch {
                #expect(error.message.contains(why), "\(bad): \(error.message)")
                #expect(error.message.contains("e.g. --coalesce-bytes 262144 or --coalesce-bytes 256KiB"))
            }
        }
    }

    /// `--coalesce-bytes v` read as a size within `range`, for the size tests below.
    static func size(_ v: String, in range: ClosedRange<UInt64> = 0...(1 << 40)) throws(CLIError) -> Int {
        try Arguments(["--coalesce-bytes", v], command: "livebusd", options: ["coalesce-bytes"], flags: [])
            .bytes("coalesce-bytes", default: 0, in: range)
    }

    /// The message refusing `--coalesce-bytes v`, or `accepted`.
    static func sizeRefusal(_ v: String, in range: ClosedRange<UInt64> = 0...(1 << 40)) -> String {
        do throws(CLIError) {
            _ = try size(v, in: range)
            return "accepted"
        } catch { return error.message }
    }

    /// Review finding (c): a number too large for 64 bits is out of range, with the largest accepted, not "not a
    /// size"; every out-of-range refusal names the largest accepted.
    @Test func aSizePastSixtyFourBitsIsOutOfRangeNamingTheLargest() {
        for big in ["99999999999999999999", "18446744073709551616KiB"] {
            let m = Self.sizeRefusal(big)
            #expect(m.contains("--coalesce-bytes \(big) is out of range"), "\(m)")
            #expect(m.contains("the largest accepted is 1TiB = 1099511627776 bytes"), "\(m)")
            #expect(!m.contains("not a size"), "\(m)")
        }
        #expect(Self.sizeRefusal("5000", in: 1...4096).contains("the largest accepted is 4KiB = 4096 bytes"))
        #expect(Self.sizeRefusal("5000", in: 1...4095).contains("the largest accepted is 4095 bytes;"))
        #expect(Arguments.spokenSize(65_536) == "64KiB" && Arguments.spokenSize(1000) == "1000B")
        #expect(Arguments.spokenSize(0) == "0B" && Arguments.spokenSize(3 << 40) == "3TiB")
    }

    /// Review finding (d): a fraction is refused (whole numbers only) with the whole number it is in the largest
    /// smaller unit that holds it exactly.
    @Test func aFractionalSizeIsRefusedWithItsWholeNumber() {
        for (fraction, whole) in [
            ("1.5MiB", "e.g. 1536KiB"), ("0.5KiB", "e.g. 512B"), ("2.0MiB", "e.g. 2MiB"), ("1.25 GiB", "e.g. 1280MiB"),
            ("0.1KiB", "and it is no whole number of bytes either (e.g."), ("1.5", "(e.g. --coalesce-bytes 262144"),
        ] {
            let m = Self.sizeRefusal(fraction)
            #expect(m.contains("whole numbers only, \(whole)"), "\(fraction): \(m)")
        }
        #expect(Self.sizeRefusal("1.5MiB").contains("'1.5MiB' is not a whole number of MiB"))
        #expect(Self.sizeRefusal("1.5").contains("'1.5' is not a whole number of bytes"))
    }

    /// Review finding (e): a unit in another case, decimal or bare names the binary unit meant, from one rule
    /// (``Arguments/meantSizeUnit(_:)``), as the durations parser names the units it takes.
    @Test func aMistypedSizeUnitNamesTheUnitMeant() {
        for (typed, meant, why) in [
            ("64kib", "64KiB", "unit names are case-sensitive"), ("4mib", "4MiB", "unit names are case-sensitive"),
            ("1GIB", "1GiB", "unit names are case-sensitive"), ("1tib", "1TiB", "unit names are case-sensitive"),
            ("512b", "512B", "unit names are case-sensitive"), ("64kb", "64KiB", "sizes are binary"),
            ("64k", "64KiB", "sizes are binary"), ("4 MB", "4MiB", "sizes are binary"),
            ("1.5mib", "1536KiB", "unit names are case-sensitive"),
        ] {
            let m = Self.sizeRefusal(typed)
            #expect(m.contains("; \(why): did you mean \(meant)?"), "\(typed): \(m)")
        }
        #expect(Arguments.meantSizeUnit("kbit") == nil && Arguments.meantSizeUnit("ib") == nil)
    }

    /// Review finding (f): `TiB` and a space before the unit are accepted, and the help, the refusals and README
    /// say so.
    @Test func tebibytesAndASpaceBeforeTheUnitAreAcceptedAndDocumented() throws {
        #expect(try Self.size("256 KiB") == 262_144)
        #expect(try Self.size("2TiB", in: 0...(4 << 40)) == 2 << 40)
        #expect(try Self.size("64 B") == 64)
        #expect(Self.sizeRefusal("12 furlongs").contains("use B, KiB, MiB, GiB or TiB"))
        #expect(Self.sizeRefusal("big").contains("one with B, KiB, MiB, GiB or TiB"))
        #expect(LivebusdCommand.help.contains("whole bytes, bare or with B, KiB, MiB, GiB or"))
        #expect(LivebusdCommand.help.contains("a space before the"))
        let readme = try String(contentsOf: E2ECLIGoldenTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("`TiB`; a space before it is allowed"))
    }

    /// `livebusd` refuses `argv` (no config file applied, nothing started), or `nil`.
    static func livebusdRefusal(_ argv: [String]) -> CLIError? {
        var refused: CLIError?
        _ = LivebusdCommand.run(["--socket", "/tmp/lb-none.sock", "--memory"] + argv, check: { refused = $0 })
        return refused
    }

    /// Review finding (b): `--slow-consumer-bytes` not above `--coalesce-bytes` says both values (and which is the
    /// default) and a fix with an example.
    @Test func aSlowConsumerLimitNotAboveTheThresholdSaysBothAndAFix() {
        #expect(
            Self.livebusdRefusal(["--slow-consumer-bytes", "64KiB", "--coalesce-bytes", "1MiB"])?.message
                == "--slow-consumer-bytes (64KiB) must be larger than --coalesce-bytes (1MiB): raise --slow-consumer-bytes, e.g. --slow-consumer-bytes 4MiB"
        )
        #expect(
            Self.livebusdRefusal(["--coalesce-bytes", "4MiB"])?.message
                == "--slow-consumer-bytes (4MiB, the default) must be larger than --coalesce-bytes (4MiB): raise --slow-consumer-bytes, e.g. --slow-consumer-bytes 16MiB"
        )
        #expect(
            Self.livebusdRefusal(["--coalesce-bytes", "1TiB", "--slow-consumer-bytes", "1TiB"])?.message.hasSuffix(
                "lower --coalesce-bytes, e.g. --coalesce-bytes 256GiB"
            ) == true
        )
        #expect(Self.livebusdRefusal(["--coalesce-bytes", "64KiB", "--slow-consumer-bytes", "1MiB"]) == nil)
    }

    /// Review finding (g): `--coalesce-bytes 0` would coalesce behind any backlog (the outbox holds past
    /// `queued > threshold`), not turn coalescing off, which nothing does: it is refused saying so, with an example;
    /// 1 is the smallest accepted.
    @Test func aZeroCoalescingThresholdIsRefusedSayingWhatItWouldMean() {
        let zero = Self.livebusdRefusal(["--coalesce-bytes", "0"])
        #expect(zero?.message.contains("does not turn coalescing off") == true, "\(String(describing: zero))")
        #expect(zero?.recovery?.contains("e.g. --coalesce-bytes 64KiB") == true)
        #expect(Self.livebusdRefusal(["--coalesce-bytes", "1", "--slow-consumer-bytes", "2"]) == nil)
        #expect(LivebusdCommand.help.contains("least 1 (0 would not turn coalescing off: nothing does)"))
    }

    @Test func dashJIsJsonWhereJsonExists() throws {
        let a = try Arguments(["-j"], command: "status", options: ["socket"], flags: ["json"])
        #expect(a.flag("json"))
        #expect(throws: CLIError.self) { try Arguments(["-j"], command: "man", options: ["output"], flags: []) }
        do throws(CLIError) {
            _ = try Arguments(["--jsn"], command: "status", options: ["socket"], flags: ["json"])
        } catch {
            #expect(error.recovery?.hasPrefix("did you mean --json?") == true)
        }
    }

    @Test func manPagesCarryEveryCommandAndDaemonOption() {
        let page = ManPage.livebus
        for c in LivebusCommand.commands { #expect(page.contains(".SS \"\(ManPage.escape(c.name))\"")) }
        #expect(page.contains("LIVEBUS\\_SOCKET") || page.contains("LIVEBUS_SOCKET"))
        let d = ManPage.livebusd
        for o in HelpSections(LivebusdCommand.help).daemonOptions {
            #expect(d.contains(".B \\-\\-\(o.name.replacingOccurrences(of: "-", with: "\\-"))"))
        }
        #expect(ManPage.escape(".x -y \\ — é") == "\\&.x \\-y \\e \\(em \\[u00E9]")
    }
}
