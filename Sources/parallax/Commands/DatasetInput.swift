import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Yams

/// `--left-topic` and `--right-topic`: which image topics of a bag are the two cameras.
struct BagTopicOptions: ParsableArguments {
    @Option(name: .customLong("left-topic"), help: "With a bag: the left camera's image topic (sensor_msgs Image or CompressedImage). Default: of exactly two image topics, the one whose name says left.")
    var left: String?

    @Option(name: .customLong("right-topic"), help: "With a bag: the right camera's image topic. Default: the other of exactly two image topics.")
    var right: String?

    /// The topics to play from `bag`: those named, a topic not named the default's (of
    /// exactly two image topics). `option` names the bag in the error when there is no default.
    func chosen(in bag: MCAPBag, option: String) throws -> PerSide<String> {
        let topics: PerSide<String>
        if let left, let right {
            topics = PerSide(left: left, right: right)
        } else {
            guard let defaults = bag.defaultTopics else {
                throw CLIError("\(option) \(bag.file.name) has \(bag.imageTopics.count) image topics (\(bag.imageTopics.joined(separator: ", "))): "
                               + "name two with --left-topic and --right-topic")
            }
            topics = PerSide(left: left ?? defaults.left, right: right ?? defaults.right)
        }
        guard topics.left != topics.right else {
            throw CLIError("both cameras would be \(topics.left): a stereo pair needs two image topics of \(bag.file.name), one per "
                           + "camera (it has \(bag.imageTopics.joined(separator: ", "))); name them with --left-topic and --right-topic")
        }
        return topics
    }
}

/// A recording read as a dataset for `rectify-dataset`: each camera's frames as a timestamp
/// log (for pairing without touching a pixel) and a way to load any one frame's image.
///
/// An EuRoC folder's logs are its `camN/data.csv`; a bag's are its two image topics, each
/// message stamped with its header stamp, in stamp order.
struct DatasetInput: Sendable {
    /// The path as given.
    let path: String
    /// Each camera's frames in time order (a bag's `filename` is the message's index in
    /// ``bagEntries``).
    let logs: PerSide<RecordedTimestampLog>
    /// What the input is, for messages: "EuRoC folder" or "bag topics /a and /b".
    let description: String
    private let source: Source

    private enum Source: Sendable {
        case folder(PerSide<String>)
        case bag(MCAPBag, topics: PerSide<String>, entries: PerSide<[MCAPMessageEntry]>)
    }

    /// Opens `path`: an EuRoC folder (`cam0`, `cam1`), a ROS 2 bag in one MCAP file, or a
    /// rosbag2 folder holding one; `topics` choose a bag's cameras (found when it has two).
    init(path: String, topics: BagTopicOptions) throws {
        self.path = path
        if let bagPath = try Self.bagFile(of: path, option: "--input") {
            let bag = try MCAPBag(path: bagPath)
            let chosen = try topics.chosen(in: bag, option: "--input")
            var entries = PerSide<[MCAPMessageEntry]>(repeating: [])
            var logs = PerSide(repeating: RecordedTimestampLog(entries: [], path: ""))
            for side in StereoSide.allCases {
                let topic = chosen[side]
                guard bag.imageTopics.contains(topic) else {
                    throw CLIError("--input \(bagPath) has no image topic \(topic); its image topics: \(bag.imageTopics.joined(separator: ", "))")
                }
                // Header stamps, in stamp order: the times the frames were taken (log times may be when they were written).
                let stamped = try (bag.entries[topic] ?? []).map { entry in (entry, try bag.stamp(of: entry, on: topic)) }
                    .sorted { $0.1 < $1.1 }
                entries[side] = stamped.map(\.0)
                logs[side] = RecordedTimestampLog(
                    entries: stamped.enumerated().map { index, item in
                        RecordedTimestampLog.Entry(timestampNanoseconds: item.1, filename: String(index), line: index + 1)
                    },
                    path: "\(bagPath)#\(topic)")
            }
            for side in StereoSide.allCases { try Self.checkDistinct(logs[side], what: "topic \(chosen[side]) of \(bagPath)") }
            self.logs = logs
            description = "bag \(bagPath), topics \(chosen.left) and \(chosen.right)"
            source = .bag(bag, topics: chosen, entries: entries)
        } else {
            let folders = PerSide(left: path + "/cam0", right: path + "/cam1")
            var logs = PerSide(repeating: RecordedTimestampLog(entries: [], path: ""))
            for side in StereoSide.allCases {
                let csv = folders[side] + "/data.csv"
                do {
                    logs[side] = try RecordedTimestampLog(text: try FileAccess.readText(atPath: csv, as: .log), path: csv)
                } catch {
                    throw CLIError("--input \(path): \(error)")
                }
                if logs[side].wasUnsorted {
                    throw CLIError("--input \(csv): its timestamps are not in order; a recording lists its frames as they came")
                }
                try Self.checkDistinct(logs[side], what: csv)
            }
            self.logs = logs
            description = "EuRoC folder \(path)"
            source = .folder(folders)
        }
    }

