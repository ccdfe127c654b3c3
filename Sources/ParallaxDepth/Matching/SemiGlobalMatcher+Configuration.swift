import ParallaxGeometry

extension SemiGlobalMatcher {
    /// What a matcher computes: the disparity range, the matching cost, the aggregation and the
    /// checks that make a disparity invalid. Fixed when the matcher is made.
    ///
    /// The defaults suit rectified 8-bit images from 320 to 1920 pixels wide: 128 disparities
    /// from 0, a 9 × 7 census window, five paths in one pass, P1 = 8 and P2 = 96 halved at an
    /// intensity step of 16, a 5 % uniqueness margin, the left–right check at one disparity and
    /// speckles of up to 100 pixels removed.
    public struct Configuration: Sendable, Equatable, Codable {
        /// The smallest disparity searched, in pixels (left x minus right x). Negative when the
        /// convergence plane lies inside the scene (points beyond it have negative disparity).
        /// −1024…1024.
        public var minimumDisparity: Int
        /// How many disparities are searched, from ``minimumDisparity``: a multiple of 16 in
        /// 16…256 (the kernels work 16 disparities at a time); every disparity of the range
        /// must lie within the image's width of zero.
        public var disparityCount: Int
        /// The census window (the matching cost).
        public var census: CensusWindow
        /// The aggregation paths.
        public var paths: AggregationPaths
        /// P1: the penalty for a one-disparity step between neighbours along a path, in the
        /// cost's unit (census bits). 1…``largePenalty``.
        public var smallPenalty: Int
        /// P2: the penalty for a larger step, where the intensity does not change; in census
        /// bits, ``smallPenalty`` … 255 − the window's bits (193 for 9 × 7).
        public var largePenalty: Int
        /// The intensity step at which P2 is halved (Hirschmüller's adaptation: disparity steps
        /// are likelier at intensity edges): P2 at a step ΔI is max(P1, P2 · s / (s + ΔI)),
        /// rounded. `nil` keeps P2 the same everywhere. 1…255.
        public var penaltyAdaptation: Int?
        /// A winner is kept only when every sum more than one disparity from it is at least
        /// this many percent larger: 0…100 (0 keeps every winner).
        public var uniquenessPercent: Int
        /// The largest difference, in whole disparities, between a pixel's disparity and that
        /// of the right-image pixel it matches (found along the same sums); `nil` turns the
        /// left–right check off. 0…255.
        public var leftRightMaxDifference: Int?
        /// Removes small islands of disparity; `nil` turns the filter off.
        public var speckle: SpeckleFilter?
        /// Threads a match runs on: 1, or 2 (two stages handing rows over; the same
        /// disparities). The default is 2 on a machine with more than one processor.
        public var threads: Int

        /// A configuration; every argument has the default described above.
        public init(minimumDisparity: Int = 0, disparityCount: Int = 128, census: CensusWindow = .nineBySeven,
                    paths: AggregationPaths = .five, smallPenalty: Int = 8, largePenalty: Int = 96,
                    penaltyAdaptation: Int? = 16, uniquenessPercent: Int = 5, leftRightMaxDifference: Int? = 1,
                    speckle: SpeckleFilter? = SpeckleFilter(), threads: Int? = nil) {
            self.minimumDisparity = minimumDisparity
            self.disparityCount = disparityCount
            self.census = census
            self.paths = paths
            self.smallPenalty = smallPenalty
            self.largePenalty = largePenalty
            self.penaltyAdaptation = penaltyAdaptation
            self.uniquenessPercent = uniquenessPercent
            self.leftRightMaxDifference = leftRightMaxDifference
            self.speckle = speckle
            self.threads = threads ?? SemiGlobalMatcher.defaultThreads
        }

        /// P2 at each intensity step 0…255, as the kernels take it.
        var largePenaltyForStep: [UInt16] {
            (0..<256).map { step in
                guard let scale = penaltyAdaptation else { return UInt16(largePenalty) }
                // round(P2 · s / (s + ΔI)) in integers, never below P1.
                let adapted = (2 * largePenalty * scale + (scale + step)) / (2 * (scale + step))
                return UInt16(max(smallPenalty, adapted))
            }
        }

