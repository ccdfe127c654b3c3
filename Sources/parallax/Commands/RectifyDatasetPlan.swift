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
        if let existing = try? FileAccess.readText(atPath: output + "/" + Self.manifestName), existing != manifest {
            throw CLIError("--output \(output) holds a rectification made with another calibration, options or recording "
                           + "(its \(Self.manifestName) differs); choose a new folder, or remove that one first")
        }
        do {
            // The manifest first: a shard starting meanwhile finds either an empty folder or one it can check.
            try FileAccess.createDirectories(atPath: output)
            try FileAccess.writeAtomically(manifest, toPath: output + "/" + Self.manifestName)
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
        let todo = Array(range).filter { k in
            StereoSide.allCases.contains { !FileManager.default.fileExists(atPath: cameraFolder($0) + "/data/" + fileName($0, pair: k)) }
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
