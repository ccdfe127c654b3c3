import Foundation
import ParallaxGeometry

/// What the program does on Ctrl-C (SIGINT), SIGTERM and SIGHUP (a closed terminal).
///
/// Installed once when the program starts, for every command: a signal ends the program
/// with status 128 + the signal's number, after removing the temporary files of writes in
/// progress (`FileAccess.removeTemporaries()`) and running the clean-ups commands registered
/// (``atExit(_:)``), so no output is left half-written and nothing the user had is replaced.
/// A command that can stop cleanly (a recording, a stream) sets an ``Interruption``: the
/// first signal runs its action instead, a second ends the program as above.
enum Signals {
    private static let handled = [SIGINT, SIGTERM, SIGHUP]
    private static let state = Locked(State())

    private struct State {
        var sources: [DispatchSourceSignal] = []
        var interruption: Interruption?
        var cleanups: [Int: @Sendable () -> Void] = [:]
        var nextCleanup = 0
        /// The signal that is ending the program, once its clean-ups have begun.
        var ending: Int32?
    }

    /// True once a signal is ending the program: its clean-ups run and it exits with 128 + the
    /// signal's number. A command that fails meanwhile (its files removed under it) leaves the
    /// exit to it (``ParallaxCommand/main()``), so the status still says it was a signal.
    static var isEnding: Bool { state.withLock { $0.ending != nil } }

    /// Takes over the three signals (idempotent).
    static func install() {
        state.withLock { state in
            guard state.sources.isEmpty else { return }
            for number in handled {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { received(number) }
                source.resume()
                state.sources.append(source)
            }
        }
    }

    /// Registers `cleanup` to run if a signal ends the program; returns a token for
    /// ``removeCleanup(_:)``.
    static func atExit(_ cleanup: @escaping @Sendable () -> Void) -> Int {
        state.withLock { state in
            state.nextCleanup += 1
            state.cleanups[state.nextCleanup] = cleanup
            return state.nextCleanup
        }
    }

    /// Forgets a clean-up (its work finished normally).
    static func removeCleanup(_ token: Int) {
        state.withLock { _ = $0.cleanups.removeValue(forKey: token) }
    }

    /// How a message names the signal: "interrupted" (Ctrl-C), "terminated (SIGTERM)", "hung up (SIGHUP)".
    fileprivate static func name(of number: Int32) -> String {
        number == SIGHUP ? "hung up (SIGHUP)" : number == SIGTERM ? "terminated (SIGTERM)" : "interrupted"
    }

    fileprivate static func setInterruption(_ interruption: Interruption?) {
        state.withLock { $0.interruption = interruption }
    }

    private static func received(_ number: Int32) {
        let interruption = state.withLock { $0.interruption }
        if let interruption, interruption.fireOnce(number) { return }
        let cleanups = state.withLock { state in
            defer { state.cleanups.removeAll() }
            state.ending = number
            return Array(state.cleanups.values)
        }
        for cleanup in cleanups { cleanup() }
        FileAccess.removeTemporaries()
        FileHandle.standardError.write(Data("\n\(name(of: number)): stopped; files being written were removed, earlier files kept\n".utf8))
        exit(128 + number)
    }
}

/// Calls an action once on Ctrl-C (SIGINT), SIGTERM or SIGHUP instead of ending the program,
/// so a running session can end cleanly; a second signal ends it at once (see ``Signals``).
final class Interruption: Sendable {
    private let action: @Sendable () -> Void
    private let firedFlag = Locked(false)

    /// True once a signal arrived.
    var fired: Bool { firedFlag.withLock { $0 } }

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
        Signals.install()
        Signals.setInterruption(self)
    }

    /// Runs the action for the first signal; false for any later one.
    fileprivate func fireOnce(_ number: Int32) -> Bool {
        let first = firedFlag.withLock { fired in
            defer { fired = true }
            return !fired
        }
        guard first else { return false }
        FileHandle.standardError.write(Data("\n\(Signals.name(of: number)): stopping cleanly (again to quit at once)\n".utf8))
        action()
        return true
    }

    /// Back to the program's default: a signal ends it (with its clean-ups).
    func cancel() {
        Signals.setInterruption(nil)
    }
}
