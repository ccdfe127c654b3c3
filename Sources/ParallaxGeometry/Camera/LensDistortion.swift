/// How a lens bends rays away from the pinhole model.
///
/// Distortion acts on normalized coordinates (the plane z = 1 in the camera
/// frame) before the intrinsics turn them into pixels, as in OpenCV.
public enum LensDistortion: Hashable, Sendable {
    /// An ideal pinhole.
    case none
    /// Brown–Conrady radial (optionally rational) and tangential distortion.
    case brownConrady(BrownConrady)
    /// Kannala–Brandt equidistant fisheye, OpenCV's `cv::fisheye` model.
    case kannalaBrandt(KannalaBrandt)

    /// The name used in calibration files: `"brown"` or `"fisheye"` (`"none"` for a pinhole).
    public var modelName: String {
        switch self {
        case .none: return "none"
        case .brownConrady: return "brown"
        case .kannalaBrandt: return "fisheye"
        }
    }

    /// The coefficients in OpenCV's order: (k1, k2, p1, p2[, k3[, k4, k5, k6]]) or fisheye (k1, k2, k3, k4).
    public var coefficients: [Double] {
        switch self {
        case .none: return []
        case .brownConrady(let b): return b.coefficients
        case .kannalaBrandt(let f): return [f.k1, f.k2, f.k3, f.k4]
        }
    }

    /// True for the fisheye model.
    public var isFisheye: Bool {
        if case .kannalaBrandt = self { return true }
        return false
    }

    /// The model named `name` with `coefficients`, as written in calibration files.
    ///
    /// - Throws: ``DistortionError`` for an unknown name or a wrong number of coefficients.
    public init(modelName name: String, coefficients: [Double]) throws(DistortionError) {
        guard coefficients.allSatisfy(\.isFinite) else { throw .nonFiniteCoefficient }
        switch name.lowercased() {
        case "none", "pinhole":
            guard coefficients.allSatisfy({ $0 == 0 }) else { throw .wrongCoefficientCount(model: name, count: coefficients.count, expected: "0") }
            self = .none
        case "brown", "brown-conrady", "plumb_bob", "rational_polynomial", "radtan":
            self = .brownConrady(try BrownConrady(coefficients: coefficients))
        case "fisheye", "kannala-brandt", "equidistant":
            guard coefficients.count == 4 else {
                throw .wrongCoefficientCount(model: name, count: coefficients.count, expected: "4")
            }
            self = .kannalaBrandt(KannalaBrandt(k1: coefficients[0], k2: coefficients[1], k3: coefficients[2], k4: coefficients[3]))
        default:
            throw .unknownModel(name)
        }
    }

    /// The distorted normalized point of an undistorted normalized point (x, y) on z = 1.
    @inlinable
    public func distort(_ p: SIMD2<Double>) -> SIMD2<Double> {
        switch self {
        case .none: return p
        case .brownConrady(let b): return b.distort(p)
        case .kannalaBrandt(let f): return f.distort(p)
        }
    }
}

/// A distortion model that cannot be built from the given values.
public enum DistortionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A model name Parallax does not know (the name given).
    case unknownModel(String)
    /// `count` coefficients where `model` takes `expected` (in words).
    case wrongCoefficientCount(model: String, count: Int, expected: String)
    /// A coefficient is NaN or infinite.
    case nonFiniteCoefficient

    /// One line naming what is wrong; for an unknown model it lists the models and
    /// coefficient counts that are accepted.
    public var description: String {
        switch self {
        case .unknownModel(let name):
            return "unknown distortion model '\(excerpt(name))'; use \"brown\" (k1, k2, p1, p2[, k3[, k4, k5, k6]]) or \"fisheye\" (k1..k4)"
        case .wrongCoefficientCount(let model, let count, let expected):
            return "distortion model '\(excerpt(model))' takes \(expected) coefficients, found \(count)"
        case .nonFiniteCoefficient:
            return "a distortion coefficient is not a finite number"
        }
    }
}

/// Brown–Conrady distortion in OpenCV's coefficient order.
///
/// With r² = x² + y²:
///
///     radial = (1 + k1 r² + k2 r⁴ + k3 r⁶) / (1 + k4 r² + k5 r⁴ + k6 r⁶)
///     x_d = x·radial + 2 p1 x y + p2 (r² + 2x²)
///     y_d = y·radial + p1 (r² + 2y²) + 2 p2 x y
///
/// The rational terms k4–k6 are OpenCV's `CALIB_RATIONAL_MODEL`.
public struct BrownConrady: Hashable, Sendable {
    /// Radial k1: the r² term of the numerator.
    public var k1: Double
    /// Radial k2: the r⁴ term of the numerator.
    public var k2: Double
    /// Tangential p1 (decentring), OpenCV's third coefficient.
    public var p1: Double
    /// Tangential p2 (decentring), OpenCV's fourth coefficient.
    public var p2: Double
    /// Radial k3: the r⁶ term of the numerator; OpenCV's fifth coefficient.
    public var k3: Double
    /// Rational k4: the r² term of the denominator (0 unless the rational model is used).
    public var k4: Double
    /// Rational k5: the r⁴ term of the denominator (0 unless the rational model is used).
    public var k5: Double
    /// Rational k6: the r⁶ term of the denominator (0 unless the rational model is used).
    public var k6: Double
    /// How many coefficients the model was given (4, 5 or 8); kept so files round-trip unchanged.
    public var coefficientCount: Int

