/// The set of clock lines `offset(x) = base + a + f · x` that every accepted sample allows, as a convex polygon in
/// the (a, f) plane: `a` is the offset at the reference instant relative to a base (ms), `f` the frequency error
/// (ms per ms, ppm · 1e-6), `x` the server time from the reference (ms).
///
/// Each sample contributes a strip `lower ≤ a + f · x ≤ upper`; the frequency tolerance contributes
/// `|f| ≤ F`. Their intersection is exact, so the offset range at any `x` is exact too: the true clock is inside
/// as long as the model holds.
/// - Note: Source: RFC 5905 §8 (each exchange bounds the offset by its one-way delays), §10 (error grows with the
///   frequency tolerance); the convex-set formulation is Marzullo's interval intersection extended to a line.
struct FeasibleRegion: Sendable, Equatable {
    /// A corner of the polygon.
    struct Vertex: Sendable, Equatable {
        /// Offset at the reference relative to the base, ms.
        var a: Double
        /// Frequency error, ms per ms.
        var f: Double
    }

    /// Corners in order around the polygon; never empty.
    private(set) var vertices: [Vertex]

    /// The strip `lower ≤ a + f · x ≤ upper` cut to `|f| ≤ maximumFrequency`: a parallelogram.
    init(lower: Double, upper: Double, x: Double, maximumFrequency: Double) {
        let m = maximumFrequency
        vertices = [
            Vertex(a: lower + m * x, f: -m),
            Vertex(a: upper + m * x, f: -m),
            Vertex(a: upper - m * x, f: m),
            Vertex(a: lower - m * x, f: m),
        ]
    }

    private init(vertices: [Vertex]) { self.vertices = vertices }

    /// The part of the polygon where `p · a + q · f ≤ r`, or `nil` if nothing is left (Sutherland–Hodgman).
    private func clipped(p: Double, q: Double, r: Double) -> FeasibleRegion? {
        var out: [Vertex] = []
        out.reserveCapacity(vertices.count + 1)
        let n = vertices.count
        for i in 0..<n {
            let current = vertices[i]
            let next = vertices[(i + 1) % n]
            let gCurrent = p * current.a + q * current.f - r
            let gNext = p * next.a + q * next.f - r
            let currentInside = gCurrent <= 0
            if currentInside, out.last != current { out.append(current) }
            if currentInside != (gNext <= 0) {
                let t = gCurrent / (gCurrent - gNext)
                let cut = Vertex(a: current.a + (next.a - current.a) * t, f: current.f + (next.f - current.f) * t)
                if out.last != cut { out.append(cut) }
            }
        }
        if out.count > 1, out.first == out.last { out.removeLast() }
        return out.isEmpty ? nil : FeasibleRegion(vertices: out)
    }

    /// The part of the polygon inside the strip `lower ≤ a + f · x ≤ upper`, or `nil` if they do not meet.
    func clipped(lower: Double, upper: Double, x: Double) -> FeasibleRegion? {
        clipped(p: 1, q: x, r: upper)?.clipped(p: -1, q: -x, r: -lower)
    }

    /// The part of the polygon with `lower ≤ f ≤ upper`, or `nil` if none.
    func clipped(frequencyLower lower: Double, upper: Double) -> FeasibleRegion? {
        clipped(p: 0, q: 1, r: upper)?.clipped(p: 0, q: -1, r: -lower)
    }

    /// The smallest and largest `a + f · x` over the polygon.
    func range(at x: Double) -> (lower: Double, upper: Double) {
        var lower = Double.infinity
        var upper = -Double.infinity
        for v in vertices {
            let y = v.a + v.f * x
            lower = min(lower, y)
            upper = max(upper, y)
        }
        return (lower, upper)
    }

    /// The smallest and largest frequency `f` over the polygon.
    var frequencyRange: (lower: Double, upper: Double) {
        var lower = Double.infinity
        var upper = -Double.infinity
        for v in vertices {
            lower = min(lower, v.f)
            upper = max(upper, v.f)
        }
        return (lower, upper)
    }

    /// The largest distance between the line `a + f · x` and any line of the polygon, at `x`.
    func largestDeviation(fromOffset a: Double, frequency f: Double, at x: Double) -> Double {
        var worst = 0.0
        for v in vertices { worst = max(worst, abs((v.a - a) + (v.f - f) * x)) }
        return worst
    }
}
