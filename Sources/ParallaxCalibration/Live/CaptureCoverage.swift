import Foundation
import ParallaxGeometry

/// Where and how a board appears in one image, as four numbers in 0…1 — the measures
/// ROS's camera_calibration uses to judge whether a view is new and whether the views so
/// far cover enough:
///
/// - ``x``, ``y``: the centre of the corners across the image, in the room the board
///   leaves (0 = touching the left or top edge, 1 = the right or bottom edge);
/// - ``size``: the square root of the fraction of the image inside the outer corners;
/// - ``skew``: how far the outer quadrilateral's angles are from right angles (twice the
///   mean deviation in radians, at most 1), which grows as the board is turned.
public struct BoardViewMeasures: Hashable, Sendable {
    /// Horizontal position, 0…1.
    public var x: Double
    /// Vertical position, 0…1.
    public var y: Double
    /// Apparent size, 0…1.
    public var size: Double
    /// Turn away from facing the camera, 0…1.
    public var skew: Double

    /// The four values in order (x, y, size, skew).
    public var values: [Double] { [x, y, size, skew] }

    /// Names of the four measures, in ``values`` order.
    public static let names = ["x", "y", "size", "skew"]

    /// A view from its values.
    public init(x: Double, y: Double, size: Double, skew: Double) {
        (self.x, self.y, self.size, self.skew) = (x, y, size, skew)
    }

    /// The measures of `corners` (a whole board, OpenCV order: `columns` per row, `rows`
    /// rows) in an image of `imageSize`; `nil` when the count does not match the board or
    /// the outer corners enclose no area.
    public init?(corners: [SIMD2<Double>], columns: Int, rows: Int, imageSize: ImageSize) {
        guard columns >= 2, rows >= 2, corners.count == columns * rows,
              imageSize.width > 0, imageSize.height > 0 else { return nil }
        let quad = [corners[0], corners[columns - 1], corners[columns * rows - 1], corners[columns * (rows - 1)]]
        var twiceArea = 0.0
        for i in 0..<4 {
            let a = quad[i], b = quad[(i + 1) % 4]
            twiceArea += a.x * b.y - b.x * a.y
        }
        let area = abs(twiceArea) / 2
        guard area > 0, area.isFinite else { return nil }
        let w = Double(imageSize.width), h = Double(imageSize.height)
        let side = area.squareRoot()
        let mean = corners.reduce(SIMD2<Double>.zero, +) / Double(corners.count)
        // Corners are in pixel-centre coordinates: the image spans −0.5 … extent − 0.5.
        func position(_ c: Double, _ extent: Double) -> Double {
            extent > side ? min(1, max(0, (c + 0.5 - side / 2) / (extent - side))) : 0.5
        }
        var deviation = 0.0
        for i in 0..<4 {
            let p = quad[i], previous = quad[(i + 3) % 4], next = quad[(i + 1) % 4]
            let u = previous - p, v = next - p
            let cosine = (u * v).sum() / ((u * u).sum().squareRoot() * (v * v).sum().squareRoot())
            deviation += abs(Double.pi / 2 - acos(min(1, max(-1, cosine))))
        }
        self.init(x: position(mean.x, w), y: position(mean.y, h), size: (area / (w * h)).squareRoot(),
                  skew: min(1, 2 * deviation / 4))
    }

    /// Distance to another view: the sum of the four absolute differences.
    public func distance(to other: BoardViewMeasures) -> Double {
        zip(values, other.values).reduce(0) { $0 + abs($1.0 - $1.1) }
    }
}

/// Which views a calibration capture has taken and how much of the space of views they
/// cover: the spread (largest minus smallest) of each ``BoardViewMeasures`` value over
/// the taken views, against a target spread per value.
///
/// A view adds coverage when it is at least ``minimumDistance`` from every view taken
/// (so ten copies of one pose count once); the capture has enough when every spread has
/// reached its target.
public struct CaptureCoverage: Sendable {
    /// The spread each measure must reach (x, y, size, skew).
    public var targetSpreads: BoardViewMeasures
    /// The smallest ``BoardViewMeasures/distance(to:)`` from every taken view for a view to count as new.
    public var minimumDistance: Double
    /// The views taken, in order.
    public private(set) var taken: [BoardViewMeasures] = []

    /// Default targets: the board's centre over 60 % of the room across and down, its
    /// apparent size over 0.15, and turns reaching a skew spread of 0.2 (about 6° of
    /// mean corner-angle change); a new view differs by 0.2 in total.
    public init(targetSpreads: BoardViewMeasures = BoardViewMeasures(x: 0.6, y: 0.6, size: 0.15, skew: 0.2),
                minimumDistance: Double = 0.2) {
        self.targetSpreads = targetSpreads
        self.minimumDistance = minimumDistance
    }

    /// Whether `view` is far enough from every taken view to add to the capture.
    public func adds(_ view: BoardViewMeasures) -> Bool {
        taken.allSatisfy { $0.distance(to: view) >= minimumDistance }
    }

    /// Records a taken view.
    public mutating func add(_ view: BoardViewMeasures) { taken.append(view) }

    /// Per measure (x, y, size, skew): the spread reached as a fraction of its target, 0…1.
    public var progress: [Double] {
        guard !taken.isEmpty else { return [0, 0, 0, 0] }
        return (0..<4).map { i in
            let values = taken.map { $0.values[i] }
            let spread = (values.max() ?? 0) - (values.min() ?? 0)
            let target = targetSpreads.values[i]
            return spread >= target ? 1 : spread / target
        }
    }

    /// True when every measure has reached its target spread.
    public var isComplete: Bool { progress.allSatisfy { $0 >= 1 } }
}

/// Whether a board has stopped moving, from its corners in consecutive frames: still once
/// ``requiredFrames`` consecutive detections have each moved no corner more than
/// ``tolerancePixels`` from the frame before.
public struct BoardStillness: Sendable {
    /// The largest corner movement between consecutive frames that counts as still, in pixels.
    public var tolerancePixels: Double
    /// Consecutive still frames needed.
    public var requiredFrames: Int
    private var previous: [SIMD2<Double>]?
    /// Consecutive detections so far that did not move.
    public private(set) var stillFrames = 0

    /// A tracker; the defaults (0.5 px over 3 frames) are far above a sensor's noise on a
    /// corner (hundredths of a pixel) and far below a hand's tremor.
    public init(tolerancePixels: Double = 0.5, requiredFrames: Int = 3) {
        self.tolerancePixels = tolerancePixels
        self.requiredFrames = max(1, requiredFrames)
    }

    /// Takes the next frame's corners (`nil`: no board found) and answers whether the board is still.
    @discardableResult
    public mutating func observe(_ corners: [SIMD2<Double>]?) -> Bool {
        defer { previous = corners }
        guard let corners, let previous, previous.count == corners.count else {
            stillFrames = 0
            return false
        }
        stillFrames = Self.largestMovement(previous, corners) <= tolerancePixels ? stillFrames + 1 : 0
        return isStill
    }

    /// Whether the board has been still for ``requiredFrames`` frames.
    public var isStill: Bool { stillFrames >= requiredFrames }

    /// The largest distance between corresponding corners of two detections (∞ when the counts differ).
    public static func largestMovement(_ a: [SIMD2<Double>], _ b: [SIMD2<Double>]) -> Double {
        guard a.count == b.count else { return .infinity }
        return zip(a, b).reduce(0) { max($0, (($1.0 - $1.1) * ($1.0 - $1.1)).sum().squareRoot()) }
    }
}
