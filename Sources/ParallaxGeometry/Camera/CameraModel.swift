/// One calibrated camera: image size, intrinsics and lens distortion.
///
/// The camera frame is OpenCV's: x right, y down, z forward along the optical
/// axis. ``project(_:)`` takes a point in that frame to a pixel;
/// ``normalizedCoordinates(ofPixel:)`` and ``ray(throughPixel:)`` go back,
/// with an iterative solver that converges to ``unprojectionTolerance(atPixel:)``
/// (10⁻⁹ px up to 1000 px from the origin) or reports that it could not.
public struct CameraModel: Hashable, Sendable {
    /// The image size the intrinsics belong to.
    public var size: ImageSize
    /// The pinhole projection (focal lengths, principal point, skew) in pixels of ``size``.
    public var intrinsics: CameraIntrinsics
    /// The lens distortion, applied to normalized coordinates before ``intrinsics``;
    /// ``LensDistortion/none`` for an ideal pinhole.
    public var distortion: LensDistortion

    /// A camera from its image size, intrinsics and distortion (none unless given), stored
    /// as given.
    public init(size: ImageSize, intrinsics: CameraIntrinsics, distortion: LensDistortion = .none) {
        self.size = size
        self.intrinsics = intrinsics
        self.distortion = distortion
    }

    /// The largest reprojection error, in pixels, that ``normalizedCoordinates(ofPixel:)``
    /// accepts as converged for pixels within 1000 px of the origin. Farther out it is
    /// 10⁻¹² of the pixel's distance from the origin (see ``unprojectionTolerance(atPixel:)``).
    public static let unprojectionTolerancePixels = 1e-9

    /// The reprojection error accepted at `pixel`: ``unprojectionTolerancePixels``, or
    /// 10⁻¹² of `pixel`'s distance from the origin when that is larger, so that far-out
    /// pixels (whose own double rounding grows with their size) can still converge.
    public static func unprojectionTolerance(atPixel pixel: SIMD2<Double>) -> Double {
        unprojectionTolerancePixels * max(1, length(pixel) * 1e-3)
    }

    // MARK: Projection

    /// The pixel where a point in the camera frame appears, or `nil` when it
    /// cannot be seen: behind the camera (z ≤ 0) for a pinhole or Brown–Conrady
    /// lens, at or beyond 180° from the axis for a fisheye.
    @inlinable
    public func project(_ point: SIMD3<Double>) -> SIMD2<Double>? {
        switch distortion {
        case .kannalaBrandt(let f):
            let r = length(SIMD2(point.x, point.y))
            if r == 0 { return point.z > 0 ? SIMD2(intrinsics.cx, intrinsics.cy) : nil }
            return intrinsics.pixel(fromNormalized: f.distort(ray: point))
        default:
            guard point.z > 0 else { return nil }
            return pixel(fromNormalized: SIMD2(point.x / point.z, point.y / point.z))
        }
    }

    /// The pixel of an undistorted normalized point (x, y) on the plane z = 1.
    @inlinable
    public func pixel(fromNormalized p: SIMD2<Double>) -> SIMD2<Double> {
        intrinsics.pixel(fromNormalized: distortion.distort(p))
    }

    // MARK: Unprojection

    /// The undistorted normalized point (x, y) on z = 1 whose ray passes through `pixel`.
    ///
    /// Brown–Conrady is inverted by damped Newton iterations on the full
    /// distortion function (radial, rational and tangential terms together),
    /// the fisheye model by Newton on θ_d(θ). The answer is returned only
    /// when re-projecting it lands within ``unprojectionTolerance(atPixel:)`` of
    /// `pixel` (10⁻⁹ px up to 1000 px from the origin) and the lens is locally
    /// invertible there (positive Jacobian), so a root on the far side of a fold
    /// is never mistaken for the right one.
    ///
    /// - Throws: ``UnprojectionError`` when no such point exists or the solver
    ///   does not reach the tolerance.
    public func normalizedCoordinates(ofPixel pixel: SIMD2<Double>) throws(UnprojectionError) -> SIMD2<Double> {
        guard pixel.x.isFinite, pixel.y.isFinite else { throw .nonFinitePixel(pixel) }
        let target = intrinsics.normalized(fromPixel: pixel)
        switch distortion {
        case .none:
            return target
        case .brownConrady(let model):
            return try Self.invertBrown(model, target: target, pixel: pixel, intrinsics: intrinsics)
        case .kannalaBrandt(let model):
            let thetaD = length(target)
            if thetaD == 0 { return .zero }
            guard let theta = model.undistortedAngle(thetaD) else {
                throw .didNotConverge(pixel: pixel, residualPixels: .infinity)
            }
            guard theta < Double.pi / 2 else { throw .beyondImagePlane(pixel: pixel, angleRadians: theta) }
            let result = target * (_tan(theta) / thetaD)
            let residual = length(self.pixel(fromNormalized: result) - pixel)
            guard residual <= Self.unprojectionTolerance(atPixel: pixel) else {
                throw .didNotConverge(pixel: pixel, residualPixels: residual)
            }
            return result
        }
    }

