import Foundation
import ParallaxGeometry
import ParallaxImage
import Synchronization

/// Writes frames in the EuRoC / ASL dataset layout, the one
/// ``RecordedFolderDevice`` reads:
///
///     DIR/cam0/data.csv        #timestamp [ns],filename
///     DIR/cam0/data/<ns>.png
///     DIR/cam1/...
///
/// Each image is written atomically (temporary file, then rename) as soon as
/// it is recorded; each `data.csv` is written atomically by ``finish()``
/// (and ``flush()``), so an interrupted recording never leaves a
/// half-written file, only images the CSV does not list yet. Compressed
/// frames (MJPEG) are stored as they came, as `.jpg`.
public final class EuRoCRecorder: Sendable {
    /// The dataset folder.
    public let directory: String
    /// File extension for uncompressed frames (`png` by default; `pgm` and `ppm` also work).
    public let imageExtension: String
    private let rows: Locked<[[(Int64, String)]]>
    /// Runs before each pair is written: the tests' slow disk.
    private let beforeWritingPair: (@Sendable () -> Void)?

    /// Creates `DIR/camN/data/` for `cameraCount` cameras.
    ///
    /// A recording never mixes with an older one: a folder that exists and is not empty is
    /// refused, unless `replacingExisting` is true, in which case its `camN` folders (an
    /// older recording) are removed first and anything else in it is left alone.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` when the folder is not empty or a
    ///   folder cannot be created or cleared.
    public convenience init(directory: String, cameraCount: Int = 2, imageExtension: String = "png",
                            replacingExisting: Bool = false) throws(CaptureError) {
        try self.init(directory: directory, cameraCount: cameraCount, imageExtension: imageExtension,
                      replacingExisting: replacingExisting, beforeWritingPair: nil)
    }

    /// As the public initializer, with `beforeWritingPair` run before each pair is written
    /// (tests make the disk slow with it).
    package init(directory: String, cameraCount: Int = 2, imageExtension: String = "png",
                 replacingExisting: Bool = false, beforeWritingPair: (@Sendable () -> Void)?) throws(CaptureError) {
        self.beforeWritingPair = beforeWritingPair
        self.directory = directory
        self.imageExtension = imageExtension
        self.rows = Locked(Array(repeating: [], count: max(1, cameraCount)))
        let existing = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        if !existing.isEmpty {
            guard replacingExisting else {
                throw .recording(path: directory, reason: "the folder is not empty (\(existing.count) entries); a new recording "
                                 + "would mix with what is there. Choose an empty or new folder, or ask to overwrite it")
            }
            for entry in existing where entry.hasPrefix("cam") && entry.dropFirst(3).allSatisfy(\.isNumber) {
                do { try FileManager.default.removeItem(atPath: directory + "/" + entry) } catch {
                    throw .recording(path: directory + "/" + entry, reason: "cannot remove the older recording: \(error.localizedDescription)")
                }
            }
        }
        for index in 0..<max(1, cameraCount) {
            let folder = Self.dataFolder(directory, index)
            do {
                try FileAccess.createDirectories(atPath: folder)
            } catch {
                throw .recording(path: error.path, reason: error.reason)
            }
        }
    }

    static func cameraFolder(_ directory: String, _ index: Int) -> String { directory + "/cam\(index)" }
    static func dataFolder(_ directory: String, _ index: Int) -> String { cameraFolder(directory, index) + "/data" }

    /// Writes one frame of camera `index` (0 = left) and remembers it for the CSV.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the image file.
    public func record(_ frame: Frame, camera index: Int) throws(CaptureError) {
        let count = rows.withLock { $0.count }
        guard index >= 0 && index < count else {
            throw .recording(path: directory, reason: "camera index \(index) outside 0..<\(count)")
        }
        // Compressed frames are kept as they came (a decoded MJPEG frame's JPEG, not its pixels).
        let compressed = frame.format.pixelFormat == nil
        let name = "\(frame.timestampNanoseconds).\(compressed ? "jpg" : imageExtension)"
        let path = Self.dataFolder(directory, index) + "/" + name
        if !compressed, let image = frame.copyImage() {
            do { try image.write(toFile: path) } catch { throw .recording(path: path, reason: "\(error)") }
        } else {
            do { try FileAccess.writeAtomically(Array(frame.payload.bytes), toPath: path) } catch {
                throw .recording(path: path, reason: "\(error)")
            }
        }
        rows.withLock { $0[index].append((frame.timestampNanoseconds, name)) }
    }

    /// Writes both images of a session's pair (rectified when the session rectifies; MJPEG
    /// frames as they came) as cam0 and cam1, and lists them in the CSVs only once both
    /// are written, so the CSVs always hold whole pairs. A failure removes the image
    /// already written for this pair.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the file.
    public func record(_ pair: StereoPair) throws(CaptureError) {
        beforeWritingPair?()
        var written: [(index: Int, path: String, row: (Int64, String))] = []
        for side in StereoSide.allCases {
            let index = side.rawValue
            do {
                let (path, name) = try write(pair[side], camera: index, rectified: pair.isRectified)
                written.append((index, path, (pair[side].timestampNanoseconds, name)))
            } catch {
                for file in written { try? FileManager.default.removeItem(atPath: file.path) }
                throw error
            }
        }
        rows.withLock { rows in for file in written { rows[file.index].append(file.row) } }
    }

    /// Writes one side's pixels (an unrectified MJPEG frame: its JPEG bytes exactly as they
    /// came); returns the path and the file name.
    private func write(_ side: StereoPairSide, camera index: Int, rectified: Bool) throws(CaptureError) -> (String, String) {
        let asItCame = !rectified && side.frame.map { $0.format.pixelFormat == nil } == true
        if !asItCame, let image = side.image {
            let name = "\(side.timestampNanoseconds).\(imageExtension)"
            let path = Self.dataFolder(directory, index) + "/" + name
            do { try ImageBuffer(copying: image).write(toFile: path) } catch { throw .recording(path: path, reason: "\(error)") }
            return (path, name)
        }
        guard let frame = side.frame else {
            throw .recording(path: Self.dataFolder(directory, index), reason: "the pair has no pixels to record")
        }
        let name = "\(side.timestampNanoseconds).jpg"
        let path = Self.dataFolder(directory, index) + "/" + name
        do { try FileAccess.writeAtomically(Array(frame.payload.bytes), toPath: path) } catch {
            throw .recording(path: path, reason: "\(error)")
        }
        return (path, name)
    }

    /// Number of frames recorded per camera.
    public var frameCounts: [Int] { rows.withLock { $0.map(\.count) } }

    /// Writes every camera's `data.csv` (atomically) for what is recorded so far.
    public func flush() throws(CaptureError) {
        let snapshot = rows.withLock { $0 }
        for (index, entries) in snapshot.enumerated() {
            let path = Self.cameraFolder(directory, index) + "/data.csv"
            var text = "#timestamp [ns],filename\n"
            for (timestamp, name) in entries.sorted(by: { $0.0 < $1.0 }) { text += "\(timestamp),\(name)\n" }
            do { try FileAccess.writeAtomically(text, toPath: path) } catch { throw .recording(path: path, reason: "\(error)") }
        }
    }

    /// Writes the CSVs; the recording is complete afterwards.
    public func finish() throws(CaptureError) { try flush() }
}
