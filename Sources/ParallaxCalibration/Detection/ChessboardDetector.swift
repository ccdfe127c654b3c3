#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CRemapKernels
import ParallaxGeometry

/// Why no board was returned for an image.
public enum DetectionFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// Too few chessboard-like corners at all: the board is not in the image (the fast rejection).
    case noBoard(candidates: Int)
    /// Too few round blobs for the circle grid: it is not in the image.
    case noCircleGrid(blobs: Int)
    /// Corners were found but they never formed the full grid (board partly outside the image,
    /// occluded, too blurred, or a board of another size).
    case incompleteGrid(largest: Int, expected: Int)
    /// A whole grid of another size was found (a 9x6 board where 8x6 was asked for): the
    /// board in view is not the one described. Sizes are inner corners, columns × rows.
    case boardOfAnotherSize(foundColumns: Int, foundRows: Int, expectedColumns: Int, expectedRows: Int)
    /// The per-image time budget ran out first.
    case timeBudgetExceeded(seconds: Double)

    /// One line saying what was or was not found and, where it helps, what to check (the
    /// board's size, whether all of it is in view).
    public var description: String {
        switch self {
        case .noBoard(let n):
            return "no chessboard found (\(n) corner-like points)"
        case .noCircleGrid(let n):
            return "no circle grid found (\(n) round blobs)"
        case .incompleteGrid(let largest, let expected) where largest > expected:
            return "the grid found has \(largest) points, more than the \(expected) of the board asked for: "
                + "the board in view is larger (is the size right?)"
        case .incompleteGrid(let largest, let expected):
            return "the board is incomplete: the largest grid found has \(largest) of \(expected) inner corners "
                + "(is the whole board in view, sharp, and the size right?)"
        case .boardOfAnotherSize(let columns, let rows, let expectedColumns, let expectedRows):
            let found = columns * rows, expected = expectedColumns * expectedRows
            // Reported only for whole grids of at least the board's count (a smaller grid is
            // far likelier the board partly out of view): larger, or the same count reshaped.
            let comparison = found > expected ? "larger than" : "another shape than"
            return "the board in view has \(columns)x\(rows) inner corners, \(comparison) the "
                + "\(expectedColumns)x\(expectedRows) asked for: give its size as \(columns)x\(rows) (inner corners, not squares)"
        case .timeBudgetExceeded(let s):
            return "detection stopped at its time budget of \(s) s"
        }
    }
}

/// A detected board: every inner corner in the board's order.
public struct ChessboardDetection: Sendable {
    /// Pixel positions (pixel-centre convention), index `row * columns + column`.
    public var corners: [SIMD2<Double>]
    /// Typical distance between neighbouring corners, in pixels.
    public var cornerSpacing: Double
}

/// Finds a chessboard's inner corners in a gray image, written from first principles:
///
/// 1. **Saddle response.** After a Gaussian blur, a chessboard corner is a
///    saddle of the intensity surface: the Hessian's determinant is strongly
///    negative there and near zero along straight edges. Local maxima of
///    `−det H` are the candidates.
/// 2. **Ring test.** On a circle around a true corner the level alternates
///    dark/light/dark/light, and is point-symmetric (lines through the corner
///    stay lines under perspective): candidates that fail either are dropped.
///    Too few survivors means no board: the image is rejected at this point.
/// 3. **Grid growth.** From a seed and its two nearest non-collinear
///    neighbours, the grid grows cell by cell, predicting each next corner by
///    extrapolating along its row or column, until it stops; a grid of
///    exactly columns × rows is the board.
/// 4. **Ordering.** The grid is turned so rows run along the board's longer
///    side as given, the grid is right-handed in the image (x right, y down
///    for a board seen from the front), and the square between the first four
///    corners is dark. For a board whose sides have an odd total of squares
///    this fixes the origin even when the board is upside down.
/// 5. **Sub-pixel refinement** (``SubpixelRefinement``), always on the full image.
///
/// Steps 1–4 run on a copy at half resolution first (see ``coarseFirst``), and on the
/// detection scale itself only where that finds no board. Every loop checks a deadline, so detection ends within its time budget.
public struct ChessboardDetector: Sendable {
    /// The board to find (its inner-corner counts decide the grid size and orientation).
    public var board: CalibrationBoard
    /// Wall-clock time allowed per image, in seconds.
    public var timeBudgetSeconds: Double = 2
    /// Blur before the saddle response, in pixels of the detection scale.
    public var blurSigma: Double = 1.5
    /// Images wider than this are detected on a halved copy, then refined at full resolution.
    public var maximumDetectionWidth = 1000
    /// Search a copy at half the detection scale first (when it is at least
    /// ``minimumCoarseWidth`` wide), and the detection scale only where that finds no board.
    public var coarseFirst = true
    /// The narrowest half-scale copy worth searching first.
    public var minimumCoarseWidth = 320

