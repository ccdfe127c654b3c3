import ParallaxGeometry

/// A static 3-D scene for the simulated cameras: textured planes at known
/// depths, an optional chessboard target, and a background level for rays
/// that hit nothing.
///
/// Lengths are in one unit of your choice (metres in the examples); the
/// world frame is the frame the cameras' poses are given in (the left
/// camera's frame for a ``SimulatedStereoRig``).
public struct SimulatedScene: Hashable, Sendable {
    /// Level (0–255) where a ray hits nothing.
    public var backgroundLevel: Double
    /// The planes, in any order (the nearest hit wins).
    public var planes: [ScenePlane]
    /// The calibration target, if any.
    public var target: PlacedTarget?

    public init(backgroundLevel: Double = 128, planes: [ScenePlane] = [], target: PlacedTarget? = nil) {
        self.backgroundLevel = backgroundLevel
        self.planes = planes
        self.target = target
    }

    /// What a ray hits first.
    public enum Surface: Hashable, Sendable {
        /// The plane at this index of ``planes``.
        case plane(Int)
        /// The chessboard.
        case target
    }

    /// The first surface along the ray `origin + t·direction` (t > 0), with the
    /// ray parameter `t` (a distance when `direction` is a unit vector), or `nil`.
    public func firstHit(origin: SIMD3<Double>, direction: SIMD3<Double>) -> (surface: Surface, t: Double)? {
        var best: (surface: Surface, t: Double)?
        func consider(_ pose: RigidTransform, _ halfExtent: SIMD2<Double>?, _ min: SIMD2<Double>?, _ max: SIMD2<Double>?,
                      _ surface: Surface) {
            let inverse = pose.inverse
            let o = inverse.apply(origin), d = inverse.rotation * direction
            guard d.z != 0 else { return }
            let t = -o.z / d.z
            guard t > 0, t < (best?.t ?? .infinity) else { return }
            let u = o.x + t * d.x, v = o.y + t * d.y
            if let h = halfExtent, abs(u) > h.x || abs(v) > h.y { return }
            if let min, let max, u < min.x || v < min.y || u > max.x || v > max.y { return }
            best = (surface, t)
        }
        for (index, plane) in planes.enumerated() {
            consider(plane.pose, plane.halfExtent, nil, nil, .plane(index))
        }
        if let target {
            let e = target.target.boardExtent
            consider(target.pose, nil, e.min, e.max, .target)
        }
        return best
    }
}
