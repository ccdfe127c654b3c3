import ArgumentParser
import Dispatch
import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// `parallax rectify-dataset`: rectifies a whole recording, or one shard of it, into an
/// EuRoC folder. The per-shard command a cluster scheduler runs (Slurm array jobs,
/// Kubernetes Indexed Jobs): see `Benchmarks/README.md` and the DocC article on datasets.
struct RectifyDatasetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rectify-dataset",
        abstract: "Rectify a whole recording (EuRoC folder or ROS 2 bag) into an EuRoC folder or a bag, or one shard of it.",
        discussion: """
            The frames are paired as the synchronizer pairs them (approximate policy, skew at most \
            half the recording's frame interval), from their timestamps alone, so every run and \
            every shard sees the same pairs. Each pair's rectified images are written as \
            OUTPUT/cam0/data/<ns>.png and OUTPUT/cam1/data/<ns>.png (the frames' own timestamps), \
            each file atomically; OUTPUT/camN/data.csv lists every pair, row k of both being pair \
            k; OUTPUT/camN/sensor.yaml describes the rectified cameras; OUTPUT/rectify-dataset.json \
            records what was done (the calibration, options and pairs), so a run with other \
            settings is refused rather than mixed in.

            A rerun skips the pairs whose two files are there and finishes the rest: a run that \
            was killed or stopped (Ctrl-C) leaves only whole files and picks up where it stopped.

            --output NAME.mcap (or a folder with --bag, a rosbag2 folder) writes a ROS 2 bag instead: \
            image_rect and camera_info on /stereo/left and /stereo/right, the pairs in order. A bag \
            is one file, written in one run: it appears whole when the run ends, is not resumed \
            (a rerun starts over), cannot be sharded, and an existing one is not replaced.

            --shard I/N does the I-th of N consecutive stretches of the recording's pairs (1 ≤ I ≤ N; \
            pair k of P belongs to shard floor(k·N/P) + 1). The N shards, run anywhere and in any \
            order into one OUTPUT (a shared file system), write exactly the files and bytes one \
            run without --shard writes. --shard @VAR/N reads the index from the environment \
            variable VAR, counted from 0 as schedulers count it: @SLURM_ARRAY_TASK_ID/N with \
            --array=0-(N-1), @JOB_COMPLETION_INDEX/N in a Kubernetes Indexed Job.

            Examples:
              parallax rectify-dataset --input rec --calibration rig.json --output rec-rectified
              parallax rectify-dataset --input rec.mcap --calibration rig.json --output out --shard 2/3
              parallax rectify-dataset --input rec --calibration rig.json --output out --shard @SLURM_ARRAY_TASK_ID/16
            """)

    @Option(name: .long, help: "The recording: an EuRoC folder (cam0, cam1), a ROS 2 bag in one MCAP file, or a rosbag2 folder holding one.")
    var input: String

    @Option(name: .long, help: "The EuRoC folder to write (created if missing; it may hold an earlier run or other shards of this one), or NAME.mcap for a ROS 2 bag.")
    var output: String

    @OptionGroup var bagOptions: BagOptions

    @OptionGroup var shared: RectificationArguments

    @OptionGroup var topics: BagTopicOptions

    @Option(name: .long, help: "Do only shard I of N (1 ≤ I ≤ N), or @VAR/N with the index, from 0, in environment variable VAR.",
            transform: ShardArgument.parse)
    var shard: ShardArgument?

    @Option(name: .long, help: "nearest, bilinear or bicubic (also: speed, balanced, quality).")
    var interpolation: Interpolation = .bilinear

    @Option(name: .long, parsing: .unconditional, help: "Pairs rectified at once (default: one per processor).")
    var threads: Int?

    @Flag(name: .long, help: "Print a JSON summary on stdout instead of a sentence.")
    var json = false

    func validate() throws {
        if let threads, threads < 1 || threads > 1024 {
            throw ValidationError("--threads must be from 1 to 1024, got \(threads)")
        }
        if (topics.left == nil) != (topics.right == nil) {
            throw ValidationError("--left-topic and --right-topic go together: name both of a bag's image topics")
        }
        try target.check()
        if target.writesBag, shard != nil {
            throw ValidationError("--shard writes into an EuRoC folder that shards on many machines share; a bag is one file "
                                  + "written in order: give --output a folder, or write the bag in one run without --shard")
        }
    }

    func run() throws {
        let started = ContinuousClock.now
        try OutputFiles.check(outputs: [], inputs: [("--input", input), ("--calibration", shared.calibration)])
        let resolvedOutput = OutputFiles.resolve(output)
        for (option, path) in [("--input", input), ("--calibration", shared.calibration)] {
            let resolved = OutputFiles.resolve(path)
            if resolved == resolvedOutput || resolved.hasPrefix(resolvedOutput + "/") {
                throw CLIError("\(option) \(path) is inside --output \(output), which this command writes; choose another output folder")
            }
            if option == "--input" && resolvedOutput.hasPrefix(resolved + "/") {
                throw CLIError("--output \(output) is inside --input \(input): a recording is read, never written into; "
                               + "choose an output folder outside it")
            }
        }
        if !target.writesBag { try RectifyDatasetPlan.checkOutputFolder(output) }
        let dataset = try DatasetInput(path: input, topics: topics)
        let interval = dataset.typicalIntervalNanoseconds ?? 33_333_333
        let configuration = SynchronizerConfiguration(frameIntervalNanoseconds: interval, maximumSkewNanoseconds: interval / 2,
                                                      queueCapacity: 64, clockCorrection: .estimate)
        let pairing = RecordedStreamPairing(left: dataset.logs.left, right: dataset.logs.right, configuration: configuration)
        let pairs = pairing.pairs
        guard !pairs.isEmpty else {
            throw CLIError("--input \(input): no pairs (\(dataset.logs.left.entries.count) left and "
                           + "\(dataset.logs.right.entries.count) right frames, none within half a frame interval of another)")
        }
        let mine = (shard ?? ShardArgument(index: 1, count: 1)).range(of: pairs.count)

        // The rig as the recording shows it: the first pair's images give size and pixel format.
        let first = try PerSide(left: dataset.image(.left, pairs[0].left), right: dataset.image(.right, pairs[0].right))
        var calibration = try shared.loadCalibration()
        if calibration.left.size != first.left.size {
            let note = "--calibration \(shared.calibration) is for \(calibration.left.size) images; the recording's are "
                + "\(first.left.size): adapted (scaled, centre-cropped for another aspect ratio)\n"
            FileHandle.standardError.write(Data(note.utf8))
            calibration = calibration.adapted(to: first.left.size)
        }
        let options = RectificationOptions(alpha: shared.optionsAlpha)
        let rectification = try shared.rectification(of: calibration, options)
        let convergence = try shared.convergenceDistance(for: calibration, rectification: rectification)

        let workers = target.writesBag ? 1 : max(1, min(threads ?? ProcessInfo.processInfo.activeProcessorCount, mine.count))
        var rectifiers: [Rectifier] = []
        for _ in 0..<workers {
            do {
                // A bag is written in order by one rectifier with every thread; a folder by one per thread.
                rectifiers.append(try Rectifier(calibration: calibration, convergenceDistance: convergence, options: options,
                                                interpolation: interpolation, threads: target.writesBag ? threads : 1))
            } catch {
                throw CLIError("\(shared.calibration): \(error)")
            }
        }
        // The rectification as the images are written: the convergence plane's whole-sample shift included.
        let written = rectifiers[0].rectification(for: first.left.format)
        let plan = RectifyDatasetPlan(output: output, dataset: dataset, pairs: pairs, calibration: calibration,
                                      rectification: written, settings: [
                                          ("alpha", shared.optionsAlpha.map(JSONValue.number) ?? .null),
                                          ("convergence", convergence.map(JSONValue.number) ?? .null),
                                          ("interpolation", .string(interpolation.rawValue)),
                                      ], intervalNanoseconds: interval)
        try plan.checkStamps(forBag: target.writesBag)
        if target.writesBag {
            let outcome = try writeBag(plan, rectifier: rectifiers[0], format: first.left.format)
            report(outcome, pairs: pairs.count, range: 0..<pairs.count, dataset: dataset, started: started,
                   threads: rectifiers[0].threadCount, simd: outcome.simd)
            return
        }
        try plan.prepare()
        // An unsharded run (or one shard of one) is the folder's only writer: it may tidy everything.
        let outcome = try plan.rectify(mine, rectifiers: rectifiers, format: first.left.format, quiet: json,
                                       onlyWriter: (shard?.count ?? 1) == 1)
        try plan.writeLists()
        report(outcome, pairs: pairs.count, range: mine, dataset: dataset, started: started, threads: workers,
               simd: rectifiers[0].simdLevel)
    }

    /// Where a bag goes (`--output NAME.mcap`, or a folder with `--bag`).
    var target: RecordingTarget { RecordingTarget(path: output, option: "--output", bagOptions: bagOptions, overwrite: false) }

    /// The pairs, in order, into a bag with each side's camera info (K and D the calibration's,
    /// R and P the rectification's, convergence included): one rectifier using every thread.
    private func writeBag(_ plan: RectifyDatasetPlan, rectifier: Rectifier, format: PixelFormat) throws -> RectifyDatasetPlan.Outcome {
        let info = RecordingTarget.cameraInfo(plan.calibration, rectification: plan.rectification)
        // Output made from its input: a killed run's unfinished bag is removed, not kept.
        let recorder = try target.openBag(cameraInfo: info, recoveringInterrupted: false)
        // Ctrl-C or a kill before the end: nothing is kept (a bag is written whole).
        let cleanup = Signals.atExit { recorder.abandon() }
        defer { Signals.removeCleanup(cleanup) }
        let status = StatusLine(write: { [json] text in if !json { FileHandle.standardError.write(Data(text.utf8)) } })
        let started = ContinuousClock.now
        func elapsed() -> Double { (ContinuousClock.now - started).seconds }
        do {
            for (k, pair) in plan.pairs.enumerated() {
                var images = try PerSide(left: plan.dataset.image(.left, pair.left), right: plan.dataset.image(.right, pair.right))
                for side in StereoSide.allCases where images[side].format != format { images[side] = try images[side].converted(to: format) }
                let (l, r) = try rectifier.rectify(left: images.left, right: images.right)
                let stamps = PerSide(left: plan.dataset.logs.left.entries[pair.left].timestampNanoseconds,
                                     right: plan.dataset.logs.right.entries[pair.right].timestampNanoseconds)
                try recorder.record(images: PerSide(left: l, right: r), stamps: stamps, rectified: true, number: k)
                status.show(String(format: "rectified %d of %d pairs (%.1f pairs/s)", k + 1, plan.pairs.count, Double(k + 1) / max(elapsed(), 1e-9)))
            }
            try recorder.finish()
        } catch {
            recorder.abandon()
            throw CLIError("\(error); the bag was not kept")
        }
        status.finish()
        return RectifyDatasetPlan.Outcome(rectified: plan.pairs.count, skipped: 0, seconds: elapsed(), simd: rectifier.simdLevel)
    }

    /// Prints what a run did: a sentence, or with `--json` one object.
    private func report(_ outcome: RectifyDatasetPlan.Outcome, pairs: Int, range mine: Range<Int>, dataset: DatasetInput,
                        started: ContinuousClock.Instant, threads workers: Int, simd: SIMDLevel?) {
        let seconds = (ContinuousClock.now - started).seconds
        let rate = Double(outcome.rectified) / max(outcome.seconds, 1e-9)
        let shardText = shard.map { "shard \($0.index)/\($0.count): pairs \(mine.lowerBound + 1)–\(mine.upperBound) of \(pairs)" }
            ?? "\(pairs) pairs"
        if json {
            print(JSONValue.object(JSONObject([
                ("pairs", .number(Double(pairs))),
                ("shard", shard.map { .string("\($0.index)/\($0.count)") } ?? .null),
                ("first_pair", .number(Double(mine.lowerBound))), ("end_pair", .number(Double(mine.upperBound))),
                ("rectified", .number(Double(outcome.rectified))), ("already_done", .number(Double(outcome.skipped))),
                ("pairs_per_second", .number(rate)), ("seconds", .number(seconds)), ("threads", .number(Double(workers))),
                ("simd_level", simd.map { .string($0.rawValue) } ?? .null),
                ("left_frames_unpaired", .number(Double(dataset.logs.left.entries.count - pairs))),
                ("right_frames_unpaired", .number(Double(dataset.logs.right.entries.count - pairs))),
                ("output", .string(output)),
            ])).serialized(indent: 0))
        } else {
            print("rectified \(outcome.rectified) pairs (\(shardText); \(outcome.skipped) already done) at "
                  + String(format: "%.1f", rate) + " pairs/s with \(workers) thread(s); "
                  + (target.writesBag ? "\(output) (a ROS 2 bag)" : "\(output)/cam0 and \(output)/cam1"))
        }
    }
}

