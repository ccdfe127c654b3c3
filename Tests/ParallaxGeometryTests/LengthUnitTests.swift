import ParallaxGeometry
import Testing

/// The unit a calibration records, and lengths typed with or without one.
@Suite("Length units")
struct LengthUnitTests {
    static func calibration(unit: LengthUnit) -> StereoCalibration {
        let camera = CameraModel(size: ImageSize(width: 640, height: 480),
                                 intrinsics: CameraIntrinsics(fx: 500, fy: 500, cx: 319.5, cy: 239.5), distortion: .none)
        return StereoCalibration(left: camera, right: camera,
                                 extrinsics: RigidTransform(rotation: .identity, translation: SIMD3(-60, 0, 0)),
                                 translationUnit: unit)
    }

    @Test("the unit is written and read back; a file without one is unitless; an unknown one is an error naming the key")
    func fileRoundTrip() throws {
        for unit in LengthUnit.allCases {
            let text = Self.calibration(unit: unit).jsonText()
            #expect(text.contains("\"unit\": \"\(unit.rawValue)\""))
            #expect(try StereoCalibration(jsonText: text).translationUnit == unit)
        }
        let older = Self.calibration(unit: .millimetre).jsonText().replacingOccurrences(of: ",\n  \"unit\": \"mm\"", with: "")
        #expect(!older.contains("unit"))
        #expect(try StereoCalibration(jsonText: older).translationUnit == .unitless)
        let bad = Self.calibration(unit: .millimetre).jsonText().replacingOccurrences(of: "\"mm\"", with: "\"furlong\"")
        #expect(throws: CalibrationFileError.self) { _ = try StereoCalibration(jsonText: bad, source: "rig.json") }
        do {
            _ = try StereoCalibration(jsonText: bad, source: "rig.json")
        } catch {
            #expect(error.description.contains("rig.json") && error.description.contains("unit"))
        }
    }

    @Test("lengths convert between known units, stay as typed when bare, and do not convert to unitless")
    func conversions() throws {
        let metres = try #require(Length(parsing: "1.5m"))
        #expect(metres.value(in: .millimetre) == 1500 && metres.value(in: .centimetre) == 150 && metres.value(in: .metre) == 1.5)
        #expect(metres.value(in: .unitless) == nil)
        #expect(try #require(Length(parsing: "2in")).value(in: .millimetre) == 50.8)
        #expect(try #require(Length(parsing: " 1500 ")).value(in: .metre) == 1500)
        for bad in ["", "m", "-1m", "0", "1e999", "nan", "1.5 km", "1.5mm2"] { #expect(Length(parsing: bad) == nil, "\(bad)") }
    }
}
