import Foundation
import LiveBusSimulator

/// How one `Date` field is decoded: the `JSONDecoder.DateDecodingStrategy` the app uses for it (or the format its
/// custom `init(from:)` reads). Raw values are the names used in activity schema files.
///
/// - Note: Source: https://developer.apple.com/documentation/foundation/jsondecoder/datedecodingstrategy ;
///   ActivityKit decodes pushed content with the default strategy: "Custom encoding strategies will result in update
///   failures" (reference/live-activities.md §2.2, the push article).
public enum DateDecoding: String, Sendable, Equatable, CaseIterable {
    /// The default (`.deferredToDate`): a JSON number of seconds since 2001-01-01T00:00:00Z.
    case deferredToDate
    /// A JSON number of seconds since 1970-01-01T00:00:00Z.
    case secondsSince1970
    /// A JSON number of milliseconds since 1970-01-01T00:00:00Z.
    case millisecondsSince1970
    /// A JSON string in ISO 8601 without fractional seconds (`2026-01-01T00:20:00Z`), as `.iso8601` reads it.
    case iso8601
    /// A JSON string in ISO 8601 with fractional seconds (`2026-01-01T00:20:00.250Z`), as an
    /// `ISO8601DateFormatter` with `.withFractionalSeconds` reads it.
    case iso8601WithFractionalSeconds
}

/// A field's type in an activity schema, written in Swift's spelling in the file: `String`, `Int`, `Double`, `Bool`,
/// `Date`, `URL`, the name of an enum or struct declared under `types`, `[T]` for an array and `T?` for an optional.
public indirect enum SchemaType: Sendable, Equatable, CustomStringConvertible {
    case string, int, double, bool, url
    /// A `Date`, with its decoding.
    case date(DateDecoding)
    /// An enum or struct declared in the schema's `types`.
    case named(String)
    /// `[T]`.
    case array(SchemaType)
    /// `T?`: the key may be missing or `null`.
    case optional(SchemaType)

    /// Swift's spelling: `String`, `[Stop]`, `URL?`.
    public var description: String {
        switch self {
        case .string: "String"
        case .int: "Int"
        case .double: "Double"
        case .bool: "Bool"
        case .url: "URL"
        case .date: "Date"
        case .named(let name): name
        case .array(let element): "[\(element)]"
        case .optional(let wrapped): "\(wrapped)?"
        }
    }
}

/// One stored property of the attributes, the content state or a nested struct.
public struct SchemaField: Sendable, Equatable {
    /// The Swift property name.
    public var name: String
    /// The key in JSON (its `CodingKeys` raw value; the property name when there are none).
    public var key: String
    /// The type.
    public var type: SchemaType
    /// The 1-based line of the field in the schema file (0 for a schema built in code).
    public var line: Int

    /// Creates a field.
    public init(name: String, key: String? = nil, type: SchemaType, line: Int = 0) {
        self.name = name
        self.key = key ?? name
        self.type = type
        self.line = line
    }
}

/// An enum or struct declared in a schema.
public enum SchemaTypeDefinition: Sendable, Equatable {
    /// An enum with `String` raw values (`"cooking"`) or `Int` raw values (as their decimal text).
    case enumeration(rawType: EnumRawType, cases: [String])
    /// A struct with its fields.
    case structure([SchemaField])

    /// The raw value type of an enum.
    public enum EnumRawType: String, Sendable, Equatable {
        case string = "String"
        case int = "Int"
    }
}

/// A SwiftUI text style, named as `Font.TextStyle` names it; the layout measures text in it.
/// - Note: Source: https://developer.apple.com/documentation/swiftui/font/textstyle
public enum PresentationTextStyle: String, Sendable, Equatable, CaseIterable {
    case largeTitle, title, title2, title3, headline, subheadline, body, callout, footnote, caption, caption2
}

