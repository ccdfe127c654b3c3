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

    /// "left-name + right-name", for messages.
    public var name: String { "\(left.name) + \(right.name)" }
}

/// The result of a stereo calibration and the figures users compare with OpenCV.
public struct StereoCalibrationResult: Sendable {
    /// The calibrated rig (extrinsics map left-camera points into the right camera frame, OpenCV's R, T),
    /// with T in the board's unit (``CalibrationBoard/unit``; ``LengthUnit/unitless`` when it has none).
    public var calibration: StereoCalibration
    /// The left camera on its own (before the joint refinement).
    public var leftMono: MonoCalibrationResult
    /// The right camera on its own.
    public var rightMono: MonoCalibrationResult
    /// The pairs used, in input order.
    public var pairs: [StereoView]
    /// Pairs left out with the reason (including those one side's mono calibration rejected).
    public var rejected: [RejectedView]
    /// Board frame → left camera frame per used pair.
    public var poses: [RigidTransform]
    /// Per used pair: left residuals, then right residuals (projected − observed, pixels).
    public var leftResiduals: [[SIMD2<Double>]]
    /// Per used pair, the right camera's residuals (projected − observed, pixels).
    public var rightResiduals: [[SIMD2<Double>]]
    /// RMS reprojection error over both cameras' corners: √(Σ|e|² / (2·corners)) as `cv::stereoCalibrate` returns it.
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

    /// A calibrator for `target` fitting `model`, holding `fixed`.
    public init(target: CalibrationBoard, model: LensModelKind = .brown5, fixed: FixedIntrinsics = .none) {
        self.target = target
        self.model = model
        self.fixed = fixed
    }

    /// Calibrates from `pairs` of images of `size` (both cameras the same size).
    ///
    /// - Parameters:
    ///   - leftCamera, rightCamera: known cameras to start from (required for a side that ``fixed`` holds
    ///     unless that side should be fixed at its own mono calibration).
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
        var iterations = 0
        for round in 0..<3 {
            let solution = try refine(pairs: pairs, state: state, size: size)
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
            if outliers.isEmpty || pairs.count - outliers.count < minimumPairs || round == 2 {
                return try finish(solution: solution, pairs: pairs, pairRMS: pairRMS, state: state, size: size,
                                  leftMono: leftMono, rightMono: rightMono, rejected: rejected, iterations: iterations)
            }
            for i in outliers.reversed() {
                rejected.append(RejectedView(
                    name: pairs[i].name,
                    reason: "outlier pair: stereo reprojection RMS \(formatPixels(pairRMS[i])) px is above \(formatPixels(limit)) px "
                        + "(\(outlierFactor)× the median pair's \(formatPixels(median)) px); the two images may not be simultaneous",
                    left: pairs[i].left.name, right: pairs[i].right.name))
                pairs.remove(at: i)
                state.poses.remove(at: i)
            }
        }
        throw .degenerate("outlier rejection did not settle")
    }

    private func refine(pairs: [StereoView], state: (left: [Double], right: [Double], extrinsics: RigidTransform, poses: [RigidTransform]),
                        size: ImageSize) throws(CalibrationError) -> BlockSparseSolution {
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
            return left + right
        }
        do {
            return try BlockSparseLevenbergMarquardt(loss: loss)
                .solve(BlockSparseProblem(global: global, globalFixed: fixedMask, blocks: blocks, residuals: residuals))
        } catch {
            throw .degenerate(error.description)
        }
    }

    private func finish(solution: BlockSparseSolution, pairs: [StereoView], pairRMS: [Double],
                        state: (left: [Double], right: [Double], extrinsics: RigidTransform, poses: [RigidTransform]),
                        size: ImageSize, leftMono: MonoCalibrationResult, rightMono: MonoCalibrationResult,
                        rejected: [RejectedView], iterations: Int) throws(CalibrationError) -> StereoCalibrationResult {
        let leftCamera = model.cameraModel(state.left, size: size)
        let rightCamera = model.cameraModel(state.right, size: size)
        // T is in the unit of the board's squares; recorded so writers that need metres (ROS) can convert.
        let calibration = StereoCalibration(left: leftCamera, right: rightCamera, extrinsics: state.extrinsics,
                                            translationUnit: LengthUnit(symbol: target.unit) ?? .unitless)
        let count = target.cornerCount
        var leftResiduals: [[SIMD2<Double>]] = [], rightResiduals: [[SIMD2<Double>]] = []
        var sumLeft = 0.0, sumRight = 0.0
        for r in solution.residuals {
            let points = stride(from: 0, to: r.count - 1, by: 2).map { SIMD2(r[$0], r[$0 + 1]) }
            leftResiduals.append(Array(points[0..<count]))
            rightResiduals.append(Array(points[count...]))
            sumLeft += points[0..<count].reduce(0) { $0 + dot($1, $1) }
            sumRight += points[count...].reduce(0) { $0 + dot($1, $1) }
        }
        let totalCorners = Double(count * pairs.count)
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
        let figures = StereoErrorFigures(calibration: calibration, rectification: rectification, pairs: pairs)
        return StereoCalibrationResult(
            calibration: calibration, leftMono: leftMono, rightMono: rightMono, pairs: pairs, rejected: rejected,
            poses: state.poses, leftResiduals: leftResiduals, rightResiduals: rightResiduals, rms: solution.rms,
            pairRMS: pairRMS, rmsLeft: (sumLeft / totalCorners).squareRoot(), rmsRight: (sumRight / totalCorners).squareRoot(),
            standardDeviations: deviations, parameterCovariance: solution.globalCovariance, model: model,
            essential: calibration.essentialMatrix, fundamental: calibration.fundamentalMatrix,
            epipolarErrorMean: figures.epipolarErrorMean, rectifiedVerticalRMS: figures.rectifiedVerticalRMS,
            pairRectifiedVerticalRMS: figures.pairRectifiedVerticalRMS, rectification: rectification, iterations: iterations)
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
    /// Corners that cannot be undistorted are skipped.
    public init(calibration: StereoCalibration, rectification: StereoRectification, pairs: [StereoView]) {
        let f = calibration.fundamentalMatrix
        var epipolarSum = 0.0, epipolarCount = 0
        var verticalSum = 0.0, verticalCount = 0
        var perPair: [Double] = []
        let axis = rectification.layout == .horizontal ? 1 : 0
        for pair in pairs {
            var pairSum = 0.0, pairCount = 0
            for (pl, pr) in zip(pair.left.corners, pair.right.corners) {
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
