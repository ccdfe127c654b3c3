import Foundation
import ParallaxCapture
import ParallaxGeometry
import Testing

@Suite("Synchronized recording")
struct SynchronizedRecordingTests {
    @Test("Pairs of an offset, jittery rig are recorded row by row, each within the skew bound")
    func recordsPairs() throws {
        let directory = NSTemporaryDirectory() + "parallax-pairs-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 32, height: 24))
        let interval = FrameInterval(numerator: 1, denominator: 30)
        let device = SimulatedRigDevice(
            rig: rig, frameInterval: interval,
            leftTiming: SimulatedCameraTiming(jitterNanoseconds: 500_000),
            rightTiming: SimulatedCameraTiming(offsetNanoseconds: 4_000_000, jitterNanoseconds: 500_000),
            pace: .asFastAsPossible)
        try device.prepare()
        let recorder = try EuRoCRecorder(directory: directory)
        let summary = try recordSynchronizedPairs(left: device.left, right: device.right, pairs: 20, into: recorder,
                                                  timeoutSeconds: 20)
        #expect(summary.pairsWritten == 20)
        #expect(summary.pairsSkippedByWriter == 0)
        func stamps(_ camera: Int) throws -> [Int64] {
            try String(contentsOfFile: directory + "/cam\(camera)/data.csv", encoding: .utf8)
                .split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: ",")[0]) }
        }
        let left = try stamps(0), right = try stamps(1)
        #expect(left.count == 20 && right.count == 20)
        // Right − left is the 4 ms offset give or take both jitters (±0.5 ms each).
        #expect(zip(left, right).allSatisfy { abs($1 - $0 - 4_000_000) <= 1_000_000 })
        // Consecutive moments: successive pairs are one frame interval apart, give or take the jitter.
        #expect(zip(left, left.dropFirst()).allSatisfy { abs($1 - $0 - interval.nanoseconds) <= 1_000_000 })
        #expect(summary.statistics.skew.maxNanoseconds <= 5_000_000)
    }
}
