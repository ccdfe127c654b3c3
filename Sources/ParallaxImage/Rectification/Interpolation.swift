/// How a resampler reads between source pixels.
///
/// All three read positions quantised to 1/32 pixel, the precision of OpenCV's
/// fixed-point maps (`CV_16SC2` + `INTER_TAB_SIZE` 32), rounded as
/// `cv2.convertMaps` rounds them. Only bilinear is OpenCV's arithmetic too:
/// its output equals `cv2.remap`'s level for level. Nearest takes the pixel
/// nearest the quantised position (ties up), where OpenCV's `INTER_NEAREST`
/// rounds the float position (ties to even), so the two can pick different
/// pixels within 1/64 px of a half; bicubic uses separable weights in 1/2048
/// and stays within one level of exact cubic convolution.
public enum Interpolation: String, CaseIterable, Hashable, Codable, Sendable {
    /// The nearest source pixel: fastest, blocky edges.
    case nearest
    /// A 2 × 2 weighted mean: the usual choice, identical in arithmetic to
    /// OpenCV's `INTER_LINEAR` on fixed-point maps.
    case bilinear
    /// Cubic convolution over 4 × 4 pixels with a = −0.75 (OpenCV's
    /// `INTER_CUBIC` kernel): sharpest, slowest.
    case bicubic

    /// The speed / balanced / quality names used by the CLI.
    public static let speed = Interpolation.nearest
    /// See ``speed``.
    public static let balanced = Interpolation.bilinear
    /// See ``speed``.
    public static let quality = Interpolation.bicubic

    /// Source pixels per axis that contribute to one output pixel.
    var taps: Int {
        switch self {
        case .nearest: return 1
        case .bilinear: return 2
        case .bicubic: return 4
        }
    }
}