/// One piece of text a widget region shows: the countdown, the status text or any content-state field.
public struct PresentationItem: Sendable, Equatable {
    /// What the text is.
    public enum Content: Sendable, Equatable {
        /// The remaining time to ``ActivityPresentation/countdownEnd`` (`Text(timerInterval:)`), e.g. `12:34`.
        case countdown
        /// The value of ``ActivityPresentation/statusText``.
        case statusText
        /// The value of a content-state field, by dotted path of JSON keys.
        case field(String)
    }

    /// What the text is.
    public var content: Content
    /// The text style it is drawn in.
    public var style: PresentationTextStyle
    /// The box the widget gives it, in points, or `nil` for the region's whole width.
    public var width: Double?

    /// Creates an item.
    public init(content: Content, style: PresentationTextStyle, width: Double? = nil) {
        self.content = content
        self.style = style
        self.width = width
    }
}

/// How the widget presents the content: which fields drive the countdown and the status, and what each region shows.
public struct ActivityPresentation: Sendable, Equatable {
    /// The content-state `Date` field the countdown counts to (dotted path of JSON keys).
    public var countdownEnd: String
    /// The content-state field shown as the status text (a `String` or an enum).
    public var statusText: String
    /// Dynamic Island, compact, leading side.
    public var compactLeading: [PresentationItem]
    /// Dynamic Island, compact, trailing side.
    public var compactTrailing: [PresentationItem]
    /// Dynamic Island, minimal.
    public var minimal: [PresentationItem]
    /// Dynamic Island, expanded.
    public var expanded: [PresentationItem]
    /// The lock screen banner.
    public var lockScreen: [PresentationItem]

    /// Creates a presentation.
    public init(
        countdownEnd: String,
        statusText: String,
        compactLeading: [PresentationItem],
        compactTrailing: [PresentationItem],
        minimal: [PresentationItem],
        expanded: [PresentationItem],
        lockScreen: [PresentationItem]
    ) {
        self.countdownEnd = countdownEnd
        self.statusText = statusText
        self.compactLeading = compactLeading
        self.compactTrailing = compactTrailing
        self.minimal = minimal
        self.expanded = expanded
        self.lockScreen = lockScreen
    }
}

/// An app's Live Activity: its `ActivityAttributes` (static) and `ContentState` (dynamic) fields, the enums and
/// structs they use, and how the widget presents them. Read from an activity schema file
/// (`Protocol/ACTIVITY-SCHEMA.md`, JSON Schema `Protocol/activity-schema.schema.json`).
public struct ActivitySchema: Sendable, Equatable {
    /// The `ActivityAttributes` type's name, as a start push's `attributes-type` names it.
    public var attributesType: String
    /// The attributes' fields (a start push's `attributes`).
    public var attributes: [SchemaField]
    /// The content state's fields (every push's `content-state`).
    public var contentState: [SchemaField]
    /// The enums and structs the fields use, by name.
    public var types: [String: SchemaTypeDefinition]
    /// How the widget presents the content.
    public var presentation: ActivityPresentation
    /// The file the schema was read from (for messages), or `nil`.
    public var file: String?

    /// Creates a schema; ``validate()`` checks it.
    public init(
        attributesType: String,
        attributes: [SchemaField],
        contentState: [SchemaField],
        types: [String: SchemaTypeDefinition],
        presentation: ActivityPresentation,
        file: String? = nil
    ) {
        self.attributesType = attributesType
        self.attributes = attributes
        self.contentState = contentState
        self.types = types
        self.presentation = presentation
        self.file = file
    }

    /// `true` when the content state has the delivery activity's fields and types (file lines aside), so that the
    /// board also reads it as the simulator's ``ContentState`` (status, countdown, progress, rider, summary).
    public var readsAsDelivery: Bool {
        func shape(_ fields: [SchemaField]) -> [String] { fields.map { "\($0.key):\($0.type)" } }
        func shapes(_ types: [String: SchemaTypeDefinition]) -> [String: String] {
            types.mapValues { definition in
                switch definition {
                case .enumeration(let raw, let cases): "enum \(raw.rawValue) \(cases)"
                case .structure(let fields): "struct \(shape(fields))"
                }
            }
        }
        return shape(contentState) == Self.deliveryShape.fields && shapes(types) == Self.deliveryShape.types
    }

