import Dispatch
import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// What `rectify-dataset` writes into its output folder, and how: the same bytes from every
/// run and every shard, each file whole or absent.
///
///     OUTPUT/rectify-dataset.json     the calibration, the options and the pairs' count
///     OUTPUT/camN/sensor.yaml         the rectified cameras (EuRoC)
///     OUTPUT/camN/data/<ns>.png       pair k's rectified images, by the frames' timestamps
///     OUTPUT/camN/data.csv            every pair, row k of both being pair k
final class RectifyDatasetPlan: Sendable {
    let output: String
    let dataset: DatasetInput
    let pairs: [RecordedStreamPairing.Pair]
    let calibration: StereoCalibration
    let rectification: StereoRectification
    /// `rectify-dataset.json`'s text: what any run writing into ``output`` must agree with.
    let manifest: String
    let intervalNanoseconds: Int64

    static let manifestName = "rectify-dataset.json"

    init(output: String, dataset: DatasetInput, pairs: [RecordedStreamPairing.Pair], calibration: StereoCalibration,
         rectification: StereoRectification, settings: [(String, JSONValue)], intervalNanoseconds: Int64) {
        (self.output, self.dataset, self.pairs, self.calibration, self.rectification) = (output, dataset, pairs, calibration, rectification)
        self.intervalNanoseconds = intervalNanoseconds
        // No paths and no times: shards on other machines see the input under other names.
        manifest = JSONValue.object(JSONObject([
            ("made_by", .string("parallax rectify-dataset")),
            ("pairs", .number(Double(pairs.count))),
            ("first_pair_ns", .array([.number(Double(dataset.logs.left.entries[pairs[0].left].timestampNanoseconds)),
                                      .number(Double(dataset.logs.right.entries[pairs[0].right].timestampNanoseconds))])),
            ("settings", .object(JSONObject(settings))),
            ("calibration", (try? JSONValue(parsing: calibration.jsonText())) ?? .null),
        ])).serialized() + "\n"
    }

    /// Refuses, before any work, a frame whose stamp the output cannot hold: a bag's
    /// (``MCAPRecorder/unrepresentable(stampNanoseconds:)``), or an EuRoC folder's, whose
    /// images are named by their nanoseconds since the epoch, never negative.
    func checkStamps(forBag: Bool) throws {
        for side in StereoSide.allCases {
            let log = dataset.logs[side]
            for pair in pairs {
                let entry = log.entries[side == .left ? pair.left : pair.right]
                let stamp = entry.timestampNanoseconds
                let reason = forBag ? MCAPRecorder.unrepresentable(stampNanoseconds: stamp)
                    : stamp < 0 ? "an EuRoC folder names each image by its nanoseconds since the epoch, never negative" : nil
                if let reason {
                    throw CLIError("--input \(dataset.description): the \(side) frame at line or message \(entry.line) is stamped "
                                   + "\(stamp) ns, which the output cannot hold: \(reason)")
                }
            }
        }
    }

    /// The image file of pair `k`'s `side` frame, relative to its camera folder's `data`.
    func fileName(_ side: StereoSide, pair k: Int) -> String {
        let log = dataset.logs[side], index = side == .left ? pairs[k].left : pairs[k].right
        return "\(log.entries[index].timestampNanoseconds).png"
    }

    func cameraFolder(_ side: StereoSide) -> String { output + "/cam\(side.rawValue)" }