    /// A detector for `board` with the default budget and blur.
    public init(board: CalibrationBoard) {
        self.board = board
    }

    private struct Candidate {
        var position: SIMD2<Double>
        var response: Float
    }

    /// Detects the board in `image` (a circle grid is handed to ``CircleGridDetector``).
    public func detect(in image: GrayImage) -> Result<ChessboardDetection, DetectionFailure> {
        if board.pattern != .chessboard {
            var circles = CircleGridDetector(board: board)
            circles.timeBudgetSeconds = timeBudgetSeconds
            return circles.detect(in: image)
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int64(timeBudgetSeconds * 1000))
        func late() -> Bool { clock.now > deadline }

        guard image.width >= 16, image.height >= 16 else { return .failure(.noBoard(candidates: 0)) }
        var working = image
        var scale = 1.0
        while working.width > maximumDetectionWidth {
            working = working.halved()
            scale *= 2
        }
        // Coarse first: a board whose squares are large enough is found at half the resolution
        // for a quarter of the candidate search, and refined on the full image all the same
        // (the refinement starts within a pixel or two of the corner, as it does from the
        // detection scale). Only where that fails does the search run at the detection scale.
        if coarseFirst, working.width / 2 >= minimumCoarseWidth {
            let found = detect(on: working.halved(), scale: scale * 2, original: image, clock: clock, deadline: deadline)
            if case .success = found { return found }
            if late() { return .failure(.timeBudgetExceeded(seconds: timeBudgetSeconds)) }
        }
        return detect(on: working, scale: scale, original: image, clock: clock, deadline: deadline)
    }

    /// Finds the board in `working` (the original image reduced by `scale`) and refines its
    /// corners on `original`.
    private func detect(on working: GrayImage, scale: Double, original image: GrayImage, clock: ContinuousClock,
                        deadline: ContinuousClock.Instant) -> Result<ChessboardDetection, DetectionFailure> {
        func late() -> Bool { clock.now > deadline }
        // Truncating at 2.5σ loses 1 % of the kernel's weight, irrelevant for finding candidates
        // (the sub-pixel stage blurs the original image itself) and saves a sixth of the work.
        let blurred = working.gaussianBlurred(sigma: blurSigma, truncation: 2.5)
        if late() { return .failure(.timeBudgetExceeded(seconds: timeBudgetSeconds)) }
        let candidates = findCandidates(blurred)
        if late() { return .failure(.timeBudgetExceeded(seconds: timeBudgetSeconds)) }
        let needed = board.cornerCount
        guard candidates.count >= needed else { return .failure(.noBoard(candidates: candidates.count)) }

        // Grow grids from seeds in order of response.
        let positions = candidates.map(\.position), responses = candidates.map(\.response)
        let neighbours = nearestNeighbours(positions, count: 8)
        var seeded = [Bool](repeating: false, count: positions.count)
        var largest = 0
        var largestGrid: [Cell: Int] = [:]
        for seed in positions.indices {
            if late() { return .failure(.timeBudgetExceeded(seconds: timeBudgetSeconds)) }
            if seeded[seed] { continue }
            guard let grid = growGrid(seed: seed, positions: positions, responses: responses, neighbours: neighbours, deadline: deadline, clock: clock) else { continue }
            for index in grid.values { seeded[index] = true }
            if grid.count > largest { (largest, largestGrid) = (grid.count, grid) }

            guard let ordered = order(grid: grid, positions: positions, responses: responses, image: blurred) else { continue }
            // Back to full resolution (pixel centres: x_full = 2 x_half + 0.5 per halving).
            var corners = ordered.map { p -> SIMD2<Double> in scale == 1 ? p : p * scale + SIMD2(repeating: (scale - 1) / 2) }
            let spacing = board.meanRowStep(corners)
            corners = SubpixelRefinement.refine(corners, in: image, spacing: spacing, columns: board.columns)
            return .success(ChessboardDetection(corners: corners, cornerSpacing: spacing))
        }
        if largest < 4 { return .failure(.noBoard(candidates: candidates.count)) }
        if let (columns, rows) = Self.wholeGridSize(largestGrid), columns * rows >= needed,
           (columns, rows) != (board.columns, board.rows), (rows, columns) != (board.columns, board.rows) {
            // A complete grid with as many points as the board or more, in another shape: a
            // board of another size (counted along the board's longer side as given).
            let (c, r) = (columns >= rows) == (board.columns >= board.rows) ? (columns, rows) : (rows, columns)
            return .failure(.boardOfAnotherSize(foundColumns: c, foundRows: r, expectedColumns: board.columns,
                                                expectedRows: board.rows))
        }
        return .failure(.incompleteGrid(largest: largest, expected: needed))
    }

