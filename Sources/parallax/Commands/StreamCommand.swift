import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxTestSupport
import ParallaxGeometry
import ParallaxImage

/// `parallax stream`: runs a stereo session and reports what it did.
struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Run a stereo session (device → synchronizer → rectifier) and report pairs, skew, drops and pressure.",
        discussion: """
            Prints a live status line to stderr (pairs per second, skew, drops, pressure) and a \
            summary at the end; with --json, one JSON object on stdout instead of the summary. \
            Every frame is accounted for. `lost_by_camera` counts frames a camera never \
            delivered (sequence gaps, damaged or undecodable frames, a device's frame-rate cap, a \
            recording's messages that are not frames, such as malformed_message); \
            they are not among `left_frames`/`right_frames`. Every frame that arrived is in a \
            pair or in `dropped` with its reason, so left_frames = pairs + the sum of \
            dropped.left, and the same for the right. \
            `mismatched_pairs` counts pairs whose two frames were not exposed at the same moment; \
            the simulated and virtual sources know it, real cameras do not (null). Exits with \
            status 1 when a pair is wrong or the session ended before --frames pairs. `format` is \
            the format the cameras run, `images` what the pairs' images are.

            MJPG frames are decoded on each camera's own thread (--decode: the JPEG's own YCbCr \
            planes by default, or gray8, bgr8, rgb8) and then paired and rectified like any \
            other; a frame that does not decode is dropped as corrupt_frame. The simulated rig \
            and the virtual cameras send real JPEGs of the simulated scene (quality 90); \
            --corrupt-frames damages a share of them.

            The simulated rig rectifies with its own calibration unless --calibration is given \
            (or --raw). --consumer-delay makes the consumer slow, to show pressure; with \
            --adapt-frame-rate the session then lowers its frame rate step by step, and raises it \
            again once the consumer keeps up. With --virtual, cameras can be unplugged, plugged \
            back, switched off and on, and made to misbehave (--fault) at given times (SIDE@TIME, \
            e.g. right@2s).

            Examples:
              parallax stream --simulated --frames 300 --json
              parallax stream --simulated --frames 300 --record rec.mcap
              parallax stream --simulated --real-time --consumer-delay 50ms --adapt-frame-rate --frames 300
              parallax stream --virtual --frames 200 --unplug right@2s --replug right@3s --json
              parallax stream --simulated --format 1280x720@30:MJPG --corrupt-frames 5 --json
              parallax stream --recording rec.mcap --left-topic /stereo/left/image_raw --right-topic /stereo/right/image_raw --raw --json
              parallax stream --left /dev/video0 --right /dev/video2 --calibration rig.json --convergence 1.5m
            """)

    @OptionGroup var source: StereoSourceArguments

    @Option(name: .customLong("frames"), parsing: .unconditional,
            help: "Pairs to receive before stopping (default: 300; with --recording, every pair it holds).")
    var framesOption: Int?

    /// The pairs asked for: `--frames`, else 300 from cameras and all of a recording.
    var frames: Int { framesOption ?? (playsWholeRecording ? Int.max : 300) }
    /// A recording played to its end: no `--frames`, so its end is no shortfall.
    var playsWholeRecording: Bool { framesOption == nil && source.recording != nil }

    @OptionGroup var rectification: SessionRectificationOptions

    @Option(name: .customLong("consumer-delay"), parsing: .unconditional, help: "Time the consumer spends on each pair (e.g. 50ms), to show pressure.",
            transform: DurationArgument.parse)
    var consumerDelay: DurationArgument?

    @Flag(name: .customLong("adapt-frame-rate"), help: "Lower the frame rate while the session is under serious pressure, raise it again after.")
    var adaptFrameRate = false

    @Option(name: .long, parsing: .singleValue, help: "Virtual source: unplug a camera at a time since the start (SIDE@TIME, e.g. right@2s). Repeatable.")
    var unplug: [SideAtTime] = []

    @Option(name: .long, parsing: .singleValue, help: "Virtual source: plug it back in (SIDE@TIME).")
    var replug: [SideAtTime] = []

    @Option(name: .long, parsing: .singleValue, help: ArgumentHelp(
        "Virtual source: make a camera misbehave at a time (SIDE@TIME:FAULT). Repeatable.",
        discussion: VirtualFaultArgument.help, valueName: "side@time:fault"))
    var fault: [VirtualFaultArgument] = []

    @Option(name: .long, parsing: .singleValue, help: "Switch one side off (SIDE@TIME).")
    var disable: [SideAtTime] = []

    @Option(name: .long, parsing: .singleValue, help: "Switch it on again (SIDE@TIME).")
    var enable: [SideAtTime] = []

    @Option(name: .long, parsing: .unconditional, help: "Give up after this long, e.g. 30s or 2min (default: twice the time --frames takes at the frame rate, plus 10 s).",
            transform: DurationArgument.parse)
    var timeout: DurationArgument?

    @Flag(name: .long, help: "Print one JSON object at the end instead of the summary.")
    var json = false

    @Option(name: .long, help: "Also record the pairs handed out: an EuRoC folder (new or empty), NAME.mcap for a ROS 2 bag, or with --bag a rosbag2 folder.")
    var record: String?

    @OptionGroup var bagOptions: BagOptions

    @Flag(name: .long, help: "With --record: replace an older recording there.")
    var overwrite = false

    /// `--record`'s destination, when given.
    var recordTarget: RecordingTarget? {
        record.map { RecordingTarget(path: $0, option: "--record", bagOptions: bagOptions, overwrite: overwrite) }
    }

    func validate() throws {
        guard framesOption.map({ $0 > 0 }) ?? true else { throw ValidationError("--frames must be positive") }
        if !source.virtual && !(unplug.isEmpty && replug.isEmpty && fault.isEmpty) {
            throw ValidationError("--unplug, --replug and --fault work on the virtual cameras only (--virtual)")
        }
        try timeout?.check("--timeout", atMost: DurationArgument(nanoseconds: 86_400_000_000_000))
        if record == nil && (bagOptions.anyGiven || overwrite) {
            throw ValidationError("--bag, --bag-compression, --frame-ids and --overwrite say how --record writes: give --record PATH")
        }
        try recordTarget?.check()
        // A replug plugs back a camera that was unplugged before it; otherwise it does nothing.
        for side in StereoSide.allCases {
            let unplugs = unplug.filter { $0.side == side }.map(\.seconds).sorted()
            for back in replug.filter({ $0.side == side }).map(\.seconds).sorted() {
                guard unplugs.contains(where: { $0 < back }) else {
                    throw ValidationError("--replug \(side)@\(String(format: "%g", back))s comes before any --unplug \(side): "
                                          + "a camera is plugged back only after it was unplugged")
                }
            }
        }
    }

    func run() async throws {
        try recordTarget?.checkAgainst(inputs: [("--recording", source.recording), ("--calibration", rectification.calibration)])
        // --timeout counts from here: opening a bag (decompressing its chunks) is part of the run.
        let opened = try source.open(quiet: json, decompressionDeadline: timeout.map { monotonicNanoseconds() + $0.nanoseconds })
        var options = StereoSessionOptions()
        options.pressure.adaptsFrameRate = adaptFrameRate
        let session = try rectification.session(over: opened, options: options)
        let fps = opened.device.deliveredFramesPerSecond ?? 30
        let recorder = try recordTarget?.open(session: session, known: opened.knownCalibration,
                                              rateHz: opened.device.deliveredFramesPerSecond)
        // A second Ctrl-C (or a signal before the first pair) ends the program: the recording is dropped.
        let cleanup = recorder.map { recorder in Signals.atExit { recorder.abandon() } }
        defer { if let cleanup { Signals.removeCleanup(cleanup) } }
        // Any error on the way out (the session failing to start, the pairs ending in an error): dropped.
        defer { if let recorder, recorder.isOpen { recorder.abandon() } }
        let interruption = Interruption { session.stop() }
        defer { interruption.cancel() }
        // A recording played whole ends by itself; anything else within twice its time.
        let deadline = timeout?.seconds ?? (playsWholeRecording ? 1e9 : Double(frames) / fps * 2 + 10)
        if timeout == nil, deadline > 3600, !playsWholeRecording {
            FileHandle.standardError.write(Data(("stream: \(frames) pairs at \(String(format: "%g", fps)) per second take "
                + "\(Self.duration(Double(frames) / fps)); the run stops after \(Self.duration(deadline)) unless --timeout "
                + "sets another limit\n").utf8))
        }
        try session.start()
        let started = Date()
        let scheduled = schedule(on: session, source: opened)
        let status = SessionStatus(session: session)
        let timedOut = Locked(false)
        let watchdog = Task {
            // Held under 30 years: UInt64 nanoseconds trap past 584 years (--frames 10^12).
            try? await Task.sleep(nanoseconds: UInt64(min(deadline, 1e9) * 1e9))
            if !Task.isCancelled {
                timedOut.withLock { $0 = true }
                session.stop()
            }
        }
        var received = 0
        var mismatched: Int? = opened.rig != nil || opened.driver != nil ? 0 : nil
        // The first pair's image format and size (not its view, which would hold a buffer).
        var images: (format: PixelFormat, size: ImageSize)?
        for try await pair in session.pairs {
            received += 1
            if images == nil, let image = pair.left.image { images = (image.format, image.size) }
            if let wrong = opened.isMismatched(pair), wrong { mismatched = (mismatched ?? 0) + 1 }
            if let recorder {
                do { try recorder.record(pair) } catch {
                    session.stop()
                    throw CLIError("--record \(record ?? ""): a write error after \(received - 1) pairs: \(error); "
                                   + recorder.keepAfterWriteError())
                }
            }
            if let consumerDelay { await Self.sleep(consumerDelay.nanoseconds, whileRunning: session) }
            if received >= frames { break }
        }
        let elapsed = Date().timeIntervalSince(started)
        let endEvent = session.statistics.events.last { $0.name == "stopped" }
        session.stop()
        watchdog.cancel()
        scheduled.cancel()
        status.finish()
        // Kept when the stream ended as asked (its pairs, the whole recording, or Ctrl-C) with no wrong pair.
        var recordingNote = ""
        if let recorder, recorder.isOpen {
            if (received >= frames || playsWholeRecording || interruption.fired) && (mismatched ?? 0) == 0 {
                do { try recorder.finish() } catch {
                    throw CLIError("--record \(record ?? ""): a write error at its end: \(error); " + recorder.keepAfterWriteError())
                }
            } else {
                recorder.abandon()
                recordingNote = "; --record \(record ?? ""): nothing was kept"
            }
        }
        let stats = session.statistics
        if json {
            let delivered = images.map { "\($0.format.rawValue) \($0.size)" }
            print(Self.report(stats, pairs: received, mismatched: mismatched, format: opened.device.activeFormats?.left,
                              images: delivered).serialized(indent: 0))
        } else {
            printSummary(stats, pairs: received, seconds: elapsed, mismatched: mismatched)
        }
        if let mismatched, mismatched > 0 { throw CLIError("\(mismatched) pairs were not taken at the same moment" + recordingNote) }
        try stats.requireClosedAccount(command: "stream")
        if playsWholeRecording, !interruption.fired, timedOut.withLock({ $0 }) {
            throw CLIError("timed out after \(String(format: "%g", deadline)) s (--timeout), \(received) pairs into the recording, "
                           + "before its end" + (recorder.map { _ in "; --record \(record ?? "") kept those \(received) pairs" } ?? ""))
        }
        if received < frames, !interruption.fired, !playsWholeRecording {
            // The timeout's own stop says only "stopped": say why it stopped.
            var reason = "timed out after \(String(format: "%g", deadline)) s"
            if !timedOut.withLock({ $0 }), case .stopped(let why) = endEvent?.kind { reason = why }
            // A camera still away at the end is most likely why the pairs stopped: say so.
            for side in StereoSide.allCases {
                let last = stats.events.last { $0.side == side && ($0.kind == .disconnected || $0.kind == .reconnected) }
                if let last, last.kind == .disconnected {
                    reason += "; the \(side) camera was unplugged at \(String(format: "%.2f", last.atSeconds)) s and did not come back"
                }
            }
            throw CLIError("the session ended after \(received) of \(frames) pairs: \(reason)" + recordingNote)
        }
    }

    /// Runs the --unplug/--replug/--fault/--disable/--enable actions at their times.
    private func schedule(on session: StereoSession, source: StereoSourceArguments.Source) -> Task<Void, Never> {
        var actions: [(seconds: Double, side: StereoSide, run: @Sendable () -> Void)] = []
        if let driver = source.driver {
            for item in unplug { actions.append((item.seconds, item.side, { driver.unplug(source.virtualPaths[item.side]) })) }
            for item in replug { actions.append((item.seconds, item.side, { driver.replug(source.virtualPaths[item.side]) })) }
            for item in fault {
                actions.append((item.seconds, item.side, { driver.inject(item.fault, into: source.virtualPaths[item.side]) }))
            }
        }
        for item in disable { actions.append((item.seconds, item.side, { try? session.setEnabled(false, item.side) })) }
        for item in enable { actions.append((item.seconds, item.side, { try? session.setEnabled(true, item.side) })) }
        let ordered = actions.sorted { $0.seconds < $1.seconds }
        let start = Date()
        return Task.detached {
            for action in ordered {
                let wait = action.seconds - Date().timeIntervalSince(start)
                if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
                if Task.isCancelled { return }
                action.run()
            }
        }
    }

    // MARK: Output

    private func printSummary(_ stats: StereoSessionStatistics, pairs: Int, seconds: Double, mismatched: Int?) {
        let skew = stats.synchronizer.skew
        print(String(format: "%d pairs in %.1f s (%.1f pairs/s); skew p50 %.3f ms, p99 %.3f ms", pairs, seconds,
                     Double(pairs) / max(seconds, 1e-9), Double(skew.p50Nanoseconds) / 1e6, Double(skew.p99Nanoseconds) / 1e6))
        print("frames: left \(stats.frames(.left)), right \(stats.frames(.right)); pairs made \(stats.pairsMade), delivered \(stats.pairsDelivered)")
        for side in StereoSide.allCases {
            print("\(side) lost by the camera: " + dropList(stats.lostByName(side)))
            print("\(side) dropped: " + dropList(stats.droppedByName(side)))
        }
        if stats.rectification.count > 0 { print("rectification: \(stats.rectification)") }
        if stats.consumer.count > 0 { print("consumer: \(stats.consumer)") }
        for event in stats.events where event.name != "started" && event.name != "stopped" { print("event \(event)") }
        print("mismatched pairs: \(mismatched.map(String.init) ?? "unknown (real cameras)")")
    }

    /// Sleeps `nanoseconds` (the simulated consumer's work), in steps of at most 50 ms, and
    /// returns early once the session stops: a timeout, Ctrl-C or SIGTERM ends the run within
    /// a step, however long the consumer was to take.
    static func sleep(_ nanoseconds: Int64, whileRunning session: StereoSession) async {
        let end = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, nanoseconds))
        while session.isRunning && !Task.isCancelled {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < end else { return }
            try? await Task.sleep(nanoseconds: min(end - now, 50_000_000))
        }
    }

    /// `seconds` as a person reads a duration (`45 s`, `12.5 min`, `16.7 h`, `6.9 days`).
    static func duration(_ seconds: Double) -> String {
        if seconds < 120 { return String(format: "%.3g s", seconds) }
        if seconds < 7200 { return String(format: "%.3g min", seconds / 60) }
        if seconds < 172_800 { return String(format: "%.3g h", seconds / 3600) }
        return String(format: "%.3g days", seconds / 86400)
    }

    /// The JSON report (see the discussion).
    static func report(_ stats: StereoSessionStatistics, pairs: Int, mismatched: Int?, format: CaptureFormat? = nil,
                       images: String? = nil) -> JSONValue {
        func counts(_ byName: [String: Int]) -> JSONValue {
            .object(JSONObject(byName.sorted { $0.key < $1.key }.map { ($0.key, .number(Double($0.value))) }))
        }
        func ms(_ ns: Int64) -> JSONValue { jsonNumber(Double(ns) / 1e6) }
        var levels: [JSONValue] = []
        var rates: [JSONValue] = []
        var events: [JSONValue] = []
        for event in stats.events {
            switch event.kind {
            case .pressureChanged(let level, _):
                levels.append(.object(JSONObject([("level", .string(level.description)), ("at_s", jsonNumber(event.atSeconds))])))
            case .frameRateChanged(let fps):
                rates.append(.object(JSONObject([("fps", jsonNumber(fps)), ("at_s", jsonNumber(event.atSeconds))])))
            default:
                var fields: [(String, JSONValue)] = [
                    ("type", .string(event.name)), ("side", event.side.map { .string($0.description) } ?? .null),
                    ("stable_id", event.stableID.map { .string($0) } ?? .null),
                    ("node", event.node.map { .string($0) } ?? .null), ("at_s", jsonNumber(event.atSeconds)),
                ]
                // What went wrong, in the words the library used (a bag's message, a device's errno).
                if case .deviceError(let message) = event.kind { fields.append(("message", .string(message))) }
                events.append(.object(JSONObject(fields)))
            }
        }
        return .object(JSONObject([
            ("format", format.map { .string($0.description) } ?? .null),
            ("images", images.map { .string($0) } ?? .null),
            ("pairs", .number(Double(pairs))),
            ("left_frames", .number(Double(stats.frames(.left)))),
            ("right_frames", .number(Double(stats.frames(.right)))),
            ("lost_by_camera", .object(JSONObject([("left", counts(stats.lostByName(.left))),
                                                   ("right", counts(stats.lostByName(.right)))]))),
            ("dropped", .object(JSONObject([("left", counts(stats.droppedByName(.left))), ("right", counts(stats.droppedByName(.right)))]))),
            ("skew_ns_p50", .number(Double(stats.synchronizer.skew.p50Nanoseconds))),
            ("skew_ns_p99", .number(Double(stats.synchronizer.skew.p99Nanoseconds))),
            ("rectify_ms_p50", stats.rectification.count > 0 ? ms(stats.rectification.p50Nanoseconds) : .null),
            ("rectify_ms_p99", stats.rectification.count > 0 ? ms(stats.rectification.p99Nanoseconds) : .null),
            ("pressure_levels", .array(levels)),
            ("frame_rate_changes", .array(rates)),
            ("events", .array(events)),
            ("mismatched_pairs", mismatched.map { .number(Double($0)) } ?? .null),
        ]))
    }
}

