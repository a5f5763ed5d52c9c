/// One Live Activity a session follows, as the presentation planner sees it.
///
/// Independent of `LiveBusActivity`: the client maps its activity records to this shape (id, relevance score, the
/// order it started in, and whether it is still ongoing).
public struct ActivitySummary: Codable, Sendable, Equatable, Hashable {
    /// The activity's id (unique within the session), e.g. the order id.
    public var id: String
    /// `ActivityContent.relevanceScore` (relative; default 0). A NaN score counts as 0.
    public var relevanceScore: Double
    /// The order in which the activity was started: a smaller ordinal started earlier. No clock is involved.
    public var startOrdinal: Int
    /// True while the activity is ongoing (active or stale); false once it has ended but is still on the Lock Screen
    /// until its dismissal policy removes it. Ended activities leave the Dynamic Island.
    public var isOngoing: Bool

    /// Creates a summary.
    ///
    /// - Parameters:
    ///   - id: the activity id.
    ///   - relevanceScore: relative relevance score (default 0, as in `ActivityContent`).
    ///   - startOrdinal: start order, smaller = started earlier.
    ///   - isOngoing: false once the activity has ended.
    public init(id: String, relevanceScore: Double = 0, startOrdinal: Int, isOngoing: Bool = true) {
        self.id = id
        self.relevanceScore = relevanceScore
        self.startOrdinal = startOrdinal
        self.isOngoing = isOngoing
    }
}

/// Which Dynamic Island presentation an activity gets.
///
/// - Note: Source: live-activities.md §4.1 (compact when one activity is ongoing; minimal when several are, "the
///   system picks two; one attached and one detached"); HIG Live Activities.
public enum IslandPresentation: String, Codable, Sendable, CaseIterable {
    /// Compact leading and trailing, around the TrueDepth camera (the only ongoing activity).
    case compact
    /// Minimal, attached to the island (the most relevant of several).
    case minimalAttached
    /// Minimal, detached beside the island (the second most relevant).
    case minimalDetached
    /// Not in the Dynamic Island (a third or later activity, or an ended one); still on the Lock Screen.
    case none

    /// The layout presentations to draw for it: compact → compact leading and trailing; minimal → minimal.
    public var presentationKinds: [PresentationKind] {
        switch self {
        case .compact: [.compactLeading, .compactTrailing]
        case .minimalAttached, .minimalDetached: [.minimal]
        case .none: []
        }
    }
}

/// What one activity gets.
public struct ActivityAssignment: Codable, Sendable, Equatable {
    /// The activity id.
    public var id: String
    /// Its Dynamic Island presentation.
    public var island: IslandPresentation
    /// Its place on the Lock Screen, 0 = top.
    public var lockScreenPosition: Int
    /// Why, e.g. `highest relevance score (100) of 2 ongoing activities`.
    public var reason: String
}

/// Which presentation each activity gets, and the Lock Screen order.
public struct ActivityPlan: Codable, Sendable, Equatable {
    /// One assignment per activity, in the input order.
    public var assignments: [ActivityAssignment]
    /// Activity ids from the top of the Lock Screen down.
    public var lockScreenOrder: [String]
    /// Number of ongoing activities.
    public var ongoingCount: Int

    /// The assignment of an activity, if it was planned.
    ///
    /// - Parameter id: the activity id.
    /// - Returns: its assignment, or nil.
    public func assignment(_ id: String) -> ActivityAssignment? {
        assignments.first { $0.id == id }
    }

    /// The presentations a view draws for an activity: its Dynamic Island presentation (compact leading and
    /// trailing, or minimal; none without a Dynamic Island) and the Lock Screen. The expanded presentation appears
    /// only on touch and hold, so it is not planned.
    ///
    /// - Parameters:
    ///   - id: the activity id.
    ///   - hasDynamicIsland: false on screens without one (``ResolvedPosture/dynamicIsland`` is nil).
    /// - Returns: the kinds in drawing order, empty for an unknown id.
    /// - Note: Source: live-activities.md §4.1 (presentations; on devices without the Dynamic Island updates show
    ///   the Lock Screen presentation).
    public func presentationKinds(for id: String, hasDynamicIsland: Bool = true) -> [PresentationKind] {
        guard let a = assignment(id) else { return [] }
        return (hasDynamicIsland ? a.island.presentationKinds : []) + [.lockScreen]
    }

