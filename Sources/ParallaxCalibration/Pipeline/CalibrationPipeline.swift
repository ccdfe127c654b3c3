import ParallaxGeometry
import ParallaxImage

/// Image files in, stereo calibration out: reads each pair, detects the board
/// on both sides, sets aside pairs that cannot be used (with the reason and the
/// file names), then runs ``StereoCalibrator`` on the rest.
public struct CalibrationPipeline: Sendable {
    /// The board in every image.
    public var board: CalibrationBoard
    /// The lens model to fit.
    public var model: LensModelKind
    /// Which cameras to hold fixed (their values come from `leftCamera` / `rightCamera` in ``run(pairs:unpaired:leftCamera:rightCamera:cornerList:progress:)``).
    public var fixed: FixedIntrinsics
    /// Detection time budget per image, in seconds.
    public var timeBudgetSeconds: Double = 2
    /// The loss on each corner's error (Huber at 2 px by default; `.squared` is OpenCV's plain least squares).
    public var loss: RobustLoss = .huber(threshold: 2)
    /// Whether views and single corners that do not fit are set aside (see
    /// ``StereoCalibrator/outlierFactor`` and ``StereoCalibrator/rejectCorners``); with `false`
    /// every corner of every usable pair is solved, as OpenCV's `stereoCalibrate` does.
    public var rejectOutliers = true

    /// A pipeline for `board`, `model` and `fixed`.
    public init(board: CalibrationBoard, model: LensModelKind = .brown5, fixed: FixedIntrinsics = .none) {
        self.board = board
        self.model = model
        self.fixed = fixed
    }

    /// What the pipeline produced.
    public struct Outcome: Sendable {
        /// The calibration and its figures.
        public var result: StereoCalibrationResult
        /// Every pair that was not used (unreadable, no board, other size, unpaired, outlier), with the reason.
        public var rejected: [RejectedView]
        /// Pairs offered (including unpaired files, each counted once).
        public var pairsTotal: Int
        /// The image size calibrated.
        public var size: ImageSize
        /// Detection seconds per image read.
        public var detectionSeconds: [Double]
        /// Seconds in the stereo solve.
        public var solveSeconds: Double
        /// Corners found per image file.
        public var corners: [String: [SIMD2<Double>]]
        /// The size of each image in ``corners``.
        public var imageSizes: [String: ImageSize]
    }

    /// A stereo calibrator with this pipeline's board, model, loss and outlier rules, holding `fixed`.
    public func stereoCalibrator(fixed: FixedIntrinsics) -> StereoCalibrator {
        var calibrator = StereoCalibrator(target: board, model: model, fixed: fixed)
        calibrator.loss = loss
        if !rejectOutliers {
            (calibrator.outlierFactor, calibrator.outlierFloorPixels) = (.infinity, .infinity)
            calibrator.rejectCorners = false
        }
        return calibrator
    }

