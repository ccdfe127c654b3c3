import Foundation
import ParallaxGeometry

/// Writing a command's set of output files all or nothing.
enum OutputFiles {
    /// Writes every file atomically, creating folders as needed; when one
    /// fails, removes those this call wrote, so no partial set remains, and
    /// fails with a one-line error naming the file.
    static func writeAll(_ files: [(path: String, bytes: [UInt8])]) throws {
        var written: [String] = []
        for file in files {
            do {
                let folder = (file.path as NSString).deletingLastPathComponent
                if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
                try FileAccess.writeAtomically(file.bytes, toPath: file.path)
                written.append(file.path)
            } catch {
                for p in written { try? FileManager.default.removeItem(atPath: p) }
                throw CLIError("could not write \(file.path): \(error); no outputs were left behind")
            }
        }
    }
}
