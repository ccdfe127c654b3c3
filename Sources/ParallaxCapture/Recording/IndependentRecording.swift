import Foundation
import ParallaxGeometry

/// What one camera contributed to a recording.
public struct CameraRecordingSummary: Hashable, Sendable {
    /// The camera.
    public var identity: DeviceIdentity
    /// Frames written.
    public var framesWritten: Int
    /// Frames reported lost, by reason.
    public var drops: [DropReason: Int]
    /// True when the camera disconnected during the recording.
    public var disconnected: Bool
    /// First error while writing, if any (recording of that camera stopped there).
    public var writeError: CaptureError?
}

/// Ends an independent recording from another thread (on Ctrl-C): the recording stops at
/// once, as cleanly as when it reaches its frames.
public final class RecordingStop: @unchecked Sendable {
    let condition = NSCondition()
    /// Guarded by `condition`.
    var requestedUnderLock = false
    /// Run by ``request()``: the recording's devices told to stop (a rendering start cut short).
    /// Guarded by `condition`.
    var onRequest: (@Sendable () -> Void)?

    /// A stop not yet requested.
    public init() {}

    /// Asks the recording to stop.
    public func request() {
        condition.lock()
        requestedUnderLock = true
        let action = onRequest
        condition.broadcast()
        condition.unlock()
        action?()
    }

    /// True once ``request()`` was called.
    public var isRequested: Bool {
        condition.lock()
        defer { condition.unlock() }
        return requestedUnderLock
    }
}

/// Records each device's frames on its own (no pairing) until every device
/// has `frames` frames or the deadline passes: the recording the CLI does
/// before a synchronizer pairs frames.
///
/// Devices must be configured. Frames are written on the devices' threads,
/// which for simulated devices running as fast as possible paces them to the disk.
///
/// - Parameters:
///   - devices: the left camera is written as `cam0`, the right as `cam1`.
///   - frames: frames to write per camera; a camera's later frames are ignored.
///   - recorder: the recording folder every frame is written to, as it arrives.
///   - timeoutSeconds: the deadline for the whole recording.
///   - stop: ends the recording early when requested (Ctrl-C).
/// - Returns: each camera's summary. The recorder is finished when every camera wrote its
///   frames or the stop was requested; otherwise (the deadline, a camera gone, a write
///   error) it is left open for the caller to ``EuRoCRecorder/finish()`` or
///   ``EuRoCRecorder/abandon()``. Each frame is listed in its CSV as soon as it is written.
/// - Throws: ``CaptureError`` when a device cannot start or the CSVs cannot be synced.
public func recordIndependently(_ devices: PerSide<any CaptureDevice>, frames: Int, into recorder: EuRoCRecorder,
                                timeoutSeconds: Double, stop: RecordingStop = RecordingStop()) throws(CaptureError)
    -> PerSide<CameraRecordingSummary> {
    let condition = stop.condition
    let summaries = Locked(devices.map { CameraRecordingSummary(identity: $0.identity, framesWritten: 0, drops: [:],
                                                               disconnected: false, writeError: nil) })
    func finished() -> Bool {
        summaries.withLock { $0.both.allSatisfy { $0.framesWritten >= frames || $0.disconnected || $0.writeError != nil } }
    }
    var started: [any CaptureDevice] = []
    defer { for device in started { device.stop() } }
    // The time counts from here: a simulated camera renders its view when it starts, and
    // gives up when the time runs out first.
    let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
    let stopDevices: @Sendable () -> Void = { for device in devices.both { (device as? any StopRequesting)?.requestStop() } }
    condition.lock()
    stop.onRequest = stopDevices
    condition.unlock()
    defer {
        condition.lock()
        stop.onRequest = nil
        condition.unlock()
    }
    let interrupt = DispatchWorkItem(block: stopDevices)
    DispatchQueue.global().asyncAfter(deadline: .now() + max(0, timeoutSeconds), execute: interrupt)
    defer { interrupt.cancel() }
    for side in StereoSide.allCases {
        let device = devices[side]
        if Date() >= deadline || stop.isRequested { break }
        do throws(CaptureError) {
            try device.start { output in
                switch output {
                case .frame(let frame):
                    let done = summaries.withLock { $0[side].framesWritten >= frames || $0[side].writeError != nil }
                    if done { return }
                    do throws(CaptureError) {
                        try recorder.record(frame, side: side)
                        summaries.withLock { $0[side].framesWritten += 1 }
                    } catch {
                        summaries.withLock { $0[side].writeError = error }
                    }
                case .event(.dropped(let count, let reason)):
                    summaries.withLock { $0[side].drops[reason, default: 0] += count }
                case .event(.disconnected):
                    summaries.withLock { $0[side].disconnected = true }
                case .event:
                    break
                }
                condition.lock()
                condition.broadcast()
                condition.unlock()
            }
        } catch {
            guard Date() >= deadline else { throw error }
            break  // out of time while starting: what was recorded so far (nothing) is the answer
        }
        started.append(device)
    }
    condition.lock()
    while !finished() && !stop.requestedUnderLock {
        if !condition.wait(until: deadline) { break }
    }
    let stopped = stop.requestedUnderLock
    condition.unlock()
    for device in started { device.stop() }
    started = []
    let result = summaries.withLock { $0 }
    if stopped || result.both.allSatisfy({ $0.framesWritten >= frames }) { try recorder.finish() }
    return result
}
