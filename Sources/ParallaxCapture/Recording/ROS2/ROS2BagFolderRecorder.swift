import Foundation
import ParallaxGeometry
import ParallaxImage

/// Records a session's pairs as a rosbag2 folder, what `ros2 bag record -s mcap` makes and
/// `ros2 bag info` / `ros2 bag play` read:
///
///     NAME/metadata.yaml     rosbag2's description: topics, types, counts, offered QoS, times
///     NAME/NAME_0.mcap       the messages (an ``MCAPRecorder`` bag: the same topics)
///
/// The folder is written under a hidden name beside it (`.NAME.parallax-staging-PID`) and
/// renamed into place at ``finish()``, once `metadata.yaml` is complete, so a bag folder
/// either is whole or is not there. ``abandon()`` (or any end before `finish()`) removes the
/// staging folder and leaves whatever was at the path as it was. A recording cut short keeps
/// what it wrote: after a write error, ``keepAfterWriteError()`` finishes the bag's whole
/// chunks (``MCAPRecovery``) with their `metadata.yaml`; a staging folder left by a process
/// that was killed is finished so by the next recorder of that name, as `NAME.recovered-PID`
/// beside it, or removed when nothing in it was whole (listed in ``tidied``).
///
/// `metadata.yaml` is rosbag2's version 5 (ROS 2 Humble's), which every later release reads:
/// its `starting_time` and `duration` are the first and last messages' log times, the
/// frames' timestamps (CLOCK_MONOTONIC nanoseconds, as ``MCAPRecorder`` stamps them).
public final class ROS2BagFolderRecorder: ImagePairRecorder {
    /// The bag folder.
    public let directory: String
    /// True when an older bag at ``directory`` is replaced at ``finish()``.
    public let replacesOlderRecording: Bool
    /// What the recorder tidied before starting: staging folders of killed recordings removed,
    /// and whole bags found in such folders, named and left alone.
    public let tidied: [String]
    /// The messages file's name inside the folder (`NAME_0.mcap`, as rosbag2 names its first file).
    public let mcapFileName: String

    private let staging: String
    private let bag: MCAPRecorder
    private let state = Locked(Phase.recording)

    private enum Phase { case recording, finished, abandoned }

    /// The hidden prefix and suffix of a staging folder beside `NAME`.
    static func stagingPrefix(_ name: String) -> String { ".\(name).parallax-staging-" }

