/// A robust loss applied to each observed point's reprojection error.
public enum RobustLoss: Hashable, Sendable {
    /// Plain least squares.
    case squared
    /// Huber: quadratic up to `threshold` pixels, linear beyond, so a few bad
    /// corners pull on the solution with bounded force.
    case huber(threshold: Double)

    /// The iteratively-reweighted-least-squares weight for an error of `norm` pixels.
    @inlinable
    func weight(norm: Double) -> Double {
        switch self {
        case .squared: return 1
        case .huber(let t): return norm <= t ? 1 : t / norm
        }
    }

    /// ρ(e²) for an error of `norm` pixels (equal to `norm²` in the quadratic region).
    @inlinable
    func cost(norm: Double) -> Double {
        switch self {
        case .squared: return norm * norm
        case .huber(let t): return norm <= t ? norm * norm : 2 * t * norm - t * t
        }
    }
}

/// A least-squares problem with the structure of camera calibration: a few
/// *global* parameters shared by every view (intrinsics, stereo extrinsics)
/// and one small *block* per view (the board pose), where a view's residuals
/// depend only on the globals and its own block.
///
/// The normal equations then form an arrowhead `[[U, W], [Wᵀ, V]]` with `V`
/// block-diagonal; ``BlockSparseLevenbergMarquardt`` eliminates the blocks
/// with the Schur complement, so the cost per iteration grows linearly with
/// the number of views instead of cubically.
public struct BlockSparseProblem: Sendable {
    /// Global parameters, shared by all views.
    public var global: [Double]
    /// Which global parameters are held fixed (same length as `global`).
    public var globalFixed: [Bool]
    /// One parameter block per view.
    public var blocks: [[Double]]
    /// Residuals of view `view` as consecutive (x, y) pixel pairs, one pair per
    /// observed point; `nil` when a point cannot be projected (behind the camera).
    public var residuals: @Sendable (_ view: Int, _ global: [Double], _ block: [Double]) -> [Double]?

    /// A problem; `globalFixed` defaults to every global parameter free.
    public init(global: [Double], globalFixed: [Bool]? = nil, blocks: [[Double]],
                residuals: @escaping @Sendable (Int, [Double], [Double]) -> [Double]?) {
        self.global = global
        self.globalFixed = globalFixed ?? Array(repeating: false, count: global.count)
        self.blocks = blocks
        self.residuals = residuals
    }
}

/// What the solver found.
public struct BlockSparseSolution: Sendable {
    /// Global parameters at the solution.
    public var global: [Double]
    /// Per-view blocks at the solution.
    public var blocks: [[Double]]
    /// Residuals per view at the solution (pixel pairs).
    public var residuals: [[Double]]
    /// Iterations taken.
    public var iterations: Int
    /// True when a convergence test (not the iteration limit) ended the search.
    public var converged: Bool
    /// Covariance of the global parameters (σ² (JᵀJ)⁻¹ marginalised over the
    /// blocks), in `global` order; fixed parameters have zero rows and columns.
    /// `nil` when the normal equations were singular at the solution.
    public var globalCovariance: Matrix?
    /// Root-mean-square reprojection error over all points, in pixels: √(Σ|e|² / points).
    public var rms: Double
}

/// Why the solver stopped without an answer.
public enum SolverError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The starting point already fails to project some point of `view`.
    case invalidStart(view: Int)
    /// No views, or fewer residuals than unknowns.
    case underdetermined(residuals: Int, unknowns: Int)
    /// The normal equations stayed singular even with damping.
    case degenerate(String)

    /// One line saying why the solve failed (the view, the residual and unknown counts, or
    /// what is degenerate).
    public var description: String {
        switch self {
        case .invalidStart(let v): return "view \(v): the initial estimate puts the board behind the camera"
        case .underdetermined(let r, let u): return "\(r) residuals cannot determine \(u) unknowns"
        case .degenerate(let d): return "the problem is degenerate: \(d)"
        }
    }
}

/// Levenberg–Marquardt on a ``BlockSparseProblem`` with Marquardt's diagonal
/// damping, a ``RobustLoss`` through iteratively reweighted least squares and
/// central-difference Jacobians per view.
public struct BlockSparseLevenbergMarquardt: Sendable {
    /// Most iterations (each one linearisation and as many damped tries as needed).
    public var maxIterations = 100
    /// Stop when the cost falls by less than this fraction in an accepted step.
    public var relativeCostTolerance = 1e-12
    /// Stop when every parameter changes by less than this fraction of its size.
    public var relativeStepTolerance = 1e-12
    /// The loss on each point's error.
    public var loss: RobustLoss = .squared

    /// A solver with `maxIterations` and `loss`.
    public init(maxIterations: Int = 100, loss: RobustLoss = .squared) {
        self.maxIterations = maxIterations
        self.loss = loss
    }

