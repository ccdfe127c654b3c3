import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// Why a live capture stopped (the `stop_reason` of `--json`).
enum LiveStopReason: String, Sendable {
    /// Coverage, the number of pairs and the projection uncertainty all reached their targets.
    case targetsReached = "targets_reached"
    /// `--pairs N` pairs were taken.
    case pairLimit = "pair_limit"
    /// Enter, Ctrl-C or SIGTERM.
    case user
    /// `--time-limit` passed first.
    case timeLimit = "time_limit"
    /// The source stopped delivering (a recording ended, a camera vanished for good).
    case streamEnded = "stream_ended"
}

/// What a live capture took: the still pairs saved as image files, their corners, and why it stopped.
struct LiveCapture {
    /// The saved pairs, in the order taken.
    var pairs: [ImagePairing.Pair]
    /// Each saved image's corners (detected on the averaged still), by path.
    var cornerList: CornerList
    /// Why the capture stopped.
    var stopReason: LiveStopReason
    /// The source's own calibration (the simulated rig's truth), if it has one.
    var truth: StereoCalibration?
    /// Pairs the session delivered while capturing.
    var pairsSeen: Int
    /// Seconds of capturing.
    var seconds: Double
    /// The stable identities of the two cameras, recorded in the calibration.
    var cameras: PerSide<String>
}

/// The live capture's targets and limits, from the command line.
struct LiveTargets {
    /// Stop after this many pairs (`--pairs`), whatever the coverage.
    var pairLimit: Int?
    /// Pairs needed before the targets can be declared reached.
    var minimumPairs = 12
    /// The worst projection uncertainty (centre and corners, both cameras) to reach, in pixels.
    var uncertaintyPixels: Double
    /// Give up capturing after this many seconds and calibrate what was taken.
    var timeLimitSeconds: Double
}