    // MARK: Candidates

    private func findCandidates(_ image: GrayImage) -> [Candidate] {
        let w = image.width, h = image.height
        var response = [Float](repeating: 0, count: w * h)
        let border = 4
        // A saddle of a chessboard with contrast C blurred by σ has |det H| ≈ (C / (2πσ²))²;
        // accept a fraction of that for a contrast of 20 levels.
        let sigma2 = Float(blurSigma * blurSigma)
        let floorContrast: Float = 20 / (2 * Float.pi * sigma2)
        let threshold = 0.15 * floorContrast * floorContrast
        var maxima: [Candidate] = []
        let radius = 3
        image.pixels.withUnsafeBufferPointer { pixels in
            response.withUnsafeMutableBufferPointer { buffer in
                // Non-empty: the image is at least 16 × 16.
                let p = pixels.baseAddress!, r = buffer.baseAddress!
                // max(0, dxy² − dxx·dyy) from second differences, vectorised in CRemapKernels.
                parallax_saddle_response(p, r, w, h, border, GrayImage.kernelLevel)
                // Pixels passing the cheap half of the maximum test (threshold, four neighbours),
                // found eight or sixteen at a time in CRemapKernels, in scan order; then the
                // whole window for those. Bounds: they lie `border + 1` inside the image and
                // the window reaches `radius` < border + 1 from them.
                var capacity = max(1024, w * h / 32)
                while true {
                    let count = withUnsafeTemporaryAllocation(of: Int32.self, capacity: capacity) { found -> Int in
                        let count = parallax_response_peaks(r, w, h, border + 1, threshold, found.baseAddress, capacity,
                                                            GrayImage.kernelLevel)
                        guard count <= capacity else { return count }
                        for index in found.prefix(count) {
                            let i = Int(index), x = i % w, y = i / w
                            if let position = localMaximum(r, x: x, y: y, width: w, radius: radius) {
                                maxima.append(Candidate(position: position, response: r[i]))
                            }
                        }
                        return count
                    }
                    if count <= capacity { break }
                    capacity = count
                }
            }
        }
        // Strongest first (ties in scan order), then the ring test until enough pass: the same
        // list as testing every maximum and keeping the strongest that pass, for a fraction of
        // the ring tests on cluttered images. One integer key per maximum: responses are
        // positive floats (at least the threshold), whose bit patterns order as the values do,
        // so ascending keys put the strongest first and ties in scan order.
        let keys = maxima.indices.map { UInt64(~maxima[$0].response.bitPattern) << 32 | UInt64($0) }.sorted()
        let order = keys.lazy.map { Int($0 & 0xFFFF_FFFF) }
        let wanted = max(8 * board.cornerCount, 400)
        var out: [Candidate] = []
        for index in order where passesRingTest(image, at: maxima[index].position) {
            out.append(maxima[index])
            if out.count == wanted { break }
        }
        return out
    }

