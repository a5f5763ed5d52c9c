import Foundation
import LiveBusActivity
import LiveBusClient
import LiveBusDaemon
import LiveBusLayout
import LiveBusLoop
import LiveBusText
import LiveBusWire

/// `livebus`: the command-line client. Shape: `livebus <command> [target] [flags]`.
public enum LivebusCommand {
    struct Command {
        var name: String
        var summary: String
        var usage: String
        var details: String
        var examples: [String]
    }

    static let commands: [Command] = [
        Command(
            name: "demo",
            summary: "Start a private daemon, attach three phones and play demo-120s live",
            usage: "livebus demo [--time-scale X] [--seed N] [--scenario NAME|FILE] [--record FILE] [--json]",
            details: """
                Starts livebusd on a private socket, attaches an iPhone 16 Pro (portrait, foreground), an iPhone Duo
                unfolded (flat) and an iPhone Duo half-opened in the background whose clock runs 90 s fast, and
                plays the scenario (default demo-120s at 10×, about 12 s). Exits 0 once every phone shows the order
                delivered, 4 if that does not happen in time (quoting the daemon log's last lines), 2 for a bad
                --scenario, 130 on Ctrl-C. Its private directory ($TMPDIR or /tmp/livebus-demo-*) is removed on
                every exit. --record FILE records the run (`livebus record`, Protocol/RECORD.md) for
                `livebus replay FILE`.
                """,
            examples: [
                "livebus demo", "livebus demo --time-scale 4", "livebus demo --time-scale 20 --record demo.jsonl",
                "livebus demo --json | jq -c 'select(.type==\"update\")'",
            ]
        ),
        Command(
            name: "attach",
            summary: "Attach one simulated phone to a daemon and show it live",
            usage:
                "livebus attach [--socket PATH] [--name NAME] [--device MODEL] [--posture flat|half-opened|folded] [--orientation portrait|landscape] [--window WxH|full] [--split-width PT] [--app-state foreground|background|suspended|terminated] [--os VERSION] [--clock-skew ±DURATION] [--clock-drift ±PPM] [--low-power] [--frequent-updates] [--activities authorized|denied|disabled] [--bundle-id ID] [--channel ID]... [--activity-schema FILE] [--device-file FILE] [--svg-dir DIR] [--duration DURATION] [--exit-when delivered] [--no-reconnect] [--json]",
            details: """
                Connects, handshakes, subscribes to every order and shows each Live Activity as the lock screen and
                Dynamic Island would. On a terminal, keys change the phone live: f fold, u unfold, h half-open,
                r rotate, b background, g foreground, s step the clock +30 s, q quit. With --json it prints one JSON
                object per applied update (type, topic, seq, status, etaTarget in the phone's clock in ms since the
                Unix epoch, remainingMs, stale). Durations need a unit: -90s, +1h, 500ms, 1h30m (a bare number is
                refused). Posture aliases: book/tabletop/half → half-opened, open/unfolded → flat, closed → folded;
                a fold state the device does not have (f or h on an iPhone 16 Pro) is refused with a message.
                A --window follows the screen on every fold or rotation (full screen on the new screen, with a note);
                --split-width pins a split-view width that stays (clamped to a narrower screen, with a note).
                It runs until q, Ctrl-C or the daemon's BYE (exit 0; it does not reconnect after a BYE), or:
                --duration D (1ms…7 days) quits after D, exit 0; --exit-when delivered quits, exit 0, once the
                phone holds at least one activity and every activity it holds shows a terminal status (delivered
                or canceled), and exits 4 (timed out) if it stops first for another reason (--duration, q, BYE).
                --exit-when never (the default) waits for those. A lost connection is resumed, or with
                --no-reconnect ends with exit 3 and what happened (a daemon killed without BYE is not a success).
                A HELLO the daemon refuses for good, on a reconnect too (a resume past its --max-subscriptions,
                an unknown device…), ends with exit 2 and the daemon's message, instead of retrying.
                --activity-schema FILE is your app's ActivityAttributes/ContentState (Protocol/ACTIVITY-SCHEMA.md):
                pushes to this phone are decoded with it as ActivityKit would (default: the daemon's, else the
                built-in delivery activity); a bad file is exit 2 with file:line: field.
                Push tokens (livebusd --apns): the app's push-to-start token and each activity's token are printed
                as they arrive (JSON: {"type": "pushToken", "kind": "pushToStart"|"activity", "bundleID", "order",
                "channel", "token"}); send to them with apns-topic BUNDLE-ID.push-type.liveactivity. --bundle-id ID
                is the app's bundle id (default com.example.delivery); --channel ID (repeatable) makes the app's
                order activities listen on that broadcast channel (an id from POST /1/apps/BUNDLE-ID/channels).
                A federated daemon (livebusd --federate) tells the phone its sync state (PROTOCOL.md §5.9): sync
                degraded while it has lost NATS (the phone keeps what it has), catchingUp once NATS is back, then
                live, with since when (phone clock) and why; JSON: {"type": "sync", "state", "daemon", "since",
                "reason"}, one line per change.
                """,
            examples: [
                "livebus attach --socket /tmp/bus.sock --device iphone-16-pro",
                "livebus attach --socket /tmp/bus.sock --device iphone-duo --posture half-opened --app-state background --clock-skew +90s",
                "livebus attach --socket /tmp/bus.sock --json --exit-when delivered",
            ]
        ),
        Command(
            name: "status",
            summary: "Show the daemon's sessions (posture, app state, clock) and orders",
            usage: "livebus status [--socket PATH] [--explain] [--json]",
            details:
                "Asks the running daemon over its admin interface (same user only) and shows every session, text and --json alike (read in as many answers as it takes). Per session: device, posture, app state, clock offset/drift/error bound/round trip, the refresh scheduler (next window, budget left, queued and coalesced updates); --explain adds why the last updates were delivered, delayed or coalesced. While the daemon's store refuses writes (a full disk) a DEGRADED block (JSON: `degraded`, else null) gives the reason, the simulator events held in memory and what to do.",
            examples: ["livebus status --socket /tmp/bus.sock", "livebus status --json | jq '.data.sessions'"]
        ),
        Command(
            name: "order",
            summary: "List, create or cancel orders in the running simulator",
            usage:
                "livebus order list [--limit N --offset M] | create [ORDER-ID] [--customer ID] | cancel ORDER-ID [--socket PATH] [--json]",
            details:
                "list shows every order (fetched 100 at a time), or one page with --limit/--offset; create starts a new order (and its Live Activity on every subscribed phone), named M0001, M0002, … without ORDER-ID (<tag>-M0001, … on a federated daemon, PROTOCOL.md §5.8); cancel may fail the way a real backend's cancel request can.",
            examples: [
                "livebus order list", "livebus order list --limit 20 --offset 40", "livebus order create --customer c7",
                "livebus order cancel A1001",
            ]
        ),
        Command(
            name: "posture",
            summary: "Fold, unfold, half-open, rotate or resize an attached phone",
            usage:
                "livebus posture SESSION flat|half-opened|folded|book|tabletop|closed [--angle DEG] [--orientation portrait|landscape] [--window WxH|full] [--split-width PT] [--keyboard PT] [--socket PATH] [--json]",
            details: """
                SESSION is a name given at attach --name, a session id, all, or current (exactly one attached).
                Aliases map to one vocabulary: book/tabletop/half → half-opened, open/unfolded → flat, closed → folded;
                --angle 180 is flat, ≤ 30 folded, anything between half-opened. The phone lays itself out again at
                once and reports the new posture to the daemon. Without --window the window follows the new screen
                (full screen, with a note) unless a split-view width is pinned (--split-width PT: kept, clamped to a
                narrower screen with a note); --window full clears window and pin.
                """,
            examples: [
                "livebus posture duo half-opened", "livebus posture all flat --orientation landscape",
                "livebus posture current --angle 95",
            ]
        ),
        Command(
            name: "app-state",
            summary: "Move an attached phone's app to the foreground, background, suspended or terminated",
            usage: "livebus app-state SESSION foreground|background|suspended|terminated [--socket PATH] [--json]",
            details:
                "Background and suspended apps receive updates only as the refresh scheduler allows (push budget, refresh windows); a terminated (force-quit) app still gets Live Activity pushes.",
            examples: ["livebus app-state duo background", "livebus app-state all foreground"]
        ),
        Command(
            name: "profile",
            summary: "Change device settings that change outcomes (Low Power Mode, frequent updates, authorization)",
            usage:
                "livebus profile SESSION [--low-power on|off] [--frequent-updates on|off] [--activities authorized|denied|disabled] [--socket PATH] [--json]",
            details:
                "A start with Live Activities disabled fails with Apple's error; Low Power Mode delays updates; frequent updates raises the push budget.",
            examples: ["livebus profile duo --low-power on", "livebus profile pro --activities disabled"]
        ),
        Command(
            name: "clock",
            summary: "Step or change the drift of an attached phone's clock",
            usage: "livebus clock SESSION [--step ±DURATION] [--drift ±PPM] [--socket PATH] [--json]",
            details:
                "One or both: --step within ±24h with its unit (+30s, -1h, 8h20m; a bare number is refused), --drift within ±100000 ppm. It echoes what it understood (clock stepped +8h20m). The phone tells the daemon its clock was set, the daemon probes at once, detects the step and re-converges; countdowns stay right in the phone's clock.",
            examples: ["livebus clock duo --step +30s", "livebus clock pro --drift -200"]
        ),
        Command(
            name: "push",
            summary: "Send an APNs Live Activity payload (the file simctl push takes) and print its verdict",
            usage:
                "livebus push TARGET FILE|- --order ID [--expect applied|ignored] [--socket PATH] [--json] · livebus push FILE|- --via http2 [--token HEX] [--channel ID] · livebus push --via http2 --request FILE [--topic TOPIC] [--priority 10|5] [--collapse-id ID] [--expiration SECONDS] [--header NAME:VALUE]... [--apns-socket PATH] [--apns HOST:PORT] [--json]",
            details: """
                FILE is a JSON object with "aps" (timestamp, event, content-state, stale-date, dismissal-date,
                relevance-score, alert), at most 4096 bytes; - reads standard input. content-state is decoded as the
                app's ContentState decodes it: the phone's --activity-schema, else livebusd's, else the built-in
                delivery activity {"status", "etaEnd" (seconds since 2001-01-01), "progress"?, "lastConfirmed"?}
                (PROTOCOL.md §9, ACTIVITY-SCHEMA.md). A missing key or a wrong type drops it (keyNotFound,
                typeMismatch … naming the field); a date in the wrong unit is applied as the phone reads it. Each push
                gets an id and a verdict: applied, or not with the reason in Apple's words and the rule's source, and
                every lint that applies (Protocol/lints.json). `livebus explain ID` traces it.
                --order is required (which Live Activity; `livebus order list`). Exit status, one rule for every
                verdict: 4 when a phone did not answer; 2 when every phone refused the payload as unreadable
                (malformedPayload, payloadTooLarge, contentStateTooLarge, keyNotFound, valueNotFound,
                typeMismatch, dataCorrupted: fix the file); 1 when --expect is given and the verdict differs;
                otherwise 0, whatever the activity rules decided (the printed verdict says why).
                --via http2 sends FILE through the daemon's APNs endpoint instead (h2c: livebusd --apns-socket PATH,
                or --apns HOST:PORT with --apns-h2c), as your backend's APNs client would: to a push token
                (--token, from `livebus status`: a push-to-start or an activity token) or a broadcast channel
                (--channel), with apns-push-type liveactivity, apns-topic TOPIC (default
                com.example.delivery.push-type.liveactivity), --priority, --collapse-id, --expiration (Unix
                seconds, 0 = now or never) and an unsigned provider token (accepted without livebusd --apns-key;
                else pass yours with --header 'authorization: bearer JWT'). Each --header NAME:VALUE replaces the
                header of that name (given twice, it is sent twice). It prints APNs's answer (status, apns-id,
                reason) and the push id; exit 0 when APNs accepted it (2xx), 2 when it refused it, 3 when the
                endpoint is unreachable, 4 when it did not answer within 15 s.
                --request FILE reads the whole request from FILE as curl users keep one: an optional request line
                (POST /3/device/TOKEN, or the full https URL), header lines NAME: VALUE, one blank line, the body;
                flags given beside it win. A Simulator .apns file (its "Simulator Target Bundle" key) works as FILE
                on both paths: the key is taken out as simctl does, and its bundle id gives apns-topic.
                """,
            examples: [
                "livebus push all update.json --order A1001",
                "livebus push --via http2 --request push.http --apns-socket /tmp/apns.sock",
                "cat end.json | livebus push duo - --order A1001 --expect applied",
            ]
        ),
        Command(
            name: "explain",
            summary: "Trace one push through transport, activity rules and the view",
            usage: "livebus explain PUSH-ID [--socket PATH] [--json]",
            details: "",
            examples: ["livebus explain p3"]
        ),
        Command(
            name: "fault",
            summary: "Inject network faults (toxiproxy's toxics) on attached phones' connections",
            usage:
                "livebus fault add TOXIC [--session NAME|--all|--minority|--majority|--one] [--direction down|up] [--toxicity P] [--seed N] [--id ID] [--latency D --jitter D --rate KB/s --average-size B --size-variation B --delay-us US --delay D --bytes N --timeout D --probability P --window N --duration D --frame-types LIST] · livebus fault list · livebus fault remove ID|PRESET|--all · livebus fault preset 3g|edge|lossy|very-bad|airplane [--session NAME|--all|--minority|--majority|--one]",
            details: """
                D is a duration with its unit (200ms, 1.5s, 1m; a bare number is refused, --delay-us takes µs).
                Toxics: latency, bandwidth, slicer, slow_close, limit_data, timeout, reset_peer, down (refuse new
                connections: the target's only, daemon-wide without a target), drop, duplicate, reorder, corrupt (frames, with --probability), partition (blackhole both
                directions for --duration). Targets as Jepsen picks them, seeded so runs repeat. The bus repairs what the
                network breaks: gaps are re-sent, corrupted frames reconnect and resume, duplicates are ignored.
                Ids are toxiproxy's <kind>_<downstream|upstream> (latency_downstream) unless --id names one; a
                preset's are <preset>-<kind>-<down|up>, and `fault remove PRESET` removes them all. --frame-types
                limits drop/duplicate/reorder/corrupt to frame types (names or codes, e.g. EVENT,PING).
                Protocol/FAULTS.md has every parameter, its unit and default, and the presets' exact toxics.
                """,
            examples: [
                "livebus fault add latency --all --latency 200ms --jitter 50ms",
                "livebus fault add drop --session duo --probability 0.3",
                "livebus fault add partition --minority --duration 10s --seed 7",
                "livebus fault preset very-bad --session pro",
                "livebus fault remove --all",
            ]
        ),
        Command(
            name: "watch",
            summary: "Stream every event the daemon publishes (NDJSON with --json)",
            usage: "livebus watch [--topic PATTERN]... [--duration D] [--socket PATH] [--json]",
            details:
                "First the stored history of each matching topic is replayed from the daemon's replay log (lines marked [replay]; --json: \"flags\": [\"replay\"], or [\"snapshot\"] for the latest state when the log no longer reaches back), then events arrive as published, in the server's clock, outside any phone's refresh scheduler. PATTERN uses * for one segment and > for the rest (default >); one that matches none of the daemon's current topics (stored or published, and the orders') is warned about on stderr. The daemon's BYE ends the stream with its reason on stderr (exit 0); a connection lost without BYE (a crash, kill -9) says so on stderr and exits 3.",
            examples: [
                "livebus watch", "livebus watch --topic 'orders/A1001' --json | jq -c '.body.contentState.status'",
            ]
        ),
        Command(
            name: "simulate",
            summary: "Make a phone's app not ready for a while, or fail its next Live Activity starts",
            usage: "livebus simulate SESSION [--not-ready DURATION] [--start-failures N] [--socket PATH] [--json]",
            details:
                "Exercises the start-intent rules (Protocol/PROTOCOL.md §9.1): a start requested while not ready is kept and applied once ready; a failed start keeps the created order and can be retried.",
            examples: ["livebus simulate duo --not-ready 2s", "livebus simulate pro --start-failures 1"]
        ),
        Command(
            name: "backend",
            summary: "Stall the simulated backend (no news) for a while",
            usage: "livebus backend stall [ORDER] --duration D [--socket PATH] [--json]",
            details:
                "D is scenario time (e.g. 30s); phones go stale at their stale date and recover with the next update.",
            examples: ["livebus backend stall A1001 --duration 30s", "livebus backend stall --duration 1m"]
        ),
        Command(
            name: "devices",
            summary: "List the device catalog (screens, scale, safe areas, Dynamic Island, hinge)",
            usage: "livebus devices [--json]",
            details: "Ids are what --device takes. Every number carries its source in Protocol/DEVICES.md.",
            examples: ["livebus devices", "livebus devices --json | jq '.data[].id'"]
        ),
        Command(
            name: "layout",
            summary: "Compute a layout offline and print it, as JSON or as an SVG picture",
            usage:
                "livebus layout --device MODEL|--device-file FILE [--posture flat|half-opened|folded] [--orientation portrait|landscape] [--window WxH|full] [--screen overlay|column|fullScreen] [--tags N] [--keyboard PT] [--layout-direction ltr|rtl] [--dialog WxH] [--os VERSION] [--remaining DURATION] [--status TEXT] [--activity-schema FILE] [--svg FILE] [--json]",
            details:
                "Runs the same pure layout engine the phones run, measuring text with FreeType + HarfBuzz (NanumGothic stands in for Apple's system font). --keyboard PT raises the software keyboard (points from the window's bottom): the tag sheet's text field has focus and the sheet rides on the keyboard. --layout-direction rtl mirrors the arrangement (map right, cards left; the hardware stays); --dialog WxH places an alert wholly in the card column's sub-screen. --device-file FILE lays out your own device (one device object in the catalog's format, validated the same way; it may give a windowOrigin below a status bar). A failed invariant (overlap, touch target, text, sheet width...) is printed with its detail, outlined in red in the SVG, and exits 1. --remaining D (the countdown, e.g. 2h20m13s → 2:20:13) and --status TEXT check a Live Activity offline, in the boxes and text styles of --activity-schema FILE (default: the field report's 56 pt status and 44 pt timer boxes). Text or a box wider than its space is reported as an overflow line, in --json (truncations) and in the SVG.",
            examples: [
                "livebus layout --device iphone-duo --posture half-opened --orientation landscape --svg duo.svg",
                "livebus layout --device iphone-16-pro --tags 3 --keyboard 336 --json",
                "livebus layout --device ipad-air-11 --window 678x1180 --screen column --json",
                "livebus layout --device iphone-duo --orientation landscape --os 26.4 --svg duo-fallback.svg",
                "livebus layout --device iphone-16 --remaining 2h20m13s --status \"Mina is 5 min away\" --json",
            ]
        ),
        Command(
            name: "schema",
            summary: "Write an activity schema from your app's ActivityAttributes Swift source",
            usage:
                "livebus schema import FILE.swift [--output FILE] [--countdown KEY] [--status KEY] [--allow-partial] [--json]",
            details: """
                Reads FILE with the toolchain's own parser (swiftc -dump-parse; $SWIFTC picks the compiler): the
                struct that declares a nested ContentState, its stored properties and types, CodingKeys, enums with
                String or Int raw values, nested structs, and how a custom init(from:) builds each Date
                (timeIntervalSince1970, / 1000, ISO8601DateFormatter). The presentation counts down to --countdown
                (default: the first Date) and shows --status (default: the first String or enum). Whatever cannot
                be read is listed; then nothing is written and it exits 2, unless --allow-partial.
                The result is checked as livebusd would check it (Protocol/ACTIVITY-SCHEMA.md).
                """,
            examples: [
                "livebus schema import RideAttributes.swift --output ride.json",
                "livebus attach --activity-schema ride.json",
            ]
        ),
        Command(
            name: "doctor",
            summary: "Check the environment and say how to fix each problem",
            usage: "livebus doctor [--socket PATH] [--json]",
            details:
                "Checks libuv, the font used for text measurement, the socket path length and permissions, whether a daemon answers (a `status` request answered within 5 s: a socket that accepts and never answers fails it), and whether its store accepts writes (it fails while the daemon is degraded by a full disk, with the reason and what to do). Exit 0 when every check passes; when the daemon check fails, 3 (unreachable) or 4 (no answer in time); else 1.",
            examples: ["livebus doctor", "livebus doctor --socket /tmp/bus.sock"]
        ),
        Command(
            name: "e2e",
            summary: "Play end-to-end scenarios against a real daemon and check the invariants",
            usage:
                "livebus e2e FILE... [--time-scale X] [--seed N] [--report FILE] [--junit FILE] [--tap FILE] [--keep-logs] [--python-client PATH] [--quiet] [--json] | livebus e2e --validate FILE...",
            details: """
                Starts livebusd on a private socket and data dir (with a "federation" block: a NATS JetStream
                cluster and several livebusd --federate), starts every session as its own client process
                (livebus attach or the Python client), plays the timeline (postures, app states, orders, stalls,
                toxics, clock steps, kill -9 and restart; in a federation also phones moving between daemons,
                kill -9 and SIGSTOP of a NATS node, a daemon partitioned and healed, as root), collects every
                client's JSON-lines log and checks the invariants of Protocol/E2E.md (for every phone on every
                daemon): convergence, sequence, statuses, remaining, stale, layout, crashes, memory, actions; and
                the scenario's assertion steps ("type": "assert": status, stale, remaining, island, lockScreen,
                arrangement, sizeClass, rects, overflow, fits, sync, at a time or after an action) over what each
                phone's log shows. Ends with a table and each failure's first counterexample
                (a step's phone, expected and observed values and log line); exit 0 only if all pass, 1 if any
                fails. --junit FILE writes JUnit XML (a testsuite per scenario, a testcase per invariant and step),
                --tap FILE TAP 14. --validate checks the files as a run would before starting, runs nothing, and
                names each file's kind (a backend timeline belongs to livebusd --scenario); exit 0 only if every
                file is a valid e2e scenario, else 2. Updates, checked counts and wall times depend on real-time
                scheduling (the report's timingDependent); verdicts do not. Logs of failed scenarios are kept under
                /tmp/lbe2e-*; processes and sockets are cleaned up even on Ctrl-C.
                """,
            examples: [
                "livebus e2e Protocol/scenarios/e2e-*.json",
                "livebus e2e Protocol/scenarios/e2e-demo-120s.json --time-scale 20 --report /tmp/e2e.json",
                "livebus e2e Protocol/scenarios/e2e-assert-steps.json --junit /tmp/e2e.xml --tap /tmp/e2e.tap",
                "livebus e2e --validate Protocol/scenarios/e2e-*.json",
            ]
        ),
        Command(
            name: "completion",
            summary: "Print the shell completion script for bash, zsh or fish",
            usage: "livebus completion bash|zsh|fish",
            details: """
                The script completes commands, flags and their values from the usage lines `livebus help` prints,
                and asks a running daemon (the --socket typed, else $LIVEBUS_SOCKET, the config file's socket or the
                default) for attached session names, order ids and device ids; without one, device ids come from the
                bundled catalog. It completes livebusd's options too.
                """,
            examples: [
                "source <(livebus completion bash)", "livebus completion zsh > \"${fpath[1]}/_livebus\"",
                "livebus completion fish > ~/.config/fish/completions/livebus.fish",
            ]
        ),
        Command(
            name: "man",
            summary: "Print or write the man pages livebus.1 and livebusd.8",
            usage: "livebus man livebus|livebusd [--output DIR]",
            details:
                "Generated from the texts `livebus help` and `livebusd --help` print. Without --output the page goes to standard output (view it with `livebus man livebus | man -l -`); with --output DIR it is written to DIR/livebus.1 or DIR/livebusd.8. tools/man DIR writes both.",
            examples: ["livebus man livebus | man -l -", "livebus man livebusd --output /tmp/man"]
        ),
        Command(
            name: "config",
            summary: "Show the effective settings and where each came from (flag, env, file, default)",
            usage: "livebus config show [--socket PATH] [--json]",
            details: """
                The config file is livebus.json in the current directory or the nearest one above it (found as git
                finds .git), else $XDG_CONFIG_HOME/livebus/config.json (~/.config/livebus/config.json);
                $LIVEBUS_CONFIG names another file (empty: none). It is one JSON object: "socket",
                "activitySchema", "attach": {"device", "posture", "clockSkew", "clockDrift"}, "e2e": {"timeScale",
                "report"} and "daemon": {livebusd's options in camelCase: "logLevel", "dataDir", "timeScale",
                "memory" …}; livebusd reads it too. Relative paths are taken from the file's directory. Flags win
                over the environment ($LIVEBUS_SOCKET, $LIVEBUS_DEVICE, $LIVEBUS_POSTURE, $LIVEBUS_CLOCK_SKEW,
                $LIVEBUS_CLOCK_DRIFT, $LIVEBUS_E2E_TIME_SCALE, $LIVEBUS_E2E_REPORT, $LIVEBUS_ACTIVITY_SCHEMA), which
                wins over the file. An unknown key or a value of the wrong type is exit 2 with file:line (and the
                nearest key). show prints each key, its value and its source (flag, env:NAME, file:PATH:LINE, default).
                """,
            examples: [
                "livebus config show",
                "echo '{\"socket\": \"/tmp/bus.sock\"}' > livebus.json && livebus config show -j",
            ]
        ),
        Command(
            name: "record",
            summary: "Record a running daemon's events, its phones' inputs and push verdicts to a file",
            usage:
                "livebus record --out FILE [--since now|start] [--exit-when finished|never] [--duration D] [--socket PATH] [--json]",
            details: """
                Writes JSON Lines (Protocol/RECORD.md, schema Protocol/record.schema.json): a versioned header with
                the daemon's scenario, time scale and seed; every EVENT it publishes (topic, sequence, flags, body);
                and from the daemon's journal, read every 100 ms: each phone's attach (device, posture, app state,
                OS, profile, clock offset at the handshake) and detach, what it reports about itself (posture,
                app state, profile, a clock change; from commands or its own keys), every command that changes
                something (posture, app-state, profile, clock, push, simulate, fault, backend stall, order
                create/cancel) and every push's verdict. Each line has t, milliseconds since the daemon started.
                --since now (the default) records from the moment recording starts: it begins with the phones
                attached then (and, without a scenario, the orders there are) as inputs at that moment, nothing
                from before; --since start takes the daemon's journal from its start (its last 10,000 entries).
                It stops at Ctrl-C, after --duration, when the daemon goes away, or with --exit-when finished once
                the scenario is finished and every phone's activities are delivered or canceled, and then writes
                the final line: every phone's device, posture, app state, activities (status of the last update it
                was sent, stale when its stale date had passed) and push verdicts.
                """,
            examples: [
                "livebus record --out bug-1234.jsonl --socket /tmp/bus.sock",
                "livebus record --out run.jsonl --exit-when finished",
            ]
        ),
        Command(
            name: "replay",
            summary: "Replay a recording against a fresh private daemon and check every phone ends as recorded",
            usage: "livebus replay FILE [--time-scale X] [--settle D] [--quiet] [--json]",
            details: """
                Starts livebusd with the recording's scenario, time scale and seed on a private socket and data
                directory (removed after), attaches each phone as a `livebus attach` process at its recorded time
                with its recorded device, posture, app state, OS, profile and clock, sends every recorded command
                at its time (scaled by recorded ÷ --time-scale; a recording made --since now of a daemon without a
                scenario, or after its scenario ended, starts at once), with each push's dates moved by how much
                later the replay is, and restores each recorded posture, app-state and profile change the phone
                does not already have. From the recording's end it waits up to --settle (default 10s, wall time)
                for the final state to equal the recorded one: exit 0 when it does, else 1 with one line per
                difference (phone, field, recorded vs replayed). A malformed file is exit 2 with FILE:LINE and the
                field; a daemon that cannot be started again (the recording's scenario cannot be loaded here) is
                exit 2 with livebusd's error.
                """,
            examples: ["livebus replay bug-1234.jsonl", "livebus replay run.jsonl --time-scale 40"]
        ),
        Command(
            name: "publish",
            summary: "Publish events on a topic as a backend does (PUBLISH → ACK), from a file or stdin",
            usage: "livebus publish TOPIC [FILE|-] [--socket PATH] [--timeout D] [--json]",
            details: """
                Connects with the publisher role and streams FILE (standard input when FILE is - or missing)
                as it arrives, a pipe or `tail -f` too: each event body is sent as a PUBLISH on TOPIC as soon as
                its line is read, with up to 64 awaiting their verdict. FILE holds one event body per line
                (NDJSON; blank lines skipped), or one JSON object over several lines (a pretty-printed file)
                (Protocol/PROTOCOL.md §5.1: event, timestamp in ms since the Unix epoch, contentState,
                staleDate?, relevanceScore, priority, dismissalDate?). Each prints TOPIC #SEQUENCE stored
                (FILE:LINE) the moment the daemon acknowledges it (it is in the store: a phone that subscribes
                gets it), or FILE:LINE: refused: CODE: MESSAGE on stderr. Every subscriber on this daemon, and in
                a federation on every daemon, receives the stored events. A line that is not an event body (not
                UTF-8, cut short, a number out of range, an object spread over lines after the first body, not
                an object) stops the input there: the lines before it are sent and answered, nothing after it,
                and the error names its line and says how many were sent (exit 2). SIGINT or SIGTERM stops
                reading, waits up to 2 s for the verdicts in flight, prints them and says what is stored (exit
                130). --json prints one envelope at the end: data.events [{line, sequence | error, message}],
                stored, notAcknowledged (sent, no verdict: may or may not be stored), notSent (read, not sent),
                reason (null, invalidBody, interrupted, connectionLost, refused, timedOut). Exit 0 when every
                event was stored, 1 when one was refused (or a fatal refusal closed the connection), 2 on a bad
                line or topic (over 255 bytes: refused before anything is sent), 3 when no daemon answers or the
                connection is lost without a refusal (a crash, kill -9), 4 after --timeout (default 5s) without
                a verdict, 130 when interrupted.
                """,
            examples: [
                "livebus publish orders/A1001 update.json", "livebus publish orders/A1001 - < events.ndjson",
                "tail -f events.ndjson | livebus publish orders/A1001",
            ]
        ),
        Command(
            name: "dashboard",
            summary: "Open the live dashboard of a daemon started with --http, or print its URL",
            usage: "livebus dashboard [--socket PATH] [--print] [--json]",
            details: """
                Reads the URL (with its token) that livebusd --http wrote next to its socket (PATH.dashboard, mode
                0600) and opens it with xdg-open when a display is there ($DISPLAY or $WAYLAND_DISPLAY), else (or
                with --print) prints it. Exit 3 when the daemon serves no dashboard.
                """,
            examples: ["livebusd --http 127.0.0.1:8421 &  livebus dashboard", "livebus dashboard --print"]
        ),
        Command(
            name: "help",
            summary: "Show help for livebus or one command",
            usage: "livebus help [COMMAND]",
            details: "",
            examples: ["livebus help attach"]
        ),
    ]

