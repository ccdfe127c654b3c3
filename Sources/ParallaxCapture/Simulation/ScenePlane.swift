import ParallaxGeometry

/// A flat textured surface of the simulated scene.
///
/// The plane is z = 0 of its own frame; `pose` takes plane-frame points into
/// the scene (world) frame. Texture coordinates (u, v) are the plane-frame
/// x and y, in the scene's length unit.
public struct ScenePlane: Hashable, Sendable {
    /// Plane frame → world frame.
    public var pose: RigidTransform
    /// Half the width and height of the rectangle `|u| ≤ halfExtent.x, |v| ≤ halfExtent.y`,
    /// or `nil` for a plane without edges.
    public var halfExtent: SIMD2<Double>?
    /// The paint.
    public var texture: SceneTexture
    /// A colour multiplier per channel (red, green, blue) for colour renders; gray renders ignore it.
    public var tint: SIMD3<Double>

    public init(pose: RigidTransform, halfExtent: SIMD2<Double>? = nil, texture: SceneTexture,
                tint: SIMD3<Double> = SIMD3(1, 1, 1)) {
        self.pose = pose
        self.halfExtent = halfExtent
        self.texture = texture
        self.tint = tint
    }

    /// A plane facing the world origin's camera at `depth` along the world z axis
    /// (u along world x, v along world y), centred on the axis.
    public static func frontoParallel(depth: Double, halfExtent: SIMD2<Double>? = nil, texture: SceneTexture,
                                      tint: SIMD3<Double> = SIMD3(1, 1, 1)) -> ScenePlane {
        ScenePlane(pose: RigidTransform(translation: SIMD3(0, 0, depth)), halfExtent: halfExtent,
                   texture: texture, tint: tint)
    }
}

/// A chessboard placed in the scene.
public struct PlacedTarget: Hashable, Sendable {
    /// The board.
    public var target: ChessboardTarget
    /// Board frame → world frame (for a rig, the world is the left camera's frame,
    /// so this is the board's pose in the left camera).
    public var pose: RigidTransform

    public init(target: ChessboardTarget, pose: RigidTransform) {
        self.target = target
        self.pose = pose
    }

    /// The inner corners in the world frame, in ``ChessboardTarget/cornerPoints`` order.
    public var worldCorners: [SIMD3<Double>] { target.cornerPoints.map { pose.apply($0) } }
}
