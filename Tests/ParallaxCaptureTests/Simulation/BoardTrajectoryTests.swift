import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

@Suite("A board moving in front of the simulated rig")
struct BoardTrajectoryTests {
    static let a = RigidTransform(rodrigues: SIMD3(0.1, -0.2, 0), translation: SIMD3(0, 0, 0.6))
    static let b = RigidTransform(rodrigues: SIMD3(-0.2, 0.1, 0.3), translation: SIMD3(0.1, -0.05, 0.8))

    static func distance(_ x: RigidTransform, _ y: RigidTransform) -> Double {
        let t = x.translation - y.translation
        return (t * t).sum().squareRoot() + (x.rotation * y.rotation.transposed).rotationAngle
    }

    @Test("The board holds each pose, moves smoothly to the next and starts over after the last")
    func holdsAndMoves() {
        let path = BoardTrajectory(poses: [Self.a, Self.b], holdSeconds: 1, moveSeconds: 0.5)
        #expect(path.periodSeconds == 3)
        #expect(path.pose(atSeconds: 0).holding == 0 && path.pose(atSeconds: 0.99).pose == Self.a)
        #expect(path.pose(atSeconds: 1.2).holding == nil)
        #expect(path.pose(atSeconds: 1.5).holding == 1 && path.pose(atSeconds: 1.5).pose == Self.b)
        // Halfway through a move (smoothstep ½): halfway along the line and the relative rotation.
        let middle = path.pose(atSeconds: 1.25).pose
        #expect(Self.distance(RigidTransform(rotation: middle.rotation, translation: (Self.a.translation + Self.b.translation) / 2),
                              middle) < 1e-12)
        let half = Matrix3x3(rodrigues: (Self.b.rotation * Self.a.rotation.transposed).rodriguesVector / 2) * Self.a.rotation
        #expect((middle.rotation * half.transposed).rotationAngle < 1e-12)
        // No jump where a move starts or ends, and the second pass repeats the first.
        #expect(Self.distance(path.pose(atSeconds: 1.0001).pose, Self.a) < 1e-6)
        #expect(Self.distance(path.pose(atSeconds: 1.4999).pose, Self.b) < 1e-6)
        #expect(Self.distance(path.pose(atSeconds: 2.9999).pose, Self.a) < 1e-6)
        #expect(path.pose(atSeconds: 3.2).holding == 0 && path.pose(atSeconds: -1).holding == 0)
    }

    /// Calibration/GUIDE.md: 20 poses at four distances, turned up to 25°, held 0.8 s with a 0.3 s move between.
    @Test("The calibration sweep shows the whole board to both cameras in every pose, at four distances and turned up to 25°")
    func sweepStaysInView() throws {
        let rig = SimulatedStereoRig.example()
        let sweep = try #require(BoardTrajectory.calibrationSweep(for: rig))
        #expect(sweep.poses.count == 20)
        let board = try #require(rig.scene.target?.target)
        for pose in sweep.poses {
            var placed = rig
            placed.scene.target?.pose = pose
            for side in StereoSide.allCases {
                #expect(placed.projectedCorners(side).allSatisfy { $0 != nil })
            }
        }
        let depths = sweep.poses.map { $0.apply(SIMD3(4 * board.squareSize, 2.5 * board.squareSize, 0)).z }
        #expect((depths.max() ?? 0) / (depths.min() ?? 1) > 2.5)
        // Four distances: the board centre's depths fall in four groups, each more than 10 % beyond the last.
        let sorted = depths.sorted()
        let groups = 1 + zip(sorted, sorted.dropFirst()).filter { $1 > $0 * 1.1 }.count
        #expect(groups == 4, "depths \(sorted)")
        #expect(sweep.holdSeconds == 0.8 && sweep.moveSeconds == 0.3)
        let turns = sweep.poses.map { $0.rotation.rotationAngle * 180 / .pi }
        #expect((turns.max() ?? 0) > 30)  // 25° about both axes at once
        // Calibration/GUIDE.md: "turned up to 25° about both axes". Each pose's turn as
        // Rz · Ry · Rx (about the camera's axes, the board facing it at none): |x| and |y| at most
        // 25°, and 25° reached about each (to rounding: asin and atan2 recover angles to ~1e-15 rad).
        let degrees = 180 / Double.pi
        let aboutX = sweep.poses.map { atan2($0.rotation[2, 1], $0.rotation[2, 2]) * degrees }
        let aboutY = sweep.poses.map { asin(-$0.rotation[2, 0]) * degrees }
        for angles in [aboutX, aboutY] {
            let largest = angles.map(abs).max() ?? 0
            #expect(largest <= 25 + 1e-9 && largest >= 25 - 1e-9, "turns \(angles)")
        }
        // "at the centre and towards every edge and corner": where the board's centre lands in the
        // left image, as a fraction of its size from the image's centre. One pose lands in the
        // middle third both ways; the others point every way (eight 45° sectors: right, down-right,
        // down, … up-right), each at least 5 % of the image away: beyond the rig's middle, where
        // the plan's centre sits, 3 % to the right of the left camera's axis. (The left-edge pose,
        // pulled in until the right camera sees the whole board too, reaches only 0.42 of the width.)
        let e = board.squaresExtent
        let middle = SIMD3((e.min.x + e.max.x) / 2, (e.min.y + e.max.y) / 2, 0)
        let left = rig.model(.left)
        let offsets = try sweep.poses.map { pose in
            let p = try #require(left.project(rig.cameraFromWorld(.left).apply(pose.apply(middle))))
            return SIMD2(p.x / Double(left.size.width) - 0.5, p.y / Double(left.size.height) - 0.5)
        }
        #expect(offsets.contains { abs($0.x) < 1.0 / 6 && abs($0.y) < 1.0 / 6 }, "no pose at the centre: \(offsets)")
        let sectors = Set(offsets.filter { length($0) >= 0.05 }.map { offset in
            (Int((atan2(offset.y, offset.x) / (.pi / 4)).rounded()) + 8) % 8
        })
        #expect(sectors == Set(0..<8), "directions reached (45° sectors from the right, clockwise): \(sectors.sorted()); \(offsets)")
        // "the rig's board (9×6, 25 mm…)": the simulated rig is in metres.
        #expect(board.columns == 9 && board.rows == 6 && board.pattern == .chessboard && board.squareSize == 0.025
                && rig.calibration.translationUnit == .metre)
        #expect(BoardTrajectory.calibrationSweep(for: SimulatedStereoRig(calibration: rig.calibration, scene: SimulatedScene())) == nil)
    }

    @Test("Each frame shows the board where the trajectory has it at that frame's exposure, drawn only where it reaches")
    func framesFollowTheTrajectory() throws {
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 96, height: 72))
        let sweep = try #require(BoardTrajectory.calibrationSweep(for: rig, holdSeconds: 0.1, moveSeconds: 0.05))
        let device = SimulatedRigDevice(rig: rig, frameInterval: FrameInterval(numerator: 1, denominator: 100),
                                        rightTiming: SimulatedCameraTiming(offsetNanoseconds: 2_000_000),
                                        pace: .asFastAsPossible, boardTrajectory: sweep)
        #expect(device.boardTrajectory == sweep)
        let collector = FrameCollector()
        try device.right.start(collector.handler)
        collector.waitForFrames(20, timeoutSeconds: 60)
        device.right.stop()
        let frames = Array(collector.frames.prefix(20))
        #expect(frames.count == 20)
        // Frame k is exposed at 2 ms + k · 10 ms: frames 0–9 hold the first pose, 10–14 move, 15–19 hold the second.
        for frame in frames {
            let seconds = (0.002 + Double(frame.sequence) * 0.01)
            let expected = sweep.pose(atSeconds: seconds).pose
            let pose = try #require(device.right.boardPose(ofFrame: frame.sequence))
            #expect(Self.distance(pose, expected) < 1e-6)  // (rotationAngle resolves about 1e-8 near zero)
            var placed = rig
            placed.scene.target?.pose = pose
            let whole = try placed.render(.right)
            #expect(ImageBuffer(copying: try #require(frame.image)).bytes == whole.bytes, "frame \(frame.sequence)")
        }
        let held = frames.filter { sweep.pose(atSeconds: 0.002 + Double($0.sequence) * 0.01).holding == 0 }
        #expect(held.count >= 5)
        let moving = frames.filter { sweep.pose(atSeconds: 0.002 + Double($0.sequence) * 0.01).holding == nil }
        #expect(moving.count >= 3)
    }
}