/// Drops by reason as `2 constituent_disabled, 4 simulated` (by name), or `none`.
func dropList(_ drops: [String: Int]) -> String {
    drops.isEmpty ? "none" : drops.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
}

/// `SIDE@TIME`: `right@2s`, `left@1500ms`.
struct SideAtTime: ExpressibleByArgument, Sendable {
    let side: StereoSide
    let seconds: Double

    init?(argument: String) {
        let parts = argument.split(separator: "@", maxSplits: 1).map(String.init)
        guard parts.count == 2, let side = StereoSide.allCases.first(where: { $0.description == parts[0].lowercased() }),
              let time = DurationArgument(argument: parts[1]) else { return nil }
        self.side = side
        seconds = time.seconds
    }
}

/// `SIDE@TIME:FAULT`: a fault the virtual driver produces on one camera at a time since the
/// start, e.g. `right@1s:timestamps-ahead=40ms`.
struct VirtualFaultArgument: ExpressibleByArgument, Sendable {
    let side: StereoSide
    let seconds: Double
    let fault: VirtualCameraFault

    /// The faults by name, for --help.
    static let help = """
        FAULT is one of: queue-error (the driver's buffer queue fails, as on a fatal USB \
        error), error-buffers=N (N buffers flagged as damaged), sequence-gap=N (N frames lost \
        in the driver), timestamps-ahead=DURATION (from then on every stamp is that much late, \
        so frames may pair wrongly: a camera whose clock jumped), time-backwards=DURATION (the \
        next stamp goes back), stall=DURATION (no frames for that long).
        """

