import Foundation
import Parallax
import ParallaxTestSupport
import Synchronization
import Testing

/// The allocation counter `make allocations` preloads (Tests/AllocationCounter): nil when
/// it is not loaded, as in the main run and under the sanitizers, which own malloc.
enum AllocationCounter {
    private typealias Start = @convention(c) () -> Void
    private typealias Stop = @convention(c) () -> UInt64
    private static let start = symbol("parallax_allocation_counter_start").map { unsafeBitCast($0, to: Start.self) }
    private static let stop = symbol("parallax_allocation_counter_stop").map { unsafeBitCast($0, to: Stop.self) }
    private static let startThisThread = symbol("parallax_allocation_counter_start_this_thread").map { unsafeBitCast($0, to: Start.self) }
    private static let stopThisThread = symbol("parallax_allocation_counter_stop_this_thread").map { unsafeBitCast($0, to: Stop.self) }

    /// A symbol of the process (the preloaded library's included), or nil.
    private static func symbol(_ name: String) -> UnsafeMutableRawPointer? { dlsym(dlopen(nil, RTLD_NOW), name) }

    static var isLoaded: Bool { start != nil && stop != nil && startThisThread != nil && stopThisThread != nil }

    /// Set by `make allocations`: the suite must run, not skip.
    static let isRequired = ProcessInfo.processInfo.environment["PARALLAX_REQUIRE_ALLOCATION_COUNTER"] == "1"

    /// The heap allocations of the whole process while `body` runs.
    static func count(_ body: () throws -> Void) rethrows -> UInt64 {
        guard let start, let stop else { return .max }
        start()
        defer { _ = stop() }
        try body()
        return stop()
    }

    /// The heap allocations of the calling thread alone while `body` runs on it: exact, for
    /// work that never leaves the thread (nothing the test runner does elsewhere counts).
    static func onThisThread(_ body: () throws -> Void) rethrows -> UInt64 {
        guard isLoaded else { return .max }
        startOnThisThread()
        defer { _ = stopOnThisThread() }
        try body()
        return stopOnThisThread()
    }

    /// Starts counting the calling thread's allocations (``stopOnThisThread()`` reads them):
    /// for a window that opens and closes inside callbacks on a thread the test does not own.
    static func startOnThisThread() { startThisThread?() }
    /// The calling thread's allocations since ``startOnThisThread()``.
    static func stopOnThisThread() -> UInt64 { stopThisThread?() ?? .max }

    /// The fewest allocations over three runs of `body`, each a window of its own, for work
    /// on the session's threads. The count is process-wide, and the test runner's own threads
    /// (reporting a test's start) can allocate during a window now and then; each window
    /// holds over a thousand pairs, so an allocation per pair, or one every thousand pairs,
    /// shows in every window, and the least of three is still the code's own steady state.
    /// `body` gets the window's number (0, 1, 2), for work that must not repeat itself.
    static func fewest(_ body: (Int) throws -> Void) rethrows -> UInt64 {
        var counts: [UInt64] = []
        for window in 0..<3 where counts.min() != 0 { counts.append(try count { try body(window) }) }
        if counts.count > 1 { print("allocation windows: \(counts) (the fewest counts)") }
        return counts.min() ?? .max
    }
}

/// "0 allocations per pair", asserted: the synchronizer, the rectifier and a whole session
/// in steady state, counted by an allocator that counts every malloc of the process
/// (package-benchmark's `mallocCountTotal` in `Benchmarks/` measures the same windows in
/// release builds). Run alone in a process of its own (`make allocations`, part of `make
/// test`), so that no other test allocates during a window, and on a release build: the
/// claims are about optimised code (a debug build allocates closure contexts and
/// temporaries per frame: 3 per frame in the synchronizer, about 240 per pair in the
/// rectifier).
@Suite("Allocations in steady state (make allocations)", .serialized,
       .enabled(if: AllocationCounter.isLoaded || AllocationCounter.isRequired,
                "needs the allocation counter preloaded: make allocations runs this suite"))
