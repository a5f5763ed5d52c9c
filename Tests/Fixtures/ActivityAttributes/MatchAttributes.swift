import ActivityKit
import Foundation

/// A sports app's Live Activity with parts an activity schema cannot express.
struct MatchAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var period: Period
        var score: [String: Int]
        var clockEndsAt: Date
        var summary: String
    }

    enum Period: Codable, Hashable {
        case regular(Int)
        case overtime
    }

    var homeTeam: String
    var awayTeam: String
}