    /// The unit ray, in the camera frame, that images at `pixel`.
    ///
    /// Unlike ``normalizedCoordinates(ofPixel:)`` this also works for fisheye
    /// pixels more than 90° off axis.
    public func ray(throughPixel pixel: SIMD2<Double>) throws(UnprojectionError) -> SIMD3<Double> {
        if case .kannalaBrandt(let model) = distortion {
            guard pixel.x.isFinite, pixel.y.isFinite else { throw .nonFinitePixel(pixel) }
            let target = intrinsics.normalized(fromPixel: pixel)
            let thetaD = length(target)
            if thetaD == 0 { return SIMD3(0, 0, 1) }
            guard let theta = model.undistortedAngle(thetaD) else {
                throw .didNotConverge(pixel: pixel, residualPixels: .infinity)
            }
            let direction = target / thetaD
            return SIMD3(direction.x * _sin(theta), direction.y * _sin(theta), _cos(theta))
        }
        return normalize(try normalizedCoordinates(ofPixel: pixel).homogeneous)
    }

    private static func invertBrown(
        _ model: BrownConrady, target: SIMD2<Double>, pixel: SIMD2<Double>, intrinsics: CameraIntrinsics
    ) throws(UnprojectionError) -> SIMD2<Double> {
        // Work in pixel units so the tolerance means what it says.
        let tolerance = unprojectionTolerance(atPixel: pixel)
        func residual(_ p: SIMD2<Double>) -> SIMD2<Double> {
            intrinsics.pixel(fromNormalized: model.distort(p)) - pixel
        }
        // Start from OpenCV's fixed-point guess, which is close away from the fold.
        var x = model.openCVFixedPointUndistort(target, iterations: 3)
        if !(x.x.isFinite && x.y.isFinite) { x = target }
        var r = residual(x)
        var error = length(r)
        for _ in 0..<100 {
            if error <= tolerance { break }
            let (_, jx, jy) = model.distortWithJacobian(x)
            // Chain rule through K: ∂pixel/∂p = [fx·jx + s·jy; fy·jy].
            let a = intrinsics.fx * jx + intrinsics.skew * jy
            let b = intrinsics.fy * jy
            let det = a.x * b.y - a.y * b.x
            guard det.isFinite, abs(det) > 1e-300 else { break }
            var step = SIMD2((b.y * r.x - a.y * r.y) / det, (-b.x * r.x + a.x * r.y) / det)
            // Damping: halve the step until the residual drops.
            var accepted = false
            for _ in 0..<40 {
                let candidate = x - step
                let rc = residual(candidate)
                let ec = length(rc)
                if ec.isFinite && ec < error {
                    x = candidate
                    r = rc
                    error = ec
                    accepted = true
                    break
                }
                step *= 0.5
            }
            if !accepted { break }
        }
        guard error <= tolerance else { throw .didNotConverge(pixel: pixel, residualPixels: error) }
        // A root where the Jacobian is not positive lies past a fold of the lens model.
        let (_, jx, jy) = model.distortWithJacobian(x)
        let jacobianDeterminant = jx.x * jy.y - jx.y * jy.x
        guard jacobianDeterminant > 0 else { throw .outsideInvertibleRegion(pixel: pixel) }
        return x
    }

    // MARK: Validity

