/// The EVENT and PUBLISH body codec without Foundation: the PUBLISH → EVENT path decodes, validates and encodes
/// bodies here (../shared/DESIGN.md "Where speed comes from"; issue 15 item 3).
///
/// Encoding writes what ``WireJSON/encode(_:)`` writes for the same ``EventBody`` (sorted keys, no whitespace,
/// `nil` members left out, integral numbers without a fraction), but the `client` member is never written: in v2
/// it travels in the frame's ``EventTrailer``. Decoding is strict RFC 8259 (no comments, no trailing commas, no
/// leading zeros, no raw control characters, valid UTF-8, at most 64 levels deep), ignores unknown members
/// (PROTOCOL.md §3) and names the offending field in its error, as ``WireJSON/decode(_:from:)`` does.
/// Source: RFC 8259, https://www.rfc-editor.org/rfc/rfc8259
public enum EventJSON {
    /// Encodes `body` as an EVENT body (without `client`).
    /// - Throws: ``WireError`` `invalidBody` for a non-finite number (JSON has none).
    /// - Complexity: O(size of the body); one array allocation.
    public static func encode(_ body: EventBody) throws(WireError) -> [UInt8] {
        var w = JSONWriter()
        w.out.reserveCapacity(384)
        try w.event(body)
        return w.out
    }

