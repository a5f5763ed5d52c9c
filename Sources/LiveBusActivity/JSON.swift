/// A minimal JSON reader for push payloads: no Foundation, exact error positions, raw byte ranges kept.
///
/// It reads RFC 8259 JSON. Objects keep their keys in order and remember the byte range of every value, so
/// that the size of `content-state` can be measured as it was sent. A duplicate key in one object is an error,
/// because which of the two values a decoder would use cannot be told.
/// Source: RFC 8259 (https://www.rfc-editor.org/rfc/rfc8259).
indirect enum JSONValue: Sendable, Equatable {
    case object([(key: String, value: JSONValue, range: Range<Int>)])
    case array([JSONValue])
    case string(String)
    case number(Double, text: String)
    case bool(Bool)
    case null

    static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return x.count == y.count
                && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value && $0.range == $1.range }
        case (.array(let x), .array(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x, _), .number(let y, _)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        default: return false
        }
    }

    /// A short name of the JSON type, for error messages.
    var typeName: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        }
    }

    /// The member named `key` of an object, with its byte range, or `nil`.
    func member(_ key: String) -> (value: JSONValue, range: Range<Int>)? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return (member.value, member.range) }
        return nil
    }
}

/// Why a JSON text could not be read: the byte offset and what was expected.
struct JSONSyntaxError: Error, Sendable, Equatable {
    /// Byte offset from the start of the text.
    var offset: Int
    /// What was wrong, for example `expected ':' after an object key`.
    var message: String
    /// The object key path where the error happened, if inside an object (for example `aps.content-state`).
    var path: String
}

/// Reads a JSON text from UTF-8 bytes.
struct JSONReader {
    private let bytes: [UInt8]
    private var index = 0
    private var path: [String] = []
    private var depth = 0
    /// Nesting limit; deeper documents are rejected instead of recursing without bound.
    static let maximumDepth = 64

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses `bytes` as exactly one JSON value, surrounded by optional whitespace.
    static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        var reader = JSONReader(bytes)
        reader.skipWhitespace()
        let value = try reader.readValue()
        reader.skipWhitespace()
        if reader.index != bytes.count { throw reader.error("unexpected data after the top-level value") }
        return value
    }

    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: index, message: message, path: path.joined(separator: "."))
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func readValue() throws(JSONSyntaxError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of data, expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try readObject()
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"):
            try readLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try readLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try readLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw error("unexpected character, expected a value")
        }
    }

    private mutating func readLiteral(_ literal: String) throws(JSONSyntaxError) {
        for byte in literal.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw error("invalid literal, expected \(literal)") }
            index += 1
        }
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > Self.maximumDepth { throw error("nesting deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func readObject() throws(JSONSyntaxError) -> JSONValue {
        try enter()
        index += 1
        var members: [(key: String, value: JSONValue, range: Range<Int>)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a string key in an object")
            }
            let key = try readString()
            if members.contains(where: { $0.key == key }) {
                throw error("duplicate key \"\(key)\"; send each key once")
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after the key \"\(key)\"")
            }
            index += 1
            skipWhitespace()
            path.append(key)
            let start = index
            let value = try readValue()
            let range = start..<index
            path.removeLast()
            members.append((key, value, range))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of data inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(members)
            }
            throw error("expected ',' or '}' in an object")
        }
    }

    private mutating func readArray() throws(JSONSyntaxError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try readValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of data inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(elements)
            }
            throw error("expected ',' or ']' in an array")
        }
    }

    private mutating func readHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in a \\u escape")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    private mutating func readString() throws(JSONSyntaxError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var runStart = index
        var utf8Run: [UInt8] = []
        /// Appends a run of raw UTF-8 bytes; `false` if the run is not valid UTF-8
        /// (`String(decoding:)` would silently repair it).
        func flush(_ run: inout [UInt8], into scalars: inout String.UnicodeScalarView) -> Bool {
            guard !run.isEmpty else { return true }
            guard let text = String(validating: run, as: UTF8.self) else { return false }
            scalars.append(contentsOf: text.unicodeScalars)
            run.removeAll(keepingCapacity: true)
            return true
        }
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                utf8Run.append(contentsOf: bytes[runStart..<index])
                index += 1
                break
            }
            if byte < 0x20 { throw error("control character inside a string; escape it") }
            if byte == UInt8(ascii: "\\") {
                utf8Run.append(contentsOf: bytes[runStart..<index])
                guard flush(&utf8Run, into: &scalars) else { throw error("invalid UTF-8 inside a string") }
                index += 1
                guard index < bytes.count else { throw error("unterminated escape") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    let first = try readHex4()
                    var code = first
                    if (0xD800...0xDBFF).contains(first) {
                        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired UTF-16 surrogate in a \\u escape") }
                        index += 2
                        let second = try readHex4()
                        guard (0xDC00...0xDFFF).contains(second) else {
                            throw error("unpaired UTF-16 surrogate in a \\u escape")
                        }
                        code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(first) {
                        throw error("unpaired UTF-16 surrogate in a \\u escape")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape") }
                    scalars.append(scalar)
                default: throw error("invalid escape character")
                }
                runStart = index
                continue
            }
            index += 1
        }
        guard flush(&utf8Run, into: &scalars) else { throw error("invalid UTF-8 inside a string") }
        return String(scalars)
    }

    private mutating func readNumber() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ reader: inout JSONReader) -> Int {
            var count = 0
            while reader.index < reader.bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(reader.bytes[reader.index])
            {
                reader.index += 1
                count += 1
            }
            return count
        }
        let integerStart = index
        let integerDigits = digits(&self)
        if integerDigits == 0 { throw error("invalid number") }
        if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") { throw error("leading zero in a number") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            if digits(&self) == 0 { throw error("expected digits after '.' in a number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            if digits(&self) == 0 { throw error("expected digits in a number's exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw error("number out of range") }
        return .number(value, text: text)
    }
}

