import Foundation
import LiveBusFaults
import LiveBusLayout
import LiveBusSimulator
import LiveBusWire

/// Where completion gets live values: the running daemon when one answers, else the offline fallbacks.
struct CompletionSource: Sendable {
    /// Attached session names (from `status`); empty when no daemon answers.
    var sessions: @Sendable () -> [String]
    /// Device ids the daemon accepts, else the bundled catalog's.
    var devices: @Sendable () -> [String]
    /// Order ids (from `order list`); empty when no daemon answers.
    var orders: @Sendable () -> [String]
    /// Toxic ids set now (from `fault list`); empty when no daemon answers.
    var faults: @Sendable () -> [String] = { [] }

    /// Asks the daemon at `socket`, with a short timeout (a completion must not hang the shell), and falls back to
    /// the bundled catalog for device ids.
    static func live(socket: String) -> CompletionSource {
        CompletionSource(
            sessions: {
                guard case .array(let list)? = (try? StatusPages.all(socket: socket, timeoutMs: 700))?["sessions"]
                else { return [] }
                // Attached phones only (the names session commands accept), not recorders or observers.
                return list.compactMap { $0["role"]?.stringValue == "session" ? $0["name"]?.stringValue : nil }
            },
            devices: {
                if let r = try? AdminClient.request(socket: socket, command: "devices", timeoutMs: 700), r.ok,
                    case .array(let list)? = r.data
                {
                    return list.compactMap(\.stringValue)
                }
                return ((try? DeviceCatalog.bundled())?.devices ?? []).map(\.id)
            },
            orders: {
                ((try? AdminClient.allOrders(socket: socket, timeoutMs: 700)) ?? []).compactMap {
                    $0["id"]?.stringValue
                }
            },
            faults: {
                guard let r = try? AdminClient.request(socket: socket, command: "fault.list", timeoutMs: 700), r.ok,
                    case .array(let list)? = r.data
                else { return [] }
                return list.flatMap { entry -> [String] in
                    guard case .array(let toxics)? = entry["toxics"] else { return [] }
                    return toxics.compactMap { $0["id"]?.stringValue }
                }
            }
        )
    }
}

/// Shell completion for `livebus` and `livebusd`, computed from the same usage lines `livebus help` prints
/// (``CommandSpec``) and the OPTIONS of `livebusd --help`. The scripts (`livebus completion bash|zsh|fish`) call
/// `livebus __complete WORD…` with the words after the program name, the last one being the word under the
/// cursor; it prints one candidate a line, or `:file` when the shell should complete a file name.
enum Completion {
    /// The marker line asking the shell for file-name completion.
    static let fileMarker = ":file"

    /// The candidates for the last of `words` (the words after `livebus`).
    static func candidates(_ words: [String], source: CompletionSource) -> [String] {
        guard let current = words.last else { return [] }
        let visible = LivebusCommand.commands.map(\.name)
        if words.count == 1 {
            return filter(visible + ["--help", "--version"], current)
        }
        let command = words[0]
        if command == "help" { return words.count == 2 ? filter(visible, current) : [] }
        guard let c = LivebusCommand.commands.first(where: { $0.name == command }) else { return [] }
        let spec = CommandSpec.parse(usage: c.usage, command: c.name)
        var positionals: [String] = []
        var pending: CommandSpec.Flag?
        for w in words.dropFirst().dropLast() {
            if pending != nil {
                pending = nil
            } else if w.hasPrefix("--"), !w.contains("="), let f = spec.flag(String(w.dropFirst(2))) {
                pending = f.value == nil ? nil : f
            } else if !w.hasPrefix("-") || w == "-" {
                positionals.append(w)
            }
        }
        if let pending { return values(for: pending, current, source: source) }
        if current.hasPrefix("-") {
            var all = spec.flags.map { "--" + $0.name } + ["--help"]
            if spec.flag("json") != nil { all.append("-j") }
            return filter(all, current)
        }
        return filter(slotCandidates(spec, typed: positionals, source: source), current)
    }

    /// The candidates for `livebusd`'s last word.
    static func daemonCandidates(_ words: [String]) -> [String] {
        guard let current = words.last else { return [] }
        let help = HelpSections(LivebusdCommand.help)
        // The APNs endpoint's flags have their own section (`APNs ENDPOINT`).
        let options = help.daemonOptions + help.options { $0.hasPrefix("APNs") }
        if words.count >= 2, let previous = words.dropLast().last, previous.hasPrefix("--"),
            let o = options.first(where: { $0.name == String(previous.dropFirst(2)) }), let value = o.value
        {
            let parts = value.split(separator: "|").map(String.init)
            if o.name == "scenario" { return [fileMarker] + filter(scenarioNames, current) }
            if parts.contains(where: { ["FILE", "PATH", "DIR"].contains($0) }) {
                return [fileMarker] + parts.filter(CommandSpec.isLiteral)
            }
            if o.name == "log-level" { return filter(["debug", "info", "notice", "warning", "error"], current) }
            return filter(parts.filter(CommandSpec.isLiteral), current)
        }
        return filter(options.map { "--" + $0.name }, current)
    }

