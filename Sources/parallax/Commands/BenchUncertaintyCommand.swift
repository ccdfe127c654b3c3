import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// `parallax bench uncertainty`: whether the calibration's reported standard deviations are
/// honest on rendered images, where the detector's own errors (blur, noise, perspective)
/// and the coverage of the image are part of the test, not just Gaussian noise on corners.
struct BenchUncertaintyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uncertainty",
        abstract: "Check the calibration's reported σ against the true error on rendered stereo sets.",
        discussion: """
            Renders the simulated rig's 9x6 board in the 20 poses of its calibration sweep (full coverage) \
            and in the same poses drawn towards the image centre (poor coverage: the edges and corners see no \
            corner), blurs (σ 0 or 1.5 px) and adds sensor noise (σ 1 or 4 levels), detects the corners and \
            calibrates the stereo rig, --draws times per condition with fresh noise. For each condition it \
            prints the root mean square of (estimate − truth) / reported σ for the four focal lengths and the \
            baseline, and of the projection error over √2 σ of the worst direction at the image centre, the \
            quarter points and two corners (1 = honest; above 1 = σ too small). Build in release mode: it \
            renders 80 images and detects 960.
            """)

    @Option(name: .long, help: "Noise draws per condition.")
    var draws = 6

    @Option(name: .long, help: "Image size WxH of the simulated rig.")
    var size = "640x480"

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard draws >= 1 && draws <= 100 else { throw ValidationError("--draws must be 1…100, got \(draws)") }
        guard let imageSize = ImageSize(parsing: size), imageSize.width >= 160, imageSize.height >= 120 else {
            throw ValidationError("--size must look like 640x480, at least 160x120, got '\(size)'")
        }
        try MemoryLimit.check(imageSize, bytesPerPixel: 8, copies: 160, option: "--size")
    }

    /// One condition of the study.
    struct Condition {
        var noise: Double
        var blur: Double
        var spread: Double
        var label: String { String(format: "noise %.0f, blur %.1f, %@", noise, blur, spread == 1 ? "full coverage" : "centre only") }
    }

    /// What one condition gave: the ratios, and the pairs and RMS of its calibrations.
    struct Outcome {
        var focal: [Double] = [], baseline: [Double] = [], projectionError: [Double] = [], projectionSigma: [Double] = []
        var pairs: [Int] = [], rms: [Double] = []
        var failures: [String] = []

        static func rms(_ v: [Double]) -> Double { v.isEmpty ? .nan : (v.reduce(0) { $0 + $1 * $1 } / Double(v.count)).squareRoot() }
        var focalRatio: Double { Self.rms(focal) }
        var baselineRatio: Double { Self.rms(baseline) }
        var projectionRatio: Double { Self.rms(projectionError) / (2.0.squareRoot() * Self.rms(projectionSigma)) }

        mutating func add(_ other: Outcome) {
            focal += other.focal
            baseline += other.baseline
            projectionError += other.projectionError
            projectionSigma += other.projectionSigma
            pairs += other.pairs
            rms += other.rms
            failures += other.failures
        }
    }

    func run() throws {
        let imageSize = ImageSize(parsing: size) ?? ImageSize(width: 640, height: 480)
        let rig = SimulatedStereoRig.example(size: imageSize)
        let board = CalibrationBoard(columns: 9, rows: 6, squareSize: 0.025, unit: .metre)
        let conditions = [1.0, 0.3].flatMap { spread in
            [0.0, 1.5].flatMap { blur in [1.0, 4.0].map { Condition(noise: $0, blur: blur, spread: spread) } }
        }
        let progress = StatusLine.progress("rendered-set study")
        var renders: [Double: [(left: GrayImage, right: GrayImage)]] = [:]
        for spread in [1.0, 0.3] {
            guard let poses = BoardTrajectory.calibrationSweep(for: rig, spread: spread)?.poses else {
                throw CLIError("the simulated rig has no board")
            }
            renders[spread] = try poses.map { pose in
                var placed = rig
                placed.scene.target?.pose = pose
                return (try GrayImage(placed.render(.left)), try GrayImage(placed.render(.right)))
            }
        }
        var detector = ChessboardDetector(board: board)
        detector.timeBudgetSeconds = 30
        let calibrator = CalibrationPipeline(board: board).stereoCalibrator(fixed: .none)
        var outcomes: [Outcome] = []
        for (index, condition) in conditions.enumerated() {
            let clean: [(left: GrayImage, right: GrayImage)] = (renders[condition.spread] ?? []).map { pair in
                condition.blur > 0 ? (pair.left.gaussianBlurred(sigma: condition.blur), pair.right.gaussianBlurred(sigma: condition.blur)) : pair
            }
            var outcome = Outcome()
            for draw in 0..<draws {
                progress.update(Double(index * draws + draw) / Double(conditions.count * draws), condition.label)
                var random = SeededRandomGenerator(seed: UInt64(1000 * index + draw + 1))
                var views: [StereoView] = []
                for (k, pair) in clean.enumerated() {
                    func noisy(_ image: GrayImage) -> GrayImage {
                        var copy = image
                        for i in copy.pixels.indices {
                            copy.pixels[i] = min(255, max(0, (copy.pixels[i] + Float(condition.noise * random.nextGaussian())).rounded()))
                        }
                        return copy
                    }
                    guard case .success(let l) = detector.detect(in: noisy(pair.left)),
                          case .success(let r) = detector.detect(in: noisy(pair.right)) else { continue }
                    views.append(StereoView(left: CalibrationView(name: "left\(k)", corners: l.corners),
                                            right: CalibrationView(name: "right\(k)", corners: r.corners)))
                }
                do {
                    let result = try calibrator.calibrate(pairs: views, size: imageSize)
                    guard let u = result.uncertainty else {
                        outcome.failures.append("draw \(draw): no covariance")
                        continue
                    }
                    outcome.add(Self.ratios(result, uncertainty: u, truth: rig.calibration))
                } catch {
                    outcome.failures.append("draw \(draw): \(error)")
                }
            }
            outcomes.append(outcome)
        }
        progress.finish()
        var all = Outcome()
        for o in outcomes { all.add(o) }
        if json {
            func figures(_ o: Outcome) -> [(String, JSONValue)] {
                [("focal", .number(o.focalRatio)), ("baseline", .number(o.baselineRatio)), ("projection", .number(o.projectionRatio)),
                 ("pairs_mean", .number(Double(o.pairs.reduce(0, +)) / Double(max(o.pairs.count, 1)))),
                 ("rms_mean", .number(o.rms.reduce(0, +) / Double(max(o.rms.count, 1)))),
                 ("calibrations", .number(Double(o.rms.count))), ("failures", .array(o.failures.map(JSONValue.string)))]
            }
            let rows = zip(conditions, outcomes).map { c, o in
                JSONValue.object(JSONObject([("noise", .number(c.noise)), ("blur", .number(c.blur)),
                                             ("coverage", .string(c.spread == 1 ? "full" : "centre"))] + figures(o)))
            }
            print(JSONValue.object(JSONObject([("draws", .number(Double(draws))), ("conditions", .array(rows)),
                                               ("all", .object(JSONObject(figures(all))))])).serialized())
            return
        }
        print("true error / reported σ, RMS over \(draws) draws per condition (1 = honest; above 1: σ too small)")
        print("condition                               pairs   rms px   focal  baseline  projection")
        for (c, o) in zip(conditions, outcomes) {
            let pairs = Double(o.pairs.reduce(0, +)) / Double(max(o.pairs.count, 1)), rms = o.rms.reduce(0, +) / Double(max(o.rms.count, 1))
            print(c.label.padding(toLength: 38, withPad: " ", startingAt: 0)
                  + String(format: "  %5.1f  %7.3f  %6.2f  %8.2f  %10.2f", pairs, rms, o.focalRatio, o.baselineRatio, o.projectionRatio))
            for f in o.failures { print("  failed: \(f)") }
        }
        print("all".padding(toLength: 38, withPad: " ", startingAt: 0)
              + String(format: "  %5s  %7s  %6.2f  %8.2f  %10.2f", "", "", all.focalRatio, all.baselineRatio, all.projectionRatio))
    }

    /// The normalised errors of one calibration against the rig's truth.
    static func ratios(_ result: StereoCalibrationResult, uncertainty u: StereoUncertainty, truth: StereoCalibration) -> Outcome {
        var o = Outcome()
        let c = result.calibration
        for (estimated, known, sigma) in [(c.left, truth.left, u.left), (c.right, truth.right, u.right)] {
            o.focal.append((estimated.intrinsics.fx - known.intrinsics.fx) / sigma.fx)
            o.focal.append((estimated.intrinsics.fy - known.intrinsics.fy) / sigma.fy)
        }
        // The board's unit is metres, the rig's too.
        o.baseline.append((c.baseline - truth.baseline) / u.baseline)
        for (estimated, known, p) in [(c.left, truth.left, u.leftProjection), (c.right, truth.right, u.rightProjection)] {
            let w = Double(known.size.width - 1), h = Double(known.size.height - 1)
            for pixel in [SIMD2(w / 2, h / 2), SIMD2(w / 4, h / 4), SIMD2(3 * w / 4, 3 * h / 4), SIMD2(0, 0), SIMD2(w, h)] {
                guard let ray = try? known.ray(throughPixel: pixel), let landed = estimated.project(ray) else { continue }
                let sigma = ProjectionUncertainty.sigma(at: pixel, camera: estimated, model: .brown5,
                                                        parameters: LensModelKind.brown5.parameters(of: estimated),
                                                        covariance: p.covariance)
                guard sigma.isFinite else { continue }
                o.projectionError.append(length(landed - pixel))
                o.projectionSigma.append(sigma)
            }
        }
        o.pairs.append(result.pairs.count)
        o.rms.append(result.rms)
        return o
    }
}
