import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport

/// Where `capture` and `stream` get their two cameras: the simulated rig, two virtual
/// UVC cameras, two real ones, or a recording (an EuRoC folder or a ROS 2 bag), with one
/// format and an optional frame-rate cap.
struct StereoSourceArguments: ParsableArguments {
    @Flag(name: .long, help: ArgumentHelp("The simulated rig (no hardware): \(SimulatedRigTiming.summary)."))
    var simulated = false

    @Flag(name: .long, help: "Two virtual UVC cameras behind the V4L2 code (no hardware), so unplugging and faults can be tried.")
    var virtual = false

    @Option(name: .long, help: "Left camera: a device node (/dev/video0) or a stable identity from `parallax devices`.")
    var left: String?

    @Option(name: .long, help: "Right camera: a device node or a stable identity.")
    var right: String?

    @Option(name: .long, help: "A recording played back as the two cameras: an EuRoC folder (cam0, cam1), a ROS 2 bag in one MCAP file (NAME.mcap), or a rosbag2 folder holding one (metadata.yaml beside it).")
    var recording: String?

    @OptionGroup var topics: BagTopicOptions

    @Option(name: .long, help: "Format WxH@FPS:FOURCC, e.g. 1280x720@30:YUYV (FOURCC defaults to YUYV). Default: the largest shared format both cameras run at 25 fps or more.",
            transform: FormatArgument.parse)
    var format: FormatArgument?

    @Option(name: .customLong("max-fps"), parsing: .unconditional, help: "A frame-rate cap: never more than this many pairs per second (lowers the USB cost).")
    var maxFPS: Double?

    @Option(name: .long, parsing: .unconditional, help: "Simulated image size WxH (default: the --format's size, else 640x480).")
    var size: String?

    @Option(name: .long, help: "MJPEG frames decode to: ycbcr (the JPEG's own planes, I420 or I422), gray8 (luma only), bgr8 or rgb8.")
    var decode: MJPEGOutput?

    @Option(name: .customLong("corrupt-frames"), parsing: .unconditional, help: "Simulated or virtual MJPEG: this percentage of frames arrives damaged (cut short or with a stray marker); they are dropped as corrupt_frame.")
    var corruptFramesPercent: Double?

    @Flag(name: .long, help: "Simulated rig: deliver frames at their real times instead of as fast as possible.")
    var realTime = false

    func validate() throws {
        let chosen = [simulated, virtual, left != nil || right != nil, recording != nil].filter { $0 }.count
        guard chosen == 1 else {
            throw ValidationError("choose one source: --simulated, --virtual, --left and --right (see `parallax devices`), or --recording")
        }
        if recording == nil && (topics.left != nil || topics.right != nil) {
            throw ValidationError("--left-topic and --right-topic choose a bag's topics: give them with --recording NAME.mcap")
        }
        if recording != nil {
            // A recording plays back what it holds: another format or a cap cannot be honoured.
            if format != nil || maxFPS != nil || decode != nil || corruptFramesPercent != nil || size != nil {
                throw ValidationError("--recording plays back the recorded format and times: --format, --max-fps, --size, --decode "
                                      + "and --corrupt-frames are for cameras")
            }
        }
        if left != nil || right != nil {
            guard left != nil, right != nil else { throw ValidationError("give both --left and --right") }
        }
        if simulated {
            try MemoryLimit.check(try simulatedSize(), bytesPerPixel: 4, copies: 48, option: "--size")
        } else if size != nil {
            throw ValidationError("--size is for --simulated; real and virtual cameras take their size from --format")
        }
        try FormatArgument.checkFrameRateCap(maxFPS)
        let mjpeg = format?.format.fourCC == .mjpeg
        if decode != nil && (format != nil || simulated) && !mjpeg {
            throw ValidationError("--decode is for MJPG formats; \(format?.format.fourCC.description ?? "GREY") frames are not decoded")
        }
        if let corruptFramesPercent {
            guard corruptFramesPercent >= 0, corruptFramesPercent <= 100 else {
                throw ValidationError("--corrupt-frames must be a percentage from 0 to 100")
            }
            guard mjpeg, simulated || virtual else {
                throw ValidationError("--corrupt-frames damages simulated or virtual MJPEG frames: pass --simulated or --virtual "
                                      + "with --format WxH@FPS:MJPG")
            }
        }
    }

    /// The simulated rig's image size: `--size`, else the format's, else 640×480; the two
    /// must agree when both are given.
    func simulatedSize() throws -> ImageSize {
        let formatSize = format?.format.size
        guard let size else { return formatSize ?? ImageSize(width: 640, height: 480) }
        guard let parsed = ImageSize(parsing: size) else { throw ValidationError("--size must look like 640x480") }
        if let formatSize, formatSize != parsed {
            throw ValidationError("--size \(parsed) and --format's \(formatSize) disagree; give one, or the same size in both")
        }
        return parsed
    }

