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

/// `parallax calibrate --live`: guided capture from a running stereo device.
///
/// Every pair streamed is searched for the board (within an eighth of `--time-budget`; the
/// left first, the right only when the left view is worth taking). Once the board has been still for three pairs and its view
/// adds coverage (``CaptureCoverage``), a ``StillQuality/quality`` still pair is taken
/// (8 pairs averaged, while streaming goes on) and kept when the corners of every pair in
/// the average stayed put and the averaged pair shows the board on both sides. Progress
/// (coverage bars, pairs taken, the current fit's RMS and uncertainty) goes to stderr.
extension CalibrateCommand {
    /// The stereo source `--live` streams from, parsed from this command's own options.
    func liveSource() throws -> StereoSourceArguments {
        var arguments: [String] = []
        if simulated { arguments.append("--simulated") }
        if virtual { arguments.append("--virtual") }
        if let device = left.first { arguments += ["--left", device] }
        if let device = right.first { arguments += ["--right", device] }
        if let format = liveFormat { arguments += ["--format", format] }
        // The simulated rig's size; other sources take theirs from --format.
        if simulated, let size { arguments += ["--size", size] }
        if realTime { arguments.append("--real-time") }
        do {
            return try StereoSourceArguments.parse(arguments)
        } catch {
            throw ValidationError(StereoSourceArguments.message(for: error))
        }
    }

    /// The detection time allowed per streamed image: an eighth of `--time-budget` (0.25 s by
    /// default), so the stream keeps moving.
    var liveDetectionBudgetSeconds: Double { timeBudget.seconds / 8 }

