/// The fast path of ``EventJSON``: a body already in canonical form — exactly the bytes ``EventJSON/encode(_:)``
/// writes for the body it holds — is read in one pass of literal compares, and its bytes can be stored and fanned
/// out as they are instead of encoding the decoded body again (issue 15 item 3, "encode once").
///
/// Canonical means: the members ``EventJSON/encode(_:)`` writes, in its order (sorted keys), no whitespace, no
/// `null` members, no `client` and no unknown members; strings without escapes (valid UTF-8, no control
/// characters); integers without a sign on zero; numbers either integral (at most 15 digits) or a plain decimal
/// fraction of at most 15 significant digits, no trailing zero, at least 1e-4 in magnitude (what Swift's shortest
/// round-trip `description` writes for such a value). Anything else — including every malformed body — returns
/// `nil` and is read by the general strict reader, which alone words the errors, so accepting a body here never
/// changes what is accepted or how it reads.
///
/// Why the numbers are exact: a decimal of at most 15 significant digits is an integer `m < 2⁵³` times `10⁻ᵏ`
/// with `k ≤ 18`, both exact doubles, so `m / 10ᵏ` is the correctly rounded value `Double(String)` returns
/// (Clinger's fast path); and no other decimal of at most 15 digits rounds to the same double (DBL_DIG = 15), so
/// it is also the shortest round-trip form.
/// Sources: RFC 8259; W. D. Clinger, "How to read floating point numbers accurately" (PLDI 1990).
extension EventJSON {
    /// Decodes a PUBLISH or EVENT body and says whether `raw` is its canonical encoding (then
    /// `EventJSON.encode(body)` would write exactly `raw`: store and fan out `raw`).
    /// - Throws: ``WireError`` `invalidBody`, as ``decode(_:)-(UnsafeRawBufferPointer)``.
    public static func decodeCanonical(_ raw: UnsafeRawBufferPointer) throws(WireError) -> (
        body: EventBody, isCanonical: Bool
    ) {
        if let body = canonical(raw) {
            try body.validate()
            return (body, true)
        }
        return (try decodeGeneral(raw), false)
    }

    /// Decodes a PUBLISH or EVENT body (see ``decodeCanonical(_:)``).
    /// - Throws: ``WireError`` `invalidBody`, as ``decode(_:)-(UnsafeRawBufferPointer)``.
    public static func decodeCanonical(_ bytes: [UInt8]) throws(WireError) -> (body: EventBody, isCanonical: Bool) {
        let r: Result<(body: EventBody, isCanonical: Bool), WireError> = bytes.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try decodeCanonical(raw)) } catch { return .failure(error) }
        }
        return try r.get()
    }

    /// The body when `raw` is canonical, else `nil` (without a word on why: the general reader says it).
    static func canonical(_ raw: UnsafeRawBufferPointer) -> EventBody? { canonicalMeasured(raw)?.body }

    /// The body when `raw` is canonical, with its `contentState` member's size in bytes (measured while reading:
    /// the canonical encoding of the content state is that slice of `raw`), else `nil`.
    static func canonicalMeasured(_ raw: UnsafeRawBufferPointer) -> (body: EventBody, contentStateBytes: Int)? {
        var r = CanonicalReader(raw)
        guard let body = r.eventBody(), r.i == raw.count else { return nil }
        assert(
            (try? EventJSON.encode(body)) == Array(raw),
            "the canonical reader accepted bytes EventJSON.encode does not write"
        )
        return (body, r.contentStateBytes)
    }
}

/// A reader of canonical event bodies only: every method returns `nil` at the first byte that differs from what
/// ``JSONWriter`` would write.
struct CanonicalReader {
    let b: UnsafeRawBufferPointer
    var i = 0
    /// The size of the `contentState` member's value once ``eventBody()`` read it, bytes.
    var contentStateBytes = 0

    init(_ b: UnsafeRawBufferPointer) { self.b = b }