    /// Decodes a PUBLISH or EVENT body. A `client` member (v1) is read past and left out.
    /// - Throws: ``WireError`` `invalidBody` naming the field, e.g. `Event body: field 'contentState.status' is
    ///   missing`, or where the text stops being JSON.
    public static func decode(_ bytes: some Collection<UInt8>) throws(WireError) -> EventBody {
        let r: Result<EventBody, WireError>? = bytes.withContiguousStorageIfAvailable { b in
            do throws(WireError) { return .success(try decode(UnsafeRawBufferPointer(b))) } catch {
                return .failure(error)
            }
        }
        if let r { return try r.get() }
        let copy = Array(bytes)
        let result: Result<EventBody, WireError> = copy.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try decode(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Decodes a body from raw bytes. - Throws: as ``decode(_:)-(some Collection<UInt8>)``.
    public static func decode(_ raw: UnsafeRawBufferPointer) throws(WireError) -> EventBody {
        // A canonical body (what `encode` writes: every stored body, most PUBLISHes) is read by literal compares.
        if let body = canonical(raw) {
            try body.validate()
            return body
        }
        return try decodeGeneral(raw)
    }

    /// The strict general reader: any member order, whitespace, escapes, unknown members; words every error.
    /// - Parameters:
    ///   - raw: The body's bytes.
    ///   - what: The first word of every error message: `Event`, or `PUBLISH` on the PUBLISH path
    ///     (``decodePublish(_:)-(UnsafeRawBufferPointer)``), whose range and rule messages say `PUBLISH body:` too.
    /// - Returns: The decoded body.
    /// - Throws: as ``decode(_:)-(some Collection<UInt8>)``.
    static func decodeGeneral(_ raw: UnsafeRawBufferPointer, what: String = "Event") throws(WireError) -> EventBody {
        var r = JSONScanner(raw, what: what)
        r.wholeNumbersAreIntegers = true
        r.skipWhitespace()
        let body = try r.eventBody()
        r.skipWhitespace()
        guard r.i == raw.count else { throw r.syntax("unexpected data after the body's object") }
        try body.validate()  // instants within PROTOCOL.md §3's range
        return body
    }

    /// The ACK body of a PUBLISH: `{"sequence":N}`, written without an encoder.
    public static func ackBody(sequence: UInt64) -> [UInt8] {
        var w = JSONWriter()
        w.out.reserveCapacity(32)
        w.raw("{\"sequence\":")
        w.integer(sequence)
        w.out.append(UInt8(ascii: "}"))
        return w.out
    }
}

// MARK: - Writer

struct JSONWriter {
    var out: [UInt8] = []

    @inline(__always) mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    mutating func integer(_ v: some BinaryInteger) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = UInt64(v.magnitude)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { d in
            var n = 0
            repeat {
                d[n] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                n += 1
            } while m > 0
            while n > 0 {
                n -= 1
                out.append(d[n])
            }
        }
    }

    /// A number as JSONEncoder writes it: integral values (below 2^53) without a fraction, others in Swift's
    /// shortest round-trip form.
    mutating func number(_ v: Double, field: StaticString) throws(WireError) {
        guard v.isFinite else { throw WireError(.invalidBody, "cannot encode body: field '\(field)' is \(v)") }
        if v.rounded() == v && abs(v) < 9_007_199_254_740_992 {
            integer(Int64(v))
        } else {
            out.append(contentsOf: v.description.utf8)
        }
    }

    mutating func string(_ s: String) {
        out.append(UInt8(ascii: "\""))
        var s = s
        let plain = s.withUTF8 { u in
            // Most strings need no escape: one copy.
            guard !u.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                return false
            }
            out.append(contentsOf: u)
            return true
        }
        if plain {
            out.append(UInt8(ascii: "\""))
            return
        }
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0C: raw("\\f")
            case 0..<0x20:
                raw("\\u00")
                let hex: StaticString = "0123456789abcdef"
                hex.withUTF8Buffer { h in
                    out.append(h[Int(c >> 4)])
                    out.append(h[Int(c & 0xF)])
                }
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    mutating func position(_ p: PositionBody) throws(WireError) {
        raw("{\"latitude\":")
        try number(p.latitude, field: "latitude")
        raw(",\"longitude\":")
        try number(p.longitude, field: "longitude")
        out.append(UInt8(ascii: "}"))
    }

    mutating func contentState(_ c: ContentStateBody) throws(WireError) {
        raw("{\"etaTarget\":")
        integer(c.etaTarget)
        raw(",\"lastConfirmed\":")
        integer(c.lastConfirmed)
        raw(",\"progress\":")
        try number(c.progress, field: "contentState.progress")
        if let p = c.riderPosition {
            raw(",\"riderPosition\":")
            try position(p)
        }
        raw(",\"status\":")
        string(c.status)
        raw(",\"summary\":{")
        var first = true
        func member(_ key: StaticString, _ value: String?, _ w: inout JSONWriter) {
            guard let value else { return }
            if !first { w.out.append(UInt8(ascii: ",")) }
            first = false
            w.out.append(UInt8(ascii: "\""))
            w.raw(key)
            w.raw("\":")
            w.string(value)
        }
        member("detailEn", c.summary.detailEn, &self)
        member("detailKo", c.summary.detailKo, &self)
        member("en", c.summary.en, &self)
        member("ko", c.summary.ko, &self)
        raw("}}")
    }

    mutating func event(_ e: EventBody) throws(WireError) {
        raw("{\"contentState\":")
        try contentState(e.contentState)
        if let d = e.dismissalDate {
            raw(",\"dismissalDate\":")
            integer(d)
        }
        raw(",\"event\":")
        string(e.event)
        if let p = e.places {
            raw(",\"places\":{")
            if let c = p.customer {
                raw("\"customer\":")
                try position(c)
                if p.store != nil { out.append(UInt8(ascii: ",")) }
            }
            if let s = p.store {
                raw("\"store\":")
                try position(s)
            }
            out.append(UInt8(ascii: "}"))
        }
        raw(",\"priority\":")
        integer(e.priority)
        raw(",\"relevanceScore\":")
        try number(e.relevanceScore, field: "relevanceScore")
        if let s = e.staleDate {
            raw(",\"staleDate\":")
            integer(s)
        }
        raw(",\"timestamp\":")
        integer(e.timestamp)
        out.append(UInt8(ascii: "}"))
    }
}

// MARK: - Reader

/// A validating pull reader over UTF-8 JSON bytes, with the path of the member being read for error messages.
struct JSONScanner {
    let b: UnsafeRawBufferPointer
    var i = 0
    /// `Event`, `Hello`…: the first word of every error message.
    let what: String
    /// Keys of the members being read, outermost first.
    var path: [StaticString] = []
    var depth = 0
    static let maximumDepth = 64
    /// Whether ``readInt64()`` takes a number written with a fraction or an exponent when its value is exactly a
    /// whole number (`10.0`, `1e1`, `1.5e1`), as JSON has one number type (RFC 8259 §6): the event body's reader
    /// (PROTOCOL.md §3), whose re-encoding writes the integer form. `10.5` is refused either way.
    var wholeNumbersAreIntegers = false

