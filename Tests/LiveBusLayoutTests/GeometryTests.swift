import Testing

@testable import LiveBusLayout

struct GeometryTests {
    /// Rects that only touch do not intersect; overlapping ones do (reserved-region checks rely on it).
    @Test func touchingRectsDoNotIntersect() {
        let a = Rect(x: 0, y: 0, width: 10, height: 10)
        #expect(!a.intersects(Rect(x: 10, y: 0, width: 5, height: 5)))
        #expect(a.intersects(Rect(x: 9.99, y: 0, width: 5, height: 5)))
        #expect(a.intersection(Rect(x: 5, y: 5, width: 10, height: 10)) == Rect(x: 5, y: 5, width: 5, height: 5))
    }

    /// Containment is edge-inclusive; insets clamp at zero.
    @Test func containsAndInset() {
        let a = Rect(x: 0, y: 0, width: 100, height: 50)
        #expect(a.contains(Rect(x: 0, y: 0, width: 100, height: 50)))
        #expect(!a.contains(Rect(x: 0, y: 0, width: 100.1, height: 50)))
        #expect(
            a.inset(by: EdgeInsets(top: 10, left: 20, bottom: 5, right: 30))
                == Rect(x: 20, y: 10, width: 50, height: 35)
        )
        #expect(a.insetBy(dx: 60, dy: 0).width == 0)
    }

    /// Rounding rounds edges, so rects sharing an edge still share it after rounding.
    @Test func roundingKeepsSharedEdges() {
        let upper = Rect(minX: 0, minY: 0, maxX: 10, maxY: 256.014)
        let lower = Rect(minX: 0, minY: 256.014, maxX: 10, maxY: 300)
        #expect(!upper.rounded.intersects(lower.rounded))
        #expect(upper.rounded.maxY == lower.rounded.minY)
        #expect(Rect(x: 93.525, y: 0, width: 520, height: 1).rounded.width == 520)
    }
}
