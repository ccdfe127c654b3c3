import ParallaxGeometry

/// The standard deviations of one camera's fitted parameters.
public struct CameraUncertainty: Sendable, Hashable {
    /// σ of the focal lengths and the principal point, in pixels.
    public var fx, fy, cx, cy: Double
    /// σ of each distortion coefficient, in the model's order (k1, k2, p1, p2, k3, … or fisheye k1…k4).
    public var distortion: [Double]

    /// The σ of `model`'s parameter vector `[fx, fy, cx, cy, distortion…]`.
    init(deviations d: ArraySlice<Double>) {
        let values = Array(d)
        (fx, fy, cx, cy) = (values[0], values[1], values[2], values[3])
        distortion = Array(values[4...])
    }
}

/// Where a pixel's ray lands when the camera's parameters vary as the fit says they may: the
/// standard deviation, in pixels, of the projection, on a grid over the image.
///
/// The ray through each pixel is held fixed in the camera's own frame and projected through
/// intrinsics drawn from the fit's covariance (linearised: `J Σ Jᵀ`, with `J` the derivative
/// of the projected pixel with respect to the camera's parameters). Each value is the σ in
/// the worst direction (the square root of the 2×2 covariance's larger eigenvalue). Because
/// the ray stays in the camera's frame, the figure is the same for a point at any distance
/// along it; the uncertainty of the camera's pose relative to the boards, which mrcal also
/// propagates, is not part of it.
public struct ProjectionUncertainty: Sendable, Hashable {
    /// The image the grid covers.
    public var imageSize: ImageSize
    /// Grid nodes across and down; node (i, j) sits at pixel
    /// (i (width − 1) / (columns − 1), j (height − 1) / (rows − 1)).
    public var columns: Int
    /// Grid nodes down the image (at least 2 when built from a camera); ``sigma`` holds
    /// `columns × rows` values.
    public var rows: Int
    /// σ per node in pixels, row-major (NaN where the pixel has no ray).
    public var sigma: [Double]
    /// σ at the image centre.
    public var center: Double
    /// σ at the four corner pixels: top left, top right, bottom right, bottom left.
    public var corners: [Double]
    /// The camera parameters' covariance this was computed from (row-major).
    public var covariance: [Double]

    /// The pixel of grid node (`column`, `row`).
    public func pixel(column: Int, row: Int) -> SIMD2<Double> {
        SIMD2(Double(column) * Double(imageSize.width - 1) / Double(max(columns - 1, 1)),
              Double(row) * Double(imageSize.height - 1) / Double(max(rows - 1, 1)))
    }

    /// The largest σ on the grid.
    public var maximum: Double { sigma.filter(\.isFinite).max() ?? .nan }

    /// An empty grid of `columns` × `rows` nodes over an image of `imageSize` (values NaN).
    init(imageSize: ImageSize, columns: Int, rows: Int) {
        self.imageSize = imageSize
        self.columns = columns
        self.rows = rows
        sigma = [Double](repeating: .nan, count: columns * rows)
        center = .nan
        corners = []
        covariance = []
    }

    /// The projection uncertainty of `camera`, whose parameters `[fx, fy, cx, cy, distortion…]`
    /// in `model`'s layout have covariance `covariance` (`model.parameterCount` square, row-major).
    public init(camera: CameraModel, model: LensModelKind, covariance: [Double], columns: Int = 48, rows: Int = 27) {
        imageSize = camera.size
        self.covariance = covariance
        self.columns = max(columns, 2)
        self.rows = max(rows, 2)
        let parameters = model.parameters(of: camera)
        func sigmaAt(_ pixel: SIMD2<Double>) -> Double {
            Self.sigma(at: pixel, camera: camera, model: model, parameters: parameters, covariance: covariance)
        }
        var grid: [Double] = []
        grid.reserveCapacity(self.columns * self.rows)
        sigma = []
        center = 0
        corners = []
        for j in 0..<self.rows {
            for i in 0..<self.columns { grid.append(sigmaAt(pixel(column: i, row: j))) }
        }
        sigma = grid
        let w = Double(camera.size.width - 1), h = Double(camera.size.height - 1)
        center = sigmaAt(SIMD2(w / 2, h / 2))
        corners = [SIMD2(0, 0), SIMD2(w, 0), SIMD2(w, h), SIMD2(0, h)].map(sigmaAt)
    }

