/// Which way the two cameras of a rectified rig are displaced.
public enum StereoLayout: String, Hashable, Codable, Sendable {
    /// Side by side: epipolar lines are image rows, disparity is along x.
    case horizontal
    /// One above the other: epipolar lines are image columns, disparity is along y.
    case vertical
}

/// How ``StereoCalibration/rectification(_:)`` chooses the rectified cameras.
///
/// The defaults are those of OpenCV's `stereoRectify` (alpha −1, the input
/// size, `CALIB_ZERO_DISPARITY`).
public struct RectificationOptions: Hashable, Sendable {
    /// Free scaling between 0 (crop so only valid pixels remain) and 1 (keep
    /// every source pixel, with black borders); `nil` is OpenCV's −1: no
    /// scaling beyond the default focal length. Values above 1 act as 1.
    public var alpha: Double?
    /// The rectified image size; `nil` keeps the calibration's image size.
    public var outputSize: ImageSize?
    /// Give both rectified cameras the same principal point, so points at
    /// infinity have zero disparity (OpenCV's `CALIB_ZERO_DISPARITY`). When
    /// false only the coordinate across the baseline is shared.
    public var zeroDisparity: Bool
    /// For fisheye rigs only: values above 1 widen the rectified view (OpenCV's `fov_scale`).
    public var fisheyeFOVScale: Double

    /// Options with OpenCV's `stereoRectify` defaults unless given; each argument sets the
    /// property of the same name.
    public init(alpha: Double? = nil, outputSize: ImageSize? = nil, zeroDisparity: Bool = true, fisheyeFOVScale: Double = 1) {
        self.alpha = alpha
        self.outputSize = outputSize
        self.zeroDisparity = zeroDisparity
        self.fisheyeFOVScale = fisheyeFOVScale
    }
}

/// A rectified stereo rig in OpenCV's terms: the rotations that make both
/// image planes coplanar and row-aligned, the new projection matrices, the
/// disparity-to-depth matrix and the rectangles of valid pixels.
///
/// `r1` rotates points from the left camera frame into the left rectified
/// frame (likewise `r2` for the right). `p1`/`p2` project rectified-frame
/// points to rectified pixels; `p2`'s last column holds `f·Tx` (horizontal) or
/// `f·Ty` (vertical), the baseline in the calibration's units times the new
/// focal length. `q` maps `(x, y, disparity, 1)` to homogeneous 3-D points in
/// the left rectified frame.
public struct StereoRectification: Hashable, Sendable {
    /// OpenCV's R1: the rotation from the left camera frame to the left rectified frame.
    public var r1: Matrix3x3
    /// OpenCV's R2: the rotation from the right camera frame to the right rectified frame.
    public var r2: Matrix3x3
    /// OpenCV's P1: projects points in the left rectified frame to left rectified pixels;
    /// its last column is zero.
    public var p1: Matrix3x4
    /// OpenCV's P2: projects points in the left rectified frame to right rectified pixels; its
    /// last column holds the focal length (pixels) times the signed baseline (calibration's unit).
    public var p2: Matrix3x4
    /// OpenCV's Q, the disparity-to-depth matrix: maps `(x, y, d, 1)`, a left rectified pixel and
    /// its disparity (left minus right coordinate along the baseline axis, in pixels), to a
    /// homogeneous point in the left rectified frame, in the calibration's unit.
    public var q: Matrix4x4
    /// Valid (fully defined) pixels in the left rectified image.
    public var roi1: PixelRect
    /// Valid pixels in the right rectified image.
    public var roi2: PixelRect
    /// The size of the rectified images.
    public var size: ImageSize
    /// Whether the rectified cameras sit side by side (disparity along x) or one above the
    /// other (disparity along y).
    public var layout: StereoLayout
    /// The distance at which disparity is zero after a convergence shift, in
    /// the calibration's units; `nil` for the classic rectification in which
    /// only points at infinity have zero disparity.
    public var convergenceDistance: Double?
    /// How far each principal point moved for the convergence plane, in
    /// pixels (left by −shift, right by +shift along the baseline axis).
    public var convergenceShift: Double = 0

    /// A rectification from its parts, each as the property of the same name; the convergence
    /// shift starts at zero.
    public init(r1: Matrix3x3, r2: Matrix3x3, p1: Matrix3x4, p2: Matrix3x4, q: Matrix4x4,
                roi1: PixelRect, roi2: PixelRect, size: ImageSize, layout: StereoLayout,
                convergenceDistance: Double? = nil) {
        self.r1 = r1
        self.r2 = r2
        self.p1 = p1
        self.p2 = p2
        self.q = q
        self.roi1 = roi1
        self.roi2 = roi2
        self.size = size
        self.layout = layout
        self.convergenceDistance = convergenceDistance
    }

