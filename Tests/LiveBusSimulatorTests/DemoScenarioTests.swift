import LiveBusClock
import Testing

@testable import LiveBusSimulator

/// The built-in `demo-120s` played at time scale 10 from T0 (so it lasts 12 s of server time).
struct DemoScenarioTests {
    func play() throws -> (DeliverySimulator, [OrderEvent]) {
        var sim = DeliverySimulator(
            scenario: try Scenario.builtIn(named: "demo-120s"),
            start: t0,
            timeScale: 10,
            seed: 1
        )
        let events = sim.advance(to: at(12_000))
        return (sim, events)
    }

    /// One order A1001 goes created → cooking → awaitingPickup → pickedUp → delivering → delivered, as the field
    /// report's 120-second demo does (field report 001; issue 3).
    @Test func phaseSequence() throws {
        let (sim, events) = try play()
        #expect(events.allSatisfy { $0.orderID == "A1001" && $0.topic == "orders/A1001" })
        var statuses: [OrderStatus] = []
        for e in events where statuses.last != e.contentState.status { statuses.append(e.contentState.status) }
        #expect(statuses == [.created, .cooking, .awaitingPickup, .pickedUp, .delivering, .delivered])
        #expect(events.map(\.event) == [.start] + Array(repeating: .update, count: events.count - 2) + [.end])
        #expect(sim.isFinished)
        #expect(sim.nextDeadline == nil)
    }