    private static let deliveryShape: (fields: [String], types: [String: String]) = {
        (
            delivery.contentState.map { "\($0.key):\($0.type)" },
            delivery.types.mapValues { definition in
                switch definition {
                case .enumeration(let raw, let cases): "enum \(raw.rawValue) \(cases)"
                case .structure(let fields): "struct \(fields.map { "\($0.key):\($0.type)" })"
                }
            }
        )
    }()

    /// The built-in delivery activity, read from the schema file that ships in `Protocol/activity-schemas/delivery.json`
    /// (bundled as this module's resource; the Protocol path is a link to it, so there is one copy).
    public static let delivery: ActivitySchema = {
        guard let url = Bundle.module.url(forResource: "delivery", withExtension: "json"),
            let data = try? Data(contentsOf: url)
        else { preconditionFailure("the bundled delivery activity schema (delivery.json) is missing") }
        do {
            return try ActivitySchema.parse(Array(data), file: "Protocol/activity-schemas/delivery.json")
        } catch {
            preconditionFailure("the bundled delivery activity schema is invalid: \(error)")
        }
    }()

    /// The content-state field at a dotted path of JSON keys (`eta.end`), with its type, or `nil`.
    public func contentField(at path: String) -> SchemaField? {
        var fields = contentState
        var found: SchemaField?
        for (index, key) in path.split(separator: ".").enumerated() {
            if index > 0 {
                guard let previous = found, case .structure(let nested)? = types[Self.baseName(previous.type)] else {
                    return nil
                }
                fields = nested
            }
            guard let field = fields.first(where: { $0.key == key }) else { return nil }
            found = field
        }
        return found
    }

    static func baseName(_ type: SchemaType) -> String {
        switch type {
        case .optional(let wrapped): baseName(wrapped)
        default: type.description
        }
    }
}

/// Why an activity schema file cannot be used: the file, the 1-based line and the field (a dotted path such as
/// `contentState.eta.type`), and what to do. Reads `file:line: field: message`.
public struct ActivitySchemaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file, as given.
    public var file: String
    /// The 1-based line.
    public var line: Int
    /// The field the problem is in.
    public var field: String
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(file: String, line: Int, field: String, message: String) {
        self.file = file
        self.line = line
        self.field = field
        self.message = message
    }

    public var description: String { "\(file):\(line): \(field): \(message)" }
}

extension ActivitySchema {
    /// Reads and checks an activity schema file.
    /// - Parameter path: The file's path.
    /// - Returns: The schema.
    /// - Throws: ``ActivitySchemaError`` naming the file, line and field: unreadable file, invalid JSON, a missing or
    ///   unknown key, an unknown type, a circular struct, a presentation field that does not exist.
    public static func load(path: String) throws(ActivitySchemaError) -> ActivitySchema {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ActivitySchemaError(
                file: path,
                line: 0,
                field: "file",
                message: "cannot be read; check the path (an activity schema is a JSON file, see ACTIVITY-SCHEMA.md)"
            )
        }
        return try parse(Array(data), file: path)
    }

    /// Parses and checks an activity schema.
    /// - Parameters:
    ///   - bytes: The file's UTF-8 JSON.
    ///   - file: The file's name, for errors.
    /// - Returns: The schema.
    /// - Throws: ``ActivitySchemaError`` naming the file, line and field.
    public static func parse(_ bytes: [UInt8], file: String) throws(ActivitySchemaError) -> ActivitySchema {
        let root: JSONNode
        do {
            root = try LineJSON.parse(bytes)
        } catch {
            throw ActivitySchemaError(
                file: file,
                line: error.line,
                field: "json",
                message: "not valid JSON: \(error.message)"
            )
        }
        var reader = SchemaFileReader(file: file)
        return try reader.read(root)
    }
}

