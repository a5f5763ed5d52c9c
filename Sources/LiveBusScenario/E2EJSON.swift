/// A small JSON reader (RFC 8259) that remembers the line each value starts on, so that errors in e2e scenario
/// files can name `file:line` (the same idea as `LiveBusSimulator`'s `LineJSON`, kept here so this target stays
/// dependency-free). Foundation's `JSONSerialization` keeps no positions.
///
/// Strict: no comments, no trailing commas, no leading zeros, no raw control characters in strings, valid UTF-8
/// only, nesting at most ``E2ELineJSON/maximumDepth`` deep. Object members keep their order and duplicates
/// (the scenario decoder rejects duplicates with both lines named).
/// - Note: Source: RFC 8259, https://www.rfc-editor.org/rfc/rfc8259
public struct E2EJSONNode: Sendable, Hashable {
    /// One `"key": value` pair of an object, with the line the key is on.
    public struct Member: Sendable, Hashable {
        /// The member's key.
        public var key: String
        /// The 1-based line of the key.
        public var keyLine: Int
        /// The member's value.
        public var value: E2EJSONNode
    }

    /// The kinds of JSON value.
    public indirect enum Value: Sendable, Hashable {
        case null
        case bool(Bool)
        /// A number, with its source text (so integers keep every digit).
        case number(Double, text: String)
        case string(String)
        case array([E2EJSONNode])
        case object([Member])
    }

    /// The value.
    public var value: Value
    /// The 1-based line on which the value starts.
    public var line: Int

    /// A short name of the value's kind, for error messages ("a string", "an object", …).
    public var kindName: String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A syntax error found by ``E2ELineJSON/parse(_:)``: the 1-based line and what was expected.
public struct E2EJSONSyntaxError: Error, Sendable, Hashable {
    /// The 1-based line where the problem is.
    public var line: Int
    /// What is wrong, e.g. `expected ',' or '}' after an object member`.
    public var message: String
}

/// Parses JSON text into ``E2EJSONNode``s that carry line numbers.
public enum E2ELineJSON {
    /// The deepest nesting of arrays and objects accepted.
    public static let maximumDepth = 64

    /// Parses one JSON document.
    ///
    /// - Parameter bytes: UTF-8 JSON text.
    /// - Returns: The root value with line numbers.
    /// - Throws: ``E2EJSONSyntaxError`` naming the line of the first problem.
    /// - Complexity: O(n) in the length of `bytes`.
    public static func parse(_ bytes: [UInt8]) throws(E2EJSONSyntaxError) -> E2EJSONNode {
        var parser = E2EJSONParser(bytes: bytes)
        parser.skipWhitespace()
        let root = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.pos < bytes.count {
            throw parser.error("unexpected text after the end of the JSON document")
        }
        return root
    }
}

private struct E2EJSONParser {
    let bytes: [UInt8]
    var pos = 0
    var line = 1

    init(bytes: [UInt8]) { self.bytes = bytes }

    func error(_ message: String) -> E2EJSONSyntaxError { E2EJSONSyntaxError(line: line, message: message) }

    var current: UInt8? { pos < bytes.count ? bytes[pos] : nil }