    /// An opened source: the stereo device, configured, and what it knows about itself.
    struct Source {
        let device: StereoDevice
        /// The simulated rig, whose exposures are ground truth.
        var rig: SimulatedRigDevice?
        /// The virtual driver, for unplugging and faults.
        var driver: VirtualUVCDriver?
        /// The virtual cameras' node paths, left and right.
        var virtualPaths = PerSide(left: "/dev/video0", right: "/dev/video2")
        /// The calibration the source knows (the simulated rig's own, in metres).
        var knownCalibration: StereoCalibration?

        /// Whether a pair's two frames were exposed at the same moment, for sources that know
        /// (`nil` for real cameras): the left frame must be the one nearest the right in time,
        /// among the left frames the camera delivered, or within `tolerance` of it: when two left
        /// frames are that close to equally near, the cameras' timestamps (each off by up to its
        /// jitter) cannot tell which is, and either is the same moment as far as anyone can
        /// know. The simulated rig's clocks drift, so its right frames pass through such ties
        /// every few minutes, and a frame it dropped is no candidate.
        func isMismatched(_ pair: StereoPair) -> Bool? {
            func nearest(_ right: Int64, _ left: UInt64, tolerance: Int64 = 0, _ time: (UInt64) -> Int64?) -> Bool {
                let candidates = [left > 0 ? left - 1 : left, left, left + 1].compactMap { k in time(k).map { (k, $0) } }
                guard let chosen = candidates.first(where: { $0.0 == left }),
                      let best = candidates.min(by: { abs($0.1 - right) < abs($1.1 - right) }) else { return false }
                return abs(chosen.1 - right) - abs(best.1 - right) <= tolerance
            }
            if let rig {
                let right = rig.right.exposureTimeNanoseconds(ofFrame: pair.right.sequence)
                // Two left frames on either side of the right one: each distance is off by both
                // the right stamp's jitter (in opposite directions) and its own, so their
                // difference by up to 2 × (left jitter + right jitter).
                let tolerance = 2 * (rig.left.timing.jitterNanoseconds + rig.right.timing.jitterNanoseconds)
                return !nearest(right, pair.left.sequence, tolerance: tolerance) { k in
                    k == pair.left.sequence || rig.left.delivered(frame: k) ? rig.left.exposureTimeNanoseconds(ofFrame: k) : nil
                }
            }
            if let driver {
                // Ground truth is when each frame was due, whatever its stamp says (a camera
                // whose timestamps jump must show up as wrong pairs); frames are found by the
                // driver's own counter, which restarts at 0 when a camera is plugged back.
                // The virtual cameras stamp the end of the frame; the capture code moved the
                // stamps half an exposure back, to mid-exposure.
                func stamp(_ side: StereoPairSide) -> Int64 { side.timestampNanoseconds + (side.exposureNanoseconds ?? 0) / 2 }
                // A frame its own camera never made (a side that reopened the other camera) is
                // a wrong pair too.
                let paths = virtualPaths
                guard let leftSequence = driver.driverSequence(paths.left, timestamp: stamp(pair.left)),
                      let rightSequence = driver.driverSequence(paths.right, timestamp: stamp(pair.right))
                else { return true }
                guard let right = driver.dueTime(paths.right, sequence: rightSequence) else { return nil }
                return !nearest(right, leftSequence) { driver.dueTime(paths.left, sequence: $0) }
            }
            return nil
        }
    }

