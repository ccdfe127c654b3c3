import ParallaxGeometry
import ParallaxImage

/// Why the simulation could not render or deliver a frame.
public enum SimulationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The renderer does not produce this pixel format.
    case unsupportedFormat(PixelFormat)
    /// The image size is not usable for the format (odd width for YUYV, zero, …).
    case invalidSize(ImageSize, format: PixelFormat)
    /// A parameter that must be positive or finite is not.
    case invalidParameter(String)
    /// Rendering was stopped before it finished (the caller's `isCancelled` said so).
    case cancelled

    /// A readable one-line description.
    public var description: String {
        switch self {
        case .unsupportedFormat(let f):
            return "the simulated camera renders gray8, rgb8, bgr8 or yuyv, not \(f.rawValue)"
        case .invalidSize(let s, let f):
            return "the simulated camera cannot render \(s) in \(f.rawValue)"
        case .invalidParameter(let m):
            return "simulation: \(m)"
        case .cancelled:
            return "stopped before the simulated cameras had drawn their first views (large sizes take a while to render)"
        }
    }
}