struct AllocationTests {
    init() throws {
        // `make allocations` asks for the counter: there, a preload that did not take is a failure, not a skip.
        try #require(AllocationCounter.isLoaded, "PARALLAX_REQUIRE_ALLOCATION_COUNTER is set but the allocation counter is not loaded")
    }

    /// Two 30 fps cameras, the right one 4 ms late with ±1 ms jitter, one right frame in 50
    /// lost: pairs, drops and the clock estimator all run (the synchronizer benchmark's streams).
    static func timestamp(_ side: StereoSide, _ k: Int) -> Int64 {
        let base = Int64(k) * 33_333_333 + 1_000_000_000
        guard side == .right else { return base }
        return base + 4_000_000 + (Int64((k &* 7919) % 2001) - 1000) * 1000
    }
    static func delivered(_ side: StereoSide, _ k: Int) -> Bool { side == .left || k % 50 != 17 }

    @Test("the synchronizer pairs and drops without allocating once its rings are warm")
    func synchronizerAllocatesNothing() {
        let core = SynchronizerCore<Int>(configuration: SynchronizerConfiguration(
            policy: .approximate, frameIntervalNanoseconds: 33_333_333, timestampJitterNanoseconds: 1_000_000,
            clockCorrection: .estimate))
        var pairs = 0, drops = 0, k = 0
        func push(_ frames: Int) {
            for _ in 0..<frames {
                for side in StereoSide.allCases where Self.delivered(side, k) {
                    let t = Self.timestamp(side, k)
                    core.push(side, timestampNanoseconds: t, sequence: UInt64(k), payload: k, now: t) { event in
                        if case .pair = event { pairs &+= 1 } else { drops &+= 1 }
                    }
                }
                k += 1
            }
        }
        push(10_000)  // the rings and the estimator's window reach their steady state
        let before = (pairs, drops)
        let allocations = AllocationCounter.onThisThread { push(30_000) }
        print("synchronizer: \(allocations) allocations over 30 000 frame pairs (\(pairs - before.0) pairs, \(drops - before.1) drops), counted on its thread alone")
        #expect(allocations == 0)
        // Not a vacuous window: it paired, and it dropped the frames whose partners were lost.
        #expect(pairs - before.0 > 27_000 && drops - before.1 >= 600)
    }

    @Test("a V4L2 camera dequeues, stamps and hands on each buffer with one allocation, its Frame")
    func v4l2CameraAllocatesOneFramePerBuffer() throws {
        // The virtual UVC driver behind the syscall seam: the camera's own capture loop, its
        // poll, DQBUF, stamping, numbering and QBUF, as against uvcvideo.
        let path = "/dev/video0", size = ImageSize(width: 64, height: 48)
        let interval = FrameInterval(numerator: 1, denominator: 1000)
        let driver = VirtualUVCDriver(cameras: [VirtualCameraSpec(
            path: path, formats: [.init(fourCC: .grey, sizes: [size], intervals: [interval])])])
        let camera = try V4L2Camera(path: path, syscalls: driver)
        _ = try camera.configure(CaptureFormat(fourCC: .grey, size: size, frameInterval: interval))
        // The window opens at the end of frame `first`'s callback and closes at the start of
        // frame `first + frames`'s, both on the capture thread: it holds exactly `frames`
        // whole trips round the loop (each frame freed in its callback, so its buffer is
        // queued again inside the window), and the `frames` Frames made for them.
        let first = 300, frames = 2_000
        let seen = Atomic<Int>(0), carried = Atomic<Int>(0), counted = Atomic<UInt64>(.max)
        let done = DispatchSemaphore(value: 0)
        try camera.start { output in
            guard case .frame(let frame) = output else { return }
            let k = seen.add(1, ordering: .relaxed).newValue
            // The virtual driver writes each frame's sequence into its first 8 bytes. Counted
            // before the last frame's signal, so the test reads every frame's verdict.
            if frame.payload.bytes.load(as: UInt64.self) == UInt64(littleEndian: frame.sequence) { carried.add(1, ordering: .relaxed) }
            if k == first + frames {
                counted.store(AllocationCounter.stopOnThisThread(), ordering: .relaxed)
                done.signal()
            }
            if k == first { AllocationCounter.startOnThisThread() }
        }
        defer { camera.stop() }
        #expect(done.wait(timeout: .now() + 30) == .success, "the camera delivered \(seen.load(ordering: .relaxed)) frames in 30 s")
        let allocations = counted.load(ordering: .relaxed)
        print("V4L2 camera: \(allocations) allocations over \(frames) dequeued buffers, counted on its capture thread alone")
        #expect(carried.load(ordering: .relaxed) >= first + frames, "each frame's bytes are its own buffer's")
        #expect(allocations == UInt64(frames), "one allocation per buffer, the Frame object itself")
    }