/// `parallax calibrate live` (also spelled `calibrate --live`): guided capture from a running
/// stereo device, then a rig's calibration of the pairs taken.
///
/// Every pair streamed is searched for the board (within an eighth of `--time-budget`; the
/// left first, the right only when the left view is worth taking). Once the board has been still for three pairs and its view
/// adds coverage (``CaptureCoverage``), a ``StillQuality/quality`` still pair is taken
/// (8 pairs averaged, while streaming goes on) and kept when the corners of every pair in
/// the average stayed put and the averaged pair shows the board on both sides. Progress
/// (coverage bars, pairs taken, the current fit's RMS and uncertainty) goes to stderr.
struct CalibrateLiveCommand: AsyncParsableCommand, StereoCalibrationCommand {
    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "Calibrate a stereo rig from a running stereo device (also spelled `parallax calibrate --live`).",
        discussion: """
            The pairs come from a running stereo device (--simulated, --virtual, or --left DEV --right DEV): \
            hold the board still in different places, distances and angles; a still pair (8 frames averaged) \
            is taken whenever the view adds coverage. Progress (coverage of position, size and skew, pairs \
            taken, the current RMS and projection uncertainty) goes to stderr. The capture stops when \
            coverage, at least 12 pairs and --uncertainty-target are reached, after --pairs N pairs, at \
            --time-limit, or on Enter / Ctrl-C; the pairs are saved (--save-pairs, with their corners) and \
            calibrated as files would be. The simulated rig's board moves through a sweep by itself (the \
            virtual webcams show the same rig, the board held at the sweep's poses in turn, in any format \
            they offer, MJPG included), and --json then compares the result with the rig's truth \
            (truth_errors).

            Examples:
              parallax calibrate live --simulated --output rig.json --json
              parallax calibrate live --virtual --format 1280x720@30:MJPG --output rig.json --json
              parallax calibrate live --left /dev/video0 --right /dev/video2 --board 9x6 --square 25mm
            """)

    @OptionGroup(title: "Cameras") var source: StereoSourceArguments

    @Option(name: .customLong("pairs"), parsing: .unconditional, help: "Stop after taking this many pairs.")
    var pairLimit: Int?

    @Option(name: .customLong("uncertainty-target"), parsing: .unconditional,
            help: "Stop once the projection uncertainty (worst direction, image centre and corners, both cameras) is at most this many pixels, with coverage reached and at least 12 pairs.")
    var uncertaintyTarget: Double = 1

    @Option(name: .customLong("time-limit"), help: "Stop capturing after this long and calibrate what was taken (e.g. 5min).",
            transform: DurationArgument.parse)
    var timeLimit = DurationArgument(nanoseconds: 300_000_000_000)

    @Option(name: .customLong("save-pairs"), help: "The new folder for the pairs taken and their corners (default: beside --output, named after it with -pairs).")
    var savePairs: String?

    @OptionGroup(title: "Board") var boardOptions: CalibrationBoardOptions
    @OptionGroup(title: "Fit") var fit: CalibrationFitOptions
    @OptionGroup(title: "A rig's fit") var stereo: StereoFitOptions
    @OptionGroup(title: "Outputs") var outputs: CalibrationOutputOptions

    /// The pairs' corners are detected as they are taken, never read from a list.
    var cornersIn: String? { nil }

    func validate() throws {
        // The simulated rig and the virtual webcams show the rig's own board.
        if !source.simulated && !source.virtual {
            try boardOptions.requireBoard(" for the board you will show the cameras")
        }
        if let pairLimit, pairLimit < 3 { throw ValidationError("--pairs must be at least 3, got \(pairLimit)") }
        guard uncertaintyTarget > 0, uncertaintyTarget.isFinite else {
            throw ValidationError("--uncertainty-target must be a positive number of pixels, got \(uncertaintyTarget)")
        }
        try timeLimit.check("--time-limit", atMost: DurationArgument(nanoseconds: 86_400_000_000_000))
    }

    func run() async throws {
        let (start, target) = try beginCalibration()
        try await runLive(target: target, start: start)
    }

    /// Checks the outputs, captures, saves the pairs, then calibrates them as files.
    func runLive(target: CalibrationBoard, start: ContinuousClock.Instant) async throws {
        let directory = savePairs ?? ((outputs.output as NSString).deletingPathExtension + "-pairs")
        try OutputFiles.check(outputs: stereoOutputs + [("--save-pairs", directory + "/corners.json")],
                              inputs: calibrationInputs)
        if let existing = try? FileManager.default.contentsOfDirectory(atPath: directory), !existing.isEmpty {
            throw CLIError("--save-pairs \(directory) already holds \(existing.count) files; choose a new folder (nothing is overwritten)")
        }
        let reference = try stereo.against.map { try RectificationArguments.loadCalibration($0) }
        let initial = try stereo.intrinsics.map { try RectificationArguments.loadCalibration($0) }
        try checkHeldLenses(initial)
        let targets = LiveTargets(pairLimit: pairLimit, uncertaintyPixels: uncertaintyTarget, timeLimitSeconds: timeLimit.seconds)
        let capture = try await captureLive(target: target, directory: directory, targets: targets,
                                            calibrator: stereoPipeline(target: target).stereoCalibrator(fixed: .none))
        CalibrateCommand.log("capture stopped (\(capture.stopReason.rawValue)) after \(String(format: "%.1f", capture.seconds)) s: "
                 + "\(capture.pairs.count) pairs taken of \(capture.pairsSeen) streamed")
        guard capture.pairs.count >= 3 else {
            throw CLIError("the capture took \(capture.pairs.count) pairs before it stopped (\(capture.stopReason.rawValue)); "
                           + "at least 3 are needed. Hold the board still for about a second in each place, whole on both "
                           + "cameras, and move it between places")
        }
        try calibrateStereo(target: target, pairs: capture.pairs, unpaired: [], cornerList: capture.cornerList,
                            reference: reference, initial: initial, start: start, live: capture)
    }


    /// The detection time allowed per streamed image: an eighth of `--time-budget` (0.25 s by
    /// default), so the stream keeps moving.
    var liveDetectionBudgetSeconds: Double { boardOptions.timeBudget.seconds / 8 }

    /// Streams from the source, takes still pairs until a stop, and saves them (PNG) into
    /// `directory`, which is created only when the capture ends (written first under a
    /// temporary name beside it).
    func captureLive(target: CalibrationBoard, directory: String, targets: LiveTargets,
                     calibrator: StereoCalibrator) async throws -> LiveCapture {
        let opened = try source.open(quiet: outputs.json, movingBoard: true, noise: source.simulated ? 2 : 0)
        let session = try StereoSession(device: opened.device)
        let folder = try LivePairFolder(directory: directory)
        let stops = LiveStops(session: session, timeLimitSeconds: targets.timeLimitSeconds)
        defer { stops.end() }

        try session.start()
        defer { session.stop() }  // also when saving a pair fails
        CalibrateCommand.log("live capture from \(opened.device.constituents.both.map(\.identity.name).joined(separator: " + ")): "
                 + "hold the \(target) board still in different places, distances and angles"
                 + (stops.stopsOnEnter ? "; Enter stops and calibrates" : ""))

        var detector = ChessboardDetector(board: target)
        detector.timeBudgetSeconds = liveDetectionBudgetSeconds
        var judge = StillPairJudge(target: target, detector: detector)
        let pending = Locked<Result<StillPair, StereoSessionError>?>(nil)
        var stillInFlight = false
        var pairsSeen = 0
        var fit: (rms: Double, worstSigma: Double)?
        let status = LiveStatus.statusLine()
        let started = ContinuousClock.now
        func elapsed() -> Double { (ContinuousClock.now - started).seconds }
        func showStatus() -> String {
            LiveStatus.line(taken: folder.pairs.count, total: targets.pairLimit, coverage: judge.coverage, fit: fit, seconds: elapsed())
        }

        /// Keeps a finished still the judge accepts, then fits what was taken once coverage is there.
        func take(_ still: StillPair) throws {
            let accepted: StillPairJudge.Accepted
            switch try judge.judge(still) {
            case .setAside(let why):
                status.note("still pair set aside: \(why)")
                return
            case .ignored:
                return
            case .accepted(let a):
                accepted = a
            }
            try folder.save(accepted)
            judge.coverage.add(accepted.measures)
            status.note(String(format: "took pair %d (%d averaged): x %.2f y %.2f size %.2f skew %.2f", folder.pairs.count,
                               still.pairsAveraged, accepted.measures.x, accepted.measures.y, accepted.measures.size,
                               accepted.measures.skew))
            if judge.coverage.isComplete && folder.pairs.count >= targets.minimumPairs,
               let result = try? calibrator.calibrate(pairs: folder.views, size: accepted.gray[0].size), let u = result.uncertainty {
                let sigmas = [u.leftProjection.center, u.rightProjection.center] + u.leftProjection.corners + u.rightProjection.corners
                let worst = sigmas.contains { !$0.isFinite } ? Double.infinity : (sigmas.max() ?? .infinity)
                fit = (result.rms, worst)
                if worst <= targets.uncertaintyPixels { stops.request(.targetsReached) }
            }
            if let limit = targets.pairLimit, folder.pairs.count >= limit { stops.request(.pairLimit) }
        }

        for try await pair in session.pairs {
            pairsSeen += 1
            if stops.reason != nil { break }
            if stillInFlight, let result = pending.withLock({ p in defer { p = nil }; return p }) {
                stillInFlight = false
                if case .success(let still) = result { try take(still) }
            }
            if stops.reason != nil { break }
            if judge.startsAStill(after: pair, canStart: !stillInFlight) {
                stillInFlight = true
                Task.detached {
                    let result: Result<StillPair, StereoSessionError>
                    do throws(StereoSessionError) {
                        result = .success(try await session.captureStillPair(quality: .quality))
                    } catch { result = .failure(error) }
                    pending.withLock { $0 = result }
                }
            }
            status.show(showStatus())
        }
        session.stop()
        status.finish(showStatus())
        let reason = stops.reason ?? .streamEnded

        // The capture is kept even when too little was taken to calibrate: the user's pictures.
        let list = try folder.commit(target: target, source: "live capture")
        try writeCornerFile(list, target: target, directory: directory)
        CalibrateCommand.log("saved \(folder.pairs.count) pairs in \(directory)/ (with corners.json: recalibrate them with "
                 + "--left '\(directory)/left*.png' --right '\(directory)/right*.png' --corners-in \(directory)/corners.json)")
        return LiveCapture(pairs: folder.pairs, cornerList: list, stopReason: reason, truth: opened.knownCalibration,
                           pairsSeen: pairsSeen, seconds: elapsed(), cameras: opened.device.identities.map(\.stableID))
    }

    /// Writes the capture's corners as `corners.json` in `directory` (the `--corners-out` format).
    private func writeCornerFile(_ list: CornerList, target: CalibrationBoard, directory: String) throws {
        var corners: [String: [SIMD2<Double>]] = [:], sizes: [String: ImageSize] = [:]
        for (path, entry) in list.entries {
            let name = (path as NSString).lastPathComponent
            if let c = entry.corners { corners[name] = c }
            if let s = entry.size { sizes[name] = s }
        }
        try OutputFiles.writeAll([((directory as NSString).appendingPathComponent("corners.json"),
                                   cornersJSON(corners, sizes: sizes, target: target))])
    }
}

