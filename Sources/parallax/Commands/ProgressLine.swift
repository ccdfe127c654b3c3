import ParallaxGeometry
import Foundation

/// A progress line on standard error for work that takes more than a few seconds: silent
/// for the first two seconds, then updated at most once a second (in place on a terminal,
/// a new line every five seconds otherwise).
/// Safe to update from several threads.
final class ProgressLine: Sendable {
    private let label: String
    private let started = ContinuousClock.now
    private let lastShown = Locked<ContinuousClock.Instant?>(nil)
    private let terminal = isatty(2) != 0

    init(_ label: String) { self.label = label }

    /// Shows `fraction` (0...1) done, with `detail`, when it is time to.
    func update(_ fraction: Double, _ detail: @autoclosure () -> String) {
        let now = ContinuousClock.now
        guard now - started >= .seconds(2) else { return }
        let due = lastShown.withLock { last in
            if let last, now - last < (terminal ? .seconds(1) : .seconds(5)) { return false }
            last = now
            return true
        }
        guard due else { return }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        let line = "\(label): \(percent) % \(detail())"
        FileHandle.standardError.write(Data((terminal ? "\r" + line + "\u{1B}[K" : line + "\n").utf8))
    }

    /// Ends the line on a terminal (when anything was shown).
    func finish() {
        if terminal, lastShown.withLock({ $0 }) != nil { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
