import ParallaxGeometry

/// Which cameras' intrinsics (and distortion) a stereo refinement holds fixed.
public enum FixedIntrinsics: String, Hashable, Sendable, CaseIterable {
    /// Refine both cameras together with the extrinsics (OpenCV's joint refinement).
    case none
    /// Hold the left camera (e.g. already calibrated better on its own).
    case left
    /// Hold the right camera.
    case right
    /// Hold both; only the extrinsics and board poses move.
    case both
}

/// One left/right image pair seen by a stereo calibration.
public struct StereoView: Hashable, Sendable {
    /// The left view (name and corners).
    public var left: CalibrationView
    /// The right view of the same board pose.
    public var right: CalibrationView

    /// A pair of views of one board pose.
    public init(left: CalibrationView, right: CalibrationView) {
        self.left = left
        self.right = right
    }

    /// One side's view.
    public subscript(side: StereoSide) -> CalibrationView { side == .left ? left : right }

    /// "left-name + right-name", for messages.
    public var name: String { "\(left.name) + \(right.name)" }
}

/// The result of a stereo calibration and the figures users compare with OpenCV.
public struct StereoCalibrationResult: Sendable {
    /// The calibrated rig (extrinsics map left-camera points into the right camera frame, OpenCV's R, T),
    /// with T in the board's unit (``CalibrationBoard/unit``; `LengthUnit.unitless` when it has none).
    public var calibration: StereoCalibration
    /// The left camera on its own (before the joint refinement).
    public var leftMono: MonoCalibrationResult
    /// The right camera on its own.
    public var rightMono: MonoCalibrationResult
    /// The pairs used, in input order.
    public var pairs: [StereoView]
    /// Pairs left out with the reason (including those one side's mono calibration rejected).
    public var rejected: [RejectedView]
    /// Single corners of used pairs left out of the joint fit for a residual far outside the
    /// noise (see ``StereoCalibrator/rejectCorners``).
    public var rejectedCorners: [RejectedCorner]
    /// Board frame → left camera frame per used pair.
    public var poses: [RigidTransform]
    /// Per used pair, the left camera's residuals (projected − observed, pixels) of every corner,
    /// rejected ones included.
    public var leftResiduals: [[SIMD2<Double>]]
    /// Per used pair, the right camera's residuals (projected − observed, pixels).
    public var rightResiduals: [[SIMD2<Double>]]
    /// RMS reprojection error over both cameras' corners: √(Σ|e|² / (2·corners)) as `cv::stereoCalibrate` returns it
    /// (over the corners fitted: rejected ones are not counted, in this or the other figures).
    public var rms: Double
    /// RMS per used pair (both cameras).
    public var pairRMS: [Double]
    /// RMS over the left and right corners separately, at the joint solution.
    public var rmsLeft: Double
    /// RMS over the right camera's corners, in pixels.
    public var rmsRight: Double
    /// Standard deviations of [left camera params, right camera params, rx, ry, rz, tx, ty, tz] (rotation in radians).
    public var standardDeviations: [Double]
    /// The covariance of the same parameters (marginalised over the board poses), or `nil` when
    /// the fit's normal equations were singular; see ``uncertainty``.
    public var parameterCovariance: Matrix?
    /// The lens model both cameras were fitted with (the layout of each camera's parameters).
    public var model: LensModelKind
    /// The essential matrix `[T]× R`.
    public var essential: Matrix3x3
    /// The fundamental matrix for undistorted pixels.
    public var fundamental: Matrix3x3
    /// Mean epipolar error in pixels, as OpenCV's stereo_calib sample reports it: per corner pair, the distance
    /// of each undistorted corner to the other's epipolar line, the two distances added, averaged over corners.
    public var epipolarErrorMean: Double
    /// RMS of the vertical disparity (y_left − y_right) of the corners after rectification, in pixels
    /// (horizontal disparity for a vertical rig).
    public var rectifiedVerticalRMS: Double
    /// Per used pair, the RMS vertical disparity after rectification.
    public var pairRectifiedVerticalRMS: [Double]
    /// The rectification the figures were computed with.
    public var rectification: StereoRectification
    /// Solver iterations of the joint refinement.
    public var iterations: Int
    /// True when the joint refinement stopped on its convergence tests (the cost's fall or the
    /// step too small to matter, or no step lowering the cost any more; see
    /// ``BlockSparseLevenbergMarquardt``), false when it reached its iteration limit first.
    public var converged: Bool
}