    /// The top-level help text.
    public static var help: String {
        var s = """
            livebus — attach simulated phones to a LiveBus daemon, drive them, and inspect what they show

            USAGE
              livebus <command> [target] [flags]

            COMMANDS

            """
        // The longest name and two spaces: a name as long as the column (`completion`) still has a gap.
        let column = (commands.map(\.name.count).max() ?? 0) + 2
        for c in commands {
            s += "  " + c.name.padding(toLength: column, withPad: " ", startingAt: 0) + c.summary + "\n"
        }
        s += """

            GLOBAL FLAGS
              --json, -j   print {"ok": true, "data": …} or {"ok": false, "error": {code, message, recovery}}
              --version    print the version

            ENVIRONMENT
              LIVEBUS_SOCKET  the daemon's socket when --socket is not given (before the config file's "socket");
                              else $XDG_RUNTIME_DIR/livebus.sock when it is yours, else /tmp/livebus-<uid>/livebus.sock
              LIVEBUS_CONFIG  the config file to read instead of livebus.json / ~/.config/livebus/config.json (empty: none)

            CONFIG
              livebus.json here or in a parent directory, else $XDG_CONFIG_HOME/livebus/config.json: socket, attach and
              e2e defaults, the activity schema, livebusd's settings. Flags win over env, env over the file.
              `livebus config show` prints each value and its source; `livebus help config` lists the keys.

            EXIT CODES
              0 success · 1 a verdict failed · 2 usage or input error · 3 daemon unreachable or connection lost
              4 timed out · 130 interrupted (Ctrl-C)

            Run `livebus help <command>` for flags and examples.
            """
        return s
    }

