import Foundation
import LiveBusActivity

/// `livebus schema import Attributes.swift`: writes an activity schema from the app's own Swift source, read with the
/// toolchain's parser (`swiftc -dump-parse`), never a hand-written Swift parser.
///
/// The compiler's text dump is used: Swift 6.3's `-dump-parse -dump-ast-format json` omits type annotations and
/// inheritance clauses before type checking (they are empty strings), which the schema needs. From the dump it takes
/// the `ActivityAttributes` struct (the struct declaring a nested `ContentState`), the stored properties with their
/// types, `CodingKeys` raw values, enums with their cases, nested structs, and in a custom `init(from:)` how each
/// `Date` is built (`Date(timeIntervalSince1970:)`, `/ 1000`, `timeIntervalSinceReferenceDate`,
/// `ISO8601DateFormatter`). Raw-value literals and an enum's raw type are read from the source at the positions the
/// compiler reports. Whatever it cannot read is listed; without `--allow-partial` that is an error (exit 2) and no
/// schema is written.
enum SchemaImport {
    /// One node of the compiler's S-expression dump.
    final class Node {
        var kind = ""
        /// The first quoted string after the kind (a declaration's name).
        var name: String?
        var attributes: [String: String] = [:]
        /// Bare words after the kind (`let`, `static`, `designated`).
        var words: Set<String> = []
        /// `range=[file:L:C - line:L:C]`: 1-based start and end (the end is the start of the last token).
        var start: (line: Int, column: Int)?
        var end: (line: Int, column: Int)?
        var children: [Node] = []

        func all(_ kind: String) -> [Node] {
            var found: [Node] = []
            func visit(_ n: Node) {
                if n.kind == kind { found.append(n) }
                n.children.forEach(visit)
            }
            children.forEach(visit)
            return found
        }
    }

    /// Parses `swiftc -dump-parse` output.
    static func parseDump(_ text: String) -> Node? {
        let chars = Array(text.unicodeScalars)
        var i = 0
        func skipSpace() { while i < chars.count, chars[i] == " " || chars[i] == "\n" || chars[i] == "\t" { i += 1 } }
        func quoted() -> String {
            // At the opening quote.
            i += 1
            var out = String.UnicodeScalarView()
            while i < chars.count, chars[i] != "\"" {
                if chars[i] == "\\", i + 1 < chars.count { i += 1 }
                out.append(chars[i])
                i += 1
            }
            i += 1
            return String(out)
        }
        func word() -> String {
            var out = String.UnicodeScalarView()
            var depth = 0
            while i < chars.count {
                let c = chars[i]
                if depth == 0, c == " " || c == "\n" || c == ")" || c == "(" { break }
                if c == "[" { depth += 1 }
                if c == "]" { depth -= 1 }
                if c == "\"" {
                    out.append(contentsOf: "\"\(quoted())\"".unicodeScalars)
                    continue
                }
                out.append(c)
                i += 1
            }
            return String(out)
        }
        func node() -> Node? {
            guard i < chars.count, chars[i] == "(" else { return nil }
            i += 1
            let n = Node()
            n.kind = word()
            while true {
                skipSpace()
                guard i < chars.count else { return n }
                if chars[i] == ")" {
                    i += 1
                    return n
                }
                if chars[i] == "(" {
                    if let child = node() { n.children.append(child) }
                    continue
                }
                if chars[i] == "\"" {
                    let s = quoted()
                    if n.name == nil { n.name = s }
                    continue
                }
                let w = word()
                if w.isEmpty {
                    i += 1
                    continue
                }
                if let eq = w.firstIndex(of: "=") {
                    var value = String(w[w.index(after: eq)...])
                    if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                        value = String(value.dropFirst().dropLast())
                    }
                    let key = String(w[..<eq])
                    n.attributes[key] = value
                    if key == "range" { (n.start, n.end) = range(value) }
                } else {
                    n.words.insert(w)
                }
            }
        }
        skipSpace()
        return node()
    }

    /// `[A.swift:4:9 - line:4:20]` → ((4, 9), (4, 20)).
    static func range(_ text: String) -> ((Int, Int)?, (Int, Int)?) {
        let parts = text.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).components(separatedBy: " - ")
        func position(_ s: String) -> (Int, Int)? {
            let fields = s.split(separator: ":")
            guard fields.count >= 2, let l = Int(fields[fields.count - 2]), let c = Int(fields[fields.count - 1]) else {
                return nil
            }
            return (l, c)
        }
        return (parts.first.flatMap(position), parts.count > 1 ? position(parts[1]) : nil)
    }

    struct Imported {
        var json: String
        var skipped: [String]
    }

    /// Imports `path`.
    /// - Parameters:
    ///   - path: The Swift file.
    ///   - countdown: The content-state field (JSON key) the countdown counts to, or `nil` for the first Date.
    ///   - status: The content-state field shown as status, or `nil` for the first String or enum.
    /// - Returns: The schema JSON and what was skipped.
    /// - Throws: `CLIError` when the compiler cannot be run or parse the file, or nothing usable is found.
    static func run(path: String, countdown: String?, status: String?) throws(CLIError) -> Imported {
        guard let source = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CLIError("fileUnreadable", "cannot read \(path)", recovery: "check the path", exit: .usage)
        }
        let dump = try compilerDump(path)
        guard let root = parseDump(dump) else {
            throw CLIError("importFailed", "could not read the compiler's dump of \(path)", exit: .usage)
        }
        let lines = source.components(separatedBy: "\n")
        var importer = Importer(root: root, lines: lines, file: path)
        return try importer.build(countdown: countdown, status: status)
    }

    /// The compiler: `$SWIFTC`, else `/opt/swift/usr/bin/swiftc`, else `swiftc` on the PATH.
    static func compilerDump(_ path: String) throws(CLIError) -> String {
        let env = ProcessInfo.processInfo.environment
        var candidates = [env["SWIFTC"], "/opt/swift/usr/bin/swiftc"].compactMap { $0 }
        for dir in (env["PATH"] ?? "").split(separator: ":") { candidates.append("\(dir)/swiftc") }
        guard let swiftc = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw CLIError(
                "compilerNotFound",
                "swiftc was not found; the importer reads Swift with the toolchain's own parser",
                recovery: "install a Swift toolchain or set SWIFTC=/path/to/swiftc",
                exit: .usage
            )
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: swiftc)
        p.arguments = ["-dump-parse", path]
        // One pipe for both streams (the dump and any diagnostics), read to the end before waiting.
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        do { try p.run() } catch {
            throw CLIError("compilerNotFound", "cannot run \(swiftc): \(error.localizedDescription)", exit: .usage)
        }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0, text.contains("(source_file") else {
            let firstError = text.split(separator: "\n").first { $0.contains("error:") }.map(String.init)
            throw CLIError(
                "importFailed",
                "swiftc could not parse \(path): \(firstError ?? String(text.prefix(300)))",
                recovery: "fix the Swift syntax error first; nothing was written",
                exit: .usage
            )
        }
        return String(text[text.range(of: "(source_file")!.lowerBound...])
    }
}

