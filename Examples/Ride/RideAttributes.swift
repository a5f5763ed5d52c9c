import ActivityKit
import Foundation

/// A ride-hailing app's Live Activity: the Swift source `Protocol/activity-schemas/ride.json` describes
/// (README "Your own Live Activity": `livebus schema import Examples/Ride/RideAttributes.swift`).
struct RideAttributes: ActivityAttributes {
    public struct ContentState: Codable, Hashable {
        var phase: RidePhase
        var driver: Driver
        var pickupAt: Date
        var arrivesAt: Date
        var trackingURL: URL?
        var statusLine: String

        enum CodingKeys: String, CodingKey {
            case phase
            case driver
            case pickupAt = "pickup_at"
            case arrivesAt = "arrives_at"
            case trackingURL = "tracking_url"
            case statusLine = "status_line"
        }
    }

    enum RidePhase: String, Codable, Hashable {
        case requested
        case driverAssigned
        case arriving
        case onTrip
        case completed
    }

    struct Driver: Codable, Hashable {
        var name: String
        var plate: String
        var rating: Double?
    }

    var rideID: String
    var passengerName: String

    enum CodingKeys: String, CodingKey {
        case rideID = "ride_id"
        case passengerName = "passenger_name"
    }
}
