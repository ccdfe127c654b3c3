import ArgumentParser
import Foundation
import ParallaxGeometry

/// `parallax demo`: runs every stage the library has on the simulated rig.
///
/// Each stage is a ``DemoStep`` in its own file; `steps` lists them in pipeline order.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole pipeline on a simulated stereo rig (no hardware needed).")

    @Option(name: .long, help: "Folder for everything the demo writes.")
    var output: String = "demo-output"

    /// The stages, in pipeline order.
    static let steps: [any DemoStep] = [
        GeometryDemoStep(),
        CaptureDemoStep(),
        PairingDemoStep(),
        RectifyDemoStep(),
        SessionDemoStep(),
        CalibrationDemoStep(),
    ]

    func run() async throws {
        do { try FileAccess.createDirectories(atPath: output) } catch { throw CLIError(error.description) }
        let context = DemoContext(outputDirectory: output)
        for (index, step) in Self.steps.enumerated() {
            print("== \(index + 1)/\(Self.steps.count) \(step.title)")
            try await step.run(context)
        }
        print("== demo finished; outputs in \(output)/")
    }
}

/// What every demo step can use.
final class DemoContext: @unchecked Sendable {
    let outputDirectory: String
    /// Values steps hand to later steps (for example the calibration a step estimated).
    var shared: [String: Any] = [:]

    init(outputDirectory: String) { self.outputDirectory = outputDirectory }

    func path(_ name: String) -> String { (outputDirectory as NSString).appendingPathComponent(name) }
}

/// One stage of `parallax demo`.
protocol DemoStep: Sendable {
    var title: String { get }
    func run(_ context: DemoContext) async throws
}