    static func filter(_ words: [String], _ prefix: String) -> [String] {
        var seen: Set<String> = []
        return words.filter { $0.hasPrefix(prefix) && seen.insert($0).inserted }
    }

    static func isFile(_ placeholder: String) -> Bool {
        ["FILE", "PATH", "DIR", "FILE.swift"].contains(placeholder)
    }

    /// The scenarios `--scenario NAME` takes by name (a file is the other choice).
    static var scenarioNames: [String] { Scenario.builtInNames + ["random"] }

    static func values(for flag: CommandSpec.Flag, _ current: String, source: CompletionSource) -> [String] {
        let alternatives = flag.value ?? []
        switch flag.name {
        case "device": return filter(source.devices(), current)
        case "session": return filter(source.sessions(), current)
        case "scenario": return [fileMarker] + filter(scenarioNames, current)
        case "topic": return filter(source.orders().map { "orders/\($0)" } + [">", "orders/*"], current)
        default: break
        }
        if alternatives.contains(where: isFile) { return [fileMarker] }
        if alternatives.contains("MODEL") { return filter(source.devices(), current) }
        if alternatives.contains("ID") && flag.name == "order" { return filter(source.orders(), current) }
        return filter(flag.choices, current)
    }

    /// What may come at argument slot `typed.count`, in every variant whose earlier slots fit the typed words.
    static func slotCandidates(_ spec: CommandSpec, typed: [String], source: CompletionSource) -> [String] {
        var result: [String] = []
        for slots in spec.variants where !slots.isEmpty {
            func slot(_ k: Int) -> CommandSpec.Slot? {
                k < slots.count ? slots[k] : (slots.last!.repeats ? slots.last : nil)
            }
            let fits = typed.indices.allSatisfy { k in
                guard let s = slot(k) else { return false }
                return !s.placeholders.isEmpty || s.choices.contains(typed[k])
            }
            guard fits, let s = slot(typed.count) else { continue }
            result += s.choices
            for p in s.placeholders {
                switch p {
                case "SESSION", "TARGET": result += source.sessions() + ["all", "current"]
                case "COMMAND": result += LivebusCommand.commands.map(\.name)
                case "ORDER", "ORDER-ID": result += source.orders()
                case "MODEL": result += source.devices()
                case "TOXIC": result += FaultCommand.toxics
                case "ID": result += source.faults()  // `fault remove ID|PRESET`, the only positional ID
                case "PRESET": result += NetworkPreset.allCases.map(\.rawValue)
                default: if isFile(p) { return [fileMarker] }
                }
            }
        }
        return result
    }

    /// The completion script for `shell` (bash, zsh or fish).
    static func script(_ shell: String) -> String? {
        switch shell {
        case "bash": return bash
        case "zsh": return zsh
        case "fish": return fish
        default: return nil
        }
    }

    static let bash = """
        # bash completion for livebus and livebusd (generated by `livebus completion bash`; the candidates come from
        # `livebus __complete`, which reads `livebus help`'s usage lines and asks a running daemon for sessions).
        _livebus() {
            local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} mode=() out
            [[ ${prog##*/} == livebusd ]] && { mode=(--livebusd); prog=livebus; }
            out=$("$prog" __complete "${mode[@]}" "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
            local IFS=$'\\n'
            if [[ $out == :file* ]]; then
                COMPREPLY=($(compgen -f -- "$cur") $(compgen -W "${out#:file}" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "$out" -- "$cur"))
            fi
        }
        complete -o filenames -F _livebus livebus livebusd

        """

    static let zsh = """
        #compdef livebus livebusd
        # zsh completion for livebus and livebusd (generated by `livebus completion zsh`).
        _livebus() {
            local -a mode cands
            [[ $service == livebusd ]] && mode=(--livebusd)
            cands=("${(@f)$(livebus __complete $mode "${(@)words[2,CURRENT]}" 2>/dev/null)}")
            if [[ ${cands[1]} == :file* ]]; then
                _files
                (( ${#cands} > 1 )) && compadd -a 'cands[2,-1]'
            else
                compadd -a cands
            fi
        }
        if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
            _livebus "$@"
        else
            compdef _livebus livebus livebusd
        fi

        """

    static let fish = """
        # fish completion for livebus and livebusd (generated by `livebus completion fish`).
        function __livebus_complete
            set -l tokens (commandline -opc)
            set -l cur (commandline -ct)
            set -l mode
            if test (basename -- $tokens[1]) = livebusd
                set mode --livebusd
            end
            set -l out (livebus __complete $mode $tokens[2..-1] "$cur" 2>/dev/null)
            if string match -q -- ':file*' "$out[1]"
                __fish_complete_path "$cur"
                printf '%s\n' $out[2..-1]
            else
                printf '%s\\n' $out
            end
        end
        complete -c livebus -f -a '(__livebus_complete)'
        complete -c livebusd -f -a '(__livebus_complete)'

        """
}
