import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

@Suite("EuRoC recorder and recorded-folder device")
struct RecordingTests {
    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "parallax-recording-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("A recording plays back with the same timestamps and pixels")
    func roundTrip() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 32, height: 24))
        let device = SimulatedRigDevice(rig: rig, rightTiming: SimulatedCameraTiming(offsetNanoseconds: 1_000_000),
                                        pace: .asFastAsPossible)
        let recorder = try EuRoCRecorder(directory: directory)
        let summaries = try recordIndependently(device.cameras.map { $0 }, frames: 5, into: recorder, timeoutSeconds: 10)
        #expect(summaries.map(\.framesWritten) == PerSide(repeating: 5))
        let csv = try String(contentsOfFile: directory + "/cam1/data.csv", encoding: .utf8)
        #expect(csv.hasPrefix("#timestamp [ns],filename\n"))
        #expect(csv.split(separator: "\n").count == 6)

        let playback = try RecordedFolderDevice(directory: directory, side: .right)
        #expect(playback.entries.count == 5)
        #expect(playback.activeFormat?.size == ImageSize(width: 32, height: 24))
        #expect(playback.activeFormat?.fourCC == .grey)
        let collector = FrameCollector()
        try playback.start(collector.handler)
        #expect(collector.waitForEvent(timeoutSeconds: 10) { $0 == .stopped } != nil)
        playback.stop()
        let frames = collector.frames
        #expect(frames.count == 5)
        let expected = try rig.render(.right)
        #expect(frames.allSatisfy { $0.copyImage() == expected })
        let stamps = frames.map(\.timestampNanoseconds)
        #expect(stamps == playback.entries.map(\.timestampNanoseconds))
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $1 - $0 == FrameInterval(numerator: 1, denominator: 30).nanoseconds })
    }

    /// README: "the simulated rig and recordings cost nothing" (no USB bus is involved).
    @Test("A recording played back as a stereo device costs nothing")
    func recordingCostsNothing() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 32, height: 24))
        let recorder = try EuRoCRecorder(directory: directory)
        _ = try recordIndependently(SimulatedRigDevice(rig: rig, pace: .asFastAsPossible).cameras.map { $0 }, frames: 3,
                                    into: recorder, timeoutSeconds: 10)
        let device = try StereoDevice(recording: directory)
        let format = try #require(try device.preferredFormat())
        #expect(format.cost.cost == 0 && format.cost.runs)
        #expect(device.cost(of: StereoConfiguration(format: format.format)).cost == 0)
    }

    @Test("A malformed CSV line is an error naming the file and the line")
    func malformedCSV() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/cam0/data", withIntermediateDirectories: true)
        try "#timestamp [ns],filename\n100,a.png\nnot-a-number,b.png\n".write(toFile: directory + "/cam0/data.csv",
                                                                           atomically: true, encoding: .utf8)
        #expect {
            _ = try RecordedFolderDevice(directory: directory, side: .left)
        } throws: { error in
            guard case CaptureError.recording(let path, let reason) = error else { return false }
            return path.hasSuffix("cam0/data.csv") && reason.contains("line 3")
        }
    }

    @Test("A missing recording is an error naming data.csv")
    func missingRecording() {
        #expect {
            _ = try RecordedFolderDevice(directory: "/nonexistent-parallax", side: .left)
        } throws: { error in
            guard case CaptureError.recording(let path, _) = error else { return false }
            return path == "/nonexistent-parallax/cam0/data.csv"
        }
    }
}
