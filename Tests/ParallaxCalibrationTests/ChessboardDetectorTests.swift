import Foundation
import Testing
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

@Suite("Chessboard detection on OpenCV's sample images")
struct ChessboardDetectorTests {
    static let board = CalibrationBoard(columns: 9, rows: 6, squareSize: 1)


    /// All 26 images, in the same corner order as OpenCV, and close to OpenCV's corners.
    ///
    /// OpenCV's cornerSubPix is not ground truth: on the most oblique views its 11×11 window
    /// reaches over the thin outer squares onto the board's frame and moves corners on the
    /// outer rows by pixels. So the bulk is held tight (median under 0.1 px, 90 % under 0.15 px)
    /// and only the worst few are allowed more.
    @Test func findsEveryBoardInOpenCVOrder() throws {
        try TestFixtures.requireOpenCVSample()
        let reference = try TestFixtures.corners("opencv-sample-corners.json")
        let stored = try TestFixtures.corners("parallax-sample-corners.json")
        let detector = TestFixtures.detector(Self.board)
        var distances: [Double] = []
        var found = 0
        for side in ["left", "right"] {
            for n in TestFixtures.openCVPairNumbers {
                let name = TestFixtures.sampleName(side, n)
                let image = try GrayImage(ImageBuffer(contentsOfFile: TestFixtures.openCVData + "/" + name))
                let result = detector.detect(in: image)
                guard case .success(let detection) = result else {
                    Issue.record("\(name): \(result)")
                    continue
                }
                found += 1
                let expected = try #require(reference[name])
                let mine = try #require(stored[name])
                #expect(detection.corners.count == 54 && expected.count == 54 && mine.count == 54,
                        "\(name): \(detection.corners.count) corners found, \(expected.count) from OpenCV, \(mine.count) stored")
                distances += zip(detection.corners, expected).map { length($0 - $1) }
                // The stored fixture is what this detector finds (to its 10⁻⁴ px rounding).
                for (a, b) in zip(detection.corners, mine) { #expect(length(a - b) < 1e-3) }
            }
        }
        #expect(found == 26)
        #expect(distances.count == 26 * 54)
        distances.sort()
        let median = distances[distances.count / 2]
        let p90 = distances[distances.count * 9 / 10]
        #expect(median < 0.1, "median distance to OpenCV \(median) px")
        #expect(p90 < 0.15, "90th percentile distance to OpenCV \(p90) px")
        // Same ordering: a flipped board would put corners a whole board apart.
        #expect(distances.last ?? .infinity < 8)
    }

    /// A 9x6 board described as 8x6 (or 9x5): the detector says the board in view is larger,
    /// with both sizes (it used to say "the largest grid found has 54 of 48 inner corners").
    @Test func aBoardOfAnotherSizeIsNamedWithBothSizes() throws {
        let image = Self.renderedBoard(square: 30)
        for (columns, rows) in [(8, 6), (9, 5), (18, 3)] {
            let detector = TestFixtures.detector(CalibrationBoard(columns: columns, rows: rows, squareSize: 1))
            let result = detector.detect(in: image)
            guard case .failure(let failure) = result else {
                Issue.record("a 9x6 board was taken for \(columns)x\(rows)")
                continue
            }
            #expect(failure == .boardOfAnotherSize(foundColumns: 9, foundRows: 6, expectedColumns: columns, expectedRows: rows))
            let comparison = columns * rows == 54 ? "another shape than" : "larger than"
            #expect("\(failure)".contains("9x6 inner corners, \(comparison) the \(columns)x\(rows) asked for"), "\(failure)")
        }
    }