    /// Opens and configures the source; prints the format and hardware cost chosen. For the
    /// simulated rig, `movingBoard` makes its board follow ``BoardTrajectory/calibrationSweep(for:holdSeconds:moveSeconds:)``
    /// and `noise` adds sensor noise (pixel levels) to each frame.
    /// `decompressionDeadline` (CLOCK_MONOTONIC nanoseconds; a command's `--timeout` from its
    /// start) bounds the time a bag's chunks take to decompress.
    func open(quiet: Bool = false, movingBoard: Bool = false, noise: Double = 0, decompressionDeadline: Int64? = nil) throws -> Source {
        if let recording { return try openRecording(recording, quiet: quiet, decompressionDeadline: decompressionDeadline) }
        let requested = format?.format
        var source: Source
        let corrupt = (corruptFramesPercent ?? 0) / 100
        if simulated {
            let imageSize = try simulatedSize()
            let interval = requested?.frameInterval ?? FrameInterval(numerator: 1, denominator: 30)
            let fourCC = requested?.fourCC ?? .grey
            let geometry = SimulatedStereoRig.example(size: imageSize)
            let rig = SimulatedRigDevice(
                rig: geometry, frameInterval: interval, pixelFormat: requested?.pixelFormat ?? .gray8,
                leftTiming: SimulatedRigTiming.left(noise: noise, corrupt: corrupt),
                rightTiming: SimulatedRigTiming.right(noise: noise, corrupt: corrupt),
                pace: realTime ? .realTime : .asFastAsPossible,
                boardTrajectory: movingBoard ? BoardTrajectory.calibrationSweep(for: geometry) : nil)
            let format = CaptureFormat(fourCC: fourCC, size: imageSize, frameInterval: interval)
            // A code the rig cannot make is refused, never streamed as something else.
            guard try rig.left.supports(format) else {
                throw ValidationError("the simulated rig streams GREY, RGB3, BGR3, YUYV or MJPG (MJPG at an even size), not \(format)")
            }
            source = Source(device: StereoDevice(simulated: rig), rig: rig, knownCalibration: rig.rig.calibration)
            if let decode { try source.device.setMJPEGDecoding(MJPEGDecoding(output: decode)) }
            try source.device.configure(StereoConfiguration(format: format, maximumFramesPerSecond: maxFPS))
            return source
        }
        var pictures: [VirtualPictures] = []
        if virtual {
            // MJPEG frames, and every frame of a live calibration, show the simulated rig's
            // views, so they decode, rectify and pair as a real rig's would (the rig at the
            // format's size is the ground truth); other frames carry their sequence numbers,
            // which is all timing needs. With a moving board, the board holds each pose of
            // the calibration sweep in turn (and jumps to the next when the sweep moves on).
            var specs = Self.virtualCameras
            if requested?.fourCC == .mjpeg || movingBoard {
                let sweep = movingBoard ? BoardTrajectory.calibrationSweep(for: SimulatedStereoRig.example()) : nil
                let epoch = monotonicNanoseconds()
                for (index, side) in [(0, StereoSide.left), (1, StereoSide.right)] where index < specs.count {
                    let views = VirtualPictures(viewCount: sweep?.poses.count ?? 1, viewAt: { due in
                        guard let sweep else { return 0 }
                        let seconds = Double(due - epoch) / 1e9
                        return Int((seconds / (sweep.holdSeconds + sweep.moveSeconds)).rounded(.down)) % sweep.poses.count
                    }, render: { size, view in
                        var rig = SimulatedStereoRig.example(size: size)
                        if let sweep { rig.scene.target?.pose = sweep.poses[view] }
                        return try? rig.render(side, format: .rgb8)
                    })
                    specs[index].pictures = views
                    specs[index].corruptFrameProbability = corrupt
                    pictures.append(views)
                }
            }
            let driver = VirtualUVCDriver(cameras: specs)
            source = Source(device: StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video2")),
                            driver: driver)
        } else {
            source = Source(device: StereoDevice(left: try Self.openCamera(left ?? ""), right: try Self.openCamera(right ?? "")))
        }
        let chosen: CaptureFormat
        if let requested {
            chosen = requested
        } else if let preferred = try source.device.preferredFormat() {
            chosen = preferred.format
            if !quiet {
                FileHandle.standardError.write(Data(("format: \(preferred) (the largest shared format both cameras run at 25 fps "
                                                     + "or more; choose another with --format)\n").utf8))
            }
        } else {
            throw ValidationError("the two cameras share no uncompressed format that fits the USB bandwidth; "
                                  + "see `parallax devices --pairs` and pass --format")
        }
        if let decode {
            // A format chosen for the cameras that is not MJPEG has nothing to decode: refused, not ignored.
            guard chosen.fourCC == .mjpeg else {
                throw ValidationError("--decode is for MJPG formats; the cameras run \(chosen) (pass --format WxH@FPS:MJPG)")
            }
            try source.device.setMJPEGDecoding(MJPEGDecoding(output: decode))
        }
        let configured = try source.device.configure(StereoConfiguration(format: chosen, maximumFramesPerSecond: maxFPS))
        if !quiet, let cost = source.device.hardwareCost, !cost.streams.isEmpty {
            print("hardware cost \(String(format: "%.3f", cost.cost)) (\(cost.explanation))")
        }
        if !quiet, configured.format != chosen { print("drivers set \(configured)") }
        if !pictures.isEmpty {
            // Made now, not by the driver's first frames (which would stall the stream).
            let format = configured.format
            for views in pictures { views.prepare(size: format.size, format: format.pixelFormat) }
            source.knownCalibration = SimulatedStereoRig.example(size: format.size).calibration
        }
        return source
    }

