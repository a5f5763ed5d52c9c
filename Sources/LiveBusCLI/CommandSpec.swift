import Foundation

/// What the help texts say about a command's flags and arguments, read from the usage lines that `livebus help`
/// prints (and the OPTIONS of `livebusd --help`), so that help, shell completion and the man pages have one source.
///
/// A usage line reads `livebus NAME [--flag VALUE] [--bool] POSITIONAL [OPTIONAL]...`; alternatives are separated
/// by `|`, variants of one command by ` · ` (`livebus fault list · livebus fault remove ID`), verbs by ` | ` at the
/// top level (`livebus order list … | create … | cancel ORDER-ID`). A value written in lowercase (`flat|folded`,
/// `on|off`) is a literal choice; one with an uppercase letter (`FILE`, `MODEL`, `±DURATION`, `WxH`) is a
/// placeholder.
struct CommandSpec: Sendable, Equatable {
    /// One flag: `--name`, and the value it takes (nil for a boolean flag).
    struct Flag: Sendable, Equatable {
        var name: String
        /// The value's alternatives as written (`["flat", "half-opened", "folded"]`, `["FILE"]`), nil for a boolean.
        var value: [String]?
        /// The literal choices among the alternatives (lowercase words).
        var choices: [String] { (value ?? []).filter(CommandSpec.isLiteral) }
    }

    /// One argument slot: its alternatives (`["SESSION"]`, `["list"]`, `["ID", "PRESET"]`) and whether it may be left
    /// out.
    struct Slot: Sendable, Equatable {
        var alternatives: [String]
        var optional: Bool
        var repeats: Bool
        var choices: [String] { alternatives.filter(CommandSpec.isLiteral) }
        var placeholders: [String] { alternatives.filter { !CommandSpec.isLiteral($0) } }
    }

    /// The flags, in the order the usage gives them (each once).
    var flags: [Flag]
    /// The argument slots of each variant.
    var variants: [[Slot]]

    /// Whether an alternative is a literal word (`flat`, `3g`, `half-opened`) rather than a placeholder (`FILE`).
    static func isLiteral(_ word: String) -> Bool {
        !word.isEmpty && !word.hasPrefix("-") && word.allSatisfy { $0.isLowercase || $0.isNumber || "-_.".contains($0) }
    }

    /// Reads a `livebus` command's usage line.
    /// - Parameters:
    ///   - usage: The usage as `livebus help NAME` prints it.
    ///   - command: The command's name (each variant starts with `livebus NAME`).
    /// - Returns: The flags and argument slots the usage shows.
    static func parse(usage: String, command: String) -> CommandSpec {
        var flags: [Flag] = []
        var variants: [[Slot]] = []
        for variantText in usage.components(separatedBy: " · ") {
            var words = variantText.split(separator: " ").map(String.init)
            if words.first == "livebus" { words.removeFirst() }
            if words.first == command { words.removeFirst() }
            // Top-level ` | ` separates verbs with their own arguments (`order list … | create …`).
            var groups: [[String]] = [[]]
            var depth = 0
            for w in words {
                if w == "|" && depth == 0 {
                    groups.append([])
                    continue
                }
                groups[groups.count - 1].append(w)
                depth += w.filter { $0 == "[" }.count - w.filter { $0 == "]" }.count
            }
            for group in groups {
                var slots: [Slot] = []
                var depth = 0
                var i = 0
                while i < group.count {
                    let raw = group[i]
                    let opensHere = raw.hasPrefix("[")
                    let closesHere = raw.hasSuffix("]") || raw.hasSuffix("]...")
                    let optional = depth > 0 || opensHere
                    depth += raw.filter { $0 == "[" }.count - raw.filter { $0 == "]" }.count
                    let word = raw.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                    let repeats = word.hasSuffix("...")
                    let parts = (repeats ? String(word.dropLast(3)) : word).trimmingCharacters(
                        in: CharacterSet(charactersIn: "[]")
                    ).split(separator: "|").map(String.init)
                    i += 1
                    let flagParts = parts.filter { $0.hasPrefix("--") }
                    let valueParts = parts.filter { !$0.hasPrefix("-") || $0 == "-" }
                    if flagParts.isEmpty {
                        slots.append(Slot(alternatives: parts, optional: optional, repeats: repeats))
                        continue
                    }
                    if let last = parts.last, last.hasPrefix("--") {
                        // `ID|PRESET|--all`: the values are an argument slot too.
                        if !valueParts.isEmpty {
                            slots.append(Slot(alternatives: valueParts, optional: optional, repeats: repeats))
                        }
                        // The flag that ends a word takes the next word as its value, unless a group closes here or
                        // the next word is another flag, a group or an alternative.
                        for f in flagParts.dropLast() { add(&flags, Flag(name: String(f.dropFirst(2)), value: nil)) }
                        var value: [String]?
                        if !closesHere, i < group.count, !group[i].hasPrefix("["), !group[i].hasPrefix("-"),
                            group[i] != "|"
                        {
                            let next = group[i]
                            depth += next.filter { $0 == "[" }.count - next.filter { $0 == "]" }.count
                            value = next.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                                .replacingOccurrences(of: "...", with: "")
                                .split(separator: "|").map(String.init).filter { !$0.hasPrefix("--") }
                            for f in next.split(separator: "|") where f.hasPrefix("--") {
                                add(
                                    &flags,
                                    Flag(name: String(f.dropFirst(2)).trimmingCharacters(in: ["]"]), value: nil)
                                )
                            }
                            i += 1
                        }
                        add(&flags, Flag(name: String(last.dropFirst(2)), value: value))
                    } else {
                        // `ID|PRESET|--all`: an argument slot whose alternatives include a flag.
                        for f in flagParts { add(&flags, Flag(name: String(f.dropFirst(2)), value: nil)) }
                        slots.append(Slot(alternatives: valueParts, optional: optional, repeats: repeats))
                    }
                }
                variants.append(slots)
            }
        }
        return CommandSpec(flags: flags, variants: variants)
    }

