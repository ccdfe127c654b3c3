import Foundation
import ParallaxGeometry

/// Writing a command's set of output files all or nothing, never at the expense of what
/// the user had.
enum OutputFiles {
    /// Refuses, before any work, an output that is also an input, and two outputs with the
    /// same path (compared after resolving `.`, `..` and symbolic links).
    static func check(outputs: [(option: String, path: String)], inputs: [(option: String, path: String)]) throws {
        var seen: [String: String] = [:]
        for output in outputs {
            let resolved = resolve(output.path)
            if let earlier = seen[resolved] {
                throw CLIError("\(earlier) and \(output.option) both name \(output.path); give each output its own file")
            }
            seen[resolved] = output.option
            if let input = inputs.first(where: { resolve($0.path) == resolved }) {
                throw CLIError("\(output.option) \(output.path) is also the input \(input.option); "
                               + "writing it would destroy the input. Choose another output path")
            }
        }
    }

    /// An absolute, standardized path with symbolic links resolved (for files that exist).
    private static func resolve(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return URL(fileURLWithPath: absolute).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Writes every file, creating folders as needed, in two phases: first each to a
    /// temporary file beside its target; only when all were written are they renamed over
    /// their targets. A failure in the first phase removes the temporary files and leaves
    /// every target as it was; in the second (a rename refused), the targets already
    /// replaced are put back from their backups. Fails with one line naming the file.
    static func writeAll(_ files: [(path: String, bytes: [UInt8])]) throws {
        let tag = "parallax-\(getpid())"
        var temporaries: [String] = []
        func temporary(for path: String, _ index: Int) -> String {
            let url = URL(fileURLWithPath: path)
            return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(tag)-\(index).tmp").path
        }
        for (index, file) in files.enumerated() {
            let staged = temporary(for: file.path, index)
            do {
                let folder = (file.path as NSString).deletingLastPathComponent
                if !folder.isEmpty { try FileAccess.createDirectories(atPath: folder) }
                try FileAccess.writeAtomically(file.bytes, toPath: staged)
                temporaries.append(staged)
            } catch {
                for t in temporaries { unlink(t) }
                // The staged file's own name means nothing to the user; a folder that could not be made does.
                throw CLIError("could not write \(file.path): \(error.path == staged ? error.reason : error.description); "
                               + "nothing was written and no existing file was changed")
            }
        }
        // Every output is on disk: move them into place, keeping what they replace until all are.
        var placed: [(path: String, backup: String?)] = []
        for (index, file) in files.enumerated() {
            var backup: String?
            if FileManager.default.fileExists(atPath: file.path) {
                let saved = temporary(for: file.path, index) + ".previous"
                if rename(file.path, saved) == 0 { backup = saved }
            }
            guard rename(temporaries[index], file.path) == 0 else {
                let reason = String(cString: strerror(errno))
                if let backup { rename(backup, file.path) }
                for done in placed.reversed() {
                    if let previous = done.backup { rename(previous, done.path) } else { unlink(done.path) }
                }
                for t in temporaries[index...] { unlink(t) }
                throw CLIError("could not write \(file.path): \(reason); every file was put back as it was")
            }
            placed.append((file.path, backup))
        }
        for done in placed { if let backup = done.backup { unlink(backup) } }
    }
}
