/// Which sessions a fault targets, as Jepsen's nemesis node specs pick them.
public enum FaultScope: Sendable, Equatable, Codable {
    /// The named session only.
    case session(String)
    /// One random session (Jepsen `:one`).
    case one
    /// A random minority: ⌊n/2⌋ sessions (Jepsen `:minority` = `majority(n) − 1`).
    case minority
    /// A random majority: ⌊n/2⌋ + 1 sessions (Jepsen `:majority`, `util/majority`).
    case majority
    /// Every session (Jepsen `:all`).
    case all
}

/// Picks target sessions and derives per-session seeds, deterministically for a seed.
///
/// - Note: Source: Jepsen `nemesis/combined.clj` `db-nodes`: `:minority (take (dec (majority (count nodes)))
///   (shuffle nodes))`, `:majority (take (majority (count nodes)) (shuffle nodes))`, with `majority(n) = ⌊n/2⌋ + 1`.
///   So for 4 sessions the "minority" is 2 (half, not fewer than half), for 5 it is 2, for 1 it is none.
public enum FaultTargeting {
    /// The brief's spelling of `FaultScope`.
    public typealias Scope = FaultScope

    /// The number of sessions `scope` picks among `count` (for `.session`, 1).
    public static func count(of scope: FaultScope, among count: Int) -> Int {
        switch scope {
        case .session: return 1
        case .one: return min(1, count)
        case .minority: return count / 2
        case .majority: return count == 0 ? 0 : count / 2 + 1
        case .all: return count
        }
    }

    /// The sessions `scope` picks.
    /// - Parameters:
    ///   - scope: which sessions.
    ///   - sessionNames: the connected sessions, in any order (they are sorted first, so the pick does not depend on
    ///     the order the daemon lists them in).
    ///   - seed: the user's `--seed`; the same names and seed give the same pick.
    /// - Returns: the picked names, sorted; `[name]` for `.session(name)` when connected, else `[]`.
    public static func choose(scope: FaultScope, among sessionNames: [String], seed: UInt64) -> [String] {
        let names = Array(Set(sessionNames)).sorted()
        if case .session(let name) = scope { return names.contains(name) ? [name] : [] }
        var random = FaultRandom(seed: seed, label: "targets")
        let shuffled = random.shuffled(names)
        return Array(shuffled.prefix(count(of: scope, among: names.count))).sorted()
    }

    /// The seed of one session's pipeline in one direction, derived from the user's seed so a run repeats.
    public static func pipelineSeed(seed: UInt64, session: String, direction: FaultDirection) -> UInt64 {
        var random = FaultRandom(seed: seed, label: "\(session)/\(direction.rawValue)")
        return random.next()
    }
}