/// What ends a live capture, whichever comes first: Ctrl-C, SIGTERM or SIGHUP, Enter at a
/// terminal, `--time-limit`, or the capture itself (targets reached, `--pairs`). The first
/// reason is kept and stops the session.
final class LiveStops: Sendable {
    private let stop = Locked<LiveStopReason?>(nil)
    private let session: StereoSession
    private let watchdog: Task<Void, Never>
    private let interruption: Locked<Interruption?> = Locked(nil)
    /// True when standard input is a terminal, where Enter stops the capture.
    let stopsOnEnter = isatty(STDIN_FILENO) != 0

    init(session: StereoSession, timeLimitSeconds: Double) {
        self.session = session
        let (stop, stopsOnEnter) = (self.stop, self.stopsOnEnter)
        let request: @Sendable (LiveStopReason) -> Void = { Self.request($0, stop: stop, session: session) }
        watchdog = Task.detached {
            try? await Task.sleep(nanoseconds: UInt64(min(timeLimitSeconds, 1e9) * 1e9))
            if !Task.isCancelled { request(.timeLimit) }
        }
        interruption.withLock { $0 = Interruption { request(.user) } }
        if stopsOnEnter {
            Thread.detachNewThread { if readLine() != nil { request(.user) } }
        }
    }

    /// Why the capture stopped, once it did.
    var reason: LiveStopReason? { stop.withLock { $0 } }