    /// Help for one command.
    static func help(for c: Command) -> String {
        var s = "livebus \(c.name) — \(c.summary)\n\nUSAGE\n  \(c.usage)\n"
        if !c.details.isEmpty {
            s += "\n" + c.details.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") + "\n"
        }
        if !c.examples.isEmpty { s += "\nEXAMPLES\n" + c.examples.map { "  " + $0 }.joined(separator: "\n") + "\n" }
        return s
    }

    /// Runs `livebus`; returns the process exit code.
    public static func run(_ argv: [String]) -> Int32 {
        // A reader that goes away (`livebus man livebus | head -1`) gives EPIPE, not a SIGPIPE death (exit 141):
        // every command then ends quietly with 0, as the ones running an event loop (which ignores it) do.
        signal(SIGPIPE, SIG_IGN)
        let json = argv.contains("--json") || argv.contains("-j")
        let out = Output(json: json)
        guard let first = argv.first else {
            print(help)
            return 0
        }
        if first == "--version" || first == "version" {
            out.success("livebus \(liveBusVersion)", data: .object(["version": .string(liveBusVersion)]))
            return 0
        }
        if first == "--help" || first == "-h" || first == "help" {
            let words = argv.dropFirst().filter { $0 != "--json" && $0 != "-j" }
            if words.count > 1 {
                out.failure(
                    .usage(
                        "unexpected argument '\(words[words.startIndex + 1])' for `livebus help`",
                        recovery: "livebus help [COMMAND]"
                    )
                )
                return ExitCode.usage.rawValue
            }
            if argv.count > 1, let c = commands.first(where: { $0.name == argv[1] }) {
                print(help(for: c), terminator: "")
                return 0
            } else if argv.count > 1 {
                out.failure(unknownCommand(argv[1]))
                return ExitCode.usage.rawValue
            }
            print(help)
            return 0
        }
        var rest = Array(argv.dropFirst())
        if rest.contains("--help") || rest.contains("-h"), let c = commands.first(where: { $0.name == first }) {
            print(help(for: c), terminator: "")
            return 0
        }
        if first == "__complete" { return complete(rest) }
        var applied: [(flag: String, source: ConfigSource)] = []
        do throws(CLIError) {
            if !["completion", "man", "config"].contains(first) {
                (rest, applied) = ConfigFile.apply(
                    command: first,
                    argv: rest,
                    environment: ProcessInfo.processInfo.environment,
                    file: try ConfigFile.current()
                )
            }
            switch first {
            case "completion": return try completion(rest, out: out)
            case "man": return try man(rest, out: out)
            case "config": return try config(rest, out: out)
            case "demo": return try DemoCommand.run(rest, json: json)
            case "attach": return try AttachCommand.run(rest, json: json)
            case "status": return try status(rest, out: out)
            case "order": return try order(rest, out: out)
            case "devices": return try devices(rest, out: out)
            case "layout": return try layout(rest, out: out)
            case "schema": return try schema(rest, out: out)
            case "doctor": return try doctor(rest, out: out)
            case "e2e": return try E2ECommand.run(rest, json: json)
            case "posture": return try ControlCommands.posture(rest, out: out)
            case "app-state": return try ControlCommands.appState(rest, out: out)
            case "profile": return try ControlCommands.profile(rest, out: out)
            case "clock": return try ControlCommands.clock(rest, out: out)
            case "push": return try ControlCommands.push(rest, out: out)
            case "publish": return try PublishCommand.run(rest, out: out)
            case "explain": return try ControlCommands.explain(rest, out: out)
            case "backend": return try ControlCommands.backend(rest, out: out)
            case "fault": return try FaultCommand.run(rest, out: out)
            case "watch": return try WatchCommand.run(rest, out: out)
            case "simulate": return try SimulateCommand.run(rest, out: out)
            case "record": return try RecordCommand.run(rest, out: out)
            case "replay": return try ReplayCommand.run(rest, out: out)
            case "dashboard": return try DashboardCommand.run(rest, out: out)
            default:
                throw unknownCommand(first)
            }
        } catch {
            let e = ConfigFile.annotate(error, applied: applied)
            out.failure(e)
            return e.exit.rawValue
        }
    }

