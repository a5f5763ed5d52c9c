import Foundation

/// A value decoded by an ``ActivitySchema``: what the app's `ContentState` (or attributes) holds after decoding.
public indirect enum SchemaValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    /// A Date, milliseconds since the Unix epoch (sender's clock).
    case date(Int64)
    /// A URL, as its string.
    case url(String)
    /// An enum case, by its raw value's text.
    case enumCase(String)
    case array([SchemaValue])
    /// A struct, its fields by JSON key in schema order.
    case structure([(key: String, value: SchemaValue)])
    /// An optional that is `nil` (missing key or `null`).
    case none

    public static func == (a: SchemaValue, b: SchemaValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)), (.url(let x), .url(let y)), (.enumCase(let x), .enumCase(let y)):
            return x == y
        case (.int(let x), .int(let y)), (.date(let x), .date(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.structure(let x), .structure(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.none, .none): return true
        default: return false
        }
    }

    /// The value at a dotted path of JSON keys, or `nil` when a step is missing or `nil`.
    public func value(at path: String) -> SchemaValue? {
        var current = self
        for key in path.split(separator: ".") {
            guard case .structure(let fields) = current, let next = fields.first(where: { $0.key == key })?.value,
                next != .none
            else { return nil }
            current = next
        }
        return current
    }

    /// The value as text for a widget: a string, an enum's raw value, a number, `true`/`false`, a URL; `nil` for a
    /// date, an array, a struct or `nil`.
    public var text: String? {
        switch self {
        case .string(let s), .url(let s), .enumCase(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        default: nil
        }
    }
}

/// Why a content state (or attributes) did not decode: Swift's `DecodingError` case, the field and the expected type.
/// On a device the update is dropped and nothing is shown; the phone says nothing.
///
/// - Note: Source: https://developer.apple.com/documentation/swift/decodingerror
public struct SchemaDecodingFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// `DecodingError`'s case names.
    public enum Kind: String, Sendable, Equatable {
        /// A non-optional key is missing.
        case keyNotFound
        /// A non-optional key is `null`.
        case valueNotFound
        /// The JSON type does not match (a string where a Date number is expected).
        case typeMismatch
        /// The JSON type matches but the value cannot be read (an unknown enum raw value, a malformed ISO 8601 date,
        /// a fraction in an Int, an invalid URL).
        case dataCorrupted
    }

    /// The `DecodingError` case.
    public var kind: Kind
    /// The field, a dotted path from the top-level object (`aps.content-state.eta.end`).
    public var field: String
    /// The expected type in Swift's spelling (`Date (seconds since 2001-01-01)`, `String`).
    public var expected: String
    /// What was found and what to do.
    public var message: String

    public var description: String { "\(field): \(message)" }
}

/// Decodes JSON as `JSONDecoder` decodes the app's types described by an ``ActivitySchema``: unknown keys are ignored,
/// a missing or `null` optional is `nil`, a missing non-optional key or a type mismatch fails the whole value. A
/// Date in a plausible but wrong unit is decoded exactly as the strategy reads it (never refused) and gets a lint
/// naming the value the sender most likely meant.
///
/// - Note: Source: https://developer.apple.com/documentation/foundation/jsondecoder ,
///   https://developer.apple.com/documentation/foundation/jsondecoder/datedecodingstrategy
struct SchemaDecoder {
    let schema: ActivitySchema
    /// Lints found so far, in the order met.
    var lints: [PushLint] = []

    init(schema: ActivitySchema) { self.schema = schema }

    mutating func decodeFields(_ fields: [SchemaField], in value: JSONValue, at path: String)
        throws(SchemaDecodingFailure) -> SchemaValue
    {
        guard case .object = value else {
            throw SchemaDecodingFailure(
                kind: .typeMismatch,
                field: path,
                expected: "a keyed object",
                message: "expected a keyed object (Dictionary), found \(value.typeName)"
            )
        }
        var result: [(key: String, value: SchemaValue)] = []
        for field in fields {
            let fieldPath = "\(path).\(field.key)"
            guard let (member, _) = value.member(field.key) else {
                if case .optional = field.type {
                    result.append((field.key, .none))
                    continue
                }
                throw SchemaDecodingFailure(
                    kind: .keyNotFound,
                    field: fieldPath,
                    expected: Self.expected(field.type),
                    message:
                        "keyNotFound: the key \"\(field.key)\" (\(Self.expected(field.type))) is missing; the phone drops "
                        + "the update and shows nothing new"
                )
            }
            result.append((field.key, try decode(member, as: field.type, at: fieldPath)))
        }
        return .structure(result)
    }

