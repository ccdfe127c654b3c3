import Foundation
import Testing

/// Runs the `parallax` executable built next to this test bundle.
enum ParallaxCLI {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The built `parallax` binary: SwiftPM puts products and the test bundle in one folder.
    static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("parallax")
    }

    /// The package root, for fixtures.
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Runs `parallax arguments…`, killing it after `timeout` seconds (a test never hangs).
    static func run(_ arguments: [String], timeout: TimeInterval = 120, workingDirectory: URL? = nil) throws -> Result {
        let process = Process()
        process.executableURL = executable
        // Detection's time budget is wall-clock time, which a loaded machine or a sanitizer
        // build stretches many times over: a test that is not about the budget gets a generous one.
        if arguments.first == "calibrate" && !arguments.contains("--time-budget") {
            process.arguments = arguments + ["--time-budget", "10min"]
        } else {
            process.arguments = arguments
        }
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Drain both pipes concurrently so a chatty child cannot block on a full pipe.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            Issue.record("parallax \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        _ = group.wait(timeout: .now() + 10)
        return Result(status: process.terminationStatus,
                      stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
    }

    /// A fresh temporary folder, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("parallax-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
