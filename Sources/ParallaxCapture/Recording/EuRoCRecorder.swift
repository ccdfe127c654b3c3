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
/// Nothing the user had is lost, whatever ends the recording:
///
/// - Each image is written atomically (a temporary file, then a rename), and its line is
///   appended to its camera's `data.csv` as soon as the image is in place (a pair's lines
///   once both images are), one `write(2)` each: a recording killed at any moment (even by
///   SIGKILL) has CSVs that list every image but at most the one or two being written when
///   it died. Compressed frames (MJPEG) are stored as they came, as `.jpg`.
/// - While it records, `DIR/.parallax-recording` names the recording process. A recorder
///   opened on a folder whose recording process is gone tidies what that process left:
///   images its CSVs do not list, temporary files and an unfinished replacement (each listed
///   in ``tidied``). A folder another live process records into is refused.
/// - Replacing an older recording (`replacingExisting`) writes the new one in a staging
///   folder inside `DIR`; ``finish()`` swaps it in, and ``abandon()`` (or any end before
///   `finish()`) leaves the older one as it was.
public final class EuRoCRecorder: Sendable {
    /// The dataset folder.
    public let directory: String
    /// File extension for uncompressed frames (`png` by default; `pgm` and `ppm` also work).
    public let imageExtension: String
    /// What the recorder tidied in `directory` before starting: what an interrupted
    /// recording there had left (empty when there was nothing). Worth telling the user.
    public let tidied: [String]
    /// True when this recording replaces an older one in `directory` on ``finish()``.
    public var replacesOlderRecording: Bool { staging != nil }

    /// Where the camera folders are written: `directory`, or the staging folder.
    private let root: String
    private let staging: String?
    private let state: Locked<WritingState>
    /// Runs before each pair is written: the tests' slow disk.
    private let beforeWritingPair: (@Sendable () -> Void)?

    private struct WritingState {
        /// Each camera's `data.csv`, open for appending (`nil` once closed).
        var csv: PerSide<FileDescriptor?>
        var rows = PerSide(repeating: 0)
        var open = true
    }

    /// The file that says a recording is in progress in a folder, and by which process.
    static let markerName = ".parallax-recording"
    static let stagingPrefix = ".parallax-staging-"

    /// Creates `DIR/cam0/data/` (the left camera's), `DIR/cam1/data/` (the right's) and
    /// their `data.csv`.
    ///
    /// A recording never mixes with an older one: a folder that exists and is not empty is
    /// refused, unless `replacingExisting` is true, in which case its `camN` folders (an
    /// older recording) are replaced at ``finish()`` and anything else in it is left alone.
    /// Every check runs before anything is created.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` when the folder is not empty,
    ///   another process records into it, or a folder or file cannot be created.
    public convenience init(directory: String, imageExtension: String = "png",
                            replacingExisting: Bool = false) throws(CaptureError) {
        try self.init(directory: directory, imageExtension: imageExtension,
                      replacingExisting: replacingExisting, beforeWritingPair: nil)
    }