/// Reads the JSON tree of a schema file into an ``ActivitySchema``, with file:line:field errors.
private struct SchemaFileReader {
    let file: String

    func fail(_ node: JSONNode, _ field: String, _ message: String) -> ActivitySchemaError {
        ActivitySchemaError(file: file, line: node.line, field: field, message: message)
    }

    func members(_ node: JSONNode, _ field: String, allowed: Set<String>) throws(ActivitySchemaError)
        -> [String: JSONNode.Member]
    {
        guard case .object(let list) = node.value else {
            throw fail(node, field, "must be an object, found \(node.kindName)")
        }
        var result: [String: JSONNode.Member] = [:]
        for member in list {
            let path = field.isEmpty ? member.key : "\(field).\(member.key)"
            guard allowed.contains(member.key) else {
                throw ActivitySchemaError(
                    file: file,
                    line: member.keyLine,
                    field: path,
                    message: "unknown key; allowed here: \(allowed.sorted().joined(separator: ", "))"
                )
            }
            if let first = result[member.key] {
                throw ActivitySchemaError(
                    file: file,
                    line: member.keyLine,
                    field: path,
                    message: "duplicate key (first on line \(first.keyLine)); give it once"
                )
            }
            result[member.key] = member
        }
        return result
    }

    func string(_ node: JSONNode, _ field: String) throws(ActivitySchemaError) -> String {
        guard case .string(let text) = node.value else {
            throw fail(node, field, "must be a string, found \(node.kindName)")
        }
        return text
    }

    func required(_ members: [String: JSONNode.Member], _ key: String, in parent: JSONNode, _ field: String)
        throws(ActivitySchemaError) -> JSONNode
    {
        guard let member = members[key] else {
            throw fail(parent, field.isEmpty ? key : "\(field).\(key)", "required")
        }
        return member.value
    }

    mutating func read(_ root: JSONNode) throws(ActivitySchemaError) -> ActivitySchema {
        let top = try members(
            root,
            "",
            allowed: [
                "$schema", "attributesType", "dateDecoding", "attributes", "contentState", "types", "presentation",
            ]
        )
        let name = try string(required(top, "attributesType", in: root, ""), "attributesType")
        var defaultDecoding = DateDecoding.deferredToDate
        if let node = top["dateDecoding"]?.value {
            defaultDecoding = try decoding(node, "dateDecoding")
        }
        var rawTypes: [String: (JSONNode, Int)] = [:]
        var types: [String: SchemaTypeDefinition] = [:]
        if let typesNode = top["types"]?.value {
            guard case .object(let list) = typesNode.value else {
                throw fail(typesNode, "types", "must be an object of enum and struct declarations")
            }
            for member in list {
                if Self.builtIn.contains(member.key) {
                    throw ActivitySchemaError(
                        file: file,
                        line: member.keyLine,
                        field: "types.\(member.key)",
                        message: "\(member.key) is a built-in type; give the declaration another name"
                    )
                }
                if rawTypes[member.key] != nil {
                    throw ActivitySchemaError(
                        file: file,
                        line: member.keyLine,
                        field: "types.\(member.key)",
                        message: "declared twice"
                    )
                }
                rawTypes[member.key] = (member.value, member.keyLine)
            }
        }
        let names = Set(rawTypes.keys)
        for (typeName, (node, _)) in rawTypes.sorted(by: { $0.key < $1.key }) {
            types[typeName] = try definition(node, "types.\(typeName)", names: names, decoding: defaultDecoding)
        }
        let attributes = try fields(
            required(top, "attributes", in: root, ""),
            "attributes",
            names: names,
            decoding: defaultDecoding
        )
        let contentState = try fields(
            required(top, "contentState", in: root, ""),
            "contentState",
            names: names,
            decoding: defaultDecoding
        )
        try checkCycles(types, rawTypes)
        var schema = ActivitySchema(
            attributesType: name,
            attributes: attributes,
            contentState: contentState,
            types: types,
            presentation: ActivityPresentation(
                countdownEnd: "",
                statusText: "",
                compactLeading: [],
                compactTrailing: [],
                minimal: [],
                expanded: [],
                lockScreen: []
            ),
            file: file
        )
        let presentationNode = try required(top, "presentation", in: root, "")
        schema.presentation = try presentation(presentationNode, schema: schema)
        return schema
    }