    /// σ in the worst direction at one pixel (NaN when the pixel has no ray).
    public static func sigma(at pixel: SIMD2<Double>, camera: CameraModel, model: LensModelKind, parameters: [Double],
                      covariance: [Double]) -> Double {
        let n = parameters.count
        guard covariance.count == n * n, let ray = try? camera.ray(throughPixel: pixel) else { return .nan }
        // ∂pixel/∂θ by central differences: steps of 1e-6 of each parameter's size keep the
        // truncation error (∝ h²) and the rounding error (∝ ε/h) both far below the σ sought.
        var jacobian = [SIMD2<Double>](repeating: .zero, count: n)
        for k in 0..<n {
            let h = 1e-6 * max(abs(parameters[k]), 1e-3)
            var plus = parameters, minus = parameters
            plus[k] += h
            minus[k] -= h
            guard let a = model.cameraModel(plus, size: camera.size).project(ray),
                  let b = model.cameraModel(minus, size: camera.size).project(ray) else { return .nan }
            jacobian[k] = (a - b) / (2 * h)
        }
        // C = J Σ Jᵀ (2×2, symmetric).
        var cxx = 0.0, cxy = 0.0, cyy = 0.0
        for a in 0..<n {
            for b in 0..<n {
                let s = covariance[a * n + b]
                cxx += jacobian[a].x * s * jacobian[b].x
                cxy += jacobian[a].x * s * jacobian[b].y
                cyy += jacobian[a].y * s * jacobian[b].y
            }
        }
        let mean = (cxx + cyy) / 2, spread = (((cxx - cyy) / 2) * ((cxx - cyy) / 2) + cxy * cxy).squareRoot()
        return max(mean + spread, 0).squareRoot()
    }
}

/// How uncertain a stereo calibration is, from the covariance of its final fit (the corner
/// noise as the residuals measure it, propagated through the normal equations and
/// marginalised over the board poses).
public struct StereoUncertainty: Sendable, Hashable {
    /// σ of each camera's parameters.
    public var left: CameraUncertainty
    /// σ of the right camera's parameters, in the same layout as ``left``.
    public var right: CameraUncertainty
    /// σ of the left→right rotation's Rodrigues components, in degrees (for small angles,
    /// the rotation about the x, y and z axes).
    public var rotationDegrees: SIMD3<Double>
    /// σ of the left→right translation's components, in the calibration's unit.
    public var translation: SIMD3<Double>
    /// σ of the baseline (the translation's length), in the calibration's unit: `√(nᵀ Σ_T n)`
    /// with `n` the translation's direction and `Σ_T` its covariance.
    public var baseline: Double
    /// Projection uncertainty over each image.
    public var leftProjection: ProjectionUncertainty
    /// Projection uncertainty over the right image, in pixels.
    public var rightProjection: ProjectionUncertainty

    /// The `uncertainty` object of `parallax calibrate --json` and of the calibration file.
    public var parameterJSON: JSONValue {
        .object(JSONObject([
            ("left", left.json), ("right", right.json),
            ("rotation_degrees", .array([rotationDegrees.x, rotationDegrees.y, rotationDegrees.z].map(JSONValue.number))),
            ("translation", .array([translation.x, translation.y, translation.z].map(JSONValue.number))),
            ("baseline", .number(baseline)),
        ]))
    }

    /// The `projection_uncertainty_px` object of `parallax calibrate --json`.
    public var projectionJSON: JSONValue {
        .object(JSONObject([("left", leftProjection.json), ("right", rightProjection.json)]))
    }
}

