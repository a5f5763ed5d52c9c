/// A width and height in points (pt; dp for Android devices, see `Protocol/DEVICES.md`).
public struct Size: Codable, Sendable, Equatable, Hashable {
    /// Width in points.
    public var width: Double
    /// Height in points.
    public var height: Double

    /// Creates a size in points.
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// The same size turned a quarter turn (width and height swapped).
    public var transposed: Size { Size(width: height, height: width) }
}

/// A point in points, window coordinates.
public struct Point: Codable, Sendable, Equatable, Hashable {
    /// Horizontal position in points.
    public var x: Double
    /// Vertical position in points (y grows downwards).
    public var y: Double

    /// Creates a point.
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// Insets from the four edges of a rect, in points.
public struct EdgeInsets: Codable, Sendable, Equatable, Hashable {
    /// Inset from the top edge in points.
    public var top: Double
    /// Inset from the left edge in points.
    public var left: Double
    /// Inset from the bottom edge in points.
    public var bottom: Double
    /// Inset from the right edge in points.
    public var right: Double

    /// Creates insets in points.
    public init(top: Double = 0, left: Double = 0, bottom: Double = 0, right: Double = 0) {
        self.top = top
        self.left = left
        self.bottom = bottom
        self.right = right
    }

    /// No inset on any edge.
    public static let zero = EdgeInsets()
}

/// An axis-aligned rectangle in points, origin at the top left, y growing downwards (UIKit's convention).
public struct Rect: Codable, Sendable, Equatable, Hashable {
    /// Left edge in points.
    public var x: Double
    /// Top edge in points.
    public var y: Double
    /// Width in points; a rect with width ≤ 0 is empty.
    public var width: Double
    /// Height in points; a rect with height ≤ 0 is empty.
    public var height: Double

    /// Tolerance in points used by ``contains(_:)-(Rect)`` and ``intersects(_:)`` to absorb floating-point error.
    public static let tolerance = 1e-6

    /// Creates a rect from its origin and size in points.
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// Creates a rect from its edges in points.
    public init(minX: Double, minY: Double, maxX: Double, maxY: Double) {
        self.init(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }

    /// Creates a rect at the origin with the given size.
    public init(size: Size) {
        self.init(x: 0, y: 0, width: size.width, height: size.height)
    }

    /// Left edge.
    public var minX: Double { x }
    /// Top edge.
    public var minY: Double { y }
    /// Right edge.
    public var maxX: Double { x + width }
    /// Bottom edge.
    public var maxY: Double { y + height }
    /// Horizontal centre.
    public var midX: Double { x + width / 2 }
    /// Vertical centre.
    public var midY: Double { y + height / 2 }
    /// The rect's size.
    public var size: Size { Size(width: width, height: height) }
    /// True when the rect has no area.
    public var isEmpty: Bool { width <= Self.tolerance || height <= Self.tolerance }
    /// Area in square points (0 when empty).
    public var area: Double { isEmpty ? 0 : width * height }

    /// True when the two rects overlap with a positive area (touching edges do not count).
    public func intersects(_ other: Rect) -> Bool {
        intersection(other) != nil
    }

    /// The overlap of two rects, or nil when they share no positive area.
    public func intersection(_ other: Rect) -> Rect? {
        let r = Rect(
            minX: Swift.max(minX, other.minX),
            minY: Swift.max(minY, other.minY),
            maxX: Swift.min(maxX, other.maxX),
            maxY: Swift.min(maxY, other.maxY)
        )
        return r.isEmpty ? nil : r
    }

    /// True when `other` lies wholly inside this rect (edges may touch, within ``tolerance``).
    public func contains(_ other: Rect) -> Bool {
        other.minX >= minX - Self.tolerance && other.minY >= minY - Self.tolerance
            && other.maxX <= maxX + Self.tolerance && other.maxY <= maxY + Self.tolerance
    }

    /// True when the point lies inside or on the edge of this rect (within `slack` points).
    public func contains(_ p: Point, slack: Double = Rect.tolerance) -> Bool {
        p.x >= minX - slack && p.x <= maxX + slack && p.y >= minY - slack && p.y <= maxY + slack
    }

    /// The rect shrunk by `insets` (a negative result size is clamped to 0).
    public func inset(by insets: EdgeInsets) -> Rect {
        Rect(
            x: x + insets.left,
            y: y + insets.top,
            width: Swift.max(0, width - insets.left - insets.right),
            height: Swift.max(0, height - insets.top - insets.bottom)
        )
    }

    /// The rect shrunk by `dx` on the left and right and `dy` on the top and bottom (clamped at 0).
    public func insetBy(dx: Double, dy: Double) -> Rect {
        inset(by: EdgeInsets(top: dy, left: dx, bottom: dy, right: dx))
    }

    /// The smallest rect containing both.
    public func union(_ other: Rect) -> Rect {
        Rect(
            minX: Swift.min(minX, other.minX),
            minY: Swift.min(minY, other.minY),
            maxX: Swift.max(maxX, other.maxX),
            maxY: Swift.max(maxY, other.maxY)
        )
    }

    /// This rect flipped left to right inside a window `width` points wide (origin at 0).
    public func mirrored(in width: Double) -> Rect {
        Rect(x: width - maxX, y: y, width: self.width, height: height).rounded
    }

    /// This rect rounded to 1/100 pt, for stable JSON, SVG and test output.
    ///
    /// Edges are rounded, not sizes, so two rects that share an edge before rounding still share it after.
    public var rounded: Rect {
        let x0 = minX.roundedToHundredths
        let y0 = minY.roundedToHundredths
        return Rect(
            x: x0,
            y: y0,
            width: (maxX.roundedToHundredths - x0).roundedToHundredths,
            height: (maxY.roundedToHundredths - y0).roundedToHundredths
        )
    }
}

extension Double {
    /// The value rounded to 1/100 (points), the precision of the catalog and of every rendered output.
    var roundedToHundredths: Double { (self * 100).rounded() / 100 }
}
