/// Topic names and patterns.
///
/// A topic is 1–255 UTF-8 bytes of `/`-separated, non-empty segments without wildcards, whitespace or control
/// characters (``isForbidden(_:)``), e.g. `orders/A1001`.
/// A pattern may use `*` for exactly one segment and, as its last segment, `>` for one or more segments
/// (NATS subject semantics). Source: nats-server `server/sublist.go`.
public enum Topic {
    /// Checks a topic name.
    /// - Throws: ``WireError`` `invalidTopic` naming the problem: `topic is 300 bytes; at most 255`, or, for a
    ///   character ``isForbidden(_:)`` refuses, its code point and byte offset (`topic 'orders/a\u{0000}b' contains
    ///   the control character U+0000 at byte 8; …`).
    public static func validate(_ topic: String) throws(WireError) {
        try check(topic, allowWildcards: false)
    }

    /// Checks a topic pattern.
    /// - Throws: ``WireError`` `invalidTopic` naming the problem.
    public static func validatePattern(_ pattern: String) throws(WireError) {
        try check(pattern, allowWildcards: true)
    }

    private static func check(_ s: String, allowWildcards: Bool) throws(WireError) {
        let what = allowWildcards ? "topic pattern" : "topic"
        guard !s.isEmpty else { throw WireError(.invalidTopic, "\(what) is empty") }
        let bytes = s.utf8.count
        guard bytes <= Frame.maximumTopicLength else {
            throw WireError(.invalidTopic, "\(what) is \(bytes) bytes; at most \(Frame.maximumTopicLength)")
        }
        // Every PUBLISH checks its topic: a valid ASCII name is checked in one pass over its bytes, without the
        // Substrings, Character comparisons and Foundation `contains` below (34 k instructions per PUBLISH in the
        // callgrind profile of the publish workload, more than storing the event). The pass only says "valid"
        // for names the full check accepts; anything else (a problem, non-ASCII text, a control character) goes
        // through the full check, so the verdict and its message are unchanged.
        if isPlainValid(s, allowWildcards: allowWildcards) { return }
        if let (scalar, offset) = firstForbidden(s) {
            let kind = scalar.properties.isWhitespace ? "whitespace" : "the control character"
            throw WireError(
                .invalidTopic,
                "\(what) '\(shown(s))' contains \(kind) \(codePoint(scalar)) at byte \(offset); a topic is "
                    + "printable UTF-8 without whitespace or control characters (PROTOCOL.md §5.1)"
            )
        }
        let segments = s.split(separator: "/", omittingEmptySubsequences: false)
        for (i, seg) in segments.enumerated() {
            guard !seg.isEmpty else { throw WireError(.invalidTopic, "\(what) '\(s)' has an empty segment") }
            let wildcard = seg == "*" || seg == ">"
            if !allowWildcards && (wildcard || seg.contains("*") || seg.contains(">")) {
                throw WireError(.invalidTopic, "topic '\(s)' contains a wildcard; wildcards are for SUBSCRIBE patterns")
            }
            if allowWildcards && !wildcard && (seg.contains("*") || seg.contains(">")) {
                throw WireError(.invalidTopic, "pattern '\(s)': a wildcard must be a whole segment")
            }
            if seg == ">" && i != segments.count - 1 {
                throw WireError(.invalidTopic, "pattern '\(s)': '>' may only be the last segment")
            }
        }
    }

    /// Whether a topic may not hold `c`: a C0 control character (U+0000–U+001F), DEL (U+007F), a C1 control
    /// character (U+0080–U+009F), or Unicode whitespace (the `White_Space` property: U+0020, U+00A0, U+1680,
    /// U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 and the controls among them). Source: PROTOCOL.md §5.1
    /// ("no whitespace"); Unicode `PropList.txt` for `White_Space`. A NUL cut the topic short where it was stored
    /// as a C string (fresh-user review 2026-12-03: a data directory refused as damaged at the next start).
    public static func isForbidden(_ c: Unicode.Scalar) -> Bool {
        c.value < 0x20 || (c.value >= 0x7F && c.value < 0xA0) || c.properties.isWhitespace
    }

    /// The first scalar of `s` that ``isForbidden(_:)`` refuses, with the offset of its first UTF-8 byte.
    private static func firstForbidden(_ s: String) -> (Unicode.Scalar, Int)? {
        var offset = 0
        for c in s.unicodeScalars {
            if isForbidden(c) { return (c, offset) }
            offset += UTF8.width(c)
        }
        return nil
    }

    /// `U+0000`: a scalar's code point, at least 4 upper-case hex digits.
    private static func codePoint(_ c: Unicode.Scalar) -> String {
        let hex = String(c.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// `s` for a message: each forbidden scalar written `\u{XXXX}`, so a NUL or an ESC never reaches a log or a
    /// terminal as itself.
    private static func shown(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            if isForbidden(c) && c != " " {
                out += "\\u{" + codePoint(c).dropFirst(2) + "}"
            } else {
                out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// `true` when `s` is printable ASCII (U+0021–U+007E) and valid for ``check(_:allowWildcards:)``; `false`
    /// means "not known valid" (the full check decides and names the problem).
    /// - Complexity: O(bytes), no allocation.
    private static func isPlainValid(_ s: String, allowWildcards: Bool) -> Bool {
        var s = s
        return s.withUTF8 { u -> Bool in
            var segmentStart = 0
            var star = false
            var greater = false
            var i = 0
            while i <= u.count {
                let c: UInt8 = i < u.count ? u[i] : UInt8(ascii: "/")
                if c == UInt8(ascii: "/") {
                    let length = i - segmentStart
                    if length == 0 { return false }
                    let wildcard = length == 1 && (star || greater)
                    if star || greater {
                        if !allowWildcards || !wildcard { return false }
                        if greater && i != u.count { return false }  // `>` only as the last segment
                    }
                    segmentStart = i + 1
                    star = false
                    greater = false
                } else if c <= UInt8(ascii: " ") || c >= 0x7F {
                    return false  // a control character, whitespace, DEL or non-ASCII
                } else if c == UInt8(ascii: "*") {
                    star = true
                } else if c == UInt8(ascii: ">") {
                    greater = true
                }
                i += 1
            }
            return true
        }
    }

    /// Whether `topic` matches `pattern`.
    /// - Complexity: O(number of segments).
    public static func matches(pattern: String, topic: String) -> Bool {
        var p = pattern.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)[...]
        var t = topic.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)[...]
        while let ps = p.first {
            if ps.elementsEqual(">".utf8) { return !t.isEmpty }
            guard let ts = t.first else { return false }
            if !ps.elementsEqual("*".utf8) && !ps.elementsEqual(ts) { return false }
            p = p.dropFirst()
            t = t.dropFirst()
        }
        return t.isEmpty
    }
}