    /// As the public initializer, with `beforeWritingPair` run before each pair is written
    /// (tests make the disk slow with it).
    package init(directory: String, imageExtension: String = "png",
                 replacingExisting: Bool = false, beforeWritingPair: (@Sendable () -> Void)?) throws(CaptureError) {
        self.beforeWritingPair = beforeWritingPair
        self.directory = directory
        self.imageExtension = imageExtension
        tidied = try Self.tidyInterruptedRecording(in: directory)
        let existing = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0 != Self.markerName && !$0.hasPrefix(Self.stagingPrefix) }
        if !existing.isEmpty && !replacingExisting {
            throw .recording(path: directory, reason: "the folder is not empty (\(existing.count) entries); a new recording "
                             + "would mix with what is there. Choose an empty or new folder, or ask to overwrite it")
        }
        staging = existing.isEmpty ? nil : directory + "/" + Self.stagingPrefix + "\(getpid())"
        root = staging ?? directory
        // Checks done: from here on the folder is written.
        var descriptors = PerSide<FileDescriptor?>(repeating: nil)
        do {
            try FileAccess.createDirectories(atPath: directory)
            try FileAccess.writeAtomically("\(getpid())\n", toPath: directory + "/" + Self.markerName)
            for side in StereoSide.allCases {
                try FileAccess.createDirectories(atPath: Self.dataFolder(root, side))
            }
        } catch {
            throw .recording(path: error.path, reason: error.reason)
        }
        for side in StereoSide.allCases {
            let path = Self.cameraFolder(root, side) + "/data.csv"
            let file = FileDescriptor(opening: path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, mode: 0o644)
            guard let file, Self.append("#timestamp [ns],filename\n", to: file) else {
                // The descriptors opened so far close as they go.
                throw .recording(path: path, reason: "cannot write: \(String(cString: strerror(errno)))")
            }
            descriptors[side] = file
        }
        state = Locked(WritingState(csv: descriptors))
    }

    deinit {
        state.withLock { state in for file in state.csv.both { file?.close() } }
    }

    /// Writes each camera's `sensor.yaml` (``EuRoCSensorFile``) beside its `data.csv`,
    /// atomically; when replacing an older recording, into the new one (swapped in at ``finish()``).
    public func writeSensorFiles(_ texts: PerSide<String>) throws(CaptureError) {
        for side in StereoSide.allCases {
            do {
                try FileAccess.writeAtomically(texts[side], toPath: Self.cameraFolder(root, side) + "/sensor.yaml")
            } catch {
                throw .recording(path: error.path, reason: error.reason)
            }
        }
    }

    /// `DIR/cam0` for the left camera, `DIR/cam1` for the right (EuRoC numbers its cameras).
    static func cameraFolder(_ directory: String, _ side: StereoSide) -> String { directory + "/cam\(side.rawValue)" }
    static func dataFolder(_ directory: String, _ side: StereoSide) -> String { cameraFolder(directory, side) + "/data" }

    /// Writes one frame of the `side` camera and lists it in that camera's CSV.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the image file, or the
    ///   folder once the recording was finished or abandoned.
    public func record(_ frame: Frame, side: StereoSide) throws(CaptureError) {
        try checkOpen()
        // Compressed frames are kept as they came (a decoded MJPEG frame's JPEG, not its pixels).
        let compressed = frame.format.pixelFormat == nil
        let name = "\(frame.timestampNanoseconds).\(compressed ? "jpg" : imageExtension)"
        let path = Self.dataFolder(root, side) + "/" + name
        if !compressed, let image = frame.copyImage() {
            do { try image.write(toFile: path) } catch { throw .recording(path: path, reason: "\(error)") }
        } else {
            do { try FileAccess.writeAtomically(Array(frame.payload.bytes), toPath: path) } catch {
                throw .recording(path: path, reason: "\(error)")
            }
        }
        try list([(side, path, frame.timestampNanoseconds, name)])
    }

    /// Writes both images of a session's pair (rectified when the session rectifies; MJPEG
    /// frames as they came) as cam0 and cam1, and lists them in the CSVs only once both
    /// are written, so the CSVs hold whole pairs. A failure removes the image already
    /// written for this pair.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the file.
    public func record(_ pair: StereoPair) throws(CaptureError) {
        beforeWritingPair?()
        try checkOpen()
        var written: [(side: StereoSide, path: String, timestamp: Int64, name: String)] = []
        for side in StereoSide.allCases {
            do {
                let (path, name) = try write(pair[side], of: side, rectified: pair.isRectified)
                written.append((side, path, pair[side].timestampNanoseconds, name))
            } catch {
                for file in written { unlink(file.path) }
                throw error
            }
        }
        try list(written)
    }

    /// Appends the CSV lines of images now in place; an image whose line cannot be written
    /// is removed, so the CSVs and the folders always agree.
    private func list(_ files: [(side: StereoSide, path: String, timestamp: Int64, name: String)]) throws(CaptureError) {
        let failure: CaptureError? = state.withLock { state in
            guard state.open else {
                return .recording(path: directory, reason: "the recording was already finished or abandoned")
            }
            for file in files {
                guard let csv = state.csv[file.side], Self.append("\(file.timestamp),\(file.name)\n", to: csv) else {
                    return .recording(path: Self.cameraFolder(root, file.side) + "/data.csv",
                                      reason: "cannot write: \(String(cString: strerror(errno)))")
                }
                state.rows[file.side] += 1
            }
            return nil
        }
        if let failure {
            for file in files { unlink(file.path) }
            throw failure
        }
    }

    private func checkOpen() throws(CaptureError) {
        guard state.withLock({ $0.open }) else {
            throw .recording(path: directory, reason: "the recording was already finished or abandoned")
        }
    }

    /// Writes one side's pixels (an unrectified MJPEG frame: its JPEG bytes exactly as they
    /// came); returns the path and the file name.
    private func write(_ image: StereoPairSide, of side: StereoSide, rectified: Bool) throws(CaptureError) -> (String, String) {
        let asItCame = !rectified && image.frame.map { $0.format.pixelFormat == nil } == true
        if !asItCame, let pixels = image.image {
            let name = "\(image.timestampNanoseconds).\(imageExtension)"
            let path = Self.dataFolder(root, side) + "/" + name
            do { try ImageBuffer(copying: pixels).write(toFile: path) } catch { throw .recording(path: path, reason: "\(error)") }
            return (path, name)
        }
        guard let frame = image.frame else {
            throw .recording(path: Self.dataFolder(root, side), reason: "the pair has no pixels to record")
        }
        let name = "\(image.timestampNanoseconds).jpg"
        let path = Self.dataFolder(root, side) + "/" + name
        do { try FileAccess.writeAtomically(Array(frame.payload.bytes), toPath: path) } catch {
            throw .recording(path: path, reason: "\(error)")
        }
        return (path, name)
    }

    /// Number of frames recorded (and listed) per camera.
    public var frameCounts: PerSide<Int> { state.withLock { $0.rows } }

    /// True until ``finish()`` or ``abandon()``.
    public var isOpen: Bool { state.withLock { $0.open } }

    /// Syncs every camera's `data.csv` to the disk (each line is already in the file as
    /// soon as its image is).
    public func flush() throws(CaptureError) {
        let failed: String? = state.withLock { state in
            for side in StereoSide.allCases where state.csv[side].map({ !$0.sync() }) ?? false {
                return Self.cameraFolder(root, side) + "/data.csv"
            }
            return nil
        }
        if let failed { throw .recording(path: failed, reason: "cannot write: \(String(cString: strerror(errno)))") }
    }

    /// Ends the recording: the CSVs are synced and closed, and a replacement takes the older
    /// recording's place (its `camN` folders; anything else in the folder stays). Calling it
    /// again does nothing.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` when a file cannot be synced or a
    ///   folder cannot be moved; the older recording is then put back.
    public func finish() throws(CaptureError) {
        guard closeFiles() else { return }
        var failure: CaptureError?
        if let staging {
            failure = swapIn(staging)
            if failure != nil { try? FileManager.default.removeItem(atPath: staging) }
        }
        unlink(directory + "/" + Self.markerName)
        if let failure { throw failure }
    }

    /// Ends the recording without keeping it as a replacement: a recording that replaces an
    /// older one is discarded and the older one stays as it was; a recording in a new folder
    /// keeps what was written (its CSVs list exactly its images). Safe to call from a signal
    /// handler's clean-up and more than once.
    public func abandon() {
        guard closeFiles() else { return }
        if let staging { try? FileManager.default.removeItem(atPath: staging) }
        unlink(directory + "/" + Self.markerName)
    }

    /// Closes the CSVs; false when the recording was already closed.
    private func closeFiles() -> Bool {
        state.withLock { state in
            guard state.open else { return false }
            state.open = false
            for file in state.csv.both {
                _ = file?.sync()
                file?.close()
            }
            state.csv = PerSide(repeating: nil)
            return true
        }
    }

    /// Moves the older recording's `camN` folders aside into the staging folder and the new
    /// ones into their place, then removes the staging folder with the older recording.
    private func swapIn(_ staging: String) -> CaptureError? {
        let older = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter(Self.isCameraFolder)
        var moved: [(from: String, to: String)] = []
        func undo() { for move in moved.reversed() { rename(move.to, move.from) } }
        for name in older {
            let (from, to) = (directory + "/" + name, staging + "/older-" + name)
            guard rename(from, to) == 0 else {
                let reason = String(cString: strerror(errno))
                undo()
                return .recording(path: from, reason: "cannot move the older recording aside: \(reason); it was kept")
            }
            moved.append((from, to))
        }
        for side in StereoSide.allCases {
            let (from, to) = (Self.cameraFolder(staging, side), Self.cameraFolder(directory, side))
            guard rename(from, to) == 0 else {
                let reason = String(cString: strerror(errno))
                undo()
                return .recording(path: to, reason: "cannot move the new recording into place: \(reason); the older one was kept")
            }
            moved.append((from, to))
        }
        try? FileManager.default.removeItem(atPath: staging)
        return nil
    }

    /// Appends `line` with one `write(2)` (`O_APPEND`: the whole line lands at the end, or
    /// an error says it did not); false on a failure, with `errno` set.
    private static func append(_ line: String, to file: FileDescriptor) -> Bool {
        Array(line.utf8).withUnsafeBytes { file.writeAll($0) }
    }

    /// True for a recording's camera folder name (`cam` and a number), what `--overwrite` replaces.
    package static func isCameraFolder(_ name: some StringProtocol) -> Bool {
        name.hasPrefix("cam") && name.count > 3 && name.dropFirst(3).allSatisfy(\.isNumber)
    }

    /// Tidies what a recording interrupted in `directory` left (its process gone): images
    /// its CSVs do not list, temporary files, and an unfinished replacement. Returns what
    /// was done, in words (empty when the folder holds no interrupted recording). The
    /// initializer does this itself; call it first to tell the user also when the
    /// initializer then refuses the folder.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` when a live process records there.
    public static func tidyInterruptedRecording(in directory: String) throws(CaptureError) -> [String] {
        let marker = directory + "/" + markerName
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let stagings = entries.filter { $0.hasPrefix(stagingPrefix) }
        guard entries.contains(markerName) || !stagings.isEmpty else { return [] }
        let owner = (try? FileAccess.readText(atPath: marker, as: .file))
            .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        if let owner, owner != getpid(), kill(owner, 0) == 0 || errno == EPERM {
            throw .recording(path: directory, reason: "another process (\(owner)) is recording into this folder; "
                             + "wait for it to end or choose another folder")
        }
        var notes: [String] = []
        for name in stagings {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
            notes.append("removed the unfinished replacement an interrupted recording left (\(name)); "
                         + "the recording it was to replace is unchanged")
        }
        for camera in entries.filter(isCameraFolder).sorted() {
            let folder = directory + "/" + camera
            let listed = Set(((try? FileAccess.readText(atPath: folder + "/data.csv", as: .log)) ?? "")
                .split(separator: "\n").filter { !$0.hasPrefix("#") }
                .compactMap { $0.split(separator: ",").last.map { String($0).trimmingCharacters(in: .whitespaces) } })
            let images = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/data")) ?? []
            let strays = images.filter { !listed.contains($0) }
            for stray in strays { unlink(folder + "/data/" + stray) }
            if !strays.isEmpty {
                notes.append("\(camera): removed \(strays.count) file(s) an interrupted recording wrote after the last line of "
                             + "its data.csv (\(strays.sorted().prefix(3).joined(separator: ", "))\(strays.count > 3 ? ", …" : ""))")
            }
        }
        unlink(marker)
        return notes
    }
}