    /// A model from named coefficients (unset ones are 0), stored as given. Without a
    /// `coefficientCount` it is 8 when any rational term is nonzero and 5 otherwise.
    public init(k1: Double = 0, k2: Double = 0, p1: Double = 0, p2: Double = 0, k3: Double = 0,
                k4: Double = 0, k5: Double = 0, k6: Double = 0, coefficientCount: Int? = nil) {
        (self.k1, self.k2, self.p1, self.p2, self.k3) = (k1, k2, p1, p2, k3)
        (self.k4, self.k5, self.k6) = (k4, k5, k6)
        self.coefficientCount = coefficientCount ?? ((k4 != 0 || k5 != 0 || k6 != 0) ? 8 : 5)
    }

    /// The model from 4, 5 or 8 coefficients (k1, k2, p1, p2[, k3[, k4, k5, k6]]).
    ///
    /// Longer lists (OpenCV's 12- and 14-term thin-prism and tilt models) are
    /// accepted only when the extra terms are zero, since this model does not carry them.
    public init(coefficients c: [Double]) throws(DistortionError) {
        guard [4, 5, 8].contains(c.count) || (c.count > 8 && c[8...].allSatisfy { $0 == 0 }) else {
            throw .wrongCoefficientCount(model: "brown", count: c.count, expected: "4, 5 or 8")
        }
        let v = c + Array(repeating: 0, count: max(0, 8 - c.count))
        self.init(k1: v[0], k2: v[1], p1: v[2], p2: v[3], k3: v[4], k4: v[5], k5: v[6], k6: v[7],
                  coefficientCount: min(c.count, 8))
    }

    /// The coefficients in OpenCV's order, `coefficientCount` of them.
    public var coefficients: [Double] {
        Array([k1, k2, p1, p2, k3, k4, k5, k6].prefix(coefficientCount))
    }

    /// True when the rational denominator is in use.
    @inlinable
    public var isRational: Bool { k4 != 0 || k5 != 0 || k6 != 0 }

    /// The radial factor at squared radius `r2`.
    @inlinable
    public func radialFactor(r2: Double) -> Double {
        let numerator = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        let denominator = 1 + r2 * (k4 + r2 * (k5 + r2 * k6))
        return numerator / denominator
    }

    /// The distorted normalized point.
    @inlinable
    public func distort(_ p: SIMD2<Double>) -> SIMD2<Double> {
        let x = p.x, y = p.y
        let x2 = x * x, y2 = y * y, r2 = x2 + y2, xy2 = 2 * x * y
        let radial = radialFactor(r2: r2)
        return SIMD2(x * radial + p1 * xy2 + p2 * (r2 + 2 * x2),
                     y * radial + p1 * (r2 + 2 * y2) + p2 * xy2)
    }

    /// The distorted point and the 2×2 Jacobian ∂(x_d, y_d)/∂(x, y) as rows.
    @inlinable
    public func distortWithJacobian(_ p: SIMD2<Double>) -> (point: SIMD2<Double>, dx: SIMD2<Double>, dy: SIMD2<Double>) {
        let x = p.x, y = p.y
        let x2 = x * x, y2 = y * y, r2 = x2 + y2, xy2 = 2 * x * y
        let n = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        let d = 1 + r2 * (k4 + r2 * (k5 + r2 * k6))
        let dn = k1 + r2 * (2 * k2 + 3 * k3 * r2)
        let dd = k4 + r2 * (2 * k5 + 3 * k6 * r2)
        let radial = n / d
        let dRadial = (dn * d - n * dd) / (d * d)  // ∂radial/∂r²
        let point = SIMD2(x * radial + p1 * xy2 + p2 * (r2 + 2 * x2),
                          y * radial + p1 * (r2 + 2 * y2) + p2 * xy2)
        // Rows: ∂x_d/∂(x, y) and ∂y_d/∂(x, y).
        let row0 = SIMD2(radial + 2 * x2 * dRadial + 2 * p1 * y + 6 * p2 * x,
                         2 * x * y * dRadial + 2 * p1 * x + 2 * p2 * y)
        let row1 = SIMD2(2 * x * y * dRadial + 2 * p1 * x + 2 * p2 * y,
                         radial + 2 * y2 * dRadial + 6 * p1 * y + 2 * p2 * x)
        return (point, row0, row1)
    }

