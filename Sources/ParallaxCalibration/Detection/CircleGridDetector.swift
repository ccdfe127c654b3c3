import Foundation
import ParallaxGeometry

/// Finds the centres of a grid of dark circles on a light board — symmetric
/// (``BoardPattern/circles``) or OpenCV's asymmetric grid (``BoardPattern/asymmetricCircles``) —
/// in OpenCV's point order.
///
/// 1. **Blobs.** Pixels darker than their neighbourhood (a box mean over a sixth of the
///    image, minus 10 %) form 4-connected blobs; a blob is kept when it is round: its area
///    matches the ellipse of its second moments to 20 %, and every boundary pixel lies
///    within 0.75–1.3 of that ellipse's radius (a square fails: its corners reach 1.22 and its
///    edges 0.87 — with the one-pixel slack small blobs need, a square of 5 px still fails).
/// 2. **Grid.** Blobs of similar size closer than 1.6× their nearest neighbour are linked;
///    each linked group with at least as many blobs as the board is tried. The quadrilateral
///    of largest area on its convex hull is matched with every four vertices of the model
///    grid's hull, in each of the four turns (never mirrored), through a homography; a match
///    is accepted when every model point then lands within 0.3 spacings of its own blob. When several turns fit (a
///    symmetric grid turned 180°), the one whose rows run most nearly left-to-right in the
///    image is chosen, as OpenCV does, so both cameras of a rig number the grid alike.
/// 3. **Centres.** Each circle's centre comes from grey-level-weighted moments over its
///    blob's ellipse grown by half (the weight is the darkness between the local light and
///    dark levels, so edge pixels count by coverage). The centroid of a tilted circle's image
///    is *not* the image of its centre (perspective stretches the far half less than the near
///    half); so the centre is taken as the pole of the board's vanishing line with respect to
///    the fitted ellipse — exact for a circle under a homography, the vanishing line coming
///    from the homography of the whole grid — twice, the second time with the grid's
///    homography refitted to the corrected centres (``correctsPerspective``).
public struct CircleGridDetector: Sendable {
    /// The board (its pattern must be a circle grid).
    public var board: CalibrationBoard
    /// Wall-clock time allowed per image, in seconds.
    public var timeBudgetSeconds: Double = 2
    /// Correct each centroid to the image of the circle's centre (on by default; off gives
    /// the plain weighted centroid, for measuring the bias the correction removes).
    public var correctsPerspective = true

    /// A detector for `board`.
    public init(board: CalibrationBoard) {
        self.board = board
    }

    /// A round dark blob: its pixel moments.
    struct Blob {
        var area: Double
        var centroid: SIMD2<Double>
        /// Second central moments (xx, xy, yy) of the pixel centres.
        var covariance: SIMD3<Double>
        var box: (x0: Int, y0: Int, x1: Int, y1: Int)
    }

