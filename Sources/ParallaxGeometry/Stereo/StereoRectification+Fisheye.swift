extension StereoCalibration {
    /// The stereo rectification of a fisheye (Kannala–Brandt) rig, with
    /// `cv::fisheye::stereoRectify`'s semantics and numbers.
    ///
    /// The rotations are Bouguet's, always for a horizontal rig (as in
    /// OpenCV's fisheye module). Each camera's new focal length comes from the
    /// undistorted midpoints of its four image edges: `balance` 0 keeps the
    /// largest focal length that still fills the image, 1 the smallest that
    /// shows every edge midpoint; `fovScale` > 1 widens the view further. The
    /// shared focal length is the smaller of the two; principal points are
    /// averaged as for ``rectification(_:)``.
    ///
    /// The valid-pixel rectangles, which OpenCV does not report for fisheye
    /// rigs, are computed from a 9 × 9 grid of exactly undistorted pixels.
    public func fisheyeRectification(balance: Double = 0, fovScale: Double = 1, outputSize: ImageSize? = nil,
                                     zeroDisparity: Bool = true) throws(RectificationError) -> StereoRectification {
        try validateForRectification()
        let (r1, r2, _) = bouguetRotations(horizontalOnly: true)
        let rectifiedTranslation = r2 * extrinsics.translation

        let b = min(max(balance, 0), 1)
        let k1 = try Self.fisheyeNewCamera(left, rotation: r1, balance: b, fovScale: fovScale, outputSize: outputSize)
        let k2 = try Self.fisheyeNewCamera(right, rotation: r2, balance: b, fovScale: fovScale, outputSize: outputSize)
        let focal = min(k1.fy, k2.fy)
        var c1 = SIMD2(k1.cx, k1.cy), c2 = SIMD2(k2.cx, k2.cy)
        if zeroDisparity {
            c1 = (c1 + c2) * 0.5
            c2 = c1
        } else {
            c1.y = (c1.y + c2.y) * 0.5
            c2.y = c1.y
        }
        let p1 = Matrix3x4(rows: SIMD4(focal, 0, c1.x, 0), SIMD4(0, focal, c1.y, 0), SIMD4(0, 0, 1, 0))
        let p2 = Matrix3x4(rows: SIMD4(focal, 0, c2.x, rectifiedTranslation.x * focal), SIMD4(0, focal, c2.y, 0), SIMD4(0, 0, 1, 0))
        let t = rectifiedTranslation.x
        let q = Matrix4x4(rows: SIMD4(1, 0, 0, -c1.x), SIMD4(0, 1, 0, -c1.y), SIMD4(0, 0, 0, focal),
                          SIMD4(0, 0, -1 / t, (c1.x - c2.x) / t))
        let size = outputSize ?? left.size
        return StereoRectification(
            r1: r1, r2: r2, p1: p1, p2: p2, q: q,
            roi1: Self.exactValidRect(left, rotation: r1, projection: p1, outputSize: size),
            roi2: Self.exactValidRect(right, rotation: r2, projection: p2, outputSize: size),
            size: size, layout: .horizontal)
    }

    /// The new pinhole camera for one fisheye camera (OpenCV's
    /// `estimateNewCameraMatrixForUndistortRectify`, with the aspect ratio
    /// applied consistently to the centre and the points).
    static func fisheyeNewCamera(_ camera: CameraModel, rotation: Matrix3x3, balance: Double, fovScale: Double,
                                 outputSize: ImageSize?) throws(RectificationError) -> CameraIntrinsics {
        let w = camera.size.width, h = camera.size.height
        let edgeMiddles = [SIMD2(Double(w / 2), 0), SIMD2(Double(w), Double(h / 2)),
                           SIMD2(Double(w / 2), Double(h)), SIMD2(0, Double(h / 2))]
        var points: [SIMD2<Double>] = []
        for pixel in edgeMiddles {
            guard let ray = try? camera.ray(throughPixel: pixel) else { throw .degenerateValidArea }
            let r = rotation * ray
            points.append(SIMD2(r.x / r.z, r.y / r.z))
        }
        let aspect = camera.intrinsics.fx / camera.intrinsics.fy
        var centre = points.reduce(SIMD2<Double>.zero, +) / Double(points.count)
        centre.y *= aspect
        points = points.map { SIMD2($0.x, $0.y * aspect) }
        let xs = points.map(\.x), ys = points.map(\.y)
        guard let minX = xs.min(), let maxX = xs.max(), let minY = ys.min(), let maxY = ys.max() else {
            throw .degenerateValidArea
        }
        let candidates = [Double(w) * 0.5 / (centre.x - minX), Double(w) * 0.5 / (maxX - centre.x),
                          Double(h) * 0.5 * aspect / (centre.y - minY), Double(h) * 0.5 * aspect / (maxY - centre.y)]
        guard let fMin = candidates.min(), let fMax = candidates.max(), fMin.isFinite, fMax.isFinite else {
            throw .degenerateValidArea
        }
        var f = balance * fMin + (1 - balance) * fMax
        if fovScale > 0 { f /= fovScale }
        var newCentre = -centre * f + SIMD2(Double(w), Double(h) * aspect) * 0.5
        var focal = SIMD2(f, f / aspect)
        newCentre.y /= aspect
        if let outputSize {
            let scale = SIMD2(Double(outputSize.width) / Double(w), Double(outputSize.height) / Double(h))
            focal *= scale
            newCentre *= scale
        }
        return CameraIntrinsics(fx: focal.x, fy: focal.y, cx: newCentre.x, cy: newCentre.y)
    }

    /// The largest axis-aligned rectangle of the rectified image covered by
    /// the source image, from a 9 × 9 grid of exactly undistorted pixels.
    static func exactValidRect(_ camera: CameraModel, rotation: Matrix3x3, projection: Matrix3x4,
                               outputSize: ImageSize) -> PixelRect {
        let n = 9
        let m = projection.leftBlock * rotation
        var x0 = -Double.infinity, y0 = -Double.infinity, x1 = Double.infinity, y1 = Double.infinity
        for j in 0..<n {
            for i in 0..<n where i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                let pixel = SIMD2(Double(i) * Double(camera.size.width - 1) / Double(n - 1),
                                  Double(j) * Double(camera.size.height - 1) / Double(n - 1))
                guard let ray = try? camera.ray(throughPixel: pixel) else { continue }
                let q = m * ray
                guard q.z > 0 else { continue }
                let p = SIMD2(q.x / q.z, q.y / q.z)
                if i == 0 { x0 = max(x0, p.x) }
                if i == n - 1 { x1 = min(x1, p.x) }
                if j == 0 { y0 = max(y0, p.y) }
                if j == n - 1 { y1 = min(y1, p.y) }
            }
        }
        guard x0.isFinite, y0.isFinite, x1.isFinite, y1.isFinite, x1 > x0, y1 > y0 else {
            return PixelRect(x: 0, y: 0, width: 0, height: 0)
        }
        return PixelRect(x: Int(_ceil(x0)), y: Int(_ceil(y0)), width: Int(_floor(x1 - x0)), height: Int(_floor(y1 - y0)))
            .intersection(PixelRect(x: 0, y: 0, width: outputSize.width, height: outputSize.height))
    }
}
