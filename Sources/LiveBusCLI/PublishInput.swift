/// Why some bytes are not one JSON object, as precisely as a person needs to fix the line: the first byte that is
/// not UTF-8, the point where the text ends inside a value, a number out of a double's range, or the first byte
/// that cannot be there (RFC 8259's grammar; UTF-8 as RFC 3629 defines it, without overlong forms or surrogates).
/// Byte positions are 0-based offsets into the checked bytes.
enum JSONTextProblem: Error, Equatable {
    /// Not UTF-8 from this byte on.
    case invalidUTF8(at: Int)
    /// The text ends inside a value: `"a string"`, `"an object"` or `"an array"`.
    case endsInside(String)
    /// A number whose value is beyond a double's range (±1.8e308): its text.
    case numberOutOfRange(String)
    /// A byte that cannot be there: what it is, for a person (`'x'`, `byte 0xFF`, `a control character`).
    case unexpected(String, at: Int)
    /// Objects and arrays nested deeper than ``JSONTextCheck/maximumDepth``.
    case tooDeep(at: Int)
    /// A second value after the first one, starting at this byte.
    case moreThanOneValue(at: Int)
    /// One valid value that is not an object: `"an array"`, `"a string"`, `"a number"`, `"true"`…
    case notAnObject(String)
}

/// The grammar check of ``JSONTextProblem``: no values are built, the bytes are only walked.
enum JSONTextCheck {
    /// The deepest nesting accepted (an event body is 3 or 4 levels deep).
    static let maximumDepth = 256

    /// The first problem of `bytes` as one JSON object, or `nil` when it is one (surrounded by whitespace at most).
    /// - Complexity: O(bytes).
    static func problem(_ bytes: [UInt8]) -> JSONTextProblem? {
        if let at = firstInvalidUTF8(bytes) { return .invalidUTF8(at: at) }
        var s = Scanner(b: bytes)
        do throws(JSONTextProblem) {
            s.skipWhitespace()
            let kind = try s.value(depth: 0, inside: nil)
            s.skipWhitespace()
            if s.i < bytes.count { return .moreThanOneValue(at: s.i) }
            return kind == "an object" ? nil : .notAnObject(kind)
        } catch {
            return error
        }
    }

    /// The offset of the first byte that does not start a well-formed UTF-8 sequence, or `nil`.
    static func firstInvalidUTF8(_ b: [UInt8]) -> Int? {
        var i = 0
        while i < b.count {
            let c = b[i]
            if c < 0x80 {
                i += 1
                continue
            }
            let more: Int
            let least: UInt32
            if c & 0xE0 == 0xC0 {
                (more, least) = (1, 0x80)
            } else if c & 0xF0 == 0xE0 {
                (more, least) = (2, 0x800)
            } else if c & 0xF8 == 0xF0 {
                (more, least) = (3, 0x1_0000)
            } else {
                return i
            }
            guard i + more < b.count else { return i }
            var v = UInt32(c) & (0x3F >> UInt32(more))
            for k in 1...more {
                let d = b[i + k]
                guard d & 0xC0 == 0x80 else { return i }
                v = v << 6 | UInt32(d & 0x3F)
            }
            guard v >= least, v <= 0x10_FFFF, !(0xD800...0xDFFF).contains(v) else { return i }
            i += more + 1
        }
        return nil
    }

    private struct Scanner {
        let b: [UInt8]
        var i = 0

        mutating func skipWhitespace() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        }

        func unexpected() -> JSONTextProblem {
            let c = b[i]
            let what =
                c < 0x20
                ? "a control character" : c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "a non-ASCII character"
            return .unexpected(what, at: i)
        }

        /// Reads one value; returns what it is ("an object", "a string"…).
        mutating func value(depth: Int, inside: String?) throws(JSONTextProblem) -> String {
            guard i < b.count else { throw .endsInside(inside ?? "a value") }
            switch b[i] {
            case UInt8(ascii: "{"):
                guard depth < JSONTextCheck.maximumDepth else { throw .tooDeep(at: i) }
                i += 1
                skipWhitespace()
                if i < b.count, b[i] == UInt8(ascii: "}") {
                    i += 1
                    return "an object"
                }
                while true {
                    guard i < b.count else { throw .endsInside("an object") }
                    guard b[i] == UInt8(ascii: "\"") else { throw unexpected() }
                    try string()
                    skipWhitespace()
                    guard i < b.count else { throw .endsInside("an object") }
                    guard b[i] == UInt8(ascii: ":") else { throw unexpected() }
                    i += 1
                    skipWhitespace()
                    _ = try value(depth: depth + 1, inside: "an object")
                    skipWhitespace()
                    guard i < b.count else { throw .endsInside("an object") }
                    if b[i] == UInt8(ascii: "}") {
                        i += 1
                        return "an object"
                    }
                    guard b[i] == UInt8(ascii: ",") else { throw unexpected() }
                    i += 1
                    skipWhitespace()
                }
            case UInt8(ascii: "["):
                guard depth < JSONTextCheck.maximumDepth else { throw .tooDeep(at: i) }
                i += 1
                skipWhitespace()
                if i < b.count, b[i] == UInt8(ascii: "]") {
                    i += 1
                    return "an array"
                }
                while true {
                    _ = try value(depth: depth + 1, inside: "an array")
                    skipWhitespace()
                    guard i < b.count else { throw .endsInside("an array") }
                    if b[i] == UInt8(ascii: "]") {
                        i += 1
                        return "an array"
                    }
                    guard b[i] == UInt8(ascii: ",") else { throw unexpected() }
                    i += 1
                    skipWhitespace()
                }
            case UInt8(ascii: "\""):
                try string()
                return "a string"
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number(inside: inside)
                return "a number"
            case UInt8(ascii: "t"): return try literal("true", inside: inside)
            case UInt8(ascii: "f"): return try literal("false", inside: inside)
            case UInt8(ascii: "n"): return try literal("null", inside: inside)
            default:
                throw unexpected()
            }
        }

