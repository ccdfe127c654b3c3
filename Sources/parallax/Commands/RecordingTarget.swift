import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry

/// How `capture` and `stream --record` write a ROS 2 bag: the options they share.
struct BagOptions: ParsableArguments {
    @Flag(name: .long, help: "Write the recording as a rosbag2 folder (metadata.yaml and NAME_0.mcap), as ros2 bag record does.")
    var bag = false

    @Option(name: .customLong("bag-compression"), help: "In a bag (NAME.mcap or --bag): store its chunks as they are (none, the default) or compressed with zstd.")
    var compression: MCAPWriter.Compression?

    @Option(name: .customLong("frame-ids"), help: "In a bag: the header frame_id of the left and right images, as LEFT,RIGHT (default: stereo_left,stereo_right).",
            transform: BagOptions.frameIDs)
    var frameIDs: PerSide<String>?

    /// `LEFT,RIGHT`: two names, each without spaces or commas (ROS frame names).
    static func frameIDs(_ text: String) throws -> PerSide<String> {
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard names.count == 2, names.allSatisfy({ !$0.isEmpty && !$0.contains(where: \.isWhitespace) }) else {
            throw ValidationError("--frame-ids takes two frame names, LEFT,RIGHT (e.g. left_camera_optical,right_camera_optical), got '\(text)'")
        }
        return PerSide(left: names[0], right: names[1])
    }

    /// True when any of these options was given.
    var anyGiven: Bool { bag || compression != nil || frameIDs != nil }
}

/// Where `capture --output` and `stream --record` write a session's pairs, chosen by the
/// path's name and `--bag`: an EuRoC folder, a ROS 2 bag in one MCAP file (`NAME.mcap`), or
/// a rosbag2 folder (`--bag`). One way to open each, so the two commands cannot drift apart.
struct RecordingTarget {
    /// The path as given.
    var path: String
    /// The option that named it, for messages (`--output`, `--record`).
    var option: String
    /// `--bag`, `--bag-compression`, `--frame-ids`.
    var bagOptions: BagOptions
    /// `--overwrite`: replace an older recording at the path.
    var overwrite: Bool

    private var bag: Bool { bagOptions.bag }
    private var compression: MCAPWriter.Compression? { bagOptions.compression }
    private var frameIDs: PerSide<String> { bagOptions.frameIDs ?? PerSide(left: "stereo_left", right: "stereo_right") }

    /// True for a ROS 2 bag (`NAME.mcap`, or a rosbag2 folder with `--bag`) rather than an EuRoC folder.
    var writesBag: Bool { bag || path.lowercased().hasSuffix(".mcap") }

    /// The reasons the options do not go together, for `validate()`.
    func check() throws {
        if bag && path.lowercased().hasSuffix(".mcap") {
            throw ValidationError("--bag writes a rosbag2 folder (NAME/metadata.yaml and NAME/NAME_0.mcap): give \(option) a "
                           + "folder name, or drop --bag for one MCAP file")
        }
        if (compression != nil || bagOptions.frameIDs != nil) && !writesBag {
            throw ValidationError("--bag-compression and --frame-ids are for a ROS 2 bag: give \(option) NAME.mcap, or --bag")
        }
    }

    /// The recorder for a session's pairs. A bag gets each side's camera info with every
    /// image when the calibration is known: the session's (adapted to the format) when it
    /// rectifies, else the source's own (`known`), with the rectification's R and P (the
    /// baseline in metres, ROS's unit); an EuRoC folder gets each camera's `sensor.yaml` then.
    func open(session: StereoSession, known: StereoCalibration?, rateHz: Double?) throws -> any StereoPairRecorder {
        guard writesBag else {
            let folder = try openFolder()
            try writeSensorFiles(into: folder, session: session, known: known, rateHz: rateHz)
            return folder
        }
        var info: PerSide<ROS2.CameraInfo>?
        if let calibration = session.activeCalibration {
            if let rectification = Self.rectification(of: session) {
                info = Self.cameraInfo(calibration, rectification: rectification)
            } else {
                FileHandle.standardError.write(Data("\(path): no camera_info: \(Self.convergenceUnknown)\n".utf8))
            }
        } else if let known {
            // Raw images of a known rig (the simulated rig's, a recording's): its K and D, with
            // the R and P that rectify them, as ROS's camera_calibration gives a raw stereo camera.
            do {
                info = Self.cameraInfo(known, rectification: try known.rectification(session.options.rectification.options))
            } catch {
                FileHandle.standardError.write(Data("\(path): no camera_info: the rig's calibration does not rectify: \(error)\n".utf8))
            }
        }
        return try openBag(cameraInfo: info)
    }

