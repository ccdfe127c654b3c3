import Foundation
import Testing

/// The harness every CLI test runs the command through.
@Suite("CLI test harness")
struct CLITestSupportTests {
    /// A command that exits while a process it started still holds its stdout: the harness says
    /// so instead of returning the output read so far (which may be partial).
    @Test func reportsOutputHeldOpenPastExit() throws {
        let shell = URL(fileURLWithPath: "/bin/bash")
        // The straggler closes every descriptor but the standard ones: Foundation's Process
        // reports an exit only once no process holds its own descriptors, and a straggler that
        // kept those would look like a command still running (the timeout's case, not this one).
        let straggler = "( for n in $(ls /proc/$BASHPID/fd); do [ $n -gt 2 ] && eval \"exec $n>&-\" 2>/dev/null; done; sleep 3 ) &"
        #expect(throws: ParallaxCLI.PipesStillOpen.self) {
            try ParallaxCLI.run(["-c", "echo partial; " + straggler], executable: shell, pipeDrainSeconds: 0.5)
        }
        // The same command without the straggler: its whole output.
        let whole = try ParallaxCLI.run(["-c", "echo whole"], executable: shell, pipeDrainSeconds: 0.5)
        #expect(whole.status == 0 && whole.stdout == "whole\n")
    }
}