    init(_ b: UnsafeRawBufferPointer, what: String) {
        self.b = b
        self.what = what
    }

    var field: String { path.map { "\($0)" }.joined(separator: ".") }

    func syntax(_ message: String) -> WireError {
        WireError(.invalidBody, "\(what) body is not a valid JSON object: \(message) at byte \(i)")
    }

    func wrongType(_ expected: String) -> WireError {
        if i < b.count && b[i] == UInt8(ascii: "n") {
            return WireError(.invalidBody, "\(what) body: field '\(field)' is null; expected \(expected)")
        }
        return WireError(.invalidBody, "\(what) body: field '\(field)' should be \(expected)")
    }

    /// A member name met twice in one object.
    func duplicate(_ key: [UInt8]) -> WireError {
        let p = (path.map { "\($0)" } + [String(decoding: key, as: UTF8.self)]).joined(separator: ".")
        return WireError(
            .invalidBody,
            "\(what) body: field '\(p)' appears twice; each member name may appear once (RFC 8259 §4)"
        )
    }

    func missing(_ key: StaticString) -> WireError {
        let p = (path.map { "\($0)" } + ["\(key)"]).joined(separator: ".")
        return WireError(.invalidBody, "\(what) body: field '\(p)' is missing")
    }

    @inline(__always) mutating func skipWhitespace() {
        while i < b.count {
            switch b[i] {
            case 0x20, 0x0A, 0x0D, 0x09: i += 1
            default: return
            }
        }
    }

    @inline(__always) func peek() -> UInt8? { i < b.count ? b[i] : nil }

    mutating func expect(_ c: UInt8, _ message: @autoclosure () -> String) throws(WireError) {
        skipWhitespace()
        guard peek() == c else { throw syntax(message()) }
        i += 1
    }