    mutating func decode(_ value: JSONValue, as type: SchemaType, at path: String) throws(SchemaDecodingFailure)
        -> SchemaValue
    {
        if case .optional(let wrapped) = type {
            if value == .null { return .none }
            return try decode(value, as: wrapped, at: path)
        }
        if value == .null {
            throw SchemaDecodingFailure(
                kind: .valueNotFound,
                field: path,
                expected: Self.expected(type),
                message: "valueNotFound: null where \(Self.expected(type)) is required; the update is dropped"
            )
        }
        func mismatch() -> SchemaDecodingFailure {
            var hint = ""
            if case .date(let decoding) = type, case .string = value,
                decoding == .deferredToDate || decoding == .secondsSince1970 || decoding == .millisecondsSince1970
            {
                hint = "; a string (ISO 8601) is not read by this decoding, send a number"
            }
            return SchemaDecodingFailure(
                kind: .typeMismatch,
                field: path,
                expected: Self.expected(type),
                message:
                    "typeMismatch: expected \(Self.expected(type)), found \(value.typeName)\(hint); the update is dropped"
            )
        }
        switch type {
        case .optional: preconditionFailure("unwrapped above")
        case .string:
            guard case .string(let s) = value else { throw mismatch() }
            return .string(s)
        case .bool:
            guard case .bool(let b) = value else { throw mismatch() }
            return .bool(b)
        case .double:
            guard case .number(let d, _) = value else { throw mismatch() }
            return .double(d)
        case .int:
            guard case .number(let d, let text) = value else { throw mismatch() }
            guard d == d.rounded(), abs(d) < 9.2e18, let i = Int64(exactly: d) else {
                throw SchemaDecodingFailure(
                    kind: .dataCorrupted,
                    field: path,
                    expected: "Int",
                    message: "dataCorrupted: the number \(text) does not fit in Int; the update is dropped"
                )
            }
            return .int(i)
        case .url:
            guard case .string(let s) = value else { throw mismatch() }
            guard !s.isEmpty, URL(string: s) != nil else {
                throw SchemaDecodingFailure(
                    kind: .dataCorrupted,
                    field: path,
                    expected: "URL",
                    message: "dataCorrupted: \"\(s)\" is not a valid URL string; the update is dropped"
                )
            }
            return .url(s)
        case .date(let decoding):
            return .date(try date(value, decoding, at: path, mismatch: mismatch))
        case .array(let element):
            guard case .array(let items) = value else { throw mismatch() }
            var result: [SchemaValue] = []
            for (index, item) in items.enumerated() {
                result.append(try decode(item, as: element, at: "\(path)[\(index)]"))
            }
            return .array(result)
        case .named(let name):
            switch schema.types[name] {
            case .enumeration(let rawType, let cases)?:
                let raw: String
                switch (rawType, value) {
                case (.string, .string(let s)): raw = s
                case (.int, .number(let d, _)) where d == d.rounded() && abs(d) < 9.2e18: raw = String(Int64(d))
                default: throw mismatch()
                }
                guard cases.contains(raw) else {
                    throw SchemaDecodingFailure(
                        kind: .dataCorrupted,
                        field: path,
                        expected: name,
                        message:
                            "dataCorrupted: cannot initialize \(name) from invalid \(rawType.rawValue) value \(raw); "
                            + "use one of \(cases.joined(separator: ", ")); the update is dropped"
                    )
                }
                return .enumCase(raw)
            case .structure(let fields)?:
                return try decodeFields(fields, in: value, at: path)
            case nil:
                preconditionFailure("schema validation checks every named type")
            }
        }
    }

    /// The expected type as a person reads it: `Date (seconds since 2001-01-01)`, `OrderStatus`, `[Stop]`.
    static func expected(_ type: SchemaType) -> String {
        switch type {
        case .date(let decoding): "Date (\(Self.unitName(decoding)))"
        case .optional(let wrapped): expected(wrapped) + "?"
        default: type.description
        }
    }

    static func unitName(_ decoding: DateDecoding) -> String {
        switch decoding {
        case .deferredToDate: "seconds since 2001-01-01"
        case .secondsSince1970: "seconds since 1970"
        case .millisecondsSince1970: "milliseconds since 1970"
        case .iso8601: "ISO 8601 string"
        case .iso8601WithFractionalSeconds: "ISO 8601 string with fractional seconds"
        }
    }

    private mutating func date(
        _ value: JSONValue,
        _ decoding: DateDecoding,
        at path: String,
        mismatch: () -> SchemaDecodingFailure
    ) throws(SchemaDecodingFailure) -> Int64 {
        switch decoding {
        case .iso8601, .iso8601WithFractionalSeconds:
            guard case .string(let text) = value else { throw mismatch() }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions =
                decoding == .iso8601 ? [.withInternetDateTime] : [.withInternetDateTime, .withFractionalSeconds]
            guard let date = formatter.date(from: text) else {
                let form = decoding == .iso8601 ? "2026-01-01T00:20:00Z" : "2026-01-01T00:20:00.000Z"
                throw SchemaDecodingFailure(
                    kind: .dataCorrupted,
                    field: path,
                    expected: Self.expected(.date(decoding)),
                    message:
                        "dataCorrupted: \"\(text)\" is not an \(Self.unitName(decoding)) (like \(form)); the update "
                        + "is dropped"
                )
            }
            return DateReading.clamp(milliseconds: (date.timeIntervalSince1970 * 1000).rounded())
        case .deferredToDate, .secondsSince1970, .millisecondsSince1970:
            guard case .number(let number, _) = value else { throw mismatch() }
            let reading = DateReading.read(number, decoding, field: path)
            lints.append(contentsOf: reading.lints)
            return reading.milliseconds
        }
    }
}

