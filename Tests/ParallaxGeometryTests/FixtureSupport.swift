import Foundation
import ParallaxGeometry
import Testing

/// Reads the reference figures OpenCV produced (see Fixtures/make_fixtures.py).
enum Fixtures {
    static func json(_ name: String) throws -> JSONValue {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"),
                               "fixture \(name).json missing")
        return try JSONValue(parsing: String(decoding: try Data(contentsOf: url), as: UTF8.self))
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

/// Each entry of `actual` within `relative` of `expected`, relative to the
/// entry itself, with an absolute floor of `relative × floorScale` for
/// entries that are (near) zero.
func expectClose(_ actual: [Double], _ expected: [Double], relative: Double, floorScale: Double = 1,
                 _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(actual.count == expected.count, "\(what): count", sourceLocation: sourceLocation)
    for (i, (a, e)) in zip(actual, expected).enumerated() {
        let tolerance = relative * max(abs(e), floorScale)
        #expect(abs(a - e) <= tolerance, "\(what)[\(i)]: \(a) vs OpenCV \(e) (tolerance \(tolerance))",
                sourceLocation: sourceLocation)
    }
}
