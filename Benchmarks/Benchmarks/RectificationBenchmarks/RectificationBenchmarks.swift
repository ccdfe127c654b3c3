import Benchmark
import Parallax
import ParallaxTestSupport
import Synchronization

// Rectification of one stereo pair (both images, bilinear, all processors)
// for every pixel format at three sizes, and building the maps. The rig is
// StereoCalibration.benchmarkRig, the one `parallax bench` and
// compare-opencv use. Setup (maps, images, reused output buffers) happens
// once per benchmark and outside the measured section, so the malloc
// counters show what a pair costs in steady state: it must be 0, with whole maps
// and with compact maps (which compile their entries during every pair).

let sizes = [ImageSize(width: 640, height: 480), ImageSize(width: 1280, height: 720), ImageSize(width: 1920, height: 1080)]

/// Everything a pair benchmark reuses from run to run.
final class PairState: @unchecked Sendable {
    let rectifier: Rectifier
    let left: ImageBuffer
    let right: ImageBuffer
    var outputLeft: ImageBuffer
    var outputRight: ImageBuffer

    init(size: ImageSize, format: PixelFormat, compactMaps: Bool) throws {
        rectifier = try Rectifier(calibration: .benchmarkRig(size: size), compactMaps: compactMaps)
        try rectifier.prepare(for: format)
        left = try TestPattern.image(format, size: size, seed: 1)
        right = try TestPattern.image(format, size: size, seed: 2)
        outputLeft = try ImageBuffer(format: format, size: rectifier.outputSize)
        outputRight = try ImageBuffer(format: format, size: rectifier.outputSize)
        try rectify()  // first pair: touches every page of the outputs
    }

    func rectify() throws {
        try left.withView { l in
            try right.withView { r in
                try rectifier.rectify(left: l, right: r, into: &outputLeft, &outputRight)
            }
        }
    }
}

/// States built on first use, so the setup cost is paid once per benchmark, not per run.
let states = Mutex<[String: PairState]>([:])

func state(_ size: ImageSize, _ format: PixelFormat, compactMaps: Bool = false) throws -> PairState {
    let key = "\(format.rawValue)-\(size)-\(compactMaps)"
    if let existing = states.withLock({ $0[key] }) { return existing }
    let made = try PairState(size: size, format: format, compactMaps: compactMaps)
    states.withLock { $0[key] = made }
    return made
}

let benchmarks: @Sendable () -> Void = {
    let pairConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .memoryLeaked],
        timeUnits: .microseconds,
        warmupIterations: 3,
        maxDuration: .seconds(2),
        maxIterations: 200,
        thresholds: [.mallocCountTotal: .init(absolute: [.p100: 0])])

    for size in sizes {
        for format in PixelFormat.allCases {
            Benchmark("Rectify pair/\(format.rawValue)/\(size)", configuration: pairConfiguration) { benchmark in
                let pair = try state(size, format)
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    try pair.rectify()
                }
                benchmark.stopMeasurement()
            }
        }
    }

    // Compact maps at the largest size, where they matter.
    for format in PixelFormat.allCases {
        let size = sizes[sizes.count - 1]
        Benchmark("Rectify pair, compact maps/\(format.rawValue)/\(size)", configuration: pairConfiguration) { benchmark in
            let pair = try state(size, format, compactMaps: true)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                try pair.rectify()
            }
            benchmark.stopMeasurement()
        }
    }

    for size in sizes {
        Benchmark("Build maps/\(size)",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident],
                                       timeUnits: .milliseconds, maxDuration: .seconds(3), maxIterations: 10)) { benchmark in
            let calibration = StereoCalibration.benchmarkRig(size: size)
            for _ in benchmark.scaledIterations {
                let rectifier = try Rectifier(calibration: calibration, threads: 1)
                try rectifier.prepare(for: .gray8)
                blackHole(rectifier)
            }
        }
    }
}
