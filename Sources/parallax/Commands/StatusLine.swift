import ParallaxGeometry
import Foundation

/// The one way a long-running command shows how it is doing, on standard error.
///
/// On a terminal the line is rewritten in place at most every `terminalInterval`; elsewhere
/// (a log, CI) each update is a new line at most every `logInterval`, so unattended runs
/// keep short logs. Nothing shows during the first `silentFor` (work that ends quickly
/// prints nothing). Notes (a pair taken, a still set aside) get lines of their own, kept in
/// the scroll-back. Safe to use from several threads.
final class StatusLine: Sendable {
    private let terminalInterval: Duration
    private let logInterval: Duration
    private let silentFor: Duration
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let started: ContinuousClock.Instant
    private let terminal: Bool
    private let write: @Sendable (String) -> Void
    private let state = Locked(Shown())

    private struct Shown {
        var last: ContinuousClock.Instant?
        /// An in-place line is on the terminal now (and must be ended before other text).
        var lineOpen = false
    }

    /// A status line; `clock`, `terminal` and `write` stand in for the continuous clock,
    /// whether standard error is a terminal, and standard error itself (tests pass their
    /// own, so the timing rules are checked without waiting).
    init(terminalInterval: Duration = .seconds(1), logInterval: Duration = .seconds(5), silentFor: Duration = .zero,
         clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
         terminal: Bool = isatty(2) != 0,
         write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) {
        self.terminalInterval = terminalInterval
        self.logInterval = logInterval
        self.silentFor = silentFor
        self.clock = clock
        self.started = clock()
        self.terminal = terminal
        self.write = write
    }

    /// Shows `text` when it is time to: not before `silentFor`, then at most once per interval.
    func show(_ text: @autoclosure () -> String) {
        let now = clock()
        guard now - started >= silentFor else { return }
        let due = state.withLock { shown in
            if let last = shown.last, now - last < (terminal ? terminalInterval : logInterval) { return false }
            shown.last = now
            shown.lineOpen = terminal
            return true
        }
        guard due else { return }
        let line = text()
        write(terminal ? "\r" + line + "\u{1B}[K" : line + "\n")
    }

    /// `text` on a line of its own, kept in the scroll-back (an in-place line is replaced
    /// and shown again at the next update).
    func note(_ text: String) {
        let open = state.withLock { shown in
            defer { shown.lineOpen = false; shown.last = nil }
            return shown.lineOpen
        }
        write((open ? "\r\u{1B}[K" : "") + text + "\n")
    }

    /// Ends the status: `text` shown now whatever the time, or, without text, the in-place
    /// line ended (nothing when nothing was shown).
    func finish(_ text: String? = nil) {
        let open = state.withLock { shown in
            defer { shown.lineOpen = false }
            return shown.lineOpen
        }
        if let text {
            write((open ? "\r" : "") + text + (terminal ? "\u{1B}[K" : "") + "\n")
        } else if open {
            write("\n")
        }
    }

    /// A progress line for work of known size: `label: 42 % detail`, silent for the first two
    /// seconds, then at most once a second on a terminal and every five seconds elsewhere.
    static func progress(_ label: String, clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
                         terminal: Bool = isatty(2) != 0,
                         write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) })
        -> Progress {
        Progress(label: label, line: StatusLine(silentFor: .seconds(2), clock: clock, terminal: terminal, write: write))
    }

    /// A ``StatusLine`` that shows how much of a known amount of work is done.
    struct Progress: Sendable {
        let label: String
        let line: StatusLine

        /// Shows `fraction` (0...1) done, with `detail`, when it is time to.
        func update(_ fraction: Double, _ detail: @autoclosure () -> String) {
            line.show("\(label): \(Int((min(max(fraction, 0), 1) * 100).rounded(.down))) % \(detail())")
        }

        /// Ends the line on a terminal (when anything was shown).
        func finish() { line.finish() }
    }
}