    private func cost(_ residuals: [[Double]]) -> Double {
        var c = 0.0
        for r in residuals {
            var i = 0
            while i + 1 < r.count {
                c += loss.cost(norm: (r[i] * r[i] + r[i + 1] * r[i + 1]).squareRoot())
                i += 2
            }
        }
        return c
    }

    private func evaluate(_ p: BlockSparseProblem, _ global: [Double], _ blocks: [[Double]]) -> [[Double]]? {
        var out: [[Double]] = []
        out.reserveCapacity(blocks.count)
        for v in blocks.indices {
            guard let r = p.residuals(v, global, blocks[v]), r.allSatisfy(\.isFinite) else { return nil }
            out.append(r)
        }
        return out
    }

    /// Finite-difference step for a parameter of size `x`.
    @inlinable
    func step(_ x: Double) -> Double { 1e-6 * max(1, abs(x)) }

    /// Runs the solver from the problem's current values.
    public func solve(_ problem: BlockSparseProblem) throws(SolverError) -> BlockSparseSolution {
        let free = problem.global.indices.filter { !problem.globalFixed[$0] }
        let g = free.count
        let views = problem.blocks.count
        var global = problem.global
        var blocks = problem.blocks
        guard var residuals = evaluate(problem, global, blocks) else {
            for v in blocks.indices where problem.residuals(v, global, blocks[v]) == nil { throw .invalidStart(view: v) }
            throw .invalidStart(view: 0)
        }
        let residualCount = residuals.reduce(0) { $0 + $1.count }
        let unknowns = g + blocks.reduce(0) { $0 + $1.count }
        guard views > 0, residualCount > unknowns else { throw .underdetermined(residuals: residualCount, unknowns: unknowns) }

        var currentCost = cost(residuals)
        var lambda = 1e-3
        var iterations = 0
        var converged = false
        var lastNormal: (u: Matrix, w: [Matrix], v: [Matrix])?

        while iterations < maxIterations {
            iterations += 1
            // Normal equations, accumulated view by view.
            var u = Matrix(rows: g, columns: g)
            var eg = [Double](repeating: 0, count: g)
            var ws: [Matrix] = [], vs: [Matrix] = [], ebs: [[Double]] = []
            for view in 0..<views {
                let r = residuals[view]
                let m = r.count
                let b = blocks[view].count
                // Robust weights per point (both coordinates share one).
                var weights = [Double](repeating: 1, count: m)
                var i = 0
                while i + 1 < m {
                    let w = loss.weight(norm: (r[i] * r[i] + r[i + 1] * r[i + 1]).squareRoot())
                    weights[i] = w; weights[i + 1] = w
                    i += 2
                }
                var jg = Matrix(rows: m, columns: g)
                var jb = Matrix(rows: m, columns: b)
                for (k, index) in free.enumerated() {
                    let h = step(global[index])
                    var plus = global, minus = global
                    plus[index] += h; minus[index] -= h
                    guard let rp = problem.residuals(view, plus, blocks[view]),
                          let rm = problem.residuals(view, minus, blocks[view]) else { continue }
                    for row in 0..<m { jg[row, k] = (rp[row] - rm[row]) / (2 * h) }
                }
                for k in 0..<b {
                    let h = step(blocks[view][k])
                    var plus = blocks[view], minus = blocks[view]
                    plus[k] += h; minus[k] -= h
                    guard let rp = problem.residuals(view, global, plus),
                          let rm = problem.residuals(view, global, minus) else { continue }
                    for row in 0..<m { jb[row, k] = (rp[row] - rm[row]) / (2 * h) }
                }
                var wMatrix = Matrix(rows: g, columns: b)
                var vMatrix = Matrix(rows: b, columns: b)
                var eb = [Double](repeating: 0, count: b)
                for row in 0..<m {
                    let w = weights[row]
                    for a in 0..<g {
                        let ja = jg[row, a] * w
                        if ja == 0 { continue }
                        eg[a] += ja * r[row]
                        for c in a..<g { u[a, c] += ja * jg[row, c] }
                        for c in 0..<b { wMatrix[a, c] += ja * jb[row, c] }
                    }
                    for a in 0..<b {
                        let ja = jb[row, a] * w
                        eb[a] += ja * r[row]
                        for c in a..<b { vMatrix[a, c] += ja * jb[row, c] }
                    }
                }
                for a in 0..<b { for c in 0..<a { vMatrix[a, c] = vMatrix[c, a] } }
                ws.append(wMatrix); vs.append(vMatrix); ebs.append(eb)
            }
            for a in 0..<g { for c in 0..<a { u[a, c] = u[c, a] } }
            lastNormal = (u, ws, vs)

            // Try damped steps until one lowers the cost.
            var accepted = false
            for _ in 0..<30 {
                guard let (dg, db) = dampedStep(u: u, eg: eg, ws: ws, vs: vs, ebs: ebs, lambda: lambda) else {
                    lambda *= 10
                    continue
                }
                var newGlobal = global
                for (k, index) in free.enumerated() { newGlobal[index] += dg[k] }
                var newBlocks = blocks
                for view in 0..<views { for k in 0..<newBlocks[view].count { newBlocks[view][k] += db[view][k] } }
                if let newResiduals = evaluate(problem, newGlobal, newBlocks) {
                    let newCost = cost(newResiduals)
                    if newCost < currentCost {
                        let relativeDrop = (currentCost - newCost) / max(currentCost, 1e-300)
                        var largestRelativeStep = 0.0
                        for (k, index) in free.enumerated() {
                            largestRelativeStep = max(largestRelativeStep, abs(dg[k]) / max(abs(global[index]), 1e-3))
                        }
                        for view in 0..<views {
                            for k in 0..<db[view].count {
                                largestRelativeStep = max(largestRelativeStep, abs(db[view][k]) / max(abs(blocks[view][k]), 1e-3))
                            }
                        }
                        global = newGlobal; blocks = newBlocks; residuals = newResiduals; currentCost = newCost
                        lambda = max(lambda / 3, 1e-12)
                        accepted = true
                        if relativeDrop < relativeCostTolerance || largestRelativeStep < relativeStepTolerance { converged = true }
                        break
                    }
                }
                lambda *= 4
                if lambda > 1e12 { break }
            }
            if !accepted { converged = true; break }
            if converged { break }
        }

        // Covariance of the globals from the undamped Schur complement at the last linearisation.
        var covariance: Matrix?
        if let normal = lastNormal, g > 0 {
            if let s = try? schur(u: normal.u, ws: normal.w, vs: normal.v, lambda: 0),
               let inverse = try? LinearAlgebra.inverseSymmetricPositiveDefinite(s) {
                var sumSquares = 0.0
                for r in residuals { for e in r { sumSquares += e * e } }
                let sigma2 = sumSquares / Double(max(residualCount - unknowns, 1))
                var full = Matrix(rows: global.count, columns: global.count)
                for (a, ia) in free.enumerated() {
                    for (c, ic) in free.enumerated() { full[ia, ic] = inverse[a, c] * sigma2 }
                }
                covariance = full
            }
        }
        var sumSquares = 0.0
        var points = 0
        for r in residuals { for e in r { sumSquares += e * e }; points += r.count / 2 }
        return BlockSparseSolution(global: global, blocks: blocks, residuals: residuals, iterations: iterations,
                                   converged: converged, globalCovariance: covariance,
                                   rms: (sumSquares / Double(max(points, 1))).squareRoot())
    }