    /// The sub-pixel position of a strict local maximum of `response` at (x, y) over a
    /// (2·radius + 1)² window (ties go to the first in scan order), or nil. For pixels
    /// `parallax_response_peaks` found: at the threshold and not below a direct neighbour.
    @inline(__always)
    private func localMaximum(_ r: UnsafeMutablePointer<Float>, x: Int, y: Int, width w: Int, radius: Int) -> SIMD2<Double>? {
        let i = y * w + x
        let v = r[i]
        for dy in -radius...radius {
            for dx in -radius...radius where dx != 0 || dy != 0 {
                let o = r[i + dy * w + dx]
                if o > v || (o == v && (dy < 0 || (dy == 0 && dx < 0))) { return nil }
            }
        }
        // Sub-pixel peak by a parabola on each axis, for better predictions while growing.
        let left = r[i - 1], right = r[i + 1], up = r[i - w], down = r[i + w]
        let ox = (left - right) / (2 * (left - 2 * v + right)), oy = (up - down) / (2 * (up - 2 * v + down))
        return SIMD2(Double(x) + (ox.isFinite && abs(ox) < 1 ? Double(ox) : 0),
                     Double(y) + (oy.isFinite && abs(oy) < 1 ? Double(oy) : 0))
    }

    /// Unit circle directions for the ring test, 16 of them.
    private static let ringX: [Double] = (0..<16).map { cos(2 * Double.pi * Double($0) / 16) }
    private static let ringY: [Double] = (0..<16).map { sin(2 * Double.pi * Double($0) / 16) }

    /// Sixteen samples on circles of radius 3, then 5, around `p` must alternate
    /// dark/light/dark/light with contrast and point symmetry (`parallax_ring_test`, in C:
    /// this runs for every local maximum above the threshold, thousands on a cluttered image).
    private func passesRingTest(_ image: GrayImage, at p: SIMD2<Double>) -> Bool {
        image.pixels.withUnsafeBufferPointer { pixels in
            Self.ringX.withUnsafeBufferPointer { x in
                Self.ringY.withUnsafeBufferPointer { y in
                    parallax_ring_test(pixels.baseAddress, image.width, image.height, p.x, p.y, x.baseAddress,
                                       y.baseAddress, Int32(x.count), GrayImage.kernelLevel) != 0
                }
            }
        }
    }

    /// The indices of each position's `count` nearest others, nearest first (equal distances
    /// in index order).
    ///
    /// Positions are bucketed in square cells holding about `count` each; each query widens
    /// its ring of cells until the `count`-th nearest found is nearer than anything outside
    /// can be. Ranking by (distance, index) makes the result the same as comparing every pair.
    private func nearestNeighbours(_ positions: [SIMD2<Double>], count: Int) -> [[Int]] {
        guard positions.count > 1, count > 0 else { return positions.map { _ in [] } }
        var lo = positions[0], hi = positions[0]
        for p in positions {
            lo = pointwiseMin(lo, p)
            hi = pointwiseMax(hi, p)
        }
        // About `count` positions per cell when they spread evenly over the bounding box.
        let extent = hi - lo
        let area = max(extent.x * extent.y, 1)
        let cell = max(1, (area * Double(count) / Double(positions.count)).squareRoot())
        let columns = max(1, Int(extent.x / cell) + 1), rows = max(1, Int(extent.y / cell) + 1)
        func cellOf(_ p: SIMD2<Double>) -> (Int, Int) {
            (min(columns - 1, Int((p.x - lo.x) / cell)), min(rows - 1, Int((p.y - lo.y) / cell)))
        }
        var buckets = [[Int]](repeating: [], count: columns * rows)
        for (i, p) in positions.enumerated() {
            let (cx, cy) = cellOf(p)
            buckets[cy * columns + cx].append(i)
        }
        var best: [(Double, Int)] = []
        best.reserveCapacity(count + 1)
        return positions.indices.map { i in
            let p = positions[i]
            let (cx, cy) = cellOf(p)
            best.removeAll(keepingCapacity: true)
            // Keeps the `count` smallest (squared distance, index) pairs: the brute force in
            // index order keeps exactly those, so the order cells are visited in is free.
            func consider(_ j: Int) {
                let d = positions[j] - p
                let squared = d.x * d.x + d.y * d.y
                if best.count == count {
                    let last = best[count - 1]
                    if squared > last.0 || (squared == last.0 && j > last.1) { return }
                }
                var k = best.count
                while k > 0 && (best[k - 1].0 > squared || (best[k - 1].0 == squared && best[k - 1].1 > j)) { k -= 1 }
                best.insert((squared, j), at: k)
                if best.count > count { best.removeLast() }
            }
            var ring = 0
            while true {
                // The cells exactly `ring` away (the square's outline), clipped to the grid.
                for y in max(0, cy - ring)...min(rows - 1, cy + ring) {
                    let edgeRow = y == cy - ring || y == cy + ring
                    for x in max(0, cx - ring)...min(columns - 1, cx + ring) where edgeRow || x == cx - ring || x == cx + ring {
                        for j in buckets[y * columns + x] where j != i { consider(j) }
                    }
                }
                let covered = cx - ring <= 0 && cy - ring <= 0 && cx + ring >= columns - 1 && cy + ring >= rows - 1
                if covered { break }
                // The nearest a position outside the searched cells can be.
                let inner = SIMD2(Double(max(0, cx - ring)), Double(max(0, cy - ring))) * cell + lo
                let outer = SIMD2(Double(min(columns, cx + ring + 1)), Double(min(rows, cy + ring + 1))) * cell + lo
                var margin = Double.infinity
                if cx - ring > 0 { margin = min(margin, p.x - inner.x) }
                if cy - ring > 0 { margin = min(margin, p.y - inner.y) }
                if cx + ring < columns - 1 { margin = min(margin, outer.x - p.x) }
                if cy + ring < rows - 1 { margin = min(margin, outer.y - p.y) }
                // (Less a hair: a position on a cell's edge may be bucketed on either side.)
                margin -= 1e-9 * cell
                if best.count == count, margin > 0, best[count - 1].0 < margin * margin { break }
                ring += 1
            }
            return best.map(\.1)
        }
    }

