import ParallaxGeometry
import Foundation

/// A progress line on standard error for work that takes more than a few seconds: silent
/// for the first two seconds, then updated at most once a second (in place on a terminal,
/// a new line every five seconds otherwise).
/// Safe to update from several threads.
final class ProgressLine: Sendable {
    private let label: String
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let started: ContinuousClock.Instant
    private let lastShown = Locked<ContinuousClock.Instant?>(nil)
    private let terminal: Bool
    private let write: @Sendable (String) -> Void

    /// A line labelled `label` on standard error; `clock`, `terminal` and `write` stand in for
    /// the continuous clock, whether standard error is a terminal, and standard error itself
    /// (tests pass their own, so the two-second rule is checked without waiting).
    init(_ label: String, clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
         terminal: Bool = isatty(2) != 0,
         write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) {
        self.label = label
        self.clock = clock
        self.started = clock()
        self.terminal = terminal
        self.write = write
    }

    /// Shows `fraction` (0...1) done, with `detail`, when it is time to.
    func update(_ fraction: Double, _ detail: @autoclosure () -> String) {
        let now = clock()
        guard now - started >= .seconds(2) else { return }
        let due = lastShown.withLock { last in
            if let last, now - last < (terminal ? .seconds(1) : .seconds(5)) { return false }
            last = now
            return true
        }
        guard due else { return }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        let line = "\(label): \(percent) % \(detail())"
        write(terminal ? "\r" + line + "\u{1B}[K" : line + "\n")
    }

    /// Ends the line on a terminal (when anything was shown).
    func finish() {
        if terminal, lastShown.withLock({ $0 }) != nil { write("\n") }
    }
}