    init?(argument: String) {
        let parts = argument.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let when = SideAtTime(argument: parts[0]) else { return nil }
        let kind = parts[1].split(separator: "=", maxSplits: 1).map(String.init)
        let value = kind.count == 2 ? kind[1] : nil
        func count() -> Int? { value.flatMap { Int($0) }.flatMap { $0 > 0 && $0 <= 1000 ? $0 : nil } }
        func duration() -> Int64? { value.flatMap { DurationArgument(argument: $0)?.nanoseconds } }
        switch kind[0] {
        case "queue-error" where value == nil: fault = .queueError
        case "error-buffers": guard let n = count() else { return nil }; fault = .errorFlaggedBuffers(count: n)
        case "sequence-gap": guard let n = count() else { return nil }; fault = .sequenceGap(frames: n)
        case "timestamps-ahead": guard let d = duration() else { return nil }; fault = .timestampsAhead(nanoseconds: d)
        case "time-backwards": guard let d = duration() else { return nil }; fault = .timestampBackwards(nanoseconds: d)
        case "stall": guard let d = duration() else { return nil }; fault = .stall(nanoseconds: d)
        default: return nil
        }
        side = when.side
        seconds = when.seconds
    }
}

/// The stream's one-line status while it runs (pairs, rate, skew, drops, pressure), through
/// the commands' ``StatusLine``: four times a second on a terminal, every two seconds elsewhere.
final class SessionStatus: Sendable {
    private let task: Task<Void, Never>
    private let line = StatusLine(terminalInterval: .milliseconds(250), logInterval: .seconds(2))