    /// The undistorted point by OpenCV's `undistortPoints` scheme: a fixed
    /// number of fixed-point steps `x ← (x_d − tangential(x)) / radial(x)`.
    ///
    /// This is *not* a converged inverse (use ``CameraModel/normalizedCoordinates(ofPixel:)``
    /// for that); it exists so that ``StereoRectification`` reproduces
    /// `cv::stereoRectify`'s numbers, which depend on exactly these five steps.
    public func openCVFixedPointUndistort(_ pd: SIMD2<Double>, iterations: Int = 5) -> SIMD2<Double> {
        var x = pd.x, y = pd.y
        for _ in 0..<iterations {
            let r2 = x * x + y * y
            let inverseRadial = (1 + r2 * (k4 + r2 * (k5 + r2 * k6))) / (1 + r2 * (k1 + r2 * (k2 + r2 * k3)))
            if inverseRadial < 0 { return pd }
            let dx = 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
            let dy = p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
            x = (pd.x - dx) * inverseRadial
            y = (pd.y - dy) * inverseRadial
        }
        return SIMD2(x, y)
    }
}

/// Kannala–Brandt equidistant fisheye distortion (OpenCV's `cv::fisheye`).
///
/// A ray at angle θ from the optical axis lands at distorted radius
/// `θ_d = θ (1 + k1 θ² + k2 θ⁴ + k3 θ⁶ + k4 θ⁸)` on the normalized plane.
public struct KannalaBrandt: Hashable, Sendable {
    /// k1: the θ³ coefficient of θ_d.
    public var k1: Double
    /// k2: the θ⁵ coefficient of θ_d.
    public var k2: Double
    /// k3: the θ⁷ coefficient of θ_d.
    public var k3: Double
    /// k4: the θ⁹ coefficient of θ_d.
    public var k4: Double

    /// A model from its four coefficients (unset ones are 0, the undistorted equidistant
    /// projection θ_d = θ), stored as given.
    public init(k1: Double = 0, k2: Double = 0, k3: Double = 0, k4: Double = 0) {
        (self.k1, self.k2, self.k3, self.k4) = (k1, k2, k3, k4)
    }

    /// θ_d as a function of θ.
    @inlinable
    public func distortedAngle(_ theta: Double) -> Double {
        let t2 = theta * theta
        return theta * (1 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4))))
    }

    /// dθ_d/dθ.
    @inlinable
    public func distortedAngleDerivative(_ theta: Double) -> Double {
        let t2 = theta * theta
        return 1 + t2 * (3 * k1 + t2 * (5 * k2 + t2 * (7 * k3 + t2 * 9 * k4)))
    }

    /// The distorted normalized point of the ray through (x, y, 1).
    @inlinable
    public func distort(_ p: SIMD2<Double>) -> SIMD2<Double> {
        let r = length(p)
        guard r > 1e-12 else { return p }
        let theta = _atan(r)
        return p * (distortedAngle(theta) / r)
    }

    /// The distorted normalized point of a ray in any direction (θ may exceed 90°).
    @inlinable
    public func distort(ray v: SIMD3<Double>) -> SIMD2<Double> {
        let r = length(SIMD2(v.x, v.y))
        guard r > 1e-300 else { return .zero }
        let theta = _atan2(r, v.z)
        return SIMD2(v.x, v.y) * (distortedAngle(theta) / r)
    }

    /// Solves `θ_d(θ) = thetaD` for θ by Newton's method from θ = θ_d.
    ///
    /// Returns `nil` when it does not converge to `tolerance` radians or lands
    /// where θ_d(θ) is not increasing (a spurious root past the fold).
    public func undistortedAngle(_ thetaD: Double, tolerance: Double = 1e-15) -> Double? {
        guard thetaD.isFinite else { return nil }
        if thetaD == 0 { return 0 }
        var theta = thetaD
        for _ in 0..<60 {
            let f = distortedAngle(theta) - thetaD
            let d = distortedAngleDerivative(theta)
            guard d > 0 else { return nil }
            var step = f / d
            // Keep θ positive and inside (0, π) so the iteration cannot run away.
            while theta - step <= 0 || theta - step >= Double.pi { step *= 0.5 }
            theta -= step
            if abs(step) <= tolerance * max(1, theta) {
                return distortedAngleDerivative(theta) > 0 ? theta : nil
            }
        }
        return abs(distortedAngle(theta) - thetaD) < 1e-12 ? theta : nil
    }
}