    /// Past `s` when the next bytes are `s`: compared eight bytes at a time (a byte loop was most of the reader's
    /// literal compares, callgrind publish profile).
    @inline(__always)
    mutating func literal(_ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard n > 0, i + n <= b.count, let p = b.baseAddress.map({ $0 + i }) else { return n == 0 }
        let same = s.withUTF8Buffer { w in memcmpEqual(p, UnsafeRawPointer(w.baseAddress!), n) }
        if same { i += n }
        return same
    }

    @inline(__always)
    func byte(_ k: Int) -> UInt8? { k < b.count ? b[k] : nil }

    @inline(__always)
    static func isDigit(_ c: UInt8?) -> Bool {
        guard let c else { return false }
        return c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")
    }

    /// Digits `[i, end)` as an integer, `nil` past `UInt64`.
    mutating func digits() -> (value: UInt64, count: Int)? {
        let start = i
        var m: UInt64 = 0
        while i < b.count {
            let d = b[i] &- UInt8(ascii: "0")
            guard d < 10 else { break }
            if i - start < 19 {
                // 19 digits are at most 9 999 999 999 999 999 999 < 2⁶⁴: no overflow check needed before the 20th.
                m = m &* 10 &+ UInt64(d)
            } else {
                let (x, o1) = m.multipliedReportingOverflow(by: 10)
                let (y, o2) = x.addingReportingOverflow(UInt64(d))
                guard !o1, !o2 else { return nil }
                m = y
            }
            i += 1
        }
        return (m, i - start)
    }

    /// An integer as ``JSONWriter/integer(_:)`` writes it.
    mutating func int64() -> Int64? {
        let negative = byte(i) == UInt8(ascii: "-")
        if negative { i += 1 }
        guard let first = byte(i), Self.isDigit(first) else { return nil }
        if first == UInt8(ascii: "0") {
            // "0" alone; "-0" is written "0", "01" is not JSON.
            guard !negative, !Self.isDigit(byte(i + 1)) else { return nil }
            i += 1
            return Self.endsNumber(byte(i)) ? 0 : nil
        }
        guard let (m, _) = digits(), Self.endsNumber(byte(i)) else { return nil }
        if negative {
            guard m <= UInt64(Int64.max) + 1 else { return nil }
            return m == UInt64(Int64.max) + 1 ? Int64.min : -Int64(m)
        }
        guard m <= UInt64(Int64.max) else { return nil }
        return Int64(m)
    }

    /// A number ends at a member separator or an object's end (no fraction, no exponent after an integer).
    @inline(__always)
    static func endsNumber(_ c: UInt8?) -> Bool { c == UInt8(ascii: ",") || c == UInt8(ascii: "}") }

    /// Powers of ten exactly representable as doubles (10⁰…10²²).
    static let exactPowersOfTen: [Double] = (0...22).map { k in (0..<k).reduce(1.0) { r, _ in r * 10 } }

