import Benchmark
import Parallax
import ParallaxTestSupport

// Pairs per second through a whole StereoSession (device → synchronizer → rectifier →
// callback) and allocations per pair once it runs. One benchmark iteration is one pair:
// `mallocCountTotal` counts the allocations of every pair in a run (target: 0).
//
// The frames come from two hand-fed cameras (`HandFedSession` in ParallaxTestSupport, which
// AllocationTests asserts 0 allocations on): they are made before the measurement (the
// `Frame` a camera makes per buffer is the device's cost, not the session's), then handed to
// the session one left/right pair at a time; the next pair waits until the callback got the
// previous one. Images are 160×120 gray, rectified with the simulated rig's calibration into
// the session's reused buffers.

/// One session for every run, so that no run measures another's start or teardown
/// (threads exiting, buffers freed) on the side; warmed up so that pools, plans and pressure
/// windows are in their steady state.
let fixture: HandFedSession = {
    guard let made = try? HandFedSession(onPair: { pair in blackHole(pair.left.image) }) else {
        fatalError("the benchmark session could not be made")
    }
    made.run(made.frames(2_000))
    return made
}()

/// The same over two MJPEG cameras: JPEGs of the two views (quality 90, 4:2:0), decoded by
/// the stereo device into I420 as they are handed over, then paired and rectified. The
/// frames are handed over as batches the fixture lets go of pair by pair, as a camera does
/// (a decoded frame holds a pooled buffer until it is freed).
let mjpegFixture: HandFedSession = {
    guard let made = try? HandFedSession(mjpeg: true, onPair: { pair in blackHole(pair.left.image) }) else {
        fatalError("the MJPEG benchmark session could not be made")
    }
    made.run(made.batch(1_000))
    return made
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .cpuTotal, .mallocCountTotal],
                                           scalingFactor: .kilo, maxDuration: .seconds(3), maxIterations: 10)

    Benchmark("Session/pairs rectified through a session with a callback (pairs)") { benchmark in
        let batch = fixture.frames(benchmark.scaledIterations.count)
        benchmark.startMeasurement()
        fixture.run(batch)
        benchmark.stopMeasurement()
        blackHole(fixture.session.statistics.pairsDelivered)
    }

    Benchmark("Session/MJPEG pairs decoded and rectified through a session with a callback (pairs)") { benchmark in
        let batch = mjpegFixture.batch(benchmark.scaledIterations.count)
        benchmark.startMeasurement()
        mjpegFixture.run(batch)
        benchmark.stopMeasurement()
        blackHole(mjpegFixture.session.statistics.pairsDelivered)
    }
}