    /// `--recording`: an EuRoC folder, an MCAP bag, or a rosbag2 folder with one MCAP file,
    /// configured at the recorded format (the left camera's; the right must match it).
    private func openRecording(_ path: String, quiet: Bool, decompressionDeadline: Int64?) throws -> Source {
        let pace: SimulationPace = realTime ? .realTime : .asFastAsPossible
        let bagPath = try DatasetInput.bagFile(of: path, option: "--recording")
        let device: StereoDevice
        if let bagPath {
            let bag = try MCAPBag(path: bagPath, decompressionDeadline: decompressionDeadline)
            device = try StereoDevice(bag: bag, topics: try topics.chosen(in: bag, option: "--recording"), pace: pace)
        } else {
            device = try StereoDevice(recording: path, pace: pace)
        }
        guard let format = try device.constituents.left.supportedFormats().first else {
            throw CLIError("--recording \(path): the left camera has no format")
        }
        let configured = try device.configure(StereoConfiguration(format: format))
        // An EuRoC folder's cameras may describe themselves (sensor.yaml): the recording's calibration.
        var known: StereoCalibration?
        if bagPath == nil, CalibrationFile.files(of: path).allSatisfy({ $0.hasSuffix("/sensor.yaml") }) {
            known = try CalibrationFile.load(path).calibration
        }
        if !quiet {
            FileHandle.standardError.write(Data("recording: \(configured.format)\(known == nil ? "" : " (its cameras' sensor.yaml: a calibration)")\n".utf8))
        }
        return Source(device: device, knownCalibration: known)
    }

    /// The cameras `--virtual` plugs in at /dev/video0 (left) and /dev/video2 (right): two
    /// webcams, each on a USB 2.0 bus of its own. Task-local so that a test can run a command
    /// over other virtual cameras (two on one bus, where a format can be over budget).
    @TaskLocal static var virtualCameras: [VirtualCameraSpec] = [
        virtualCamera("/dev/video0", port: "1", seed: 3), virtualCamera("/dev/video2", port: "2", seed: 5),
    ]

    /// A virtual webcam on its own USB 2.0 bus, with a metadata node beside its video node
    /// as uvcvideo makes one (so a replug renumbers as on a real machine).
    static func virtualCamera(_ path: String, port: String, seed: UInt64) -> VirtualCameraSpec {
        var spec = VirtualCameraSpec(path: path, card: "Virtual webcam \(port)", busInfo: "usb-0000:00:14.0-\(port)", seed: seed)
        spec.metadataNode = true
        spec.usb = USBLocation(bus: Int(port) ?? 1, portPath: port, speedMbps: 480, vendorID: "1d6b", productID: "0102",
                               serial: "VIRTUAL\(port)")
        return spec
    }

    /// Opens a node path or a stable identity, with its USB location from discovery (for
    /// the hardware cost).
    /// A name that is a path (absolute, `./…`, or one that exists relative to the working
    /// folder) opens that node; any other name is a stable identity.
    static func openCamera(_ name: String) throws -> V4L2Camera {
        if name.hasPrefix("/") || name.hasPrefix("./") || name.hasPrefix("../") || FileManager.default.fileExists(atPath: name) {
            let path = name.hasPrefix("/") ? name : FileManager.default.currentDirectoryPath + "/" + name
            var info = stat()
            if stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFCHR {
                throw CLIError("\(name): not a camera node (it is a \((info.st_mode & S_IFMT) == S_IFDIR ? "folder" : "file"), "
                               + "not a device); give a node such as /dev/video0 or an identity that `parallax devices` lists")
            }
            let found = V4L2Discovery().cameras().first { $0.devicePath == path }
            return try V4L2Camera(path: path, stableID: found?.identity.stableID, usb: found?.usb)
        }
        let discovery = V4L2Discovery()
        guard discovery.camera(withStableID: name) != nil else {
            throw CLIError("\(name): no camera with that identity is plugged in, and no file of that name is here; "
                           + "give a device node (/dev/video0) or an identity that `parallax devices` lists")
        }
        return try V4L2Camera.open(stableID: name, discovery: discovery)
    }
}

/// Image sizes the machine's memory can hold.
enum MemoryLimit {
    /// The physical memory, in bytes.
    static var physicalBytes: Double { Double(sysconf(Int32(_SC_PHYS_PAGES))) * Double(sysconf(Int32(_SC_PAGESIZE))) }

    /// Refuses `size` when `copies` images of it at `bytesPerPixel` would take more than
    /// half the machine's memory, or a side is beyond 32 768 pixels, saying so.
    static func check(_ size: ImageSize, bytesPerPixel: Int, copies: Int, option: String) throws {
        let bytes = Double(size.width) * Double(size.height) * Double(bytesPerPixel) * Double(copies)
        guard size.width <= 32_768, size.height <= 32_768, bytes <= physicalBytes / 2 else {
            throw ValidationError(String(format: "%@ %@ needs about %.1f GB of images, more than half of this machine's %.1f GB; "
                                         + "use a smaller size (each side at most 32768)",
                                         option, size.description, bytes / 1e9, physicalBytes / 1e9))
        }
    }
}

extension MJPEGOutput: ExpressibleByArgument {}
