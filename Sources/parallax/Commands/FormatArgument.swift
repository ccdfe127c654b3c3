import ArgumentParser
import ParallaxCapture

/// A `WxH@FPS:FOURCC` format option (`1280x720@30:YUYV`; the FOURCC defaults to YUYV; at
/// most 1000 fps), parsed and validated once by the argument parser.
struct FormatArgument: ExpressibleByArgument {
    let format: CaptureFormat
    init?(argument: String) {
        guard let format = CaptureFormat(parsing: argument) else { return nil }
        self.format = format
    }
}