        mutating func literal(_ word: String, inside: String?) throws(JSONTextProblem) -> String {
            let start = i
            for w in word.utf8 {
                guard i < b.count else { throw .endsInside(inside ?? "a value") }
                guard b[i] == w else {
                    i = start  // `nope` is unexpected from its first letter, not from its second
                    throw unexpected()
                }
                i += 1
            }
            return word
        }

        mutating func string() throws(JSONTextProblem) {
            i += 1  // the opening quote
            while i < b.count {
                let c = b[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    return
                }
                if c < 0x20 { throw unexpected() }
                if c == UInt8(ascii: "\\") {
                    i += 1
                    guard i < b.count else { break }
                    switch b[i] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        i += 1
                    case UInt8(ascii: "u"):
                        i += 1
                        for _ in 0..<4 {
                            guard i < b.count else { throw .endsInside("a string") }
                            guard Self.isHex(b[i]) else { throw unexpected() }
                            i += 1
                        }
                    default:
                        throw unexpected()
                    }
                    continue
                }
                i += 1
            }
            throw .endsInside("a string")
        }

        static func isHex(_ c: UInt8) -> Bool {
            (0x30...0x39).contains(c) || (0x41...0x46).contains(c) || (0x61...0x66).contains(c)
        }

        static func isDigit(_ c: UInt8) -> Bool { (0x30...0x39).contains(c) }

        mutating func number(inside: String?) throws(JSONTextProblem) {
            let start = i
            func digits(_ s: inout Scanner) throws(JSONTextProblem) {
                guard s.i < s.b.count else { throw .endsInside(inside ?? "a value") }
                guard Scanner.isDigit(s.b[s.i]) else { throw s.unexpected() }
                while s.i < s.b.count, Scanner.isDigit(s.b[s.i]) { s.i += 1 }
            }
            if b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count else { throw .endsInside(inside ?? "a value") }
            if b[i] == UInt8(ascii: "0") {
                i += 1
            } else {
                try digits(&self)
            }
            if i < b.count, b[i] == UInt8(ascii: ".") {
                i += 1
                try digits(&self)
            }
            if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
                i += 1
                if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
                try digits(&self)
            }
            let text = String(decoding: b[start..<i], as: UTF8.self)
            if let v = Double(text), !v.isFinite { throw .numberOutOfRange(text) }
        }
    }
}

/// The event bodies of `livebus publish`'s input as it arrives: one JSON object per line (NDJSON; blank lines
/// skipped), or, when the first body starts an object it does not close on its line, one object over several lines
/// (a pretty-printed file). Bytes go in as they are read; each complete body comes out with the line it starts on,
/// and the first line that is not one, with what is wrong with it, after which nothing more comes out.
struct PublishInput {
    /// One event body of the input, with the line it starts on (1-based).
    struct Item: Equatable {
        var line: Int
        var body: [UInt8]
    }

    /// A line that is not one event body: its number (1-based) and what is wrong, for a person.
    struct Problem: Error, Equatable {
        var line: Int
        var message: String
    }

    /// What the input gave so far.
    enum Output: Equatable {
        case item(Item)
        case problem(Problem)
    }

    /// The longest body accepted, in bytes: what a PUBLISH frame holds besides its header and topic.
    let maximumBodyBytes: Int
    private var partial: [UInt8] = []
    private var linesRead = 0
    private var gathering: (start: Int, bytes: [UInt8])?
    private(set) var items = 0
    /// The number (1-based) of the next line to come: the first line not read in full.
    var nextLine: Int { linesRead + 1 }
    private(set) var failed = false

    /// - Parameter maximumBodyBytes: The longest body (Frame.maximumSize minus the header and the topic).
    init(maximumBodyBytes: Int) { self.maximumBodyBytes = maximumBodyBytes }

