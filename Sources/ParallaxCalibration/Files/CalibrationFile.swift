#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ParallaxGeometry

/// Reads a stereo calibration in any format Parallax writes, told apart by content, not
/// by file extension:
///
/// - Parallax JSON (`calibrate --output`);
/// - OpenCV FileStorage YAML (`calibrate --opencv-yaml`, or `stereo_calib`'s intrinsics and
///   extrinsics files given together as `intrinsics.yml,extrinsics.yml`), with M1/D1/M2/D2
///   (or K1/D1/K2/D2), R and T;
/// - a pair of ROS camera_info files (`calibrate --ros-dir`): the folder that holds
///   left.yaml and right.yaml, or `left.yaml,right.yaml`;
/// - an EuRoC recording whose cameras have a `sensor.yaml` (`cam0/sensor.yaml`,
///   `cam1/sensor.yaml`, as `capture` writes them with a calibration): the recording's folder.
///
/// Translations from OpenCV files load as `LengthUnit.unitless`: that format records no
/// unit. ROS camera_info pairs and EuRoC `sensor.yaml` pairs load in metres
/// (`LengthUnit.metre`), their formats' unit for every length. A file of another kind (a Kalibr camchain, one camera's camera_info, an image) is
/// named as what it is.
public enum CalibrationFile {
    /// What a file turned out to be.
    public enum Format: String, Sendable, CaseIterable {
        /// Parallax JSON.
        case parallaxJSON = "Parallax JSON"
        /// OpenCV FileStorage YAML.
        case openCVYAML = "OpenCV YAML"
        /// Two ROS camera_info files.
        case rosCameraInfo = "ROS camera_info"
        /// An EuRoC recording's two `sensor.yaml` files.
        case eurocSensor = "EuRoC sensor.yaml"
    }

    /// The two `sensor.yaml` files of an EuRoC recording in `folder`, when both are there.
    static func sensorFiles(in folder: String) -> [String]? {
        let folder = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        let files = [folder + "/cam0/sensor.yaml", folder + "/cam1/sensor.yaml"]
        return files.allSatisfy(exists) ? files : nil
    }

    /// The files `source` names, as ``load(_:)`` reads them: the file itself, a folder's ROS
    /// `left.yaml` and `right.yaml`, or the two files of a comma-separated pair. For checks
    /// that an output is not one of a command's inputs.
    public static func files(of source: String) -> [String] {
        if exists(source) && !isFolder(source) { return [source] }
        if isFolder(source), let sensors = sensorFiles(in: source) { return sensors }
        if isFolder(source) {
            let folder = source.hasSuffix("/") ? String(source.dropLast()) : source
            return [folder + "/left.yaml", folder + "/right.yaml"]
        }
        return source.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }

    /// Reads the calibration `source` names: one file, a folder with ROS `left.yaml` and
    /// `right.yaml`, or two files separated by a comma.
    ///
    /// - Throws: ``CalibrationFormatError`` naming the file and what is wrong, or what the
    ///   file is when it is not a calibration Parallax reads.
    public static func load(_ source: String) throws(CalibrationFormatError) -> (calibration: StereoCalibration, format: Format) {
        // A comma separates two files, unless the whole text names an existing file.
        var paths = exists(source) ? [source] : source.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if isFolder(source), let sensors = sensorFiles(in: source) {
            var cameras: [EuRoCSensorYAML] = []
            for path in sensors {
                do {
                    cameras.append(try EuRoCSensorYAML(text: try FileAccess.readText(atPath: path, as: .calibration), file: path))
                } catch let error as FileAccessError {
                    throw CalibrationFormatError(file: path, line: nil, message: Self.reason(error))
                } catch let error as CalibrationFormatError {
                    throw error
                } catch {
                    throw CalibrationFormatError(file: path, line: nil, message: "\(error)")
                }
            }
            return (EuRoCSensorYAML.stereoCalibration(left: cameras[0], right: cameras[1]), .eurocSensor)
        }
        if paths.count == 1, isFolder(source) {
            let folder = source.hasSuffix("/") ? String(source.dropLast()) : source
            paths = [folder + "/left.yaml", folder + "/right.yaml"]
            for path in paths where !exists(path) {
                throw CalibrationFormatError(
                    file: source, line: nil,
                    message: "is a folder without \(path.split(separator: "/").last ?? ""); a calibration folder holds the ROS camera_info files left.yaml and right.yaml (as calibrate --ros-dir writes them), or is an EuRoC recording with cam0/sensor.yaml and cam1/sensor.yaml")
            }
        }
        guard (1...2).contains(paths.count), paths.allSatisfy({ !$0.isEmpty }) else {
            throw CalibrationFormatError(file: source, line: nil,
                                         message: "give one calibration file, or two separated by a comma (left.yaml,right.yaml)")
        }
        var texts: [(text: String, file: String)] = []
        for path in paths {
            do {
                texts.append((try FileAccess.readText(atPath: path, as: .calibration), path))
            } catch {
                throw CalibrationFormatError(file: path, line: nil, message: Self.reason(error))
            }
        }
        let kinds = texts.map { kind(of: $0.text) }
        switch (kinds.count, kinds.first) {
        case (1, .parallaxJSON?):
            do {
                return (try StereoCalibration(jsonText: texts[0].text, source: paths[0]), .parallaxJSON)
            } catch {
                throw CalibrationFormatError(file: paths[0], line: nil, message: error.description.replacingOccurrences(of: paths[0] + ": ", with: ""))
            }
        case (_, .openCVYAML?) where kinds.allSatisfy({ $0 == .openCVYAML }):
            return (try OpenCVStereoFile.calibration(from: texts), .openCVYAML)
        case (2, .rosCameraInfo?) where kinds[1] == .rosCameraInfo:
            let left = try ROSCameraInfo(text: texts[0].text, file: paths[0])
            let right = try ROSCameraInfo(text: texts[1].text, file: paths[1])
            return (try ROSCameraInfo.stereoCalibration(left: left, right: right, rightFile: paths[1]), .rosCameraInfo)
        case (1, .rosCameraInfo?):
            throw CalibrationFormatError(
                file: paths[0], line: nil,
                message: "is one camera's ROS camera_info; a stereo calibration needs both: give the folder that holds left.yaml and right.yaml, or left.yaml,right.yaml")
        default:
            for (index, kind) in kinds.enumerated() where kind.isOther {
                throw CalibrationFormatError(
                    file: paths[index], line: nil,
                    message: "is \(kind.name), not a calibration Parallax reads (Parallax JSON, OpenCV YAML, or a pair of ROS camera_info files)")
            }
            throw CalibrationFormatError(
                file: source, line: nil,
                message: "mixes \(kinds.map(\.name).joined(separator: " and ")); give one Parallax JSON or OpenCV YAML file, or two ROS camera_info files")
        }
    }

    typealias Kind = CalibrationTextKind

    static func kind(of text: String) -> Kind { CalibrationTextKind(of: text) }

    private static func reason(_ error: FileAccessError) -> String {
        switch error {
        case .cannotOpen(_, let r), .cannotRead(_, let r), .cannotWrite(_, let r), .cannotCreateFolder(_, let r):
            return r.prefix(1).lowercased() + r.dropFirst()
        }
    }

    private static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }
}
