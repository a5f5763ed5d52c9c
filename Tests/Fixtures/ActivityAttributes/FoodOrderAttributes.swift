import ActivityKit
import Foundation

/// A food-delivery app's Live Activity (snake_case JSON keys, a nested struct, an array, an optional URL).
struct FoodOrderAttributes: ActivityAttributes {
    public struct ContentState: Codable, Hashable {
        var stage: Stage
        var courier: Courier?
        var items: [Item]
        var promisedBy: Date
        var trackingLink: URL?
        var headline: String
        var minutesLate: Int

        enum CodingKeys: String, CodingKey {
            case stage
            case courier
            case items
            case promisedBy = "promised_by"
            case trackingLink = "tracking_link"
            case headline
            case minutesLate = "minutes_late"
        }
    }

    enum Stage: String, Codable, Hashable {
        case placed
        case preparing
        case onTheWay = "on_the_way"
        case delivered
    }

    struct Courier: Codable, Hashable {
        var name: String
        var vehicle: String
        var rating: Double?
    }

    struct Item: Codable, Hashable {
        var title: String
        var quantity: Int
    }

    var orderNumber: String
    var restaurant: String
    var isPriority: Bool
}
