import Testing
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

@Suite("Chessboard detection")
struct ChessboardDetectorTests {
    @Test(.enabled(if: TestFixtures.openCVSampleAvailable))
    func findsEveryBoardOfOpenCVsSampleLikeOpenCV() throws {
        let reference = try TestFixtures.corners("opencv-sample-corners.json")
        let detector = ChessboardDetector(board: CalibrationBoard(columns: 9, rows: 6, squareSize: 1))
        var sum = 0.0, count = 0, worst = 0.0
        for side in ["left", "right"] {
            for n in TestFixtures.openCVPairNumbers {
                let name = "\(side)\(n < 10 ? "0" : "")\(n).jpg"
                let image = try GrayImage(ImageBuffer(contentsOfFile: TestFixtures.openCVData + "/" + name))
                let result = detector.detect(in: image)
                guard case .success(let detection) = result else {
                    print("FAIL \(name): \(result)")
                    Issue.record("\(name): \(result)")
                    continue
                }
                let expected = try #require(reference[name])
                var imageWorst = 0.0
                for (k, (a, b)) in zip(detection.corners, expected).enumerated() {
                    let d = length(a - b)
                    if d > 0.5 { print("FAIL \(name) corner \(k): \(a) vs \(b)") }
                    sum += d * d; count += 1; worst = max(worst, d); imageWorst = max(imageWorst, d)
                }
                if imageWorst > 0.5 { print("FAIL \(name): worst corner \(imageWorst) px from OpenCV's") }
            }
        }
        let rms = (sum / Double(max(count, 1))).squareRoot()
        print("detector vs OpenCV on its sample: RMS \(rms) px, worst \(worst) px over \(count) corners")
        #expect(count == 26 * 54)
        #expect(rms < 0.15)
        #expect(worst < 0.6)
    }
}
