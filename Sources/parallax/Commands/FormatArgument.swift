import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry

/// A `WxH@FPS:FOURCC` format option (`1280x720@30:YUYV`; the FOURCC defaults to YUYV),
/// parsed and checked once: sizes from 1 to 65535 (UVC's 16-bit frame sizes), rates from
/// 0.001 to 1000 fps, and a FOURCC Parallax knows (with a hint for a near miss: `yuyv`,
/// `YUVY`). Options take it through ``parse(_:)`` so that a bad value says what is wrong.
struct FormatArgument: ExpressibleByArgument {
    let format: CaptureFormat

    init?(argument: String) {
        guard let parsed = try? Self.parse(argument) else { return nil }
        self = parsed
    }

    private init(format: CaptureFormat) { self.format = format }

    /// The largest width or height a UVC camera can describe (`wWidth`, `wHeight` are 16-bit).
    static let largestDimension = 65535

    /// Parses `text`, or throws a message naming what is wrong and what is expected.
    static func parse(_ text: String) throws -> FormatArgument {
        let syntax = "expected WxH@FPS or WxH@FPS:FOURCC, e.g. 640x480@30:YUYV"
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let sizeAndRate = parts[0].split(separator: "@", omittingEmptySubsequences: false)
        guard sizeAndRate.count == 2 else { throw ValidationError("'\(text)': \(syntax)") }
        let dimensions = sizeAndRate[0].split(separator: "x", omittingEmptySubsequences: false)
        guard dimensions.count == 2, let width = Int(dimensions[0]), let height = Int(dimensions[1]) else {
            throw ValidationError("'\(text)': the size '\(sizeAndRate[0])' is not WxH in whole pixels; \(syntax)")
        }
        guard (1...largestDimension).contains(width), (1...largestDimension).contains(height) else {
            throw ValidationError("'\(text)': width and height must be from 1 to \(largestDimension) pixels "
                                  + "(a UVC camera's largest frame size)")
        }
        guard let fps = Double(sizeAndRate[1]), fps.isFinite else {
            throw ValidationError("'\(text)': the frame rate '\(sizeAndRate[1])' is not a number; \(syntax)")
        }
        guard fps >= 0.001, fps <= 1000 else {
            throw ValidationError("'\(text)': the frame rate must be from 0.001 to 1000 fps (an interval of 1 ms to 1000 s)")
        }
        let code = parts.count == 2 ? String(parts[1]) : "YUYV"
        let known = UVCBandwidth.knownFormats
        guard let fourCC = known.first(where: { $0.description.trimmingCharacters(in: .whitespaces) == code }) else {
            let hint = FourCC.nearestKnown(to: code).map { "; did you mean \($0.description.trimmingCharacters(in: .whitespaces))?" } ?? "."
            let list = known.map { $0.description.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
            throw ValidationError("'\(text)': unknown FOURCC '\(code)'\(hint) Known, as V4L2 spells them: \(list)")
        }
        return FormatArgument(format: CaptureFormat(fourCC: fourCC, size: ImageSize(width: width, height: height),
                                                    frameInterval: FrameInterval(framesPerSecond: fps)))
    }

    /// Refuses a `--max-fps` that is not a rate from 0.001 to 1000 fps (a frame interval holds
    /// rates down to one frame in 1000 s; a lower cap used to be raised to that silently).
    static func checkFrameRateCap(_ cap: Double?) throws {
        guard let cap else { return }
        guard cap.isFinite, cap >= 0.001, cap <= 1000 else {
            throw ValidationError("--max-fps \(cap) is outside 0.001 to 1000 frames per second (one frame in 1000 s to one a millisecond)")
        }
    }
}
