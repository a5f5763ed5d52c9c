import Foundation

/// A point on the map in degrees (WGS 84).
public struct MapMarker: Codable, Sendable, Equatable {
    /// What the marker shows.
    public enum Kind: String, Codable, Sendable {
        /// The store the order comes from.
        case store
        /// The customer's address.
        case customer
        /// The rider's last known position.
        case rider
        /// A point of the route.
        case route
    }
    /// What the marker shows.
    public var kind: Kind
    /// Latitude in degrees, −85.05…85.05 (Web Mercator's range; clamped).
    public var latitude: Double
    /// Longitude in degrees, −180…180.
    public var longitude: Double

    /// Creates a marker.
    public init(kind: Kind, latitude: Double, longitude: Double) {
        self.kind = kind
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// The map camera: what the map view (the whole map rect) centres on and at which zoom.
public struct MapCamera: Codable, Sendable, Equatable {
    /// Latitude of the map rect's centre, degrees.
    public var centerLatitude: Double
    /// Longitude of the map rect's centre, degrees.
    public var centerLongitude: Double
    /// Web Mercator zoom (world width = 256 × 2^zoom points), clamped to ``zoomRange``.
    public var zoom: Double
    /// True when the zoom hit a bound of ``zoomRange``.
    public var zoomClamped: Bool
    /// Each marker's position in window coordinates (points), in input order.
    public var markerPoints: [Point]

    /// Zoom bounds: 2 (continent) to 18 (street level); a single marker or coincident markers get 18.
    ///
    /// - Note: Source: engine choice within the Web Mercator tile pyramid (OpenStreetMap tiles exist for
    ///   zoom 0–19, https://wiki.openstreetmap.org/wiki/Zoom_levels).
    public static let zoomRange: ClosedRange<Double> = 2...18
    /// World width in points at zoom 0.
    public static let tileSize = 256.0

    /// Fits the camera so every marker lands inside the fitting area.
    ///
    /// The markers' bounding box (in Web Mercator) is centred on the fitting area's centre and the zoom is the
    /// largest that keeps the box inside the fitting area, clamped to ``zoomRange``. The map itself fills
    /// `mapRect`, so the returned centre is the coordinate under `mapRect`'s centre. Call it again on every
    /// posture change and every rider move (the layout engine does, as it is recomputed for each).
    /// Markers spanning the antimeridian are not handled.
    ///
    /// - Parameters:
    ///   - markers: store, customer, rider and route points; nil is returned when empty.
    ///   - fittingArea: window coordinates, points.
    ///   - mapRect: the map view, window coordinates, points.
    /// - Returns: the camera, or nil without markers or with an empty fitting area.
    /// - Note: Source: field report 000 (fitting area inside the focus area); Web Mercator (EPSG:3857).
    public static func fit(markers: [MapMarker], fittingArea: Rect, mapRect: Rect) -> MapCamera? {
        guard !markers.isEmpty, !fittingArea.isEmpty else { return nil }
        let projected = markers.map { project($0) }
        let minX = projected.map(\.x).min()!
        let maxX = projected.map(\.x).max()!
        let minY = projected.map(\.y).min()!
        let maxY = projected.map(\.y).max()!
        let spanX = maxX - minX
        let spanY = maxY - minY
        var zoom = zoomRange.upperBound
        if spanX > 0 { zoom = min(zoom, log2(fittingArea.width / (spanX * tileSize))) }
        if spanY > 0 { zoom = min(zoom, log2(fittingArea.height / (spanY * tileSize))) }
        let clampedZoom = min(max(zoom, zoomRange.lowerBound), zoomRange.upperBound)
        let clamped = clampedZoom != zoom || zoom == zoomRange.upperBound
        let world = tileSize * pow(2, clampedZoom)
        // The box centre sits on the fitting area's centre; the map centre is offset from it.
        let boxCenterX = (minX + maxX) / 2
        let boxCenterY = (minY + maxY) / 2
        let centerX = boxCenterX + (mapRect.midX - fittingArea.midX) / world
        let centerY = boxCenterY + (mapRect.midY - fittingArea.midY) / world
        let points = projected.map { p in
            Point(x: mapRect.midX + (p.x - centerX) * world, y: mapRect.midY + (p.y - centerY) * world)
        }
        let (lat, lon) = unproject(x: centerX, y: centerY)
        return MapCamera(
            centerLatitude: lat,
            centerLongitude: lon,
            zoom: clampedZoom,
            zoomClamped: clamped,
            markerPoints: points
        )
    }

    /// Normalised Web Mercator (0…1 on both axes, y down).
    static func project(_ m: MapMarker) -> (x: Double, y: Double) {
        let lat = min(max(m.latitude, -85.051_128_78), 85.051_128_78) * .pi / 180
        let x = (m.longitude + 180) / 360
        let y = (1 - log(tan(lat) + 1 / cos(lat)) / .pi) / 2
        return (x, y)
    }

    static func unproject(x: Double, y: Double) -> (Double, Double) {
        let lon = x * 360 - 180
        let n = Double.pi * (1 - 2 * y)
        let lat = atan(sinh(n)) * 180 / .pi
        return (lat, lon)
    }
}
