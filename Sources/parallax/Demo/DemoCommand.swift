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

    @Option(name: .long, help: "Folder for everything the demo writes (new, empty, or an earlier demo's, which it replaces).")
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

    /// The file that marks a folder as a demo's output (so a rerun may replace it).
    static let markerName = ".parallax-demo"

    func run() async throws {
        // Checked before any work: the demo replaces only an earlier demo's output.
        let existing = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: output, isDirectory: &isFolder), !isFolder.boolValue {
            throw CLIError("--output \(output) is a file; the demo writes a folder. Choose another --output")
        }
        if !existing.isEmpty && !existing.contains(Self.markerName) {
            throw CLIError("--output \(output) holds \(existing.count) entries the demo did not write; "
                           + "choose a new or empty folder (the demo replaces only an earlier demo's output)")
        }
        // Everything is written beside the output and moved into place when every step succeeded.
        let url = URL(fileURLWithPath: output).standardizedFileURL
        let staging = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).parallax-demo-\(getpid())").path
        let cleanup = Signals.atExit { Self.remove(staging) }
        defer {
            Signals.removeCleanup(cleanup)
            Self.remove(staging)
        }
        do {
            try FileAccess.createDirectories(atPath: staging)
            try FileAccess.writeAtomically("written by parallax demo; a rerun replaces this folder\n",
                                           toPath: staging + "/" + Self.markerName)
        } catch { throw CLIError(error.description) }
        let context = DemoContext(outputDirectory: output, workingDirectory: staging)
        for (index, step) in Self.steps.enumerated() {
            print("== \(index + 1)/\(Self.steps.count) \(step.title)")
            try await step.run(context)
        }
        try replace(output, with: staging)
        print("== demo finished; outputs in \(output)/")
    }

    /// Removes the staging folder. Interrupted, the steps' threads may still be writing into it:
    /// a file made in a folder being removed leaves that folder (and so the staging folder)
    /// behind, and a step that makes its folder again would bring it back. So no file or
    /// folder is made inside it any more (``FileAccess/refuseWrites(under:)``: those writes
    /// fail), and it is removed until it is gone and still gone 30 ms later, when a write that
    /// was already past that check has made its file (at most two seconds).
    static func remove(_ staging: String) {
        FileAccess.refuseWrites(under: staging)
        var goneFor = 0
        for _ in 0..<200 {
            try? FileManager.default.removeItem(atPath: staging)
            goneFor = FileManager.default.fileExists(atPath: staging) ? 0 : goneFor + 1
            if goneFor == 3 { return }
            usleep(10_000)
        }
    }

    /// Moves `staging` to `output`, the earlier demo's output (if any) aside until then.
    private func replace(_ output: String, with staging: String) throws {
        let previous = staging + ".previous"
        let hadEarlier = FileManager.default.fileExists(atPath: output)
        if hadEarlier {
            guard rename(output, previous) == 0 else {
                throw CLIError("could not replace \(output): \(String(cString: strerror(errno))); the earlier demo's output is unchanged")
            }
        }
        guard rename(staging, output) == 0 else {
            let reason = String(cString: strerror(errno))
            if hadEarlier { rename(previous, output) }
            throw CLIError("could not write \(output): \(reason); the earlier demo's output is unchanged")
        }
        if hadEarlier { try? FileManager.default.removeItem(atPath: previous) }
    }
}

/// What every demo step can use.
final class DemoContext: @unchecked Sendable {
    /// The folder the user named, where the outputs land once the demo succeeded.
    let outputDirectory: String
    /// Where the steps write meanwhile.
    let workingDirectory: String
    /// Values steps hand to later steps (for example the calibration a step estimated).
    var shared: [String: Any] = [:]

    init(outputDirectory: String, workingDirectory: String) {
        self.outputDirectory = outputDirectory
        self.workingDirectory = workingDirectory
    }

    /// Writing straight into `outputDirectory` (one step on its own, as the tests run it).
    convenience init(outputDirectory: String) {
        self.init(outputDirectory: outputDirectory, workingDirectory: outputDirectory)
    }

    /// Where a step writes `name`.
    func path(_ name: String) -> String { (workingDirectory as NSString).appendingPathComponent(name) }

    /// Where `name` will be once the demo finished: the path to show the user.
    func shownPath(_ name: String) -> String { (outputDirectory as NSString).appendingPathComponent(name) }
}

/// One stage of `parallax demo`.
protocol DemoStep: Sendable {
    var title: String { get }
    func run(_ context: DemoContext) async throws
}