    private static func add(_ flags: inout [Flag], _ flag: Flag) {
        if let i = flags.firstIndex(where: { $0.name == flag.name }) {
            if flags[i].value == nil, flag.value != nil { flags[i].value = flag.value }
        } else {
            flags.append(flag)
        }
    }

    /// The flag named `name`, if the usage has it.
    func flag(_ name: String) -> Flag? { flags.first { $0.name == name } }
}

/// One option of `livebusd --help`: `--name VALUE`, its description, and the section it is listed in.
struct DaemonOption: Sendable, Equatable {
    var name: String
    /// The value as written (`PATH`, `N`, `D`, `normal|full`), nil for a boolean flag.
    var value: String?
    var description: String
    /// `OPTIONS` or the `LIMITS …` heading.
    var section: String
}

/// The sections of `livebusd --help`: heading and body lines (without the two-space indent).
struct HelpSections {
    var title: String
    var sections: [(heading: String, lines: [String])]

    /// Splits a help text at its unindented headings; the first line is the title.
    init(_ text: String) {
        let lines = text.components(separatedBy: "\n")
        title = lines.first ?? ""
        sections = []
        for line in lines.dropFirst() {
            if line.isEmpty {
                if !sections.isEmpty { sections[sections.count - 1].lines.append("") }
            } else if !line.hasPrefix(" ") {
                sections.append((line, []))
            } else if !sections.isEmpty {
                sections[sections.count - 1].lines.append(String(line.dropFirst(2)))
            }
        }
        for i in sections.indices {
            while sections[i].lines.last == "" { sections[i].lines.removeLast() }
        }
    }

    /// `--flag VALUE   description` → (`--flag VALUE`, `description`): the term ends at the first run of two
    /// spaces; without one (`--scenario NAME|FILE demo-120s, …`) it is the flag and a value written in capitals or
    /// with `|`.
    static func splitTerm(_ line: String) -> (term: String, rest: String) {
        if let gap = line.range(of: "  ") {
            return (String(line[..<gap.lowerBound]), line[gap.upperBound...].trimmingCharacters(in: .whitespaces))
        }
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        if words.count > 1, words[1].contains("|") || words[1] == words[1].uppercased() {
            return (words[0] + " " + words[1], words.count > 2 ? words[2] : "")
        }
        return (words[0], words.dropFirst().joined(separator: " "))
    }

    /// The option entries of the sections whose heading starts with OPTIONS or LIMITS: an entry starts with `--`,
    /// the term ends at the first run of two spaces, more-indented lines continue the description.
    var daemonOptions: [DaemonOption] { options { $0.hasPrefix("OPTIONS") || $0.hasPrefix("LIMITS") } }

    /// The `--name VALUE  description` lines of the sections whose heading `wanted` accepts.
    func options(in wanted: (String) -> Bool) -> [DaemonOption] {
        var result: [DaemonOption] = []
        for (heading, lines) in sections where wanted(heading) {
            for line in lines {
                if line.hasPrefix("--") {
                    let (term, rest) = Self.splitTerm(line)
                    let words = term.split(separator: " ").map(String.init)
                    result.append(
                        DaemonOption(
                            name: String(words[0].dropFirst(2)),
                            value: words.count > 1 ? words[1] : nil,
                            description: rest,
                            section: heading
                        )
                    )
                } else if !result.isEmpty, !line.trimmingCharacters(in: .whitespaces).isEmpty {
                    result[result.count - 1].description += " " + line.trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return result
    }
}