    /// Reads an object's members: `member` is called with the raw key bytes (escapes decoded when present) and
    /// must consume the value.
    /// - Throws: ``WireError`` `invalidBody` for a syntax error, and for a member name that appears twice in one
    ///   object (`field 'event' appears twice`): RFC 8259 §4 leaves such an object's meaning to the reader, and a
    ///   body whose first and last `event` differ would be stored as one and read as the other by another reader.
    mutating func object(
        _ member: (inout JSONScanner, UnsafeRawBufferPointer) throws(WireError) -> Void
    ) throws(WireError) {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else { throw wrongType("an object") }
        depth += 1
        guard depth <= Self.maximumDepth else { throw syntax("nested deeper than \(Self.maximumDepth) levels") }
        i += 1
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            i += 1
            depth -= 1
            return
        }
        // The names read so far in this object: byte ranges of `b` for plain names (no allocation), decoded bytes
        // for the rare escaped one. Objects here have a handful of members, so a linear scan is the cheapest check.
        var seen: [Range<Int>] = []
        var seenEscaped: [[UInt8]] = []
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw syntax("expected a member name in quotes") }
            let start = i + 1
            let hasEscape = try skipString()
            if hasEscape {
                i = start - 1
                let key = Array(try readString().utf8)
                if seenEscaped.contains(key) || seen.contains(where: { b[$0].elementsEqual(key) }) {
                    throw duplicate(key)
                }
                seenEscaped.append(key)
                try expect(UInt8(ascii: ":"), "expected ':' after a member name")
                skipWhitespace()
                let result: Result<Void, WireError> = key.withUnsafeBytes { k in
                    do throws(WireError) { return .success(try member(&self, k)) } catch { return .failure(error) }
                }
                try result.get()
            } else {
                let range = start..<(i - 1)
                let key = UnsafeRawBufferPointer(rebasing: b[range])
                if seen.contains(where: { b[$0].elementsEqual(key) })
                    || seenEscaped.contains(where: { $0.elementsEqual(key) })
                {
                    throw duplicate(Array(key))
                }
                seen.append(range)
                try expect(UInt8(ascii: ":"), "expected ':' after a member name")
                skipWhitespace()
                try member(&self, key)
            }
            skipWhitespace()
            guard let c = peek() else { throw syntax("the object is not closed") }
            i += 1
            if c == UInt8(ascii: "}") { break }
            guard c == UInt8(ascii: ",") else {
                i -= 1
                throw syntax("expected ',' or '}' after an object member")
            }
        }
        depth -= 1
    }

    /// Skips a string starting at the opening quote; returns whether it held an escape. Validates escapes,
    /// control characters and UTF-8.
    @discardableResult
    mutating func skipString() throws(WireError) -> Bool {
        let open = i
        i += 1
        var escaped = false
        var ascii = true
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                if !ascii {
                    guard String(validating: UnsafeRawBufferPointer(rebasing: b[(open + 1)..<i]), as: UTF8.self) != nil
                    else { throw syntax("a string is not valid UTF-8") }
                }
                i += 1
                return escaped
            }
            if c < 0x20 { throw syntax("a control character inside a string must be escaped") }
            if c >= 0x80 { ascii = false }
            if c == UInt8(ascii: "\\") {
                escaped = true
                i += 1
                guard i < b.count else { break }
                switch b[i] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    guard i + 4 < b.count, (1...4).allSatisfy({ Self.hexValue(b[i + $0]) != nil }) else {
                        throw syntax("\\u needs four hex digits")
                    }
                    i += 4
                default: throw syntax("unknown escape in a string")
                }
            }
            i += 1
        }
        i = open
        throw syntax("a string is not closed")
    }

    static func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(c - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(c - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    mutating func readString() throws(WireError) -> String {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else { throw wrongType("a string") }
        let start = i + 1
        let escaped = try skipString()
        let raw = UnsafeRawBufferPointer(rebasing: b[start..<(i - 1)])
        if !escaped { return String(decoding: raw, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var j = 0
        func hex4(_ at: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 << 4 | (Self.hexValue(raw[at + $1]) ?? 0) }
        }
        while j < raw.count {
            let c = raw[j]
            guard c == UInt8(ascii: "\\") else {
                out.append(c)
                j += 1
                continue
            }
            let e = raw[j + 1]
            j += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(j)
                j += 4
                if (0xD800..<0xDC00).contains(scalar), j + 5 < raw.count, raw[j] == UInt8(ascii: "\\"),
                    raw[j + 1] == UInt8(ascii: "u")
                {
                    let low = hex4(j + 2)
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        j += 6
                    }
                }
                guard let u = Unicode.Scalar(scalar) else {
                    throw syntax("\\u\(String(scalar, radix: 16)) is a lone surrogate")
                }
                out.append(contentsOf: String(Character(u)).utf8)
            default: out.append(e)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The extent of a number token at `i`, validated against RFC 8259's grammar; `integral` when it has no
    /// fraction or exponent.
    mutating func numberToken() throws(WireError) -> (Range<Int>, integral: Bool) {
        skipWhitespace()
        let start = i
        func digit(_ k: Int) -> Bool { k < b.count && b[k] >= UInt8(ascii: "0") && b[k] <= UInt8(ascii: "9") }
        if peek() == UInt8(ascii: "-") { i += 1 }
        guard digit(i) else {
            i = start
            throw wrongType("a number")
        }
        if b[i] == UInt8(ascii: "0") {
            i += 1
            if digit(i) { throw syntax("a number has a leading zero") }
        } else {
            while digit(i) { i += 1 }
        }
        var integral = true
        if peek() == UInt8(ascii: ".") {
            integral = false
            i += 1
            guard digit(i) else { throw syntax("a digit must follow the decimal point") }
            while digit(i) { i += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            integral = false
            i += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { i += 1 }
            guard digit(i) else { throw syntax("a digit must follow the exponent") }
            while digit(i) { i += 1 }
        }
        return (start..<i, integral)
    }

    mutating func readInt64() throws(WireError) -> Int64 {
        let (r, integral) = try numberToken()
        guard integral else {
            if wholeNumbersAreIntegers, let v = try wholeNumber(r) { return v }
            i = r.lowerBound
            throw wrongType("an integer")
        }
        var k = r.lowerBound
        let negative = b[k] == UInt8(ascii: "-")
        if negative { k += 1 }
        var m: UInt64 = 0
        while k < r.upperBound {
            let (x, o1) = m.multipliedReportingOverflow(by: 10)
            let (y, o2) = x.addingReportingOverflow(UInt64(b[k] - UInt8(ascii: "0")))
            guard !o1, !o2 else {
                i = r.lowerBound
                throw WireError(.invalidBody, "\(what) body: field '\(field)' is out of range for a 64-bit integer")
            }
            m = y
            k += 1
        }
        if negative {
            guard m <= UInt64(Int64.max) + 1 else {
                throw WireError(.invalidBody, "\(what) body: field '\(field)' is out of range for a 64-bit integer")
            }
            return m == UInt64(Int64.max) + 1 ? Int64.min : -Int64(m)
        }
        guard m <= UInt64(Int64.max) else {
            throw WireError(.invalidBody, "\(what) body: field '\(field)' is out of range for a 64-bit integer")
        }
        return Int64(m)
    }

    /// The value of the number token `r` (with a fraction or an exponent) when it is exactly a whole number, computed
    /// from its decimal digits (no `Double` rounding: `9007199254740993.0` is 9007199254740993); `nil` when it has a
    /// non-zero fractional part.
    /// - Throws: ``WireError`` `invalidBody` when the whole number is outside `Int64`.
    func wholeNumber(_ r: Range<Int>) throws(WireError) -> Int64? {
        func tooLarge() -> WireError {
            WireError(.invalidBody, "\(what) body: field '\(field)' is out of range for a 64-bit integer")
        }
        var k = r.lowerBound
        let negative = b[k] == UInt8(ascii: "-")
        if negative { k += 1 }
        // The significant digits (integer part, then fraction), and how many of them are the fraction's.
        var digits: [UInt8] = []
        var fraction = 0
        var inFraction = false
        while k < r.upperBound, b[k] != UInt8(ascii: "e"), b[k] != UInt8(ascii: "E") {
            if b[k] == UInt8(ascii: ".") {
                inFraction = true
            } else {
                digits.append(b[k] - UInt8(ascii: "0"))
                if inFraction { fraction += 1 }
            }
            k += 1
        }
        var exponent = 0
        if k < r.upperBound {
            k += 1
            var negativeExponent = false
            if b[k] == UInt8(ascii: "+") || b[k] == UInt8(ascii: "-") {
                negativeExponent = b[k] == UInt8(ascii: "-")
                k += 1
            }
            while k < r.upperBound {
                exponent = min(exponent * 10 + Int(b[k] - UInt8(ascii: "0")), 100_000)  // saturates; far past Int64
                k += 1
            }
            if negativeExponent { exponent = -exponent }
        }
        guard let first = digits.firstIndex(where: { $0 != 0 }) else { return 0 }  // 0.0, -0e5: zero
        // value = digits × 10^(exponent − fraction): whole when the digits dropped by a negative power are zeros.
        var scale = exponent - fraction
        var end = digits.count
        while scale < 0, end > first, digits[end - 1] == 0 {
            end -= 1
            scale += 1
        }
        if scale < 0 { return nil }
        guard end - first + scale <= 19 else { throw tooLarge() }
        var m: UInt64 = 0
        for d in digits[first..<end] + [UInt8](repeating: 0, count: scale) {
            let (x, o1) = m.multipliedReportingOverflow(by: 10)
            let (y, o2) = x.addingReportingOverflow(UInt64(d))
            guard !o1, !o2 else { throw tooLarge() }
            m = y
        }
        if negative {
            guard m <= UInt64(Int64.max) + 1 else { throw tooLarge() }
            return m == UInt64(Int64.max) + 1 ? Int64.min : -Int64(m)
        }
        guard m <= UInt64(Int64.max) else { throw tooLarge() }
        return Int64(m)
    }

    mutating func readDouble() throws(WireError) -> Double {
        let (r, _) = try numberToken()
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: b[r]), as: UTF8.self)
        guard let v = Double(text), v.isFinite else {
            throw WireError(.invalidBody, "\(what) body: field '\(field)' is out of range for a number")
        }
        return v
    }

    /// `true` (and past it) when the next value is `null`.
    mutating func readNull() throws(WireError) -> Bool {
        skipWhitespace()
        guard peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    mutating func literal(_ word: StaticString) throws(WireError) {
        let n = word.utf8CodeUnitCount
        let ok = word.withUTF8Buffer { w in
            i + n <= b.count && (0..<n).allSatisfy { b[i + $0] == w[$0] }
        }
        guard ok else { throw syntax("expected \(word)") }
        i += n
    }

    /// Reads past any JSON value, validating it.
    mutating func skipValue() throws(WireError) {
        skipWhitespace()
        guard let c = peek() else { throw syntax("expected a value") }
        switch c {
        case UInt8(ascii: "{"):
            try object { (r, _) throws(WireError) in try r.skipValue() }
        case UInt8(ascii: "["):
            depth += 1
            guard depth <= Self.maximumDepth else { throw syntax("nested deeper than \(Self.maximumDepth) levels") }
            i += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                i += 1
            } else {
                while true {
                    try skipValue()
                    skipWhitespace()
                    guard let d = peek() else { throw syntax("the array is not closed") }
                    i += 1
                    if d == UInt8(ascii: "]") { break }
                    guard d == UInt8(ascii: ",") else {
                        i -= 1
                        throw syntax("expected ',' or ']' after an array element")
                    }
                }
            }
            depth -= 1
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try numberToken()
        }
    }

    @inline(__always)
    static func key(_ k: UnsafeRawBufferPointer, is name: StaticString) -> Bool {
        name.withUTF8Buffer { n in n.count == k.count && memcmpEqual(n, k) }
    }

    @inline(__always)
    static func memcmpEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeRawBufferPointer) -> Bool {
        for j in 0..<a.count where a[j] != b[j] { return false }
        return true
    }

    // MARK: Typed members

    mutating func member<T>(
        _ key: StaticString,
        _ read: (inout JSONScanner) throws(WireError) -> T
    ) throws(WireError) -> T {
        path.append(key)
        let v = try read(&self)
        path.removeLast()
        return v
    }

    mutating func optional<T>(
        _ key: StaticString,
        _ read: (inout JSONScanner) throws(WireError) -> T
    ) throws(WireError) -> T? {
        path.append(key)
        defer { path.removeLast() }
        if try readNull() { return nil }
        return try read(&self)
    }

    mutating func position() throws(WireError) -> PositionBody {
        var lat: Double?
        var lon: Double?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "latitude") {
                lat = try r.member("latitude") { (r) throws(WireError) in try r.readDouble() }
            } else if Self.key(k, is: "longitude") {
                lon = try r.member("longitude") { (r) throws(WireError) in try r.readDouble() }
            } else {
                try r.skipValue()
            }
        }
        guard let lat else { throw missing("latitude") }
        guard let lon else { throw missing("longitude") }
        return PositionBody(latitude: lat, longitude: lon)
    }

    mutating func summary() throws(WireError) -> SummaryBody {
        var ko: String?
        var en: String?
        var detailKo: String?
        var detailEn: String?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "ko") {
                ko = try r.member("ko") { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "en") {
                en = try r.member("en") { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "detailKo") {
                detailKo = try r.optional("detailKo") { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "detailEn") {
                detailEn = try r.optional("detailEn") { (r) throws(WireError) in try r.readString() }
            } else {
                try r.skipValue()
            }
        }
        guard let ko else { throw missing("ko") }
        guard let en else { throw missing("en") }
        return SummaryBody(ko: ko, en: en, detailKo: detailKo, detailEn: detailEn)
    }

    mutating func contentState() throws(WireError) -> ContentStateBody {
        var status: String?
        var summary: SummaryBody?
        var eta: Int64?
        var progress: Double?
        var rider: PositionBody?
        var confirmed: Int64?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "status") {
                status = try r.member("status") { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "summary") {
                summary = try r.member("summary") { (r) throws(WireError) in try r.summary() }
            } else if Self.key(k, is: "etaTarget") {
                eta = try r.member("etaTarget") { (r) throws(WireError) in try r.readInt64() }
            } else if Self.key(k, is: "progress") {
                progress = try r.member("progress") { (r) throws(WireError) in try r.readDouble() }
            } else if Self.key(k, is: "riderPosition") {
                rider = try r.optional("riderPosition") { (r) throws(WireError) in try r.position() }
            } else if Self.key(k, is: "lastConfirmed") {
                confirmed = try r.member("lastConfirmed") { (r) throws(WireError) in try r.readInt64() }
            } else {
                try r.skipValue()
            }
        }
        guard let status else { throw missing("status") }
        guard let summary else { throw missing("summary") }
        guard let eta else { throw missing("etaTarget") }
        guard let progress else { throw missing("progress") }
        guard let confirmed else { throw missing("lastConfirmed") }
        return ContentStateBody(
            status: status,
            summary: summary,
            etaTarget: eta,
            progress: progress,
            riderPosition: rider,
            lastConfirmed: confirmed
        )
    }

    mutating func places() throws(WireError) -> PlacesBody {
        var store: PositionBody?
        var customer: PositionBody?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "store") {
                store = try r.optional("store") { (r) throws(WireError) in try r.position() }
            } else if Self.key(k, is: "customer") {
                customer = try r.optional("customer") { (r) throws(WireError) in try r.position() }
            } else {
                try r.skipValue()
            }
        }
        return PlacesBody(store: store, customer: customer)
    }

    mutating func eventBody() throws(WireError) -> EventBody {
        guard peek() == UInt8(ascii: "{") else { throw syntax("expected '{'") }
        var event: String?
        var timestamp: Int64?
        var content: ContentStateBody?
        var stale: Int64?
        var relevance: Double?
        var dismissal: Int64?
        var priority: Int64?
        var places: PlacesBody?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "event") {
                event = try r.member("event") { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "timestamp") {
                timestamp = try r.member("timestamp") { (r) throws(WireError) in try r.readInt64() }
            } else if Self.key(k, is: "contentState") {
                content = try r.member("contentState") { (r) throws(WireError) in try r.contentState() }
            } else if Self.key(k, is: "staleDate") {
                stale = try r.optional("staleDate") { (r) throws(WireError) in try r.readInt64() }
            } else if Self.key(k, is: "relevanceScore") {
                relevance = try r.member("relevanceScore") { (r) throws(WireError) in try r.readDouble() }
            } else if Self.key(k, is: "dismissalDate") {
                dismissal = try r.optional("dismissalDate") { (r) throws(WireError) in try r.readInt64() }
            } else if Self.key(k, is: "priority") {
                priority = try r.member("priority") { (r) throws(WireError) in try r.readInt64() }
            } else if Self.key(k, is: "places") {
                places = try r.optional("places") { (r) throws(WireError) in try r.places() }
            } else {
                // `client` (set per session, in v2 the trailer) and members of later versions.
                try r.skipValue()
            }
        }
        guard let event else { throw missing("event") }
        guard let timestamp else { throw missing("timestamp") }
        guard let content else { throw missing("contentState") }
        guard let relevance else { throw missing("relevanceScore") }
        guard let priority else { throw missing("priority") }
        guard let p = Int(exactly: priority) else {
            throw WireError(.invalidBody, "\(what) body: field 'priority' is out of range")
        }
        return EventBody(
            event: event,
            timestamp: timestamp,
            contentState: content,
            staleDate: stale,
            relevanceScore: relevance,
            dismissalDate: dismissal,
            priority: p,
            places: places
        )
    }
}