extension StereoCalibrationResult {
    /// The uncertainty of this calibration, or `nil` when the fit produced no covariance (a
    /// singular system: too few views for the parameters).
    public var uncertainty: StereoUncertainty? {
        guard let covariance = parameterCovariance else { return nil }
        let n = model.parameterCount
        guard covariance.rows == 2 * n + 6, standardDeviations.count == 2 * n + 6 else { return nil }
        func block(_ offset: Int) -> [Double] {
            (0..<n).flatMap { a in (0..<n).map { b in covariance[offset + a, offset + b] } }
        }
        let d = standardDeviations
        let degrees = 180 / Double.pi
        let t = calibration.extrinsics.translation
        let direction = t / max(length(t), .leastNormalMagnitude)
        var baselineVariance = 0.0
        for a in 0..<3 {
            for b in 0..<3 { baselineVariance += direction[a] * covariance[2 * n + 3 + a, 2 * n + 3 + b] * direction[b] }
        }
        return StereoUncertainty(
            left: CameraUncertainty(deviations: d[0..<n]), right: CameraUncertainty(deviations: d[n..<(2 * n)]),
            rotationDegrees: SIMD3(d[2 * n], d[2 * n + 1], d[2 * n + 2]) * degrees,
            translation: SIMD3(d[2 * n + 3], d[2 * n + 4], d[2 * n + 5]), baseline: max(baselineVariance, 0).squareRoot(),
            leftProjection: ProjectionUncertainty(camera: calibration.left, model: model, covariance: block(0)),
            rightProjection: ProjectionUncertainty(camera: calibration.right, model: model, covariance: block(n)))
    }
}

extension MonoCalibrationResult {
    /// The standard deviations of the camera's parameters and its projection uncertainty, or
    /// `nil` when the fit produced no covariance.
    public var uncertainty: (parameters: CameraUncertainty, projection: ProjectionUncertainty)? {
        let n = model.parameterCount
        guard let covariance = parameterCovariance, covariance.rows == n, standardDeviations.count == n else { return nil }
        let block = (0..<n).flatMap { a in (0..<n).map { b in covariance[a, b] } }
        return (CameraUncertainty(deviations: standardDeviations[0..<n]),
                ProjectionUncertainty(camera: camera, model: model, covariance: block))
    }
}

extension CameraUncertainty {
    /// The JSON object of these standard deviations (`fx`, `fy`, `cx`, `cy`, `distortion`).
    public var json: JSONValue {
        .object(JSONObject([
            ("fx", .number(fx)), ("fy", .number(fy)), ("cx", .number(cx)), ("cy", .number(cy)),
            ("distortion", .array(distortion.map(JSONValue.number))),
        ]))
    }
}

extension ProjectionUncertainty {
    /// The JSON object of the centre and corner values.
    public var json: JSONValue {
        .object(JSONObject([("center", .number(center)), ("corners", .array(corners.map(JSONValue.number)))]))
    }
}

/// How far apart two calibrations of one camera put the same pixel: for each pixel of a grid,
/// the ray through it in one model, turned by the rotation that best aligns the two models,
/// projected by the other (pixels). Two calibrations from independent halves of the views
/// (`parallax calibrate --cross-validate`) show what σ alone cannot: model error, and views
/// that pull the solution.
///
/// The rotation is fitted (least squares) over the grid nodes of the middle two thirds of the
/// image, as mrcal fits an implied transformation: a board calibration cannot tell a shifted
/// principal point from a slightly turned camera, and the two halves may trade one for the
/// other without any pixel's ray really moving. ``rotationDegrees`` is its angle.
public struct ProjectionDifference: Sendable, Hashable {
    /// The image the grid covers.
    public var imageSize: ImageSize
    /// Grid nodes across and down (as in ``ProjectionUncertainty``).
    public var columns: Int
    /// Grid nodes down the image (at least 2); ``difference`` holds `columns × rows` values.
    public var rows: Int
    /// The difference per node in pixels, row-major (NaN where either model has no ray).
    public var difference: [Double]
    /// The median over the grid, and the values at the four corner pixels (top left, top
    /// right, bottom right, bottom left).
    public var median: Double
    /// The difference at the four corner pixels in pixels: top left, top right, bottom right,
    /// bottom left (NaN where either model has no ray).
    public var corners: [Double]

    /// The angle of the rotation fitted between the two models' frames, in degrees.
    public var rotationDegrees: Double

