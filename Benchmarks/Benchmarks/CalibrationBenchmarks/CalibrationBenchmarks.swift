import Benchmark
import Foundation
import Parallax

/// Corner observations of `count` board poses seen by a synthetic rig (no noise: the solver's
/// cost per iteration does not depend on it, and exact data converges in a fixed number of steps).
func syntheticPairs(count: Int) -> (pairs: [StereoView], board: CalibrationBoard, size: ImageSize) {
    let board = CalibrationBoard(columns: 9, rows: 6, squareSize: 30, unit: "mm")
    let size = ImageSize(width: 640, height: 480)
    let lens = LensDistortion.brownConrady(BrownConrady(k1: -0.2, k2: 0.05))
    let left = CameraModel(size: size, intrinsics: CameraIntrinsics(fx: 520, fy: 518, cx: 321, cy: 239), distortion: lens)
    let right = CameraModel(size: size, intrinsics: CameraIntrinsics(fx: 522, fy: 521, cx: 318, cy: 242), distortion: lens)
    let extrinsics = RigidTransform(rodrigues: SIMD3(0.01, -0.02, 0.003), translation: SIMD3(-60, 0.5, 0.2))
    var pairs: [StereoView] = []
    var k = 0
    while pairs.count < count {
        k += 1
        let t = Double(k)
        let rotation = Matrix3x3(rodrigues: SIMD3(0.5 * sin(1.3 * t), 0.5 * cos(0.7 * t), 0.2 * sin(0.3 * t)))
        let distance = 500 + 120 * sin(0.9 * t)
        let pose = RigidTransform(rotation: rotation, translation: SIMD3(40 * sin(2.1 * t) - 20, 30 * cos(1.7 * t), distance)
                                      - rotation * SIMD3(120, 75, 0))
        let rightPose = extrinsics.composed(after: pose)
        let l = board.objectPoints.compactMap { left.project(pose.apply($0)) }
        let r = board.objectPoints.compactMap { right.project(rightPose.apply($0)) }
        guard l.count == board.cornerCount, r.count == board.cornerCount,
              (l + r).allSatisfy({ $0.x > 5 && $0.y > 5 && $0.x < 635 && $0.y < 475 }) else { continue }
        pairs.append(StereoView(left: CalibrationView(name: "l\(k)", corners: l), right: CalibrationView(name: "r\(k)", corners: r)))
    }
    return (pairs, board, size)
}

let benchmarks: @Sendable () -> Void = {
    // The Schur-complement solver: time should grow about linearly with the number of pairs.
    for count in [20, 100, 300] {
        Benchmark("Calibration/stereo solve, \(count) pairs",
                  configuration: .init(metrics: [.wallClock], maxDuration: .seconds(20), maxIterations: 5)) { benchmark in
            let (pairs, board, size) = syntheticPairs(count: count)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try? StereoCalibrator(target: board, model: .brown5).calibrate(pairs: pairs, size: size))
            }
        }
    }
    // Detection on a rendered 640×480 board.
    Benchmark("Calibration/detect chessboard 640x480",
              configuration: .init(metrics: [.wallClock], maxDuration: .seconds(10), maxIterations: 200)) { benchmark in
        let rig = SimulatedStereoRig.example()
        guard let buffer = try? rig.render(.left), let image = try? GrayImage(buffer) else { return }
        let detector = ChessboardDetector(board: CalibrationBoard(columns: 9, rows: 6, squareSize: 0.025, unit: "m"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(detector.detect(in: image))
        }
    }
}