    /// Stops the capture for `reason`, unless it already stopped for another.
    func request(_ reason: LiveStopReason) { Self.request(reason, stop: stop, session: session) }

    private static func request(_ reason: LiveStopReason, stop: Locked<LiveStopReason?>, session: StereoSession) {
        let first = stop.withLock { current in
            if current == nil { current = reason; return true }
            return false
        }
        if first { session.stop() }
    }

    /// Back to the program's default signal handling; the time limit no longer applies.
    func end() {
        watchdog.cancel()
        interruption.withLock { $0?.cancel(); $0 = nil }
    }
}

/// Decides which pairs start a still and which finished stills are kept: the board still for
/// three pairs and adding coverage to start one; kept when nothing moved during its average
/// and the averaged pair shows the whole board on both sides.
struct StillPairJudge {
    let target: CalibrationBoard
    let detector: ChessboardDetector
    /// The views taken so far.
    var coverage = CaptureCoverage()
    private var stillness = BoardStillness()
    /// The left corners of the last 64 pairs, by sequence number.
    private var recent: [(sequence: UInt64, corners: [SIMD2<Double>]?)] = []

    /// A still worth keeping: its gray images, the corners found on them, and its view's measures.
    struct Accepted {
        var gray: [ImageBuffer]
        var corners: [[SIMD2<Double>]]
        var measures: BoardViewMeasures
    }

    /// The judgement of a finished still.
    enum Verdict {
        case accepted(Accepted)
        /// Set aside, with the reason in words.
        case setAside(String)
        /// Sound, but a view the pairs taken already cover (not worth a word).
        case ignored
    }

    init(target: CalibrationBoard, detector: ChessboardDetector) {
        self.target = target
        self.detector = detector
    }

    private func detect(_ image: ImageView?) -> (corners: [SIMD2<Double>], size: ImageSize)? {
        guard let image, let gray = try? GrayImage(ImageBuffer(copying: image)),
              case .success(let found) = detector.detect(in: gray) else { return nil }
        return (found.corners, gray.size)
    }

    /// Follows the board in a streamed pair (every pair, so a still's pairs can be checked
    /// later); true when a still should start now, which is asked only when `canStart`.
    mutating func startsAStill(after pair: StereoPair, canStart: Bool) -> Bool {
        let left = detect(pair.left.image)
        stillness.observe(left?.corners)
        recent.append((pair.left.sequence, left?.corners))
        if recent.count > 64 { recent.removeFirst(recent.count - 64) }
        guard canStart, stillness.isStill, let left,
              let measures = BoardViewMeasures(corners: left.corners, columns: target.columns, rows: target.rows, imageSize: left.size),
              coverage.adds(measures) else { return false }
        return detect(pair.right.image) != nil
    }

    /// Judges a finished still against the corners seen while it was averaged.
    func judge(_ still: StillPair) throws -> Verdict {
        let moved = Verdict.setAside("the board moved while it was averaged")
        guard still.pairsAveraged >= 4, !still.motionDetected else { return moved }
        let during = recent.filter { $0.sequence >= still.first.left.sequence }.prefix(still.pairsAveraged)
        guard let reference = during.first?.corners, during.allSatisfy({ entry in
            entry.corners.map { BoardStillness.largestMovement(reference, $0) <= stillness.tolerancePixels } ?? false
        }) else { return moved }
        let gray = try StereoSide.allCases.map { side in try still.images[side].converted(to: .gray8) }
        var found: [[SIMD2<Double>]] = []
        for image in gray {
            guard case .success(let d) = detector.detect(in: try GrayImage(image)) else {
                return .setAside("the averaged \(found.isEmpty ? "left" : "right") image shows no whole board")
            }
            found.append(d.corners)
        }
        guard let measures = BoardViewMeasures(corners: found[0], columns: target.columns, rows: target.rows,
                                               imageSize: gray[0].size), coverage.adds(measures) else { return .ignored }
        return .accepted(Accepted(gray: gray, corners: found, measures: measures))
    }
}