    // MARK: Grid growth

    private struct Cell: Hashable {
        var i: Int
        var j: Int
        func moved(_ di: Int, _ dj: Int) -> Cell { Cell(i: i + di, j: j + dj) }
    }

    /// The columns and rows of `grid` when it fills its bounding rectangle, else `nil`.
    private static func wholeGridSize(_ grid: [Cell: Int]) -> (columns: Int, rows: Int)? {
        guard let iMin = grid.keys.map(\.i).min(), let iMax = grid.keys.map(\.i).max(),
              let jMin = grid.keys.map(\.j).min(), let jMax = grid.keys.map(\.j).max() else { return nil }
        let (columns, rows) = (iMax - iMin + 1, jMax - jMin + 1)
        return columns * rows == grid.count ? (columns, rows) : nil
    }

    private func growGrid(seed: Int, positions: [SIMD2<Double>], responses: [Float], neighbours: [[Int]],
                          deadline: ContinuousClock.Instant, clock: ContinuousClock) -> [Cell: Int]? {
        let p0 = positions[seed]
        guard let a = neighbours[seed].first else { return nil }
        let va = positions[a] - p0
        let la = length(va)
        // The second axis: the nearest neighbour at 45–135° from the first, of comparable length.
        var b: Int?
        for n in neighbours[seed].dropFirst() {
            let vb = positions[n] - p0
            let lb = length(vb)
            let cosine = dot(va, vb) / (la * lb)
            if abs(cosine) < 0.7 && lb < 2.5 * la && la < 2.5 * lb { b = n; break }
        }
        guard let b else { return nil }
        var grid: [Cell: Int] = [Cell(i: 0, j: 0): seed, Cell(i: 1, j: 0): a, Cell(i: 0, j: 1): b]
        var used: Set<Int> = [seed, a, b]
        // Corners of one board respond alike (within the lighting and blur across it); a candidate
        // far weaker than the seed's neighbourhood is background texture.
        let responseFloor = 0.1 * min(responses[seed], responses[a], responses[b])
        let maxExtent = max(board.columns, board.rows) + 2

        func position(_ c: Cell) -> SIMD2<Double>? { grid[c].map { positions[$0] } }
        func predict(_ target: Cell) -> (SIMD2<Double>, Double)? {
            // Along each of the four directions, extrapolate from the two (or three) known cells behind.
            var best: (SIMD2<Double>, Double)?
            for (di, dj) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                guard let p1 = position(target.moved(-di, -dj)), let p2 = position(target.moved(-2 * di, -2 * dj)) else { continue }
                let step = p1 - p2
                var guess = p1 + step
                if let p3 = position(target.moved(-3 * di, -3 * dj)) {
                    // Second-order term follows the perspective change of spacing.
                    guess += (p1 - p2) - (p2 - p3)
                }
                let radius = 0.35 * length(step)
                if let current = best, current.1 <= radius { continue }
                best = (guess, radius)
            }
            if best != nil { return best }
            // Parallelogram completion from an L of three known cells.
            for (di, dj) in [(1, 1), (1, -1), (-1, 1), (-1, -1)] {
                guard let pd = position(target.moved(-di, -dj)), let pi = position(target.moved(-di, 0)),
                      let pj = position(target.moved(0, -dj)) else { continue }
                let guess = pi + pj - pd
                return (guess, 0.3 * min(length(pi - pd), length(pj - pd)))
            }
            return nil
        }