    /// Streams from the source, takes still pairs until a stop, and saves them (PNG) into
    /// `directory`, which is created only when the capture ends (written first under a
    /// temporary name beside it).
    func captureLive(target: CalibrationBoard, directory: String, targets: LiveTargets,
                     calibrator: StereoCalibrator) async throws -> LiveCapture {
        let source = try liveSource()
        let opened = try source.open(quiet: json, movingBoard: true, noise: simulated ? 2 : 0)
        let session = try StereoSession(device: opened.device)
        let staging = directory + ".partial-\(getpid())"
        try? FileManager.default.removeItem(atPath: staging)
        do {
            try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        } catch {
            throw CLIError("--save-pairs: cannot create \(staging): \(error.localizedDescription)")
        }
        var finished = false
        defer { if !finished { try? FileManager.default.removeItem(atPath: staging) } }

        let stop = Locked<LiveStopReason?>(nil)
        @Sendable func requestStop(_ reason: LiveStopReason) {
            let first = stop.withLock { current in
                if current == nil { current = reason; return true }
                return false
            }
            if first { session.stop() }
        }
        let interruption = Interruption { requestStop(.user) }
        defer { interruption.cancel() }
        if isatty(STDIN_FILENO) != 0 {
            Thread.detachNewThread { if readLine() != nil { requestStop(.user) } }
        }
        let timeLimit = targets.timeLimitSeconds
        let watchdog = Task.detached {
            try? await Task.sleep(nanoseconds: UInt64(timeLimit * 1e9))
            if !Task.isCancelled { requestStop(.timeLimit) }
        }
        defer { watchdog.cancel() }

        try session.start()
        defer { session.stop() }  // also when saving a pair fails
        Self.log("live capture from \(opened.device.constituents.both.map(\.identity.name).joined(separator: " + ")): "
                 + "hold the \(target) board still in different places, distances and angles"
                 + (isatty(STDIN_FILENO) != 0 ? "; Enter stops and calibrates" : ""))

        var detector = ChessboardDetector(board: target)
        detector.timeBudgetSeconds = liveDetectionBudgetSeconds
        var stillness = BoardStillness()
        var coverage = CaptureCoverage()
        var recent: [(sequence: UInt64, corners: [SIMD2<Double>]?)] = []
        let pending = Locked<Result<StillPair, StereoSessionError>?>(nil)
        var stillInFlight = false
        var pairs: [ImagePairing.Pair] = []
        var entries: [String: CornerList.Entry] = [:]
        var pairsSeen = 0
        var fit: (rms: Double, worstSigma: Double)?
        let status = LiveStatus.statusLine()
        let started = ContinuousClock.now
        func elapsed() -> Double {
            let d = (ContinuousClock.now - started).components
            return Double(d.seconds) + Double(d.attoseconds) * 1e-18
        }

        func detect(_ image: ImageView?) -> (corners: [SIMD2<Double>], size: ImageSize)? {
            guard let image, let gray = try? GrayImage(ImageBuffer(copying: image)),
                  case .success(let found) = detector.detect(in: gray) else { return nil }
            return (found.corners, gray.size)
        }

        /// Keeps a finished still when nothing moved during it and the board shows on both sides.
        func consider(_ still: StillPair) throws {
            guard still.pairsAveraged >= 4, !still.motionDetected else {
                status.note("still pair set aside: the board moved while it was averaged")
                return
            }
            let start = still.first.left.sequence
            let during = recent.filter { $0.sequence >= start }.prefix(still.pairsAveraged)
            let reference = during.first?.corners
            guard let reference, during.allSatisfy({ entry in
                entry.corners.map { BoardStillness.largestMovement(reference, $0) <= stillness.tolerancePixels } ?? false
            }) else {
                status.note("still pair set aside: the board moved while it was averaged")
                return
            }
            let gray = try StereoSide.allCases.map { side in try still.images[side].converted(to: .gray8) }
            var found: [[SIMD2<Double>]] = []
            for image in gray {
                guard case .success(let d) = detector.detect(in: try GrayImage(image)) else {
                    status.note("still pair set aside: the averaged \(found.isEmpty ? "left" : "right") image shows no whole board")
                    return
                }
                found.append(d.corners)
            }
            guard let measures = BoardViewMeasures(corners: found[0], columns: target.columns, rows: target.rows,
                                                   imageSize: gray[0].size), coverage.adds(measures) else { return }
            let index = pairs.count
            let paths = ["left", "right"].map { (staging as NSString).appendingPathComponent(String(format: "%@%03d.png", $0, index)) }
            for (image, path) in zip(gray, paths) {
                do { try image.write(toFile: path) } catch { throw CLIError("--save-pairs: \(error)") }
            }
            let final = ["left", "right"].map { (directory as NSString).appendingPathComponent(String(format: "%@%03d.png", $0, index)) }
            pairs.append(ImagePairing.Pair(left: final[0], right: final[1]))
            entries[final[0]] = CornerList.Entry(corners: found[0], size: gray[0].size)
            entries[final[1]] = CornerList.Entry(corners: found[1], size: gray[1].size)
            coverage.add(measures)
            status.note(String(format: "took pair %d (%d averaged): x %.2f y %.2f size %.2f skew %.2f", pairs.count,
                               still.pairsAveraged, measures.x, measures.y, measures.size, measures.skew))
            // Once coverage is there, fit what was taken to see how certain the result would be.
            if coverage.isComplete && pairs.count >= targets.minimumPairs {
                let views = pairs.map { pair in
                    StereoView(left: CalibrationView(name: pair.left, corners: entries[pair.left]?.corners ?? []),
                               right: CalibrationView(name: pair.right, corners: entries[pair.right]?.corners ?? []))
                }
                if let result = try? calibrator.calibrate(pairs: views, size: gray[0].size), let u = result.uncertainty {
                    let sigmas = [u.leftProjection.center, u.rightProjection.center] + u.leftProjection.corners + u.rightProjection.corners
                    let worst = sigmas.contains { !$0.isFinite } ? Double.infinity : (sigmas.max() ?? .infinity)
                    fit = (result.rms, worst)
                    if worst <= targets.uncertaintyPixels { requestStop(.targetsReached) }
                }
            }
            if let limit = targets.pairLimit, pairs.count >= limit { requestStop(.pairLimit) }
        }

        for try await pair in session.pairs {
            pairsSeen += 1
            if stop.withLock({ $0 }) != nil { break }
            if stillInFlight, let result = pending.withLock({ p in defer { p = nil }; return p }) {
                stillInFlight = false
                if case .success(let still) = result { try consider(still) }
            }
            if stop.withLock({ $0 }) != nil { break }
            let left = detect(pair.left.image)
            stillness.observe(left?.corners)
            recent.append((pair.left.sequence, left?.corners))
            if recent.count > 64 { recent.removeFirst(recent.count - 64) }
            if !stillInFlight, stillness.isStill, let left,
               let measures = BoardViewMeasures(corners: left.corners, columns: target.columns, rows: target.rows, imageSize: left.size),
               coverage.adds(measures), detect(pair.right.image) != nil {
                stillInFlight = true
                Task.detached {
                    let result: Result<StillPair, StereoSessionError>
                    do throws(StereoSessionError) {
                        result = .success(try await session.captureStillPair(quality: .quality))
                    } catch { result = .failure(error) }
                    pending.withLock { $0 = result }
                }
            }
            status.show(LiveStatus.line(taken: pairs.count, total: targets.pairLimit, coverage: coverage, fit: fit, seconds: elapsed()))
        }
        session.stop()
        status.finish(LiveStatus.line(taken: pairs.count, total: targets.pairLimit, coverage: coverage, fit: fit, seconds: elapsed()))
        let reason = stop.withLock { $0 } ?? .streamEnded

        // The capture is kept even when too little was taken to calibrate: the user's pictures.
        if FileManager.default.fileExists(atPath: directory) {
            if (try? FileManager.default.contentsOfDirectory(atPath: directory))?.isEmpty == true {
                try? FileManager.default.removeItem(atPath: directory)
            } else {
                throw CLIError("--save-pairs \(directory) appeared while capturing; the pairs are kept in \(staging)")
            }
        }
        do {
            try FileManager.default.moveItem(atPath: staging, toPath: directory)
        } catch {
            throw CLIError("--save-pairs: cannot rename \(staging) to \(directory): \(error.localizedDescription)")
        }
        finished = true
        let list = CornerList(entries: entries, board: (target.columns, target.rows), source: "live capture")
        try writeCornerFile(list, target: target, directory: directory)
        Self.log("saved \(pairs.count) pairs in \(directory)/ (with corners.json: recalibrate them with "
                 + "--left '\(directory)/left*.png' --right '\(directory)/right*.png' --corners-in \(directory)/corners.json)")
        return LiveCapture(pairs: pairs, cornerList: list, stopReason: reason, truth: opened.knownCalibration,
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

    /// The `truth_errors` of `--json` for a source that knows its calibration: focal errors in
    /// percent (left fx, fy, right fx, fy), the baseline error in percent, and the angle of
    /// the rotation between the estimated and true left → right rotations, in degrees.
    static func truthErrors(_ estimate: StereoCalibration, truth: StereoCalibration) -> JSONValue? {
        guard let estimateMM = estimate.translationUnit.millimetres, let truthMM = truth.translationUnit.millimetres else { return nil }
        func percent(_ a: Double, _ b: Double) -> JSONValue { .number(100 * (a - b) / b) }
        let e = estimate, t = truth
        let rotation = (e.extrinsics.rotation * t.extrinsics.rotation.transposed).rotationAngle * 180 / .pi
        return .object(JSONObject([
            ("focal_percent", .array([percent(e.left.intrinsics.fx, t.left.intrinsics.fx), percent(e.left.intrinsics.fy, t.left.intrinsics.fy),
                                      percent(e.right.intrinsics.fx, t.right.intrinsics.fx),
                                      percent(e.right.intrinsics.fy, t.right.intrinsics.fy)])),
            ("baseline_percent", percent(e.baseline * estimateMM, t.baseline * truthMM)),
            ("rotation_degrees", .number(rotation)),
        ]))
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