        /// Throws the first value out of its range, naming it.
        func validate(for size: ImageSize) throws(DepthError) {
            func check(_ field: String, _ value: Int, _ range: ClosedRange<Int>, _ rule: String? = nil) throws(DepthError) {
                guard range.contains(value) else {
                    throw .invalidConfiguration(field: field, value: value, allowed: rule ?? "\(range.lowerBound)…\(range.upperBound)")
                }
            }
            try check("minimumDisparity", minimumDisparity, -1024...1024)
            try check("disparityCount", disparityCount, 16...256)
            guard disparityCount % 16 == 0 else {
                throw .invalidConfiguration(field: "disparityCount", value: disparityCount, allowed: "a multiple of 16 in 16…256")
            }
            try check("census.width", census.width, 1...15, "odd, 1…15, width × height − 1 ≤ 64 bits")
            try check("census.height", census.height, 1...15, "odd, 1…15, width × height − 1 ≤ 64 bits")
            guard census.width % 2 == 1, census.height % 2 == 1, census.bits >= 1, census.bits <= 64 else {
                throw .invalidConfiguration(field: "census", value: census.width * census.height,
                                            allowed: "odd sides with width × height − 1 in 1…64 bits (\(census) has \(census.bits))")
            }
            try check("largePenalty", largePenalty, 1...(255 - census.bits), "1…\(255 - census.bits) (255 − the census window's \(census.bits) bits)")
            try check("smallPenalty", smallPenalty, 1...largePenalty, "1…largePenalty (\(largePenalty))")
            if let penaltyAdaptation { try check("penaltyAdaptation", penaltyAdaptation, 1...255) }
            try check("uniquenessPercent", uniquenessPercent, 0...100)
            if let leftRightMaxDifference { try check("leftRightMaxDifference", leftRightMaxDifference, 0...255) }
            if let speckle {
                try check("speckle.maximumRegionSize", speckle.maximumRegionSize, 1...(1 << 24))
                try check("speckle.maximumDifference", speckle.maximumDifference, 0...255)
            }
            try check("threads", threads, 1...2)
            guard size.width >= 1, size.height >= 1 else { throw .emptyImage(size) }
            try check("width", size.width, 1...8192)
            try check("height", size.height, 1...8192)
            // Every disparity searched must be one some pixel can have: −width < d < width.
            guard minimumDisparity + disparityCount - 1 < size.width, minimumDisparity > -size.width else {
                throw .rangeWiderThanImage(minimumDisparity: minimumDisparity, disparityCount: disparityCount, width: size.width)
            }
        }
    }

    /// The census window: the neighbourhood each pixel is compared with (one bit per
    /// neighbour: darker than the centre or not). Census costs ignore gain and offset
    /// differences between the cameras and most of their vignetting, which is why Parallax
    /// matches on it rather than on intensities.
    public struct CensusWindow: Sendable, Equatable, Codable, CustomStringConvertible {
        /// Columns, odd.
        public var width: Int
        /// Rows, odd.
        public var height: Int
        /// A window of `width` × `height` pixels.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
        /// 5 × 5: 24 bits, for small images.
        public static let fiveByFive = CensusWindow(width: 5, height: 5)
        /// 9 × 7: 62 bits (the default).
        public static let nineBySeven = CensusWindow(width: 9, height: 7)
        /// Bits per pixel: every neighbour but the centre.
        public var bits: Int { width * height - 1 }
        /// "9×7".
        public var description: String { "\(width)×\(height)" }
    }

    /// The directions costs are aggregated along. More paths cost more time and give
    /// smoother, denser maps; the first pass's five need only a few rows of memory, the
    /// bottom-up ones the whole image's sums.
    public enum AggregationPaths: String, Sendable, Equatable, Codable, CaseIterable {
        /// Left to right, right to left, top down and bottom up (two passes).
        case four
        /// Left to right, right to left, top down and the two downward diagonals (one pass;
        /// the default).
        case five
        /// All eight: the five and bottom up with its two diagonals (two passes).
        case eight

        /// The kernels' path bits.
        var kernelPaths: UInt32 {
            switch self {
            case .four: return 0b0010_0111
            case .five: return 0b0001_1111
            case .eight: return 0b1111_1111
            }
        }

        /// How many directions.
        public var count: Int { kernelPaths.nonzeroBitCount }
    }

    /// Removes islands: connected regions (4-neighbours whose disparities differ by at most
    /// ``maximumDifference`` pixels) of at most ``maximumRegionSize`` pixels become invalid.
    public struct SpeckleFilter: Sendable, Equatable, Codable {
        /// Regions of this many pixels or fewer are removed.
        public var maximumRegionSize: Int
        /// Neighbours within this many pixels of disparity are in the same region.
        public var maximumDifference: Int
        /// A filter; the defaults remove regions of up to 100 pixels joined by steps of up to 2.
        public init(maximumRegionSize: Int = 100, maximumDifference: Int = 2) {
            self.maximumRegionSize = maximumRegionSize
            self.maximumDifference = maximumDifference
        }
    }
}
