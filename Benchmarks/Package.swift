// swift-tools-version: 6.1
//
// Parallax benchmarks, a package of their own so that users of the library
// never build benchmark dependencies. Run from this folder:
//
//     swift package --allow-writing-to-package-directory benchmark
//
// `compare-opencv/run` measures Parallax against OpenCV side by side.

import PackageDescription

let benchmarkDependencies: [Target.Dependency] = [
    .product(name: "Benchmark", package: "package-benchmark"),
    .product(name: "Parallax", package: "Parallax"),
    // HandFedSession and TestPattern, shared with AllocationTests, which assert what these measure.
    .product(name: "ParallaxTestSupport", package: "Parallax"),
]
let benchmarkPlugins: [Target.PluginUsage] = [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]

let package = Package(
    name: "ParallaxBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise named after its folder (a clone or worktree may be called anything).
        .package(name: "Parallax", path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "RectificationBenchmarks", dependencies: benchmarkDependencies,
            path: "Benchmarks/RectificationBenchmarks", plugins: benchmarkPlugins),
        .executableTarget(
            name: "CalibrationBenchmarks", dependencies: benchmarkDependencies,
            path: "Benchmarks/CalibrationBenchmarks", plugins: benchmarkPlugins),
        .executableTarget(
            name: "SynchronizerBenchmarks", dependencies: benchmarkDependencies,
            path: "Benchmarks/SynchronizerBenchmarks", plugins: benchmarkPlugins),
        .executableTarget(
            name: "SessionBenchmarks", dependencies: benchmarkDependencies,
            path: "Benchmarks/SessionBenchmarks", plugins: benchmarkPlugins),
    ]
)