    /// Refuses, before any work, an output that is a file or a folder holding something other
    /// than a rectify-dataset output (one without its manifest).
    static func checkOutputFolder(_ output: String) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: output, isDirectory: &isFolder) else { return }
        guard isFolder.boolValue else { throw CLIError("--output \(output) is a file; rectify-dataset writes a folder") }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []
        if !entries.contains(manifestName) && !entries.filter({ !$0.hasPrefix(".") }).isEmpty {
            throw CLIError("--output \(output) is not empty and holds no \(manifestName): it is not a rectify-dataset output; "
                           + "choose a new or empty folder")
        }
    }

    /// Refuses a folder made with other settings, then writes the manifest and the
    /// `sensor.yaml` files (the same bytes whichever run or shard writes them).
    func prepare() throws {
        try Self.checkOutputFolder(output)
        do {
            try FileAccess.createDirectories(atPath: output)
        } catch {
            throw CLIError("\(error)")
        }
        // The manifest first, claimed once: of runs started together with other settings, the
        // first to link its manifest into place goes on and every other finds it and stops;
        // runs (shards) with the same settings all find their own and go on.
        try claimManifest()
        do {
            for side in StereoSide.allCases { try FileAccess.createDirectories(atPath: cameraFolder(side) + "/data") }
        } catch {
            throw CLIError("\(error)")
        }
        let rate = 1e9 / Double(intervalNanoseconds)
        do {
            let texts = try EuRoCSensorFile.texts(rectifiedBy: rectification, of: calibration, rateHz: rate,
                                                  comment: "rectified by parallax rectify-dataset")
            for side in StereoSide.allCases {
                try FileAccess.writeAtomically(texts[side], toPath: cameraFolder(side) + "/sensor.yaml")
            }
        } catch let error as CaptureError {
            if case .recording(_, let reason) = error {
                FileHandle.standardError.write(Data("\(output): no sensor.yaml written: \(reason)\n".utf8))
            }
        } catch {
            throw CLIError("\(error)")
        }
    }

    /// The size a PNG file's header gives (its signature, then IHDR's width and height), or
    /// `nil` when the file does not begin as a PNG does.
    static func pngSize(atPath path: String) -> ImageSize? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 24), head.count == 24 else { return nil }
        let bytes = [UInt8](head)
        guard bytes.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], bytes[12..<16] == [0x49, 0x48, 0x44, 0x52] else { return nil }
        func u32(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return ImageSize(width: u32(16), height: u32(20))
    }

    /// Puts ``manifest`` in place unless a manifest is there, never over one (written beside it
    /// and hard-linked, which fails when the name is taken), then checks that the one in place
    /// is this run's.
    private func claimManifest() throws {
        let path = output + "/" + Self.manifestName
        // Hidden: a shard checking the folder meanwhile takes it for no output of another kind.
        let temporary = output + "/." + Self.manifestName + ".partial-\(getpid())"
        do {
            try FileAccess.writeAtomically(manifest, toPath: temporary)
        } catch {
            throw CLIError("\(error)")
        }
        defer { unlink(temporary) }
        if link(temporary, path) != 0 && errno != EEXIST {
            throw CLIError("--output \(output): cannot put \(Self.manifestName) in place: \(String(cString: strerror(errno)))")
        }
        let existing = try? FileAccess.readText(atPath: path)
        guard existing == manifest else {
            throw CLIError("--output \(output) holds a rectification made with another calibration, options or recording "
                           + "(its \(Self.manifestName) differs); choose a new folder, or remove that one first")
        }
    }

    /// What a run did: pairs rectified now, pairs found done, and the seconds spent on them.
    struct Outcome {
        var rectified = 0
        var skipped = 0
        var seconds = 0.0
        /// The kernels' vector level, when a rectifier ran.
        var simd: SIMDLevel?
    }

    /// Rectifies the pairs of `range` not already done, on one thread per rectifier (each
    /// takes every n-th pair), with progress on stderr. Temporary files a killed run left are
    /// removed first (see ``removeTemporaries(of:everything:)``).
    func rectify(_ range: Range<Int>, rectifiers: [Rectifier], format: PixelFormat, quiet: Bool, onlyWriter: Bool) throws -> Outcome {
        // A pair is done when both its images are there as PNGs of the rectified size; one that
        // is not (damaged, cut, replaced) is made again, and said.
        var redone: [String] = []
        let todo = Array(range).filter { k in
            StereoSide.allCases.contains { side in
                let path = cameraFolder(side) + "/data/" + fileName(side, pair: k)
                guard FileManager.default.fileExists(atPath: path) else { return true }
                let size = Self.pngSize(atPath: path)
                if size != rectification.size {
                    redone.append("\(path) (" + (size.map { "\($0)" } ?? "not a PNG") + ", not \(rectification.size))")
                    return true
                }
                return false
            }
        }
        if !redone.isEmpty, !quiet {
            FileHandle.standardError.write(Data(("rectify-dataset: making again \(redone.count) image(s) that were there but not "
                + "whole: \(redone.prefix(3).joined(separator: ", "))\(redone.count > 3 ? ", …" : "")\n").utf8))
        }
        removeTemporaries(of: Set(range), everything: onlyWriter)
        var outcome = Outcome(skipped: range.count - todo.count)
        guard !todo.isEmpty else { return outcome }
        let done = Locked(0)
        let failure = Locked<String?>(nil)
        let workers = rectifiers.count
        let group = DispatchGroup()
        let started = ContinuousClock.now
        for worker in 0..<workers {
            let rectifier = rectifiers[worker]
            group.enter()
            let thread = Thread { [self] in
                defer { group.leave() }
                var k = worker
                while k < todo.count, failure.withLock({ $0 == nil }) {
                    do {
                        try rectifyPair(todo[k], with: rectifier, format: format)
                        done.withLock { $0 += 1 }
                    } catch {
                        failure.withLock { if $0 == nil { $0 = "\(error)" } }
                    }
                    k += workers
                }
            }
            thread.name = "parallax.rectify-dataset.\(worker)"
            thread.start()
        }
        let status = StatusLine(write: { if !quiet { FileHandle.standardError.write(Data($0.utf8)) } })
        func elapsed() -> Double { (ContinuousClock.now - started).seconds }
        while group.wait(timeout: .now() + 0.5) == .timedOut {
            let n = done.withLock { $0 }
            status.show(String(format: "rectified %d of %d pairs (%.1f pairs/s)", n, todo.count, Double(n) / max(elapsed(), 1e-9)))
        }
        let n = done.withLock { $0 }
        status.finish(String(format: "rectified %d of %d pairs (%.1f pairs/s)", n, todo.count, Double(n) / max(elapsed(), 1e-9)))
        if let message = failure.withLock({ $0 }) {
            throw CLIError("\(message) (\(n) pairs were finished and stay; a rerun does the rest)")
        }
        outcome.rectified = n
        outcome.seconds = elapsed()
        outcome.simd = rectifiers.first?.simdLevel
        return outcome
    }

    /// Loads, rectifies, encodes and writes pair `k`: each file atomically, the right after the left.
    private func rectifyPair(_ k: Int, with rectifier: Rectifier, format: PixelFormat) throws {
        let pair = pairs[k]
        var left = try dataset.image(.left, pair.left)
        var right = try dataset.image(.right, pair.right)
        // One pixel format for both (a gray camera beside a colour one: both as the first pair's).
        if left.format != format { left = try left.converted(to: format) }
        if right.format != format { right = try right.converted(to: format) }
        let (l, r) = try rectifier.rectify(left: left, right: right)
        for (side, image) in [(StereoSide.left, l), (.right, r)] {
            let path = cameraFolder(side) + "/data/" + fileName(side, pair: k)
            try FileAccess.writeAtomically(try image.encoded(as: .png, destination: path), toPath: path)
        }
    }

    /// Removes the `<file>.partial-…` a killed run left: of these pairs' images only when
    /// `everything` is false (other shards may be writing theirs, and the shared lists, now);
    /// all of them, lists and manifest included, for a run of every pair (the folder's only writer).
    private func removeTemporaries(of range: Set<Int>, everything: Bool) {
        /// Removes the temporaries in `folder` of the files `isMine` accepts (by the name they stand for).
        func tidy(_ folder: String, _ isMine: (String) -> Bool) {
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                if let marker = entry.range(of: ".partial-"), isMine(String(entry[..<marker.lowerBound])) { unlink(folder + "/" + entry) }
            }
        }
        for side in StereoSide.allCases {
            let mine = Set(range.map { fileName(side, pair: $0) })
            tidy(cameraFolder(side) + "/data") { everything || mine.contains($0) }
        }
        if everything {
            for folder in [output] + StereoSide.allCases.map(cameraFolder) { tidy(folder) { _ in true } }
        }
    }

    /// Each camera's `data.csv`: every pair of the recording, whichever shard wrote its images.
    func writeLists() throws {
        for side in StereoSide.allCases {
            var text = "#timestamp [ns],filename\n"
            let log = dataset.logs[side]
            for pair in pairs {
                let stamp = log.entries[side == .left ? pair.left : pair.right].timestampNanoseconds
                text += "\(stamp),\(stamp).png\n"
            }
            do { try FileAccess.writeAtomically(text, toPath: cameraFolder(side) + "/data.csv") } catch { throw CLIError("\(error)") }
        }
    }
}
