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
