import Foundation
import ParallaxGeometry
import ParallaxImage
import Synchronization

/// Plays back one camera of a recording in the EuRoC / ASL layout
/// (`DIR/camN/data.csv` with `#timestamp [ns],filename`, images in
/// `DIR/camN/data/`), as written by ``EuRoCRecorder``.
///
/// Frames carry the recorded timestamps and their row number as sequence.
/// With ``SimulationPace/realTime`` the gaps between timestamps are kept;
/// otherwise frames come as fast as they decode. A ``CaptureEvent/stopped``
/// event follows the last frame. An image that cannot be read is a
/// recoverable error event (naming the file) and is skipped.
public final class RecordedFolderDevice: CaptureDevice, StopRequesting, Sendable {
    /// One row of `data.csv`.
    public struct Entry: Hashable, Sendable {
        /// The recorded timestamp (nanoseconds, the recording camera's clock).
        public var timestampNanoseconds: Int64
        /// The image file name inside `camN/data/`.
        public var filename: String
    }

    /// Who this device is.
    public let identity: DeviceIdentity
    /// `DIR/camN`.
    public let cameraFolder: String
    /// The rows, in timestamp order.
    public let entries: [Entry]
    /// Real-time playback or as fast as frames decode.
    public let pace: SimulationPace
    private let recordedFormat: CaptureFormat
    /// The recorded size and pixel format at the interval last asked for.
    private let configured: Locked<CaptureFormat>
    private let thread = Locked<CaptureThread?>(nil)

    /// Reads `side`'s `data.csv` (`DIR/cam0` is the left camera's, `DIR/cam1` the right's, as
    /// EuRoC numbers them) and its first image (for the format).
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the file and line at fault.
    public init(directory: String, side: StereoSide, pace: SimulationPace = .asFastAsPossible) throws(CaptureError) {
        cameraFolder = directory + "/cam\(side.rawValue)"
        self.pace = pace
        let csv = cameraFolder + "/data.csv"
        let text: String
        do { text = try FileAccess.readText(atPath: csv, as: .log) } catch { throw .recording(path: csv, reason: "\(error)") }
        var rows: [Entry] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ",", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count == 2, let timestamp = Int64(fields[0]), !fields[1].isEmpty else {
                throw .recording(path: csv, reason: "line \(number + 1): expected `timestamp_ns,filename`, found `\(excerpt(line))`")
            }
            rows.append(Entry(timestampNanoseconds: timestamp, filename: fields[1]))
        }
        guard let first = rows.first else { throw .recording(path: csv, reason: "lists no images") }
        entries = rows.sorted { $0.timestampNanoseconds < $1.timestampNanoseconds }
        let firstPath = cameraFolder + "/data/" + first.filename
        let image: ImageBuffer
        do { image = try ImageBuffer(contentsOfFile: firstPath) } catch { throw .recording(path: firstPath, reason: "\(error)") }
        guard let fourCC = CaptureFormat.fourCC(of: image.format) else {
            throw .recording(path: firstPath, reason: "pixel format \(image.format.rawValue) has no V4L2 code")
        }
        let steps = zip(entries, entries.dropFirst()).map { $1.timestampNanoseconds - $0.timestampNanoseconds }.sorted()
        let median = steps.isEmpty ? 33_333_333 : max(1, steps[steps.count / 2])
        recordedFormat = CaptureFormat(fourCC: fourCC, size: image.size,
                                       frameInterval: FrameInterval(framesPerSecond: 1e9 / Double(median)))
        configured = Locked(recordedFormat)
        identity = DeviceIdentity(stableID: "recording:\(cameraFolder)", name: "recording cam\(side.rawValue)", path: cameraFolder)
    }

    deinit { stop() }

    /// The recorded format (size and pixel format of the images, median frame interval).
    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] { [recordedFormat] }
    /// The recorded size and pixel format, at any interval (playback keeps the recorded times).
    public func supports(_ format: CaptureFormat) throws(CaptureError) -> Bool {
        format.size == recordedFormat.size && format.fourCC == recordedFormat.fourCC
    }
    /// The format in use (see ``CaptureDevice/activeFormat``): the recorded size and pixel
    /// format, at the median recorded interval until another is configured.
    public var activeFormat: CaptureFormat? { configured.withLock { $0 } }

    /// Accepts only the recorded size and pixel format, at any interval, and returns it as
    /// asked: playback keeps the recorded times whatever the interval, so the two folders
    /// of a recording (whose median intervals differ by their jitter and drift) configure
    /// to one shared format.
    @discardableResult
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat {
        guard format.size == recordedFormat.size, format.fourCC == recordedFormat.fourCC else {
            throw .unsupportedFormat(device: cameraFolder, requested: format, available: [recordedFormat])
        }
        configured.withLock { $0 = format }
        return format
    }

    /// Starts streaming into `handler` (see ``CaptureDevice/start(_:)``).
    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        let entries = self.entries, folder = cameraFolder, identity = self.identity
        let format = configured.withLock { $0 }, pace = self.pace
        let worker = CaptureThread(name: "parallax.recording \(folder)") { thread in
            let startedAt = monotonicNanoseconds()
            let t0 = entries.first?.timestampNanoseconds ?? 0
            for (row, entry) in entries.enumerated() {
                if thread.shouldStop { break }
                if pace == .realTime {
                    if !thread.sleep(untilMonotonicNanoseconds: startedAt + (entry.timestampNanoseconds - t0)) { break }
                }
                let path = folder + "/data/" + entry.filename
                do {
                    let image = try ImageBuffer(contentsOfFile: path)
                    let pixels = SharedPixels(image)
                    var frameFormat = format
                    frameFormat.size = image.size
                    if let code = CaptureFormat.fourCC(of: image.format) { frameFormat.fourCC = code }
                    handler(.frame(Frame(image: pixels.view, payload: pixels.payload, format: frameFormat,
                                         timestampNanoseconds: entry.timestampNanoseconds, timestampSource: .midExposure,
                                         sequence: UInt64(row), source: identity, release: { _ = pixels })))
                } catch {
                    // Every row is a frame or a loss with its reason: said, then counted.
                    handler(.event(.recoverableError(.recording(path: path, reason: "\(error)"))))
                    handler(.event(.dropped(count: 1, reason: .unreadableImage)))
                }
            }
            handler(.event(.stopped))
        }
        thread.withLock { $0 = worker }
    }

    /// Asks the playback thread to stop without waiting for it (``stop()`` waits).
    func requestStop() {
        thread.withLock { $0 }?.stopRequested.store(true, ordering: .releasing)
    }

    /// Stops streaming and waits for the device thread, with a deadline (see ``CaptureDevice/stop()``).
    public func stop() {
        let worker = thread.withLock { t in defer { t = nil }; return t }
        worker?.stopAndJoin(timeoutSeconds: 5)
    }
}