/// Calibrates a stereo rig from paired chessboard views: each camera alone
/// (``MonoCalibrator``), the left→right transform as the median over pairs of
/// `R_r R_lᵀ`, `t_r − R t_l`, then one joint Levenberg–Marquardt over both
/// cameras, the extrinsics and the board poses.
public struct StereoCalibrator: Sendable {
    /// The board seen in every pair.
    public var target: CalibrationBoard
    /// The lens model fitted to both cameras.
    public var model: LensModelKind
    /// Which cameras the joint refinement holds fixed.
    public var fixed: FixedIntrinsics = .none
    /// The loss on each corner's error (Huber at 2 px by default).
    public var loss: RobustLoss = .huber(threshold: 2)
    /// A pair whose RMS exceeds both `outlierFactor` × the median pair and `outlierFloorPixels` is dropped.
    public var outlierFactor = 4.0
    /// Pairs below this RMS (pixels) are never outliers, however small the median.
    public var outlierFloorPixels = 1.0
    /// Fewest pairs a calibration accepts.
    public var minimumPairs = 3
    /// Whether single corners far outside the noise are left out of the joint fit: after each
    /// solve, a corner whose residual exceeds `cornerOutlierFactor` × the camera's robust noise
    /// level (the median residual length / 1.1774, the median of a 2-D Gaussian error's length
    /// being 1.1774 σ) and `cornerOutlierFloorPixels` is set aside and the fit repeated, until
    /// none is left (at most ``maximumRounds`` solves in all). A camera with more than 2 % of its
    /// corners (and more than 3) beyond the limit, or a noise level of 1 px or more, has none
    /// left out: that is not a few bad corners.
    public var rejectCorners = true
    /// See ``rejectCorners``. Real corner errors have heavier tails than a Gaussian (on OpenCV's
    /// sample a well-detected corner sits 6 σ out), so the default is far out: 8 σ, which a
    /// Gaussian error reaches with probability 1e-14.
    public var cornerOutlierFactor = 8.0
    /// Corners below this residual (pixels) are never outliers, however small the noise.
    public var cornerOutlierFloorPixels = 0.5
    /// Most solves of the joint refinement (each followed by the pair and corner outlier checks).
    public var maximumRounds = 6

    /// A calibrator for `target` fitting `model`, holding `fixed`.
    public init(target: CalibrationBoard, model: LensModelKind = .brown5, fixed: FixedIntrinsics = .none) {
        self.target = target
        self.model = model
        self.fixed = fixed
    }

