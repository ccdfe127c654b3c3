import Foundation
import Synchronization

/// What a synchronized recording produced.
public struct PairRecordingSummary: Sendable {
    /// Pairs written (cam0 and cam1 one image each).
    public var pairsWritten: Int
    /// The synchronizer's account when the last pair was made: frames in, drops by camera
    /// and reason, skew and latency.
    public var statistics: SynchronizerStatistics
    /// Frames the devices reported lost before they reached the synchronizer, per camera.
    public var deviceDrops: PerSide<Int>
    /// Cameras that disconnected during the recording.
    public var disconnected: PerSide<Bool>
    /// Pairs the synchronizer released while the writer was still busy with earlier ones
    /// (dropped so the cameras' buffers go back to the drivers; a slow disk shows up here).
    public var pairsSkippedByWriter: Int
    /// First error while writing, if any (the recording stopped there).
    public var writeError: CaptureError?
}

/// Records synchronized left/right pairs in the EuRoC layout (left as cam0,
/// right as cam1) until `pairs` pairs are written or the deadline passes.
///
/// Both devices must be configured. Their frames go to an
/// ``OutputSynchronizer`` (`configuration`: by default the approximate policy
/// with the devices' frame interval, a skew limit of half an interval, and at
/// most two waiting frames per camera so a late camera never holds many
/// driver buffers). Released pairs are written by a writer thread; at most
/// two wait for it. When two wait, the thread that completed the next pair
/// waits up to a second for room (back-pressure: simulated cameras running as
/// fast as possible stay gapless, real ones lose frames in their drivers,
/// reported as drops), then skips it and counts it
/// (``PairRecordingSummary/pairsSkippedByWriter``). Each frame's buffer goes
/// back to its driver once written.
///
/// - Throws: ``CaptureError`` when a device cannot start or the CSVs cannot be written.
public func recordSynchronizedPairs(left: any CaptureDevice, right: any CaptureDevice, pairs: Int,
                                    into recorder: EuRoCRecorder, configuration: SynchronizerConfiguration? = nil,
                                    timeoutSeconds: Double) throws(CaptureError) -> PairRecordingSummary {
    let interval = left.activeFormat?.frameInterval.nanoseconds ?? right.activeFormat?.frameInterval.nanoseconds
    let devices = PerSide<any CaptureDevice>(left: left, right: right)
    var started: [StereoSide] = []
    do {
        return try recordPairs(pairs: pairs, into: recorder, configuration: configuration, frameIntervalNanoseconds: interval,
                               timeoutSeconds: timeoutSeconds, start: { handler in
                                   for side in StereoSide.allCases {
                                       try devices[side].start { output in
                                           switch output {
                                           case .frame(let frame): handler(.frame(frame, side))
                                           case .event(let event): handler(.event(event, side))
                                           }
                                       }
                                       started.append(side)
                                   }
                               },
                               stop: { for side in started { devices[side].stop() } })
    } catch let error as CaptureError {
        throw error
    } catch {
        throw .invalidState(device: "recording", reason: "\(error)")
    }
}

/// Records synchronized pairs from a configured ``StereoDevice`` (see
/// ``recordSynchronizedPairs(left:right:pairs:into:configuration:timeoutSeconds:)``); a side
/// switched off during the recording leaves a gap that the synchronizer reports as
/// `constituent_disabled`.
///
/// - Throws: ``StereoDeviceError`` when the device cannot start, ``CaptureError`` when the
///   CSVs cannot be written.
public func recordSynchronizedPairs(from device: StereoDevice, pairs: Int, into recorder: EuRoCRecorder,
                                    configuration: SynchronizerConfiguration? = nil,
                                    timeoutSeconds: Double) throws -> PairRecordingSummary {
    try recordPairs(pairs: pairs, into: recorder, configuration: configuration,
                    frameIntervalNanoseconds: device.activeFormats?.left.frameInterval.nanoseconds,
                    timeoutSeconds: timeoutSeconds, start: { handler throws in try device.start(handler) }, stop: { device.stop() })
}

