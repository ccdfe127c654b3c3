import ParallaxGeometry

/// The result of calibrating one camera.
public struct MonoCalibrationResult: Sendable {
    /// The fitted camera.
    public var camera: CameraModel
    /// The lens model that was fitted.
    public var model: LensModelKind
    /// Names of the views used, in input order.
    public var viewNames: [String]
    /// Board frame → camera frame, per used view.
    public var poses: [RigidTransform]
    /// Reprojection error (projected − observed, pixels) of every corner of every used view.
    public var residuals: [[SIMD2<Double>]]
    /// Root-mean-square reprojection error per used view, in pixels.
    public var viewRMS: [Double]
    /// Root-mean-square reprojection error over every corner, in pixels (OpenCV's `calibrateCamera` figure).
    public var rms: Double
    /// One standard deviation of each camera parameter (order of ``LensModelKind/parameterNames``), from
    /// the covariance of the final fit; zero for a parameter held fixed.
    public var standardDeviations: [Double]
    /// The covariance of the camera parameters, or `nil` when the normal equations were singular.
    public var parameterCovariance: Matrix?
    /// Views left out, with the reason.
    public var rejected: [RejectedView]
    /// Solver iterations over all stages.
    public var iterations: Int
    /// True when the final refinement stopped on its convergence tests (the cost's fall or the
    /// step too small to matter, or no step lowering the cost any more: its rounding floor; see
    /// ``BlockSparseLevenbergMarquardt``), false when it reached its iteration limit first: the
    /// figures then describe where the search stopped, not a minimum.
    public var converged: Bool
}

/// Calibrates one camera from views of a chessboard: Zhang's closed-form
/// start, then Levenberg–Marquardt over intrinsics, distortion and every
/// board pose, with a robust loss and rejection of views that do not fit.
public struct MonoCalibrator: Sendable {
    /// The board seen in every view.
    public var target: CalibrationBoard
    /// The lens model to fit.
    public var model: LensModelKind
    /// The loss on each corner's error. Huber at 2 px leaves sub-pixel
    /// errors (all of a good calibration) in the least-squares regime.
    public var loss: RobustLoss = .huber(threshold: 2)
    /// A view whose RMS exceeds both `outlierFactor` × the median view RMS and
    /// `outlierFloorPixels` is rejected and the fit repeated without it.
    public var outlierFactor = 4.0
    /// Views below this RMS (pixels) are never outliers.
    public var outlierFloorPixels = 1.0
    /// Fewest views a calibration accepts.
    public var minimumViews = 3

    /// A calibrator for `target` fitting `model`.
    public init(target: CalibrationBoard, model: LensModelKind = .brown5) {
        self.target = target
        self.model = model
    }

    /// Residuals of one view: projected − observed, as pixel pairs.
    static func viewResiduals(model: LensModelKind, size: ImageSize, objects: [SIMD3<Double>], observed: [SIMD2<Double>],
                              camera: [Double], cameraOffset: Int, pose: [Double]) -> [Double]? {
        let cam = model.cameraModel(camera, offset: cameraOffset, size: size)
        let rotation = Matrix3x3(rodrigues: SIMD3(pose[0], pose[1], pose[2]))
        let translation = SIMD3(pose[3], pose[4], pose[5])
        var out = [Double](repeating: 0, count: 2 * objects.count)
        for i in objects.indices {
            guard let p = cam.project(rotation * objects[i] + translation) else { return nil }
            out[2 * i] = p.x - observed[i].x
            out[2 * i + 1] = p.y - observed[i].y
        }
        return out
    }