    /// Checks that the lens model is one-to-one over the whole image: every
    /// pixel (sampled on a `samples` × `samples` grid including the borders)
    /// unprojects, and the distortion's Jacobian stays positive along every
    /// ray from the centre out to the farthest image point.
    ///
    /// A strongly distorted model fitted on points near the centre often
    /// folds back before the corners; such a model would put two scene points
    /// on one pixel there, and maps or undistortion near the border are wrong.
    public func invertibility(samples: Int = 33) -> Invertibility {
        let n = max(samples, 2)
        var failures: [SIMD2<Double>] = []
        var maxAngle = 0.0
        for j in 0..<n {
            for i in 0..<n {
                let pixel = SIMD2(
                    -0.5 + Double(size.width) * Double(i) / Double(n - 1),
                    -0.5 + Double(size.height) * Double(j) / Double(n - 1))
                do {
                    let ray = try ray(throughPixel: pixel)
                    maxAngle = max(maxAngle, _atan2(length(SIMD2(ray.x, ray.y)), ray.z))
                } catch {
                    failures.append(pixel)
                }
            }
        }
        // Monotonicity along rays from the centre, up to the widest angle used.
        if failures.isEmpty {
            let steps = 256
            let diagonals = [SIMD2(1.0, 0), SIMD2(0, 1.0), SIMD2(-1.0, 0), SIMD2(0, -1.0),
                             SIMD2(0.7071067811865476, 0.7071067811865476), SIMD2(-0.7071067811865476, 0.7071067811865476),
                             SIMD2(0.7071067811865476, -0.7071067811865476), SIMD2(-0.7071067811865476, -0.7071067811865476)]
            switch distortion {
            case .none:
                break
            case .brownConrady(let model):
                let maxRadius = _tan(min(maxAngle, 1.55))
                for direction in diagonals {
                    for s in 1...steps {
                        let p = direction * (maxRadius * Double(s) / Double(steps))
                        let (_, jx, jy) = model.distortWithJacobian(p)
                        if jx.x * jy.y - jx.y * jy.x <= 0 {
                            failures.append(pixel(fromNormalized: p))
                            break
                        }
                    }
                }
            case .kannalaBrandt(let model):
                for s in 1...steps where model.distortedAngleDerivative(maxAngle * Double(s) / Double(steps)) <= 0 {
                    let theta = maxAngle * Double(s) / Double(steps)
                    failures.append(intrinsics.pixel(fromNormalized: SIMD2(model.distortedAngle(theta), 0)))
                    break
                }
            }
        }
        return Invertibility(failingPixels: failures, maximumAngle: maxAngle)
    }

    /// The field of view through the lens, from the rays through the middles
    /// of the four image edges (horizontal, vertical) and two opposite corners
    /// (diagonal), narrowed by a digital `zoom` as in
    /// ``CameraIntrinsics/fieldOfView(for:zoom:)``.
    ///
    /// - Throws: ``UnprojectionError`` when an edge pixel does not unproject.
    public func fieldOfView(zoom: Double = 1) throws(UnprojectionError) -> FieldOfView {
        let w = Double(size.width), h = Double(size.height)
        let c = SIMD2(intrinsics.cx, intrinsics.cy)
        func angle(_ pixel: SIMD2<Double>) throws(UnprojectionError) -> Double {
            let ray = try self.ray(throughPixel: pixel)
            return _atan2(length(SIMD2(ray.x, ray.y)), ray.z)
        }
        func zoomed(_ a: Double) -> Double { _atan(_tan(a) / zoom) }
        let left = zoomed(try angle(SIMD2(-0.5, c.y))), right = zoomed(try angle(SIMD2(w - 0.5, c.y)))
        let top = zoomed(try angle(SIMD2(c.x, -0.5))), bottom = zoomed(try angle(SIMD2(c.x, h - 0.5)))
        let a = try ray(throughPixel: SIMD2(-0.5, -0.5)), b = try ray(throughPixel: SIMD2(w - 0.5, h - 0.5))
        let diagonal = zoom == 1
            ? _acos(min(max(dot(a, b), -1), 1))
            : zoomed(_acos(min(max(a.z, -1), 1))) + zoomed(_acos(min(max(b.z, -1), 1)))
        return FieldOfView(horizontal: left + right, vertical: top + bottom, diagonal: diagonal)
    }

