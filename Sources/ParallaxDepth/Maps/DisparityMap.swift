import ParallaxGeometry

/// The disparities of one rectified pair, for each pixel of the left image: how many pixels
/// further left the same point lies in the right image (left x − right x), or nothing where
/// the matcher found no trustworthy match.
///
/// Two forms of the same numbers: ``fixedPoint``, 16 × disparity rounded to an `Int16` as
/// OpenCV's `StereoSGBM` writes `CV_16S` maps (so figures compare directly), with
/// ``invalidFixedPoint`` where invalid; and ``values`` in pixels as `Float`, +∞ where invalid
/// (as Middlebury's PFM files mark unknown pixels). Both are rows of ``size``.width, top row
/// first. A matcher writes into a map it is given (``SemiGlobalMatcher/match(left:right:into:)``)
/// and reuses its storage, so a map kept per stream costs no allocation per pair.
public struct DisparityMap: Sendable, Equatable {
    /// The fixed-point value of an invalid pixel: `Int16.min`, which no disparity reaches
    /// (they lie within ±2047 pixels, ±32 752 in sixteenths).
    public static let invalidFixedPoint = Int16.min
    /// Sixteenths: ``fixedPoint`` holds disparity × 16, as OpenCV's maps do.
    public static let subpixelScale = 16

    /// Width and height in pixels (the left image's).
    public internal(set) var size: ImageSize
    /// The first disparity searched.
    public internal(set) var minimumDisparity: Int
    /// How many disparities were searched: valid values lie in
    /// [minimumDisparity, minimumDisparity + disparityCount − 1].
    public internal(set) var disparityCount: Int
    /// 16 × disparity, or ``invalidFixedPoint``; `size.width × size.height` values, row by row.
    public internal(set) var fixedPoint: [Int16]
    /// Disparity in pixels, or +∞ where invalid; the same layout.
    public internal(set) var values: [Float]
    /// Why pixels are invalid, counted by reason.
    public internal(set) var invalid: InvalidCounts

    /// The invalid pixels of a map by reason. Every invalid pixel has exactly one.
    public struct InvalidCounts: Sendable, Equatable, Codable {
        /// The winning disparity's right-image pixel lay outside the right image (near the left
        /// edge, for positive disparities). Most pixels of that edge band lose to the checks
        /// instead, counted as ambiguous or inconsistent.
        public var outside = 0
        /// The best match was not better than the next by the uniqueness margin.
        public var ambiguous = 0
        /// The right image's best match for the matched pixel disagreed (left–right check):
        /// mostly occlusions.
        public var inconsistent = 0
        /// Part of a region the speckle filter removed.
        public var speckle = 0
        /// Invalid in a map made from values (a file, a ground truth), which say no reason.
        public var unknown = 0
        /// All of them.
        public var total: Int { outside + ambiguous + inconsistent + speckle + unknown }
        /// No invalid pixels.
        public init() {}
    }

    /// An empty map of `size` (every pixel invalid) for a range; matchers fill it.
    public init(size: ImageSize, minimumDisparity: Int = 0, disparityCount: Int = 0) {
        let count = max(0, size.width) * max(0, size.height)
        self.size = size
        self.minimumDisparity = minimumDisparity
        self.disparityCount = disparityCount
        self.fixedPoint = Array(repeating: Self.invalidFixedPoint, count: count)
        self.values = Array(repeating: .infinity, count: count)
        self.invalid = InvalidCounts()
        self.invalid.unknown = count
    }

    /// A map of `values` in pixels (row by row, non-finite where invalid), as a file or a
    /// ground truth gives them; the fixed point rounds 16 × each value to the nearest, and
    /// invalid pixels count as ``InvalidCounts/unknown``.
    ///
    /// - Throws: ``DepthError/invalidConfiguration(field:value:allowed:)`` when the count is not
    ///   the size's or a value lies beyond the fixed point's ±2047 pixels.
    public init(size: ImageSize, minimumDisparity: Int, disparityCount: Int, values: [Float]) throws(DepthError) {
        guard size.width >= 0, size.height >= 0, values.count == size.width * size.height else {
            throw .invalidConfiguration(field: "values", value: values.count, allowed: "\(size.width * size.height) for \(size)")
        }
        var fixed = [Int16](repeating: Self.invalidFixedPoint, count: values.count)
        var unknown = 0
        for (i, value) in values.enumerated() {
            guard value.isFinite else { unknown += 1; continue }
            guard abs(value) <= 2047 else {
                throw .invalidConfiguration(field: "values[\(i)]", value: Int(value), allowed: "disparities within ±2047 pixels")
            }
            fixed[i] = Int16((16 * value).rounded())
        }
        self.size = size
        self.minimumDisparity = minimumDisparity
        self.disparityCount = disparityCount
        self.fixedPoint = fixed
        self.values = values.map { $0.isFinite ? $0 : .infinity }
        self.invalid = InvalidCounts()
        self.invalid.unknown = unknown
    }

    /// An empty map, resized by the first match into it.
    public init() {
        self.init(size: ImageSize(width: 0, height: 0))
    }

    /// The disparity at pixel (`x`, `y`) in pixels, or `nil` when invalid or outside the map.
    public subscript(x: Int, y: Int) -> Float? {
        guard x >= 0, y >= 0, x < size.width, y < size.height else { return nil }
        let value = values[y * size.width + x]
        return value.isFinite ? value : nil
    }

    /// Pixels with a disparity.
    public var validCount: Int { size.width * size.height - invalid.total }

    /// The share of pixels with a disparity, 0…1 (0 for an empty map).
    public var density: Double {
        let count = size.width * size.height
        return count == 0 ? 0 : Double(validCount) / Double(count)
    }

    /// Makes the storage fit `size` and the range, allocating only when the size changes.
    mutating func prepare(size: ImageSize, minimumDisparity: Int, disparityCount: Int) {
        let count = size.width * size.height
        if fixedPoint.count != count {
            fixedPoint = Array(repeating: Self.invalidFixedPoint, count: count)
            values = Array(repeating: .infinity, count: count)
        }
        self.size = size
        self.minimumDisparity = minimumDisparity
        self.disparityCount = disparityCount
    }
}