/// Reads a numeric date as a decoding strategy reads it, and names the likely intended value when the number is in
/// another unit. Thresholds (ours; Apple is silent, `Protocol/PROTOCOL.md` §9.6): as seconds since 1970 a value of
/// 100 000 000 000 or more is milliseconds and one below 1 000 000 000 (before 2001-09-09) is implausible; as seconds
/// since 2001 a value of 1 000 000 000 or more (after 2032-09-09) is Unix seconds (or milliseconds from
/// 100 000 000 000), a negative one implausible; as milliseconds a value below 100 000 000 000 (before 1973-03-03) is
/// seconds.
enum DateReading {
    /// The earliest and latest instant kept, in milliseconds since 1970 (±8.64 × 10¹⁵, JavaScript's range), so that
    /// instant arithmetic never overflows.
    static let limitMilliseconds = 8_640_000_000_000_000.0

    static func clamp(milliseconds: Double) -> Int64 {
        guard milliseconds.isFinite else {
            return milliseconds > 0 ? Int64(limitMilliseconds) : -Int64(limitMilliseconds)
        }
        return Int64(min(max(milliseconds, -limitMilliseconds), limitMilliseconds))
    }

    static func text(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// - Returns: The instant the strategy reads (milliseconds since 1970) and the lints.
    static func read(_ number: Double, _ decoding: DateDecoding, field: String) -> (
        milliseconds: Int64, lints: [PushLint]
    ) {
        let reference = Double(APNsPayload.referenceDateUnixSeconds)
        var lints: [PushLint] = []
        let milliseconds: Double
        switch decoding {
        case .deferredToDate:
            milliseconds = (number + reference) * 1000
            if number >= 100_000_000_000 {
                let meant = text((number / 1000 - reference).rounded())
                lints.append(
                    PushLint(
                        code: .millisecondsEpoch,
                        field: field,
                        message:
                            "\(text(number)) looks like Unix milliseconds; as seconds since 2001-01-01 it is applied "
                            + "tens of thousands of years ahead; send \(meant)",
                        suggested: meant
                    )
                )
            } else if number >= 1_000_000_000 {
                let meant = text(number - reference)
                lints.append(
                    PushLint(
                        code: .unixSecondsInReferenceDate,
                        field: field,
                        message:
                            "\(text(number)) looks like Unix seconds; a default-decoded Date is seconds since "
                            + "2001-01-01, so it is applied 31 years late; send \(meant) (Unix − 978307200)",
                        suggested: meant
                    )
                )
            } else if number < 0 {
                lints.append(
                    PushLint(
                        code: .implausibleEpoch,
                        field: field,
                        message: "\(text(number)) is before 2001-01-01; a default-decoded Date is seconds since 2001"
                    )
                )
            }
        case .secondsSince1970:
            milliseconds = number * 1000
            lints += unixSecondsLints(number, field: field)
        case .millisecondsSince1970:
            milliseconds = number
            if number >= 0, number < 100_000_000_000 {
                let meant = text(number * 1000)
                lints.append(
                    PushLint(
                        code: .secondsInMillisecondsDate,
                        field: field,
                        message:
                            "\(text(number)) looks like Unix seconds; this Date is milliseconds since 1970, so it "
                            + "is applied in 1970; send \(meant)",
                        suggested: meant
                    )
                )
            }
        case .iso8601, .iso8601WithFractionalSeconds:
            preconditionFailure("strings are read by SchemaDecoder")
        }
        return (clamp(milliseconds: milliseconds.rounded()), lints)
    }

    /// Lints for a number read as Unix seconds (an `aps` date or a `secondsSince1970` field).
    static func unixSecondsLints(_ number: Double, field: String) -> [PushLint] {
        let reference = Double(APNsPayload.referenceDateUnixSeconds)
        if number >= 100_000_000_000 {
            let meant = text((number / 1000).rounded(.down))
            return [
                PushLint(
                    code: .millisecondsEpoch,
                    field: field,
                    message:
                        "\(text(number)) looks like Unix milliseconds; read as seconds since 1970 it is tens of "
                        + "thousands of years ahead; send \(meant)",
                    suggested: meant
                )
            ]
        }
        if number < 1_000_000_000 {
            // Seconds since 2001 for a date between 2010 and 2032 look like this; 0 and small numbers mean nothing.
            if number >= 300_000_000 {
                let meant = text(number + reference)
                return [
                    PushLint(
                        code: .implausibleEpoch,
                        field: field,
                        message:
                            "\(text(number)) is before 2001-09-09 as Unix seconds; it looks like seconds since "
                            + "2001-01-01; send \(meant) (+ 978307200)",
                        suggested: meant
                    )
                ]
            }
            return [
                PushLint(
                    code: .implausibleEpoch,
                    field: field,
                    message: "\(text(number)) is \(number == 0 ? "the epoch itself (1970-01-01)" : "in 1970-2001"); "
                        + "send the current Unix time in seconds"
                )
            ]
        }
        return []
    }
}
