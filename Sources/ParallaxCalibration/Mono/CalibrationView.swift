import ParallaxGeometry

/// The corners of one board seen in one image, in the target's corner order.
public struct CalibrationView: Hashable, Sendable {
    /// What to call the view in messages: usually the image file.
    public var name: String
    /// Pixel positions of every inner corner, index `row * columns + column`.
    public var corners: [SIMD2<Double>]

    /// A view called `name` with `corners` in board order.
    public init(name: String, corners: [SIMD2<Double>]) {
        self.name = name
        self.corners = corners
    }
}

/// A view (or a pair) left out of a calibration, and why.
public struct RejectedView: Hashable, Sendable, CustomStringConvertible {
    /// The image (or "left + right" names) that was left out.
    public var name: String
    /// Why, in words a user can act on.
    public var reason: String
    /// For a stereo pair (or one file of it): the left file, when known.
    public var left: String?
    /// The right file, when known.
    public var right: String?

    /// A rejection of `name` for `reason`; `left` and `right` name the files of a pair.
    public init(name: String, reason: String, left: String? = nil, right: String? = nil) {
        self.name = name
        self.reason = reason
        self.left = left
        self.right = right
    }

    /// `name: reason`.
    public var description: String { "\(name): \(reason)" }
}

/// Why a calibration could not be computed at all.
public enum CalibrationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Too few usable views remain; `rejected` says what happened to the others.
    case notEnoughViews(usable: Int, needed: Int, rejected: [RejectedView])
    /// The views leave some parameter undetermined.
    case degenerate(String)
    /// The views do not all have the image size of the first one.
    case sizeMismatch(String)

    /// One line saying why; for too few views, one further indented line per image set aside
    /// with its reason.
    public var description: String {
        switch self {
        case .notEnoughViews(let usable, let needed, let rejected):
            var text = "only \(usable) usable view(s), at least \(needed) needed"
            for r in rejected { text += "\n  \(r.name): \(r.reason)" }
            return text
        case .degenerate(let s): return "the views are degenerate: \(s)"
        case .sizeMismatch(let s): return s
        }
    }
}

/// One corner of a used view left out of the fit for a residual far outside the noise.
public struct RejectedCorner: Hashable, Sendable, CustomStringConvertible {
    /// The pair (index among the used pairs) the corner belongs to.
    public var pair: Int
    /// The image file.
    public var image: String
    /// The camera whose image it is in.
    public var side: StereoSide
    /// The corner's index in the board's order (row by row from 0).
    public var index: Int
    /// Its residual (pixels) when it was set aside, and the limit it exceeded.
    public var residual: Double
    /// The limit it exceeded, in pixels: `cornerOutlierFactor` × the camera's corner noise σ
    /// (estimated from the median residual), but never below `cornerOutlierFloorPixels`.
    public var limit: Double

    /// `image corner N: residual R px above L px`.
    public var description: String {
        "\(image) corner \(index): residual \(formatPixels(residual)) px above \(formatPixels(limit)) px"
    }
}
