import ParallaxDepth

/// The matcher written the straightforward way, stage by stage, in whole integers: what the C
/// kernels must equal bit for bit (their byte arithmetic saturates only where, by the plan's
/// bounds, it cannot change a result; here nothing saturates).
struct ReferenceMatcher {
    let width: Int, height: Int
    let configuration: SemiGlobalMatcher.Configuration

    /// Bit k (from the top) for the k-th neighbour, rows top to bottom, columns left to right,
    /// the centre skipped: 1 where the neighbour is darker than the centre. Outside the image
    /// the nearest row and column stand in.
    static func census(_ image: [UInt8], width: Int, height: Int, window: SemiGlobalMatcher.CensusWindow) -> [UInt64] {
        let rx = window.width / 2, ry = window.height / 2
        var codes = [UInt64](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let centre = image[y * width + x]
                var code: UInt64 = 0
                for j in -ry...ry {
                    for i in -rx...rx where !(i == 0 && j == 0) {
                        let yy = min(max(y + j, 0), height - 1), xx = min(max(x + i, 0), width - 1)
                        code = code << 1 | (image[yy * width + xx] < centre ? 1 : 0)
                    }
                }
                codes[y * width + x] = code
            }
        }
        return codes
    }

    /// C(x, y, d) at [(y · width + x) · D + d]: the Hamming distance to the right pixel
    /// x − dmin − d, or the window's bit count where that pixel is outside.
    static func costs(left: [UInt64], right: [UInt64], width: Int, height: Int, minimumDisparity: Int,
                      disparityCount: Int, noMatch: Int) -> [Int] {
        var costs = [Int](repeating: 0, count: width * height * disparityCount)
        for y in 0..<height {
            for x in 0..<width {
                for d in 0..<disparityCount {
                    let xr = x - minimumDisparity - d
                    costs[(y * width + x) * disparityCount + d] = xr >= 0 && xr < width
                        ? (left[y * width + x] ^ right[y * width + xr]).nonzeroBitCount : noMatch
                }
            }
        }
        return costs
    }

    /// The directions of `paths`: each (dx, dy) is where a pixel's predecessor lies, relative
    /// to it (left to right: (−1, 0), from the pixel on the left).
    static func directions(_ paths: SemiGlobalMatcher.AggregationPaths) -> [(dx: Int, dy: Int)] {
        let all: [(Int, Int)] = [(-1, 0), (1, 0), (0, -1), (-1, -1), (1, -1), (0, 1), (-1, 1), (1, 1)]
        switch paths {
        case .four: return [all[0], all[1], all[2], all[5]]
        case .five: return Array(all[0..<5])
        case .eight: return all
        }
    }

    /// S(p, d) = Σ over the paths of Lr(p, d), each path by its recurrence, visiting pixels so
    /// that a predecessor always comes first.
    func sums(costs: [Int], luma: [UInt8]) -> [Int] {
        let D = configuration.disparityCount, p1 = configuration.smallPenalty
        let p2 = Self.largePenalties(configuration)
        var sums = [Int](repeating: 0, count: costs.count)
        for (dx, dy) in Self.directions(configuration.paths) {
            var path = [Int](repeating: 0, count: costs.count)
            var least = [Int](repeating: 0, count: width * height)
            let ys = dy <= 0 ? Array(0..<height) : Array((0..<height).reversed())
            let xs = dx <= 0 ? Array(0..<width) : Array((0..<width).reversed())
            for y in ys {
                for x in xs {
                    let p = y * width + x, px = x + dx, py = y + dy
                    let inside = px >= 0 && px < width && py >= 0 && py < height
                    var rowLeast = Int.max
                    for d in 0..<D {
                        let c = costs[p * D + d]
                        var value = c
                        if inside {
                            let q = py * width + px
                            let step = abs(Int(luma[p]) - Int(luma[q]))
                            let previous = { (k: Int) -> Int in path[q * D + k] }
                            var best = previous(d)
                            if d > 0 { best = min(best, previous(d - 1) + p1) }
                            if d < D - 1 { best = min(best, previous(d + 1) + p1) }
                            best = min(best, least[q] + p2[step])
                            value = c + best - least[q]
                        }
                        path[p * D + d] = value
                        rowLeast = min(rowLeast, value)
                    }
                    least[p] = rowLeast
                }
            }
            for i in 0..<sums.count { sums[i] += path[i] }
        }
        return sums
    }

    /// P2 at each intensity step, from the configuration's rule, in plain arithmetic.
    static func largePenalties(_ c: SemiGlobalMatcher.Configuration) -> [Int] {
        (0..<256).map { step in
            guard let s = c.penaltyAdaptation else { return c.largePenalty }
            let exact = Double(c.largePenalty * s) / Double(s + step)
            return max(c.smallPenalty, Int(exact.rounded(.toNearestOrAwayFromZero)))
        }
    }

    /// The whole match: census, costs, sums, winners, checks, sub-pixel, speckle filter.
    func match(left: [UInt8], right: [UInt8]) -> (fixedPoint: [Int16], values: [Float], invalid: DisparityMap.InvalidCounts) {
        let c = configuration, D = c.disparityCount, dmin = c.minimumDisparity
        let codesLeft = Self.census(left, width: width, height: height, window: c.census)
        let codesRight = Self.census(right, width: width, height: height, window: c.census)
        let costs = Self.costs(left: codesLeft, right: codesRight, width: width, height: height, minimumDisparity: dmin,
                               disparityCount: D, noMatch: c.census.bits)
        let sums = sums(costs: costs, luma: left)
        var fixed = [Int16](repeating: DisparityMap.invalidFixedPoint, count: width * height)
        var values = [Float](repeating: .infinity, count: width * height)
        var invalid = DisparityMap.InvalidCounts()
        for y in 0..<height {
            // The right image's winners: for each right pixel, the least sum over the left pixels
            // and disparities that land on it (ties to the smaller disparity).
            var rightWinner = [Int](repeating: -1, count: width), rightLeast = [Int](repeating: .max, count: width)
            for x in 0..<width {
                for d in 0..<D {
                    let xr = x - dmin - d
                    guard xr >= 0, xr < width else { continue }
                    let s = sums[(y * width + x) * D + d]
                    if s < rightLeast[xr] || (s == rightLeast[xr] && d < rightWinner[xr]) {
                        rightLeast[xr] = s
                        rightWinner[xr] = d
                    }
                }
            }
            for x in 0..<width {
                let s = Array(sums[(y * width + x) * D..<(y * width + x + 1) * D])
                let least = s.min()!
                let d = s.firstIndex(of: least)!
                let xr = x - dmin - d
                if xr < 0 || xr >= width { invalid.outside += 1; continue }
                if c.uniquenessPercent > 0 {
                    let others = s.indices.filter { abs($0 - d) > 1 }.map { s[$0] }
                    if let runnerUp = others.min(), runnerUp * 100 < least * (100 + c.uniquenessPercent) {
                        invalid.ambiguous += 1
                        continue
                    }
                }
                if let limit = c.leftRightMaxDifference, abs(rightWinner[xr] - d) > limit {
                    invalid.inconsistent += 1
                    continue
                }
                // Equiangular lines through the matching costs at d − 1, d, d + 1, each summed over
                // the pixels x − 2 … x + 2 of the row (clamped at its ends):
                // δ = (c₋ − c₊) / (2 (max(c₋, c₊) − c₀)), only where c₀ is the least of the three.
                var sixteenths = 0, offset: Float = 0
                if d > 0, d < D - 1 {
                    var below = 0, centre = 0, above = 0
                    for i in (x - 2)...(x + 2) {
                        let xi = min(max(i, 0), width - 1), base = (y * width + xi) * D
                        below += costs[base + d - 1]
                        centre += costs[base + d]
                        above += costs[base + d + 1]
                    }
                    let rise = max(below, above) - centre
                    if rise > 0, below >= centre, above >= centre {
                        let delta = Double(below - above) / Double(2 * rise)
                        sixteenths = Int((16 * delta).rounded(.toNearestOrAwayFromZero))
                        offset = Float(below - above) / Float(2 * rise)
                    }
                }
                fixed[y * width + x] = Int16(16 * (dmin + d) + sixteenths)
                values[y * width + x] = Float(dmin + d) + offset
            }
        }
        if let speckle = c.speckle {
            invalid.speckle = Self.removeSpeckles(&fixed, &values, width: width, height: height,
                                                  maximumSize: speckle.maximumRegionSize,
                                                  maximumDifference: 16 * speckle.maximumDifference)
        }
        return (fixed, values, invalid)
    }

    /// Labels the regions (4-neighbours within the difference) and invalidates the small ones;
    /// returns how many pixels it invalidated.
    static func removeSpeckles(_ fixed: inout [Int16], _ values: inout [Float], width: Int, height: Int,
                               maximumSize: Int, maximumDifference: Int) -> Int {
        var region = [Int](repeating: -1, count: width * height)
        var members: [[Int]] = []
        for start in 0..<(width * height) where region[start] < 0 && fixed[start] != DisparityMap.invalidFixedPoint {
            let label = members.count
            var list = [start], next = 0
            region[start] = label
            while next < list.count {
                let p = list[next]
                next += 1
                let x = p % width, y = p / width
                for (nx, ny) in [(x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)]
                where nx >= 0 && nx < width && ny >= 0 && ny < height {
                    let q = ny * width + nx
                    guard region[q] < 0, fixed[q] != DisparityMap.invalidFixedPoint,
                          abs(Int(fixed[q]) - Int(fixed[p])) <= maximumDifference else { continue }
                    region[q] = label
                    list.append(q)
                }
            }
            members.append(list)
        }
        var removed = 0
        for list in members where list.count <= maximumSize {
            for p in list {
                fixed[p] = DisparityMap.invalidFixedPoint
                values[p] = .infinity
            }
            removed += list.count
        }
        return removed
    }
}