    static let builtIn: Set<String> = ["String", "Int", "Double", "Bool", "Date", "URL"]

    func decoding(_ node: JSONNode, _ field: String) throws(ActivitySchemaError) -> DateDecoding {
        let text = try string(node, field)
        guard let decoding = DateDecoding(rawValue: text) else {
            throw fail(
                node,
                field,
                "\"\(text)\" is not a date decoding; use one of "
                    + DateDecoding.allCases.map(\.rawValue).joined(separator: ", ")
            )
        }
        return decoding
    }

    func definition(_ node: JSONNode, _ field: String, names: Set<String>, decoding: DateDecoding)
        throws(ActivitySchemaError) -> SchemaTypeDefinition
    {
        let m = try members(node, field, allowed: ["enum", "rawType", "cases", "struct"])
        if let casesNode = m["cases"]?.value {
            guard m["struct"] == nil else { throw fail(node, field, "is either an enum (cases) or a struct, not both") }
            var rawType = SchemaTypeDefinition.EnumRawType.string
            if let rawNode = m["rawType"]?.value {
                let text = try string(rawNode, "\(field).rawType")
                guard let parsed = SchemaTypeDefinition.EnumRawType(rawValue: text) else {
                    throw fail(rawNode, "\(field).rawType", "\"\(text)\" is not a raw value type; use String or Int")
                }
                rawType = parsed
            }
            guard case .array(let items) = casesNode.value, !items.isEmpty else {
                throw fail(casesNode, "\(field).cases", "must be a non-empty array of the raw values")
            }
            var cases: [String] = []
            for (index, item) in items.enumerated() {
                switch (rawType, item.value) {
                case (.string, .string(let text)): cases.append(text)
                case (.int, .number(let number, let text)) where number == number.rounded(): cases.append(text)
                default:
                    throw fail(item, "\(field).cases[\(index)]", "must be a \(rawType.rawValue) raw value")
                }
            }
            return .enumeration(rawType: rawType, cases: cases)
        }
        guard let structNode = m["struct"]?.value else {
            throw fail(node, field, "declare an enum ({\"cases\": [...]}) or a struct ({\"struct\": [fields]})")
        }
        return .structure(try fields(structNode, "\(field).struct", names: names, decoding: decoding))
    }

