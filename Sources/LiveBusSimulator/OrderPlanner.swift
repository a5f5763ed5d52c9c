/// Draws a realistic lifecycle for one order, as explicit timeline actions, from the parameter table of
/// ../shared/reference/delivery-reality.md §4. Used by ``Scenario/random(orders:seed:)`` and for orders created by
/// hand (``DeliverySimulator/createOrder(_:at:)``).
///
/// Phases (minutes, LN(m, σ) = lognormal with median m): store accepts after LN(1.5, 0.9), or the order is
/// canceled by the 10-minute acceptance timeout; food is ready LN(13, 0.5) [3, 60] after acceptance against a
/// quoted 10 or 15; a rider is offered the order when the quoted ready time is 10 minutes away (6-minute first-mile
/// estimate + 4-minute lead), in 45-second offer rounds each accepted with p = 0.7, and rides LN(6, 0.6) [1, 30] to
/// the store; pickup is max(ready, rider at store) + triangular(1, 2, 5); the rider sets off 0.5–1.5 later, rides
/// the straight-line route at LN(18, 0.25) [8, 30] km/h, and hands over in triangular(1, 2, 6).
///
/// The backend's ETA is re-estimated at acceptance, rider assignment, awaiting pickup, pickup, departure and every
/// 45 s while delivering, from what it knows then (medians for what it does not); a revision is published when it
/// moves the ETA by a minute or more (the displayed minute changes). Revisions come out late or early as the real
/// draws differ from the medians.
///
/// Hazards (random scenarios only; orders made by hand get none): 5 % of orders stall (no news for 1–5 min at a
/// random moment), 0.5 % are canceled because no rider accepts (10–40 min after ordering, if not yet picked up),
/// 0.5 % are canceled by the customer before the store accepts, and 2 % get a customer cancel request after
/// cooking starts that fails ("the store already started cooking"). With the acceptance timeout (about 1.8 %)
/// that makes about 2.8 % canceled orders.
/// - Note: Source: delivery-reality.md §4 (every distribution and rate above; the failing-cancel rate is ours [A]).
public enum OrderPlanner {
    /// Probability that an order stalls once (no news for 1–5 min). delivery-reality.md §4 "backend stall".
    public static let stallProbability = 0.05
    /// Probability of a no-rider cancel, 10–40 min after ordering. delivery-reality.md §4 "no-rider cancel (NA)".
    public static let noRiderCancelProbability = 0.005
    /// Probability of a successful customer cancel before acceptance. delivery-reality.md §4 "customer cancel".
    public static let customerCancelProbability = 0.005
    /// Probability of a customer cancel request after cooking starts that fails. Ours [A].
    public static let failingCancelProbability = 0.02
    /// Store acceptance timeout, minutes. delivery-reality.md §4 (Deliveroo 10-min auto-reject).
    public static let acceptTimeoutMinutes = 10.0
    /// The centre random customers live around: Seoul City Hall.
    public static let cityCentre = Coordinate(latitude: 37.5665, longitude: 126.978)

    static func ms(_ minutes: Double) -> Int64 { Int64((minutes * 60_000).rounded()) }