    /// The rectification a rectifying session's pairs are written with: the session's own, or
    /// for MJPEG (whose decoded pixel format is known only frame by frame) the calibration's
    /// under the session's options, the same unless a convergence plane shifts the images by a
    /// whole sample of that format; `nil` then.
    static func rectification(of session: StereoSession) -> StereoRectification? {
        if let rectification = session.rectification { return rectification }
        guard let calibration = session.activeCalibration, session.options.rectification.convergenceDistance == nil else { return nil }
        return try? calibration.rectification(session.options.rectification.options)
    }

    static let convergenceUnknown = "an MJPEG stream with a convergence plane: the decoded format's whole-sample shift is known "
        + "only frame by frame"

    /// Refuses a path that is the recording being played or the calibration read, or holds
    /// either or lies inside one: a recording never writes over what it reads.
    func checkAgainst(inputs: [(option: String, path: String?)]) throws {
        let target = OutputFiles.resolve(path)
        for case let (option, input?) in inputs {
            let resolved = OutputFiles.resolve(input)
            if resolved == target || resolved.hasPrefix(target + "/") || target.hasPrefix(resolved + "/") {
                throw CLIError("\(self.option) \(path) and \(option) \(input) overlap: what is read is never written over; "
                               + "choose another \(self.option)")
            }
        }
    }

    /// Each side's camera info for a bag: the calibration's K and D, the rectification's R and
    /// P (the baseline in metres, ROS's unit).
    static func cameraInfo(_ calibration: StereoCalibration, rectification: StereoRectification) -> PerSide<ROS2.CameraInfo> {
        let (left, right) = ROSCameraInfo.stereoPair(calibration, rectification: rectification)
        func message(_ file: ROSCameraInfo) -> ROS2.CameraInfo {
            let lens = file.distortion
            return ROS2.CameraInfo(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: 0), frameID: ""),
                                   height: UInt32(file.camera.size.height), width: UInt32(file.camera.size.width),
                                   distortionModel: lens.model, d: lens.coefficients, k: file.camera.intrinsics.matrix.rowMajor,
                                   r: file.rectification.rowMajor, p: file.projection.rowMajor)
        }
        return PerSide(left: message(left), right: message(right))
    }

    /// The bag's recorder: one MCAP file, or a rosbag2 folder with `--bag`, after saying what
    /// it did with unfinished bags of killed runs there (kept, or with `recoveringInterrupted`
    /// false, for output made again from its input, removed).
    func openBag(cameraInfo info: PerSide<ROS2.CameraInfo>?, recoveringInterrupted: Bool = true) throws -> any ImagePairRecorder {
        guard bag else {
            let file = try MCAPRecorder(path: path, replacingExisting: overwrite, frameIDs: frameIDs, cameraInfo: info,
                                        compression: compression ?? .none, recoveringInterrupted: recoveringInterrupted)
            for note in file.tidied { FileHandle.standardError.write(Data("\(path): \(note)\n".utf8)) }
            return file
        }
        let folder = try ROS2BagFolderRecorder(directory: path, replacingExisting: overwrite, frameIDs: frameIDs, cameraInfo: info,
                                               compression: compression ?? .none)
        for note in folder.tidied { FileHandle.standardError.write(Data("\(path): \(note)\n".utf8)) }
        return folder
    }

    /// The EuRoC folder's recorder, after saying what it tidied of an interrupted run there.
    func openFolder() throws -> EuRoCRecorder {
        for note in try EuRoCRecorder.tidyInterruptedRecording(in: path) {
            FileHandle.standardError.write(Data("\(path): \(note)\n".utf8))
        }
        return try EuRoCRecorder(directory: path, replacingExisting: overwrite)
    }

    /// Each camera's `sensor.yaml` when the calibration is known: the rectified cameras' when
    /// the pairs are rectified, else the source's own (the simulated rig's, a recording's).
    /// One the format cannot hold exactly is not written, and stderr says why.
    private func writeSensorFiles(into recorder: EuRoCRecorder, session: StereoSession, known: StereoCalibration?,
                                  rateHz: Double?) throws {
        let texts: PerSide<String>
        do {
            if let calibration = session.activeCalibration {
                // Rectified pairs: the rectified cameras, or nothing (never the raw rig's).
                guard let rectification = Self.rectification(of: session) else {
                    FileHandle.standardError.write(Data("\(path): no sensor.yaml written: \(Self.convergenceUnknown)\n".utf8))
                    return
                }
                texts = try EuRoCSensorFile.texts(rectifiedBy: rectification, of: calibration, rateHz: rateHz)
            } else if let known {
                texts = try EuRoCSensorFile.texts(for: known, rateHz: rateHz)
            } else {
                return
            }
        } catch {
            if case .recording(_, let reason) = error {
                FileHandle.standardError.write(Data("\(path): no sensor.yaml written: \(reason)\n".utf8))
            }
            return
        }
        do {
            try recorder.writeSensorFiles(texts)
        } catch {
            recorder.abandon()
            throw error
        }
    }
}
