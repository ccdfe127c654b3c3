import Benchmark
import Parallax

let benchmarks: @Sendable () -> Void = {
    Benchmark("Geometry/identity-compose") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(Matrix3x3.identity * Matrix3x3.identity)
        }
    }
}
