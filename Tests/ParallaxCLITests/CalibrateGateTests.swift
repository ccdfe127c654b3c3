import Foundation
import ParallaxCapture
import ParallaxGeometry
import Testing
@testable import ParallaxCalibration
@testable import parallax

/// `parallax calibrate`'s quality gate and `--json` object, on a solved rig built here (no
/// images): the simulated rig's corners in seven poses of its calibration sweep.
@Suite("calibrate's baseline gate and --json, on a solved rig")
struct CalibrateGateTests {
    /// The simulated rig (320 × 240) seeing its own board in the first 7 poses of its sweep, each
    /// corner moved by a fixed pattern of up to 0.1 px so the fit has residuals and a covariance.
    static func outcome() throws -> CalibrationPipeline.Outcome {
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 320, height: 240))
        let sweep = try #require(BoardTrajectory.calibrationSweep(for: rig))
        let board = CalibrationBoard(columns: 9, rows: 6, squareSize: 0.025, unit: .metre)
        var views: [StereoView] = []
        for (k, pose) in sweep.poses.prefix(7).enumerated() {
            var placed = rig
            placed.scene.target?.pose = pose
            func corners(_ side: StereoSide) throws -> [SIMD2<Double>] {
                let projected = placed.projectedCorners(side)
                let seen = try #require(projected.count == 54 ? projected.compactMap { $0 } : nil, "pose \(k)")
                return seen.enumerated().map { i, c in c + 0.1 * SIMD2(sin(Double(97 * k + 13 * i)), cos(Double(31 * k + 7 * i))) }
            }
            views.append(StereoView(left: CalibrationView(name: "left\(k).png", corners: try corners(.left)),
                                    right: CalibrationView(name: "right\(k).png", corners: try corners(.right))))
        }
        let size = rig.calibration.left.size
        let result = try StereoCalibrator(target: board, model: .brown5).calibrate(pairs: views, size: size)
        return CalibrationPipeline.Outcome(result: result, rejected: [], pairsTotal: views.count, size: size, detectionSeconds: [],
                                           solveSeconds: 0, corners: [:], imageSizes: [:])
    }

    /// Calibration/GUIDE.md: the calibration is not written "when the baseline is under 1 % of the
    /// board's distance". The same fit with its baseline set to 0.99 % and 1.01 % of the median
    /// distance of the board from the left camera (seven poses: the middle one).
    @Test("the baseline gate refuses a baseline of 0.99 % of the median board distance and passes 1.01 %")
    func baselineGateAtOnePercent() throws {
        let result = try Self.outcome().result
        #expect(CalibrateCommand.qualityProblem(result, maxRMS: 1) == nil, "the fit itself: rms \(result.rms) px")
        let distances = result.poses.map { length($0.translation) }.sorted()
        try #require(distances.count == 7)
        let median = distances[3]
        let t = result.calibration.extrinsics.translation
        for (fraction, refused) in [(0.0099, true), (0.0101, false)] {
            var moved = result
            moved.calibration.extrinsics.translation = t / length(t) * (fraction * median)
            let problem = CalibrateCommand.qualityProblem(moved, maxRMS: 1)
            #expect((problem != nil) == refused, "baseline \(fraction * 100) % of \(median) m: \(problem ?? "written")")
            if refused { #expect(problem?.contains("under 1 % of the board's distance") == true) }
        }
    }

    /// Calibration/GUIDE.md: `uncertainty` and `projection_uncertainty_px` are "both `null` when the
    /// fit has no covariance" — present, as null, rather than left out.
    @Test("--json's uncertainty and projection_uncertainty_px are objects with a covariance and both null without one")
    func uncertaintyIsNullWithoutACovariance() throws {
        var outcome = try Self.outcome()
        func summary() -> JSONObject? {
            CalibrateCommand.summary(outcome, unit: .metre, seconds: 1, uncertainty: outcome.result.uncertainty, comparison: nil).object
        }
        let fitted = try #require(summary())
        #expect(fitted["uncertainty"]?.object?["left"] != nil && fitted["projection_uncertainty_px"]?.object?["right"] != nil)
        outcome.result.parameterCovariance = nil
        #expect(outcome.result.uncertainty == nil)
        let bare = try #require(summary())
        #expect(bare["uncertainty"] == .null && bare["projection_uncertainty_px"] == .null, "\(bare)")
        #expect(bare["rms_stereo"]?.number == outcome.result.rms)
    }
}
