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