    /// This camera in an image of `newSize` from the same sensor, as cameras make their
    /// formats: scaled when the aspect ratio is the same; when it differs, first
    /// centre-cropped to that aspect ratio, then scaled (a 16:9 mode of a 4:3 array).
    /// Calling it twice with the same size is harmless.
    ///
    /// The one way every layer adapts a calibrated model to a format (the V4L2 camera, the
    /// simulated rig, the stereo device and the session); ``areaKept(adaptedTo:)`` says how
    /// much of the calibrated image a crop keeps.
    public func adapted(to newSize: ImageSize) -> CameraModel {
        guard newSize != size else { return self }
        let (w, h) = (Double(size.width), Double(size.height))
        let target = Double(newSize.width) / Double(newSize.height)
        if abs(w / h - target) * h < 0.5 { return resized(to: newSize) }
        let crop: PixelRect
        if w / h > target {
            let width = Int((h * target).rounded())
            crop = PixelRect(x: (size.width - width) / 2, y: 0, width: width, height: size.height)
        } else {
            let height = Int((w / target).rounded())
            crop = PixelRect(x: 0, y: (size.height - height) / 2, width: size.width, height: height)
        }
        return cropped(to: crop).resized(to: newSize)
    }

    /// The share of this camera's image that ``adapted(to:)`` keeps for `newSize`: 1 for
    /// the same aspect ratio, the cropped share otherwise (0.75 from 4:3 to 16:9).
    public func areaKept(adaptedTo newSize: ImageSize) -> Double {
        let calibrated = Double(size.width) / Double(size.height)
        let wanted = Double(newSize.width) / Double(newSize.height)
        return min(calibrated, wanted) / max(calibrated, wanted)
    }

    /// This camera for another resolution of the same sensor area (a scaled
    /// format): the intrinsics scale, the distortion (in normalized
    /// coordinates) stays. ``adapted(to:)`` also handles another aspect ratio.
    public func resized(to newSize: ImageSize) -> CameraModel {
        CameraModel(size: newSize, intrinsics: intrinsics.scaled(from: size, to: newSize), distortion: distortion)
    }

    /// This camera cropped to `rect` (a cropped format or region of interest).
    public func cropped(to rect: PixelRect) -> CameraModel {
        CameraModel(size: ImageSize(width: rect.width, height: rect.height),
                    intrinsics: intrinsics.cropped(x: rect.x, y: rect.y), distortion: distortion)
    }

    /// This camera in a binning mode of `horizontal` × `vertical` pixels.
    public func binned(horizontal: Int, vertical: Int) -> CameraModel {
        CameraModel(size: ImageSize(width: size.width / horizontal, height: size.height / vertical),
                    intrinsics: intrinsics.binned(horizontal: horizontal, vertical: vertical), distortion: distortion)
    }
}

/// The outcome of ``CameraModel/invertibility(samples:)``.
public struct Invertibility: Hashable, Sendable {
    /// Sampled pixels where the model could not be inverted or folds.
    public var failingPixels: [SIMD2<Double>]
    /// The largest angle, in radians, between the optical axis and a ray through a sampled pixel.
    public var maximumAngle: Double
    /// True when no sample failed.
    public var isInvertible: Bool { failingPixels.isEmpty }
}

/// Why a pixel could not be turned back into a ray.
public enum UnprojectionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The iterative solver stopped with this reprojection error, above the tolerance.
    case didNotConverge(pixel: SIMD2<Double>, residualPixels: Double)
    /// The only solution lies where the lens model folds back on itself.
    case outsideInvertibleRegion(pixel: SIMD2<Double>)
    /// A fisheye pixel whose ray is 90° or more off axis has no point on the plane z = 1.
    case beyondImagePlane(pixel: SIMD2<Double>, angleRadians: Double)
    /// The pixel has an infinite or NaN coordinate.
    case nonFinitePixel(SIMD2<Double>)

    /// One line naming the pixel and why it has no ray (the residual in pixels, or the
    /// off-axis angle in degrees).
    public var description: String {
        switch self {
        case .didNotConverge(let p, let r):
            return "undistortion did not converge at pixel (\(p.x), \(p.y)): residual \(r) px"
        case .outsideInvertibleRegion(let p):
            return "pixel (\(p.x), \(p.y)) lies where the distortion model is not invertible (it folds back)"
        case .beyondImagePlane(let p, let a):
            return "pixel (\(p.x), \(p.y)) looks \(a * 180 / Double.pi)° off axis, beyond the plane z = 1"
        case .nonFinitePixel(let p):
            return "pixel (\(p.x), \(p.y)) is not finite"
        }
    }
}