    /// The rectified focal length in pixels (shared by both cameras and axes).
    public var focalLength: Double { p1[0, 0] }

    /// The baseline along the rectified axis, signed as in `p2` (negative when
    /// the right camera is to the right of / below the left one), in the calibration's units.
    public var signedBaseline: Double {
        p2[layout == .horizontal ? 0 : 1, 3] / focalLength
    }

    /// The rectified intrinsics of the left camera.
    public var leftIntrinsics: CameraIntrinsics { CameraIntrinsics(matrix: p1.leftBlock) }
    /// The rectified intrinsics of the right camera.
    public var rightIntrinsics: CameraIntrinsics { CameraIntrinsics(matrix: p2.leftBlock) }
}

/// A calibration that cannot be rectified.
public enum RectificationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The two optical centres coincide (a zero translation).
    case zeroBaseline
    /// The translation has an infinite or NaN component.
    case nonFiniteTranslation
    /// The two cameras have different image sizes.
    case sizeMismatch(left: ImageSize, right: ImageSize)
    /// A camera's intrinsics are unusable (non-positive or non-finite focal length).
    case invalidIntrinsics(side: StereoSide)
    /// The rotation is not a proper rotation matrix.
    case invalidRotation
    /// alpha scaling found no finite scale (the valid area degenerated).
    case degenerateValidArea

    /// One sentence saying why the calibration could not be rectified.
    public var description: String {
        switch self {
        case .zeroBaseline: return "the two cameras share one optical centre (translation is zero): nothing to rectify"
        case .nonFiniteTranslation: return "the translation between the cameras is not a finite vector (infinite or NaN)"
        case .sizeMismatch(let l, let r): return "the two cameras must have one image size; left is \(l), right is \(r)"
        case .invalidIntrinsics(let side): return "the \(side) camera's intrinsics are invalid (focal lengths must be positive and finite)"
        case .invalidRotation: return "the extrinsic rotation is not a rotation matrix"
        case .degenerateValidArea: return "the rectified valid area degenerated; the lens model may not be invertible over the image"
        }
    }
}

