import Benchmark
import Parallax

// Frames per second through the synchronizer and allocations per frame once it runs.
// One benchmark iteration is one frame: `throughput` reads as frames per second, and
// `mallocCountTotal` counts the allocations of all frames in a run (target: 0).
//
// The streams: two 30 fps cameras, the right one 4 ms late with ±1 ms jitter from a cheap
// deterministic sequence, and one right frame in 50 lost, so pairs, drops and the clock
// estimator all run.

/// Timestamp of frame `k` of a camera (nanoseconds).
@inline(__always)
func timestamp(_ side: StereoSide, _ k: Int) -> Int64 {
    let base = Int64(k) * 33_333_333 + 1_000_000_000
    guard side == .right else { return base }
    let jitter = Int64((k &* 7919) % 2001) - 1000  // ±1 ms in 1 µs steps
    return base + 4_000_000 + jitter * 1000
}

/// Whether frame `k` of `side` reaches the synchronizer.
@inline(__always)
func delivered(_ side: StereoSide, _ k: Int) -> Bool { side == .left || k % 50 != 17 }

let configuration = SynchronizerConfiguration(
    policy: .approximate, frameIntervalNanoseconds: 33_333_333, timestampJitterNanoseconds: 1_000_000,
    clockCorrection: .estimate)

let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .cpuTotal, .mallocCountTotal, .memoryLeaked]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: metrics, scalingFactor: .mega, maxDuration: .seconds(3), maxIterations: 20)

    Benchmark("Synchronizer/core approximate (frames)") { benchmark in
        let core = SynchronizerCore<Int>(configuration: configuration)
        var pairs = 0
        var drops = 0
        // Warm up so the rings and the estimator window are in steady state.
        var k = 0
        for _ in 0..<10_000 {
            for side in StereoSide.allCases where delivered(side, k) {
                core.push(side, timestampNanoseconds: timestamp(side, k), sequence: UInt64(k), payload: k, now: timestamp(side, k)) { _ in }
            }
            k += 1
        }
        benchmark.startMeasurement()
        var side = StereoSide.left
        for _ in benchmark.scaledIterations {
            if delivered(side, k) {
                let t = timestamp(side, k)
                core.push(side, timestampNanoseconds: t, sequence: UInt64(k), payload: k, now: t) { event in
                    if case .pair = event { pairs &+= 1 } else { drops &+= 1 }
                }
            }
            if side == .right { k += 1 }
            side = side.opposite
        }
        benchmark.stopMeasurement()
        blackHole(pairs)
        blackHole(drops)
    }

    Benchmark("Synchronizer/OutputSynchronizer push with callback (frames)") { benchmark in
        let synchronizer = OutputSynchronizer<Int>(
            configuration: configuration, pairHandler: { blackHole($0.left.payload) }, dropHandler: { _, _ in })
        var k = 0
        for _ in 0..<10_000 {
            for side in StereoSide.allCases where delivered(side, k) {
                synchronizer.push(side, timestampNanoseconds: timestamp(side, k), sequence: UInt64(k), payload: k)
            }
            k += 1
        }
        benchmark.startMeasurement()
        var side = StereoSide.left
        for _ in benchmark.scaledIterations {
            if delivered(side, k) {
                synchronizer.push(side, timestampNanoseconds: timestamp(side, k), sequence: UInt64(k), payload: k)
            }
            if side == .right { k += 1 }
            side = side.opposite
        }
        benchmark.stopMeasurement()
        blackHole(synchronizer.statistics.pairs)
    }
}
