import Foundation
import ParallaxGeometry
import Testing

/// Reads the reference figures OpenCV produced (Fixtures/make_fixtures.py; Fixtures/README.md says what each file holds).
enum Fixtures {
    static func json(_ name: String) throws -> JSONValue {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"),
                               "fixture \(name).json missing")
        return try JSONValue(parsing: String(decoding: try Data(contentsOf: url), as: UTF8.self))
    }

    /// The little-endian float32 values of a binary fixture (`<name>.f32`), bit for bit.
    static func float32s(_ name: String) throws -> [Float] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "f32", subdirectory: "Fixtures"),
                               "fixture \(name).f32 missing")
        let data = try Data(contentsOf: url)
        try #require(data.count % 4 == 0, "\(name).f32 holds \(data.count) bytes, not whole float32 values")
        let bytes = [UInt8](data)
        return stride(from: 0, to: bytes.count, by: 4).map { i in
            var bits = UInt32(bytes[i])
            bits |= UInt32(bytes[i + 1]) << 8
            bits |= UInt32(bytes[i + 2]) << 16
            bits |= UInt32(bytes[i + 3]) << 24
            return Float(bitPattern: bits)
        }
    }

    /// A rig stored in the reference file, as a calibration.
    static func rig(_ name: String, in reference: JSONValue) throws -> StereoCalibration {
        let rigs = try #require(reference.object?["rigs"]?.object)
        let rig = try #require(rigs[name], "rig \(name)")
        return try StereoCalibration(jsonText: rig.serialized(), source: "fixture rig \(name)")
    }

    static func numbers(_ v: JSONValue?) throws -> [Double] {
        try #require(v?.array).map { try #require($0.number) }
    }
}
