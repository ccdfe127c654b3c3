import ParallaxGeometry

/// A calibration board moving in front of the simulated rig: it holds still at each of
/// a list of poses for a while, then moves smoothly to the next, and starts over after
/// the last (the way a person shows a board to a rig during a calibration).
///
/// Poses are board frame → world frame (the left camera's frame for a rig), as
/// ``PlacedTarget/pose``. Between two poses the translation moves along the straight line
/// and the rotation about the fixed axis of the relative rotation, both with a
/// smoothstep profile, so the board starts and stops without a jump.
public struct BoardTrajectory: Hashable, Sendable {
    /// The poses the board holds, in order.
    public var poses: [RigidTransform]
    /// How long the board stays still at each pose, in seconds.
    public var holdSeconds: Double
    /// How long it takes to move to the next pose, in seconds.
    public var moveSeconds: Double

    /// A trajectory through `poses` (at least one), holding `holdSeconds` and moving `moveSeconds`.
    ///
    /// - Precondition: at least one pose, and positive finite durations (programmer error otherwise).
    public init(poses: [RigidTransform], holdSeconds: Double = 0.8, moveSeconds: Double = 0.3) {
        precondition(!poses.isEmpty, "a trajectory needs at least one pose")
        precondition(holdSeconds > 0 && holdSeconds.isFinite && moveSeconds > 0 && moveSeconds.isFinite,
                     "hold and move durations must be positive")
        self.poses = poses
        self.holdSeconds = holdSeconds
        self.moveSeconds = moveSeconds
    }

    /// Seconds for one pass through every pose.
    public var periodSeconds: Double { Double(poses.count) * (holdSeconds + moveSeconds) }

    /// Where the board is at `seconds` after the start: its pose, and the index of the
    /// pose it holds (`nil` while it moves). Times before 0 count as 0.
    public func pose(atSeconds seconds: Double) -> (pose: RigidTransform, holding: Int?) {
        let segment = holdSeconds + moveSeconds
        let t = max(0, seconds.isFinite ? seconds : 0)
        let pass = t.truncatingRemainder(dividingBy: periodSeconds)
        let index = min(poses.count - 1, Int(pass / segment))
        let within = pass - Double(index) * segment
        if within < holdSeconds { return (poses[index], index) }
        let from = poses[index], to = poses[(index + 1) % poses.count]
        let x = min(1, (within - holdSeconds) / moveSeconds)
        let s = x * x * (3 - 2 * x)
        let relative = (to.rotation * from.rotation.transposed).rodriguesVector
        let rotation = Matrix3x3(rodrigues: relative * s) * from.rotation
        return (RigidTransform(rotation: rotation, translation: from.translation + (to.translation - from.translation) * s), nil)
    }