    /// Detects the grid in `image`.
    public func detect(in image: GrayImage) -> Result<ChessboardDetection, DetectionFailure> {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int64(timeBudgetSeconds * 1000))
        func late() -> Bool { clock.now > deadline }
        guard image.width >= 16, image.height >= 16 else { return .failure(.noCircleGrid(blobs: 0)) }
        let blobs = Self.roundBlobs(in: image)
        if late() { return .failure(.timeBudgetExceeded(seconds: timeBudgetSeconds)) }
        let needed = board.cornerCount
        guard blobs.count >= needed else { return .failure(.noCircleGrid(blobs: blobs.count)) }
        let model = board.objectPoints.map { SIMD2($0.x, $0.y) / board.squareSize }
        var largest = 0
        for group in Self.linkedGroups(blobs) where group.count >= needed {
            if late() { return .failure(.timeBudgetExceeded(seconds: timeBudgetSeconds)) }
            largest = max(largest, group.count)
            guard let matched = Self.match(model: model, to: group.map { blobs[$0].centroid }) else { continue }
            let ordered = matched.map { blobs[group[$0]] }
            let centres = ordered.map { Self.weightedEllipse(of: $0, in: image) }
            var points = centres.map(\.centre)
            if correctsPerspective {
                for _ in 0..<2 {
                    guard let h = try? ZhangInitialization.homography(board: model, image: points),
                          let inverse = h.inverse else { break }
                    let vanishing = inverse.transposed * SIMD3(0, 0, 1)
                    points = zip(centres, points).map { ellipse, previous in ellipse.pole(of: vanishing) ?? previous }
                }
            }
            // Neighbours along an asymmetric grid's row are two spacings apart.
            let spacing = board.meanRowStep(points) / (board.pattern == .asymmetricCircles ? 2 : 1)
            return .success(ChessboardDetection(corners: points, cornerSpacing: spacing))
        }
        if largest == 0 { return .failure(.noCircleGrid(blobs: blobs.count)) }
        return .failure(.incompleteGrid(largest: largest, expected: needed))
    }

    // MARK: Blobs

    /// Dark, round blobs, from a threshold against the local mean.
    static func roundBlobs(in image: GrayImage) -> [Blob] {
        let w = image.width, h = image.height
        // Integral image for box means.
        var integral = [Double](repeating: 0, count: (w + 1) * (h + 1))
        for y in 0..<h {
            var row = 0.0
            for x in 0..<w {
                row += Double(image[x, y])
                integral[(y + 1) * (w + 1) + x + 1] = integral[y * (w + 1) + x + 1] + row
            }
        }
        let radius = max(7, min(w, h) / 12)
        var dark = [Bool](repeating: false, count: w * h)
        for y in 0..<h {
            let y0 = max(0, y - radius), y1 = min(h, y + radius + 1)
            for x in 0..<w {
                let x0 = max(0, x - radius), x1 = min(w, x + radius + 1)
                let sum = integral[y1 * (w + 1) + x1] - integral[y0 * (w + 1) + x1] - integral[y1 * (w + 1) + x0] + integral[y0 * (w + 1) + x0]
                let mean = sum / Double((x1 - x0) * (y1 - y0))
                dark[y * w + x] = Double(image[x, y]) < mean * 0.9
            }
        }
        // 4-connected components by flood fill.
        var label = [Int32](repeating: -1, count: w * h)
        var blobs: [Blob] = []
        var stack: [Int] = []
        var members: [Int] = []
        for start in 0..<(w * h) where dark[start] && label[start] < 0 {
            let id = Int32(blobs.count + 1)
            label[start] = id
            stack = [start]
            members.removeAll(keepingCapacity: true)
            var touchesEdge = false
            while let p = stack.popLast() {
                members.append(p)
                let x = p % w, y = p / w
                if x == 0 || y == 0 || x == w - 1 || y == h - 1 { touchesEdge = true }
                for q in [x > 0 ? p - 1 : -1, x < w - 1 ? p + 1 : -1, y > 0 ? p - w : -1, y < h - 1 ? p + w : -1]
                where q >= 0 && dark[q] && label[q] < 0 {
                    label[q] = id
                    stack.append(q)
                }
            }
            guard !touchesEdge, members.count >= 12, Double(members.count) <= 0.05 * Double(w * h) else {
                blobs.append(Blob(area: 0, centroid: .zero, covariance: .zero, box: (0, 0, 0, 0)))
                continue
            }
            var sum = SIMD2<Double>.zero
            var box = (x0: w, y0: h, x1: 0, y1: 0)
            for p in members {
                let x = p % w, y = p / w
                sum += SIMD2(Double(x), Double(y))
                box = (min(box.x0, x), min(box.y0, y), max(box.x1, x), max(box.y1, y))
            }
            let n = Double(members.count)
            let c = sum / n
            var m = SIMD3<Double>.zero
            for p in members {
                let d = SIMD2(Double(p % w), Double(p / w)) - c
                m += SIMD3(d.x * d.x, d.x * d.y, d.y * d.y)
            }
            // Pixels are unit squares: each adds 1/12 to the variance along both axes.
            m = m / n + SIMD3(1.0 / 12, 0, 1.0 / 12)
            blobs.append(Blob(area: n, centroid: c, covariance: m, box: box))
            // Roundness: the area of the moment ellipse, and the boundary's radius in its metric.
            let det = m.x * m.z - m.y * m.y
            guard det > 0 else { blobs[blobs.count - 1].area = 0; continue }
            let ellipseArea = 4 * Double.pi * det.squareRoot()
            let inverse = SIMD3(m.z, -m.y, m.x) / det  // Σ⁻¹
            var low = Double.infinity, high = 0.0
            for p in members {
                let x = p % w, y = p / w
                let boundary = x == 0 || y == 0 || x == w - 1 || y == h - 1
                    || label[p - 1] != id || label[p + 1] != id || label[p - w] != id || label[p + w] != id
                guard boundary else { continue }
                // Outward half a pixel: the boundary pixel's outer edge.
                let d = SIMD2(Double(x), Double(y)) - c
                let r = (d.x * d.x * inverse.x + 2 * d.x * d.y * inverse.y + d.y * d.y * inverse.z).squareRoot() / 2
                let slack = 0.5 / (det.squareRoot().squareRoot() * 2)
                low = min(low, r + slack)
                high = max(high, r - slack)
            }
            let fill = n / ellipseArea
            if !(fill > 0.8 && fill < 1.2 && low > 0.8 && high < 1.15) { blobs[blobs.count - 1].area = 0 }
        }
        return blobs.filter { $0.area > 0 }
    }

    /// Groups of blobs of similar size, each linked to the others closer than 1.6× its
    /// nearest neighbour, largest group first.
    static func linkedGroups(_ blobs: [Blob]) -> [[Int]] {
        let n = blobs.count
        var nearest = [Double](repeating: .infinity, count: n)
        for i in 0..<n {
            for j in 0..<n where j != i {
                nearest[i] = min(nearest[i], length(blobs[i].centroid - blobs[j].centroid))
            }
        }
        var parent = Array(0..<n)
        func root(_ i: Int) -> Int {
            var i = i
            while parent[i] != i { parent[i] = parent[parent[i]]; i = parent[i] }
            return i
        }
        for i in 0..<n {
            for j in (i + 1)..<max(i + 1, n) {
                let d = length(blobs[i].centroid - blobs[j].centroid)
                let ratio = blobs[i].area / blobs[j].area
                if d <= 1.6 * min(nearest[i], nearest[j]) && ratio < 3 && ratio > 1.0 / 3 {
                    parent[root(i)] = root(j)
                }
            }
        }
        var groups: [Int: [Int]] = [:]
        for i in 0..<n { groups[root(i), default: []].append(i) }
        return groups.values.sorted { $0.count > $1.count }
    }

    // MARK: Grid

    /// For each model point (board units), the index into `points` of its blob, or `nil`
    /// when no turn of the model fits every point.
    static func match(model: [SIMD2<Double>], to points: [SIMD2<Double>]) -> [Int]? {
        let modelHull = convexHull(model)
        guard modelHull.count >= 4, let imageQuad = largestQuadrilateral(convexHull(points)) else { return nil }
        // The model's hull may have more than four vertices (an asymmetric grid's zigzag
        // sides): every four of them, in hull order, are tried.
        var modelQuads: [[SIMD2<Double>]] = []
        let n = modelHull.count
        for a in 0..<n { for b in (a + 1)..<n { for c in (b + 1)..<n { for d in (c + 1)..<n {
            modelQuads.append([modelHull[a], modelHull[b], modelHull[c], modelHull[d]])
        } } } }
        var fits: [(order: [Int], h: Matrix3x3)] = []
        for modelQuad in modelQuads {
        for shift in 0..<4 {
            let target = (0..<4).map { imageQuad[($0 + shift) % 4] }
            guard let h = try? ZhangInitialization.homography(board: modelQuad, image: target) else { continue }
            guard var order = assign(model, points, through: h, tolerance: 0.3),
                  let refined = try? ZhangInitialization.homography(board: model, image: order.map { points[$0] }),
                  let again = assign(model, points, through: refined, tolerance: 0.3) else { continue }
            order = again
            // Never mirrored: the board's x then y axes turn the way the image's do.
            let o = apply(refined, model[0]), ex = apply(refined, model[0] + SIMD2(1, 0)), ey = apply(refined, model[0] + SIMD2(0, 1))
            let a = ex - o, b = ey - o
            guard a.x * b.y - a.y * b.x > 0 else { continue }
            if !fits.contains(where: { $0.order == order }) { fits.append((order, refined)) }
        }
        }
        // Several turns fit a symmetric grid: rows running most nearly to the right win.
        return fits.max { first, second in
            func rightward(_ h: Matrix3x3) -> Double {
                let d = apply(h, model[0] + SIMD2(1, 0)) - apply(h, model[0])
                return d.x / max(length(d), 1e-12)
            }
            return rightward(first.h) < rightward(second.h)
        }?.order
    }

    /// Each model point's nearest image point through `h`, when every one is within
    /// `tolerance` of the local spacing and no point is used twice.
    private static func assign(_ model: [SIMD2<Double>], _ points: [SIMD2<Double>], through h: Matrix3x3,
                               tolerance: Double) -> [Int]? {
        var used = Set<Int>()
        var order: [Int] = []
        for m in model {
            let p = apply(h, m)
            // The local spacing: how far one board unit moves the point here.
            let spacing = min(length(apply(h, m + SIMD2(1, 0)) - p), length(apply(h, m + SIMD2(0, 1)) - p))
            guard spacing.isFinite, spacing > 0 else { return nil }
            var best = -1, bestDistance = Double.infinity
            for (i, q) in points.enumerated() {
                let d = length(q - p)
                if d < bestDistance { (best, bestDistance) = (i, d) }
            }
            guard best >= 0, bestDistance <= tolerance * spacing, used.insert(best).inserted else { return nil }
            order.append(best)
        }
        return order
    }

    static func apply(_ h: Matrix3x3, _ p: SIMD2<Double>) -> SIMD2<Double> {
        let q = h * SIMD3(p.x, p.y, 1)
        return SIMD2(q.x, q.y) / q.z
    }

    /// The convex hull, counter-clockwise in a y-up frame (Andrew's monotone chain), without
    /// points within a hundredth of a unit of a hull edge's line.
    static func convexHull(_ points: [SIMD2<Double>]) -> [SIMD2<Double>] {
        let sorted = points.sorted { $0.x != $1.x ? $0.x < $1.x : $0.y < $1.y }
        guard sorted.count >= 3 else { return sorted }
        func cross(_ o: SIMD2<Double>, _ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double {
            (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x)
        }
        var hull: [SIMD2<Double>] = []
        for pass in 0..<2 {
            let start = hull.count
            for p in pass == 0 ? sorted : sorted.reversed() {
                while hull.count >= start + 2 && cross(hull[hull.count - 2], hull[hull.count - 1], p) <= 0 { hull.removeLast() }
                hull.append(p)
            }
            hull.removeLast()
        }
        return hull
    }

    /// The four hull vertices enclosing the largest area, in hull order.
    static func largestQuadrilateral(_ hull: [SIMD2<Double>]) -> [SIMD2<Double>]? {
        let n = hull.count
        guard n >= 4 else { return nil }
        func area(_ q: [SIMD2<Double>]) -> Double {
            var s = 0.0
            for i in 0..<4 { s += q[i].x * q[(i + 1) % 4].y - q[(i + 1) % 4].x * q[i].y }
            return abs(s) / 2
        }
        var best: [SIMD2<Double>]?, bestArea = 0.0
        for a in 0..<n { for b in (a + 1)..<n { for c in (b + 1)..<n { for d in (c + 1)..<n {
            let q = [hull[a], hull[b], hull[c], hull[d]]
            let s = area(q)
            if s > bestArea { (best, bestArea) = (q, s) }
        } } } }
        return best
    }

    // MARK: Centres

    /// A circle's image: the ellipse `(x − c)ᵀ M (x − c) = 1` fitted from weighted moments.
    struct Ellipse {
        var centre: SIMD2<Double>
        /// M as (m11, m12, m22).
        var metric: SIMD3<Double>

        /// The pole of `line` (homogeneous) with respect to this ellipse: where the image of the
        /// circle's centre is when `line` is the image of the line at infinity of its plane.
        func pole(of line: SIMD3<Double>) -> SIMD2<Double>? {
            // Conic C = [[M, −Mc], [−(Mc)ᵀ, cᵀMc − 1]]; the pole is C⁻¹ · line.
            let m = metric, c = centre
            let mc = SIMD2(m.x * c.x + m.y * c.y, m.y * c.x + m.z * c.y)
            let conic = Matrix3x3(rows: SIMD3(m.x, m.y, -mc.x), SIMD3(m.y, m.z, -mc.y),
                                  SIMD3(-mc.x, -mc.y, (c * mc).sum() - 1))
            guard let inverse = conic.inverse else { return nil }
            let p = inverse * line
            guard abs(p.z) > 1e-300 else { return nil }
            let point = SIMD2(p.x, p.y) / p.z
            return point.x.isFinite && point.y.isFinite && length(point - c) < 2 ? point : nil
        }
    }

    /// The ellipse of `blob` from grey-level-weighted moments over its ellipse grown by half.
    static func weightedEllipse(of blob: Blob, in image: GrayImage) -> Ellipse {
        let m = blob.covariance
        let det = m.x * m.z - m.y * m.y
        let inverse = SIMD3(m.z, -m.y, m.x) / det
        // Window: the blob's moment ellipse (radius 2σ) grown by half, as pixel bounds.
        let grow = 1.5
        let halfX = 2 * grow * m.x.squareRoot() + 1, halfY = 2 * grow * m.z.squareRoot() + 1
        let c = blob.centroid
        let x0 = max(0, Int((c.x - halfX).rounded(.down))), x1 = min(image.width - 1, Int((c.x + halfX).rounded(.up)))
        let y0 = max(0, Int((c.y - halfY).rounded(.down))), y1 = min(image.height - 1, Int((c.y + halfY).rounded(.up)))
        var inside: [(SIMD2<Double>, Double)] = []
        var levels: [Float] = []
        for y in y0...y1 {
            for x in x0...x1 {
                let d = SIMD2(Double(x), Double(y)) - c
                let r = (d.x * d.x * inverse.x + 2 * d.x * d.y * inverse.y + d.y * d.y * inverse.z).squareRoot() / 2
                guard r <= grow else { continue }
                inside.append((SIMD2(Double(x), Double(y)), r))
                levels.append(image[x, y])
            }
        }
        // The light level from the ring outside the blob, the dark from its core.
        let ring = zip(inside, levels).filter { $0.0.1 > 1.15 }.map(\.1).sorted()
        let core = zip(inside, levels).filter { $0.0.1 < 0.7 }.map(\.1).sorted()
        guard !ring.isEmpty, !core.isEmpty else {
            return Ellipse(centre: c, metric: SIMD3(inverse.x, inverse.y, inverse.z) / 4)
        }
        let light = Double(ring[ring.count / 2]), darkLevel = Double(core[core.count / 2])
        guard light - darkLevel > 1 else { return Ellipse(centre: c, metric: SIMD3(inverse.x, inverse.y, inverse.z) / 4) }
        var w0 = 0.0, w1 = SIMD2<Double>.zero
        var weights: [Double] = []
        for ((p, _), level) in zip(inside, levels) {
            let w = min(1, max(0, (light - Double(level)) / (light - darkLevel)))
            weights.append(w)
            w0 += w
            w1 += w * p
        }
        guard w0 > 0 else { return Ellipse(centre: c, metric: SIMD3(inverse.x, inverse.y, inverse.z) / 4) }
        let centre = w1 / w0
        var second = SIMD3<Double>.zero
        for ((p, _), w) in zip(inside, weights) {
            let d = p - centre
            second += w * SIMD3(d.x * d.x, d.x * d.y, d.y * d.y)
        }
        second = second / w0 + SIMD3(1.0 / 12, 0, 1.0 / 12)
        // A filled ellipse's covariance is M⁻¹ / 4, so M = (4 Σ)⁻¹.
        let d2 = second.x * second.z - second.y * second.y
        guard d2 > 0 else { return Ellipse(centre: centre, metric: SIMD3(inverse.x, inverse.y, inverse.z) / 4) }
        let metric = SIMD3(second.z, -second.y, second.x) / (4 * d2)
        return Ellipse(centre: centre, metric: metric)
    }
}