    /// A number as ``JSONWriter/number(_:field:)`` writes it (see the type's comment for the forms taken).
    mutating func double() -> Double? {
        let negative = byte(i) == UInt8(ascii: "-")
        if negative { i += 1 }
        guard let first = byte(i), Self.isDigit(first) else { return nil }
        if first == UInt8(ascii: "0") && Self.isDigit(byte(i + 1)) { return nil }
        guard let (intPart, intDigits) = digits(), intDigits <= 15 else { return nil }
        if Self.endsNumber(byte(i)) {
            // Integral: the writer writes integral values below 2⁵³ as integers; "-0" it writes "0".
            guard !(negative && intPart == 0) else { return nil }
            let v = Double(intPart)
            return negative ? -v : v
        }
        guard byte(i) == UInt8(ascii: ".") else { return nil }
        i += 1
        let fracStart = i
        var m = intPart
        var leadingZeros = 0
        var significant = intPart == 0 ? 0 : intDigits
        while let c = byte(i), c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") {
            if significant == 0 && c == UInt8(ascii: "0") {
                leadingZeros += 1
            } else {
                significant += 1
            }
            guard significant <= 15 else { return nil }
            m = m * 10 + UInt64(c - UInt8(ascii: "0"))
            i += 1
        }
        let k = i - fracStart
        // No fraction digit, a trailing zero (the writer's shortest form has none), a value below 1e-4 (written
        // with an exponent) or an integral value (written without a fraction): not canonical.
        guard k > 0, b[i - 1] != UInt8(ascii: "0"), Self.endsNumber(byte(i)) else { return nil }
        guard intPart != 0 || leadingZeros <= 3 else { return nil }
        let v = Double(m) / Self.exactPowersOfTen[k]
        guard v.rounded() != v else { return nil }
        return negative ? -v : v
    }

    /// A string without escapes, as ``JSONWriter/string(_:)`` writes it.
    mutating func string() -> String? {
        guard byte(i) == UInt8(ascii: "\"") else { return nil }
        i += 1
        let start = i
        var ascii = true
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: b[start..<i])
                i += 1
                return ascii ? String(decoding: raw, as: UTF8.self) : String(validating: raw, as: UTF8.self)
            }
            // An escape (the writer escapes `"`, `\` and control characters only) or a raw control character.
            if c == UInt8(ascii: "\\") || c < 0x20 { return nil }
            if c >= 0x80 { ascii = false }
            i += 1
        }
        return nil
    }

    mutating func position() -> PositionBody? {
        guard literal("{\"latitude\":"), let lat = double(), literal(",\"longitude\":"), let lon = double(),
            literal("}")
        else { return nil }
        return PositionBody(latitude: lat, longitude: lon)
    }

    mutating func summary() -> SummaryBody? {
        guard literal("{") else { return nil }
        var detailEn: String?
        var detailKo: String?
        if literal("\"detailEn\":") {
            guard let s = string(), literal(",") else { return nil }
            detailEn = s
        }
        if literal("\"detailKo\":") {
            guard let s = string(), literal(",") else { return nil }
            detailKo = s
        }
        guard literal("\"en\":"), let en = string(), literal(",\"ko\":"), let ko = string(), literal("}") else {
            return nil
        }
        return SummaryBody(ko: ko, en: en, detailKo: detailKo, detailEn: detailEn)
    }

    mutating func contentState() -> ContentStateBody? {
        guard literal("{\"etaTarget\":"), let eta = int64(), literal(",\"lastConfirmed\":"),
            let confirmed = int64(), literal(",\"progress\":"), let progress = double()
        else { return nil }
        var rider: PositionBody?
        if literal(",\"riderPosition\":") {
            guard let p = position() else { return nil }
            rider = p
        }
        guard literal(",\"status\":"), let status = string(), literal(",\"summary\":"), let summary = summary(),
            literal("}")
        else { return nil }
        return ContentStateBody(
            status: status,
            summary: summary,
            etaTarget: eta,
            progress: progress,
            riderPosition: rider,
            lastConfirmed: confirmed
        )
    }

    mutating func places() -> PlacesBody? {
        guard literal("{") else { return nil }
        var customer: PositionBody?
        var store: PositionBody?
        if literal("\"customer\":") {
            guard let p = position() else { return nil }
            customer = p
            if literal(",") {
                guard literal("\"store\":"), let s = position() else { return nil }
                store = s
            }
        } else if literal("\"store\":") {
            guard let s = position() else { return nil }
            store = s
        }
        guard literal("}") else { return nil }
        return PlacesBody(store: store, customer: customer)
    }

    mutating func eventBody() -> EventBody? {
        guard literal("{\"contentState\":") else { return nil }
        let contentStart = i
        guard let content = contentState() else { return nil }
        contentStateBytes = i - contentStart
        var dismissal: Int64?
        if literal(",\"dismissalDate\":") {
            guard let d = int64() else { return nil }
            dismissal = d
        }
        guard literal(",\"event\":"), let event = string() else { return nil }
        var places: PlacesBody?
        if literal(",\"places\":") {
            guard let p = self.places() else { return nil }
            places = p
        }
        guard literal(",\"priority\":"), let priority = int64(), let p = Int(exactly: priority),
            literal(",\"relevanceScore\":"), let relevance = double()
        else { return nil }
        var stale: Int64?
        if literal(",\"staleDate\":") {
            guard let s = int64() else { return nil }
            stale = s
        }
        guard literal(",\"timestamp\":"), let timestamp = int64(), literal("}") else { return nil }
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
