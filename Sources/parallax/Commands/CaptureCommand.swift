import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry

/// `parallax capture`: records a stereo rig in the EuRoC layout or as a ROS 2 bag (one MCAP
/// file), through a stereo session.
struct CaptureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Record synchronized frame pairs from two cameras (or the simulated rig) in EuRoC layout or as a ROS 2 bag (.mcap).",
        discussion: """
            The two cameras run as one stereo device: one shared format and frame interval, \
            and a USB hardware cost checked before streaming (a cost of 1.0 or more is refused \
            with the formats that fit; see `parallax cost`). Without --format the largest \
            shared format that fits is used.

            Writes DIR/cam0 (left) and DIR/cam1 (right), each with data.csv \
            ("#timestamp [ns],filename") and its images in data/ as PNG (MJPEG frames as JPEG), \
            and, when the calibration is known (--calibration, the simulated rig's, a recording's \
            own), EuRoC's sensor.yaml: T_BS in metres, rate, resolution, intrinsics and lens \
            (the rectified cameras' when the pairs are rectified). \
            Frames are paired by a stereo session (approximate policy, skew at most half a \
            frame interval), so row k of both CSVs is one moment; --independent records each \
            camera's frames on their own instead. With --calibration the pairs are rectified \
            before they are written.

            DIR must be empty or new, so a recording never mixes with an older one; \
            --overwrite replaces the cam0/cam1 folders of an older recording there, once the \
            new recording is complete (a run that fails keeps the older one). Each image is \
            listed in its data.csv as soon as it is written. Ctrl-C, SIGTERM or SIGHUP ends a \
            recording cleanly: the CSVs list exactly the images written; a second one quits at \
            once, and a recording killed outright is tidied by the next capture into DIR.

            With --output NAME.mcap the pairs go into one MCAP file, a ROS 2 bag (profile ros2, CDR \
            messages): sensor_msgs/msg/Image on /stereo/left/image_raw and /stereo/right/image_raw \
            (image_rect when --calibration rectifies them), an unrectified MJPEG frame's JPEG as it \
            came as CompressedImage on …/image_raw/compressed, and with --calibration the \
            CameraInfo of each side on /stereo/left/camera_info and /stereo/right/camera_info; \
            --bag-compression zstd compresses its chunks; the headers' frame_id is stereo_left \
            and stereo_right unless --frame-ids names others. The file appears when the recording \
            ends (Ctrl-C included); an existing one is replaced only with --overwrite. \
            With --bag, --output is a rosbag2 folder instead (metadata.yaml beside NAME_0.mcap, \
            the same messages), which ros2 bag info and ros2 bag play read; it appears whole when \
            the recording ends, and --overwrite replaces only an older bag. \
            --recording plays an EuRoC folder or a bag back as the two cameras, so capture also \
            converts one into the other.

            Examples:
              parallax capture --simulated --frames 60 --output rec
              parallax capture --simulated --frames 60 --output rec.mcap
              parallax capture --simulated --frames 60 --bag --output rec_bag
              parallax capture --left /dev/video0 --right /dev/video2 --format 1280x720@30:YUYV --frames 300 --output rec
            """)

    @OptionGroup var source: StereoSourceArguments

    @Option(name: .customLong("frames"), parsing: .unconditional,
            help: "Frames to record per camera (pairs, unless --independent; default: 60, with --recording every pair it holds).")
    var framesOption: Int?

    /// The frames asked for: `--frames`, else 60 (a recording converted whole: ``playsWholeRecording``).
    var frames: Int { framesOption ?? 60 }
    /// A recording converted to its end: no `--frames`, so its end is no shortfall.
    var playsWholeRecording: Bool { framesOption == nil && source.recording != nil && !independent }

    @Flag(name: .long, help: "Record each camera's frames on their own, without pairing.")
    var independent = false

    @Flag(name: .customLong("board-sweep"), help: "Simulated rig or virtual webcams: the board holds each pose of a calibration sweep in turn, for a recording to calibrate from (calibrate live --recording).")
    var boardSweep = false

    @Option(name: .long, help: "Rectify the pairs with this calibration (Parallax JSON, OpenCV YAML or ROS camera_info) before writing them.")
    var calibration: String?

    @Flag(name: .long, help: "Use --calibration even when it records other cameras than these.")
    var force = false

    @Option(name: .long, help: "Output folder (created if missing; must be empty unless --overwrite), or NAME.mcap for a ROS 2 bag in one MCAP file.")
    var output: String

    @OptionGroup var bagOptions: BagOptions

    @Flag(name: .long, help: "Replace an older recording (its cam0/cam1 folders in the output folder, the .mcap file, or the rosbag2 folder).")
    var overwrite = false

    @Option(name: .long, parsing: .unconditional, help: "Give up after this long, rendering and writing included, e.g. 30s or 2min (default: enough for the frames at the frame rate, plus 10 s).",
            transform: DurationArgument.parse)
    var timeout: DurationArgument?

    func validate() throws {
        guard frames > 0 else { throw ValidationError("--frames must be positive") }
        if boardSweep && !(source.simulated || source.virtual) {
            throw ValidationError("--board-sweep moves the simulated rig's board (--simulated or --virtual); real cameras see the board you hold")
        }
        try timeout?.check("--timeout", atMost: DurationArgument(nanoseconds: 86_400_000_000_000))
        if independent && calibration != nil { throw ValidationError("--calibration rectifies pairs; it cannot be used with --independent") }
        try target.check()
        if independent && writesBag {
            throw ValidationError("--independent records each camera on its own into an EuRoC folder; a .mcap bag holds pairs: "
                                  + "drop --independent, or give --output a folder")
        }
    }

    func run() async throws {
        try target.checkAgainst(inputs: [("--recording", source.recording)])
        // --timeout counts from here: opening a bag (decompressing its chunks) is part of the run.
        let opened = try source.open(movingBoard: boardSweep, decompressionDeadline: timeout.map { monotonicNanoseconds() + $0.nanoseconds })
        let device = opened.device
        let interval = device.activeFormats?.left.frameInterval.seconds ?? 1.0 / 30
        let deadline = timeout?.seconds ?? (playsWholeRecording ? 1e9 : Double(frames) * interval * 2 + 10)
        if independent {
            let recorder = try openFolderRecorder()
            let cleanup = Signals.atExit { recorder.abandon() }
            defer { Signals.removeCleanup(cleanup) }
            let stop = RecordingStop()
            let interruption = Interruption { stop.request() }
            defer { interruption.cancel() }
            try recordEach(device.constituents, into: recorder, deadline: deadline, stop: stop)
            return
        }
        var rectifyWith: StereoCalibration?
        if let calibration, overwrite {
            // --overwrite replaces the older recording's cam folders (a bag folder whole): an
            // input inside them would go too.
            let folder = OutputFiles.resolve(output)
            for file in CalibrationFile.files(of: calibration) {
                let resolved = OutputFiles.resolve(file)
                if bagOptions.bag && resolved.hasPrefix(folder + "/") {
                    throw CLIError("--calibration \(file) is inside \(output), which --overwrite replaces; copy it out of the bag first")
                }
                if resolved.hasPrefix(folder + "/"), let top = resolved.dropFirst(folder.count + 1).split(separator: "/").first,
                   EuRoCRecorder.isCameraFolder(top) {
                    throw CLIError("--calibration \(file) is inside \(output)/\(top), which --overwrite replaces; "
                                   + "copy it out of the recording first")
                }
            }
        }
        if let calibration {
            rectifyWith = try RectificationArguments.loadCalibration(calibration)
        }
        // The calibration is checked (cameras, fit) before the output folder is touched.
        let session = try RectificationArguments.session(device: device, calibration: rectifyWith, file: calibration, force: force)
        let rate = device.activeFormats.map { 1 / $0.left.frameInterval.seconds }
        let recorder = try target.open(session: session, known: opened.knownCalibration, rateHz: rate)
        // A second Ctrl-C (or a signal before the first pair) ends the program: an older
        // recording this one was to replace stays, a new one keeps what its CSVs list.
        let cleanup = Signals.atExit { recorder.abandon() }
        defer { Signals.removeCleanup(cleanup) }
        let interruption = Interruption { session.stop() }
        defer { interruption.cancel() }
        let summary: SessionRecordingSummary
        do {
            summary = try await session.record(into: recorder, pairs: playsWholeRecording ? nil : frames, timeoutSeconds: deadline)
        } catch {
            recorder.abandon()
            throw error
        }
        // A write error (a full disk): what is whole is kept, and the run fails saying so.
        if let error = summary.writeError {
            let kept = recorder.isOpen ? recorder.keepAfterWriteError() : "nothing was kept"
            report(summary, keptOlder: false, bagDropped: false, kept: kept)
            throw CLIError("\(summary.pairsWritten) pairs recorded, then a write error: \(error); \(kept)")
        }
        // Ended early: kept when the user stopped it; otherwise an older recording is kept.
        let keptOlder = recorder.isOpen && !interruption.fired && recorder.replacesOlderRecording
        // A bag is written whole: one that ended early, not by the user, is dropped.
        let bagDropped = recorder.isOpen && !interruption.fired && writesBag
        if recorder.isOpen {
            if interruption.fired {
                do { try recorder.finish() } catch {
                    throw CLIError("\(summary.pairsWritten) pairs recorded, then a write error: \(error); "
                                   + recorder.keepAfterWriteError())
                }
            } else {
                recorder.abandon()
            }
        }
        report(summary, keptOlder: keptOlder, bagDropped: bagDropped)
        if let reason = summary.endedEarly, !interruption.fired {
            let asked = playsWholeRecording ? "pairs, before the end of --recording" : "of \(frames) pairs"
            throw CLIError("the recording ended after \(summary.pairsWritten) \(asked): \(reason)"
                           + (keptOlder ? "; the older recording in \(output) was kept" : "")
                           + (bagDropped && !keptOlder ? "; the bag was not kept" : ""))
        }
    }

    /// Where `--output` records: an EuRoC folder, one MCAP file, or a rosbag2 folder.
    var target: RecordingTarget {
        RecordingTarget(path: output, option: "--output", bagOptions: bagOptions, overwrite: overwrite)
    }

    /// True when `--output` names a ROS 2 bag (`NAME.mcap`, or a rosbag2 folder with `--bag`)
    /// rather than an EuRoC folder.
    var writesBag: Bool { target.writesBag }

    /// The recorder for `--output` as an EuRoC folder (`--independent`).
    private func openFolderRecorder() throws -> EuRoCRecorder { try target.openFolder() }

    private func report(_ summary: SessionRecordingSummary, keptOlder: Bool, bagDropped: Bool, kept: String? = nil) {
        let stats = summary.statistics
        let skew = stats.synchronizer.skew
        print("\(summary.pairsWritten) pairs written; skew p50 \(Self.milliseconds(skew.p50Nanoseconds)), "
              + "max \(Self.milliseconds(skew.maxNanoseconds))")
        for side in StereoSide.allCases {
            let lost = stats.lostByName(side)
            if !lost.isEmpty { print("\(side) frames lost by the camera: " + dropList(lost)) }
            let drops = stats.droppedByName(side)
            if !drops.isEmpty { print("\(side) frames not written: " + dropList(drops)) }
        }
        for event in stats.events where event.name == "disconnected" || event.name == "reconnected" { print(event) }
        if let error = summary.writeError { print("write error: \(error)") }
        if let kept {
            print(kept)
        } else if keptOlder {
            print("not recorded: the older recording in \(output) was kept (these \(summary.pairsWritten) pairs were discarded)")
        } else if bagDropped {
            print("not recorded: \(output) is written whole, and this run ended early (these \(summary.pairsWritten) pairs were discarded)")
        } else if bagOptions.bag {
            print("recorded to \(output) (a rosbag2 folder: metadata.yaml and \((output as NSString).lastPathComponent)_0.mcap; "
                  + "/stereo/left and /stereo/right)")
        } else if writesBag {
            print("recorded to \(output) (a ROS 2 bag: /stereo/left and /stereo/right)")
        } else {
            print("recorded to \(output)/cam0 (left) and \(output)/cam1 (right)")
        }
    }

    private func recordEach(_ devices: PerSide<any CaptureDevice>, into recorder: EuRoCRecorder, deadline: Double,
                            stop: RecordingStop) throws {
        let summaries: PerSide<CameraRecordingSummary>
        do {
            summaries = try recordIndependently(devices, frames: frames, into: recorder, timeoutSeconds: deadline, stop: stop)
        } catch {
            recorder.abandon()
            throw error
        }
        // Short of its frames and not stopped by the user: an older recording is kept.
        let keptOlder = recorder.isOpen && recorder.replacesOlderRecording
        if recorder.isOpen { recorder.abandon() }
        for side in StereoSide.allCases {
            let summary = summaries[side]
            var line = "cam\(side.rawValue) (\(side), \(summary.identity.name)): \(summary.framesWritten) frames"
            let dropped = summary.drops.values.reduce(0, +)
            if dropped > 0 {
                line += ", \(dropped) dropped (" + summary.drops.map { "\($0.value) \($0.key.rawValue)" }.sorted().joined(separator: ", ") + ")"
            }
            if summary.disconnected { line += ", disconnected" }
            if let error = summary.writeError { line += ", write error: \(error)" }
            print(line)
        }
        if keptOlder {
            print("not recorded: the older recording in \(output) was kept (this one was discarded)")
        } else {
            print("recorded to \(output)/cam0 and \(output)/cam1")
        }
        if !stop.isRequested && summaries.both.contains(where: { $0.framesWritten < frames }) {
            throw CLIError("fewer than \(frames) frames per camera within \(Int(deadline)) s"
                           + (keptOlder ? "; the older recording in \(output) was kept" : ""))
        }
    }

    static func milliseconds(_ ns: Int64) -> String { String(format: "%.3f ms", Double(ns) / 1e6) }
}

extension MCAPWriter.Compression: ExpressibleByArgument {}
