/// A JSON value, for the free-form parts of COMMAND and RESULT bodies.
public enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n):
            if n.rounded() == n && abs(n) < 9e15 { try c.encode(Int64(n)) } else { try c.encode(n) }
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    /// The number, if this is a number.
    public var doubleValue: Double? { if case .number(let n) = self { n } else { nil } }
    /// The integer, if this is a number with no fraction.
    public var int64Value: Int64? {
        if case .number(let n) = self, n.rounded() == n, abs(n) < 9.2e18 { Int64(n) } else { nil }
    }
    /// The Boolean, if this is a Boolean.
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// The member `key` of an object, else `nil`.
    public subscript(key: String) -> JSONValue? { if case .object(let o) = self { o[key] } else { nil } }

    public var description: String {
        (try? WireJSON.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
    }
}