    init(session: StereoSession) {
        let line = self.line
        task = Task.detached {
            while !Task.isCancelled && session.isRunning {
                try? await Task.sleep(nanoseconds: 250_000_000)
                if Task.isCancelled { break }
                let s = session.statistics
                line.show(String(format: "%6d pairs  %5.1f/s  skew p50 %.2f ms  dropped L %d R %d  lost L %d R %d  pressure %@  %.1f fps",
                                 s.pairsDelivered, s.pairsPerSecond, Double(s.synchronizer.skew.p50Nanoseconds) / 1e6,
                                 s.dropped(.left), s.dropped(.right), s.lost(.left), s.lost(.right),
                                 s.pressure.description, s.framesPerSecond ?? 0))
            }
        }
    }

    /// Stops updating (and ends the line on a terminal).
    func finish() {
        task.cancel()
        line.finish()
    }
}

extension StereoSessionStatistics {
    /// Ends `stream` and `view` with an error when the frame account does not close
    /// (FrameAccount.md): a frame that is neither a delivered pair nor a drop with a reason
    /// is a defect in Parallax, never a quiet success.
    func requireClosedAccount(command: String) throws(CLIError) {
        if let discrepancy = accountDiscrepancy { throw CLIError("\(command): \(discrepancy) (a defect in Parallax)") }
    }
}
