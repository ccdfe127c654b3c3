#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ParallaxGeometry

/// A fixed set of threads that run the bands of one job together with the
/// calling thread (rectifiers use ``shared(threadCount:)``).
///
/// The threads are created once and sleep on a condition variable between
/// jobs, so a job costs two wake-ups rather than thread creation, and
/// nothing is allocated per job. Tasks are handed out one at a time from a
/// shared counter, which balances uneven bands (rows near a lens edge cost
/// more than rows in the middle).
package final class WorkerPool: @unchecked Sendable {
    /// Threads that work on a job, including the caller of ``run(tasks:_:)``.
    package let threadCount: Int
    /// The threads besides the caller that did start (fewer than `threadCount − 1` only when
    /// the system refused one): tasks that wait for one another (ParallaxDepth's two stages)
    /// need one thread each.
    package private(set) var startedThreads = 0
    private let state: PoolState

    /// - Parameter threadCount: total threads including the caller; values
    ///   below 1 act as 1. With 1 no thread is created.
    init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
        self.state = PoolState()
        for _ in 1..<self.threadCount {
            let context = Unmanaged.passRetained(state).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, { raw in
                // The thread owns one reference to the state, released when it exits.
                guard let raw else { return nil }
                let state = Unmanaged<PoolState>.fromOpaque(raw).takeRetainedValue()
                state.workLoop()
                return nil
            }, context)
            if created == 0 {
                pthread_detach(thread)
                startedThreads += 1
            } else {
                // Fewer threads than asked: the job still completes, only slower.
                Unmanaged<PoolState>.fromOpaque(context).release()
            }
        }
    }

    deinit {
        state.shutDown()
    }

    /// Serialises jobs of different owners on a shared pool.
    private let runLock = Locked<Void>(())

    /// One pool per thread count for the whole process, created on first use and kept, as
    /// OpenCV keeps its threads: a rectifier built later starts with threads that are
    /// already running. Jobs from different owners run one after another.
    package static func shared(threadCount: Int) -> WorkerPool {
        let count = max(1, threadCount)
        return sharedPools.withLock { pools in
            if let pool = pools[count] { return pool }
            let pool = WorkerPool(threadCount: count)
            pools[count] = pool
            return pool
        }
    }

    private static let sharedPools = Locked<[Int: WorkerPool]>([:])

    /// The number of processors online, at least 1.
    package static var processorCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// A task function: called with the job's context and a task index.
    ///
    /// A C-convention function rather than a closure because handing a
    /// closure to other threads turns it into an escaping one, and that
    /// conversion allocates on every job; a plain function plus a pointer to
    /// the caller's context does not.
    package typealias Task = @convention(c) (UnsafeRawPointer, Int) -> Void

    /// Runs `task(context, 0) … task(context, tasks − 1)`, spread over the
    /// pool's threads and the caller, and returns when all have finished.
    /// Calls from several threads take turns (a task must not call `run` on
    /// its own pool); `context` must stay valid until the call returns. Each thread takes one
    /// task at a time and finishes it before the next, so `tasks` ≤ ``startedThreads`` + 1
    /// tasks that wait for one another each get a thread of their own.
    package func run(tasks: Int, context: UnsafeRawPointer, _ task: Task) {
        guard tasks > 0 else { return }
        if threadCount == 1 || tasks == 1 {
            for t in 0..<tasks { task(context, t) }
            return
        }
        runLock.withLock { _ in state.execute(tasks: tasks, context: context, task) }
    }
}

/// The shared part of a ``WorkerPool``: the job, a task counter and the
/// synchronisation, all guarded by one mutex.
///
/// Not a `Locked`: the threads sleep here on condition variables between jobs, and a
/// condition variable waits on a pthread mutex (`Mutex` has no condition to wait on).
/// Nothing else in the package uses these primitives.
private final class PoolState: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var job: WorkerPool.Task?
    private var jobContext: UnsafeRawPointer?
    private var generation = 0
    private var taskCount = 0
    private var nextTask = 0
    private var unfinished = 0
    private var stopping = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wake, nil)
        pthread_cond_init(finished, nil)
    }

    deinit {
        pthread_cond_destroy(finished)
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(mutex)
        finished.deallocate()
        wake.deallocate()
        mutex.deallocate()
    }

    func shutDown() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(mutex)
    }

    func execute(tasks: Int, context: UnsafeRawPointer, _ task: WorkerPool.Task) {
        pthread_mutex_lock(mutex)
        job = task
        jobContext = context
        taskCount = tasks
        nextTask = 0
        unfinished = tasks
        generation &+= 1
        pthread_cond_broadcast(wake)
        drainTasks()
        while unfinished > 0 { pthread_cond_wait(finished, mutex) }
        job = nil
        jobContext = nil
        pthread_mutex_unlock(mutex)
    }

    /// Takes tasks until none are left. Called and returns with the mutex held.
    private func drainTasks() {
        while nextTask < taskCount, let task = job, let context = jobContext {
            let index = nextTask
            nextTask += 1
            pthread_mutex_unlock(mutex)
            task(context, index)
            pthread_mutex_lock(mutex)
            unfinished -= 1
            if unfinished == 0 { pthread_cond_broadcast(finished) }
        }
    }

    func workLoop() {
        pthread_mutex_lock(mutex)
        // Start from the pool's first generation, not the current one: a job
        // may have been posted before this thread got to run, and it must
        // still help with it (finding no task left is harmless).
        var seen = 0
        while true {
            while generation == seen && !stopping { pthread_cond_wait(wake, mutex) }
            if stopping { break }
            seen = generation
            drainTasks()
        }
        pthread_mutex_unlock(mutex)
    }
}