extension JSONReader {
    /// The 1-based line and column (in bytes) of `offset`.
    static func lineAndColumn(_ bytes: [UInt8], offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes.prefix(offset) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }

    /// A lint for every comment (`//`, `/* */`) and trailing comma (`,` before `}` or `]`) outside strings, with its
    /// line and column: JSON has neither, and APNs rejects a payload with them (RFC 8259; reference/live-activities.md
    /// §2.8: the payload must be valid JSON).
    static func commentAndTrailingCommaLints(_ bytes: [UInt8]) -> [PushLint] {
        var lints: [PushLint] = []
        var index = 0
        var inString = false
        func position(_ at: Int) -> String {
            let (line, column) = lineAndColumn(bytes, offset: at)
            return "line \(line), column \(column)"
        }
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") { inString = false }
                index += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "/")
            where index + 1 < bytes.count
                && (bytes[index + 1] == UInt8(ascii: "/") || bytes[index + 1] == UInt8(ascii: "*")):
                lints.append(
                    PushLint(
                        code: .jsonComment,
                        field: "payload",
                        message: "a comment at \(position(index)): JSON has no comments and APNs rejects the payload; "
                            + "remove it"
                    )
                )
                let block = bytes[index + 1] == UInt8(ascii: "*")
                index += 2
                while index < bytes.count {
                    if block, bytes[index] == UInt8(ascii: "*"), index + 1 < bytes.count,
                        bytes[index + 1] == UInt8(ascii: "/")
                    {
                        index += 1
                        break
                    }
                    if !block, bytes[index] == 0x0A { break }
                    index += 1
                }
            case UInt8(ascii: ","):
                var next = index + 1
                while next < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[next]) { next += 1 }
                if next < bytes.count, bytes[next] == UInt8(ascii: "}") || bytes[next] == UInt8(ascii: "]") {
                    lints.append(
                        PushLint(
                            code: .jsonTrailingComma,
                            field: "payload",
                            message: "a trailing comma at \(position(index)): JSON allows none and APNs rejects the "
                                + "payload; remove it"
                        )
                    )
                }
            default: break
            }
            index += 1
        }
        return lints
    }
}
