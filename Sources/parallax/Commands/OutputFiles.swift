import Foundation
import ParallaxGeometry

/// Writing a command's set of output files all or nothing, never at the expense of what
/// the user had.
enum OutputFiles {
    /// Refuses, before any work, an output that is also an input, and two outputs with the
    /// same path (compared after resolving `.`, `..` and symbolic links).
    /// An output that exists and is not a regular file (a device, a FIFO, a socket, a
    /// folder) is refused too; one that is a symbolic link is written through to its target
    /// (``FileAccess/outputTarget(for:)``).
    static func check(outputs: [(option: String, path: String)], inputs: [(option: String, path: String)]) throws {
        var seen: [String: String] = [:]
        for output in outputs {
            guard !output.path.isEmpty else { throw CLIError("\(output.option) is empty; give a file name") }
            do { _ = try FileAccess.outputTarget(for: output.path) } catch {
                throw CLIError("\(output.option) \(output.path): \(error.reason.replacingOccurrences(of: "cannot write: ", with: ""))")
            }
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
    static func resolve(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return URL(fileURLWithPath: absolute).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Writes every file, creating folders as needed, in two phases: first each to a
    /// temporary file beside its target; only when all were written are they renamed over
    /// their targets. A failure in the first phase removes the temporary files and leaves
    /// every target as it was; in the second (a rename refused), the targets already
    /// replaced are put back from their backups. Fails with one line naming the file.
    /// A path that is a symbolic link is written through to its target (the link stays);
    /// one that is a device, FIFO, socket or folder is refused before anything is written.
    /// The temporary files are removed by `FileAccess.removeTemporaries()` when a signal
    /// ends the program in between.
    static func writeAll(_ files: [(path: String, bytes: [UInt8])]) throws {
        let tag = "parallax-\(getpid())"
        var temporaries: [String] = []
        defer { for t in temporaries { FileAccess.forgetTemporary(t) } }
        func temporary(for path: String, _ index: Int) -> String {
            let url = URL(fileURLWithPath: path)
            return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(tag)-\(index).tmp").path
        }
        var targets: [String] = []
        for file in files {
            do { targets.append(try FileAccess.outputTarget(for: file.path)) } catch {
                throw CLIError("could not write \(file.path): \(error.reason); nothing was written and no existing file was changed")
            }
        }
        for (index, file) in files.enumerated() {
            let staged = temporary(for: targets[index], index)
            do {
                let folder = (targets[index] as NSString).deletingLastPathComponent
                if !folder.isEmpty { try FileAccess.createDirectories(atPath: folder) }
                FileAccess.trackTemporary(staged)
                try FileAccess.writeAtomically(file.bytes, toPath: staged)
                temporaries.append(staged)
            } catch {
                FileAccess.forgetTemporary(staged)
                for t in temporaries { unlink(t) }
                // The staged file's own name means nothing to the user; a folder that could not be made does.
                throw CLIError("could not write \(file.path): \(error.path == staged ? error.reason : error.description); "
                               + "nothing was written and no existing file was changed")
            }
        }
        // Every output is on disk: move them into place, keeping what they replace until all are.
        var placed: [(path: String, backup: String?)] = []
        for (index, file) in files.enumerated() {
            let target = targets[index]
            var backup: String?
            if FileManager.default.fileExists(atPath: target) {
                let saved = temporary(for: target, index) + ".previous"
                if rename(target, saved) == 0 { backup = saved }
            }
            guard rename(temporaries[index], target) == 0 else {
                let reason = String(cString: strerror(errno))
                if let backup { rename(backup, target) }
                for done in placed.reversed() {
                    if let previous = done.backup { rename(previous, done.path) } else { unlink(done.path) }
                }
                for t in temporaries[index...] { unlink(t) }
                throw CLIError("could not write \(file.path): \(reason); every file was put back as it was")
            }
            placed.append((target, backup))
        }
        for done in placed { if let backup = done.backup { unlink(backup) } }
    }
}