    /// Calibrates from `pairs` of images of `size` (both cameras the same size).
    ///
    /// - Parameters:
    ///   - input: the pairs (argument `pairs`): the board's corners seen by both cameras at each
    ///     pose. Pairs a camera's mono calibration sets aside, and outliers of the joint
    ///     refinement, are listed in the result, not used.
    ///   - size: the size of every image of both cameras, in pixels.
    ///   - leftCamera: a known left camera to start from (required when ``fixed`` holds the left
    ///     side, unless it should be fixed at its own mono calibration).
    ///   - rightCamera: the same for the right camera.
    /// - Throws: ``CalibrationError`` when fewer than ``minimumPairs`` usable pairs remain.
    public func calibrate(pairs input: [StereoView], size: ImageSize,
                          leftCamera: CameraModel? = nil, rightCamera: CameraModel? = nil) throws(CalibrationError) -> StereoCalibrationResult {
        var mono = MonoCalibrator(target: target, model: model)
        mono.loss = loss
        mono.outlierFactor = outlierFactor
        mono.outlierFloorPixels = outlierFloorPixels
        mono.minimumViews = minimumPairs
        let leftMono = try mono.calibrate(views: input.map(\.left), size: size, initial: leftCamera)
        let rightMono = try mono.calibrate(views: input.map(\.right), size: size, initial: rightCamera)
        var rejected: [RejectedView] = []
        var pairs: [StereoView] = []
        var leftPoses: [RigidTransform] = [], rightPoses: [RigidTransform] = []
        let leftIndex = Dictionary(leftMono.viewNames.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let rightIndex = Dictionary(rightMono.viewNames.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        for pair in input {
            guard let l = leftIndex[pair.left.name] else {
                let reason = leftMono.rejected.first { $0.name == pair.left.name }?.reason ?? "left view rejected"
                rejected.append(RejectedView(name: pair.name, reason: "left: \(reason)", left: pair.left.name, right: pair.right.name))
                continue
            }
            guard let r = rightIndex[pair.right.name] else {
                let reason = rightMono.rejected.first { $0.name == pair.right.name }?.reason ?? "right view rejected"
                rejected.append(RejectedView(name: pair.name, reason: "right: \(reason)", left: pair.left.name, right: pair.right.name))
                continue
            }
            pairs.append(pair)
            leftPoses.append(leftMono.poses[l])
            rightPoses.append(rightMono.poses[r])
        }
        guard pairs.count >= minimumPairs else {
            throw .notEnoughViews(usable: pairs.count, needed: minimumPairs, rejected: rejected)
        }
        let extrinsics = Self.medianRelativePose(left: leftPoses, right: rightPoses)

        let leftStart = leftCamera.flatMap { fixed == .left || fixed == .both ? $0 : nil } ?? leftMono.camera
        let rightStart = rightCamera.flatMap { fixed == .right || fixed == .both ? $0 : nil } ?? rightMono.camera
        var state = (left: model.parameters(of: leftStart), right: model.parameters(of: rightStart),
                     extrinsics: extrinsics, poses: leftPoses)
        let count = target.cornerCount
        // Per used pair, which of its left then right corners the fit uses.
        var masks = pairs.map { _ in [Bool](repeating: true, count: 2 * count) }
        var rejectedCorners: [RejectedCorner] = []
        var iterations = 0
        for round in 0..<maximumRounds {
            let solution = try refine(pairs: pairs, state: state, masks: masks, size: size)
            iterations += solution.iterations
            let n = model.parameterCount
            let g = solution.global
            state.left = Array(g[0..<n])
            state.right = Array(g[n..<(2 * n)])
            state.extrinsics = RigidTransform(rodrigues: SIMD3(g[2 * n], g[2 * n + 1], g[2 * n + 2]),
                                              translation: SIMD3(g[2 * n + 3], g[2 * n + 4], g[2 * n + 5]))
            state.poses = solution.blocks.map { RigidTransform(rodrigues: SIMD3($0[0], $0[1], $0[2]), translation: SIMD3($0[3], $0[4], $0[5])) }
            let pairRMS = solution.residuals.map { r in (r.reduce(0) { $0 + $1 * $1 } / Double(max(r.count / 2, 1))).squareRoot() }
            let median = pairRMS.sorted()[pairRMS.count / 2]
            let limit = max(outlierFactor * median, outlierFloorPixels)
            let outliers = pairRMS.indices.filter { pairRMS[$0] > limit }
            let lastRound = round == maximumRounds - 1
            // Pairs are set aside in the first two rounds only, as the solver always did: a pair
            // that still fits badly after that stays, and its corners answer for themselves.
            if !outliers.isEmpty && pairs.count - outliers.count >= minimumPairs && round < 2 && !lastRound {
                for i in outliers.reversed() {
                    rejected.append(RejectedView(
                        name: pairs[i].name,
                        reason: "outlier pair: stereo reprojection RMS \(formatPixels(pairRMS[i])) px is above \(formatPixels(limit)) px "
                            + "(\(outlierFactor)× the median pair's \(formatPixels(median)) px); the two images may not be simultaneous",
                        left: pairs[i].left.name, right: pairs[i].right.name))
                    pairs.remove(at: i)
                    state.poses.remove(at: i)
                    masks.remove(at: i)
                    rejectedCorners.removeAll { $0.pair == i }
                    for k in rejectedCorners.indices where rejectedCorners[k].pair > i { rejectedCorners[k].pair -= 1 }
                }
                continue
            }
            let newCorners = rejectCorners && !lastRound ? cornerOutliers(solution.residuals, masks: masks, pairs: pairs) : []
            if newCorners.isEmpty {
                return try finish(solution: solution, pairs: pairs, masks: masks, pairRMS: pairRMS, state: state, size: size,
                                  leftMono: leftMono, rightMono: rightMono, rejected: rejected,
                                  rejectedCorners: rejectedCorners, iterations: iterations)
            }
            for corner in newCorners { masks[corner.pair][(corner.side == .left ? 0 : count) + corner.index] = false }
            rejectedCorners += newCorners
        }
        throw .degenerate("outlier rejection did not settle")
    }

    /// The corners whose residual is far outside their camera's noise (see ``rejectCorners``).
    /// `residuals` are the solver's, for the corners `masks` keeps.
    private func cornerOutliers(_ residuals: [[Double]], masks: [[Bool]], pairs: [StereoView]) -> [RejectedCorner] {
        let count = target.cornerCount
        // (pair, side, index, residual length) of every fitted corner.
        var fitted: [(pair: Int, side: StereoSide, index: Int, norm: Double)] = []
        for (p, r) in residuals.enumerated() {
            var k = 0
            for slot in 0..<(2 * count) where masks[p][slot] {
                fitted.append((p, slot < count ? .left : .right, slot % count, (r[2 * k] * r[2 * k] + r[2 * k + 1] * r[2 * k + 1]).squareRoot()))
                k += 1
            }
        }
        var found: [RejectedCorner] = []
        for side in StereoSide.allCases {
            let norms = fitted.filter { $0.side == side }.map(\.norm).sorted()
            guard !norms.isEmpty else { continue }
            let sigma = norms[norms.count / 2] / 1.1774
            let limit = max(cornerOutlierFactor * sigma, cornerOutlierFloorPixels)
            // Outliers are rare by definition: when more than 2 % of a camera's corners (and more
            // than 3) are beyond the limit, the problem is not a few bad corners (a wrong board or
            // pairing, a wrong lens model), and leaving corners out would only hide it.
            // Likewise a camera whose typical corner is off by a pixel or more is wrong everywhere.
            let beyond = norms.reduce(0) { $0 + ($1 > limit ? 1 : 0) }
            guard beyond <= max(3, norms.count / 50), sigma < 1 else { continue }
            for c in fitted where c.side == side && c.norm > limit {
                found.append(RejectedCorner(pair: c.pair, image: pairs[c.pair][side].name, side: side,
                                            index: c.index, residual: c.norm, limit: limit))
            }
        }
        return found
    }

    private func refine(pairs: [StereoView], state: (left: [Double], right: [Double], extrinsics: RigidTransform, poses: [RigidTransform]),
                        masks: [[Bool]], size: ImageSize) throws(CalibrationError) -> BlockSparseSolution {
        let n = model.parameterCount
        let model = self.model
        let objects = target.objectPoints
        let leftObserved = pairs.map(\.left.corners), rightObserved = pairs.map(\.right.corners)
        let r = state.extrinsics.rotation.rodriguesVector, t = state.extrinsics.translation
        let global = state.left + state.right + [r.x, r.y, r.z, t.x, t.y, t.z]
        var fixedMask = [Bool](repeating: false, count: global.count)
        if fixed == .left || fixed == .both { for i in 0..<n { fixedMask[i] = true } }
        if fixed == .right || fixed == .both { for i in n..<(2 * n) { fixedMask[i] = true } }
        let blocks = state.poses.map { p -> [Double] in
            let r = p.rotation.rodriguesVector
            return [r.x, r.y, r.z, p.translation.x, p.translation.y, p.translation.z]
        }
        let residuals: @Sendable (Int, [Double], [Double]) -> [Double]? = { v, g, b in
            guard let left = MonoCalibrator.viewResiduals(model: model, size: size, objects: objects, observed: leftObserved[v],
                                                          camera: g, cameraOffset: 0, pose: b) else { return nil }
            // Right pose = extrinsics ∘ left pose.
            let rl = Matrix3x3(rodrigues: SIMD3(b[0], b[1], b[2]))
            let tl = SIMD3(b[3], b[4], b[5])
            let re = Matrix3x3(rodrigues: SIMD3(g[2 * n], g[2 * n + 1], g[2 * n + 2]))
            let te = SIMD3(g[2 * n + 3], g[2 * n + 4], g[2 * n + 5])
            let rr = (re * rl).rodriguesVector
            let tr = re * tl + te
            guard let right = MonoCalibrator.viewResiduals(model: model, size: size, objects: objects, observed: rightObserved[v],
                                                           camera: g, cameraOffset: n, pose: [rr.x, rr.y, rr.z, tr.x, tr.y, tr.z]) else { return nil }
            let all = left + right
            guard masks[v].contains(false) else { return all }
            // Rejected corners leave the problem entirely (no zero rows: they would count as data).
            var kept: [Double] = []
            kept.reserveCapacity(all.count)
            for (slot, used) in masks[v].enumerated() where used { kept.append(all[2 * slot]); kept.append(all[2 * slot + 1]) }
            return kept
        }
        do {
            return try BlockSparseLevenbergMarquardt(loss: loss)
                .solve(BlockSparseProblem(global: global, globalFixed: fixedMask, blocks: blocks, residuals: residuals))
        } catch {
            throw .degenerate(error.description)
        }
    }

    private func finish(solution: BlockSparseSolution, pairs: [StereoView], masks: [[Bool]], pairRMS: [Double],
                        state: (left: [Double], right: [Double], extrinsics: RigidTransform, poses: [RigidTransform]),
                        size: ImageSize, leftMono: MonoCalibrationResult, rightMono: MonoCalibrationResult,
                        rejected: [RejectedView], rejectedCorners: [RejectedCorner],
                        iterations: Int) throws(CalibrationError) -> StereoCalibrationResult {
        let leftCamera = model.cameraModel(state.left, size: size)
        let rightCamera = model.cameraModel(state.right, size: size)
        // T is in the unit of the board's squares; recorded so writers that need metres (ROS) can convert.
        let calibration = StereoCalibration(left: leftCamera, right: rightCamera, extrinsics: state.extrinsics,
                                            translationUnit: target.unit)
        let count = target.cornerCount
        var leftResiduals: [[SIMD2<Double>]] = [], rightResiduals: [[SIMD2<Double>]] = []
        var sumLeft = 0.0, sumRight = 0.0, usedLeft = 0, usedRight = 0
        for (p, pair) in pairs.enumerated() {
            // Every corner's residual at the solution, rejected ones included (the report shows them).
            let pose = state.poses[p]
            let rightPose = RigidTransform(rotation: state.extrinsics.rotation * pose.rotation,
                                           translation: state.extrinsics.rotation * pose.translation + state.extrinsics.translation)
            let l = Self.residuals(leftCamera, pose: pose, objects: target.objectPoints, observed: pair.left.corners)
            let r = Self.residuals(rightCamera, pose: rightPose, objects: target.objectPoints, observed: pair.right.corners)
            leftResiduals.append(l)
            rightResiduals.append(r)
            for i in 0..<count where masks[p][i] { sumLeft += dot(l[i], l[i]); usedLeft += 1 }
            for i in 0..<count where masks[p][count + i] { sumRight += dot(r[i], r[i]); usedRight += 1 }
        }
        var deviations = [Double](repeating: 0, count: solution.global.count)
        if let cov = solution.globalCovariance {
            for i in deviations.indices { deviations[i] = max(cov[i, i], 0).squareRoot() }
        }
        let rectification: StereoRectification
        do {
            // A fisheye rig is rectified the way cv::fisheye::stereoRectify does it.
            rectification = model == .fisheye ? try calibration.fisheyeRectification() : try calibration.rectification()
        } catch {
            throw .degenerate("the calibrated rig cannot be rectified: \(error)")
        }
        let figures = StereoErrorFigures(calibration: calibration, rectification: rectification, pairs: pairs, masks: masks)
        return StereoCalibrationResult(
            calibration: calibration, leftMono: leftMono, rightMono: rightMono, pairs: pairs, rejected: rejected,
            rejectedCorners: rejectedCorners,
            poses: state.poses, leftResiduals: leftResiduals, rightResiduals: rightResiduals, rms: solution.rms,
            pairRMS: pairRMS, rmsLeft: (sumLeft / Double(max(usedLeft, 1))).squareRoot(),
            rmsRight: (sumRight / Double(max(usedRight, 1))).squareRoot(),
            standardDeviations: deviations, parameterCovariance: solution.globalCovariance, model: model,
            essential: calibration.essentialMatrix, fundamental: calibration.fundamentalMatrix,
            epipolarErrorMean: figures.epipolarErrorMean, rectifiedVerticalRMS: figures.rectifiedVerticalRMS,
            pairRectifiedVerticalRMS: figures.pairRectifiedVerticalRMS, rectification: rectification, iterations: iterations,
            converged: solution.converged)
    }

    /// Projected − observed for each corner (NaN where a corner cannot be projected).
    static func residuals(_ camera: CameraModel, pose: RigidTransform, objects: [SIMD3<Double>],
                          observed: [SIMD2<Double>]) -> [SIMD2<Double>] {
        zip(objects, observed).map { object, seen in
            camera.project(pose.rotation * object + pose.translation).map { $0 - seen } ?? SIMD2(.nan, .nan)
        }
    }

    /// The left→right transform as the element-wise median over pairs of the
    /// per-pair estimates (robust to a few bad poses).
    static func medianRelativePose(left: [RigidTransform], right: [RigidTransform]) -> RigidTransform {
        var rotations: [SIMD3<Double>] = [], translations: [SIMD3<Double>] = []
        for (l, r) in zip(left, right) {
            let rotation = r.rotation * l.rotation.transposed
            rotations.append(rotation.rodriguesVector)
            translations.append(r.translation - rotation * l.translation)
        }
        func median(_ values: [SIMD3<Double>]) -> SIMD3<Double> {
            var out = SIMD3<Double>.zero
            for axis in 0..<3 {
                let sorted = values.map { $0[axis] }.sorted()
                out[axis] = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
            }
            return out
        }
        return RigidTransform(rodrigues: median(rotations), translation: median(translations))
    }
}

/// Epipolar and rectified-disparity figures of a calibration over corner pairs.
public struct StereoErrorFigures: Sendable {
    /// See ``StereoCalibrationResult/epipolarErrorMean``.
    public var epipolarErrorMean: Double
    /// See ``StereoCalibrationResult/rectifiedVerticalRMS``.
    public var rectifiedVerticalRMS: Double
    /// Per pair.
    public var pairRectifiedVerticalRMS: [Double]

    /// Computes the figures for `pairs` of corner sets under `calibration`.
    /// Corners that cannot be undistorted are skipped, and so is corner `i` of pair `p` when
    /// `masks[p]` (left corners, then right corners) marks either side's `i` as left out.
    public init(calibration: StereoCalibration, rectification: StereoRectification, pairs: [StereoView],
                masks: [[Bool]]? = nil) {
        let f = calibration.fundamentalMatrix
        var epipolarSum = 0.0, epipolarCount = 0
        var verticalSum = 0.0, verticalCount = 0
        var perPair: [Double] = []
        let axis = rectification.layout == .horizontal ? 1 : 0
        for (p, pair) in pairs.enumerated() {
            var pairSum = 0.0, pairCount = 0
            let count = pair.left.corners.count
            for (i, (pl, pr)) in zip(pair.left.corners, pair.right.corners).enumerated() {
                if let mask = masks?[p], mask.count == 2 * count, !(mask[i] && mask[count + i]) { continue }
                guard let nl = try? calibration.left.normalizedCoordinates(ofPixel: pl),
                      let nr = try? calibration.right.normalizedCoordinates(ofPixel: pr) else { continue }
                let ul = calibration.left.intrinsics.pixel(fromNormalized: nl).homogeneous
                let ur = calibration.right.intrinsics.pixel(fromNormalized: nr).homogeneous
                let lineRight = f * ul, lineLeft = f.transposed * ur
                let dr = abs(dot(lineRight, ur)) / length(SIMD2(lineRight.x, lineRight.y))
                let dl = abs(dot(lineLeft, ul)) / length(SIMD2(lineLeft.x, lineLeft.y))
                if dr.isFinite && dl.isFinite {
                    epipolarSum += dr + dl
                    epipolarCount += 1
                }
                let rl = rectification.p1.leftBlock * (rectification.r1 * nl.homogeneous)
                let rr = rectification.p2.leftBlock * (rectification.r2 * nr.homogeneous)
                let d = rl[axis] / rl.z - rr[axis] / rr.z
                if d.isFinite {
                    verticalSum += d * d; verticalCount += 1
                    pairSum += d * d; pairCount += 1
                }
            }
            perPair.append(pairCount > 0 ? (pairSum / Double(pairCount)).squareRoot() : .nan)
        }
        epipolarErrorMean = epipolarCount > 0 ? epipolarSum / Double(epipolarCount) : .nan
        rectifiedVerticalRMS = verticalCount > 0 ? (verticalSum / Double(verticalCount)).squareRoot() : .nan
        pairRectifiedVerticalRMS = perPair
    }
}
