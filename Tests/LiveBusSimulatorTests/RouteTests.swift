import Testing

@testable import LiveBusSimulator

/// Distances and positions along the rider's route (store → waypoints → customer).
struct RouteTests {
    /// One degree of longitude on the equator is 2πR/360 = 111.195 km for R = 6371.0088 km (haversine).
    @Test func oneDegreeOnTheEquator() {
        let d = Route.distanceKm(Coordinate(latitude: 0, longitude: 0), Coordinate(latitude: 0, longitude: 1))
        #expect(abs(d - 111.1951) < 0.0005)
    }

    /// Halfway along two equal legs is the corner; the ends are the ends; fractions outside 0…1 clamp.
    @Test func positionAlongWaypoints() {
        let a = Coordinate(latitude: 0, longitude: 0)
        let corner = Coordinate(latitude: 0, longitude: 0.01)
        let b = Coordinate(latitude: 0.01, longitude: 0.01)
        let route = [a, corner, b]
        #expect(Route.position(along: route, fraction: 0) == a)
        #expect(Route.position(along: route, fraction: 1) == b)
        #expect(Route.position(along: route, fraction: 2) == b)
        #expect(Route.position(along: route, fraction: -1) == a)
        let half = Route.position(along: route, fraction: 0.5)
        #expect(abs(half.latitude - corner.latitude) < 1e-5 && abs(half.longitude - corner.longitude) < 1e-5)
        #expect(Route.position(along: route, fraction: 0.25) == Coordinate(latitude: 0, longitude: 0.005))
    }

    /// A point placed 2 km away on a bearing is 2 km away.
    @Test func destinationIsAtTheDistance() {
        let origin = OrderPlanner.cityCentre
        for bearing in stride(from: 0.0, to: 360, by: 45) {
            let p = Route.destination(from: origin, distanceKm: 2, bearingDegrees: bearing)
            #expect(abs(Route.distanceKm(origin, p) - 2) < 0.001)
        }
    }
}
