import ArgumentParser
import Foundation
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage

/// The matcher's settings on the command line (`parallax disparity`, `parallax bench disparity`).
struct DisparityOptions: ParsableArguments {
    @Option(name: .customLong("min-disparity"), parsing: .unconditional,
            help: "The smallest disparity searched, in pixels; negative when the convergence plane is inside the scene.")
    var minDisparity: Int = 0

    @Option(name: .long, parsing: .unconditional, help: "How many disparities to search: a multiple of 16 from 16 to 256.")
    var disparities: Int = 128

    @Option(name: .long, help: "Aggregation paths: four, five (one pass, the default) or eight.")
    var paths: SemiGlobalMatcher.AggregationPaths = .five

    @Option(name: .long, help: "The census window, WxH with odd sides (9x7 by default; 5x5 for small images).")
    var census: String = "9x7"

    @Option(name: .customLong("p1"), parsing: .unconditional, help: "Penalty for a one-disparity step along a path, in census bits.")
    var smallPenalty: Int = 8

    @Option(name: .customLong("p2"), parsing: .unconditional, help: "Penalty for a larger step where the intensity is flat, in census bits.")
    var largePenalty: Int = 96

    @Option(name: .customLong("p2-adaptation"), parsing: .unconditional,
            help: "The intensity step at which P2 halves; 0 keeps P2 the same everywhere.")
    var penaltyAdaptation: Int = 16

    @Option(name: .long, parsing: .unconditional, help: "Uniqueness margin in percent (0 keeps every winner).")
    var uniqueness: Int = 5

    @Option(name: .customLong("lr-max-difference"), parsing: .unconditional,
            help: "Left–right check: the largest difference in whole disparities; -1 turns the check off.")
    var leftRightMaxDifference: Int = 1

    @Option(name: .customLong("speckle-size"), parsing: .unconditional, help: "Regions of at most this many pixels are removed; 0 turns the filter off.")
    var speckleSize: Int = 100

    @Option(name: .customLong("speckle-range"), parsing: .unconditional, help: "Neighbours within this many pixels of disparity form one region.")
    var speckleRange: Int = 2

    @Option(name: .long, parsing: .unconditional, help: "Threads per pair: 1 or 2 (default: 2 where there are two processors).")
    var threads: Int?

    @Option(name: .long, help: "Vector instructions for the kernels: baseline, avx2 or avx512 (default: the widest this CPU has).")
    var simd: SIMDLevel?

    func validate() throws {
        guard censusWindow != nil else { throw ValidationError("--census must look like 9x7 (odd sides), got '\(census)'") }
        if let simd, simd > SIMDLevel.supported {
            throw ValidationError("--simd \(simd.rawValue): this CPU has no \(simd) (its widest level is \(SIMDLevel.supported.rawValue))")
        }
    }

    var censusWindow: SemiGlobalMatcher.CensusWindow? {
        let parts = census.lowercased().split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 ? SemiGlobalMatcher.CensusWindow(width: parts[0], height: parts[1]) : nil
    }

    /// The matcher's configuration from these options.
    var configuration: SemiGlobalMatcher.Configuration {
        SemiGlobalMatcher.Configuration(
            minimumDisparity: minDisparity, disparityCount: disparities, census: censusWindow ?? .nineBySeven, paths: paths,
            smallPenalty: smallPenalty, largePenalty: largePenalty, penaltyAdaptation: penaltyAdaptation == 0 ? nil : penaltyAdaptation,
            uniquenessPercent: uniqueness, leftRightMaxDifference: leftRightMaxDifference < 0 ? nil : leftRightMaxDifference,
            speckle: speckleSize == 0 ? nil : .init(maximumRegionSize: speckleSize, maximumDifference: speckleRange),
            threads: threads)
    }

    /// A matcher for `size`, its configuration's errors as command-line errors naming the option.
    func matcher(for size: ImageSize) throws -> SemiGlobalMatcher {
        do {
            return try SemiGlobalMatcher(configuration: configuration, size: size, simdLevel: simd ?? .supported)
        } catch {
            throw CLIError(Self.optionNames(in: "\(error)"))
        }
    }

    /// The library's field names in a message, as the options that set them.
    static func optionNames(in message: String) -> String {
        let names = [("minimumDisparity", "--min-disparity"), ("disparityCount", "--disparities"), ("smallPenalty", "--p1"),
                     ("largePenalty", "--p2"), ("penaltyAdaptation", "--p2-adaptation"), ("uniquenessPercent", "--uniqueness"),
                     ("leftRightMaxDifference", "--lr-max-difference"), ("speckle.maximumRegionSize", "--speckle-size"),
                     ("speckle.maximumDifference", "--speckle-range"), ("census.width", "--census"), ("census.height", "--census"),
                     ("threads", "--threads")]
        var text = message
        for (field, option) in names { text = text.replacingOccurrences(of: "\(field) is", with: "\(option) is") }
        return text
    }
}

extension SemiGlobalMatcher.AggregationPaths: ExpressibleByArgument {}