    /// Calibrates from `views` of images of `size`.
    ///
    /// - Parameters:
    ///   - views: the board's corners in each image, in the target's corner order; a view with
    ///     another corner count or a degenerate homography is set aside (listed in the result).
    ///   - size: the size of every image, in pixels (the calibrated camera's size).
    ///   - initial: a starting camera (skips Zhang's intrinsics); its poses are still found per view.
    /// - Throws: ``CalibrationError`` when fewer than ``minimumViews`` views survive.
    public func calibrate(views: [CalibrationView], size: ImageSize, initial: CameraModel? = nil) throws(CalibrationError) -> MonoCalibrationResult {
        var rejected: [RejectedView] = []
        let board2D = target.objectPoints.map { SIMD2($0.x, $0.y) }
        var usable: [(view: CalibrationView, homography: Matrix3x3)] = []
        for view in views {
            guard view.corners.count == target.cornerCount else {
                rejected.append(RejectedView(name: view.name, reason: "has \(view.corners.count) corners, the board has \(target.cornerCount)"))
                continue
            }
            do {
                usable.append((view, try ZhangInitialization.homography(board: board2D, image: view.corners)))
            } catch {
                rejected.append(RejectedView(name: view.name, reason: "degenerate view: \(error)"))
            }
        }
        guard usable.count >= minimumViews else {
            throw .notEnoughViews(usable: usable.count, needed: minimumViews, rejected: rejected)
        }
        let intrinsics: CameraIntrinsics
        if let initial {
            intrinsics = initial.intrinsics
        } else {
            do {
                intrinsics = try ZhangInitialization.intrinsics(homographies: usable.map(\.homography), size: size)
            } catch {
                throw .degenerate(error.description)
            }
        }
        var poses: [RigidTransform] = []
        var kept: [CalibrationView] = []
        for (view, h) in usable {
            if let pose = ZhangInitialization.pose(homography: h, intrinsics: intrinsics) {
                poses.append(pose)
                kept.append(view)
            } else {
                rejected.append(RejectedView(name: view.name, reason: "no board pose fits its homography"))
            }
        }
        var camera = model.parameters(of: initial ?? CameraModel(size: size, intrinsics: intrinsics))
        var iterations = 0

        for round in 0..<3 {
            guard kept.count >= minimumViews else {
                throw .notEnoughViews(usable: kept.count, needed: minimumViews, rejected: rejected)
            }
            let solution = try refine(views: kept, poses: poses, camera: camera, size: size, staged: round == 0 && initial == nil)
            iterations += solution.iterations
            camera = solution.global
            poses = solution.blocks.map { RigidTransform(rodrigues: SIMD3($0[0], $0[1], $0[2]), translation: SIMD3($0[3], $0[4], $0[5])) }
            let viewRMS = solution.residuals.map { r in (r.reduce(0) { $0 + $1 * $1 } / Double(max(r.count / 2, 1))).squareRoot() }
            let median = viewRMS.sorted()[viewRMS.count / 2]
            let limit = max(outlierFactor * median, outlierFloorPixels)
            let outliers = viewRMS.indices.filter { viewRMS[$0] > limit }
            if outliers.isEmpty || kept.count - outliers.count < minimumViews || round == 2 {
                var deviations = [Double](repeating: 0, count: camera.count)
                if let cov = solution.globalCovariance {
                    for i in 0..<camera.count { deviations[i] = max(cov[i, i], 0).squareRoot() }
                }
                let residuals = solution.residuals.map { r in stride(from: 0, to: r.count - 1, by: 2).map { SIMD2(r[$0], r[$0 + 1]) } }
                return MonoCalibrationResult(
                    camera: model.cameraModel(camera, size: size), model: model, viewNames: kept.map(\.name),
                    poses: poses, residuals: residuals, viewRMS: viewRMS, rms: solution.rms,
                    standardDeviations: deviations, parameterCovariance: solution.globalCovariance, rejected: rejected,
                    iterations: iterations, converged: solution.converged)
            }
            for i in outliers.reversed() {
                rejected.append(RejectedView(
                    name: kept[i].name,
                    reason: "outlier: reprojection RMS \(formatPixels(viewRMS[i])) px is above \(formatPixels(limit)) px "
                        + "(\(outlierFactor)× the median view's \(formatPixels(median)) px); a corner may be misdetected or the image blurred"))
                kept.remove(at: i)
                poses.remove(at: i)
            }
        }
        throw .degenerate("outlier rejection did not settle")
    }

    /// One refinement: optionally first with only the low-order distortion
    /// terms free (high-order terms from a zero start can run away), then all.
    private func refine(views: [CalibrationView], poses: [RigidTransform], camera: [Double], size: ImageSize,
                        staged: Bool) throws(CalibrationError) -> BlockSparseSolution {
        let objects = target.objectPoints
        let model = self.model
        let observed = views.map(\.corners)
        var global = camera
        var blocks = poses.map { p -> [Double] in
            let r = p.rotation.rodriguesVector
            return [r.x, r.y, r.z, p.translation.x, p.translation.y, p.translation.z]
        }
        let residuals: @Sendable (Int, [Double], [Double]) -> [Double]? = { v, g, b in
            Self.viewResiduals(model: model, size: size, objects: objects, observed: observed[v], camera: g, cameraOffset: 0, pose: b)
        }
        var solver = BlockSparseLevenbergMarquardt(loss: loss)
        var total = 0
        if staged {
            var fixed = [Bool](repeating: false, count: global.count)
            // Keep k1, k2 free (k1 only for a fisheye); hold the rest at their start.
            let freeDistortion = model == .fisheye ? 1 : 2
            for i in (4 + freeDistortion)..<global.count { fixed[i] = true }
            solver.maxIterations = 30
            do {
                let s = try solver.solve(BlockSparseProblem(global: global, globalFixed: fixed, blocks: blocks, residuals: residuals))
                global = s.global; blocks = s.blocks; total += s.iterations
            } catch {
                throw .degenerate(error.description)
            }
            solver.maxIterations = 100
        }
        do {
            var s = try solver.solve(BlockSparseProblem(global: global, blocks: blocks, residuals: residuals))
            s.iterations += total
            return s
        } catch {
            throw .degenerate(error.description)
        }
    }
}

/// A pixel figure with 3 decimals for messages.
func formatPixels(_ v: Double) -> String {
    guard v.isFinite else { return "\(v)" }
    let scaled = (v * 1000).rounded() / 1000
    return "\(scaled)"
}
