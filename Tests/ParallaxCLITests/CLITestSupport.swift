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

    /// The environment a command runs in: this process's, plus `PARALLAX_TEST_ID` naming the
    /// test that runs it, so that `make test`'s OpenBLAS census (Tests/CPUs/census) can tell
    /// which suite a command's solver calls belong to.
    static func environment(adding extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        if let test = Test.current { environment["PARALLAX_TEST_ID"] = String(describing: test.id) }
        return environment
    }

    /// The package root, for fixtures.
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// How long the output may keep coming after the command exited.
    static let pipeDrainSeconds = 10.0

    /// The command exited but its output pipes stayed open (a process it started still holds them):
    /// what was read so far may be partial.
    struct PipesStillOpen: Error, CustomStringConvertible {
        var arguments: [String]
        var seconds: Double
        var description: String {
            "parallax \(arguments.joined(separator: " ")) exited, but its output was still open \(seconds) s later: "
                + "a process it started holds stdout or stderr"
        }
    }

    /// Runs `parallax arguments…` (or another `executable`), killing it after `timeout` seconds (a
    /// test never hangs). Throws ``PipesStillOpen`` when its output stays open `pipeDrainSeconds`
    /// after it exited, rather than hand back what was read so far.
    static func run(_ arguments: [String], timeout: TimeInterval = 120, workingDirectory: URL? = nil,
                    executable: URL = executable, pipeDrainSeconds: Double = pipeDrainSeconds) throws -> Result {
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
        process.environment = environment()
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Drain both pipes concurrently so a chatty child cannot block on a full pipe. Each on a
        // thread of its own: the global queue is as wide as the machine has cores, and readers
        // blocked on other commands' pipes (tests run in parallel) would leave none for these.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let group = DispatchGroup()
        group.enter()
        Thread { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }.start()
        group.enter()
        Thread { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }.start()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            Issue.record("parallax \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        // The pipes close when every process holding them exits: a child the command left
        // running keeps them open, and reading the buffers now would race with the readers.
        guard group.wait(timeout: .now() + pipeDrainSeconds) == .success else {
            throw PipesStillOpen(arguments: arguments, seconds: pipeDrainSeconds)
        }
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

extension ParallaxCLI {
    /// Starts `parallax arguments…` in the background, its standard input closed, its output
    /// discarded and its standard error into `standardError` (discarded when `nil`), for tests
    /// that signal it while it runs.
    static func launch(_ arguments: [String], workingDirectory: URL? = nil, standardError: FileHandle? = nil) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        process.environment = environment()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = standardError ?? FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Sends SIGINT to a launched `parallax` and waits for its exit: a command still running
    /// 60 s later is a hang, recorded as an issue, and terminated.
    static func interrupt(_ process: Process) {
        kill(process.processIdentifier, SIGINT)
        let deadline = Date(timeIntervalSinceNow: 60)  // a hang guard
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate(); Issue.record("parallax \(process.arguments ?? []) did not stop within 60 s of SIGINT") }
        process.waitUntilExit()
    }

    /// Runs `parallax arguments…`, waits (up to 60 s) until its standard error holds `marker`,
    /// sends `signal`, and returns the status, the standard error and the seconds from the
    /// signal to the exit (a 60 s hang guard).
    static func runInterrupted(_ arguments: [String], after marker: String, signal: Int32, workingDirectory: URL? = nil) throws
        -> (status: Int32, stderr: String, secondsToExit: Double)
    {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("stderr.txt")
        try #require(FileManager.default.createFile(atPath: log.path, contents: nil))
        let stderrFile = try FileHandle(forWritingTo: log)
        defer { try? stderrFile.close() }
        let process = try launch(arguments, workingDirectory: workingDirectory, standardError: stderrFile)
        defer { if process.isRunning { process.terminate() } }
        func logged() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        let ready = Date(timeIntervalSinceNow: 60)
        while !logged().contains(marker) && process.isRunning && Date() < ready { usleep(20_000) }
        try #require(process.isRunning, "parallax \(arguments.joined(separator: " ")) ended before the signal: \(logged())")
        kill(process.processIdentifier, signal)
        let sent = Date()
        while process.isRunning && Date().timeIntervalSince(sent) < 60 { usleep(10_000) }
        let seconds = Date().timeIntervalSince(sent)
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return (process.terminationStatus, logged(), seconds)
    }
}
