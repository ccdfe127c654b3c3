import Foundation
import Synchronization

/// What recording a session produced.
public struct SessionRecordingSummary: Sendable {
    /// Pairs written (one image in cam0 and one in cam1 each, listed in both CSVs).
    public var pairsWritten: Int
    /// The session's account at the end: frames in, pairs, drops by side and reason.
    public var statistics: StereoSessionStatistics
    /// The first error while writing, if any (the recording stopped there).
    public var writeError: CaptureError?
    /// Why the session ended before the pairs asked for were written, or why the recording
    /// could not be finished (`nil` when it was). The recorder is then left open:
    /// ``StereoPairRecorder/finish()`` keeps what was written, ``StereoPairRecorder/abandon()``
    /// keeps an older recording it was to replace; after a ``writeError``,
    /// ``StereoPairRecorder/keepAfterWriteError()`` keeps what is whole.
    public var endedEarly: String?
}

extension StereoSession {
    /// Records this session's pairs with `recorder` (EuRoC: left as cam0, right as cam1;
    /// MCAP: ROS 2 topics) until `pairs` are written (`nil`: until the session ends), the session ends, or
    /// `timeoutSeconds` pass; then stops the session. Each pair is listed in the CSVs as
    /// soon as its two images are written. A recording that reached its end (the pairs asked
    /// for, or with `pairs` nil the session's end) is finished (``StereoPairRecorder/finish()``);
    /// one that ended early is left open for the caller to finish or abandon
    /// (``SessionRecordingSummary/endedEarly`` says why).
    ///
    /// The recorder is the consumer of ``pairs`` (a session has one): with live cameras a slow disk shows up
    /// as pairs dropped for `consumer_behind`, with sources that wait nothing is lost. A
    /// session stopped from elsewhere (``stop()``, on Ctrl-C) ends the recording cleanly: the
    /// CSVs list exactly the pairs whose two images were written.
    ///
    /// The timeout covers the start too (a simulated rig renders its views then): when it
    /// runs out first, the start gives up and the summary says so.
    ///
    /// - Throws: ``StereoSessionError`` when the session cannot start; write errors end the
    ///   recording and are reported in the summary.
    public func record(into recorder: some StereoPairRecorder, pairs limit: Int?, timeoutSeconds: Double? = nil)
        async throws(StereoSessionError) -> SessionRecordingSummary {
        let timedOut = TimeoutFlag()
        let watchdog = timeoutSeconds.map { seconds in
            Task { [weak self] in
                // Held between 0 and 30 years (UInt64 nanoseconds trap past 584 years; NaN is 0).
                try? await Task.sleep(nanoseconds: UInt64(min(max(0, seconds.isNaN ? 0 : seconds), 1e9) * 1e9))
                guard !Task.isCancelled else { return }
                timedOut.fired.store(true, ordering: .relaxed)
                self?.stop()
            }
        }
        if !isRunning {
            do {
                try start()
            } catch {
                watchdog?.cancel()
                guard timedOut.fired.load(ordering: .relaxed) else { throw error }
                return SessionRecordingSummary(
                    pairsWritten: 0, statistics: statistics, writeError: nil,
                    endedEarly: "timed out after \(timeoutSeconds ?? 0) s, before the cameras were streaming")
            }
        }
        var written = 0
        var writeError: CaptureError?
        if limit.map({ $0 > 0 }) ?? true {
            for try await pair in pairs {
                do throws(CaptureError) {
                    try recorder.record(pair)
                    written += 1
                } catch {
                    writeError = error
                    break
                }
                if let limit, written >= limit { break }
            }
        }
        watchdog?.cancel()
        let ended = statistics.events.last { if case .stopped = $0.kind { return true }; return false }
        stop()
        if limit.map({ written >= $0 }) ?? (writeError == nil && !timedOut.fired.load(ordering: .relaxed)) {
            do { try recorder.finish() } catch { writeError = writeError ?? error }
        }
        var early: String?
        if let error = writeError {
            // The last pair written, or the bag's end, failed: short of what was asked either way.
            early = "\(error)"
        } else if limit == nil, timedOut.fired.load(ordering: .relaxed) {
            // Until the session's end, but the time ran out first.
            early = "timed out after \(timeoutSeconds ?? 0) s, before the session ended"
        } else if let limit, written < limit {
            if timedOut.fired.load(ordering: .relaxed) {
                early = "timed out after \(timeoutSeconds ?? 0) s"
            } else if case .stopped(let reason) = ended?.kind {
                early = reason
            } else {
                early = "stopped"
            }
        }
        return SessionRecordingSummary(pairsWritten: written, statistics: statistics, writeError: writeError, endedEarly: early)
    }
}

/// Set by a recording's watchdog when the time ran out.
private final class TimeoutFlag: Sendable {
    let fired = Atomic<Bool>(false)
}
