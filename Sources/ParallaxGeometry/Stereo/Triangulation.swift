/// Depth, disparity and 3-D points for rectified and unrectified pairs.
extension StereoRectification {
    /// The depth (distance along the rectified optical axis, in the
    /// calibration's units) of a point with `disparity` pixels (left minus
    /// right coordinate along the baseline axis), or `nil` when the point would
    /// be at or beyond infinity.
    public func depth(fromDisparity disparity: Double) -> Double? {
        let point = reproject(x: p1[0, 2], y: p1[1, 2], disparity: disparity)
        return point.map(\.z)
    }

    /// The 3-D point, in the left rectified camera frame, of the left-image
    /// pixel (`x`, `y`) with `disparity`, through `q`. `nil` when the
    /// homogeneous weight is zero or the result is not finite (zero effective disparity).
    public func reproject(x: Double, y: Double, disparity: Double) -> SIMD3<Double>? {
        let h = q * SIMD4(x, y, disparity, 1)
        guard h.w != 0 else { return nil }
        let p = SIMD3(h.x, h.y, h.z) / h.w
        guard p.x.isFinite, p.y.isFinite, p.z.isFinite else { return nil }
        return p
    }

    /// The pixels of a point given in the left rectified camera frame, in the
    /// left and right rectified images; `nil` when it is not in front.
    public func project(_ point: SIMD3<Double>) -> (left: SIMD2<Double>, right: SIMD2<Double>)? {
        guard point.z > 0 else { return nil }
        let h = SIMD4(point, 1)
        let l = p1 * h, r = p2 * h
        return (SIMD2(l.x / l.z, l.y / l.z), SIMD2(r.x / r.z, r.y / r.z))
    }
}

extension StereoCalibration {
    /// The 3-D point, in the left camera frame, seen at `leftPixel` and
    /// `rightPixel` of the original (distorted) images: the midpoint of the
    /// shortest segment between the two viewing rays.
    ///
    /// - Throws: ``TriangulationError`` when a pixel does not unproject or the
    ///   rays are parallel (the point is at infinity).
    public func triangulate(leftPixel: SIMD2<Double>, rightPixel: SIMD2<Double>) throws(TriangulationError) -> SIMD3<Double> {
        let dl: SIMD3<Double>, drRight: SIMD3<Double>
        do {
            dl = try left.ray(throughPixel: leftPixel)
            drRight = try right.ray(throughPixel: rightPixel)
        } catch {
            throw .unprojection(error)
        }
        // The right ray in the left frame: origin C = −Rᵀ T, direction Rᵀ d.
        let rt = extrinsics.rotation.transposed
        let origin = -(rt * extrinsics.translation)
        let dr = rt * drRight
        // Closest points o1 + a·dl and origin + b·dr.
        let w = -origin
        let a11 = dot(dl, dl), a12 = -dot(dl, dr), a22 = dot(dr, dr)
        let b1 = -dot(dl, w), b2 = dot(dr, w)
        let det = a11 * a22 - a12 * a12
        guard abs(det) > 1e-14 else { throw .parallelRays }
        let a = (b1 * a22 - a12 * b2) / det
        let b = (a11 * b2 - a12 * b1) / det
        return (dl * a + origin + dr * b) * 0.5
    }
}

/// Why two pixels could not be triangulated.
public enum TriangulationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A pixel could not be turned into a viewing ray; the wrapped error says why.
    case unprojection(UnprojectionError)
    /// The two viewing rays are parallel, so they meet only at infinity.
    case parallelRays

    /// One line starting "cannot triangulate:" and giving the reason.
    public var description: String {
        switch self {
        case .unprojection(let e): return "cannot triangulate: \(e)"
        case .parallelRays: return "cannot triangulate: the two viewing rays are parallel (point at infinity)"
        }
    }
}
