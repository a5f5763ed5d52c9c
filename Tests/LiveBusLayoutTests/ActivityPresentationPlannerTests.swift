import Testing

@testable import LiveBusLayout

struct ActivityPresentationPlannerTests {
    typealias A = ActivitySummary

    /// One ongoing activity gets the compact presentation and the top of the Lock Screen. Source: live-activities.md
    /// §4.1 ("Compact (one ongoing activity)").
    @Test func oneActivityIsCompact() {
        let plan = ActivityPresentationPlanner.plan([A(id: "order-1", relevanceScore: 50, startOrdinal: 0)])
        #expect(plan.assignments.map(\.island) == [.compact])
        #expect(plan.lockScreenOrder == ["order-1"])
        #expect(plan.ongoingCount == 1)
        #expect(plan.activity(in: .compact) == "order-1")
        #expect(plan.assignment("order-1")?.reason == "the only ongoing activity: compact presentation")
        #expect(IslandPresentation.compact.presentationKinds == [.compactLeading, .compactTrailing])
    }

    /// Several ongoing activities: the highest relevance score is minimal attached, the second minimal detached, the
    /// rest are not in the Dynamic Island; the Lock Screen lists all by score. Source: ActivityKit "Displaying live
    /// data" via live-activities.md §1.1 (the score "determines which … appears in the Dynamic Island and the order
    /// … on the Lock Screen"); §4.1 (one attached, one detached).
    @Test(arguments: [
        // (scores in start order, expected island per activity, expected lock-screen order)
        ([0.0, 0.0], [IslandPresentation.minimalAttached, .minimalDetached], ["a", "b"]),
        ([50, 100], [.minimalDetached, .minimalAttached], ["b", "a"]),
        ([100, 50, 75], [.minimalAttached, .none, .minimalDetached], ["a", "c", "b"]),
        ([10, 20, 20, 5], [.none, .minimalAttached, .minimalDetached, .none], ["b", "c", "a", "d"]),
        ([-1, .nan, 0], [.none, .minimalAttached, .minimalDetached], ["b", "c", "a"]),
    ])
    func severalActivities(scores: [Double], islands: [IslandPresentation], lockScreen: [String]) {
        let ids = ["a", "b", "c", "d"]
        let activities = scores.enumerated().map {
            A(id: ids[$0.offset], relevanceScore: $0.element, startOrdinal: $0.offset)
        }
        let plan = ActivityPresentationPlanner.plan(activities)
        #expect(plan.assignments.map(\.id) == Array(ids.prefix(scores.count)))
        #expect(plan.assignments.map(\.island) == islands)
        #expect(plan.lockScreenOrder == lockScreen)
        #expect(
            plan.assignments.map(\.lockScreenPosition) == plan.assignments.map { lockScreen.firstIndex(of: $0.id)! }
        )
    }

    /// What the view draws per activity: the island presentation's kinds, then the Lock Screen; only the Lock Screen
    /// without a Dynamic Island. Source: live-activities.md §4.1.
    @Test func presentationKindsPerActivity() {
        let plan = ActivityPresentationPlanner.plan([
            A(id: "a", relevanceScore: 10, startOrdinal: 0),
            A(id: "b", relevanceScore: 20, startOrdinal: 1),
            A(id: "c", relevanceScore: 5, startOrdinal: 2),
        ])
        #expect(plan.presentationKinds(for: "b") == [.minimal, .lockScreen])
        #expect(plan.presentationKinds(for: "a") == [.minimal, .lockScreen])
        #expect(plan.presentationKinds(for: "c") == [.lockScreen])
        #expect(plan.presentationKinds(for: "b", hasDynamicIsland: false) == [.lockScreen])
        #expect(plan.presentationKinds(for: "zzz").isEmpty)
        let one = ActivityPresentationPlanner.plan([A(id: "a", startOrdinal: 0)])
        #expect(one.presentationKinds(for: "a") == [.compactLeading, .compactTrailing, .lockScreen])
    }

    /// Equal scores: the first started wins, whatever the input order; the reason says so. Source: live-activities.md
    /// §1.1 ("the system shows the first Live Activity you started in the Dynamic Island").
    @Test func equalScoresGoToTheFirstStarted() {
        let plan = ActivityPresentationPlanner.plan([
            A(id: "late", relevanceScore: 30, startOrdinal: 7),
            A(id: "early", relevanceScore: 30, startOrdinal: 2),
        ])
        #expect(plan.activity(in: .minimalAttached) == "early")
        #expect(plan.activity(in: .minimalDetached) == "late")
        #expect(
            plan.assignment("early")?.reason
                == "most relevant (score 30, equal scores broken by start order (started #2)) of 2 ongoing activities: "
                + "minimal, attached"
        )
    }

    /// Ended activities leave the Dynamic Island but stay on the Lock Screen in score order; one ongoing activity
    /// among ended ones is compact. Source: live-activities.md §1.4 (dismissal policy keeps an ended activity on the
    /// Lock Screen), §4.1.
    @Test func endedActivitiesLeaveTheIsland() {
        let plan = ActivityPresentationPlanner.plan([
            A(id: "done", relevanceScore: 90, startOrdinal: 0, isOngoing: false),
            A(id: "live", relevanceScore: 10, startOrdinal: 1),
        ])
        #expect(plan.assignment("done")?.island == IslandPresentation.none)
        #expect(plan.assignment("live")?.island == .compact)
        #expect(plan.lockScreenOrder == ["done", "live"])
        #expect(plan.ongoingCount == 1)
        #expect(
            ActivityPresentationPlanner.plan([]) == ActivityPlan(assignments: [], lockScreenOrder: [], ongoingCount: 0)
        )
    }

    /// Property: for 1–4 concurrent activities with random scores (often tied), start orders and ongoing flags,
    /// compact iff exactly one ongoing; otherwise exactly one attached and one detached, the attached first in
    /// (score, start order) and the detached second; the Lock Screen is a permutation sorted by the same order.
    /// Source: LiveBus issue 11 ("property tests extended with … 1–4 concurrent activities").
    @Test func propertiesForOneToFourActivities() {
        var rng = SplitMix64(seed: stableSeed("activity-planner"))
        for _ in 0..<2000 {
            let n = Int.random(in: 1...4, using: &rng)
            let starts = Array(0..<n).shuffled(using: &rng)
            let activities = (0..<n).map { i in
                A(
                    id: "order-\(i)",
                    relevanceScore: Double(Int.random(in: 0...3, using: &rng) * 25),
                    startOrdinal: starts[i],
                    isOngoing: Int.random(in: 0..<5, using: &rng) > 0
                )
            }
            let plan = ActivityPresentationPlanner.plan(activities)
            let before = { (a: A, b: A) in
                a.relevanceScore != b.relevanceScore
                    ? a.relevanceScore > b.relevanceScore : a.startOrdinal < b.startOrdinal
            }
            let ongoing = activities.filter(\.isOngoing).sorted(by: before)
            let islands = plan.assignments.map(\.island)
            let count = { (p: IslandPresentation) in islands.filter { $0 == p }.count }
            var problems: [String] = []
            if ongoing.count == 1 {
                if count(.compact) != 1 || count(.minimalAttached) + count(.minimalDetached) != 0 {
                    problems.append("one ongoing but islands \(islands)")
                }
            } else if ongoing.count >= 2 {
                if count(.compact) != 0 || count(.minimalAttached) != 1 || count(.minimalDetached) != 1 {
                    problems.append("\(ongoing.count) ongoing but islands \(islands)")
                }
                if plan.activity(in: .minimalAttached) != ongoing[0].id
                    || plan.activity(in: .minimalDetached) != ongoing[1].id
                {
                    problems.append("attached/detached are not the two most relevant")
                }
            } else if islands.contains(where: { $0 != .none }) {
                problems.append("nothing ongoing but islands \(islands)")
            }
            for (a, assignment) in zip(activities, plan.assignments) where !a.isOngoing && assignment.island != .none {
                problems.append("ended \(a.id) in the island")
            }
            if plan.lockScreenOrder != activities.sorted(by: before).map(\.id) {
                problems.append("lock screen order \(plan.lockScreenOrder)")
            }
            if Set(plan.assignments.map(\.lockScreenPosition)) != Set(0..<n) {
                problems.append("positions \(plan.assignments.map(\.lockScreenPosition))")
            }
            if !problems.isEmpty {
                Issue.record("plan broke for \(activities): \(problems.joined(separator: "; "))")
                return
            }
        }
    }
}