    /// The size most images have (the larger one on a tie), or `nil` for none.
    static func mostCommonSize(_ sizes: some Sequence<ImageSize>) -> ImageSize? {
        var counts: [ImageSize: Int] = [:]
        for size in sizes { counts[size, default: 0] += 1 }
        return counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key.area < $1.key.area) }?.key
    }

    /// Why an image gives no usable board: the text follows the image's name.
    struct BoardProblem: Error { var reason: String }

    /// The board's corners and the image size of `path`: from `cornerList` when given, else
    /// read and detected (the detection time is appended to `detectionSeconds`).
    func board(in path: String, detector: ChessboardDetector, cornerList: CornerList?,
               detectionSeconds: inout [Double]) -> Result<(corners: [SIMD2<Double>], size: ImageSize), BoardProblem> {
        if let cornerList {
            return Self.listed(path, in: cornerList, board: board).mapError { BoardProblem(reason: ": " + $0.reason) }
        }
        let image: GrayImage
        do {
            image = try GrayImage(ImageBuffer(contentsOfFile: path))
        } catch {
            return .failure(BoardProblem(reason: " is unreadable: \(error)"))
        }
        let clock = ContinuousClock()
        let start = clock.now
        let result = detector.detect(in: image)
        detectionSeconds.append((clock.now - start).seconds)
        switch result {
        case .success(let d): return .success((d.corners, image.size))
        case .failure(let reason): return .failure(BoardProblem(reason: ": \(reason)"))
        }
    }

    /// What a one-camera run produced.
    public struct MonoOutcome: Sendable {
        /// The calibration and its figures.
        public var result: MonoCalibrationResult
        /// Every image that was not used, with the reason.
        public var rejected: [RejectedView]
        /// Images offered.
        public var imagesTotal: Int
        /// Detection seconds per image read.
        public var detectionSeconds: [Double]
        /// Corners found per image file, and each image's size.
        public var corners: [String: [SIMD2<Double>]]
        /// The size of each image in ``corners``, keyed by the same file path, including images
        /// set aside for having another size.
        public var imageSizes: [String: ImageSize]
    }

    /// Calibrates one camera from `images` (detected, or from `cornerList`); images of another
    /// size than the most common one are set aside. `progress` receives one line per image.
    ///
    /// - Throws: ``CalibrationError/notEnoughViews(usable:needed:rejected:)`` listing every image
    ///   that was set aside when too few remain.
    public func runMono(images: [String], initial: CameraModel? = nil, cornerList: CornerList? = nil,
                        progress: (String) -> Void = { _ in }) throws(CalibrationError) -> MonoOutcome {
        var rejected: [RejectedView] = []
        var detectionSeconds: [Double] = []
        var corners: [String: [SIMD2<Double>]] = [:]
        var imageSizes: [String: ImageSize] = [:]
        var detector = ChessboardDetector(board: board)
        detector.timeBudgetSeconds = timeBudgetSeconds
        for (index, path) in images.enumerated() {
            let prefix = "[\(index + 1)/\(images.count)] \(path):"
            switch board(in: path, detector: detector, cornerList: cornerList, detectionSeconds: &detectionSeconds) {
            case .success(let entry):
                corners[path] = entry.corners
                imageSizes[path] = entry.size
                progress("\(prefix) \(entry.corners.count) corners")
            case .failure(let problem):
                rejected.append(RejectedView(name: path, reason: "image \(path)\(problem.reason)"))
                progress("\(prefix) skipped: image \(path)\(problem.reason)")
            }
        }
        guard let size = Self.mostCommonSize(imageSizes.values) else {
            throw .notEnoughViews(usable: 0, needed: 3, rejected: rejected)
        }
        var views: [CalibrationView] = []
        for path in images {
            guard let found = corners[path], let imageSize = imageSizes[path] else { continue }
            guard imageSize == size else {
                rejected.append(RejectedView(name: path, reason: "image size \(imageSize) differs from the \(size) of the other images"))
                continue
            }
            views.append(CalibrationView(name: path, corners: found))
        }
        progress("solving: \(views.count) images, model \(model.rawValue)")
        var calibrator = MonoCalibrator(target: board, model: model)
        calibrator.loss = loss
        if !rejectOutliers { (calibrator.outlierFactor, calibrator.outlierFloorPixels) = (.infinity, .infinity) }
        let result: MonoCalibrationResult
        do {
            result = try calibrator.calibrate(views: views, size: size, initial: initial)
        } catch {
            if case .notEnoughViews(let usable, let needed, let more) = error {
                throw .notEnoughViews(usable: usable, needed: needed, rejected: rejected + more)
            }
            throw error
        }
        return MonoOutcome(result: result, rejected: rejected + result.rejected, imagesTotal: images.count,
                           detectionSeconds: detectionSeconds, corners: corners, imageSizes: imageSizes)
    }

    /// An image's corners and size from `list`.
    static func listed(_ path: String, in list: CornerList, board: CalibrationBoard)
        -> Result<(corners: [SIMD2<Double>], size: ImageSize), BoardProblem> {
        guard let entry = list.entry(for: path) else {
            return .failure(BoardProblem(reason: "not in the corner list \(list.source)"))
        }
        guard let corners = entry.corners else {
            return .failure(BoardProblem(reason: "no full board in the corner list \(list.source)"))
        }
        guard corners.count == board.cornerCount else {
            return .failure(BoardProblem(reason: "\(corners.count) corners in \(list.source), the \(board.columns)x\(board.rows) board has \(board.cornerCount)"))
        }
        if let size = entry.size { return .success((corners, size)) }
        do {
            return .success((corners, try ImageBuffer(contentsOfFile: path).size))
        } catch {
            return .failure(BoardProblem(reason: "its size is not in \(list.source) and the image is unreadable: \(error)"))
        }
    }

    /// A pair's detection, on the way to the solver.
    private struct Detected {
        var pair: ImagePairing.Pair
        var size: ImageSize
        var left: [SIMD2<Double>]
        var right: [SIMD2<Double>]
    }

    /// Runs on `pairs`; `unpaired` files are reported as rejected. `progress` receives one line per pair.
    /// With `cornerList`, each image's corners come from the list instead of the detector (the
    /// image is read only when the list does not give its size).
    ///
    /// - Throws: ``CalibrationError/notEnoughViews(usable:needed:rejected:)`` listing every file that
    ///   was set aside when too few pairs remain.
    public func run(pairs: [ImagePairing.Pair], unpaired: [RejectedView] = [],
                    leftCamera: CameraModel? = nil, rightCamera: CameraModel? = nil, cornerList: CornerList? = nil,
                    progress: (String) -> Void = { _ in }) throws(CalibrationError) -> Outcome {
        var rejected = unpaired
        var detected: [Detected] = []
        var detectionSeconds: [Double] = []
        var corners: [String: [SIMD2<Double>]] = [:]
        var imageSizes: [String: ImageSize] = [:]
        var detector = ChessboardDetector(board: board)
        detector.timeBudgetSeconds = timeBudgetSeconds
        let clock = ContinuousClock()
        for (index, pair) in pairs.enumerated() {
            let prefix = "[\(index + 1)/\(pairs.count)] \(pair.name):"
            var found: [(corners: [SIMD2<Double>], size: ImageSize)] = []
            var failure: String?
            for (side, path) in [(StereoSide.left, pair.left), (.right, pair.right)] {
                switch board(in: path, detector: detector, cornerList: cornerList, detectionSeconds: &detectionSeconds) {
                case .success(let entry):
                    found.append(entry)
                    corners[path] = entry.corners
                    imageSizes[path] = entry.size
                case .failure(let problem):
                    failure = "\(side) image \(path)\(problem.reason)"
                }
                if failure != nil { break }
            }
            if let failure {
                rejected.append(RejectedView(name: pair.name, reason: failure, left: pair.left, right: pair.right))
                progress("\(prefix) skipped: \(failure)")
                continue
            }
            guard found[0].size == found[1].size else {
                let reason = "the images differ in size: \(pair.left) is \(found[0].size), \(pair.right) is \(found[1].size)"
                rejected.append(RejectedView(name: pair.name, reason: reason, left: pair.left, right: pair.right))
                progress("\(prefix) skipped: \(reason)")
                continue
            }
            detected.append(Detected(pair: pair, size: found[0].size, left: found[0].corners, right: found[1].corners))
            progress("\(prefix) \(found[0].corners.count) + \(found[1].corners.count) corners")
        }
        // Mixed resolutions: calibrate the most common size, name the others.
        guard let size = Self.mostCommonSize(detected.map(\.size)) else {
            throw .notEnoughViews(usable: 0, needed: 3, rejected: rejected)
        }
        var views: [StereoView] = []
        for d in detected {
            if d.size != size {
                rejected.append(RejectedView(name: d.pair.name, reason: "image size \(d.size) differs from the \(size) of the other pairs",
                                             left: d.pair.left, right: d.pair.right))
                continue
            }
            views.append(StereoView(left: CalibrationView(name: d.pair.left, corners: d.left),
                                    right: CalibrationView(name: d.pair.right, corners: d.right)))
        }
        progress("solving: \(views.count) pairs, model \(model.rawValue)")
        let start = clock.now
        let result: StereoCalibrationResult
        do {
            result = try stereoCalibrator(fixed: fixed)
                .calibrate(pairs: views, size: size, leftCamera: leftCamera, rightCamera: rightCamera)
        } catch {
            if case .notEnoughViews(let usable, let needed, let more) = error {
                throw .notEnoughViews(usable: usable, needed: needed, rejected: rejected + more)
            }
            throw error
        }
        let solveSeconds = (clock.now - start).seconds
        rejected += result.rejected
        return Outcome(result: result, rejected: rejected, pairsTotal: pairs.count + unpaired.count, size: size,
                       detectionSeconds: detectionSeconds, solveSeconds: solveSeconds, corners: corners,
                       imageSizes: imageSizes)
    }
}