    /// Draws one order's lifecycle.
    ///
    /// - Parameters:
    ///   - spec: The order (its `etaAtMs` is replaced by the first estimate).
    ///   - createdAtMs: Scenario time of creation, milliseconds.
    ///   - hazards: Whether stalls, cancellations and failing cancel requests may be drawn.
    ///   - rng: The generator; the same state gives the same plan.
    /// - Returns: The actions, in time order, starting with `createOrder` and ending with a terminal status.
    public static func plan(
        _ spec: OrderSpec,
        createdAtMs: Int64,
        hazards: Bool,
        rng: inout SimulationRNG
    ) -> [TimelineEvent] {
        let id = spec.id
        let distanceKm = Route.lengthKm(spec.route)
        let travelEstimate = distanceKm / 18 * 60
        // Draw everything up front, in a fixed order, so a plan depends on the seed alone.
        // Without hazards (orders made by hand) the store always accepts within the 10-minute timeout.
        let acceptDraw = rng.logNormal(median: 1.5, sigma: 0.9)
        let accept = hazards ? acceptDraw : min(acceptDraw, acceptTimeoutMinutes - 0.5)
        let quote: Double = rng.chance(0.5) ? 10 : 15
        let cook = rng.logNormal(median: 13, sigma: 0.5, clampedTo: 3...60)
        let firstMile = rng.logNormal(median: 6, sigma: 0.6, clampedTo: 1...30)
        let storeHandoff = rng.triangular(1, 2, 5)
        let setOff = rng.uniform(0.5, 1.5)
        let speed = rng.logNormal(median: 18, sigma: 0.25, clampedTo: 8...30)
        let doorHandoff = rng.triangular(1, 2, 6)
        var rounds = 1.0
        while !rng.chance(0.7) { rounds += 1 }
        let customerCancel = rng.chance(customerCancelProbability)
        let customerCancelFraction = rng.unit()
        let noRider = rng.chance(noRiderCancelProbability)
        let noRiderAt = rng.uniform(10, 40)
        let failingCancel = rng.chance(failingCancelProbability)
        let failingCancelAfter = rng.uniform(0.5, 3)
        let stall = rng.chance(stallProbability)
        let stallFraction = rng.unit()
        let stallMinutes = rng.uniform(1, 5)

        var events: [(minute: Double, action: TimelineAction)] = []
        var lastEta = 1.5 + 15 + 2 + 1 + travelEstimate + 2
        var created = spec
        created.etaAtMs = createdAtMs + ms(lastEta)
        events.append((0, .createOrder(created)))
        func status(
            _ at: Double,
            _ s: OrderStatus,
            eta: Double?,
            arrive: Double? = nil,
            summary: CustomerSummary? = nil
        ) {
            if let eta { lastEta = eta }
            events.append(
                (
                    at,
                    .setStatus(
                        orderID: id,
                        status: s,
                        etaAtMs: eta.map { createdAtMs + ms($0) },
                        progress: nil,
                        summary: summary,
                        arriveAtMs: arrive.map { createdAtMs + ms($0) }
                    )
                )
            )
        }
        func revise(_ at: Double, _ eta: Double) {
            guard abs(eta - lastEta) >= 1 else { return }
            lastEta = eta
            events.append((at, .reviseEta(orderID: id, etaAtMs: createdAtMs + ms(eta), arriveAtMs: nil)))
        }

        if hazards && customerCancel && accept < acceptTimeoutMinutes {
            let at = accept * customerCancelFraction
            events.append((at, .cancelRequest(orderID: id, succeeds: true, reason: "the customer changed their mind")))
            return finish(events, createdAtMs: createdAtMs)
        }
        if accept > acceptTimeoutMinutes {
            let summary = CustomerSummary(
                ko: OrderStatus.canceled.summaryKorean,
                en: OrderStatus.canceled.summaryEnglish,
                detailKo: "가게가 주문을 받지 못했어요",
                detailEn: "The restaurant did not accept the order"
            )
            status(acceptTimeoutMinutes, .canceled, eta: nil, summary: summary)
            return finish(events, createdAtMs: createdAtMs)
        }
        let tail = 2 + 1 + travelEstimate + 2  // store handoff + set off + ride + door, as estimated
        status(accept, .cooking, eta: accept + quote + tail)
        let readyEstimate = accept + quote
        let ready = accept + cook
        let dispatch = max(accept, readyEstimate - (6 + 4))
        let assigned = dispatch + rounds * 0.75
        let atStore = assigned + firstMile
        revise(assigned, max(readyEstimate, assigned + 6) + tail)
        let awaiting = max(accept + 0.1, min(ready, atStore))
        if ready <= atStore {
            status(awaiting, .awaitingPickup, eta: max(awaiting, assigned + 6) + tail)
        } else {
            status(awaiting, .awaitingPickup, eta: max(awaiting, readyEstimate) + tail)
        }
        let pickup = max(ready, atStore) + storeHandoff
        status(pickup, .pickedUp, eta: pickup + 1 + travelEstimate + 2)
        let departure = pickup + setOff
        let travel = distanceKm / speed * 60
        let door = departure + travel
        status(departure, .delivering, eta: departure + travelEstimate + 2, arrive: door)
        var check = departure + 0.75
        while check < door {
            let remaining = 1 - (check - departure) / travel
            revise(check, check + remaining * travelEstimate + 2)
            check += 0.75
        }
        let delivered = door + doorHandoff
        status(delivered, .delivered, eta: nil)

        if hazards && noRider && noRiderAt < pickup {
            events.removeAll { $0.minute >= noRiderAt }
            let summary = CustomerSummary(
                ko: OrderStatus.canceled.summaryKorean,
                en: OrderStatus.canceled.summaryEnglish,
                detailKo: "배달할 라이더를 찾지 못했어요",
                detailEn: "No delivery partner was available"
            )
            status(noRiderAt, .canceled, eta: nil, summary: summary)
        }
        let end = events.map(\.minute).max() ?? 0
        if hazards && failingCancel && accept + failingCancelAfter < min(pickup, end) {
            events.append(
                (
                    accept + failingCancelAfter,
                    .cancelRequest(orderID: id, succeeds: false, reason: "the store already started cooking")
                )
            )
        }
        if hazards && stall {
            events.append((end * stallFraction, .stall(orderID: id, durationMs: ms(stallMinutes))))
        }
        return finish(events, createdAtMs: createdAtMs)
    }

