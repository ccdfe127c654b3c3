import CRemapKernels

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
    /// through the full lens model of `camera`. (Inside the package, a
    /// `RectificationMap.Builder` builds the same map in row blocks, for callers
    /// that spread them over threads.)
    public init(camera: CameraModel, rotation: Matrix3x3, newCamera: CameraIntrinsics, size: ImageSize,
                orientation: OutputOrientation = .identity) {
        let builder = Builder(camera: camera, rotation: rotation, newCamera: newCamera, size: size,
                              orientation: orientation)
        self = builder.map { xs, ys in builder.fill(rows: 0..<builder.outputSize.height, xs: xs, ys: ys) }
    }

    /// Computes a map's rows: what ``init(camera:rotation:newCamera:size:orientation:)``
    /// does, split so that row blocks can be built on several threads.
    ///
    /// Pinhole and Brown–Conrady rows are computed by a C kernel chosen for the CPU
    /// (AVX-512 or AVX2 where available), with the same IEEE operations in the same order at every
    /// level, so the map's bits do not depend on the machine; fisheye rows by
    /// ``CameraModel/project(_:)``.
    package struct Builder: Sendable {
        /// The size of the map (the displayed size).
        package let outputSize: ImageSize
        let camera: CameraModel
        /// Displayed pixel (u, v, 1) → ray in the source camera frame.
        let toRay: Matrix3x3
        let lens: parallax_brown_lens?

        /// The vector level the C kernels run at; asked of the CPU once.
        package static let level = parallax_map_simd_level()

        package init(camera: CameraModel, rotation: Matrix3x3, newCamera: CameraIntrinsics, size: ImageSize,
                     orientation: OutputOrientation) {
            self.camera = camera
            outputSize = orientation.displayedSize(of: size)
            // Displayed pixel → rectified pixel (an affine map) → ray in the source camera
            // frame, as one matrix: along a row the ray grows by a constant step.
            toRay = rotation.transposed * newCamera.inverseMatrix * RectificationMap.orientationMatrix(orientation, size: size)
            let k = camera.intrinsics
            func lens(_ b: BrownConrady, distorted: Bool) -> parallax_brown_lens {
                parallax_brown_lens(fx: k.fx, fy: k.fy, cx: k.cx, cy: k.cy, skew: k.skew, k1: b.k1, k2: b.k2,
                                    p1: b.p1, p2: b.p2, k3: b.k3, k4: b.k4, k5: b.k5, k6: b.k6,
                                    distorted: distorted ? 1 : 0, rational: b.isRational ? 1 : 0)
            }
            switch camera.distortion {
            case .none: self.lens = lens(BrownConrady(), distorted: false)
            case .brownConrady(let b): self.lens = lens(b, distorted: true)
            case .kannalaBrandt: self.lens = nil
            }
        }

        /// Fills `rows` of the map's arrays (`outputSize.width` entries per row, row-major).
        package func fill(rows: Range<Int>, xs: UnsafeMutablePointer<Float>, ys: UnsafeMutablePointer<Float>) {
            for v in rows { fillRow(v, xs: xs + v * outputSize.width, ys: ys + v * outputSize.width) }
        }

        /// Fills row `v` of the map into `xs` and `ys`, with the C kernel written for `level`
        /// (tests compare levels; every level gives the same bits). With a `columnStep` of
        /// `s`, only columns 0, s, 2s, … are computed, `outputSize.width / s` rounded up of
        /// them, with the same bits as in a full row.
        package func fillRow(_ v: Int, xs: UnsafeMutablePointer<Float>, ys: UnsafeMutablePointer<Float>,
                             columnStep: Int = 1, level: parallax_simd_level = Builder.level) {
            let width = (outputSize.width + columnStep - 1) / columnStep
            // Column u·s lies at origin + (u·s)·step; s·step is exact for s = 2 (and any power of two).
            let step = toRay.column(0) * Double(columnStep)
            let origin = toRay * SIMD3(0, Double(v), 1)
            guard var lens else {
                for u in 0..<width {
                    // The same ray as the C kernel's: origin + u · step.
                    let pixel = camera.project(origin + Double(u) * step)
                    if let pixel, pixel.x.isFinite, pixel.y.isFinite {
                        xs[u] = Float(pixel.x)
                        ys[u] = Float(pixel.y)
                    } else {
                        xs[u] = .nan
                        ys[u] = .nan
                    }
                }
                return
            }
            var originArray = (origin.x, origin.y, origin.z), stepArray = (step.x, step.y, step.z)
            withUnsafePointer(to: &originArray) { o in
                withUnsafePointer(to: &stepArray) { s in
                    o.withMemoryRebound(to: Double.self, capacity: 3) { o in
                        s.withMemoryRebound(to: Double.self, capacity: 3) { s in
                            parallax_map_row_brown(&lens, o, s, width, xs, ys, level)
                        }
                    }
                }
            }
        }

        /// Whether ``fillQuantisedRow(_:qx:qy:scratch:level:)`` applies (a pinhole or
        /// Brown–Conrady camera; fisheye rows come from ``CameraModel/project(_:)``).
        package var fillsQuantisedRows: Bool { lens != nil }

        /// Bytes of scratch ``fillQuantisedRow(_:qx:qy:scratch:level:)`` needs.
        package var quantisedRowScratchBytes: Int { parallax_quantised_row_scratch_bytes(outputSize.width) }

        /// Fills row `v` quantised for a fixed-point map: `round(32 x)`, ties to even, of
        /// ``fillRow(_:xs:ys:columnStep:level:)``'s positions (`PARALLAX_UNDEFINED_POSITION`
        /// where a position is NaN or |x| ≥ 2¹⁶), which is all a compiled map keeps. Most are
        /// interpolated between exact positions every 16 columns where the rounding is certain,
        /// at a fraction of the cost (see `parallax_map_row_brown_quantised`). Only for
        /// ``fillsQuantisedRows`` builders. Returns how many positions were evaluated exactly.
        @discardableResult
        package func fillQuantisedRow(_ v: Int, qx: UnsafeMutablePointer<Int32>, qy: UnsafeMutablePointer<Int32>,
                                      scratch: UnsafeMutableRawPointer,
                                      level: parallax_simd_level = Builder.level) -> Int {
            guard var lens else { preconditionFailure("fillQuantisedRow needs a pinhole or Brown–Conrady camera") }
            let step = toRay.column(0), origin = toRay * SIMD3(0, Double(v), 1)
            var originArray = (origin.x, origin.y, origin.z), stepArray = (step.x, step.y, step.z)
            return withUnsafePointer(to: &originArray) { o in
                withUnsafePointer(to: &stepArray) { s in
                    o.withMemoryRebound(to: Double.self, capacity: 3) { o in
                        s.withMemoryRebound(to: Double.self, capacity: 3) { s in
                            parallax_map_row_brown_quantised(&lens, o, s, outputSize.width, qx, qy, scratch, level)
                        }
                    }
                }
            }
        }

        /// The map whose arrays `fill` writes completely (it is handed both arrays'
        /// uninitialised storage, `outputSize.area` entries each).
        package func map(_ fill: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void) -> RectificationMap {
            let count = outputSize.area
            var ys: [Float] = []
            let xs = [Float](unsafeUninitializedCapacity: count) { xBuffer, xCount in
                ys = [Float](unsafeUninitializedCapacity: count) { yBuffer, yCount in
                    if count > 0, let x = xBuffer.baseAddress, let y = yBuffer.baseAddress { fill(x, y) }
                    yCount = count
                }
                xCount = count
            }
            var homography: Homography?
            if case .none = camera.distortion {
                // Output pixel → rectified pixel (orientation, affine) → source pixel (K R⁻¹ K_new⁻¹).
                homography = Homography(camera.intrinsics.matrix * toRay)
            }
            return RectificationMap(outputSize: outputSize, sourceSize: camera.size, sourceX: xs, sourceY: ys,
                                    homography: homography)
        }
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

    /// One side's map.
    public subscript(side: StereoSide) -> RectificationMap { side == .left ? left : right }
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
