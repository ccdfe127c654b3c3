// swift-tools-version: 6.0
//
// libFuzzer targets for Parallax's parsers, a package of their own so that the main
// package never carries sanitizer flags. Each executable defines `LLVMFuzzerTestOneInput`
// and `<module>_main`, the name SwiftPM aliases `main` to, which hands over to libFuzzer's
// driver (`Fuzz.run`); `-parse-as-library` keeps Swift from emitting a main of its own.
// `make fuzz SECONDS=N`, from the repository's root, builds them with
//
//     swift build -c release --package-path Fuzz --scratch-path .build-fuzz \
//         -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
//         -Xcc -fsanitize=fuzzer-no-link -Xcc -fsanitize=address
//
// and runs each for N seconds (`run`). Seeds are in `corpus/<target>/`, dictionaries in
// `dictionaries/`.

import PackageDescription

let parallax: (String) -> Target.Dependency = { .product(name: $0, package: "Parallax") }

let package = Package(
    name: "ParallaxFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise named after its folder (a clone or worktree may be called anything).
        .package(name: "Parallax", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .target(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"]),
        .executableTarget(name: "calibration-json", dependencies: ["FuzzSupport", parallax("ParallaxGeometry"), parallax("ParallaxCalibration")]),
        .executableTarget(name: "opencv-yaml", dependencies: ["FuzzSupport", parallax("ParallaxCalibration")]),
        .executableTarget(name: "ros-camera-info", dependencies: ["FuzzSupport", parallax("ParallaxCalibration")]),
        .executableTarget(name: "corner-list", dependencies: ["FuzzSupport", parallax("ParallaxGeometry"), parallax("ParallaxCalibration")]),
        .executableTarget(name: "euroc-csv", dependencies: ["FuzzSupport", parallax("ParallaxCapture")]),
        .executableTarget(name: "images", dependencies: ["FuzzSupport", parallax("ParallaxImage")]),
        .executableTarget(name: "mcap", dependencies: ["FuzzSupport", parallax("ParallaxCapture")]),
        .executableTarget(
            name: "values",
            dependencies: [
                "FuzzSupport", parallax("ParallaxGeometry"), parallax("ParallaxCapture"), parallax("ParallaxCalibration"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