    /// The activity shown in a Dynamic Island presentation, if any.
    ///
    /// - Parameter presentation: `compact`, `minimalAttached` or `minimalDetached`.
    /// - Returns: the id, or nil.
    public func activity(in presentation: IslandPresentation) -> String? {
        guard presentation != .none else { return nil }
        return assignments.first { $0.island == presentation }?.id
    }
}

/// Plans the presentations of several concurrent Live Activities: a pure function of their scores and start order.
///
/// Rules:
/// - Order: higher relevance score first; equal scores → the one started first (smaller `startOrdinal`); then the
///   id, then the input position, so the plan is total and deterministic.
/// - Dynamic Island: ongoing activities only. One → `compact`. Two or more → the first in order `minimalAttached`,
///   the second `minimalDetached`, the rest `none`. Ended activities → `none`.
/// - Lock Screen: every activity given (ongoing or ended, not yet dismissed), in the same order.
///
/// - Note: Source: ActivityKit "Displaying live data with Live Activities" ("relevanceScore determines which of your
///   Live Activities appears in the Dynamic Island and the order of your Live Activities on the Lock Screen"; equal
///   scores → "the first Live Activity you started"), live-activities.md §1.1; §4.1 (compact vs minimal attached
///   and detached); LiveBus issue 11 ("Several activities at once").
public enum ActivityPresentationPlanner {
    /// Plans the presentations.
    ///
    /// - Parameter activities: the session's activities, any order; ids should be unique.
    /// - Returns: the assignment of each (input order) and the Lock Screen order.
    /// - Complexity: O(n log n) in the number of activities.
    public static func plan(_ activities: [ActivitySummary]) -> ActivityPlan {
        let ordered = activities.enumerated().sorted { a, b in
            let sa = score(a.element)
            let sb = score(b.element)
            if sa != sb { return sa > sb }
            if a.element.startOrdinal != b.element.startOrdinal {
                return a.element.startOrdinal < b.element.startOrdinal
            }
            if a.element.id != b.element.id { return a.element.id < b.element.id }
            return a.offset < b.offset
        }
        let ongoing = ordered.filter { $0.element.isOngoing }
        var island = [Int: IslandPresentation]()
        var why = [Int: String]()
        let count = ongoing.count
        for (rank, entry) in ongoing.enumerated() {
            let s = describeScore(score(entry.element))
            let tie =
                ongoing.filter { score($0.element) == score(entry.element) }.count > 1
                ? ", equal scores broken by start order (started #\(entry.element.startOrdinal))" : ""
            switch (count, rank) {
            case (1, _):
                island[entry.offset] = .compact
                why[entry.offset] = "the only ongoing activity: compact presentation"
            case (_, 0):
                island[entry.offset] = .minimalAttached
                why[entry.offset] = "most relevant (score \(s)\(tie)) of \(count) ongoing activities: minimal, attached"
            case (_, 1):
                island[entry.offset] = .minimalDetached
                why[entry.offset] = "second most relevant (score \(s)\(tie)) of \(count) ongoing: minimal, detached"
            default:
                island[entry.offset] = IslandPresentation.none
                why[entry.offset] =
                    "rank \(rank + 1) (score \(s)) of \(count) ongoing: not in the Dynamic Island, Lock Screen only"
            }
        }
        var position = [Int: Int]()
        for (p, entry) in ordered.enumerated() { position[entry.offset] = p }
        let assignments = activities.enumerated().map { offset, activity in
            ActivityAssignment(
                id: activity.id,
                island: island[offset] ?? IslandPresentation.none,
                lockScreenPosition: position[offset] ?? 0,
                reason: why[offset] ?? "ended: not in the Dynamic Island, on the Lock Screen until dismissed"
            )
        }
        return ActivityPlan(
            assignments: assignments,
            lockScreenOrder: ordered.map(\.element.id),
            ongoingCount: count
        )
    }

    /// A score for a reason: two decimals at most; huge values in exponent form; infinities as `inf` / `-inf`.
    private static func describeScore(_ value: Double) -> String {
        guard value.isFinite else { return value > 0 ? "inf" : "-inf" }
        return abs(value) < 1e12 ? format(value) : "\(value)"
    }

    /// The score used for ordering: NaN counts as 0 (the ActivityKit default).
    private static func score(_ a: ActivitySummary) -> Double {
        a.relevanceScore.isNaN ? 0 : a.relevanceScore
    }
}