/// Turns the dump into schema JSON.
private struct Importer {
    let root: SchemaImport.Node
    let lines: [String]
    let file: String
    var skipped: [String] = []
    var types: [String: SchemaImport.Node] = [:]
    var usedTypes: [String] = []

    init(root: SchemaImport.Node, lines: [String], file: String) {
        self.root = root
        self.lines = lines
        self.file = file
        for kind in ["struct_decl", "enum_decl"] {
            for decl in root.all(kind) {
                guard let name = decl.name, name != "CodingKeys", name != "ContentState" else { continue }
                types[name] = decl
            }
        }
    }

    func q(_ s: String) -> String { ContentStateJSON.quoted(s) }

    /// The source text from a reported position to the end of the token there.
    func token(at position: (line: Int, column: Int)) -> String? {
        guard position.line >= 1, position.line <= lines.count else { return nil }
        let scalars = Array(lines[position.line - 1].utf8)
        var i = position.column - 1
        guard i >= 0, i < scalars.count else { return nil }
        var out: [UInt8] = []
        if scalars[i] == UInt8(ascii: "\"") {
            out.append(scalars[i])
            i += 1
            while i < scalars.count {
                out.append(scalars[i])
                if scalars[i] == UInt8(ascii: "\\"), i + 1 < scalars.count {
                    i += 1
                    out.append(scalars[i])
                } else if scalars[i] == UInt8(ascii: "\"") {
                    break
                }
                i += 1
            }
        } else {
            while i < scalars.count, scalars[i] != UInt8(ascii: " "), scalars[i] != UInt8(ascii: ","),
                scalars[i] != UInt8(ascii: "}"), scalars[i] != UInt8(ascii: ";")
            {
                out.append(scalars[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The inheritance clause text of a declaration: the source between its start and the first `{`.
    func header(_ decl: SchemaImport.Node) -> String {
        guard let start = decl.start, start.line <= lines.count else { return "" }
        var text = ""
        for l in (start.line - 1)..<min(lines.count, start.line + 3) {
            let line = l == start.line - 1 ? String(lines[l].utf8.dropFirst(start.column - 1)) ?? lines[l] : lines[l]
            if let brace = line.firstIndex(of: "{") {
                text += line[..<brace]
                break
            }
            text += line + " "
        }
        return text
    }

    /// A compiler type node as the schema's Swift spelling, or `nil` (recorded as skipped).
    mutating func typeText(_ node: SchemaImport.Node, field: String) -> String? {
        switch node.kind {
        case "type_unqualified_ident", "type_member_ident":
            guard let id = node.attributes["id"] else { break }
            switch id {
            case "String", "Int", "Double", "Bool", "Date", "URL": return id
            case "Float", "CGFloat": return "Double"
            case "Int64", "Int32", "UInt", "UInt64", "UInt32": return "Int"
            default:
                guard let decl = types[id] else {
                    skipped.append("\(field): type \(id) is not declared in \(file); its fields are unknown")
                    return nil
                }
                if decl.kind == "enum_decl", rawType(decl) == nil {
                    skipped.append(
                        "\(field): enum \(id) has no String or Int raw type (its JSON form is not a plain value)"
                    )
                    return nil
                }
                if !usedTypes.contains(id) { usedTypes.append(id) }
                return id
            }
        case "type_optional", "type_implicitly_unwrapped_optional":
            guard let inner = node.children.first, let text = typeText(inner, field: field) else { return nil }
            return text.hasSuffix("?") ? text : text + "?"
        case "type_array":
            guard let inner = node.children.first, let text = typeText(inner, field: field) else { return nil }
            return "[\(text)]"
        default: break
        }
        skipped.append(
            "\(field): the type (\(node.kind.replacingOccurrences(of: "type_", with: ""))) has no schema form"
        )
        return nil
    }

    /// The JSON keys of a struct's `CodingKeys` (property name → key).
    func codingKeys(_ decl: SchemaImport.Node) -> [String: String] {
        guard let keys = decl.children.first(where: { $0.kind == "enum_decl" && $0.name == "CodingKeys" }) else {
            return [:]
        }
        var result: [String: String] = [:]
        for element in keys.children where element.kind == "enum_element_decl" {
            guard let name = element.name else { continue }
            var key = name
            if let start = element.start, let end = element.end, end != start, let literal = token(at: end),
                literal.hasPrefix("\""), literal.hasSuffix("\""), literal.count >= 2
            {
                key = String(literal.dropFirst().dropLast())
            }
            result[name] = key
        }
        return result
    }

    /// How a custom `init(from:)` decodes each Date property: property name → decoding, or a note when unreadable.
    mutating func initDecodings(_ decl: SchemaImport.Node, structName: String) -> [String: DateDecoding] {
        guard let initDecl = decl.children.first(where: { $0.kind == "constructor_decl" && $0.name == "init(from:)" })
        else { return [:] }
        var result: [String: DateDecoding] = [:]
        let fileUsesFractional = lines.contains { $0.contains("withFractionalSeconds") }
        for assignment in initDecl.all("sequence_expr") {
            guard assignment.children.count >= 3, assignment.children[1].kind == "assign_expr" else { continue }
            let target = assignment.children[0]
            let property: String?
            switch target.kind {
            case "unresolved_decl_ref_expr": property = target.attributes["name"]
            case "unresolved_dot_expr": property = target.attributes["field"]
            default: property = nil
            }
            guard let property else { continue }
            let value = assignment.children[2]
            let labels =
                value.all("argument_list").compactMap { $0.attributes["labels"] } + [
                    value.children.first { $0.kind == "argument_list" }?.attributes["labels"] ?? ""
                ]
            let names = ([value] + value.all("unresolved_decl_ref_expr")).compactMap { $0.attributes["name"] }
            let fields = value.all("unresolved_dot_expr").compactMap { $0.attributes["field"] }
            let decodesDate = value.all("dot_self_expr").contains {
                $0.children.first?.attributes["name"] == "Date"
            }
            let literals = value.all("integer_literal_expr").compactMap { $0.attributes["value"] }
            if labels.contains(where: { $0.contains("timeIntervalSince1970") }) {
                result[property] =
                    names.contains("/") && literals.contains("1000") ? .millisecondsSince1970 : .secondsSince1970
            } else if labels.contains(where: { $0.contains("timeIntervalSinceReferenceDate") }) {
                result[property] = .deferredToDate
            } else if fields.contains("date"),
                names.contains(where: { $0.lowercased().contains("formatter") })
                    || lines.contains(where: { $0.contains("ISO8601DateFormatter") })
            {
                result[property] = fileUsesFractional ? .iso8601WithFractionalSeconds : .iso8601
            } else if decodesDate {
                result[property] = .deferredToDate
            } else {
                result[property] = nil
                if value.all("call_expr").contains(where: { $0.children.first?.attributes["name"] == "Date" }) {
                    skipped.append(
                        "\(structName).\(property): init(from:) builds this Date in a way the importer cannot read"
                    )
                }
            }
        }
        return result
    }

    /// The fields of a struct as schema JSON items.
    mutating func fields(_ decl: SchemaImport.Node, name structName: String) -> [String] {
        let keys = codingKeys(decl)
        let decodings = initDecodings(decl, structName: structName)
        let hasCustomInit = decl.children.contains { $0.kind == "constructor_decl" && $0.name == "init(from:)" }
        var items: [String] = []
        let children = decl.children
        for (index, binding) in children.enumerated() where binding.kind == "pattern_binding_decl" {
            let variable = children[(index + 1)...].first { $0.kind == "var_decl" }
            guard let entry = binding.children.first(where: { $0.kind == "pattern_entry" }) else { continue }
            guard let typed = entry.children.first(where: { $0.kind == "pattern_typed" }),
                let named = typed.children.first(where: { $0.kind == "pattern_named" }), let name = named.name
            else {
                skipped.append("\(structName): a property without a type annotation (the schema needs its type)")
                continue
            }
            if variable?.words.contains("static") == true { continue }
            if variable?.children.contains(where: { $0.kind == "accessor_decl" }) == true { continue }
            // A `let` with an initial value is not decoded by the synthesized init(from:).
            if variable?.words.contains("let") == true,
                entry.children.contains(where: { $0.kind.hasPrefix("original_init") })
            {
                continue
            }
            if !keys.isEmpty, keys[name] == nil { continue }  // Not in CodingKeys: not decoded.
            guard let typeNode = typed.children.first(where: { $0.kind.hasPrefix("type_") }),
                let type = typeText(typeNode, field: "\(structName).\(name)")
            else { continue }
            var item = "{ \"name\": \(q(name))"
            if let key = keys[name], key != name { item += ", \"key\": \(q(key))" }
            item += ", \"type\": \(q(type))"
            if type.replacingOccurrences(of: "?", with: "").replacingOccurrences(of: "[", with: "")
                .replacingOccurrences(of: "]", with: "") == "Date"
            {
                if let decoding = decodings[name], decoding != .deferredToDate {
                    item += ", \"dateDecoding\": \(q(decoding.rawValue))"
                } else if hasCustomInit, decodings[name] == nil {
                    skipped.append(
                        "\(structName).\(name): init(from:) does not show how this Date is decoded; it would be "
                            + "read as the default (seconds since 2001)"
                    )
                }
            }
            items.append(item + " }")
        }
        return items
    }

    /// `String` or `Int` when the enum's inheritance clause names one, read at the compiler's position.
    func rawType(_ decl: SchemaImport.Node) -> String? {
        let words = Set(header(decl).split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init))
        if words.contains("String") { return "String" }
        if words.contains("Int") { return "Int" }
        return nil
    }

    mutating func enumeration(_ decl: SchemaImport.Node, name: String) -> String? {
        guard let rawType = rawType(decl) else {
            skipped.append("enum \(name): no String or Int raw type; Codable enums without one have no JSON form here")
            return nil
        }
        var cases: [String] = []
        var next = 0
        // Each element is a direct child once (its enum_case_decl holds a copy).
        for element in decl.children where element.kind == "enum_element_decl" {
            guard let caseName = element.name else { continue }
            var raw: String? = nil
            if let start = element.start, let end = element.end, end != start, let literal = token(at: end) {
                raw = literal
            }
            if element.children.contains(where: { $0.kind == "parameter_list" }) {
                skipped.append("enum \(name).\(caseName): a case with associated values")
                continue
            }
            if rawType == "String" {
                let value = raw.map { String($0.dropFirst().dropLast()) } ?? caseName
                let text = q(value)
                if !cases.contains(text) { cases.append(text) }
            } else {
                if let raw, let v = Int(raw) { next = v }
                let text = String(next)
                if !cases.contains(text) {
                    cases.append(text)
                    next += 1
                }
            }
        }
        return "{ \"rawType\": \(q(rawType)), \"cases\": [\(cases.joined(separator: ", "))] }"
    }

    mutating func build(countdown: String?, status: String?) throws(CLIError) -> SchemaImport.Imported {
        guard
            let attributes = root.all("struct_decl").first(where: { decl in
                decl.children.contains { $0.kind == "struct_decl" && $0.name == "ContentState" }
            }), let attributesName = attributes.name,
            let content = attributes.children.first(where: { $0.kind == "struct_decl" && $0.name == "ContentState" })
        else {
            throw CLIError(
                "importFailed",
                "\(file) declares no ActivityAttributes struct with a nested ContentState",
                recovery:
                    "pass the file that declares `struct …Attributes: ActivityAttributes { struct ContentState … }`",
                exit: .usage
            )
        }
        let attributeFields = fields(attributes, name: attributesName)
        let contentFields = fields(content, name: "ContentState")
        var typeEntries: [String] = []
        var index = 0
        while index < usedTypes.count {
            let name = usedTypes[index]
            index += 1
            guard let decl = types[name] else { continue }
            if decl.kind == "enum_decl" {
                if let text = enumeration(decl, name: name) { typeEntries.append("\(q(name)): \(text)") }
            } else {
                let items = fields(decl, name: name)
                typeEntries.append(
                    "\(q(name)): { \"struct\": [\n      \(items.joined(separator: ",\n      "))\n    ] }"
                )
            }
        }
        // The presentation: the named fields, else the first non-optional Date and the first String or enum.
        func key(of item: String) -> String? {
            guard let r = item.range(of: "\"key\": \"") ?? item.range(of: "\"name\": \"") else { return nil }
            return String(item[r.upperBound...].prefix { $0 != "\"" })
        }
        func typeOf(_ item: String) -> String {
            guard let r = item.range(of: "\"type\": \"") else { return "" }
            return String(item[r.upperBound...].prefix { $0 != "\"" })
        }
        let countdownKey =
            countdown ?? contentFields.first { typeOf($0) == "Date" }.flatMap(key(of:))
            ?? contentFields.first { typeOf($0) == "Date?" }.flatMap(key(of:))
        let enumNames = Set(
            typeEntries.filter { $0.contains("\"rawType\"") }.compactMap { entry in
                entry.split(separator: "\"").first.map(String.init)
            }
        )
        let statusKey =
            status ?? contentFields.first { typeOf($0) == "String" || enumNames.contains(typeOf($0)) }.flatMap(key(of:))
        guard let countdownKey, let statusKey else {
            throw CLIError(
                "importFailed",
                "\(attributesName).ContentState has no \(countdownKey == nil ? "Date" : "String or enum") field to "
                    + "present as the \(countdownKey == nil ? "countdown" : "status")",
                recovery: "name one with --countdown KEY / --status KEY",
                exit: .usage
            )
        }
        let json = """
            {
              "$schema": "activity-schema.schema.json",
              "attributesType": \(q(attributesName)),
              "attributes": [
                \(attributeFields.joined(separator: ",\n    "))
              ],
              "contentState": [
                \(contentFields.joined(separator: ",\n    "))
              ],
              "types": {
                \(typeEntries.joined(separator: ",\n    "))
              },
              "presentation": {
                "countdownEnd": \(q(countdownKey)),
                "statusText": \(q(statusKey)),
                "compactLeading": [{ "show": "statusText", "style": "caption", "width": 56 }],
                "compactTrailing": [{ "show": "countdown", "style": "subheadline", "width": 44 }],
                "minimal": [{ "show": "countdown", "style": "caption2" }],
                "expanded": [{ "show": "statusText", "style": "headline" }, { "show": "countdown", "style": "title2" }],
                "lockScreen": [{ "show": "statusText", "style": "headline" }, { "show": "countdown", "style": "title" }]
              }
            }

            """
        // What is written must be a schema LiveBus accepts.
        do {
            _ = try ActivitySchema.parse(Array(json.utf8), file: "\(file) (imported)")
        } catch {
            throw CLIError(
                "importFailed",
                "the schema read from \(file) is not usable: \(error.description)",
                recovery: "fix the source or write the schema by hand (Protocol/ACTIVITY-SCHEMA.md)",
                exit: .usage
            )
        }
        return SchemaImport.Imported(json: json, skipped: skipped)
    }
}
