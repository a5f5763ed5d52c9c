import Foundation
import Testing

@testable import LiveBusCLI

/// Issue 22 over the real binaries and shells: the completion scripts load in bash (zsh and fish when installed)
/// and list commands, flags and a running daemon's sessions; the man pages render without warnings; the config
/// file is found, applied under flags and env, and a bad one fails with file:line; `-j`, did-you-mean and the
/// empty topic filter.
@Suite(.serialized)
struct E2ECompletionManConfigTests {
    static let bin = E2ECLIGoldenTests.bin

    static func shell(_ script: String) throws -> (Int32, String) { try E2EReviewFindingsTests.shell(script) }

    static func installed(_ tool: String) -> Bool {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].contains { FileManager.default.isExecutableFile(atPath: $0 + tool) }
    }

    @Test func bashLoadsTheScriptAndTheFunctionListsCommandsAndFlags() throws {
        let (code, text) = try Self.shell(
            """
            export PATH=\(Self.bin):$PATH LIVEBUS_CONFIG= LIVEBUS_SOCKET=/nonexistent/lb.sock
            source <(livebus completion bash) || exit 9
            complete -p livebus; complete -p livebusd
            show() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _livebus; echo "[$*] ${COMPREPLY[*]}"; }
            show livebus at
            show livebus status --
            show livebus attach --posture ""
            show livebus attach --device iphone-16-p
            show livebus order ""
            show livebusd --max-c
            """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("complete -o filenames -F _livebus livebus"), "\(text)")
        #expect(text.contains("complete -o filenames -F _livebus livebusd"), "\(text)")
        #expect(text.contains("[livebus at] attach\n"), "\(text)")
        #expect(text.contains("[livebus status --] --socket --explain --json --help"), "\(text)")
        #expect(text.contains("[livebus attach --posture ] flat half-opened folded"), "\(text)")
        // No daemon answers: device ids come from the bundled catalog.
        #expect(
            text.contains("[livebus attach --device iphone-16-p] iphone-16-pro iphone-16-pro-max iphone-16-plus"),
            "\(text)"
        )
        #expect(text.contains("[livebus order ] list create cancel"), "\(text)")
        #expect(text.contains("[livebusd --max-c] --max-connections"), "\(text)")
    }

    /// With a daemon running, the attached sessions' names are offered where a SESSION goes.
    @Test func completionOffersTheRunningDaemonsSessions() throws {
        let dir = temporaryDirectory("lbcomp")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try E2EDeviceFileTests.device.write(toFile: dir + "/my.json", atomically: true, encoding: .utf8)
        let (code, text) = try Self.shell(
            E2ECLIScriptingTests.prelude(dir)
                + """

                export LIVEBUS_CONFIG=
                $B/livebus attach --socket $S --name duo --device iphone-duo --duration 20s --json > /dev/null 2>&1 &
                AP=$!
                for i in $(seq 200); do $B/livebus status --socket $S --json 2>/dev/null | grep -q '"duo"' && break; sleep 0.05; done
                echo "sessions: $($B/livebus __complete posture --socket $S "" | tr '\\n' ' ')"
                export LIVEBUS_SOCKET=$S
                echo "env: $($B/livebus __complete clock d | tr '\\n' ' ')"
                kill $AP 2>/dev/null; wait $AP 2>/dev/null
                stop
                # Device ids come from the daemon when one answers: its --device-file device is offered.
                $B/livebusd --socket \(dir)/f.sock --memory --device-file \(dir)/my.json 2>/dev/null &
                FP=$!
                for i in $(seq 200); do $B/livebus status --socket \(dir)/f.sock >/dev/null 2>&1 && break; sleep 0.05; done
                echo "daemon devices: $($B/livebus __complete attach --socket \(dir)/f.sock --device my- | tr '\\n' ' ')"
                kill $FP; wait $FP 2>/dev/null
                echo "offline devices: $($B/livebus __complete attach --socket \(dir)/f.sock --device my- | tr '\\n' ' ')"
                """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("sessions: duo all current"), "\(text)")
        #expect(text.contains("env: duo"), "\(text)")
        #expect(text.contains("daemon devices: my-fold"), "\(text)")
        #expect(text.contains("offline devices: \n") || text.hasSuffix("offline devices: "), "\(text)")
    }

    @Test func zshAndFishLoadTheirScripts() throws {
        if Self.installed("zsh") {
            let (code, text) = try Self.shell(
                """
                export PATH=\(Self.bin):$PATH LIVEBUS_CONFIG=
                zsh -f -c 'autoload -U compinit && compinit -u -d /tmp/lb-zcompdump-$$ && source <(livebus completion zsh) && print "zsh: $_comps[livebus] $_comps[livebusd]"; rm -f /tmp/lb-zcompdump-$$'
                """
            )
            #expect(code == 0 && text.contains("zsh: _livebus _livebus"), "\(text)")
        }
        if Self.installed("fish") {
            let (code, text) = try Self.shell(
                """
                export PATH=\(Self.bin):$PATH LIVEBUS_CONFIG= LIVEBUS_SOCKET=/nonexistent/lb.sock HOME=$(mktemp -d)
                fish --no-config -c 'livebus completion fish | source; complete -C"livebus att"; complete -C"livebus status --ex"; complete -C"livebusd --log-level d"'
                """
            )
            #expect(code == 0, "\(text)")
            #expect(text.contains("attach"), "\(text)")
            #expect(text.contains("--explain"), "\(text)")
            #expect(text.contains("debug"), "\(text)")
        }
    }

    @Test func manPagesRenderWithoutWarnings() throws {
        let dir = temporaryDirectory("lbman")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            """
            set -e
            B=\(Self.bin)
            $B/livebus man livebus --output \(dir)
            $B/livebus man livebusd --output \(dir)
            for f in \(dir)/livebus.1 \(dir)/livebusd.8; do
                groff -ww -man -z $f 2>\(dir)/groff.err; echo "groff $(basename $f): $(wc -c < \(dir)/groff.err)"
                MANWIDTH=100 man -l --warnings $f 2>\(dir)/man.err > \(dir)/$(basename $f).txt
                echo "man $(basename $f): $(wc -c < \(dir)/man.err) lines $(wc -l < \(dir)/$(basename $f).txt)"
                cat \(dir)/groff.err \(dir)/man.err
            done
            grep -c '^       livebus attach' \(dir)/livebus.1.txt || true
            grep -q 'LIVEBUS_SOCKET' \(dir)/livebus.1.txt && echo "env documented"
            grep -q -- '--max-frames-per-second' \(dir)/livebusd.8.txt && echo "limits documented"
            """
        )
        #expect(code == 0, "\(text)")
        #expect(text.contains("groff livebus.1: 0") && text.contains("groff livebusd.8: 0"), "\(text)")
        #expect(text.contains("man livebus.1: 0") && text.contains("man livebusd.8: 0"), "\(text)")
        #expect(text.contains("env documented") && text.contains("limits documented"), "\(text)")
    }

    /// Every flag a command's usage line shows is accepted by its parser: one run per command with all of them stops
    /// at a later check (a value, the absent daemon), never at "unknown option" — so a completed flag works.
    @Test func everyUsageFlagIsAcceptedByItsCommand() throws {
        for c in LivebusCommand.commands where !["help", "demo", "e2e"].contains(c.name) {
            var argv = [c.name]
            for f in CommandSpec.parse(usage: c.usage, command: c.name).flags where f.name != "socket" {
                argv += f.value == nil ? ["--\(f.name)"] : ["--\(f.name)", f.choices.first ?? "/nonexistent/lb"]
            }
            if c.usage.contains("--socket") { argv += ["--socket", "/nonexistent/lb.sock"] }
            let r = try E2ECLIGoldenTests.run(argv + (c.usage.contains("--json") ? [] : ["--bogus-flag-for-test"]))
            let said = r.stdout + r.stderr
            if c.usage.contains("--json") {
                #expect(!said.contains("unknown option"), "\(argv): \(said)")
            } else {
                // Only the made-up flag is refused.
                #expect(said.contains("unknown option '--bogus-flag-for-test'"), "\(argv): \(said)")
            }
        }
    }

    @Test func configFileIsFoundAppliedUnderEnvAndFlagsAndBadOnesNameTheLine() throws {
        let dir = temporaryDirectory("lbcfg")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (code, text) = try Self.shell(
            """
            set -u
            B=\(Self.bin); unset LIVEBUS_CONFIG LIVEBUS_SOCKET
            mkdir -p \(dir)/proj/sub/deeper \(dir)/xdg/livebus \(dir)/elsewhere
            printf '{\\n  "socket": "s/bus.sock",\\n  "attach": {"device": "iphone-duo"}\\n}\\n' > \(dir)/proj/livebus.json
            printf '{"socket": "/xdg.sock"}' > \(dir)/xdg/livebus/config.json
            cd \(dir)/proj/sub/deeper
            echo "file: $($B/livebus config show | grep '^socket')"
            echo "env: $(LIVEBUS_SOCKET=/env.sock $B/livebus config show | grep '^socket')"
            echo "flag: $(LIVEBUS_SOCKET=/env.sock $B/livebus config show --socket /flag.sock | grep '^socket')"
            echo "json: $($B/livebus config show -j | grep -o '"key":"attach.device","source":"[^"]*","value":"[^"]*"')"
            # The configured socket is where status looks.
            $B/livebus status -j; echo "status=$?"
            cd \(dir)/elsewhere
            echo "xdg: $(XDG_CONFIG_HOME=\(dir)/xdg $B/livebus config show | grep '^socket')"
            echo "none: $(HOME=\(dir)/elsewhere XDG_CONFIG_HOME= $B/livebus config show | head -1)"
            printf '{\\n  "socket": "/x.sock",\\n  "atach": {"device": "iphone-duo"}\\n}\\n' > livebus.json
            $B/livebus status; echo "badkey=$?"
            printf '{\\n  "daemon": {\\n    "memory": "yes"\\n  }\\n}\\n' > livebus.json
            $B/livebusd; echo "daemon=$?"
            printf '{"attach": {"posture": "flatt"}}' > livebus.json
            $B/livebus attach --socket /nonexistent/x.sock; echo "value=$?"
            """
        )
        #expect(code == 0, "\(text)")
        #expect(
            text.contains("file: socket") && text.contains("\(dir)/proj/s/bus.sock  (file:\(dir)/proj/livebus.json:2)"),
            "\(text)"
        )
        #expect(text.contains("env: socket                     /env.sock  (env:LIVEBUS_SOCKET)"), "\(text)")
        #expect(text.contains("flag: socket                     /flag.sock  (flag)"), "\(text)")
        #expect(text.contains("\"source\":\"file:\(dir)/proj/livebus.json:3\",\"value\":\"iphone-duo\""), "\(text)")
        #expect(text.contains("no daemon at \(dir)/proj/s/bus.sock") && text.contains("status=3"), "\(text)")
        #expect(
            text.contains("xdg: socket                     /xdg.sock  (file:\(dir)/xdg/livebus/config.json:1)"),
            "\(text)"
        )
        #expect(text.contains("none: config file: none"), "\(text)")
        #expect(
            text.contains("error: \(dir)/elsewhere/livebus.json:3: unknown key 'atach'; did you mean 'attach'?"),
            "\(text)"
        )
        #expect(text.contains("badkey=2"), "\(text)")
        #expect(
            text.contains("livebus.json:3: daemon.memory must be true or false, found a string")
                && text.contains("daemon=2"),
            "\(text)"
        )
        #expect(
            text.contains("did you mean 'flat'?")
                && text.contains("--posture came from \(dir)/elsewhere/livebus.json:1"),
            "\(text)"
        )
        #expect(text.contains("value=2"), "\(text)")
    }

    @Test func shortJsonDidYouMeanAndTheEmptyTopicFilter() throws {
        let dir = temporaryDirectory("lbdym")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let j = try E2ECLIGoldenTests.run(["devices", "-j"])
        #expect(j.exit == 0 && j.json?["ok"] == .bool(true))
        let typo = try E2ECLIGoldenTests.run(["status", "--jsn"])
        #expect(typo.exit == 2 && typo.stderr.contains("did you mean --json?"), "\(typo.stderr)")
        let device = try E2ECLIGoldenTests.run(["layout", "--device", "iPhone-16-Pro", "-j"])
        #expect(
            device.exit == 2
                && device.json?["error"]?["message"]?.stringValue?.contains("did you mean 'iphone-16-pro'?") == true,
            "\(device.stdout)"
        )
        let command = try E2ECLIGoldenTests.run(["stauts"])
        #expect(command.exit == 2 && command.stderr.contains("did you mean `livebus status`?"), "\(command.stderr)")
        let (code, text) = try Self.shell(
            E2ECLIScriptingTests.prelude(dir)
                + """

                export LIVEBUS_CONFIG=
                for i in $(seq 200); do $B/livebus order list --socket $S | grep -q . && break; sleep 0.05; done
                ID=$($B/livebus order list --socket $S -j | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
                echo "order=$ID"
                $B/livebus watch --socket $S --topic "$ID" --duration 300ms > /dev/null
                $B/livebus watch --socket $S --topic "orders/$ID" --duration 300ms > /dev/null
                stop
                """
        )
        #expect(code == 0, "\(text)")
        let id = text.components(separatedBy: "order=").dropFirst().first?.prefix { !$0.isNewline } ?? ""
        #expect(!id.isEmpty, "\(text)")
        #expect(
            text.contains("warning: --topic '\(id)' matches none of the") && text.contains("closest: orders/\(id)"),
            "\(text)"
        )
        #expect(!text.contains("warning: --topic 'orders/\(id)'"), "\(text)")
    }
}
