#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The package's one rule for system calls a signal can interrupt.
package enum SystemCall {
    /// Calls `call` again for as long as it fails with `EINTR` (a signal arrived before it
    /// did anything, as SIGINT does while a recording writes); returns its first other result,
    /// with the error number (`errorNumber`, `errno` unless the call keeps its own, as
    /// libv4l2 does) set when that result is negative.
    @inlinable
    package static func retryingInterrupts<Result: BinaryInteger>(errorNumber: () -> Int32 = { errno },
                                                                 _ call: () -> Result) -> Result {
        while true {
            let result = call()
            if result >= 0 || errorNumber() != EINTR { return result }
        }
    }
}
