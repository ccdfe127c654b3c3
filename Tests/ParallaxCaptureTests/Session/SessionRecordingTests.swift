import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxTestSupport
import Testing

/// Recording as a consumer of the session: whole pairs, the CSVs listing exactly what was
/// written, and never mixed with an older recording.
@Suite("Session recording")
struct SessionRecordingTests {
    static func folder() -> String { NSTemporaryDirectory() + "parallax-session-rec-\(UUID().uuidString)" }

    static func stamps(_ directory: String, _ camera: Int) throws -> [Int64] {
        try String(contentsOfFile: directory + "/cam\(camera)/data.csv", encoding: .utf8)
            .split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: ",")[0]) }
    }

    @Test("pairs of an offset, jittery rig are recorded row by row, each row one moment")
    func recordsPairs() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (_, device) = SessionFixtures.simulated(size: ImageSize(width: 32, height: 24), drops: 0)
        let session = try StereoSession(device: device)
        let summary = try await session.record(into: try EuRoCRecorder(directory: directory), pairs: 20, timeoutSeconds: 20)
        #expect(summary.pairsWritten == 20 && summary.endedEarly == nil && summary.writeError == nil)
        let left = try Self.stamps(directory, 0), right = try Self.stamps(directory, 1)
        #expect(left.count == 20 && right.count == 20)
        // Right − left is the 3 ms offset give or take both jitters (±1 ms each) and the drift.
        #expect(zip(left, right).allSatisfy { abs($1 - $0 - 3_000_000) <= 2_100_000 })
        // Consecutive moments, one frame interval apart give or take the jitter of both
        // timestamps (±1 ms each) and the rounding of the simulated times: nothing lost.
        #expect(zip(left, left.dropFirst()).allSatisfy { abs($1 - $0 - 33_333_333) <= 2_000_010 })
        for camera in 0...1 {
            let images = try FileManager.default.contentsOfDirectory(atPath: directory + "/cam\(camera)/data")
            #expect(images.count == 20)
        }
        #expect(summary.statistics.accountsForEveryFrame(.left) && summary.statistics.pairsInFlight == 0)
    }

    @Test("a recording played back through a session with a slow consumer loses nothing and ends by itself")
    func playbackWaitsForTheConsumer() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (_, device) = SessionFixtures.simulated(size: ImageSize(width: 32, height: 24), drops: 0)
        let recording = try await StereoSession(device: device)
            .record(into: try EuRoCRecorder(directory: directory), pairs: 40, timeoutSeconds: 20)
        #expect(recording.pairsWritten == 40)
        let playback = try StereoSession(device: try StereoDevice(recording: directory))
        #expect(playback.backPressure == .waitForConsumer)
        try playback.start()
        var played: [Int64] = []
        for try await pair in playback.pairs {
            played.append(pair.left.timestampNanoseconds)
            usleep(5_000)  // slower than the folders are read
        }
        let stats = playback.statistics
        print("playback: \(played.count) pairs; drops left \(stats.droppedByName(.left)), right \(stats.droppedByName(.right)); "
              + "events \(stats.events.map(\.description))")
        // The sequence ended by itself at the end of the recording, with every pair.
        #expect(played == (try Self.stamps(directory, 0)))
        #expect(stats.events.last.map { "\($0.kind)" }?.contains("end of stream") == true)
        #expect(stats.sessionDrops[.consumerBehind, default: 0] == 0 && stats.synchronizer.dropped(reason: .queueOverflow) == 0)
        for side in StereoSide.allCases { #expect(stats.frames(side) == 40 && stats.accountsForEveryFrame(side)) }
    }

    @Test("a session stopped mid-recording (Ctrl-C) leaves CSVs that list exactly the images written")
    func stoppedRecordingIsConsistent() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (_, device) = SessionFixtures.simulated(size: ImageSize(width: 32, height: 24), pace: .realTime, drops: 0)
        let session = try StereoSession(device: device)
        let recorder = try EuRoCRecorder(directory: directory)
        // Stopped from elsewhere (as Ctrl-C does) once a few pairs are written; the wait
        // yields its thread (the recording's consumer needs one).
        let stopper = Task { () -> Bool in
            let deadline = ContinuousClock.now + .seconds(600)  // a hang guard
            while recorder.frameCounts.left < 5 && ContinuousClock.now < deadline {
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
            session.stop()
            return recorder.frameCounts.left >= 5
        }
        let summary = try await session.record(into: recorder, pairs: 1000, timeoutSeconds: nil)
        #expect(await stopper.value, "five pairs were written before the stop")
        #expect(summary.pairsWritten >= 5 && summary.pairsWritten < 1000)
        #expect(summary.endedEarly == "stopped")
        for camera in 0...1 {
            let listed = try Self.stamps(directory, camera)
            let images = try FileManager.default.contentsOfDirectory(atPath: directory + "/cam\(camera)/data")
            #expect(listed.count == summary.pairsWritten)
            #expect(Set(images) == Set(listed.map { "\($0).png" }))
        }
    }

    @Test("a disk slower than the cameras: pairs are skipped as consumer_behind, never half-written, every frame accounted for")
    func slowDiskSkipsWholePairs() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Live cameras (virtual UVC, 30 fps, real time) and a disk that takes 100 ms a pair.
        let (_, device) = try SessionFixtures.virtualPair()
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        let session = try StereoSession(device: device, options: options)
        #expect(session.backPressure != .waitForConsumer)
        let recorder = try EuRoCRecorder(directory: directory, beforeWritingPair: { usleep(100_000) })
        let summary = try await session.record(into: recorder, pairs: 10, timeoutSeconds: 120)
        #expect(summary.pairsWritten == 10 && summary.writeError == nil, "\(summary.endedEarly ?? "")")
        let stats = summary.statistics
        let skipped = stats.sessionDrops[.consumerBehind, default: 0]
        print("slow disk: \(summary.pairsWritten) pairs written, \(skipped) skipped by the writer (consumer_behind), "
              + "\(stats.pairsMade) made")
        #expect(skipped > 0)
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side), "\(side): \(stats.droppedByName(side))") }
        #expect(stats.pairsInFlight == 0)
        // The files hold exactly the pairs written, both sides, and the CSV rows name them.
        for camera in 0...1 {
            let listed = try Self.stamps(directory, camera)
            let images = try FileManager.default.contentsOfDirectory(atPath: directory + "/cam\(camera)/data")
            #expect(listed.count == 10)
            #expect(Set(images) == Set(listed.map { "\($0).png" }))
        }
    }

    @Test("a stop request while nothing renders does not cancel the next rendering (a device reused by a new session)")
    func staleStopRequestDoesNotCancelALaterRendering() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (_, device) = SessionFixtures.simulated(size: ImageSize(width: 32, height: 24), drops: 0)
        // Stopped before it ever started: the device is asked to stop while idle.
        try StereoSession(device: device).stop()
        let session = try StereoSession(device: device)
        let summary = try await session.record(into: try EuRoCRecorder(directory: directory), pairs: 5, timeoutSeconds: 20)
        #expect(summary.pairsWritten == 5, "\(summary.endedEarly ?? "")")
    }

    @Test("a folder that is not empty is refused; overwriting replaces only the older recording")
    func neverMixesRecordings() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/cam0/data", withIntermediateDirectories: true)
        try "old".write(toFile: directory + "/cam0/data/1.png", atomically: true, encoding: .utf8)
        try "notes".write(toFile: directory + "/notes.txt", atomically: true, encoding: .utf8)
        do {
            _ = try EuRoCRecorder(directory: directory)
            Issue.record("a non-empty folder was accepted")
        } catch {
            #expect("\(error)".contains("not empty"))
        }
        // The older recording is replaced when the new one finishes, not before; abandoned, it stays.
        let abandoned = try EuRoCRecorder(directory: directory, replacingExisting: true)
        #expect(abandoned.replacesOlderRecording)
        abandoned.abandon()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["cam0", "notes.txt"])
        #expect(FileManager.default.fileExists(atPath: directory + "/cam0/data/1.png"))
        let replacing = try EuRoCRecorder(directory: directory, replacingExisting: true)
        #expect(FileManager.default.fileExists(atPath: directory + "/cam0/data/1.png"))
        try replacing.finish()
        #expect(!FileManager.default.fileExists(atPath: directory + "/cam0/data/1.png"))
        #expect(FileManager.default.fileExists(atPath: directory + "/notes.txt"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["cam0", "cam1", "notes.txt"])
        #expect(try String(contentsOfFile: directory + "/cam0/data.csv", encoding: .utf8) == "#timestamp [ns],filename\n")
    }
}
