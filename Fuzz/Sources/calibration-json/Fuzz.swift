import FuzzSupport
import ParallaxCalibration
import ParallaxGeometry

/// The Parallax calibration JSON: parsed from memory, then, when it is a calibration,
/// written and read back: what Parallax writes it must read as the same calibration, and
/// writing that again must give the same text. The same bytes then
/// go through `CalibrationFile.load` from a file, which tells the formats apart by content.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCalibrationJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    let text = Fuzz.text(bytes)
    if let calibration = try? StereoCalibration(jsonText: text, source: "input.json") {
        let written = calibration.jsonText()
        do {
            let again = try StereoCalibration(jsonText: written, source: "written.json")
            Fuzz.expect(again == calibration, "the JSON Parallax wrote reads back as another calibration:\n\(written)")
            Fuzz.expect(again.jsonText() == written, "writing the JSON read back gives other text:\n\(written)")
        } catch {
            Fuzz.fail("the JSON Parallax wrote does not read back: \(error)\n\(written)")
        }
    }
    _ = try? CalibrationFile.load(Fuzz.file(named: "calibration", holding: bytes))
    return 0
}

@_cdecl("calibration_json_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzCalibrationJSON)
}