    /// Takes the next bytes of the input; returns the bodies (and at most one problem, last) they complete.
    mutating func append(_ bytes: UnsafeRawBufferPointer) -> [Output] {
        var out: [Output] = []
        guard !failed else { return out }
        var start = 0
        for (k, c) in bytes.enumerated() where c == 0x0A {
            partial.append(contentsOf: bytes[start..<k])
            start = k + 1
            let line = partial
            partial.removeAll(keepingCapacity: true)
            take(line, terminated: true, into: &out)
            if failed { return out }
        }
        partial.append(contentsOf: bytes[start...])
        // Bounded memory whatever the input (a file without newlines): a body longer than a frame fails now.
        if let g = gathering, g.bytes.count + partial.count > maximumBodyBytes {
            fail(g.start, "the object is longer than \(maximumBodyBytes) bytes, the most a PUBLISH frame holds", &out)
        } else if gathering == nil, partial.count > maximumBodyBytes {
            fail(
                linesRead + 1,
                "the line is longer than \(maximumBodyBytes) bytes, the most a PUBLISH frame holds",
                &out
            )
        }
        return out
    }

    /// The end of the input: the last line (without a newline) and an object still open.
    mutating func finish() -> [Output] {
        var out: [Output] = []
        guard !failed else { return out }
        if !partial.isEmpty { take(partial, terminated: false, into: &out) }
        partial = []
        if !failed, let g = gathering {
            let why: String
            if case .endsInside(let what)? = JSONTextCheck.problem(g.bytes) {
                why = "ends inside \(what)"
            } else {
                why = "ends inside an object"
            }
            fail(g.start, "\(why) (the input ended first)", &out)
        }
        return out
    }

    private mutating func fail(_ line: Int, _ message: String, _ out: inout [Output]) {
        failed = true
        gathering = nil
        out.append(.problem(Problem(line: line, message: message)))
    }

    private static let spansLines =
        "not one JSON object per line (NDJSON); a pretty-printed object spans lines — use `jq -c`"

    private mutating func take(_ line: [UInt8], terminated: Bool, into out: inout [Output]) {
        linesRead += 1
        if var g = gathering {
            g.bytes += line
            g.bytes.append(0x0A)
            guard g.bytes.count <= maximumBodyBytes else {
                fail(
                    g.start,
                    "the object is longer than \(maximumBodyBytes) bytes, the most a PUBLISH frame holds",
                    &out
                )
                return
            }
            switch JSONTextCheck.problem(g.bytes) {
            case nil:
                gathering = nil
                items += 1
                out.append(.item(Item(line: g.start, body: g.bytes)))
            case .endsInside?:
                gathering = g
            case let p?:
                let (n, _) = Self.position(of: p, in: g.bytes, startLine: g.start)
                fail(n, Self.describe(p, in: g.bytes, startLine: g.start), &out)
            }
            return
        }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
        guard line.count <= maximumBodyBytes else {
            fail(linesRead, "the line is \(line.count) bytes; a PUBLISH frame holds at most \(maximumBodyBytes)", &out)
            return
        }
        switch JSONTextCheck.problem(line) {
        case nil:
            items += 1
            out.append(.item(Item(line: linesRead, body: line)))
        case .endsInside(let what)? where what != "a string" && terminated && items == 0:
            // The first body opens an object it does not close on its line: one (pretty-printed) object.
            gathering = (linesRead, line + [0x0A])
        case .endsInside(let what)? where what != "a string" && terminated:
            fail(linesRead, Self.spansLines, &out)
        case let p?:
            fail(linesRead, Self.describe(p, in: line, startLine: linesRead), &out)
        }
    }

    /// The line (1-based) and byte in it (1-based) of a problem's offset in `bytes`, which start at `startLine`.
    static func position(of p: JSONTextProblem, in bytes: [UInt8], startLine: Int) -> (line: Int, byte: Int) {
        let at: Int
        switch p {
        case .invalidUTF8(let a), .unexpected(_, let a), .tooDeep(let a), .moreThanOneValue(let a): at = a
        default: return (startLine, 0)
        }
        let before = bytes[..<min(at, bytes.count)]
        let newlines = before.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        let lineStart = (before.lastIndex(of: 0x0A) ?? -1) + 1
        return (startLine + newlines, at - lineStart + 1)
    }

    /// A problem in words, with its byte in the line when it has one.
    static func describe(_ p: JSONTextProblem, in bytes: [UInt8], startLine: Int) -> String {
        let byte = position(of: p, in: bytes, startLine: startLine).byte
        switch p {
        case .invalidUTF8: return "not valid UTF-8 at byte \(byte)"
        case .endsInside(let what): return "ends inside \(what)"
        case .numberOutOfRange(let text): return "number \(text) is out of range (a double holds up to ±1.8e308)"
        case .unexpected(let what, _): return "not JSON: unexpected \(what) at byte \(byte)"
        case .tooDeep: return "nested deeper than \(JSONTextCheck.maximumDepth) levels at byte \(byte)"
        case .moreThanOneValue:
            return startLine == position(of: p, in: bytes, startLine: startLine).line
                ? "a second JSON value at byte \(byte); give one object per line (NDJSON)" : spansLines
        case .notAnObject(let kind):
            return "\(kind), not a JSON object: each line is one event body (an object, PROTOCOL.md §5.1)"
        }
    }
}