    /// A 9×6 board (10 × 7 squares of `square` pixels, turned 7°, anti-aliased by 4×4 samples per
    /// pixel) on a mid-grey 640×480 image.
    static func renderedBoard(square: Double) -> GrayImage {
        var image = GrayImage(width: 640, height: 480)
        let angle = 7.0 * Double.pi / 180, c = cos(angle), s = sin(angle)
        let origin = SIMD2(320 - 5 * square, 240 - 3.5 * square)
        for y in 0..<480 {
            for x in 0..<640 {
                var sum = 0.0
                for sy in 0..<4 {
                    for sx in 0..<4 {
                        // Into board coordinates (in squares) around the image centre.
                        let px = Double(x) + (Double(sx) + 0.5) / 4 - 320, py = Double(y) + (Double(sy) + 0.5) / 4 - 240
                        let bx = (c * px + s * py + 320 - origin.x) / square, by = (-s * px + c * py + 240 - origin.y) / square
                        if bx >= 0, bx < 10, by >= 0, by < 7 {
                            sum += (Int(bx) + Int(by)) % 2 == 0 ? 30 : 225
                        } else {
                            sum += 128
                        }
                    }
                }
                image[x, y] = Float(sum / 16)
            }
        }
        return image
    }

    /// Coarse first: the half-resolution search finds the sample boards and the corners refined
    /// from it agree with a full-resolution search to a fraction of a pixel (the refinement
    /// converges from either start to within its own start dependence).
    @Test func theCoarseSearchFindsWhatTheFullSearchFinds() throws {
        try TestFixtures.requireOpenCVSample()
        var full = TestFixtures.detector(Self.board)
        full.coarseFirst = false
        let coarse = TestFixtures.detector(Self.board)
        var worst = 0.0
        for n in [1, 6, 12] {
            let name = TestFixtures.sampleName("left", n)
            let image = try GrayImage(ImageBuffer(contentsOfFile: TestFixtures.openCVData + "/" + name))
            // The board is found on the halved image alone, so the coarse search is what ran.
            var halfOnly = full
            halfOnly.maximumDetectionWidth = 320
            guard case .success = halfOnly.detect(in: image) else {
                Issue.record("\(name): not found at half resolution")
                continue
            }
            guard case .success(let a) = coarse.detect(in: image), case .success(let b) = full.detect(in: image) else {
                Issue.record("\(name): not found")
                continue
            }
            for (p, q) in zip(a.corners, b.corners) { worst = max(worst, length(p - q)) }
        }
        #expect(worst < 0.1, "coarse-first corners \(worst) px from the full search's")
    }

    /// Squares too small for half resolution (8 px, 4 at half): the coarse search finds nothing and the full
    /// search still finds the board.
    @Test func smallSquaresFallBackToTheFullSearch() throws {
        let image = Self.renderedBoard(square: 8)
        var halfOnly = TestFixtures.detector(Self.board)
        halfOnly.coarseFirst = false
        halfOnly.maximumDetectionWidth = 320
        guard case .failure = halfOnly.detect(in: image) else {
            Issue.record("8 px squares were found at half resolution: the fallback is not exercised")
            return
        }
        guard case .success(let detection) = TestFixtures.detector(Self.board).detect(in: image) else {
            Issue.record("the full search did not find 8 px squares")
            return
        }
        #expect(detection.corners.count == 54)
        // And a board with large squares is found either way.
        guard case .success = halfOnly.detect(in: Self.renderedBoard(square: 40)) else {
            Issue.record("40 px squares not found at half resolution")
            return
        }
    }

    @Test func rejectsAnImageWithoutABoard() {
        // Smooth gradient plus a few blobs: no saddle points.
        var image = GrayImage(width: 160, height: 120)
        for y in 0..<120 { for x in 0..<160 { image[x, y] = Float(x + y) * 0.8 } }
        let result = TestFixtures.detector(Self.board).detect(in: image)
        guard case .failure(.noBoard) = result else {
            Issue.record("expected noBoard, got \(result)")
            return
        }
    }

    @Test func aZeroTimeBudgetEndsDetectionAtOnce() {
        var image = GrayImage(width: 200, height: 150)
        for y in 0..<150 { for x in 0..<200 { image[x, y] = ((x / 20) + (y / 20)) % 2 == 0 ? 30 : 220 } }
        var detector = ChessboardDetector(board: Self.board)
        detector.timeBudgetSeconds = 0
        let result = detector.detect(in: image)
        guard case .failure(.timeBudgetExceeded) = result else {
            Issue.record("expected timeBudgetExceeded, got \(result)")
            return
        }
    }
}