    private func damped(_ m: Matrix, _ lambda: Double) -> Matrix {
        var d = m
        for i in 0..<m.rows { d[i, i] += lambda * max(m[i, i], 1e-9) }
        return d
    }

    /// S = U − Σ Wᵢ Vᵢ⁻¹ Wᵢᵀ with damping λ on U and every Vᵢ.
    private func schur(u: Matrix, ws: [Matrix], vs: [Matrix], lambda: Double) throws(LinearAlgebraError) -> Matrix {
        var s = damped(u, lambda)
        for (w, v) in zip(ws, vs) {
            let vInverse = try LinearAlgebra.inverseSymmetricPositiveDefinite(damped(v, lambda))
            let wv = w * vInverse
            let product = wv * w.transposed
            for i in 0..<s.storage.count { s.storage[i] -= product.storage[i] }
        }
        return s
    }

    /// Solves the damped normal equations by eliminating the view blocks.
    private func dampedStep(u: Matrix, eg: [Double], ws: [Matrix], vs: [Matrix], ebs: [[Double]], lambda: Double)
        -> (global: [Double], blocks: [[Double]])?
    {
        let g = u.rows
        var vInverses: [Matrix] = []
        var s = damped(u, lambda)
        var rhs = eg.map { -$0 }
        for (view, (w, v)) in zip(ws, vs).enumerated() {
            guard let vInverse = try? LinearAlgebra.inverseSymmetricPositiveDefinite(damped(v, lambda)) else { return nil }
            vInverses.append(vInverse)
            let wv = w * vInverse
            let product = wv * w.transposed
            for i in 0..<s.storage.count { s.storage[i] -= product.storage[i] }
            let correction = wv * ebs[view]
            for i in 0..<g { rhs[i] += correction[i] }
        }
        var dg: [Double] = []
        if g > 0 {
            guard let solved = try? LinearAlgebra.choleskySolve(s, rhs) else { return nil }
            dg = solved
        }
        var db: [[Double]] = []
        for (view, w) in ws.enumerated() {
            // V δb = −e_b − Wᵀ δg
            var r = ebs[view].map { -$0 }
            if g > 0 {
                let wtg = w.transposed * dg
                for i in 0..<r.count { r[i] -= wtg[i] }
            }
            db.append(vInverses[view] * r)
        }
        return (dg, db)
    }
}