    /// Starts a bag folder at `directory`. `frameIDs`, `cameraInfo` and `compression` are
    /// ``MCAPRecorder``'s.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` when `directory` is a file, is a
    ///   folder that is not empty (unless `replacingExisting` and it is a rosbag2 folder, one
    ///   with a `metadata.yaml`), or its parent cannot be written.
    public init(directory: String, replacingExisting: Bool = false,
                frameIDs: PerSide<String> = PerSide(left: "stereo_left", right: "stereo_right"),
                cameraInfo: PerSide<ROS2.CameraInfo>? = nil, compression: MCAPWriter.Compression = .none) throws(CaptureError) {
        let trimmed = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        let name = (trimmed as NSString).lastPathComponent
        guard !name.isEmpty, name != ".", name != "..", name != "/" else {
            throw .recording(path: directory, reason: "a bag folder needs a name of its own (the bag is NAME/NAME_0.mcap)")
        }
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: trimmed, isDirectory: &isFolder)
        if exists && !isFolder.boolValue {
            throw .recording(path: trimmed, reason: "is a file; a rosbag2 bag is a folder (for one MCAP file, name it NAME.mcap)")
        }
        let entries = exists ? ((try? FileManager.default.contentsOfDirectory(atPath: trimmed)) ?? []) : []
        if !entries.isEmpty {
            guard replacingExisting else {
                throw .recording(path: trimmed, reason: "the folder is not empty (\(entries.count) entries); choose a new name, "
                                 + "or replace an older bag on purpose")
            }
            guard entries.contains("metadata.yaml") else {
                throw .recording(path: trimmed, reason: "is not a rosbag2 bag (no metadata.yaml), so it is not replaced; "
                                 + "choose a new name")
            }
        }
        self.directory = trimmed
        replacesOlderRecording = !entries.isEmpty
        mcapFileName = "\(name)_0.mcap"
        let parent = (trimmed as NSString).deletingLastPathComponent
        let folder = parent.isEmpty ? "." : parent
        tidied = Self.removeAbandonedStaging(in: folder, name: name)
        staging = (folder as NSString).appendingPathComponent(Self.stagingPrefix(name) + "\(getpid())")
        try? FileManager.default.removeItem(atPath: staging)
        do {
            try FileAccess.createDirectories(atPath: staging)
        } catch {
            throw .recording(path: error.path, reason: error.reason)
        }
        do {
            bag = try MCAPRecorder(path: (staging as NSString).appendingPathComponent(mcapFileName), frameIDs: frameIDs,
                                   cameraInfo: cameraInfo, compression: compression)
        } catch {
            try? FileManager.default.removeItem(atPath: staging)
            throw error
        }
    }

    deinit {
        if state.withLock({ $0 }) == .recording { try? FileManager.default.removeItem(atPath: staging) }
    }

    /// Pairs written so far.
    public var pairsWritten: Int { bag.pairsWritten }

    /// True until ``finish()`` or ``abandon()``.
    public var isOpen: Bool { state.withLock { $0 == .recording } }

    /// Writes both sides of `pair` (and their camera info) into the bag's MCAP file.
    public func record(_ pair: StereoPair) throws(CaptureError) {
        guard isOpen else { throw .recording(path: directory, reason: "the recording was already finished or abandoned") }
        try bag.record(pair)
    }

    /// Writes a pair given as images (see ``MCAPRecorder/record(images:stamps:rectified:number:)``).
    public func record(images: PerSide<ImageBuffer>, stamps: PerSide<Int64>, rectified: Bool, number: Int) throws(CaptureError) {
        guard isOpen else { throw .recording(path: directory, reason: "the recording was already finished or abandoned") }
        try bag.record(images: images, stamps: stamps, rectified: rectified, number: number)
    }

    /// Finishes the MCAP file, writes `metadata.yaml` and renames the folder into place (over
    /// an older bag when replacing one). Calling it again does nothing.
    public func finish() throws(CaptureError) {
        guard state.withLock({ phase -> Bool in
            guard phase == .recording else { return false }
            phase = .finished
            return true
        }) else { return }
        do {
            do { try bag.finish() } catch {
                // The recorder stays open for keepAfterWriteError(), with the bag's whole chunks.
                state.withLock { $0 = .recording }
                throw error
            }
            let metadata = Self.metadataYAML(bag.contents, fileName: mcapFileName)
            try FileAccess.writeAtomically(metadata, toPath: (staging as NSString).appendingPathComponent("metadata.yaml"))
        } catch let error as CaptureError {
            if !isOpen { try? FileManager.default.removeItem(atPath: staging) }
            throw error
        } catch let error as FileAccessError {
            try? FileManager.default.removeItem(atPath: staging)
            throw .recording(path: error.path, reason: error.reason)
        } catch {
            try? FileManager.default.removeItem(atPath: staging)
            throw .recording(path: directory, reason: "\(error)")
        }
        try moveIntoPlace()
    }

    /// After a write error: ends the recording and keeps its bag's whole chunks, with their
    /// `metadata.yaml`, at ``directory`` (beside it, as `NAME.recovered-PID`, when an older bag
    /// is there). Says what was kept and where, or why nothing could be.
    public func keepAfterWriteError() -> String {
        guard state.withLock({ phase -> Bool in
            guard phase == .recording else { return false }
            phase = .finished
            return true
        }) else { return "\(directory): the recording was already finished or abandoned" }
        let kept: MCAPRecovery.Outcome
        do { kept = try bag.keepWhole() } catch {
            try? FileManager.default.removeItem(atPath: staging)
            return "nothing could be kept: \(error)"
        }
        let destination = replacesOlderRecording ? directory + ".recovered-\(getpid())" : directory
        do {
            try Self.complete(staging, with: kept, fileName: mcapFileName, as: destination)
            return "kept \(kept.pairs) pairs (up to the last whole chunk) in \(destination)"
        } catch {
            return "nothing could be moved into place: \(error)"
        }
    }

    /// Writes `metadata.yaml` for the recovered bag in `folder` and renames the folder to
    /// `destination` (which must not hold anything); on failure the folder stays where it is.
    private static func complete(_ folder: String, with kept: MCAPRecovery.Outcome, fileName: String, as destination: String) throws {
        try FileAccess.writeAtomically(metadataYAML(kept.contents, fileName: fileName),
                                       toPath: (folder as NSString).appendingPathComponent("metadata.yaml"))
        guard rename(folder, destination) == 0 else {
            throw CaptureError.recording(path: destination, reason: "the kept bag cannot be moved here ("
                                         + String(cString: strerror(errno)) + "); it is whole in \(folder)")
        }
    }

    /// Drops the bag being written; whatever was at the path stays as it was.
    public func abandon() {
        let wasRecording = state.withLock { phase -> Bool in
            defer { if phase == .recording { phase = .abandoned } }
            return phase == .recording
        }
        guard wasRecording else { return }
        bag.abandon()
        try? FileManager.default.removeItem(atPath: staging)
    }

    /// Renames the finished staging folder to ``directory``: directly when nothing (or an
    /// empty folder) is there, else the older bag is moved aside first and removed after.
    private func moveIntoPlace() throws(CaptureError) {
        if rename(staging, directory) == 0 { return }
        guard errno == ENOTEMPTY || errno == EEXIST, replacesOlderRecording else {
            let reason = String(cString: strerror(errno))
            throw .recording(path: directory, reason: "the finished bag could not be moved into place (\(reason)); it is in \(staging)")
        }
        let aside = staging + "-older"
        guard rename(directory, aside) == 0 else {
            let reason = String(cString: strerror(errno))
            throw .recording(path: directory, reason: "the older bag could not be moved aside (\(reason)); the new one is in \(staging)")
        }
        guard rename(staging, directory) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = rename(aside, directory)
            throw .recording(path: directory, reason: "the finished bag could not be moved into place (\(reason)); it is in \(staging)")
        }
        try? FileManager.default.removeItem(atPath: aside)
    }

    /// Finishes, or removes, the staging folders of `name` in `folder` whose recording
    /// process is gone: its bag's whole chunks kept as `NAME.recovered-PID` beside it.
    private static func removeAbandonedStaging(in folder: String, name: String) -> [String] {
        let prefix = stagingPrefix(name)
        var removed: [String] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where entry.hasPrefix(prefix) {
            let digits = entry.dropFirst(prefix.count).prefix { $0.isNumber }
            guard let pid = Int32(digits), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let path = (folder as NSString).appendingPathComponent(entry)
            // A whole bag (a finished one that could not be moved into place, or an older one moved
            // aside when its process died): the user's, never removed.
            if FileManager.default.fileExists(atPath: path + "/metadata.yaml") {
                removed.append("left \(entry) alone: it holds a whole bag (metadata.yaml) that was never moved into place")
                continue
            }
            let fileName = "\(name)_0.mcap"
            let destination = (folder as NSString).appendingPathComponent("\(name).recovered-\(pid)")
            var leave = false
            for partial in MCAPRecovery.interrupted(beside: (path as NSString).appendingPathComponent(fileName)) {
                do {
                    let kept = try MCAPRecovery.finish(partial.path, as: (path as NSString).appendingPathComponent(fileName))
                    try complete(path, with: kept, fileName: fileName, as: destination)
                    removed.append("recovered \(kept.pairs) pairs (\(kept.chunks) chunks) from \(entry), the unfinished bag of a "
                                   + "recording that was killed, into \(destination)")
                } catch let error as MCAPRecoveryError where error.keptNothing {
                    continue
                } catch {
                    removed.append("could not recover \(entry), the unfinished bag of a recording that was killed: \(error); "
                                   + "it was left as it is")
                    leave = true
                }
            }
            // Moved into place, or (said above) kept where it is.
            guard FileManager.default.fileExists(atPath: path), !leave else { continue }
            if (try? FileManager.default.removeItem(atPath: path)) != nil {
                removed.append("removed \(entry), the unfinished bag of a recording that was killed")
            }
        }
        return removed
    }

    /// rosbag2's `metadata.yaml` (version 5) for a bag of one MCAP file holding `contents`.
    static func metadataYAML(_ contents: MCAPRecorder.BagContents, fileName: String) -> String {
        let start = contents.firstLogTime ?? 0
        let duration = (contents.lastLogTime ?? start) - start
        let qos = ROS2.offeredQoSProfiles.replacingOccurrences(of: "\n", with: "\\n")
        var lines = [
            "rosbag2_bagfile_information:",
            "  version: 5",
            "  storage_identifier: mcap",
            "  duration:",
            "    nanoseconds: \(duration)",
            "  starting_time:",
            "    nanoseconds_since_epoch: \(start)",
            "  message_count: \(contents.messageCount)",
            // An empty list, not nothing: rosbag2 reads this key as a sequence.
            "  topics_with_message_count:" + (contents.topics.isEmpty ? " []" : ""),
        ]
        for topic in contents.topics {
            lines += [
                "    - topic_metadata:",
                "        name: \(topic.name)",
                "        type: \(topic.type)",
                "        serialization_format: cdr",
                "        offered_qos_profiles: \"\(qos)\"",
                "      message_count: \(topic.messages)",
            ]
        }
        lines += [
            // Chunk compression lives inside the MCAP file; rosbag2's own (file or message
            // compression) is not used.
            "  compression_format: \"\"",
            "  compression_mode: \"\"",
            "  relative_file_paths:",
            "    - \(fileName)",
            "  files:",
            "    - path: \(fileName)",
            "      starting_time:",
            "        nanoseconds_since_epoch: \(start)",
            "      duration:",
            "        nanoseconds: \(duration)",
            "      message_count: \(contents.messageCount)",
        ]
        return lines.joined(separator: "\n") + "\n"
    }
}