extension StereoCalibration {
    /// The stereo rectification of this rig, with `cv::stereoRectify`'s
    /// semantics and numbers (Bouguet's method).
    ///
    /// Each camera is first rotated by half the relative rotation so their
    /// optical axes become parallel, then both are rotated together so the
    /// baseline lies along x (or y, when the rig's translation is mostly
    /// vertical). The new focal length is the mean of the two cameras' focal
    /// lengths across the baseline, scaled to the output size; principal
    /// points centre the undistorted image corners. With `alpha` ≥ 0 the focal
    /// length is then scaled between "only valid pixels" (0) and "all source
    /// pixels" (1).
    ///
    /// To agree with OpenCV to the last digits this reproduces its choices:
    /// the image corners are undistorted with five fixed-point steps in
    /// single precision, and the valid-area rectangles come from a 9 × 9 grid
    /// over the image. (The rectification maps themselves use the exact model.)
    ///
    /// A rig with a fisheye camera is rectified by
    /// ``fisheyeRectification(balance:fovScale:outputSize:zeroDisparity:)``
    /// instead, with `alpha` as its balance (`nil` meaning 0).
    ///
    /// - Throws: ``RectificationError`` for a zero baseline, different image
    ///   sizes or invalid intrinsics.
    public func rectification(_ options: RectificationOptions = RectificationOptions()) throws(RectificationError) -> StereoRectification {
        if left.distortion.isFisheye || right.distortion.isFisheye {
            return try fisheyeRectification(balance: options.alpha ?? 0, fovScale: options.fisheyeFOVScale,
                                            outputSize: options.outputSize, zeroDisparity: options.zeroDisparity)
        }
        try validateForRectification()
        let imageSize = left.size
        let outputSize = options.outputSize ?? imageSize
        let (r1, r2, axis) = bouguetRotations(horizontalOnly: false)
        let layout: StereoLayout = axis == 0 ? .horizontal : .vertical
        let rectifiedTranslation = r2 * extrinsics.translation

        // The focal length across the baseline, averaged and scaled to the output.
        let across = axis ^ 1
        let ratio = axis == 1
            ? Double(outputSize.width) / Double(imageSize.width) / 2
            : Double(outputSize.height) / Double(imageSize.height) / 2
        var focal = (left.intrinsics.matrix[across, across] + right.intrinsics.matrix[across, across]) * ratio

        // Principal points that centre each camera's undistorted image corners.
        var centres: [SIMD2<Double>] = []
        for (camera, rotation) in [(left, r1), (right, r2)] {
            let w = Double(imageSize.width) - 1, h = Double(imageSize.height) - 1
            var sum = SIMD2<Double>.zero
            for corner in [SIMD2(0, 0), SIMD2(w, 0), SIMD2(0, h), SIMD2(w, h)] {
                let normalized = Self.openCVUndistort(corner, camera: camera).roundedToFloat
                let rotated = rotation * normalized.homogeneous
                sum += (SIMD2(rotated.x / rotated.z, rotated.y / rotated.z) * focal).roundedToFloat
            }
            centres.append(SIMD2(w / 2, h / 2) - sum / 4)
        }
        if options.zeroDisparity {
            let mean = (centres[0] + centres[1]) * 0.5
            centres = [mean, mean]
        } else {
            let shared = (centres[0][across] + centres[1][across]) * 0.5
            centres[0][across] = shared
            centres[1][across] = shared
        }

        func projection(_ centre: SIMD2<Double>, focal: Double, baselineTerm: Double) -> Matrix3x4 {
            var p = Matrix3x4(
                rows: SIMD4(focal, 0, centre.x, 0), SIMD4(0, focal, centre.y, 0), SIMD4(0, 0, 1, 0))
            p[axis, 3] = baselineTerm
            return p
        }
        let provisionalP1 = projection(centres[0], focal: focal, baselineTerm: 0)
        let provisionalP2 = projection(centres[1], focal: focal, baselineTerm: rectifiedTranslation[axis] * focal)

        // Valid (inner) and full (outer) areas of each rectified image.
        let areas1 = Self.rectifiedAreas(camera: left, rotation: r1, projection: provisionalP1)
        let areas2 = Self.rectifiedAreas(camera: right, rotation: r2, projection: provisionalP2)

        let sx = Double(outputSize.width) / Double(imageSize.width)
        let sy = Double(outputSize.height) / Double(imageSize.height)
        let scaledCentres = centres.map { SIMD2($0.x * sx, $0.y * sy) }
        var scale = 1.0
        if let alpha = options.alpha, alpha >= 0 {
            let a = min(alpha, 1)
            func bound(_ area: AreaRect, _ c0: SIMD2<Double>, _ c: SIMD2<Double>) -> [Double] {
                [c.x / (c0.x - area.x0), c.y / (c0.y - area.y0),
                 (Double(outputSize.width) - 1 - c.x) / (area.x1 - c0.x),
                 (Double(outputSize.height) - 1 - c.y) / (area.y1 - c0.y)]
            }
            let inner = bound(areas1.inner, centres[0], scaledCentres[0]) + bound(areas2.inner, centres[1], scaledCentres[1])
            let outer = bound(areas1.outer, centres[0], scaledCentres[0]) + bound(areas2.outer, centres[1], scaledCentres[1])
            guard let sInner = inner.max(), let sOuter = outer.min() else { throw .degenerateValidArea }
            scale = sInner * (1 - a) + sOuter * a
            guard scale.isFinite, scale > 0 else { throw .degenerateValidArea }
        }
        focal *= scale

        let p1 = projection(scaledCentres[0], focal: focal, baselineTerm: 0)
        let p2 = projection(scaledCentres[1], focal: focal, baselineTerm: provisionalP2[axis, 3] * scale)

        func roi(_ area: AreaRect, _ c0: SIMD2<Double>, _ c: SIMD2<Double>) -> PixelRect {
            let x = Int(_ceil((area.x0 - c0.x) * scale + c.x))
            let y = Int(_ceil((area.y0 - c0.y) * scale + c.y))
            let w = Int(_floor((area.x1 - area.x0) * scale))
            let h = Int(_floor((area.y1 - area.y0) * scale))
            return PixelRect(x: x, y: y, width: w, height: h)
                .intersection(PixelRect(x: 0, y: 0, width: outputSize.width, height: outputSize.height))
        }

        let t = rectifiedTranslation[axis]
        let q = Matrix4x4(
            rows: SIMD4(1, 0, 0, -scaledCentres[0].x),
            SIMD4(0, 1, 0, -scaledCentres[0].y),
            SIMD4(0, 0, 0, focal),
            SIMD4(0, 0, -1 / t, (scaledCentres[0][axis] - scaledCentres[1][axis]) / t))
        return StereoRectification(
            r1: r1, r2: r2, p1: p1, p2: p2, q: q,
            roi1: roi(areas1.inner, centres[0], scaledCentres[0]),
            roi2: roi(areas2.inner, centres[1], scaledCentres[1]),
            size: outputSize, layout: layout)
    }

