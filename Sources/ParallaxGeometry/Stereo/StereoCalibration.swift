/// Everything the geometry needs to know about a stereo rig: both cameras and
/// the motion from the left camera's frame to the right camera's frame.
///
/// `extrinsics` is OpenCV's (R, T): a point `X` in the left camera frame is at
/// `R X + T` in the right camera frame. For a horizontal rig with the right
/// camera to the right of the left one, `T.x` is negative (−baseline).
/// Translation units are those of the calibration target (millimetres when
/// the square size was given in millimetres), recorded in ``translationUnit``; depth
/// comes out in the same unit.
public struct StereoCalibration: Hashable, Sendable {
    /// The left camera, whose frame is the rig's reference frame.
    public var left: CameraModel
    /// The right camera; ``extrinsics`` places it relative to the left one.
    public var right: CameraModel
    /// Left camera frame → right camera frame.
    public var extrinsics: RigidTransform
    /// The unit of the translation (and so of the baseline and of every distance and depth
    /// computed from this calibration): the unit of the square size it was made with, or
    /// ``LengthUnit/unitless`` when that was a bare number or the file does not say.
    public var translationUnit: LengthUnit
    /// Keys from the file this value was read from that Parallax does not use,
    /// kept so a read–write round trip loses nothing.
    public var extra: [String: JSONValue]

    /// A calibration; the translation unit defaults to ``LengthUnit/unitless``.
    public init(left: CameraModel, right: CameraModel, extrinsics: RigidTransform,
                translationUnit: LengthUnit = .unitless, extra: [String: JSONValue] = [:]) {
        self.left = left
        self.right = right
        self.extrinsics = extrinsics
        self.translationUnit = translationUnit
        self.extra = extra
    }

    /// One side's camera.
    public subscript(side: StereoSide) -> CameraModel {
        get { side == .left ? left : right }
        set { if side == .left { left = newValue } else { right = newValue } }
    }

    /// The distance between the two optical centres, in the translation's unit.
    public var baseline: Double {
        // Scaled first, so that a translation of 1e200 has a length of 1.7e200, not infinity.
        let t = extrinsics.translation
        let largest = max(abs(t.x), abs(t.y), abs(t.z))
        guard largest > 0, largest.isFinite else { return largest.isNaN ? .nan : largest }
        return largest * length(t / largest)
    }

    /// The right camera's optical centre in the left camera's frame.
    public var rightCameraCentre: SIMD3<Double> { extrinsics.inverseOrigin }

    /// The essential matrix `E = [T]× R`: `x₂ᵀ E x₁ = 0` for normalized points.
    public var essentialMatrix: Matrix3x3 {
        Matrix3x3.crossProductMatrix(extrinsics.translation) * extrinsics.rotation
    }

    /// The fundamental matrix `F = K₂⁻ᵀ E K₁⁻¹`: `p₂ᵀ F p₁ = 0` for pixels (of undistorted images).
    public var fundamentalMatrix: Matrix3x3 {
        right.intrinsics.inverseMatrix.transposed * essentialMatrix * left.intrinsics.inverseMatrix
    }

    /// The same rig with both cameras in images of `size` (see ``CameraModel/adapted(to:)``:
    /// scaled, and centre-cropped first for another aspect ratio).
    public func adapted(to size: ImageSize) -> StereoCalibration {
        var copy = self
        copy.left = left.adapted(to: size)
        copy.right = right.adapted(to: size)
        return copy
    }
}
