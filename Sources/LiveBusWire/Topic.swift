/// Topic names and patterns.
///
/// A topic is 1–255 UTF-8 bytes of `/`-separated, non-empty segments without wildcards, e.g. `orders/A1001`.
/// A pattern may use `*` for exactly one segment and, as its last segment, `>` for one or more segments
/// (NATS subject semantics). Source: nats-server `server/sublist.go`.
public enum Topic {
    /// Checks a topic name.
    /// - Throws: ``WireError`` `invalidTopic` naming the problem.
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
        guard s.utf8.count <= Frame.maximumTopicLength else {
            throw WireError(.invalidTopic, "\(what) '\(s.prefix(40))…' is over \(Frame.maximumTopicLength) bytes")
        }
        // Every PUBLISH checks its topic: a valid ASCII name is checked in one pass over its bytes, without the
        // Substrings, Character comparisons and Foundation `contains` below (34 k instructions per PUBLISH in the
        // callgrind profile of the publish workload, more than storing the event). The pass only says "valid"
        // for names the full check accepts; anything else (a problem, non-ASCII text, a CR, whose grapheme rules
        // differ from bytes) goes through the full check, so the verdict and its message are unchanged.
        if isPlainValid(s, allowWildcards: allowWildcards) { return }
        let segments = s.split(separator: "/", omittingEmptySubsequences: false)
        for (i, seg) in segments.enumerated() {
            guard !seg.isEmpty else { throw WireError(.invalidTopic, "\(what) '\(s)' has an empty segment") }
            if seg.contains(where: { $0 == " " || $0 == "\n" || $0 == "\t" }) {
                throw WireError(.invalidTopic, "\(what) '\(s)' contains whitespace")
            }
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

    /// `true` when `s` is ASCII without CR and valid for ``check(_:allowWildcards:)``; `false` means "not known
    /// valid" (the full check decides and names the problem).
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
                } else if c >= 0x80 || c == 0x0D || c == UInt8(ascii: " ") || c == 0x0A || c == 0x09 {
                    return false
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
