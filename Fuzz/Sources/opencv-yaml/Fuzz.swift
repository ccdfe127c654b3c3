import FuzzSupport
import ParallaxCalibration
import ParallaxGeometry

/// OpenCV FileStorage YAML. A NUL byte splits the input into several files read together
/// (OpenCV's sample keeps intrinsics and extrinsics apart). A calibration that reads is
/// written as Parallax writes OpenCV YAML; that must read back, and writing it again must
/// give the same text (the first write may normalise: a lone 0 becomes four coefficients).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpenCVYAML(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    let files = bytes.split(separator: 0, omittingEmptySubsequences: false).enumerated()
        .map { (text: Fuzz.text(Array($0.element)), file: "input\($0.offset).yml") }
    guard let calibration = try? OpenCVStereoFile.calibration(from: files) else { return 0 }
    let written = OpenCVStereoFile.text(for: calibration, rectification: nil)
    do {
        let again = try OpenCVStereoFile.calibration(from: [(written, "written.yml")])
        let rewritten = OpenCVStereoFile.text(for: again, rectification: nil)
        Fuzz.expect(rewritten == written, "the OpenCV YAML Parallax wrote reads back as other text:\n\(written)\n\(rewritten)")
    } catch {
        Fuzz.fail("the OpenCV YAML Parallax wrote does not read back: \(error)\n\(written)")
    }
    return 0
}

@_cdecl("opencv_yaml_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzOpenCVYAML)
}
