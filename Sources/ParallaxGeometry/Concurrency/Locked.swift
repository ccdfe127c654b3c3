import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a lock: `Synchronization.Mutex`, made visible to ThreadSanitizer.
///
/// On Linux the standard library's `Mutex` locks with an atomic exchange on a futex word
/// that ThreadSanitizer does not see as synchronisation, so under `-sanitize=thread` every
/// access made under a `Mutex` is reported as a race (a two-thread counter under
/// `Mutex.withLock` is enough to show it). `Locked` takes the same lock and tells the
/// sanitizer about it (`__tsan_acquire` after locking, `__tsan_release` before unlocking),
/// so `make test-tsan` reports only real races. Outside a sanitizer build the hooks are
/// absent and cost one predictable branch each.
///
/// Every lock that guards state is a `Locked` (the same API as `Mutex.withLock`). Where a
/// thread must sleep until something happens, the lock comes with its condition: an
/// `NSCondition` (capture threads, sessions, the simulated rig), or in the worker pool,
/// which must not allocate per job, a pthread mutex and condition variables fenced in
/// `PoolState` (`WorkerPool.swift`). ThreadSanitizer sees both.
@usableFromInline
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    @usableFromInline let mutex: Mutex<Value>

    /// A lock around `value`.
    @inlinable
    package init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    package func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        let token = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            ThreadSanitizerHooks.acquire?(token)
            defer { ThreadSanitizerHooks.release?(token) }
            return try body(&value)
        }
    }
}

/// ThreadSanitizer's annotation entry points, when its runtime is linked in (a
/// `-sanitize=thread` build); nil otherwise.
@usableFromInline
package enum ThreadSanitizerHooks {
    @usableFromInline typealias Hook = @convention(c) (UnsafeRawPointer?) -> Void

    @usableFromInline static let acquire: Hook? = lookUp("__tsan_acquire")
    @usableFromInline static let release: Hook? = lookUp("__tsan_release")

    private static func lookUp(_ name: String) -> Hook? {
        // RTLD_DEFAULT: search every object loaded into the process.
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: Hook.self) }
    }
}