    /// Checks what every rectification needs: one image size, usable
    /// intrinsics, a proper rotation and a non-zero baseline.
    func validateForRectification() throws(RectificationError) {
        guard left.size == right.size else { throw .sizeMismatch(left: left.size, right: right.size) }
        guard left.intrinsics.isValid else { throw .invalidIntrinsics(side: .left) }
        guard right.intrinsics.isValid else { throw .invalidIntrinsics(side: .right) }
        let t = extrinsics.translation
        guard t.x.isFinite, t.y.isFinite, t.z.isFinite else { throw .nonFiniteTranslation }
        // Compared component by component: the length of a huge translation overflows to
        // infinity, which is not "zero".
        // Below 1e-9 of its unit (a nanometre when in metres) the cameras are at one place, and
        // Q's 1/baseline overflows: as good as zero.
        guard max(abs(t.x), abs(t.y), abs(t.z)) > 1e-9 else { throw .zeroBaseline }
        guard extrinsics.rotation.isFinite, abs(extrinsics.rotation.determinant - 1) < 1e-3 else { throw .invalidRotation }
    }

    /// Bouguet's rectifying rotations: each camera turns by half the relative
    /// rotation so the optical axes become parallel, then both turn together
    /// so the baseline lies along x, or along y when the rig's translation is
    /// mostly vertical (unless `horizontalOnly`, as OpenCV's fisheye module does).
    /// Returns R1, R2 and the baseline axis (0 = x, 1 = y).
    func bouguetRotations(horizontalOnly: Bool) -> (r1: Matrix3x3, r2: Matrix3x3, axis: Int) {
        let halfRotation = Matrix3x3(rodrigues: extrinsics.rotation.rodriguesVector * -0.5)
        let aligned = halfRotation * extrinsics.translation
        let axis = horizontalOnly || abs(aligned.x) > abs(aligned.y) ? 0 : 1
        var target = SIMD3<Double>.zero
        target[axis] = aligned[axis] > 0 ? 1 : -1
        var turn = cross(aligned, target)
        let turnLength = length(turn)
        if turnLength > 0 {
            turn *= _acos(abs(aligned[axis]) / length(aligned)) / turnLength
        }
        let baselineRotation = Matrix3x3(rodrigues: turn)
        return (baselineRotation * halfRotation.transposed, baselineRotation * halfRotation, axis)
    }

    /// OpenCV's `undistortPoints` for one pixel: five fixed-point steps for
    /// Brown–Conrady; the converged inverse for other models.
    static func openCVUndistort(_ pixel: SIMD2<Double>, camera: CameraModel) -> SIMD2<Double> {
        let distorted = camera.intrinsics.normalized(fromPixel: pixel)
        switch camera.distortion {
        case .none: return distorted
        case .brownConrady(let model): return model.openCVFixedPointUndistort(distorted)
        case .kannalaBrandt:
            return (try? camera.normalizedCoordinates(ofPixel: pixel)) ?? distorted
        }
    }

    /// A rectangle in rectified pixel coordinates, as edges.
    struct AreaRect {
        var x0, y0, x1, y1: Double
    }

    /// The largest rectangle inside, and the smallest around, the rectified
    /// image of the source frame, sampled on a 9 × 9 grid.
    static func rectifiedAreas(camera: CameraModel, rotation: Matrix3x3, projection: Matrix3x4)
        -> (inner: AreaRect, outer: AreaRect)
    {
        let n = 9
        let transform = projection.leftBlock * rotation
        var inner = AreaRect(x0: -.infinity, y0: -.infinity, x1: .infinity, y1: .infinity)
        var outer = AreaRect(x0: .infinity, y0: .infinity, x1: -.infinity, y1: -.infinity)
        for j in 0..<n {
            for i in 0..<n {
                let pixel = SIMD2(Double(i) * Double(camera.size.width - 1) / Double(n - 1),
                                  Double(j) * Double(camera.size.height - 1) / Double(n - 1))
                let q = transform * openCVUndistort(pixel, camera: camera).homogeneous
                let p = SIMD2(q.x / q.z, q.y / q.z)
                outer.x0 = min(outer.x0, p.x)
                outer.x1 = max(outer.x1, p.x)
                outer.y0 = min(outer.y0, p.y)
                outer.y1 = max(outer.y1, p.y)
                if i == 0 { inner.x0 = max(inner.x0, p.x) }
                if i == n - 1 { inner.x1 = min(inner.x1, p.x) }
                if j == 0 { inner.y0 = max(inner.y0, p.y) }
                if j == n - 1 { inner.y1 = min(inner.y1, p.y) }
            }
        }
        return (inner, outer)
    }
}

extension SIMD2 where Scalar == Double {
    /// Both components rounded to single precision, as OpenCV's 32-bit point arrays store them.
    var roundedToFloat: SIMD2<Double> { SIMD2(Double(Float(x)), Double(Float(y))) }
}