    private static func finish(_ events: [(minute: Double, action: TimelineAction)], createdAtMs: Int64)
        -> [TimelineEvent]
    {
        events.enumerated()
            .sorted { ($0.element.minute, $0.offset) < ($1.element.minute, $1.offset) }
            .map { TimelineEvent(atMs: createdAtMs + ms($0.element.minute), action: $0.element.action) }
    }

    /// A customer location within 8 km of ``cityCentre`` and a store LN(2.0, 0.62) [0.2, 8] km from it.
    static func randomPlaces(rng: inout SimulationRNG) -> (home: Coordinate, store: Coordinate) {
        let home = Route.destination(
            from: cityCentre,
            distanceKm: 8 * rng.unit().squareRoot(),
            bearingDegrees: rng.uniform(0, 360)
        )
        return (home, randomStore(near: home, rng: &rng))
    }

    static func randomStore(near home: Coordinate, rng: inout SimulationRNG) -> Coordinate {
        Route.destination(
            from: home,
            distanceKm: rng.logNormal(median: 2.0, sigma: 0.62, clampedTo: 0.2...8),
            bearingDegrees: rng.uniform(0, 360)
        )
    }

    static func padded(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    /// Builds ``Scenario/random(orders:seed:)``: customers (`C0001`, …) place 1 (60 %), 2 (30 %) or 3 (10 %)
    /// orders (`R0001`, …) from different stores within 5 minutes of each other; first orders arrive uniformly over
    /// max(10 min, orders × 6 s).
    static func randomScenario(orders: Int, seed: UInt64, rng: inout SimulationRNG) -> Scenario {
        let windowMinutes = max(10, Double(orders) * 0.1)
        var timeline: [TimelineEvent] = []
        var made = 0
        var customer = 0
        while made < orders {
            customer += 1
            let r = rng.unit()
            let count = min(r < 0.6 ? 1 : r < 0.9 ? 2 : 3, orders - made)
            let (home, firstStore) = randomPlaces(rng: &rng)
            let first = rng.uniform(0, windowMinutes)
            for k in 0..<count {
                made += 1
                let at = k == 0 ? first : first + rng.uniform(0, 5)
                let spec = OrderSpec(
                    id: "R" + padded(made, 4),
                    customerID: "C" + padded(customer, 4),
                    store: k == 0 ? firstStore : randomStore(near: home, rng: &rng),
                    destination: home,
                    etaAtMs: 0
                )
                timeline += plan(spec, createdAtMs: ms(at), hazards: true, rng: &rng)
            }
        }
        return Scenario(
            name: "random-\(orders)-seed-\(seed)",
            description: "\(orders) orders from \(customer) customers, phases drawn from delivery-reality.md §4",
            settings: ScenarioSettings(cancelFailureProbability: 0.1),
            timeline: timeline
        )
    }
}
