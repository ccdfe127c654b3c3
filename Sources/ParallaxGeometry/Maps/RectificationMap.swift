/// For every pixel of an output image, where to read it in the source image.
///
/// Coordinates follow the pixel-centre convention ((0, 0) is the centre of
/// the top-left source pixel). A NaN entry marks an output pixel that has no
/// source point (its ray cannot be seen by the lens); resamplers write the
/// border value there. Undistortion, rectification, the convergence shift and
/// the display orientation are all folded into one map, so a resampler
/// touches every pixel once.
public struct RectificationMap: Sendable, Equatable {
    /// The size of the images this map produces.
    public let outputSize: ImageSize
    /// The size of the images this map reads.
    public let sourceSize: ImageSize
    /// Source x per output pixel, row-major (`outputSize.width` per row).
    public var sourceX: [Float]
    /// Source y per output pixel, row-major.
    public var sourceY: [Float]
    /// Set when the whole map is the homography `output pixel → source pixel`
    /// (no lens distortion), so a resampler may compute positions on the fly.
    public var homography: Homography?

    /// A map from its arrays (one entry per output pixel, row-major; NaN where undefined).
    public init(outputSize: ImageSize, sourceSize: ImageSize, sourceX: [Float], sourceY: [Float], homography: Homography? = nil) {
        precondition(sourceX.count == outputSize.area && sourceY.count == outputSize.area,
                     "map arrays must hold one entry per output pixel")
        self.outputSize = outputSize
        self.sourceSize = sourceSize
        self.sourceX = sourceX
        self.sourceY = sourceY
        self.homography = homography
    }

    /// The source position for output pixel (`x`, `y`), or `nil` where undefined.
    @inlinable
    public func source(x: Int, y: Int) -> SIMD2<Float>? {
        let i = y * outputSize.width + x
        let sx = sourceX[i], sy = sourceY[i]
        return sx.isNaN || sy.isNaN ? nil : SIMD2(sx, sy)
    }

    /// Builds the map that shows `camera`'s image as seen by a virtual pinhole
    /// camera with intrinsics `newCamera` rotated by `rotation` (a rectified
    /// camera: `rotation` is R1 or R2, `newCamera` the left block of P1 or P2),
    /// displayed with `orientation`.
    ///
    /// For every output pixel the ray `Rᵀ K_new⁻¹ (u, v, 1)` is projected
    /// through the full lens model of `camera`.
    public init(camera: CameraModel, rotation: Matrix3x3, newCamera: CameraIntrinsics, size: ImageSize,
                orientation: OutputOrientation = .identity) {
        let displayed = orientation.displayedSize(of: size)
        let count = displayed.area
        var xs = [Float](repeating: .nan, count: count)
        var ys = [Float](repeating: .nan, count: count)
        // Displayed pixel → rectified pixel (an affine map) → ray in the source
        // camera frame, as one matrix; along a row the ray then grows by a
        // constant step, so each pixel costs one vector add plus the lens model.
        let back = rotation.transposed * newCamera.inverseMatrix
        let toRay = back * Self.orientationMatrix(orientation, size: size)
        let step = toRay.column(0)
        let isFisheye = camera.distortion.isFisheye
        for v in 0..<displayed.height {
            var ray = toRay * SIMD3(0, Double(v), 1)
            let rowStart = v * displayed.width
            for u in 0..<displayed.width {
                defer { ray += step }
                let pixel: SIMD2<Double>?
                if isFisheye {
                    pixel = camera.project(ray)
                } else if ray.z > 0 {
                    pixel = camera.pixel(fromNormalized: SIMD2(ray.x / ray.z, ray.y / ray.z))
                } else {
                    pixel = nil
                }
                if let pixel, pixel.x.isFinite, pixel.y.isFinite {
                    xs[rowStart + u] = Float(pixel.x)
                    ys[rowStart + u] = Float(pixel.y)
                }
            }
        }
        var homography: Homography?
        if case .none = camera.distortion {
            // Output pixel → rectified pixel (orientation, affine) → source pixel (K R⁻¹ K_new⁻¹).
            homography = Homography(camera.intrinsics.matrix * toRay)
        }
        self.init(outputSize: displayed, sourceSize: camera.size, sourceX: xs, sourceY: ys, homography: homography)
    }

    /// The affine map displayed pixel → unrotated pixel, as a 3×3 matrix.
    static func orientationMatrix(_ o: OutputOrientation, size: ImageSize) -> Matrix3x3 {
        let origin = o.sourcePixel(ofDisplayed: SIMD2(0, 0), imageSize: size)
        let ex = o.sourcePixel(ofDisplayed: SIMD2(1, 0), imageSize: size) - origin
        let ey = o.sourcePixel(ofDisplayed: SIMD2(0, 1), imageSize: size) - origin
        return Matrix3x3(rows: SIMD3(ex.x, ey.x, origin.x), SIMD3(ex.y, ey.y, origin.y), SIMD3(0, 0, 1))
    }
}

/// The two maps of a rectified stereo pair.
public struct StereoRectificationMaps: Sendable, Equatable {
    /// The left camera's map.
    public var left: RectificationMap
    /// The right camera's map.
    public var right: RectificationMap
    /// The rectification the maps were built for.
    public var rectification: StereoRectification
    /// How the maps turn and flip the rectified images for display.
    public var orientation: OutputOrientation

    /// The two maps of `rectification`, displayed with `orientation`.
    public init(left: RectificationMap, right: RectificationMap, rectification: StereoRectification,
                orientation: OutputOrientation = .identity) {
        self.left = left
        self.right = right
        self.rectification = rectification
        self.orientation = orientation
    }
}

extension StereoCalibration {
    /// Maps for both cameras of `rectification` (build it with
    /// ``rectification(_:)`` and optionally ``StereoRectification/converged(atDistance:)``).
    public func rectificationMaps(for rectification: StereoRectification,
                                  orientation: OutputOrientation = .identity) -> StereoRectificationMaps {
        StereoRectificationMaps(
            left: RectificationMap(camera: left, rotation: rectification.r1, newCamera: rectification.leftIntrinsics,
                                   size: rectification.size, orientation: orientation),
            right: RectificationMap(camera: right, rotation: rectification.r2, newCamera: rectification.rightIntrinsics,
                                    size: rectification.size, orientation: orientation),
            rectification: rectification, orientation: orientation)
    }
}
