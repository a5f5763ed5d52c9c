/// The simulator's publishing rules in one place: progress per status, relevance score, priority.
///
/// The numbers are ours [A]; Apple documents only what the fields mean.
public enum PublishPolicy {
    /// Progress shown for a status, 0…1, before the rider moves: created 0, cooking 0.15, awaiting pickup 0.4,
    /// picked up 0.55, delivering 0.6 (+ 0.4 × route fraction as the rider moves), delivered 1. A canceled order keeps
    /// its last progress. Progress never goes down unless a timeline sets it explicitly.
    public static func baseProgress(_ status: OrderStatus) -> Double? {
        switch status {
        case .created: 0
        case .cooking: 0.15
        case .awaitingPickup: 0.4
        case .pickedUp: 0.55
        case .delivering: 0.6
        case .delivered: 1
        case .canceled: nil
        }
    }

    /// Progress while delivering with the rider at `routeFraction` (0…1) of the route: 0.6 + 0.4 × fraction.
    public static func deliveringProgress(routeFraction: Double) -> Double {
        ((0.6 + 0.4 * min(max(routeFraction, 0), 1)) * 10_000).rounded() / 10_000
    }

    /// The relevance score of an event: 10 + 90 × progress for an active order (10…100, higher when closer to
    /// arrival, so the order about to arrive gets the Dynamic Island), 0 for an ended one. Rounded to 0.01.
    ///
    /// - Note: Source: "determines which of your Live Activities appears in the Dynamic Island and the order of your
    ///   Live Activities on the Lock Screen … scores are relative" (live-activities.md §1.1, §2.2); values ours [A].
    public static func relevanceScore(status: OrderStatus, progress: Double) -> Double {
        if status.isTerminal { return 0 }
        return ((10 + 90 * min(max(progress, 0), 1)) * 100).rounded() / 100
    }

    /// APNs priority of an update: 10 when the status or the ETA target changed (and for every `start` and `end`),
    /// 5 when only the rider's position, progress or confirmation time changed.
    ///
    /// - Note: Source: priority 10 is immediate and budgeted, priority 5 opportunistic and unbudgeted; Apple
    ///   recommends a mix (live-activities.md §2.1, §2.4).
    public static func priority(kind: ActivityEventKind, statusOrEtaChanged: Bool) -> Int {
        kind != .update || statusOrEtaChanged ? 10 : 5
    }
}