    /// `livebus __complete [--livebusd] WORD…` (hidden; the completion scripts call it): one candidate a line.
    static func complete(_ words: [String]) -> Int32 {
        if words.first == "--livebusd" {
            for c in Completion.daemonCandidates(Array(words.dropFirst())) { print(c) }
            return 0
        }
        var socket = ProcessInfo.processInfo.environment["LIVEBUS_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        if let i = words.firstIndex(of: "--socket"), i + 1 < words.count - 1 { socket = words[i + 1] }
        if socket == nil, let file = try? ConfigFile.current() { socket = file.values["socket"]?.value }
        let source = CompletionSource.live(socket: socket ?? defaultSocketPath())
        for c in Completion.candidates(words.isEmpty ? [""] : words, source: source) { print(c) }
        return 0
    }

    /// `livebus completion bash|zsh|fish`
    static func completion(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "completion", options: [], flags: [])
        try a.allowPositionals(1)
        guard let shell = a.positionals.first else {
            throw .usage(
                "livebus completion needs a shell: bash, zsh or fish",
                recovery: "source <(livebus completion bash)"
            )
        }
        guard let script = Completion.script(shell) else {
            let close = NearMatch.closest(shell, among: ["bash", "zsh", "fish"], limit: 1).first
            throw .usage(
                "unknown shell '\(shell)'; completion is written for bash, zsh and fish"
                    + (close.map { "; did you mean \($0)?" } ?? ""),
                recovery: "livebus completion bash"
            )
        }
        print(script, terminator: "")
        return 0
    }

