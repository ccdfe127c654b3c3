import ParallaxGeometry

/// Rectification of the simulated rig's calibration, with a convergence plane.
struct GeometryDemoStep: DemoStep {
    let title = "stereo geometry"

    func run(_ context: DemoContext) async throws {
        print("   (geometry step)")
    }
}