    /// A sweep for calibrating `rig`'s cameras with its own board: the board held at four
    /// distances, at the centre and towards the edges and corners of the view, turned up to
    /// 25° about both axes, every pose with the whole board inside both images.
    ///
    /// `spread` scales how far towards the edges the board's centre goes (1: as far as the
    /// whole board stays in view; 0.3: a capture that leaves the image's edges and corners
    /// empty, for studying poor coverage).
    ///
    /// - Returns: `nil` when the rig's scene has no board.
    public static func calibrationSweep(for rig: SimulatedStereoRig, holdSeconds: Double = 0.8,
                                        moveSeconds: Double = 0.3, spread: Double = 1) -> BoardTrajectory? {
        guard let board = rig.scene.target?.target else { return nil }
        let left = rig.calibration.left
        // The board's centre in its own frame, and the rig's middle (between the two cameras).
        let e = board.squaresExtent
        let centre = SIMD3((e.min.x + e.max.x) / 2, (e.min.y + e.max.y) / 2, 0)
        let middle = rig.calibration.extrinsics.inverseOrigin / 2
        let halfTan = SIMD2(Double(left.size.width) / (2 * left.intrinsics.fx), Double(left.size.height) / (2 * left.intrinsics.fy))
        // Distances as multiples of the one where the squares fill 45 % of the image width.
        let fill = (e.max.x - e.min.x) / (0.45 * 2 * halfTan.x)
        let tilt = 25.0 * .pi / 180
        // (distance factor, image x and y as a fraction of the half-field, rotation about x, y, z)
        let plan: [(Double, Double, Double, SIMD3<Double>)] = [
            (1.0, 0, 0, SIMD3(0, 0, 0)),
            (1.0, -0.8, -0.8, SIMD3(tilt, -tilt, 0)),
            (1.0, 0.8, -0.8, SIMD3(tilt, tilt, 0.1)),
            (1.0, 0.8, 0.8, SIMD3(-tilt, tilt, 0)),
            (1.0, -0.8, 0.8, SIMD3(-tilt, -tilt, -0.1)),
            (1.0, 0, -0.8, SIMD3(tilt * 0.6, 0, 0)),
            (1.0, 0.8, 0, SIMD3(0, tilt, 0)),
            (1.0, 0, 0.8, SIMD3(-tilt * 0.6, 0, 0)),
            (1.0, -0.8, 0, SIMD3(0, -tilt, 0)),
            (1.6, 0, 0, SIMD3(tilt * 0.4, tilt * 0.4, 0.2)),
            (1.6, -0.8, -0.8, SIMD3(-tilt * 0.5, tilt * 0.5, 0)),
            (1.6, 0.8, -0.8, SIMD3(-tilt * 0.5, -tilt * 0.5, 0)),
            (1.6, 0.8, 0.8, SIMD3(tilt * 0.5, -tilt * 0.5, 0)),
            (1.6, -0.8, 0.8, SIMD3(tilt * 0.5, tilt * 0.5, 0)),
            (0.75, 0, 0, SIMD3(0, -tilt * 0.6, 0)),
            (0.75, -0.5, -0.5, SIMD3(tilt * 0.5, 0, 0)),
            (0.75, 0.5, 0.5, SIMD3(0, tilt * 0.5, 0.1)),
            (2.2, 0, 0, SIMD3(0, 0, 0)),
            (2.2, -0.8, 0.8, SIMD3(-tilt * 0.4, -tilt * 0.4, 0)),
            (2.2, 0.8, -0.8, SIMD3(tilt * 0.4, tilt * 0.4, 0)),
        ]
        var poses: [RigidTransform] = []
        for (factor, u, v, angles) in plan {
            let rotation = Matrix3x3.rotationZ(angles.z) * Matrix3x3.rotationY(angles.y) * Matrix3x3.rotationX(angles.x)
            let z = fill * factor
            // Pull the board towards the axis until its squares (with a 4 % margin) are inside both images.
            var reach = min(1, max(0, spread))
            while reach > 0.01 {
                let target = middle + SIMD3(u * reach * halfTan.x * z, v * reach * halfTan.y * z, z - middle.z)
                let pose = RigidTransform(rotation: rotation, translation: target - rotation * centre)
                if Self.squaresInside(board, pose: pose, rig: rig, margin: 0.04) {
                    poses.append(pose)
                    break
                }
                reach *= 0.9
            }
            if reach <= 0.01 {
                // Centred poses (spread 0) need no pull-in; keep them when they fit.
                let pose = RigidTransform(rotation: rotation, translation: middle + SIMD3(0, 0, z - middle.z) - rotation * centre)
                if Self.squaresInside(board, pose: pose, rig: rig, margin: 0.04) { poses.append(pose) }
            }
        }
        return BoardTrajectory(poses: poses, holdSeconds: holdSeconds, moveSeconds: moveSeconds)
    }

    /// Whether the corners of `board`'s squares at `pose` project inside both of `rig`'s
    /// images, `margin` (a fraction of the size) away from every edge.
    static func squaresInside(_ board: ChessboardTarget, pose: RigidTransform, rig: SimulatedStereoRig, margin: Double) -> Bool {
        let e = board.squaresExtent
        let outline = [SIMD3(e.min.x, e.min.y, 0), SIMD3(e.max.x, e.min.y, 0), SIMD3(e.max.x, e.max.y, 0), SIMD3(e.min.x, e.max.y, 0)]
        for side in StereoSide.allCases {
            let camera = rig.model(side)
            let w = Double(camera.size.width), h = Double(camera.size.height)
            for point in outline {
                guard let p = camera.project(rig.cameraFromWorld(side).apply(pose.apply(point))),
                      p.x >= margin * w, p.x <= (1 - margin) * w, p.y >= margin * h, p.y <= (1 - margin) * h else { return false }
            }
        }
        return true
    }
}
