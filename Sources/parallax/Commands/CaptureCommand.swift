import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry

/// `parallax capture`: records a stereo rig in the EuRoC layout.
struct CaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Record synchronized frame pairs from two cameras (or the simulated rig) in EuRoC layout.",
        discussion: """
            The two cameras run as one stereo device: one shared format and frame interval, \
            and a USB hardware cost checked before streaming (a cost of 1.0 or more is refused \
            with the formats that fit; see `parallax cost`). Without --format the largest \
            shared format that fits is used.

            Writes DIR/cam0 (left) and DIR/cam1 (right), each with data.csv \
            ("#timestamp [ns],filename") and its images in data/ as PNG (MJPEG frames as JPEG). \
            Frames are paired by the output synchronizer (approximate policy, skew at most half a \
            frame interval), so row k of both CSVs is one moment; --independent records each \
            camera's frames on their own instead.

            Examples:
              parallax capture --simulated --frames 60 --output rec
              parallax capture --left /dev/video0 --right /dev/video2 --format 1280x720@30:YUYV --frames 300 --output rec
            """)

    @Flag(name: .long, help: "Record the simulated rig (no hardware needed).")
    var simulated = false

    @Option(name: .long, help: "Left camera: a device node (/dev/video0) or a stable identity from `parallax devices`.")
    var left: String?

    @Option(name: .long, help: "Right camera: a device node or a stable identity.")
    var right: String?

    @Option(name: .long, help: "Format WxH@FPS:FOURCC, e.g. 1280x720@30:YUYV (FOURCC defaults to YUYV).")
    var format: FormatArgument?

    @Option(name: .customLong("max-fps"), help: "A frame-rate cap: never more than this many pairs per second (lowers the USB cost).")
    var maxFPS: Double?

    @Option(name: .long, help: "Simulated image size WxH.")
    var size: String = "640x480"

    @Option(name: .long, help: "Frames to record per camera (pairs, unless --independent).")
    var frames: Int = 60

    @Flag(name: .long, help: "Record each camera's frames on their own, without pairing.")
    var independent = false

    @Option(name: .long, help: "Output folder (created if missing).")
    var output: String

    @Flag(name: .long, help: "Simulated rig: deliver frames at their real times instead of as fast as possible.")
    var realTime = false

    @Option(name: .long, help: "Give up after this many seconds (default: enough for the frames at the frame rate, plus 10 s).")
    var timeout: Double?

    func validate() throws {
        guard frames > 0 else { throw ValidationError("--frames must be positive") }
        if simulated {
            guard left == nil, right == nil else { throw ValidationError("--simulated records the simulated rig; drop --left/--right") }
            guard ImageSize(parsing: size) != nil else { throw ValidationError("--size must look like 640x480") }
        } else {
            guard left != nil, right != nil else {
                throw ValidationError("give --left and --right camera devices, or --simulated (see `parallax devices`)")
            }
        }
        if let maxFPS, !(maxFPS > 0 && maxFPS.isFinite) { throw ValidationError("--max-fps must be a positive number") }
    }

    func run() throws {
        let requested = format?.format
        let device: StereoDevice
        let chosen: CaptureFormat
        if simulated {
            let imageSize = ImageSize(parsing: size) ?? ImageSize(width: 640, height: 480)
            let pixel = requested?.pixelFormat ?? .gray8
            let rig = SimulatedRigDevice(rig: .example(size: imageSize),
                                         frameInterval: requested?.frameInterval ?? FrameInterval(numerator: 1, denominator: 30),
                                         pixelFormat: pixel, pace: realTime ? .realTime : .asFastAsPossible)
            device = StereoDevice(simulated: rig)
            chosen = CaptureFormat(fourCC: CaptureFormat.fourCC(of: pixel) ?? .grey, size: imageSize,
                                   frameInterval: requested?.frameInterval ?? FrameInterval(numerator: 1, denominator: 30))
        } else {
            device = StereoDevice(left: try Self.openCamera(left ?? ""), right: try Self.openCamera(right ?? ""))
            if let requested {
                chosen = requested
            } else if let preferred = try device.preferredFormat() {
                chosen = preferred.format
                print("format: \(preferred) (the largest shared format that fits; choose another with --format)")
            } else {
                throw ValidationError("the two cameras share no uncompressed format that fits the USB bandwidth; "
                                      + "see `parallax devices --pairs` and pass --format")
            }
        }
        let configured = try device.configure(StereoConfiguration(format: chosen, maximumFramesPerSecond: maxFPS))
        if let cost = device.hardwareCost, !cost.streams.isEmpty {
            print("hardware cost \(String(format: "%.3f", cost.cost)) (\(cost.explanation))")
        }
        if configured.format != chosen { print("drivers set \(configured)") }
        let interval = configured.format.frameInterval.seconds
        let deadline = timeout ?? (Double(frames) * interval * 2 + 10)
        let recorder = try EuRoCRecorder(directory: output, cameraCount: 2)
        if independent {
            try recordEach(device.constituents.both, into: recorder, deadline: deadline)
        } else {
            try recordPairs(device, into: recorder, deadline: deadline)
        }
    }

    private func recordPairs(_ device: StereoDevice, into recorder: EuRoCRecorder, deadline: Double) throws {
        let summary = try recordSynchronizedPairs(from: device, pairs: frames, into: recorder, timeoutSeconds: deadline)
        let stats = summary.statistics
        print("\(summary.pairsWritten) pairs written; skew p50 \(Self.milliseconds(stats.skew.p50Nanoseconds)), "
              + "max \(Self.milliseconds(stats.skew.maxNanoseconds))")
        for reason in FrameDropReason.allCases {
            let l = stats.drops(.left, reason: reason), r = stats.drops(.right, reason: reason)
            if l + r > 0 { print("unpaired (\(reason)): left \(l), right \(r)") }
        }
        if summary.deviceDrops.left + summary.deviceDrops.right > 0 {
            print("lost by the cameras: left \(summary.deviceDrops.left), right \(summary.deviceDrops.right)")
        }
        for side in StereoSide.allCases where summary.disconnected[side] { print("cam\(side.rawValue) (\(side)) disconnected") }
        if summary.pairsSkippedByWriter > 0 { print("pairs skipped while the disk caught up: \(summary.pairsSkippedByWriter)") }
        if let error = summary.writeError { print("write error: \(error)") }
        print("recorded to \(output)/cam0 (left) and \(output)/cam1 (right)")
        if summary.pairsWritten < frames {
            throw ValidationError("fewer than \(frames) pairs within \(Int(deadline)) s")
        }
    }

    private func recordEach(_ devices: [any CaptureDevice], into recorder: EuRoCRecorder, deadline: Double) throws {
        let summaries = try recordIndependently(devices, frames: frames, into: recorder, timeoutSeconds: deadline)
        for (index, summary) in summaries.enumerated() {
            var line = "cam\(index) (\(index == 0 ? "left" : "right"), \(summary.identity.name)): \(summary.framesWritten) frames"
            let dropped = summary.drops.values.reduce(0, +)
            if dropped > 0 {
                line += ", \(dropped) dropped (" + summary.drops.map { "\($0.value) \($0.key.rawValue)" }.sorted().joined(separator: ", ") + ")"
            }
            if summary.disconnected { line += ", disconnected" }
            if let error = summary.writeError { line += ", write error: \(error)" }
            print(line)
        }
        print("recorded to \(output)/cam0 and \(output)/cam1")
        if summaries.contains(where: { $0.framesWritten < frames }) {
            throw ValidationError("fewer than \(frames) frames per camera within \(Int(deadline)) s")
        }
    }

    static func milliseconds(_ ns: Int64) -> String { String(format: "%.3f ms", Double(ns) / 1e6) }

    /// Opens a node path or a stable identity, with its USB location from discovery (for
    /// the hardware cost).
    static func openCamera(_ name: String) throws -> V4L2Camera {
        if name.hasPrefix("/") {
            let found = V4L2Discovery().cameras().first { $0.devicePath == name }
            return try V4L2Camera(path: name, stableID: found?.identity.stableID, usb: found?.usb)
        }
        return try V4L2Camera.open(stableID: name)
    }
}
