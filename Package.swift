// swift-tools-version: 6.1
//
// Parallax: two cameras as one synchronized stereo device.
// One Swift module per layer; see README.md ("Layout") for the map.

import PackageDescription

/// The test targets' Swift settings: no optimisation in any configuration (see "MARK: Tests").
let testSettings: [SwiftSetting] = [.unsafeFlags(["-Onone"], .when(configuration: .release))]

let package = Package(
    name: "Parallax",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Parallax", targets: ["Parallax"]),
        .library(name: "ParallaxGeometry", targets: ["ParallaxGeometry"]),
        .library(name: "ParallaxImage", targets: ["ParallaxImage"]),
        .library(name: "ParallaxCapture", targets: ["ParallaxCapture"]),
        .library(name: "ParallaxDepth", targets: ["ParallaxDepth"]),
        .library(name: "ParallaxCalibration", targets: ["ParallaxCalibration"]),
        .library(name: "ParallaxTestSupport", targets: ["ParallaxTestSupport"]),
        .executable(name: "parallax", targets: ["parallax"]),
    ],
    traits: [
        // `parallax view`: the browser viewer, served by Hummingbird. Only the CLI uses it (the
        // libraries never link a server); builds that do not need it (the sanitizer and
        // allocation builds) pass --disable-default-traits and skip compiling the server.
        .trait(name: "BrowserViewer", description: "The `parallax view` browser viewer (Hummingbird and its WebSocket module)."),
        .default(enabledTraits: ["BrowserViewer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
        // `parallax view` (the BrowserViewer trait): HTTP, WebSocket. Hummingbird's own default
        // traits (swift-configuration, full Foundation) are not needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.24.0", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.14.0"),
        // The viewer's own channel handler (it closes a connection whose request NIO's parser refused).
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        // `make docs`: the DocC catalogs (a plugin only; nothing links it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: C boundary

        /// libv4l2: fixed-argument wrappers for the variadic calls and the VIDIOC_* request values.
        .target(
            name: "CV4L2",
            linkerSettings: [.linkedLibrary("v4l2"), .linkedLibrary("udev")]
        ),
        /// LAPACKE over OpenBLAS.
        .target(
            name: "CLapack",
            linkerSettings: [.linkedLibrary("lapacke"), .linkedLibrary("openblas")]
        ),
        /// Map building, resampling and detection kernels for wider vector instructions than the baseline, chosen at run time
        /// (per-function `target` attributes: no compiler flags, so the package stays usable as
        /// a dependency).
        .target(name: "CRemapKernels"),
        /// The semi-global matcher's kernels, one C body compiled at each vector level (per-function
        /// `target` attributes, as CRemapKernels).
        .target(name: "CDepthKernels"),
        /// libpng and libjpeg-turbo (TurboJPEG for files, its libjpeg API for MJPEG frames).
        .target(
            name: "CImageCodecs",
            linkerSettings: [.linkedLibrary("png16"), .linkedLibrary("turbojpeg"), .linkedLibrary("jpeg")]
        ),

        /// libzstd: the zstd-compressed chunks of MCAP bags.
        .target(name: "CZstd", linkerSettings: [.linkedLibrary("zstd")]),

        // MARK: Library layers

        .target(name: "ParallaxGeometry", dependencies: ["CRemapKernels"]),
        .target(name: "ParallaxImage", dependencies: ["ParallaxGeometry", "CImageCodecs", "CRemapKernels"]),
        .target(name: "ParallaxCapture", dependencies: ["ParallaxGeometry", "ParallaxImage", "CV4L2", "CZstd"]),
        .target(name: "ParallaxDepth", dependencies: ["ParallaxGeometry", "ParallaxImage", "CDepthKernels"]),
        .target(
            name: "ParallaxCalibration",
            dependencies: ["ParallaxGeometry", "ParallaxImage", "CLapack", "CRemapKernels", .product(name: "Yams", package: "Yams")]
        ),
        .target(name: "ParallaxTestSupport", dependencies: ["ParallaxCapture", "ParallaxGeometry", "ParallaxImage", "CV4L2"]),
        .target(
            name: "Parallax",
            dependencies: ["ParallaxGeometry", "ParallaxImage", "ParallaxCapture", "ParallaxCalibration", "ParallaxDepth"]
        ),
        .executableTarget(
            name: "parallax",
            dependencies: [
                "Parallax", "ParallaxTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),  // rosbag2's metadata.yaml, read
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["BrowserViewer"])),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: .when(traits: ["BrowserViewer"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["BrowserViewer"])),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["BrowserViewer"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["BrowserViewer"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["BrowserViewer"])),
            ]
        ),

        // MARK: Tests
        // The tests check; the code they check is what release builds optimise. So even in a
        // release build the test targets compile without optimisation (testSettings), but for
        // ParallaxTests (below): `make test`'s build and the two sanitizer builds spend less,
        // and the code under test (the libraries, ParallaxTestSupport's rig and drivers, the
        // CLI) is what users run.

        .testTarget(name: "ParallaxGeometryTests", dependencies: ["ParallaxGeometry"], resources: [.copy("Fixtures")],
                    swiftSettings: testSettings),
        .testTarget(name: "ParallaxImageTests", dependencies: ["ParallaxImage", "ParallaxGeometry", "CRemapKernels"],
                    swiftSettings: testSettings),
        .testTarget(name: "ParallaxDepthTests", dependencies: ["ParallaxDepth", "ParallaxImage", "ParallaxCapture", "CDepthKernels"],
                    swiftSettings: testSettings),
        .testTarget(name: "ParallaxCaptureTests", dependencies: ["ParallaxCapture", "ParallaxTestSupport"], swiftSettings: testSettings),
        .testTarget(name: "ParallaxCalibrationTests",
                    dependencies: ["ParallaxCalibration", "ParallaxTestSupport", "CRemapKernels", .product(name: "Yams", package: "Yams")],
                    swiftSettings: testSettings),
        .testTarget(name: "ParallaxCLITests", dependencies: ["parallax", "ParallaxGeometry", "ParallaxCalibration", "ParallaxDepth"],
                    swiftSettings: testSettings),
        /// The README's example, compiled against `import Parallax`. Optimised in release builds like
        /// the code under test: its AllocationTests count every allocation in a window that holds
        /// the test's own loop, which at -Onone allocates closure contexts per frame.
        .testTarget(name: "ParallaxTests", dependencies: ["Parallax", "ParallaxTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// MARK: Sanitizer builds
// `make build-tsan` and `make build-asan` set PARALLAX_SANITIZER, and each leaves out what it
// never runs (compiling it under the sanitizer cost CI minutes on two cores):
// - thread: the geometry and calibration suites, which start no thread (single-threaded maths,
//   solves and rendering; `make test` and `make test-asan` run them);
// - address: the command-line tool and its suites. Its own code is safe Swift (no pointer
//   arithmetic of its own: the buffers it hands on are the libraries', which the library
//   suites check under the sanitizer); the thread sanitizer runs its suites.
let unusedUnderSanitizer: Set<String> = switch Context.environment["PARALLAX_SANITIZER"] {
case "thread": ["ParallaxGeometryTests", "ParallaxCalibrationTests"]
case "address": ["parallax", "ParallaxCLITests"]
default: []
}
package.targets.removeAll { unusedUnderSanitizer.contains($0.name) }
package.products.removeAll { unusedUnderSanitizer.contains($0.name) }
