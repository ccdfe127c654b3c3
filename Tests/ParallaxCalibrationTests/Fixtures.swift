import Foundation
import ParallaxCalibration
import ParallaxGeometry
import Testing

/// Files next to this test target (no bundle resources needed: the sources' own path is known).
enum TestFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/calibration")
    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// OpenCV's stereo sample (Debian opencv-doc).
    /// A detector for `board` with a time budget no test machine reaches: the budget is
    /// wall-clock time, which a loaded machine or a sanitizer build stretches many times over.
    /// Tests of the budget itself set their own.
    static func detector(_ board: CalibrationBoard) -> ChessboardDetector {
        var detector = ChessboardDetector(board: board)
        detector.timeBudgetSeconds = 600
        return detector
    }

    static let openCVData = "/usr/share/doc/opencv-doc/examples/data"
    static let openCVPairNumbers = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]

    /// Fails the calling test, never skips it, when OpenCV's sample images are not installed.
    static func requireOpenCVSample() throws {
        let missing = ["left01.jpg", "right14.jpg"].filter { !FileManager.default.fileExists(atPath: openCVData + "/" + $0) }
        try #require(missing.isEmpty, """
            OpenCV's stereo sample is missing (\(missing.joined(separator: ", ")) not in \(openCVData)): \
            it comes with Debian's opencv-doc, which `make test` installs (or: apt-get install opencv-doc)
            """)
    }

    /// Corners per image name from a corner fixture file.
    static func corners(_ file: String) throws -> [String: [SIMD2<Double>]] {
        let text = try FileAccess.readText(atPath: path(file))
        let json = try JSONValue(parsing: text)
        var out: [String: [SIMD2<Double>]] = [:]
        for (key, value) in json.object?["images"]?.object?.pairs ?? [] {
            guard let points = value.array else { continue }
            out[key] = points.compactMap { p in
                guard let xy = p.array, xy.count == 2, let x = xy[0].number, let y = xy[1].number else { return nil }
                return SIMD2(x, y)
            }
        }
        return out
    }
}

extension TestFixtures {
    /// A JSON fixture file of this folder, parsed.
    static func json(_ file: String) throws -> JSONValue {
        try JSONValue(parsing: try FileAccess.readText(atPath: path(file)))
    }
}

extension TestFixtures {
    /// The file name of one of OpenCV's sample images: `left01.jpg`, `right14.jpg`.
    static func sampleName(_ side: String, _ number: Int) -> String { "\(side)\(number < 10 ? "0" : "")\(number).jpg" }
}