        var changed = true
        while changed {
            changed = false
            if clock.now > deadline { return nil }
            let cells = Array(grid.keys)
            var iLow = cells.map(\.i).min() ?? 0, iHigh = cells.map(\.i).max() ?? 0
            var jLow = cells.map(\.j).min() ?? 0, jHigh = cells.map(\.j).max() ?? 0
            var frontier = Set<Cell>()
            for c in cells {
                for (di, dj) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                    let n = c.moved(di, dj)
                    if grid[n] == nil { frontier.insert(n) }
                }
            }
            for target in frontier.sorted(by: { ($0.j, $0.i) < ($1.j, $1.i) }) {
                // Never let the grid span more than the board plus a stray row or column on each side.
                if max(iHigh, target.i) - min(iLow, target.i) + 1 > maxExtent || max(jHigh, target.j) - min(jLow, target.j) + 1 > maxExtent {
                    continue
                }
                guard let (guess, radius) = predict(target) else { continue }
                var bestIndex: Int?
                var bestDistance = radius
                // Candidates near the guess: neighbours of the known cells around the target.
                for (di, dj) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                    guard let known = grid[target.moved(di, dj)] else { continue }
                    for n in neighbours[known] where !used.contains(n) && responses[n] >= responseFloor {
                        let d = length(positions[n] - guess)
                        if d < bestDistance { bestDistance = d; bestIndex = n }
                    }
                }
                if let index = bestIndex {
                    grid[target] = index
                    used.insert(index)
                    changed = true
                    iLow = min(iLow, target.i); iHigh = max(iHigh, target.i)
                    jLow = min(jLow, target.j); jHigh = max(jHigh, target.j)
                }
            }
        }
        return grid
    }

    // MARK: Ordering

    /// The corners in board order, or `nil` when the grid is not exactly the board.
    private func order(grid fullGrid: [Cell: Int], positions: [SIMD2<Double>], responses: [Float], image: GrayImage) -> [SIMD2<Double>]? {
        // A corner or two the candidate search missed (a blurred or glare-hit corner) may be filled by
        // prediction from its neighbours; the refinement then finds it in the image.
        let allowedHoles = 2
        guard fullGrid.count >= board.cornerCount - allowedHoles else { return nil }
        // The board is the one completely filled window of its size; stray points that
        // joined the grid outside it (background texture near the board) are dropped.
        let iMinAll = fullGrid.keys.map(\.i).min() ?? 0, iMaxAll = fullGrid.keys.map(\.i).max() ?? 0
        let jMinAll = fullGrid.keys.map(\.j).min() ?? 0, jMaxAll = fullGrid.keys.map(\.j).max() ?? 0
        var windows: [(i: Int, j: Int, ni: Int, nj: Int, holes: [Cell])] = []
        let shapes = board.columns == board.rows ? [(board.columns, board.rows)] : [(board.columns, board.rows), (board.rows, board.columns)]
        for (wi, wj) in shapes {
            guard iMaxAll - iMinAll + 1 >= wi, jMaxAll - jMinAll + 1 >= wj else { continue }
            for i0 in iMinAll...(iMaxAll - wi + 1) {
                for j0 in jMinAll...(jMaxAll - wj + 1) {
                    var holes: [Cell] = []
                    check: for j in j0..<(j0 + wj) {
                        for i in i0..<(i0 + wi) where fullGrid[Cell(i: i, j: j)] == nil {
                            holes.append(Cell(i: i, j: j))
                            if holes.count > allowedHoles { break check }
                        }
                    }
                    if holes.count <= allowedHoles { windows.append((i0, j0, wi, wj, holes)) }
                }
            }
        }
        let fewestHoles = windows.map(\.holes.count).min() ?? 0
        windows = windows.filter { $0.holes.count == fewestHoles }
        // Several full windows: a row of T-junctions along the board's edge (where the outer squares meet a
        // frame) can pass for corners. Those respond far less than true X-corners, so the window with the
        // strongest total response wins if what it leaves out is clearly weaker than what it keeps.
        func cells(_ w: (i: Int, j: Int, ni: Int, nj: Int, holes: [Cell])) -> [Int] {
            var out: [Int] = []
            for j in w.j..<(w.j + w.nj) { for i in w.i..<(w.i + w.ni) { if let index = fullGrid[Cell(i: i, j: j)] { out.append(index) } } }
            return out
        }
        func mean(_ indices: [Int]) -> Float { indices.isEmpty ? 0 : indices.reduce(Float(0)) { $0 + responses[$1] } / Float(indices.count) }
        let ranked = windows.map { w in (w, mean(cells(w))) }.sorted { $0.1 > $1.1 }
        guard let best = ranked.first else { return nil }
        let window = best.0
        if ranked.count > 1 {
            let kept = Set(cells(window))
            let others = Set(ranked.dropFirst().flatMap { cells($0.0) }).subtracting(kept)
            guard mean(Array(others)) < 0.5 * best.1 else { return nil }
        }
        var points: [Cell: SIMD2<Double>] = [:]
        for j in window.j..<(window.j + window.nj) {
            for i in window.i..<(window.i + window.ni) {
                if let index = fullGrid[Cell(i: i, j: j)] { points[Cell(i: i, j: j)] = positions[index] }
            }
        }
        for hole in window.holes {
            // Parallelogram or straight-line completion from known neighbours.
            var guess: SIMD2<Double>?
            for (di, dj) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                if let a = points[hole.moved(di, dj)], let b = points[hole.moved(2 * di, 2 * dj)] { guess = 2 * a - b; break }
            }
            if guess == nil {
                for (di, dj) in [(1, 1), (1, -1), (-1, 1), (-1, -1)] {
                    if let d = points[hole.moved(di, dj)], let a = points[hole.moved(di, 0)], let b = points[hole.moved(0, dj)] {
                        guess = a + b - d; break
                    }
                }
            }
            guard let guess else { return nil }
            points[hole] = guess
        }
        let iMin = window.i, jMin = window.j, ni = window.ni, nj = window.nj
        // table[j][i] (j rows, i columns) in grid coordinates.
        var table = [[SIMD2<Double>]](repeating: [SIMD2<Double>](repeating: .zero, count: ni), count: nj)
        for (cell, point) in points { table[cell.j - jMin][cell.i - iMin] = point }
        var candidates: [[[SIMD2<Double>]]] = []
        // Every arrangement of the table with `columns` per row: identity/transposed × 4 rotations.
        var arrangements: [[[SIMD2<Double>]]] = []
        let transposed = (0..<ni).map { i in (0..<nj).map { j in table[j][i] } }
        for base in [table, transposed] {
            var t = base
            for _ in 0..<4 {
                arrangements.append(t)
                // Rotate by 90°: new[r][c] = old[rows-1-c][r]
                let rows = t.count, cols = t.first?.count ?? 0
                t = (0..<cols).map { r in (0..<rows).map { c in t[rows - 1 - c][r] } }
            }
        }
        for t in arrangements where t.count == board.rows && t.first?.count == board.columns {
            // Right-handed in the image: x (along a row) × y (down the columns) points into the image.
            let dx = t[0][1] - t[0][0], dy = t[1][0] - t[0][0]
            guard dx.x * dy.y - dx.y * dy.x > 0 else { continue }
            candidates.append(t)
        }
        guard !candidates.isEmpty else { return nil }
        func firstSquareIsDark(_ t: [[SIMD2<Double>]]) -> Bool {
            // Compare the square between the first four corners with its neighbour along the row.
            let c0 = (t[0][0] + t[0][1] + t[1][0] + t[1][1]) / 4
            let c1 = (t[0][1] + t[0][2 < t[0].count ? 2 : 1] + t[1][1] + t[1][2 < t[0].count ? 2 : 1]) / 4
            return image.sample(c0.x, c0.y) < image.sample(c1.x, c1.y)
        }
        let dark = candidates.filter(firstSquareIsDark)
        let pool = dark.isEmpty ? candidates : dark
        // Ties (a colour-symmetric board): the origin nearest the image's top-left corner.
        let chosen = pool.min { ($0[0][0].x + $0[0][0].y) < ($1[0][0].x + $1[0][0].y) } ?? pool[0]
        return chosen.flatMap { $0 }
    }
}
