/// Case-insensitive near matches for "did you mean …?" suggestions: flags, commands, device ids, topics.
///
/// The distance is the optimal string alignment distance (Levenshtein with adjacent transpositions, as git's and
/// clang's "did you mean" use) on lowercased characters. A candidate is near when it equals the input ignoring case,
/// when one starts with the other (at least two characters typed), or when the distance is at most a third of the
/// input's length (at least 1, at most 3).
public enum NearMatch {
    /// The candidates nearest to `input`, nearest first (ties in the candidates' order).
    /// - Parameters:
    ///   - input: What the user typed.
    ///   - candidates: The valid spellings.
    ///   - limit: At most this many are returned.
    /// - Returns: An empty array when nothing is near.
    public static func closest(_ input: String, among candidates: [String], limit: Int = 3) -> [String] {
        let typed = input.lowercased()
        guard !typed.isEmpty else { return [] }
        let threshold = max(1, min(3, typed.count / 3))
        var scored: [(score: Int, index: Int, value: String)] = []
        for (i, c) in candidates.enumerated() {
            let lower = c.lowercased()
            let score: Int
            if lower == typed {
                score = 0
            } else if typed.count >= 2 && (lower.hasPrefix(typed) || typed.hasPrefix(lower)) {
                score = 1
            } else {
                let d = distance(typed, lower)
                guard d <= threshold else { continue }
                score = d + 1
            }
            scored.append((score, i, c))
        }
        var seen: Set<String> = []
        return scored.sorted { ($0.score, $0.index) < ($1.score, $1.index) }.map(\.value)
            .filter { seen.insert($0).inserted }.prefix(limit).map { $0 }
    }

    /// The topics nearest to a topic filter that matched none: a topic whose segment equals the filter ignoring case
    /// (`M0001` → `orders/M0001`) or contains it comes first, then topics near in spelling (whole or last segment).
    /// - Parameters:
    ///   - pattern: The filter (wildcards are compared as written).
    ///   - topics: The known topics.
    ///   - limit: At most this many are returned.
    /// - Returns: The nearest topics, nearest first; empty when nothing is near.
    public static func closestTopics(_ pattern: String, among topics: [String], limit: Int = 3) -> [String] {
        let typed = pattern.lowercased()
        guard !typed.isEmpty else { return [] }
        let threshold = max(1, min(3, typed.count / 3))
        var scored: [(score: Int, index: Int, value: String)] = []
        for (i, t) in topics.enumerated() {
            let lower = t.lowercased()
            let segments = lower.split(separator: "/").map(String.init)
            let score: Int
            if segments.contains(typed) || lower == typed {
                score = 0
            } else if lower.contains(typed) {
                score = 1
            } else {
                let d = min(distance(typed, lower), segments.map { distance(typed, $0) }.min() ?? Int.max)
                guard d <= threshold else { continue }
                score = d + 1
            }
            scored.append((score, i, t))
        }
        return scored.sorted { ($0.score, $0.index) < ($1.score, $1.index) }.prefix(limit).map(\.value)
    }

    /// The optimal string alignment distance between `a` and `b` (insertions, deletions, substitutions and
    /// transpositions of adjacent characters each cost 1), compared as given (lowercase both for case-insensitive).
    public static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a)
        let y = Array(b)
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[x.count][y.count]
    }
}
