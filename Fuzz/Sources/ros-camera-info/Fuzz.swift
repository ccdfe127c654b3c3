import FuzzSupport
import ParallaxCalibration
import ParallaxGeometry

/// ROS camera_info YAML. A NUL byte splits the input into a left and a right file, read as
/// a stereo pair. A camera_info that reads is written as Parallax writes it; that must read
/// back, and writing it again must give the same text (the first write may normalise: ROS
/// pads plumb_bob to five coefficients).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzROSCameraInfo(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    var infos: [ROSCameraInfo] = []
    for (index, part) in bytes.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false).enumerated() {
        guard let info = try? ROSCameraInfo(text: Fuzz.text(Array(part)), file: "input\(index).yaml") else { continue }
        let written = info.text
        do {
            let again = try ROSCameraInfo(text: written, file: "written.yaml")
            Fuzz.expect(again.text == written, "the camera_info Parallax wrote reads back as other text:\n\(written)\n\(again.text)")
        } catch {
            Fuzz.fail("the camera_info Parallax wrote does not read back: \(error)\n\(written)")
        }
        infos.append(info)
    }
    if infos.count == 2 {
        _ = try? ROSCameraInfo.stereoCalibration(left: infos[0], right: infos[1])
    }
    return 0
}

@_cdecl("ros_camera_info_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzROSCameraInfo)
}