    /// Every instant is start + scenario offset / time scale: the exact server timestamps of the demo at scale 10.
    @Test func timestampsFollowTheTimeScale() throws {
        let (_, events) = try play()
        #expect(
            events.map { rel($0.timestamp) } == [
                0, 800, 3600, 4600, 5200, 6200, 6400, 7200, 10_000, 10_200, 11_200, 12_000,
            ]
        )
        #expect(events.allSatisfy { $0.contentState.lastConfirmed == $0.timestamp })
        // Delivered at 120 scenario seconds, ETA target then 120 s: the countdown reaches 0:00 at delivery.
        #expect(rel(events.last?.contentState.etaTarget) == 12_000)
        #expect(rel(events.last?.dismissalDate) == 15_000)  // dismissAfter.delivered = 30 s scenario
        #expect(events.last?.staleDate == nil)
    }

    /// The ETA is revised later (traffic) and then earlier (recovered): 2:00 → 2:12 → 2:00 (issue 3: "ETA revisions
    /// (late and early)"). Revisions are priority 10 (PublishPolicy).
    @Test func etaRevisedLaterThenEarlier() throws {
        let (_, events) = try play()
        var targets: [Int64] = []
        for e in events {
            let target = rel(e.contentState.etaTarget)!
            if targets.last != target { targets.append(target) }
        }
        #expect(targets == [12_000, 13_200, 12_000])
        let revisions = events.filter { [6400, 10_000].contains(rel($0.timestamp)) }
        #expect(revisions.map(\.priority) == [10, 10])
    }

    /// The backend stalls from 74 s to 100 s: nothing is published in between, the last update's stale date (72 s +
    /// 15 s = 87 s) passes before the next update, and the recovery update at 100 s is fresh (issue 3 "stall then
    /// recover"; live-activities.md §1.7).
    @Test func stallThenRecover() throws {
        var sim = DeliverySimulator(
            scenario: try Scenario.builtIn(named: "demo-120s"),
            start: t0,
            timeScale: 10,
            seed: 1
        )
        let before = sim.advance(to: at(7_399))
        let lastBefore = try #require(before.last)
        #expect(rel(lastBefore.timestamp) == 7_200)
        #expect(rel(lastBefore.staleDate) == 8_700)
        #expect(sim.advance(to: at(9_999)).isEmpty)  // stalled: no positions, no news
        #expect(sim.nextDeadline == at(10_000))  // no wake-ups left inside the stall
        let after = sim.advance(to: at(10_000))
        let recovery = try #require(after.first)
        #expect(after.count == 1)
        #expect(rel(recovery.timestamp) == 10_000)
        #expect(lastBefore.staleDate! < recovery.timestamp)
        #expect(rel(recovery.staleDate) == 11_500)
        #expect(recovery.contentState.status == .delivering)
    }

    /// Rider position: at the store when picked up, moving toward the customer while delivering (published every
    /// 10 scenario seconds, priority 5), none once delivered. Progress and relevance rise toward arrival.
    @Test func riderMovesAndRelevanceRises() throws {
        let (_, events) = try play()
        let store = Coordinate(latitude: 37.5636, longitude: 126.9827)
        let customer = Coordinate(latitude: 37.5704, longitude: 126.9921)
        let pickedUp = try #require(events.first { $0.contentState.status == .pickedUp })
        #expect(pickedUp.contentState.riderPosition == store)
        let moving = events.filter { $0.contentState.status == .delivering }
        let distances = moving.compactMap { $0.contentState.riderPosition.map { Route.distanceKm($0, customer) } }
        #expect(distances.count == moving.count)
        #expect(zip(distances, distances.dropFirst()).allSatisfy { $0 > $1 })
        #expect(moving.filter { $0.priority == 5 }.map { rel($0.timestamp) } == [6200, 7200, 10_200, 11_200])
        let progress = events.map(\.contentState.progress)
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(progress.first == 0 && progress.last == 1)
        let relevance = events.dropLast().map(\.relevanceScore)
        #expect(zip(relevance, relevance.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(events.last?.relevanceScore == 0)
        #expect(events.last?.contentState.riderPosition == nil)
    }

    /// Korean and English summaries follow the status (field report 001: 조리 중, 픽업 대기, 픽업 완료, 배달 중).
    @Test func summariesInKoreanAndEnglish() throws {
        let (_, events) = try play()
        var seen: [String] = []
        for e in events where seen.last != e.contentState.summary.ko { seen.append(e.contentState.summary.ko) }
        #expect(seen == ["주문 접수", "조리 중", "픽업 대기", "픽업 완료", "배달 중", "배달 완료"])
        #expect(events[1].contentState.summary.en == "Cooking")
    }

    /// `advance` is idempotent for equal `now`, and `nextDeadline` names the next event's instant.
    @Test func advanceIsIdempotentAndDeadlinesAreExact() throws {
        var sim = DeliverySimulator(
            scenario: try Scenario.builtIn(named: "demo-120s"),
            start: t0,
            timeScale: 10,
            seed: 1
        )
        #expect(sim.nextDeadline == t0)
        #expect(sim.advance(to: at(-1)).isEmpty)
        #expect(sim.advance(to: at(0)).count == 1)
        #expect(sim.advance(to: at(0)).isEmpty)
        #expect(sim.nextDeadline == at(800))
        #expect(sim.advance(to: at(799)).isEmpty)
        #expect(sim.advance(to: at(800)).map(\.contentState.status) == [.cooking])
        #expect(sim.isFinished == false)
    }

    /// At time scale 1 the demo lasts 120 s of server time.
    @Test func timeScaleOne() throws {
        var sim = DeliverySimulator(
            scenario: try Scenario.builtIn(named: "demo-120s"),
            start: t0,
            timeScale: 1,
            seed: 1
        )
        #expect(sim.advance(to: at(119_999)).last?.contentState.status == .delivering)
        #expect(sim.advance(to: at(120_000)).map(\.event) == [.end])
    }

    /// The built-in demo is the file `Protocol/scenarios/timeline-demo-120s.json`.
    @Test func builtInEqualsTheShippedFile() throws {
        let file = try Scenario.load(contentsOf: scenariosDirectory() + "/timeline-demo-120s.json")
        #expect(file == (try Scenario.builtIn(named: "demo-120s")))
        #expect(throws: ScenarioError.self) { try Scenario.builtIn(named: "demo-60s") }
    }
}