    /// The MCAP file a recording path holds — the path itself, or the one file of a rosbag2
    /// folder (a folder with `metadata.yaml`) — or `nil` for an EuRoC folder.
    ///
    /// - Throws: a ``CLIError`` naming `option` when nothing is at `path`, or a rosbag2
    ///   folder's `metadata.yaml` does not say one MCAP file that is there: another storage
    ///   (sqlite3's `.db3`), a split bag, a file it names that is missing, metadata that is
    ///   not rosbag2's.
    static func bagFile(of path: String, option: String) throws -> String? {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw CLIError("\(option) \(path): no such file or folder")
        }
        guard isFolder.boolValue else { return path }
        let metadata = path + "/metadata.yaml"
        guard FileManager.default.fileExists(atPath: metadata) else { return nil }
        // What the folder holds is what its metadata says (as rosbag2 reads it), not its listing.
        let info: [String: Any]
        do {
            let text = try FileAccess.readText(atPath: metadata, as: .file)
            info = ((try Yams.load(yaml: text)) as? [String: Any])?["rosbag2_bagfile_information"] as? [String: Any] ?? [:]
        } catch {
            throw CLIError("\(option) \(metadata): cannot be read as rosbag2's metadata: \(error)")
        }
        guard !info.isEmpty else { throw CLIError("\(option) \(metadata): no rosbag2_bagfile_information, so not rosbag2's metadata") }
        let storage = info["storage_identifier"] as? String ?? "none"
        guard storage == "mcap" else {
            throw CLIError("\(option) \(path): a rosbag2 bag stored as \(storage) (metadata.yaml's storage_identifier); Parallax reads "
                           + "MCAP storage: convert it with `ros2 bag convert` to MCAP")
        }
        let files = (info["relative_file_paths"] as? [Any] ?? []).compactMap { $0 as? String }
        guard files.count == 1, let file = files.first else {
            throw CLIError("\(option) \(path): metadata.yaml names \(files.count) files (\(files.joined(separator: ", "))); Parallax "
                           + "plays a bag of one MCAP file: merge a split bag with `ros2 bag convert`")
        }
        let resolved = path + "/" + file
        guard FileManager.default.fileExists(atPath: resolved) else {
            throw CLIError("\(option) \(path): metadata.yaml names \(file), which is not there")
        }
        return resolved
    }

    /// Refuses a camera with two frames at one timestamp: the output names each image by its
    /// frame's time, so two would claim one file.
    private static func checkDistinct(_ log: RecordedTimestampLog, what: String) throws {
        for (a, b) in zip(log.entries, log.entries.dropFirst()) where a.timestampNanoseconds == b.timestampNanoseconds {
            throw CLIError("--input \(what): two frames at \(a.timestampNanoseconds) ns (lines or messages \(a.line) and \(b.line)); "
                           + "a camera takes one frame at a time")
        }
    }

    /// The image of frame `index` (into ``logs``) of `side`'s camera.
    func image(_ side: StereoSide, _ index: Int) throws -> ImageBuffer {
        switch source {
        case .folder(let folders):
            let file = folders[side] + "/data/" + logs[side].entries[index].filename
            do {
                return try ImageBuffer(contentsOfFile: file)
            } catch {
                throw CLIError("\(error)")
            }
        case .bag(let bag, let topics, let entries):
            return try bag.image(entries[side][index], on: topics[side]).image
        }
    }

    /// The median spacing of the left camera's frames (nanoseconds), or `nil` with fewer than two.
    var typicalIntervalNanoseconds: Int64? {
        let stamps = logs.left.entries.map(\.timestampNanoseconds)
        let steps = zip(stamps, stamps.dropFirst()).map { $1 - $0 }.filter { $0 > 0 }.sorted()
        return steps.isEmpty ? nil : steps[steps.count / 2]
    }
}
