import Benchmark
import Parallax

let benchmarks: @Sendable () -> Void = {
    Benchmark("Synchronizer/placeholder") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(RigidTransform.identity)
        }
    }
}