/// The recording loop over any source of ``StereoOutput``s.
private func recordPairs(pairs: Int, into recorder: EuRoCRecorder, configuration: SynchronizerConfiguration?,
                         frameIntervalNanoseconds interval: Int64?, timeoutSeconds: Double,
                         start: (@escaping @Sendable (StereoOutput) -> Void) throws -> Void,
                         stop: () -> Void) throws -> PairRecordingSummary {
    let settings = configuration ?? SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: interval,
                                                              queueCapacity: 2)
    struct Progress {
        var written = 0
        var waiting: [SynchronizedPair<Frame>] = []
        /// Taken by the writer and not yet written.
        var writing = 0
        var skipped = 0
        var capturing = true
        var deviceDrops = PerSide(repeating: 0)
        var disconnected = PerSide(repeating: false)
        var writeError: CaptureError?
    }
    let progress = Mutex(Progress())
    let condition = NSCondition()
    @Sendable func wake() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
    let synchronizer = OutputSynchronizer<Frame>(configuration: settings, pairHandler: { pair in
        // Back-pressure: wait (up to a second) for the writer to take a pair, so cameras
        // that run as fast as they are consumed stay gapless; a real camera held up here
        // loses frames in its driver, which it reports as drops.
        let deadline = Date(timeIntervalSinceNow: 1)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let outcome = progress.withLock { p -> Bool? in
                guard p.written + p.writing + p.waiting.count < pairs, p.writeError == nil else { return true }
                if p.waiting.count < 2 {
                    p.waiting.append(pair)
                    return true
                }
                if Date() >= deadline {
                    p.skipped += 1
                    return false
                }
                return nil
            }
            if outcome != nil { break }
            _ = condition.wait(until: deadline)
        }
        condition.broadcast()
    })
    // The writer: takes waiting pairs and writes them, off the cameras' threads.
    let writer = CaptureThread(name: "parallax.recorder") { thread in
        while true {
            condition.lock()
            var next: SynchronizedPair<Frame>?
            while next == nil {
                let (pair, stop) = progress.withLock { p -> (SynchronizedPair<Frame>?, Bool) in
                    if !p.waiting.isEmpty {
                        p.writing += 1
                        return (p.waiting.removeFirst(), false)
                    }
                    return (nil, !p.capturing || thread.shouldStop)
                }
                if let pair { next = pair } else if stop { break } else {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
                }
            }
            condition.unlock()
            guard let pair = next else { return }
            do throws(CaptureError) {
                try recorder.record(pair.left.payload, camera: 0)
                try recorder.record(pair.right.payload, camera: 1)
                progress.withLock { $0.written += 1; $0.writing -= 1 }
            } catch {
                progress.withLock { $0.writeError = error; $0.writing -= 1 }
            }
            wake()
        }
    }
    var running = false
    defer { if running { stop() } }
    try start { output in
        synchronizer.push(output)
        switch output {
        case .event(.dropped(let count, _), let side):
            progress.withLock { $0.deviceDrops[side] += count }
        case .event(.disconnected, let side):
            progress.withLock { $0.disconnected[side] = true }
            wake()
        default:
            break
        }
    }
    running = true
    let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
    condition.lock()
    while true {
        let done = progress.withLock { $0.written >= pairs || $0.writeError != nil || $0.disconnected.left || $0.disconnected.right }
        if done || Date() >= deadline { break }
        // Wake at least every 50 ms so a pair waiting on its latency deadline is released
        // even while both cameras are quiet.
        _ = condition.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.05)))
        condition.unlock()
        synchronizer.releaseExpired()
        condition.lock()
    }
    condition.unlock()
    // The account of the recording itself, before stopping lets frames run on unpaired.
    let statistics = synchronizer.statistics
    stop()
    running = false
    synchronizer.finish()
    // Let the writer finish what is waiting (bounded: at most two pairs), then stop it.
    progress.withLock { $0.capturing = false }
    wake()
    writer.stopAndJoin(timeoutSeconds: 30)
    try recorder.finish()
    let final = progress.withLock { $0 }
    return PairRecordingSummary(pairsWritten: final.written, statistics: statistics,
                                deviceDrops: final.deviceDrops, disconnected: final.disconnected,
                                pairsSkippedByWriter: final.skipped, writeError: final.writeError)
}
