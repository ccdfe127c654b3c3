/// Moving the plane of convergence (zero parallax).
///
/// After classic rectification only points at infinity have zero disparity.
/// Shifting the two rectified images towards each other by `d = f·B/Z`
/// pixels in total puts zero disparity at distance `Z`: points there appear
/// at the same place in both images (on a stereo display, at screen depth),
/// nearer points have positive parallax, farther ones negative.
extension StereoRectification {
    /// This rectification with zero disparity at `distance` (in the
    /// calibration's units, along the rectified optical axis).
    ///
    /// The shift is split evenly: the left principal point moves by −s/2 and
    /// the right by +s/2 along the baseline axis, where `s` is the disparity a
    /// point at `distance` had before. `p1`, `p2` and `q` change together, so
    /// depth reconstructed through `q` is unchanged; the valid-pixel
    /// rectangles move with the images. A non-finite or non-positive distance
    /// returns the classic (infinite-distance) rectification.
    public func converged(atDistance distance: Double) -> StereoRectification {
        var result = unconverged
        guard distance.isFinite, distance > 0 else { return result }
        // Disparity (left minus right coordinate) of a point at `distance` before the shift.
        let half = result.disparity(atDistance: distance) / 2
        result = result.converged(halfShift: half)
        result.convergenceDistance = distance
        return result
    }

    /// This rectification with the two principal points moved apart by `halfShift` pixels
    /// each along the baseline axis (left by −`halfShift`, right by +`halfShift`), counted
    /// from the classic rectification, so calls do not accumulate.
    ///
    /// This is what a rectifier applies when it moves the convergence plane by whole pixels
    /// (``converged(atDistance:)`` asks for an exact, usually fractional, shift). The
    /// convergence distance becomes wherever disparity is now zero: `f·T / (c₁ − c₂)` along
    /// the baseline axis, `nil` when that is not a positive finite distance (a zero shift,
    /// or a shift towards infinity's far side). `p1`, `p2`, `q` and the valid rectangles
    /// change together, as in ``converged(atDistance:)``.
    public func converged(halfShift half: Double) -> StereoRectification {
        let axis = layout == .horizontal ? 0 : 1
        var result = unconverged
        guard half.isFinite, half != 0 else { return result }
        let f = result.focalLength
        let tf = result.p2[axis, 3]  // f · T (T negative for the usual left/right order)
        result.p1[axis, 2] -= half
        result.p2[axis, 2] += half
        result.q[axis, 3] = -result.p1[axis, 2]
        result.q[3, 3] = (result.p1[axis, 2] - result.p2[axis, 2]) / (tf / f)
        result.roi1 = Self.shift(result.roi1, by: -half, axis: axis, within: size)
        result.roi2 = Self.shift(result.roi2, by: half, axis: axis, within: size)
        let difference = result.p1[axis, 2] - result.p2[axis, 2]
        let distance = tf / difference
        result.convergenceDistance = distance.isFinite && distance > 0 ? distance : nil
        result.convergenceShift = half
        return result
    }

    /// The rectification with the convergence plane back at infinity.
    public var unconverged: StereoRectification {
        guard convergenceDistance != nil || convergenceShift != 0 else { return self }
        let axis = layout == .horizontal ? 0 : 1
        var result = self
        let half = convergenceShift
        result.p1[axis, 2] += half
        result.p2[axis, 2] -= half
        result.q[axis, 3] = -result.p1[axis, 2]
        result.q[3, 3] = (result.p1[axis, 2] - result.p2[axis, 2]) / (result.p2[axis, 3] / result.focalLength)
        result.roi1 = Self.shift(result.roi1, by: half, axis: axis, within: size)
        result.roi2 = Self.shift(result.roi2, by: -half, axis: axis, within: size)
        result.convergenceDistance = nil
        result.convergenceShift = 0
        return result
    }

    /// The disparity, in pixels, of a point `distance` away from the left
    /// rectified camera (along the rectified optical axis).
    public func disparity(atDistance distance: Double) -> Double {
        let axis = layout == .horizontal ? 0 : 1
        return -p2[axis, 3] / distance + (p1[axis, 2] - p2[axis, 2])
    }

    private static func shift(_ rect: PixelRect, by shift: Double, axis: Int, within size: ImageSize) -> PixelRect {
        guard rect.width > 0, rect.height > 0 else { return rect }
        // Beyond the image the rectangle is empty whatever the shift: clamp, so that a
        // distance however near cannot overflow `Int`.
        let limit = Double(size.width + size.height + rect.width + rect.height)
        let amount = shift.isNaN ? 0 : min(max(shift, -limit), limit)
        var r = rect
        if axis == 0 {
            let x0 = Int(_ceil(Double(rect.x) + amount)), x1 = Int(_floor(Double(rect.x + rect.width) + amount))
            r.x = x0
            r.width = x1 - x0
        } else {
            let y0 = Int(_ceil(Double(rect.y) + amount)), y1 = Int(_floor(Double(rect.y + rect.height) + amount))
            r.y = y0
            r.height = y1 - y0
        }
        return r.intersection(PixelRect(x: 0, y: 0, width: size.width, height: size.height))
    }
}

extension StereoCalibration {
    /// The homography that registers the right image onto the left one for
    /// points on the fronto-parallel plane `z = distance` of the left camera,
    /// for an *unrectified* pair (of undistorted images).
    ///
    /// It maps a left pixel to the right pixel that sees the same point of the
    /// plane, `x_r ~ K_r (R + T nᵀ/distance) K_l⁻¹ x_l` with `n = (0, 0, 1)`.
    /// Sampling the right image at `H(x_l)` for every left pixel `x_l` gives a
    /// right image in which that plane has zero parallax.
    public func registrationHomography(atDistance distance: Double) -> Homography {
        Homography.planeInduced(from: left.intrinsics, to: right.intrinsics, motion: extrinsics,
                                planeNormal: SIMD3(0, 0, 1), planeDistance: distance)
    }
}
