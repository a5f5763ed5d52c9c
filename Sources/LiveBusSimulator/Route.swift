import Foundation

/// Distances and positions along a rider's route (store → waypoints → customer), on a sphere of the Earth's mean
/// radius. Accurate to well under a metre over city distances, which is all a delivery needs.
public enum Route {
    /// The Earth's mean radius in kilometres (IUGG).
    public static let earthRadiusKm = 6371.0088

    /// Great-circle distance between two coordinates, in kilometres (haversine).
    ///
    /// - Parameters:
    ///   - a: One end.
    ///   - b: The other end.
    /// - Returns: Kilometres along the great circle.
    public static func distanceKm(_ a: Coordinate, _ b: Coordinate) -> Double {
        let rad = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * rad
        let dLon = (b.longitude - a.longitude) * rad
        let h = pow(sin(dLat / 2), 2) + cos(a.latitude * rad) * cos(b.latitude * rad) * pow(sin(dLon / 2), 2)
        return 2 * earthRadiusKm * asin(min(1, h.squareRoot()))
    }

    /// The length of a polyline, in kilometres.
    public static func lengthKm(_ points: [Coordinate]) -> Double {
        zip(points, points.dropFirst()).reduce(0) { $0 + distanceKm($1.0, $1.1) }
    }

    /// The point at `fraction` (0…1) of the polyline's length, interpolated linearly within a leg, rounded to
    /// 6 decimal places (about 0.1 m).
    ///
    /// - Parameters:
    ///   - points: The route, at least one point.
    ///   - fraction: 0 is the first point, 1 the last; values outside are clamped.
    /// - Returns: The position.
    public static func position(along points: [Coordinate], fraction: Double) -> Coordinate {
        guard let first = points.first else { return Coordinate(latitude: 0, longitude: 0) }
        let total = lengthKm(points)
        let f = min(max(fraction, 0), 1)
        guard total > 0, f > 0 else { return rounded(first) }
        var remaining = total * f
        for (a, b) in zip(points, points.dropFirst()) {
            let leg = distanceKm(a, b)
            if remaining <= leg, leg > 0 {
                let t = remaining / leg
                return rounded(
                    Coordinate(
                        latitude: a.latitude + (b.latitude - a.latitude) * t,
                        longitude: a.longitude + (b.longitude - a.longitude) * t
                    )
                )
            }
            remaining -= leg
        }
        return rounded(points[points.count - 1])
    }

    /// The point `distanceKm` from `origin` on the initial bearing `bearingDegrees` (0 = north, 90 = east),
    /// rounded to 6 decimal places. Used to place random stores around customers.
    public static func destination(from origin: Coordinate, distanceKm: Double, bearingDegrees: Double) -> Coordinate {
        let rad = Double.pi / 180
        let delta = distanceKm / earthRadiusKm
        let theta = bearingDegrees * rad
        let phi1 = origin.latitude * rad
        let lambda1 = origin.longitude * rad
        let phi2 = asin(sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(theta))
        let lambda2 = lambda1 + atan2(sin(theta) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sin(phi2))
        return rounded(Coordinate(latitude: phi2 / rad, longitude: lambda2 / rad))
    }

    static func rounded(_ c: Coordinate) -> Coordinate {
        Coordinate(latitude: (c.latitude * 1e6).rounded() / 1e6, longitude: (c.longitude * 1e6).rounded() / 1e6)
    }
}
