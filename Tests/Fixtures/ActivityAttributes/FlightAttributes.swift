import ActivityKit
import Foundation

/// An airline's Live Activity whose ContentState decodes its own dates in a custom init(from:).
struct FlightAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var gate: String
        var boarding: BoardingState
        var departsAt: Date
        var updatedAt: Date
        var landsAt: Date?
        var delayMinutes: Int

        enum CodingKeys: String, CodingKey {
            case gate
            case boarding
            case departsAt = "departs_at"
            case updatedAt = "updated_ms"
            case landsAt = "lands_at"
            case delayMinutes = "delay"
        }

        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            gate = try c.decode(String.self, forKey: .gate)
            boarding = try c.decode(BoardingState.self, forKey: .boarding)
            departsAt = Date(timeIntervalSince1970: try c.decode(Double.self, forKey: .departsAt))
            updatedAt = Date(timeIntervalSince1970: try c.decode(Double.self, forKey: .updatedAt) / 1000)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            landsAt = try c.decodeIfPresent(String.self, forKey: .landsAt).flatMap { formatter.date(from: $0) }
            delayMinutes = try c.decode(Int.self, forKey: .delayMinutes)
        }
    }

    enum BoardingState: Int, Codable, Hashable {
        case notYet = 0
        case boarding
        case closed
        case departed = 9
    }

    var flightNumber: String
}
