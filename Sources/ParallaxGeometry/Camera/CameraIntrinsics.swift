/// The pinhole part of a camera model: focal lengths, principal point and skew, in pixels.
///
/// Pixel coordinates follow OpenCV: (0, 0) is the centre of the top-left
/// pixel, x grows to the right and y downwards. A normalized point (x, y) on
/// the plane z = 1 maps to the pixel `(fx·x + skew·y + cx, fy·y + cy)`.
public struct CameraIntrinsics: Hashable, Codable, Sendable {
    /// Horizontal focal length in pixels.
    public var fx: Double
    /// Vertical focal length in pixels.
    public var fy: Double
    /// Principal point, x, in pixels.
    public var cx: Double
    /// Principal point, y, in pixels.
    public var cy: Double
    /// Skew term (the matrix entry K[0][1]); 0 for every modern sensor.
    public var skew: Double

    /// Intrinsics from focal lengths, principal point and skew, all in pixels; stored as given
    /// (``isValid`` says whether the focal lengths are usable).
    @inlinable
    public init(fx: Double, fy: Double, cx: Double, cy: Double, skew: Double = 0) {
        self.fx = fx
        self.fy = fy
        self.cx = cx
        self.cy = cy
        self.skew = skew
    }

    /// Intrinsics from a camera matrix `K = [fx s cx; 0 fy cy; 0 0 1]`.
    ///
    /// The bottom row is assumed to be (0, 0, 1); OpenCV writes it that way.
    @inlinable
    public init(matrix k: Matrix3x3) {
        self.init(fx: k[0, 0], fy: k[1, 1], cx: k[0, 2], cy: k[1, 2], skew: k[0, 1])
    }

    /// The camera matrix `K`.
    @inlinable
    public var matrix: Matrix3x3 {
        Matrix3x3(rows: SIMD3(fx, skew, cx), SIMD3(0, fy, cy), SIMD3(0, 0, 1))
    }

    /// `K⁻¹`, in closed form (never singular while fx, fy ≠ 0).
    @inlinable
    public var inverseMatrix: Matrix3x3 {
        let ifx = 1 / fx, ify = 1 / fy
        return Matrix3x3(
            rows: SIMD3(ifx, -skew * ifx * ify, (skew * cy - cx * fy) * ifx * ify),
            SIMD3(0, ify, -cy * ify), SIMD3(0, 0, 1))
    }

    /// The pixel of a normalized point (x, y) on the plane z = 1.
    @inlinable
    public func pixel(fromNormalized p: SIMD2<Double>) -> SIMD2<Double> {
        SIMD2(fx * p.x + skew * p.y + cx, fy * p.y + cy)
    }

    /// The normalized point (x, y) of a pixel: the inverse of ``pixel(fromNormalized:)``.
    @inlinable
    public func normalized(fromPixel p: SIMD2<Double>) -> SIMD2<Double> {
        let y = (p.y - cy) / fy
        return SIMD2((p.x - cx - skew * y) / fx, y)
    }

    /// True when the focal lengths are positive and every value is finite.
    public var isValid: Bool {
        fx > 0 && fy > 0 && fx.isFinite && fy.isFinite && cx.isFinite && cy.isFinite && skew.isFinite
    }

    // MARK: Following the active format

    /// The intrinsics after resampling the image from `old` to `new` size.
    ///
    /// With pixel centres at integer coordinates, a scale `s` maps x to
    /// `(x + 0.5)·s − 0.5`, so the principal point moves by that rule and the
    /// focal lengths (and skew) scale with the axis they belong to.
    public func scaled(from old: ImageSize, to new: ImageSize) -> CameraIntrinsics {
        let sx = Double(new.width) / Double(old.width)
        let sy = Double(new.height) / Double(old.height)
        return CameraIntrinsics(
            fx: fx * sx, fy: fy * sy, cx: (cx + 0.5) * sx - 0.5, cy: (cy + 0.5) * sy - 0.5, skew: skew * sx)
    }

    /// The intrinsics of the sub-image whose top-left pixel is (`x`, `y`) in this image.
    ///
    /// A crop only moves the principal point.
    public func cropped(x: Int, y: Int) -> CameraIntrinsics {
        CameraIntrinsics(fx: fx, fy: fy, cx: cx - Double(x), cy: cy - Double(y), skew: skew)
    }

    /// The intrinsics of a binning mode that averages `horizontal` × `vertical` pixels into one.
    ///
    /// Equivalent to scaling by 1/`horizontal` and 1/`vertical`.
    public func binned(horizontal: Int, vertical: Int) -> CameraIntrinsics {
        precondition(horizontal > 0 && vertical > 0, "binning factors must be positive")
        let sx = 1 / Double(horizontal), sy = 1 / Double(vertical)
        return CameraIntrinsics(
            fx: fx * sx, fy: fy * sy, cx: (cx + 0.5) * sx - 0.5, cy: (cy + 0.5) * sy - 0.5, skew: skew * sx)
    }

    // MARK: Field of view

    /// The pinhole field of view of an image of `size`, after an optional
    /// digital zoom `zoom` (≥ 1 narrows it), ignoring lens distortion.
    ///
    /// Each angle spans from the outer edge of the first pixel to the outer
    /// edge of the last (pixel edges at −0.5 and size − 0.5). Zoom divides the
    /// tangent of each half-angle, measured from the principal point, so for a
    /// centred principal point a field of view `fov` becomes `2·atan(tan(fov/2)/zoom)`.
    /// For the view through a distorting lens use ``CameraModel/fieldOfView(zoom:)``.
    public func fieldOfView(for size: ImageSize, zoom: Double = 1) -> FieldOfView {
        let left = (cx + 0.5) / fx, right = (Double(size.width) - 0.5 - cx) / fx
        let top = (cy + 0.5) / fy, bottom = (Double(size.height) - 0.5 - cy) / fy
        return FieldOfView(
            tangentsLeft: left / zoom, right: right / zoom, top: top / zoom, bottom: bottom / zoom)
    }
}

/// Angular extent of an image, in radians.
public struct FieldOfView: Hashable, Codable, Sendable {
    /// From the left edge to the right edge.
    public var horizontal: Double
    /// From the top edge to the bottom edge.
    public var vertical: Double
    /// From the top-left corner to the bottom-right corner.
    public var diagonal: Double

    /// A field of view from its three angles, in radians, stored as given.
    public init(horizontal: Double, vertical: Double, diagonal: Double) {
        self.horizontal = horizontal
        self.vertical = vertical
        self.diagonal = diagonal
    }

    /// The field of view spanned by the tangents of the half-angles on each side
    /// of the optical axis (each ≥ 0 when the axis is inside the image).
    public init(tangentsLeft left: Double, right: Double, top: Double, bottom: Double) {
        horizontal = _atan(left) + _atan(right)
        vertical = _atan(top) + _atan(bottom)
        // The angle between the rays through the two opposite corners.
        let a = SIMD3(-left, -top, 1), b = SIMD3(right, bottom, 1)
        diagonal = _acos(min(max(dot(a, b) / (length(a) * length(b)), -1), 1))
    }

    /// Horizontal field of view in degrees.
    public var horizontalDegrees: Double { horizontal * 180 / Double.pi }
    /// Vertical field of view in degrees.
    public var verticalDegrees: Double { vertical * 180 / Double.pi }
    /// Diagonal field of view in degrees.
    public var diagonalDegrees: Double { diagonal * 180 / Double.pi }
}