/// The folder a live capture saves its pairs in: written under a temporary name beside
/// `directory` and renamed to it when the capture ends (removed if it never does).
final class LivePairFolder {
    let directory: String
    private let staging: String
    private var committed = false
    /// The pairs saved, by their final paths, in the order taken.
    private(set) var pairs: [ImagePairing.Pair] = []
    private var entries: [String: CornerList.Entry] = [:]

    init(directory: String) throws {
        self.directory = directory
        staging = directory + ".partial-\(getpid())"
        try? FileManager.default.removeItem(atPath: staging)
        do {
            try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        } catch {
            throw CLIError("--save-pairs: cannot create \(staging): \(error.localizedDescription)")
        }
    }

    deinit { if !committed { try? FileManager.default.removeItem(atPath: staging) } }

    /// The saved pairs as calibration views (their corners).
    var views: [StereoView] {
        pairs.map { pair in
            StereoView(left: CalibrationView(name: pair.left, corners: entries[pair.left]?.corners ?? []),
                       right: CalibrationView(name: pair.right, corners: entries[pair.right]?.corners ?? []))
        }
    }

    /// Writes an accepted still's gray images as `leftNNN.png` and `rightNNN.png`.
    func save(_ still: StillPairJudge.Accepted) throws {
        let names = StereoSide.allCases.map { String(format: "%@%03d.png", $0.description, pairs.count) }
        for (image, name) in zip(still.gray, names) {
            do { try image.write(toFile: (staging as NSString).appendingPathComponent(name)) } catch {
                throw CLIError("--save-pairs: \(error)")
            }
        }
        let final = names.map { (directory as NSString).appendingPathComponent($0) }
        pairs.append(ImagePairing.Pair(left: final[0], right: final[1]))
        entries[final[0]] = CornerList.Entry(corners: still.corners[0], size: still.gray[0].size)
        entries[final[1]] = CornerList.Entry(corners: still.corners[1], size: still.gray[1].size)
    }

    /// Renames the folder into place and returns its corner list.
    func commit(target: CalibrationBoard, source: String) throws -> CornerList {
        if FileManager.default.fileExists(atPath: directory) {
            if (try? FileManager.default.contentsOfDirectory(atPath: directory))?.isEmpty == true {
                try? FileManager.default.removeItem(atPath: directory)
            } else {
                committed = true  // the pictures stay where they are
                throw CLIError("--save-pairs \(directory) appeared while capturing; the pairs are kept in \(staging)")
            }
        }
        do {
            try FileManager.default.moveItem(atPath: staging, toPath: directory)
        } catch {
            throw CLIError("--save-pairs: cannot rename \(staging) to \(directory): \(error.localizedDescription)")
        }
        committed = true
        return CornerList(entries: entries, board: (target.columns, target.rows), source: source)
    }
}

/// The live capture's status text: coverage bars, pairs taken, the current fit. Shown
/// through the commands' ``StatusLine``: in place on a terminal twice a second, otherwise a
/// line every five seconds, and every note (a pair taken, a still set aside) on its own line.
enum LiveStatus {
    /// A status line for the live capture.
    static func statusLine() -> StatusLine { StatusLine(terminalInterval: .milliseconds(500), logInterval: .seconds(5)) }

    /// The text: seconds, pairs taken (of the limit), a bar per coverage measure, and the fit
    /// (RMS, worst projection σ) once there is one.
    static func line(taken: Int, total: Int?, coverage: CaptureCoverage, fit: (rms: Double, worstSigma: Double)?,
                     seconds: Double) -> String {
        let bars = zip(BoardViewMeasures.names, coverage.progress).map { name, p in
            let filled = Int((p * 8).rounded(.down))
            return "\(name) " + String(repeating: "█", count: filled) + String(repeating: "░", count: 8 - filled)
                + String(format: " %3d%%", Int((p * 100).rounded(.down)))
        }
        var text = String(format: "%5.1f s  pairs %d", seconds, taken) + (total.map { "/\($0)" } ?? "") + "  " + bars.joined(separator: "  ")
        if let fit {
            text += String(format: "  rms %.3f px  σ ≤ %.2f px", fit.rms, fit.worstSigma)
        }
        return text
    }
}