    mutating func skipWhitespace() {
        while let c = current {
            switch c {
            case UInt8(ascii: "\n"):
                line += 1
                pos += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                pos += 1
            default:
                return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(E2EJSONSyntaxError) -> E2EJSONNode {
        guard let c = current else { throw error("unexpected end of file, expected a value") }
        let startLine = line
        switch c {
        case UInt8(ascii: "{"):
            return E2EJSONNode(value: try parseObject(depth: depth + 1), line: startLine)
        case UInt8(ascii: "["):
            return E2EJSONNode(value: try parseArray(depth: depth + 1), line: startLine)
        case UInt8(ascii: "\""):
            return E2EJSONNode(value: .string(try parseString()), line: startLine)
        case UInt8(ascii: "t"):
            try expectWord("true")
            return E2EJSONNode(value: .bool(true), line: startLine)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return E2EJSONNode(value: .bool(false), line: startLine)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return E2EJSONNode(value: .null, line: startLine)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return E2EJSONNode(value: try parseNumber(), line: startLine)
        default:
            throw error("unexpected character '\(Character(Unicode.Scalar(c)))', expected a value")
        }
    }

    mutating func expectWord(_ word: String) throws(E2EJSONSyntaxError) {
        let w = Array(word.utf8)
        guard pos + w.count <= bytes.count, Array(bytes[pos..<pos + w.count]) == w else {
            throw error("invalid literal, expected '\(word)'")
        }
        pos += w.count
    }

    mutating func parseObject(depth: Int) throws(E2EJSONSyntaxError) -> E2EJSONNode.Value {
        if depth > E2ELineJSON.maximumDepth { throw error("nesting deeper than \(E2ELineJSON.maximumDepth) levels") }
        pos += 1  // {
        var members: [E2EJSONNode.Member] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            pos += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a quoted key in object") }
            let keyLine = line
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':' after key \"\(key)\"") }
            pos += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(E2EJSONNode.Member(key: key, keyLine: keyLine, value: value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                pos += 1
            case UInt8(ascii: "}"):
                pos += 1
                return .object(members)
            default:
                throw error("expected ',' or '}' after an object member")
            }
        }
    }

    mutating func parseArray(depth: Int) throws(E2EJSONSyntaxError) -> E2EJSONNode.Value {
        if depth > E2ELineJSON.maximumDepth { throw error("nesting deeper than \(E2ELineJSON.maximumDepth) levels") }
        pos += 1  // [
        var elements: [E2EJSONNode] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            pos += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                pos += 1
            case UInt8(ascii: "]"):
                pos += 1
                return .array(elements)
            default:
                throw error("expected ',' or ']' after an array element")
            }
        }
    }

    mutating func parseString() throws(E2EJSONSyntaxError) -> String {
        pos += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard let c = current else { throw error("unterminated string") }
            switch c {
            case UInt8(ascii: "\""):
                pos += 1
                guard let s = String(validating: out, as: UTF8.self) else { throw error("string is not valid UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                pos += 1
                guard let e = current else { throw error("unterminated escape in string") }
                pos += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard current == UInt8(ascii: "\\"), pos + 1 < bytes.count, bytes[pos + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired UTF-16 surrogate in \\u escape") }
                        pos += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw error("unpaired UTF-16 surrogate in \\u escape")
                        }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired UTF-16 surrogate in \\u escape")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default:
                    throw error("invalid escape '\\\(Character(Unicode.Scalar(e)))' in string")
                }
            default:
                if c < 0x20 {
                    throw error(
                        c == 0x0A ? "unterminated string (newline inside a string)" : "control character in string"
                    )
                }
                out.append(c)
                pos += 1
            }
        }
    }

    mutating func parseHex4() throws(E2EJSONSyntaxError) -> UInt32 {
        guard pos + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[pos]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            v = v * 16 + d
            pos += 1
        }
        return v
    }

    mutating func parseNumber() throws(E2EJSONSyntaxError) -> E2EJSONNode.Value {
        let start = pos
        func isDigit(_ c: UInt8?) -> Bool { c.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false }
        if current == UInt8(ascii: "-") { pos += 1 }
        guard isDigit(current) else { throw error("invalid number: expected a digit") }
        if current == UInt8(ascii: "0") {
            pos += 1
            if isDigit(current) { throw error("invalid number: leading zero") }
        } else {
            while isDigit(current) { pos += 1 }
        }
        if current == UInt8(ascii: ".") {
            pos += 1
            guard isDigit(current) else { throw error("invalid number: expected a digit after '.'") }
            while isDigit(current) { pos += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            pos += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { pos += 1 }
            guard isDigit(current) else { throw error("invalid number: expected a digit in the exponent") }
            while isDigit(current) { pos += 1 }
        }
        let text = String(decoding: bytes[start..<pos], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw error("number out of range: \(text)") }
        return .number(value, text: text)
    }
}