    @Test("the rectifier resamples a pair into reused buffers without allocating, every format, whole and compact maps")
    func rectifierAllocatesNothing() throws {
        let size = ImageSize(width: 160, height: 120)
        for compactMaps in [false, true] {
            for format in PixelFormat.allCases {
                let rectifier = try Rectifier(calibration: SimulatedStereoRig.example(size: size).calibration, compactMaps: compactMaps)
                try rectifier.prepare(for: format)
                let left = try TestPattern.image(format, size: size, seed: 1), right = try TestPattern.image(format, size: size, seed: 2)
                var outputLeft = try ImageBuffer(format: format, size: rectifier.outputSize)
                var outputRight = try ImageBuffer(format: format, size: rectifier.outputSize)
                func rectify() throws {
                    try left.withView { l in try right.withView { r in try rectifier.rectify(left: l, right: r, into: &outputLeft, &outputRight) } }
                }
                try rectify()  // the first pair touches every page of the outputs
                let allocations = try AllocationCounter.onThisThread { for _ in 0..<1_000 { try rectify() } }
                #expect(allocations == 0, "\(format)\(compactMaps ? ", compact maps" : ""): \(allocations) allocations over 1000 pairs")
                #expect(Set(outputLeft.bytes).count > 20, "\(format): the output carries the source's texture")
            }
        }
        print("rectifier: 0 allocations over 1000 pairs, on its thread alone, for \(PixelFormat.allCases.count) formats, whole and compact maps")
    }

    @Test("the semi-global matcher matches pair after pair into a reused map without allocating, one thread and two, five and eight paths")
    func matcherAllocatesNothing() throws {
        let size = ImageSize(width: 160, height: 120)
        let rig = SimulatedStereoRig.example(size: size)
        let left = try rig.render(.left), right = try rig.render(.right)
        for paths in [SemiGlobalMatcher.AggregationPaths.five, .eight] {
            for threads in [1, 2] {
                let matcher = try SemiGlobalMatcher(configuration: .init(disparityCount: 32, paths: paths, threads: threads), size: size)
                var map = DisparityMap()
                func match() throws {
                    try left.withView { l in try right.withView { r in try matcher.match(left: l, right: r, into: &map) } }
                }
                try match()  // the map's storage, the pool's threads
                // One thread: exact, on this thread alone; two: the pool's thread too, process-wide.
                let allocations = threads == 1
                    ? try AllocationCounter.onThisThread { for _ in 0..<200 { try match() } }
                    : try AllocationCounter.fewest { _ in for _ in 0..<200 { try match() } }
                #expect(allocations == 0, "\(paths) paths, \(threads) thread(s): \(allocations) allocations over 200 pairs")
                #expect(map.density > 0.3, "the map has disparities: \(map.density)")
                print("matcher, \(paths) paths, \(threads) thread(s): \(allocations) allocations over 200 pairs (160×120, 32 disparities), "
                      + "working memory \(matcher.workingMemoryBytes) bytes")
            }
        }
    }

