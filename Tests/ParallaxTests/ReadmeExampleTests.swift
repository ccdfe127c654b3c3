import Foundation
import Parallax
import Testing

/// The README's "Use it from your package" example is `ReadmeExample.swift`, compiled with
/// this target; the same session code runs here on the simulated rig.
@Suite("README example")
struct ReadmeExampleTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    @Test("the README's example is ReadmeExample.swift, character for character")
    func readmeShowsTheCompiledExample() throws {
        let readme = try String(contentsOf: Self.folder.appendingPathComponent("../../README.md").standardized, encoding: .utf8)
        let example = try String(contentsOf: Self.folder.appendingPathComponent("ReadmeExample.swift"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + example + "```\n"))
        #expect(example.split(separator: "\n").count <= 22)
    }

    @Test("the example's session, on the simulated rig, delivers rectified pairs of the calibrated size")
    func exampleRunsOnTheSimulatedRig() async throws {
        let rig = SimulatedRigDevice(rig: .example(size: ImageSize(width: 160, height: 120)), pace: .asFastAsPossible)
        let session = try StereoSession(device: StereoDevice(simulated: rig), calibration: rig.rig.calibration)
        try session.start()
        var sizes: [ImageSize] = []
        for try await pair in session.pairs {
            guard let left = pair.left.image, let right = pair.right.image else { continue }
            #expect(pair.isRectified && left.size == right.size)
            sizes.append(left.size)
            if sizes.count == 30 { break }  // the README's count: pairs delivered, not pair numbers
        }
        session.stop()
        #expect(sizes.count == 30 && sizes.allSatisfy { $0 == ImageSize(width: 160, height: 120) })
        let stats = session.statistics
        #expect(stats.accountDiscrepancy == nil, "\(stats.accountDiscrepancy ?? "")")
    }
}
