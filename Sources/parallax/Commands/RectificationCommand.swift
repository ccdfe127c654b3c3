import ArgumentParser
import Foundation
import ParallaxGeometry

/// `parallax rectification`: prints R1, R2, P1, P2, Q and the valid-pixel ROIs
/// of a calibration, in OpenCV's conventions.
struct RectificationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rectification",
        abstract: "Compute the stereo rectification (R1, R2, P1, P2, Q, ROIs) of a calibration.",
        discussion: """
            The numbers follow OpenCV's stereoRectify (fisheye rigs: fisheye.stereoRectify), \
            so they can be compared with it directly. Matrices print row-major.
            """)

    @OptionGroup var shared: RectificationArguments

    @Option(name: .long, help: "Rectified image size, WxH (default: the calibration's image size).")
    var size: String?

    @Flag(name: .long, help: "Keep each camera's own principal point across the baseline (OpenCV flags without CALIB_ZERO_DISPARITY).")
    var noZeroDisparity = false

    @Flag(name: .long, help: "Print one JSON object instead of a readable listing.")
    var json = false

    func validate() throws {
        if let size {
            guard let parsed = ImageSize(parsing: size) else { throw ValidationError("--size must look like 1280x720, got '\(size)'") }
            guard parsed.width <= 32_768, parsed.height <= 32_768 else {
                throw ValidationError("--size \(size): each side at most 32768 pixels")
            }
        }
    }

    func run() throws {
        let calibration = try shared.loadCalibration()
        let options = RectificationOptions(
            alpha: shared.optionsAlpha,
            outputSize: size.flatMap(ImageSize.init(parsing:)),
            zeroDisparity: !noZeroDisparity)
        var rectification = try shared.rectification(of: calibration, options)
        if let distance = try shared.convergenceDistance(for: calibration, rectification: rectification) {
            rectification = rectification.converged(atDistance: distance)
        }
        if json {
            print(Self.jsonObject(rectification).serialized(indent: 0))
        } else {
            print(Self.readable(rectification, unit: calibration.translationUnit))
        }
    }

    static func jsonObject(_ r: StereoRectification) -> JSONValue {
        var object = JSONObject([
            ("R1", .array(r.r1.rowMajor.map(JSONValue.number))),
            ("R2", .array(r.r2.rowMajor.map(JSONValue.number))),
            ("P1", .array(r.p1.rowMajor.map(JSONValue.number))),
            ("P2", .array(r.p2.rowMajor.map(JSONValue.number))),
            ("Q", .array(r.q.rowMajor.map(JSONValue.number))),
            ("roi1", .array(r.roi1.array.map { .number(Double($0)) })),
            ("roi2", .array(r.roi2.array.map { .number(Double($0)) })),
            ("size", .array([.number(Double(r.size.width)), .number(Double(r.size.height))])),
            ("layout", .string(r.layout.rawValue)),
        ])
        object["convergence_distance"] = r.convergenceDistance.map(JSONValue.number) ?? .null
        return .object(object)
    }

    static func readable(_ r: StereoRectification, unit: LengthUnit) -> String {
        func rows(_ values: [Double], columns: Int) -> String {
            stride(from: 0, to: values.count, by: columns).map { start in
                "  [" + values[start..<start + columns].map { String(format: "%14.6f", $0) }.joined(separator: " ") + " ]"
            }.joined(separator: "\n")
        }
        var lines = [
            "layout: \(r.layout.rawValue), rectified size \(r.size), focal length \(String(format: "%.3f", r.focalLength)) px, baseline \(RectificationArguments.length(abs(r.signedBaseline), unit, format: "%.4f"))",
        ]
        if let d = r.convergenceDistance {
            lines.append("convergence plane at \(RectificationArguments.length(d, unit)) (shift \(String(format: "%.3f", 2 * r.convergenceShift)) px in total)")
        }
        lines += ["R1 =", rows(r.r1.rowMajor, columns: 3), "R2 =", rows(r.r2.rowMajor, columns: 3),
                  "P1 =", rows(r.p1.rowMajor, columns: 4), "P2 =", rows(r.p2.rowMajor, columns: 4),
                  "Q =", rows(r.q.rowMajor, columns: 4),
                  "roi1 = \(r.roi1.array)  (x, y, width, height)", "roi2 = \(r.roi2.array)"]
        return lines.joined(separator: "\n")
    }
}