    @Test("an MJPEG decoder decodes frame after frame into a reused buffer without allocating, every output")
    func mjpegDecoderAllocatesNothing() throws {
        let size = ImageSize(width: 320, height: 240)
        let rig = SimulatedStereoRig.example(size: size)
        for (subsampling, output) in [(JPEGSubsampling.s420, MJPEGOutput.ycbcr), (.s422, .ycbcr), (.s420, .gray8), (.s420, .bgr8)] {
            let jpeg = try JPEGEncoder.encode(try rig.render(.left, format: .rgb8), quality: 90, subsampling: subsampling)
            let decoder = try MJPEGDecoder(output: output)
            var image = try jpeg.withUnsafeBytes { try decoder.decode($0) }  // the first frame sizes the arena
            func decode() throws {
                try image.withMutableView { view in try jpeg.withUnsafeBytes { try decoder.decode($0, into: view) } }
            }
            try decode()
            let allocations = try AllocationCounter.onThisThread { for _ in 0..<1_000 { try decode() } }
            #expect(allocations == 0, "\(subsampling.rawValue) → \(output): \(allocations) allocations over 1000 frames")
            #expect(Set(image.bytes).count > 20, "the decoded image carries the scene")
        }
        print("MJPEG decoder: 0 allocations over 1000 frames, on its thread alone, for I420, I422, gray8 and BGR output")
    }

    @Test("a session over MJPEG cameras decodes, rectifies and hands pairs over without allocating once running")
    func mjpegSessionAllocatesNothing() throws {
        let formats = Locked<Set<PixelFormat>>([])
        let fixture = try HandFedSession(mjpeg: true, onPair: { pair in
            if let image = pair.left.image, pair.isRectified { formats.withLock { _ = $0.insert(image.format) } }
        })
        defer { fixture.session.stop() }
        // Batches are let go of pair by pair, as a camera lets go of its frames: each decoded
        // frame holds a pooled buffer until it is freed.
        fixture.run(fixture.batch(500))  // the decode pools, arenas, plans and windows reach their steady state
        let batches = (0..<3).map { _ in fixture.batch(1_000) }
        let start = fixture.delivered
        let allocations = AllocationCounter.fewest { window in fixture.run(batches[window]) }
        let pairs = fixture.delivered - start
        print("MJPEG session: \(allocations) allocations in the fewest of the windows over \(pairs) decoded, rectified pairs")
        #expect(pairs >= 999, "the windows delivered \(pairs) pairs, fewer than one window's 1000")
        #expect(formats.withLock { $0 } == [.i420], "every pair decoded to I420 and rectified")
        #expect(allocations == 0)
    }

    @Test("a session hands rectified pairs to its callback without allocating once running")
    func sessionAllocatesNothing() throws {
        let unrectified = Atomic<Int>(0)
        let fixture = try HandFedSession(onPair: { pair in
            if !pair.isRectified || pair.left.image == nil { unrectified.add(1, ordering: .relaxed) }
        })
        defer { fixture.session.stop() }
        // Frames are made before a window (a camera's own cost, one Frame per frame it
        // dequeues), then handed over a pair at a time; the next waits for the callback.
        fixture.run(fixture.frames(2_000))  // pools, plans and pressure windows reach their steady state
        let batches = (0..<3).map { _ in fixture.frames(1_500) }  // one per window, time going on
        let start = fixture.delivered
        let allocations = AllocationCounter.fewest { window in fixture.run(batches[window]) }
        let pairs = fixture.delivered - start
        print("session: \(allocations) allocations in the fewest of the windows over \(pairs) rectified pairs")
        #expect(pairs >= 1_499, "the windows delivered \(pairs) pairs, fewer than one window's 1500")
        #expect(unrectified.load(ordering: .relaxed) == 0, "every pair rectified, with its images")
        #expect(allocations == 0)
    }
}
