import ParallaxGeometry

/// Depth and 3-D points from a disparity map and the rectification its pair was made with.
extension DisparityMap {
    /// The 3-D point, in the left rectified camera's frame and the calibration's unit, seen at
    /// pixel (`x`, `y`) of the left image, through `rectification`'s Q; `nil` where the
    /// disparity is invalid or the point lies at infinity.
    public func point(x: Int, y: Int, through rectification: StereoRectification) -> SIMD3<Double>? {
        guard let disparity = self[x, y] else { return nil }
        return rectification.reproject(x: Double(x), y: Double(y), disparity: Double(disparity))
    }

    /// Depth (distance along the rectified optical axis, in the calibration's unit) at pixel
    /// (`x`, `y`), or `nil` where the disparity is invalid or the point lies at or beyond infinity.
    public func depth(x: Int, y: Int, through rectification: StereoRectification) -> Double? {
        point(x: x, y: y, through: rectification).flatMap { $0.z > 0 ? $0.z : nil }
    }

    /// Depth for every pixel, row by row as ``values``, +∞ where there is none; written into
    /// `depths`, which is resized only when its count differs.
    public func depths(through rectification: StereoRectification, into depths: inout [Float]) {
        let count = size.width * size.height
        if depths.count != count { depths = Array(repeating: .infinity, count: count) }
        for y in 0..<size.height {
            for x in 0..<size.width {
                depths[y * size.width + x] = depth(x: x, y: y, through: rectification).map { Float($0) } ?? .infinity
            }
        }
    }
}