    func fields(_ node: JSONNode, _ field: String, names: Set<String>, decoding: DateDecoding)
        throws(ActivitySchemaError) -> [SchemaField]
    {
        guard case .array(let items) = node.value else {
            throw fail(node, field, "must be an array of fields ({\"name\", \"type\", \"key\"?, \"dateDecoding\"?})")
        }
        var result: [SchemaField] = []
        var keys: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let path = "\(field)[\(index)]"
            let m = try members(item, path, allowed: ["name", "key", "type", "dateDecoding"])
            let name = try string(required(m, "name", in: item, path), "\(path).name")
            let fieldPath = "\(field).\(name)"
            let key = try m["key"].map { member throws(ActivitySchemaError) in
                try string(member.value, "\(fieldPath).key")
            }
            let typeNode = try required(m, "type", in: item, fieldPath)
            var fieldDecoding = decoding
            if let decodingNode = m["dateDecoding"]?.value {
                fieldDecoding = try self.decoding(decodingNode, "\(fieldPath).dateDecoding")
            }
            let typeText = try string(typeNode, "\(fieldPath).type")
            guard let type = Self.parseType(typeText, decoding: fieldDecoding) else {
                throw fail(typeNode, "\(fieldPath).type", "\"\(typeText)\" is not a type; write String, Int?, [Stop] …")
            }
            if let unknown = Self.unknownName(type, names) {
                throw fail(
                    typeNode,
                    "\(fieldPath).type",
                    "unknown type \(unknown); use String, Int, Double, Bool, Date, URL or a name declared in types"
                        + (names.isEmpty ? "" : " (\(names.sorted().joined(separator: ", ")))")
                )
            }
            if m["dateDecoding"] != nil, !Self.containsDate(type) {
                throw fail(typeNode, "\(fieldPath).dateDecoding", "only a Date field has a date decoding")
            }
            let resolvedKey = key ?? name
            if let first = keys[resolvedKey] {
                throw fail(item, "\(fieldPath).key", "the JSON key \"\(resolvedKey)\" is used twice (line \(first))")
            }
            keys[resolvedKey] = item.line
            result.append(SchemaField(name: name, key: resolvedKey, type: type, line: item.line))
        }
        return result
    }

    static func parseType(_ text: String, decoding: DateDecoding) -> SchemaType? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.hasSuffix("?") {
            guard let wrapped = parseType(String(t.dropLast()), decoding: decoding) else { return nil }
            if case .optional = wrapped { return nil }
            return .optional(wrapped)
        }
        if t.hasPrefix("["), t.hasSuffix("]") {
            return parseType(String(t.dropFirst().dropLast()), decoding: decoding).map { .array($0) }
        }
        switch t {
        case "String": return .string
        case "Int": return .int
        case "Double": return .double
        case "Bool": return .bool
        case "URL": return .url
        case "Date": return .date(decoding)
        default:
            guard let first = t.unicodeScalars.first, first == "_" || CharacterSet.letters.contains(first),
                t.unicodeScalars.allSatisfy({ $0 == "_" || CharacterSet.alphanumerics.contains($0) })
            else { return nil }
            return .named(t)
        }
    }

    static func unknownName(_ type: SchemaType, _ names: Set<String>) -> String? {
        switch type {
        case .named(let name): names.contains(name) ? nil : name
        case .array(let element), .optional(let element): unknownName(element, names)
        default: nil
        }
    }

    static func containsDate(_ type: SchemaType) -> Bool {
        switch type {
        case .date: true
        case .array(let element), .optional(let element): containsDate(element)
        default: false
        }
    }

    /// A struct that contains itself other than through an array cannot be declared in Swift (infinite size).
    func checkCycles(_ types: [String: SchemaTypeDefinition], _ raw: [String: (JSONNode, Int)])
        throws(ActivitySchemaError)
    {
        func direct(_ type: SchemaType) -> String? {
            switch type {
            case .named(let name): name
            case .optional(let wrapped): direct(wrapped)
            default: nil
            }
        }
        for start in types.keys.sorted() {
            var visited: Set<String> = []
            func walk(_ name: String, _ chain: [String]) -> [String]? {
                guard case .structure(let fields)? = types[name] else { return nil }
                for field in fields {
                    guard let next = direct(field.type) else { continue }
                    if next == start { return chain + ["\(field.name): \(next)"] }
                    if visited.insert(next).inserted, let found = walk(next, chain + ["\(field.name): \(next)"]) {
                        return found
                    }
                }
                return nil
            }
            if let cycle = walk(start, []) {
                throw ActivitySchemaError(
                    file: file,
                    line: raw[start]?.1 ?? 0,
                    field: "types.\(start)",
                    message:
                        "circular: \(start) contains itself (\(cycle.joined(separator: " → "))); a struct cannot contain "
                        + "itself except through an array"
                )
            }
        }
    }

    func presentation(_ node: JSONNode, schema: ActivitySchema) throws(ActivitySchemaError) -> ActivityPresentation {
        let regions = ["compactLeading", "compactTrailing", "minimal", "expanded", "lockScreen"]
        let m = try members(node, "presentation", allowed: Set(["countdownEnd", "statusText"] + regions))
        let countdownNode = try required(m, "countdownEnd", in: node, "presentation")
        let countdown = try string(countdownNode, "presentation.countdownEnd")
        guard let countdownField = schema.contentField(at: countdown) else {
            throw fail(countdownNode, "presentation.countdownEnd", "no content-state field \"\(countdown)\"")
        }
        guard case .date = unwrap(countdownField.type) else {
            throw fail(
                countdownNode,
                "presentation.countdownEnd",
                "\(countdown) is \(countdownField.type); the countdown end must be a Date field"
            )
        }
        let statusNode = try required(m, "statusText", in: node, "presentation")
        let status = try string(statusNode, "presentation.statusText")
        guard let statusField = schema.contentField(at: status) else {
            throw fail(statusNode, "presentation.statusText", "no content-state field \"\(status)\"")
        }
        switch unwrap(statusField.type) {
        case .string: break
        case .named(let name) where { if case .enumeration? = schema.types[name] { true } else { false } }(): break
        default:
            throw fail(
                statusNode,
                "presentation.statusText",
                "\(status) is \(statusField.type); the status text must be a String or an enum field"
            )
        }
        var lists: [String: [PresentationItem]] = [:]
        for region in regions {
            guard let regionNode = m[region]?.value else {
                throw fail(node, "presentation.\(region)", "required (an array of items; [] shows nothing)")
            }
            lists[region] = try items(regionNode, "presentation.\(region)", schema: schema)
        }
        return ActivityPresentation(
            countdownEnd: countdown,
            statusText: status,
            compactLeading: lists["compactLeading"] ?? [],
            compactTrailing: lists["compactTrailing"] ?? [],
            minimal: lists["minimal"] ?? [],
            expanded: lists["expanded"] ?? [],
            lockScreen: lists["lockScreen"] ?? []
        )
    }

    func unwrap(_ type: SchemaType) -> SchemaType {
        if case .optional(let wrapped) = type { return unwrap(wrapped) }
        return type
    }

    func items(_ node: JSONNode, _ field: String, schema: ActivitySchema) throws(ActivitySchemaError)
        -> [PresentationItem]
    {
        guard case .array(let list) = node.value else {
            throw fail(node, field, "must be an array of items ({\"show\", \"style\", \"width\"?})")
        }
        var result: [PresentationItem] = []
        for (index, item) in list.enumerated() {
            let path = "\(field)[\(index)]"
            let m = try members(item, path, allowed: ["show", "field", "style", "width"])
            let showNode = try required(m, "show", in: item, path)
            let show = try string(showNode, "\(path).show")
            let content: PresentationItem.Content
            switch show {
            case "countdown": content = .countdown
            case "statusText": content = .statusText
            case "field":
                let fieldNode = try required(m, "field", in: item, path)
                let name = try string(fieldNode, "\(path).field")
                guard schema.contentField(at: name) != nil else {
                    throw fail(fieldNode, "\(path).field", "no content-state field \"\(name)\"")
                }
                content = .field(name)
            default:
                throw fail(showNode, "\(path).show", "\"\(show)\" is not shown; use countdown, statusText or field")
            }
            let styleNode = try required(m, "style", in: item, path)
            let styleText = try string(styleNode, "\(path).style")
            guard let style = PresentationTextStyle(rawValue: styleText) else {
                throw fail(
                    styleNode,
                    "\(path).style",
                    "\"\(styleText)\" is not a text style; use one of "
                        + PresentationTextStyle.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            var width: Double?
            if let widthNode = m["width"]?.value {
                guard case .number(let w, _) = widthNode.value, w > 0, w.isFinite else {
                    throw fail(widthNode, "\(path).width", "must be a positive number of points")
                }
                width = w
            }
            result.append(PresentationItem(content: content, style: style, width: width))
        }
        return result
    }
}