    /// The difference between `a` and `b` (same image size) over a `columns` × `rows` grid.
    public init(_ a: CameraModel, _ b: CameraModel, columns: Int = 48, rows: Int = 27) {
        imageSize = a.size
        self.columns = max(columns, 2)
        self.rows = max(rows, 2)
        let w = Double(a.size.width - 1), h = Double(a.size.height - 1)
        let rotation = Self.alignment(a, b, columns: self.columns, rows: self.rows)
        rotationDegrees = length(rotation.rodriguesVector) * 180 / .pi
        func at(_ pixel: SIMD2<Double>) -> Double {
            guard let ray = try? a.ray(throughPixel: pixel), let landed = b.project(rotation * ray) else { return .nan }
            return length(landed - pixel)
        }
        var grid: [Double] = []
        for j in 0..<self.rows {
            for i in 0..<self.columns {
                grid.append(at(SIMD2(Double(i) * w / Double(self.columns - 1), Double(j) * h / Double(self.rows - 1))))
            }
        }
        difference = grid
        let finite = grid.filter(\.isFinite).sorted()
        median = finite.isEmpty ? .nan : finite[finite.count / 2]
        corners = [SIMD2(0, 0), SIMD2(w, 0), SIMD2(w, h), SIMD2(0, h)].map(at)
    }

    /// The rotation that, applied to `a`'s rays, best makes `b` project them where `a` does,
    /// over the grid nodes of the middle two thirds of the image (Gauss–Newton on the rotation
    /// vector, numerical derivatives).
    static func alignment(_ a: CameraModel, _ b: CameraModel, columns: Int, rows: Int) -> Matrix3x3 {
        let w = Double(a.size.width - 1), h = Double(a.size.height - 1)
        var samples: [(ray: SIMD3<Double>, pixel: SIMD2<Double>)] = []
        for j in 0..<rows {
            for i in 0..<columns {
                let pixel = SIMD2(Double(i) * w / Double(columns - 1), Double(j) * h / Double(rows - 1))
                guard abs(pixel.x - w / 2) <= w / 3, abs(pixel.y - h / 2) <= h / 3,
                      let ray = try? a.ray(throughPixel: pixel) else { continue }
                samples.append((ray, pixel))
            }
        }
        guard samples.count >= 3 else { return .identity }
        func residuals(_ omega: SIMD3<Double>) -> [Double]? {
            let r = Matrix3x3(rodrigues: omega)
            var out: [Double] = []
            for s in samples {
                guard let p = b.project(r * s.ray) else { return nil }
                out.append(p.x - s.pixel.x)
                out.append(p.y - s.pixel.y)
            }
            return out
        }
        var omega = SIMD3<Double>.zero
        for _ in 0..<10 {
            guard let r0 = residuals(omega) else { break }
            // Normal equations JᵀJ δ = −Jᵀr, with J by central differences.
            var columnsJ: [[Double]] = []
            for k in 0..<3 {
                var plus = omega, minus = omega
                plus[k] += 1e-7
                minus[k] -= 1e-7
                guard let rp = residuals(plus), let rm = residuals(minus) else { return Matrix3x3(rodrigues: omega) }
                columnsJ.append(zip(rp, rm).map { ($0 - $1) / 2e-7 })
            }
            var normal = Matrix(rows: 3, columns: 3)
            var rhs = [Double](repeating: 0, count: 3)
            for p in 0..<3 {
                for q in 0..<3 { normal[p, q] = zip(columnsJ[p], columnsJ[q]).reduce(0) { $0 + $1.0 * $1.1 } }
                rhs[p] = -zip(columnsJ[p], r0).reduce(0) { $0 + $1.0 * $1.1 }
            }
            guard let step = try? LinearAlgebra.choleskySolve(normal, rhs) else { break }
            omega += SIMD3(step[0], step[1], step[2])
            if length(SIMD3(step[0], step[1], step[2])) < 1e-12 { break }
        }
        return Matrix3x3(rodrigues: omega)
    }

    /// As a heat-map grid (the values in ``ProjectionUncertainty``'s layout, for drawing).
    public var grid: ProjectionUncertainty {
        var p = ProjectionUncertainty(imageSize: imageSize, columns: columns, rows: rows)
        p.sigma = difference
        p.center = median
        p.corners = corners
        return p
    }

    /// The JSON object: `median`, `corners` [4] and `rotation_degrees`.
    public var json: JSONValue {
        .object(JSONObject([("median", .number(median)), ("corners", .array(corners.map(JSONValue.number))),
                            ("rotation_degrees", .number(rotationDegrees))]))
    }
}