/// `--shard I/N`: the I-th of N consecutive stretches of the pairs.
struct ShardArgument: Sendable, Hashable {
    /// 1 ≤ index ≤ count.
    var index: Int
    var count: Int

    /// `I/N` (I from 1), or `@VAR/N` (the index in environment variable VAR, from 0).
    static func parse(_ text: String) throws -> ShardArgument {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let syntax = "--shard takes I/N (1 ≤ I ≤ N, e.g. 2/3) or @VAR/N (an environment variable holding the index from 0, "
            + "e.g. @SLURM_ARRAY_TASK_ID/16), got '\(text)'"
        guard parts.count == 2, let count = Int(parts[1]), count >= 1, count <= 1_000_000 else { throw ValidationError(syntax) }
        var index: Int
        if parts[0].hasPrefix("@") {
            let name = String(parts[0].dropFirst())
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw ValidationError("--shard \(text): the environment variable \(name) is not set (the scheduler sets it in each task)")
            }
            guard let zeroBased = Int(value.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--shard \(text): \(name) is '\(value)', not a whole number")
            }
            index = zeroBased + 1
        } else {
            guard let oneBased = Int(parts[0]) else { throw ValidationError(syntax) }
            index = oneBased
        }
        guard (1...count).contains(index) else {
            throw ValidationError("--shard \(text): the shard is \(parts[0].hasPrefix("@") ? "\(index - 1) counted from 0" : "\(index)"), "
                                  + "outside 1...\(count)" + (parts[0].hasPrefix("@") ? " (0...\(count - 1) from 0)" : ""))
        }
        return ShardArgument(index: index, count: count)
    }

    /// The pairs of this shard among `total`: pair k belongs to shard ⌊k·N / P⌋ + 1, so the
    /// shards are consecutive, cover every pair once, and differ in size by at most one.
    func range(of total: Int) -> Range<Int> {
        func start(_ shard: Int) -> Int {
            // The first k with ⌊k·N/P⌋ ≥ shard: ⌈shard·P/N⌉ (in 128 bits: P·N may not fit 64).
            let (high, low) = shard.multipliedFullWidth(by: total)
            let (quotient, remainder) = count.dividingFullWidth((high, low))
            return quotient + (remainder > 0 ? 1 : 0)
        }
        return start(index - 1)..<start(index)
    }
}
