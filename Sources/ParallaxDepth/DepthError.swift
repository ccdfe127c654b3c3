import ParallaxGeometry
import ParallaxImage

/// Why a matcher could not be made or could not match a pair.
public enum DepthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A configuration value outside its range: the field, the value and what is allowed.
    case invalidConfiguration(field: String, value: Int, allowed: String)
    /// An image with no pixels.
    case emptyImage(ImageSize)
    /// The disparity range does not fit the image: a disparity of the range at least the
    /// width away from zero, which no pixel can have.
    case rangeWiderThanImage(minimumDisparity: Int, disparityCount: Int, width: Int)
    /// The two images differ in size.
    case sizesDiffer(left: ImageSize, right: ImageSize)
    /// The images are not the size the matcher was made for.
    case sizeDiffersFromMatcher(image: ImageSize, matcher: ImageSize)
    /// A pixel format the matcher takes no luma from (it takes gray8, YUYV, UYVY, NV12, I420
    /// and I422 as they are; convert colour images to gray first).
    case unsupportedFormat(PixelFormat, side: StereoSide)
    /// Working memory could not be had.
    case outOfMemory(bytes: Int)
    /// A file that is not what it should be: its path and what is wrong.
    case corruptFile(path: String, reason: String)
    /// The map cannot be written that way (the reason says why and what to do instead).
    case notRepresentable(String)

    /// The reason in a sentence, with the values involved.
    public var description: String {
        switch self {
        case let .invalidConfiguration(field, value, allowed):
            return "disparity configuration: \(field) is \(value); allowed: \(allowed)"
        case let .emptyImage(size):
            return "the image is empty (\(size)): nothing to match"
        case let .rangeWiderThanImage(minimum, count, width):
            return "the disparity range \(minimum)…\(minimum + count - 1) (\(count) disparities) does not fit an image \(width) pixels wide: every disparity searched must lie between −\(width - 1) and \(width - 1)"
        case let .sizesDiffer(left, right):
            return "the left image is \(left) and the right \(right): a rectified pair has one size"
        case let .sizeDiffersFromMatcher(image, matcher):
            return "the images are \(image) but the matcher was made for \(matcher)"
        case let .unsupportedFormat(format, side):
            return "the \(side) image is \(format.rawValue): the matcher takes luma from gray8, yuyv, uyvy, nv12, i420 or i422 (convert colour images to gray first)"
        case let .outOfMemory(bytes):
            return "cannot allocate the matcher's \(bytes) bytes of working memory"
        case let .corruptFile(path, reason):
            return "\(path): \(reason)"
        case let .notRepresentable(reason):
            return reason
        }
    }
}