    /// `livebus man livebus|livebusd [--output DIR]`
    static func man(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "man", options: ["output"], flags: [])
        try a.allowPositionals(1)
        let pages = ["livebus": ("livebus.1", ManPage.livebus), "livebusd": ("livebusd.8", ManPage.livebusd)]
        guard let name = a.positionals.first, let (file, text) = pages[name] else {
            let close = a.positionals.first.flatMap {
                NearMatch.closest($0, among: ["livebus", "livebusd"], limit: 1).first
            }
            throw .usage(
                a.positionals.first.map { "no man page '\($0)'" + (close.map { "; did you mean \($0)?" } ?? "") }
                    ?? "livebus man needs livebus or livebusd",
                recovery: "livebus man livebus | man -l -"
            )
        }
        guard let dir = a.value("output") else {
            print(text, terminator: "")
            return 0
        }
        print(try writeFile(text, named: file, in: dir))
        return 0
    }

    /// Creates `dir` and its missing parents (mode 0755), then writes `text` to `dir/name` (mode 0644), with
    /// POSIX calls so that a failure names the path that failed and the system's reason (`strerror`, errno name).
    /// - Returns: The file's path.
    /// - Throws: ``CLIError`` `cannotWrite` (exit 2): "cannot create directory P: Permission denied (EACCES)",
    ///   "P is not a directory", or "cannot write P: …".
    static func writeFile(_ text: String, named name: String, in dir: String) throws(CLIError) -> String {
        func fail(_ what: String, _ code: Int32) -> CLIError {
            CLIError(
                "cannotWrite",
                "\(what): \(String(cString: strerror(code))) (\(LoopError(-code, "").name))",
                recovery: "choose a --output directory you can write, or create it first",
                exit: .usage
            )
        }
        var prefix = dir.hasPrefix("/") ? "" : "."
        for part in dir.split(separator: "/") where !part.isEmpty {
            prefix += "/" + part
            var st = stat()
            if stat(prefix, &st) == 0 {
                guard (st.st_mode & S_IFMT) == S_IFDIR else {
                    throw CLIError(
                        "cannotWrite",
                        "\(prefix) is not a directory (ENOTDIR)",
                        recovery: "choose a --output directory you can write, or create it first",
                        exit: .usage
                    )
                }
                continue
            }
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw fail("cannot create directory \(prefix)", errno)
            }
        }
        let path = (dir as NSString).appendingPathComponent(name)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw fail("cannot write \(path)", errno) }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let code = errno
                close(fd)
                throw fail("cannot write \(path)", code)
            }
            done += n
        }
        guard close(fd) == 0 else { throw fail("cannot write \(path)", errno) }
        return path
    }

    /// `livebus config show [--socket PATH] [--json]`
    static func config(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "config", options: ["socket"], flags: ["json"])
        try a.allowPositionals(1)
        guard a.positionals.first == "show" else {
            throw .usage("livebus config needs show", recovery: "livebus config show")
        }
        let env = ProcessInfo.processInfo.environment
        let path = ConfigFile.discover(from: FileManager.default.currentDirectoryPath, environment: env)
        let file = try path.map { p throws(CLIError) in try ConfigFile.load(p) }
        let given = a.value("socket").map { ["--socket", $0] } ?? []
        var rows: [JSONValue] = []
        var text =
            "config file: \(path ?? "none (livebus.json here or above, or $XDG_CONFIG_HOME/livebus/config.json)")\n"
        let width = (ConfigFile.settings.map(\.key.count).max() ?? 0) + 2
        // The data directory's default resolved: the socket's path + ".d".
        let socketSetting = ConfigFile.settings.first { $0.key == "socket" }
        let socketValue = socketSetting.map { ConfigFile.resolve($0, argv: given, environment: env, file: file).0 }
        for s in ConfigFile.settings {
            var (value, source) = ConfigFile.resolve(s, argv: given, environment: env, file: file)
            if s.key == "daemon.dataDir", source == .default, let socketValue, socketValue.hasPrefix("/") {
                value = socketValue + ".d"
            }
            text += s.key.padding(toLength: width, withPad: " ", startingAt: 0) + value + "  (\(source))\n"
            rows.append(
                .object([
                    "key": .string(s.key), "value": .string(value), "source": .string("\(source)"),
                    "flag": .string("--" + s.flag), "env": s.env.map { .string($0) } ?? .null,
                ])
            )
        }
        text +=
            "(the settings a config file, environment variable or flag sets; the --apns* and --federate* endpoints are livebusd flags only: livebusd --help)\n"
        // The values the commands using them would refuse: the table is still printed, then the refusal (exit 2).
        let problems = ConfigFile.problems(environment: env, file: file)
        guard problems.isEmpty else {
            if !out.json { print(text, terminator: "") }
            throw CLIError(
                "invalidConfig",
                "\(problems.count == 1 ? "a value is" : "\(problems.count) values are") not accepted:\n"
                    + problems.map { "  " + $0 }.joined(separator: "\n"),
                recovery:
                    "fix them in the file (or the environment variable) named; `livebus help CMD` lists what each flag takes",
                exit: .usage
            )
        }
        out.success(
            text,
            data: .object(["file": path.map { .string($0) } ?? .null, "settings": .array(rows)])
        )
        return 0
    }

    /// `unknown command 'X'`, with the nearest command (case-insensitive) as "did you mean".
    static func unknownCommand(_ word: String) -> CLIError {
        // `livebus --socket X status`: an option before the command.
        if word.hasPrefix("-") && word != "-" {
            return CLIError.usage(
                "'\(word)' is an option; options go after the command",
                recovery: "e.g. `livebus status \(word) …`; see `livebus help`"
            )
        }
        let close = NearMatch.closest(word, among: commands.map(\.name), limit: 1).first
        return CLIError.usage(
            "unknown command '\(word)'",
            recovery: close.map { "did you mean `livebus \($0)`? see `livebus help`" } ?? "see `livebus help`"
        )
    }

    static func resultData(_ r: ResultBody) throws(CLIError) -> JSONValue {
        guard r.ok else {
            let e = r.error
            // README's exit codes: a command the daemon refused (a bad argument, an order already delivered, a
            // store or federation that refuses writes) is exit 2 with its code and reason; 1 is for verdicts.
            throw CLIError(
                e?.code ?? "failed",
                e?.message ?? "the daemon refused",
                recovery: e?.recovery,
                exit: .usage
            )
        }
        return r.data ?? .null
    }

    static func status(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "status", options: ["socket"], flags: ["json", "explain"])
        try a.allowPositionals(0)
        let socket = a.value("socket") ?? defaultSocketPath()
        // Every session, in as many answers as it takes (one holds what fits in a frame).
        let data = try StatusPages.all(socket: socket, args: ["explain": .bool(a.flag("explain"))])
        out.success(StatusText.render(data), data: data)
        return 0
    }

    static func order(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "order",
            options: ["socket", "customer", "id", "limit", "offset"],
            flags: ["json"]
        )
        let socket = a.value("socket") ?? defaultSocketPath()
        guard let verb = a.positionals.first else {
            throw .usage("livebus order needs list, create or cancel", recovery: "livebus order list")
        }
        try a.allowPositionals(verb == "list" ? 1 : 2)
        switch verb {
        case "list":
            if a.value("limit") != nil || a.value("offset") != nil {
                let args: [String: JSONValue] = [
                    "limit": .number(Double(try a.uint("limit", default: 100, in: 1...1000))),
                    "offset": .number(Double(try a.uint("offset", default: 0, in: 0...9_007_199_254_740_992))),
                ]
                let data = try resultData(AdminClient.request(socket: socket, command: "order.list", args: args))
                out.success(StatusText.orders(data), data: data)
            } else {
                let data = JSONValue.array(try AdminClient.allOrders(socket: socket))
                out.success(StatusText.orders(data), data: data)
            }
        case "create":
            var args: [String: JSONValue] = [:]
            if let c = a.value("customer") {
                if let problem = Daemon.customerProblem(c) {
                    throw .usage("--customer \(problem)", recovery: "e.g. --customer c7")
                }
                args["customer"] = .string(c)
            }
            if let id = a.value("id") ?? a.positionals.dropFirst().first { args["id"] = .string(id) }
            let data = try resultData(AdminClient.request(socket: socket, command: "order.create", args: args))
            if let order = data["order"]?.stringValue {
                out.success("created order \(order) on \(data["topic"]?.stringValue ?? "orders/\(order)")", data: data)
            } else {
                out.success("order accepted: \(data["message"]?.stringValue ?? "pending")", data: data)
            }
        case "cancel":
            guard let id = a.positionals.dropFirst().first else {
                throw .usage("livebus order cancel needs an order id", recovery: "livebus order cancel A1001")
            }
            let data = try resultData(
                AdminClient.request(socket: socket, command: "order.cancel", args: ["order": .string(id)])
            )
            out.success("canceled order \(id)", data: data)
        default:
            throw .usage("unknown order action '\(verb)'; use list, create or cancel")
        }
        return 0
    }

    static func catalog() throws(CLIError) -> DeviceCatalog {
        do { return try DeviceCatalog.bundled() } catch {
            throw CLIError("catalogUnreadable", error.message, recovery: "rebuild the package", exit: .usage)
        }
    }

    /// The bundled catalog with `--device-file FILE`'s device added (validated like the bundled ones), and that
    /// device's id; the bundled catalog alone without the option.
    static func catalog(deviceFile path: String?) throws(CLIError) -> (DeviceCatalog, String?) {
        guard let path else { return (try catalog(), nil) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError(
                "cannotRead",
                "cannot read --device-file \(path)",
                recovery: "give a readable JSON file with one device in the catalog's format (Protocol/DEVICES.md)",
                exit: .usage
            )
        }
        let id: String
        do throws(LayoutError) {
            id = try DeviceCatalog.register(deviceFile: data)
        } catch {
            throw CLIError(
                "\(error.code)",
                "--device-file \(path): \(error.message)",
                recovery: "fix the field named, see Protocol/DEVICES.md",
                exit: .usage
            )
        }
        return (try catalog(), id)
    }

    static func devices(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        try Arguments(argv, command: "devices", options: [], flags: ["json"]).allowPositionals(0)
        let c = try catalog()
        var text = ""
        for d in c.devices {
            let screens = d.screens.map { s in
                "\(s.name) \(fmt(s.portrait.width))×\(fmt(s.portrait.height)) \(d.unit) @\(fmt(s.scale))x [\(s.usedWhen.map(\.rawValue).joined(separator: "/"))]"
            }
            let extra =
                d.screens.compactMap {
                    $0.hinge.map { h in
                        "\(h.kind.rawValue) (\(h.axisInPortrait.rawValue)): \(fmt(h.flatWidth)) \(d.unit) flat, \(fmt(h.halfOpenedWidth)) \(d.unit) half-opened"
                    }
                }.first ?? ""
            let island = d.screens.contains { $0.dynamicIsland != nil } ? " · Dynamic Island" : ""
            text += "\(d.id.padding(toLength: 18, withPad: " ", startingAt: 0)) \(d.name)\(island)\n"
            for s in screens { text += "    \(s)\n" }
            if !extra.isEmpty { text += "    \(extra)\n" }
        }
        let data = Daemon.jsonValue(c.devices)
        out.success(text, data: data)
        return 0
    }

    static func fmt(_ v: Double) -> String {
        v.rounded() == v ? String(Int(v)) : String(format: "%.1f", v)
    }

    static func measurer() -> (any TextMeasurer, String?) {
        do { return (try FontTextMeasurer(), nil) } catch {
            return (ApproximateTextMeasurer(), "text measured approximately: \(error)")
        }
    }

    static func layout(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "layout",
            options: [
                "device", "posture", "orientation", "window", "screen", "tags", "svg", "os", "keyboard",
                "layout-direction", "dialog", "device-file", "remaining", "status",
                "activity-schema",
            ],
            flags: ["json"]
        )
        try a.allowPositionals(0)
        let (c, fileDevice) = try catalog(deviceFile: a.value("device-file"))
        guard let device = a.value("device") ?? fileDevice else {
            throw .usage("livebus layout needs --device MODEL", recovery: "see `livebus devices` for ids")
        }
        let fold = try a.choice(
            "posture",
            ["flat", "half-opened", "folded"],
            aliases: SessionFlags.postureAliases,
            default: "flat"
        )
        let (m, warning) = measurer()
        let remaining = try a.value("remaining").map { v throws(CLIError) in
            try parseDuration(v, flag: "remaining", allowed: 0...(8 * 3_600_000))
        }
        let schema = try a.value("activity-schema").map { path throws(CLIError) in
            try ActivitySchemaFile.read(path).schema
        }
        do {
            var req = try OfflineLayoutRequest.parse(
                device: device,
                foldState: fold,
                orientation: a.value("orientation") ?? "portrait",
                window: a.value("window") ?? "full",
                screen: a.value("screen") ?? "overlay",
                tags: a.value("tags") ?? "0",
                os: a.value("os") ?? "newest",
                keyboard: a.value("keyboard") ?? "0"
            )
            req.layoutDirection =
                try a.choice("layout-direction", ["ltr", "rtl"], default: "ltr") == "rtl" ? .rtl : .ltr
            if let d = a.value("dialog") {
                guard let size = try OfflineLayoutRequest.parseWindow(d) else {
                    throw CLIError("invalidArgument", "--dialog needs WxH in points, e.g. 270x150", exit: .usage)
                }
                req.dialog = size
            }
            // Check a countdown and a status text offline, in the schema's boxes (issue 16).
            if let remaining { req.liveActivity?.timerText = formatCountdown(remainingMilliseconds: remaining) }
            if let status = a.value("status") { req.liveActivity?.statusText = status }
            if let schema { req.liveActivity?.boxes = PhoneLayout.boxes(schema.presentation) }
            let (input, result) = try OfflineLayout.run(req, catalog: c, measurer: m)
            if let svg = a.value("svg") {
                do {
                    try LiveActivityLayout.svgWithOverflow(LayoutRenderer.svg(result, input: input), result.truncations)
                        .write(toFile: svg, atomically: true, encoding: .utf8)
                } catch {
                    throw CLIError(
                        "cannotWrite",
                        "cannot write \(svg): \(fileErrorReason(error))",
                        recovery: "choose a writable path for --svg",
                        exit: .usage
                    )
                }
            }
            if let warning { StandardStream.err("warning: \(warning)\n") }
            let data = (try? WireJSON.decode(JSONValue.self, from: Array(LayoutRenderer.json(result).utf8))) ?? .null
            var text = LayoutRenderer.text(result, width: 40) + "\n"
            for line in LiveActivityLayout.overflowLines(result.truncations) { text += line + "\n" }
            text += "arrangement: \(result.arrangement) — \(result.reason)\n"
            let failed = result.invariants.filter { !$0.holds }
            if let svg = a.value("svg") { text += "\nSVG written to \(svg)" }
            out.success(text, data: data)
            return failed.isEmpty ? 0 : ExitCode.verdictFailed.rawValue
        } catch {
            guard let e = error as? LayoutError else { throw error as! CLIError }
            throw CLIError(
                "\(e.code)",
                e.message,
                recovery: "see `livebus devices` and `livebus help layout`",
                exit: .usage
            )
        }
    }

    /// `livebus schema import FILE.swift`
    static func schema(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(
            argv,
            command: "schema",
            options: ["output", "countdown", "status"],
            flags: ["json", "allow-partial"]
        )
        try a.allowPositionals(2)
        guard a.positionals.first == "import", a.positionals.count == 2 else {
            throw .usage(
                "livebus schema import FILE.swift",
                recovery: "e.g. livebus schema import RideAttributes.swift --output ride.json"
            )
        }
        let path = a.positionals[1]
        let imported = try SchemaImport.run(path: path, countdown: a.value("countdown"), status: a.value("status"))
        if !imported.skipped.isEmpty, !a.flag("allow-partial") {
            throw CLIError(
                "importIncomplete",
                "could not read everything in \(path); nothing was written:\n  "
                    + imported.skipped.joined(separator: "\n  "),
                recovery: "fix these, or pass --allow-partial to write the rest (the list is printed again)",
                exit: .usage
            )
        }
        for line in imported.skipped { StandardStream.err("skipped: \(line)\n") }
        let skipped = JSONValue.array(imported.skipped.map { .string($0) })
        if let output = a.value("output") {
            do {
                try imported.json.write(toFile: output, atomically: true, encoding: .utf8)
            } catch {
                throw CLIError(
                    "cannotWrite",
                    "cannot write \(output): \(fileErrorReason(error))",
                    recovery: "choose a writable path for --output",
                    exit: .usage
                )
            }
            out.success(
                "activity schema written to \(output)",
                data: .object(["output": .string(output), "skipped": skipped])
            )
        } else {
            let schema = (try? WireJSON.decode(JSONValue.self, from: Array(imported.json.utf8))) ?? .null
            out.success(imported.json, data: .object(["schema": schema, "skipped": skipped]))
        }
        return 0
    }

    static func doctor(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "doctor", options: ["socket"], flags: ["json"])
        try a.allowPositionals(0)
        let socket = a.value("socket") ?? defaultSocketPath()
        var checks: [(String, Bool, String)] = []
        checks.append(("device catalog", (try? DeviceCatalog.bundled()) != nil, "rebuild the package (swift build)"))
        let (_, fontWarning) = measurer()
        checks.append(("font for text measurement (NanumGothic)", fontWarning == nil, "apt-get install fonts-nanum"))
        let pathOK = socket.utf8.count <= PipeListener.maximumPathLength
        checks.append(
            (
                "socket path length (\(socket.utf8.count) ≤ \(PipeListener.maximumPathLength) bytes)", pathOK,
                "use a shorter --socket path, e.g. /tmp/bus.sock"
            )
        )
        let dir = SocketPath.directory(of: socket)
        if dir == SocketPath.fallbackDirectory() && access(dir, F_OK) != 0 {
            checks.append(("socket directory \(dir) (livebusd creates it, mode 0700)", true, ""))
        } else {
            let writable = access(dir, W_OK) == 0
            checks.append(
                (
                    "socket directory \(dir) is " + (writable ? "writable" : "not writable by you"), writable,
                    "choose a --socket in a directory you can write"
                )
            )
        }
        if let e = SocketPath.preparePrivateDirectory(for: socket, create: false), e.name != "ENOENT" {
            checks.append(("socket directory is private to you", false, e.message))
        }
        let probe = SocketProbe.probe(path: socket)
        let fix: String
        switch probe {
        case .stale:
            fix = "a stale socket file of yours is left (nothing listens): start livebusd, it removes it"
        case .foreign(let owner):
            // Another user's socket is never "stale" to us: only its owner may remove it (issue 14).
            fix = CLIError.foreignSocket(socket, owner: owner).message + "; start your own: livebusd"
        case .undecided(let code):
            fix =
                "connect fails (\(String(cString: strerror(code)))), so whether a daemon serves it cannot be told; check its owner and mode (ls -l \(socket))"
        case .notSocket:
            fix = "\(socket) is not a socket; remove it or choose another --socket"
        case .absent, .live:
            fix = "start one: livebusd --socket \(socket)"
        }
        // The daemon check decides the exit code when it fails (README "Exit codes": 3 unreachable, 4 timed out);
        // any other failed check is 1.
        var daemonExit: ExitCode?
        if probe == .live {
            let answer = answerCheck(socket: socket)
            checks.append(answer.check)
            daemonExit = answer.exit
            if let status = answer.status { checks.append(storeCheck(status: status)) }
        } else {
            checks.append(("daemon answering on \(socket)", false, fix))
            daemonExit = .daemonUnreachable
        }
        var text = ""
        for (name, ok, fix) in checks { text += (ok ? "✓ " : "✗ ") + name + (ok ? "" : " — \(fix)") + "\n" }
        let data: JSONValue = .array(
            checks.map { .object(["check": .string($0.0), "ok": .bool($0.1), "fix": $0.1 ? .null : .string($0.2)]) }
        )
        let exit = daemonExit?.rawValue ?? (checks.allSatisfy(\.1) ? 0 : ExitCode.verdictFailed.rawValue)
        // The envelope's "ok" is the exit code's verdict (fresh-user review F6: "ok": true beside a failed check).
        if out.json {
            out.printJSON(JSONValue.object(["ok": .bool(exit == 0), "data": data]))
        } else {
            out.success(text, data: data)
        }
        return exit
    }
}
