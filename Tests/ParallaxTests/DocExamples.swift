import Parallax
import ParallaxTestSupport

// Every code example of the documentation (README.md, Tests/README.md, the doc comments),
// line for line, in functions the test suite compiles: an example that stops compiling
// fails the build, and `DocExamplesTests` fails when an example and its copy here differ.
// None of them runs (they need cameras or root); the README's main example also runs on the
// simulated rig (`ReadmeExampleTests`).

/// A frame of a recording, as the `OutputSynchronizer` replay example uses one.
struct RecordedFrame: Sendable {
    var side: StereoSide
    var time: Int64
    var number: UInt64
    var file: String
}

/// What the examples hand pixels to.
func use(_ left: ImageView?, _ right: ImageView?) {}

/// `StereoSession`'s doc comment.
func stereoSessionExample(device: StereoDevice, calibration: StereoCalibration) async throws {
    let session = try StereoSession(device: device, calibration: calibration)
    try session.start()
    for try await pair in session.pairs { use(pair.left.image, pair.right.image) }
}

/// `OutputSynchronizer`'s doc comment: a replay that loses no pair.
func outputSynchronizerReplayExample(configuration: SynchronizerConfiguration,
                                     framesInTimestampOrder: [RecordedFrame]) async {
    let synchronizer = OutputSynchronizer<String>(configuration: configuration,
                                                  backPressure: .waitForConsumer, clock: .frameTimestamps)
    let consumer = Task { for await pair in synchronizer.pairs { print(pair.left.payload, pair.right.payload) } }
    for frame in framesInTimestampOrder {
        synchronizer.push(frame.side, timestampNanoseconds: frame.time, sequence: frame.number, payload: frame.file)
    }
    synchronizer.finish()
    await consumer.value
}

/// README, "Stereo device".
func stereoDeviceExample(leftID: String, rightID: String, calibration: StereoCalibration) throws {
    let device = StereoDevice(left: try V4L2Camera.open(stableID: leftID), right: try V4L2Camera.open(stableID: rightID))
    let formats = try device.sharedFormats()            // what both can stream at once, with costs
    try device.configure(StereoConfiguration(format: CaptureFormat(parsing: "800x600@25:YUYV")!,
                                             maximumFramesPerSecond: 15))   // 1.02 at 25 fps, 0.661 capped; ≥ 1.0 is refused
    try device.attach(calibration)                     // frames carry the model for the active format
    let synchronizer = OutputSynchronizer<Frame>(configuration: .init(policy: .approximate))
    try device.start { synchronizer.push($0) }         // StereoOutput → pairs
    try device.setEnabled(false, .right)               // STREAMOFF: its bandwidth is freed; the gap is constituent_disabled
    _ = formats
}

/// `EmulatedWebcam`'s doc comment.
func emulatedWebcamExample() throws {
    let webcam = EmulatedWebcam(EmulatedWebcamSpec(serial: "LEFT-1"))
    try webcam.attach()                       // needs root and the vhci-hcd module
    let node = try webcam.waitForNode()       // /dev/videoN, found in sysfs
    let camera = try V4L2Camera(path: node.devicePath)  // and stream from it
    webcam.detach()
    _ = camera
}

/// Tests/README.md, "The emulated webcam".
func emulatedWebcamSpecExample() throws {
    var spec = EmulatedWebcamSpec(serial: "RIG-LEFT")        // YUYV, MJPEG, GREY; 640×480, 1280×720
    spec.clockDriftPPM = 25                                   // its own clock, 25 ppm fast
    spec.transferJitterNanoseconds = 2_000_000                // a busy bus
    let webcam = EmulatedWebcam(spec)
    try webcam.attach()
    let node = try webcam.waitForNode()                       // /dev/videoN, from sysfs
    let camera = try V4L2Camera(path: node.devicePath)        // … or any V4L2 code of yours
    webcam.inject(.errorBit)                                  // faults: .shortFrame, .oversizedFrame, .stall
    let frames = webcam.truth                                 // each frame: number, exposure start
    webcam.detach()                                           // unplugged; attach() plugs it back
    _ = (camera, frames)
}

/// ParallaxCapture's "First programs": pairs from the simulated rig.
func firstProgramsSimulatedRig() async throws {
    let rig = SimulatedRigDevice(rig: .example(), pace: .asFastAsPossible)
    let session = try StereoSession(device: StereoDevice(simulated: rig), calibration: rig.rig.calibration)
    try session.start()
    var delivered = 0
    for try await pair in session.pairs {
        use(pair.left.image, pair.right.image)
        delivered += 1
        if delivered == 300 { break }
    }
    session.stop()
}

/// ParallaxCapture's "First programs": a calibration from board images.
func firstProgramsCalibration(leftFiles: [String], rightFiles: [String]) throws {
    let (pairs, unpaired) = ImagePairing.pair(left: leftFiles, right: rightFiles)
    let board = CalibrationBoard(columns: 9, rows: 6, squareSize: 25, unit: .millimetre)
    let outcome = try CalibrationPipeline(board: board).run(pairs: pairs, unpaired: unpaired)
    try outcome.result.calibration.write(toFile: "rig.json")
    print(outcome.result.calibration.baseline, outcome.rejected.count)
}

/// ParallaxCapture's "First programs": a recording.
func firstProgramsRecording(session: StereoSession) async throws {
    let recorder = try MCAPRecorder(path: "rec.mcap")
    let summary = try await session.record(into: recorder, pairs: 300, timeoutSeconds: 30)
    if let reason = summary.endedEarly {
        print("\(summary.pairsWritten) pairs: \(reason)")
        if summary.writeError != nil { print(recorder.keepAfterWriteError()) } else { recorder.abandon() }
    }
}

/// `SemiGlobalMatcher`'s doc comment: a session's pair matched into a kept map.
func semiGlobalMatcherExample(pair: StereoPair) throws {
    let matcher = try SemiGlobalMatcher(size: ImageSize(width: 640, height: 480))
    var disparity = DisparityMap()
    guard let left = pair.left.image, let right = pair.right.image else { return }  // a side off
    try matcher.match(left: left, right: right, into: &disparity)
    if let d = disparity[320, 240] { print("centre: \(d) px") }
}

/// ParallaxDepth's overview: a matcher for 64 disparities.
func parallaxDepthOverviewExample(left: ImageView, right: ImageView, size: ImageSize, x: Int, y: Int) throws {
    let matcher = try SemiGlobalMatcher(configuration: .init(disparityCount: 64), size: size)
    var disparity = DisparityMap()
    try matcher.match(left: left, right: right, into: &disparity)
    print(disparity.density, disparity[x, y] ?? .nan)
}
