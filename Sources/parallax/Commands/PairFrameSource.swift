import ParallaxGeometry
import Dispatch
import ParallaxCapture
import Synchronization

/// One log's frames for `parallax pair`'s pairing pass.
///
/// A log in order is parsed by a background thread, a batch of ``batchSize`` frames at a
/// time, while the pairing runs on the caller's thread (the two cores each do about half
/// the work). An unsorted log is read whole and sorted first, with a warning. The file
/// names of the frames still undecided stay in the recent batches, found by their index.
final class PairFrameSource {
    /// Frames per batch (every batch but the last is full, so frame `i` is in batch
    /// `i / batchSize`).
    static let batchSize = 8192

    private var sorted: RecordedTimestampLog?
    private var channel: BatchChannel?
    /// The recent batches, by batch number modulo the ring's size.
    private var batches: [FrameBatch] = []
    private var current = FrameBatch()
    private var positionInBatch = 0
    private var batchNumber = -1
    private var count = 0
    private var finished = false
    /// The typical frame spacing (of the whole log when it was read whole).
    let spacing: Int64?
    /// The file's size in bytes (0 for a log read whole).
    let fileSize: Int
    /// Bytes parsed so far (as of the latest batch).
    private(set) var bytesRead = 0
    /// Why the stream stopped early (the file changed since the first pass, or a read
    /// failed).
    private(set) var error: String?
    /// The log's path.
    let path: String
    /// Frames the first pass counted: no more are paired.
    let frameLimit: Int
    /// Whether the file held more frames than the first pass counted (it was being written).
    private(set) var grew = false

    /// - Parameter window: how many frames may be undecided at once (see
    ///   ``RecordedStreamPairing/replay(configuration:left:right:emit:)``).
    init(_ summary: TimestampLogSummary, window: Int) throws {
        path = summary.path
        frameLimit = summary.frameCount
        if summary.isSorted {
            spacing = summary.typicalSpacingNanoseconds
            let channel = BatchChannel(capacity: 4)
            self.channel = channel
            let reader: TimestampLogReader
            do {
                reader = try TimestampLogReader(path: summary.path)
            } catch {
                throw CLIError(error.description)
            }
            fileSize = reader.fileSize
            batches = Array(repeating: FrameBatch(), count: (2 * window + 2) / Self.batchSize + 3)
            let transfer = UncheckedTransfer(reader)
            let limit = summary.frameCount
            DispatchQueue.global().async { Self.produce(transfer.value, limit: limit, into: channel) }
        } else {
            warn("warning: \(summary.path): timestamps were not in order; sorted them before pairing (the whole log is read into memory for that)")
            do {
                let log = try RecordedTimestampLog(contentsOfFile: summary.path)
                sorted = log
                spacing = log.medianSpacingNanoseconds
            } catch {
                throw CLIError(error.description)
            }
            fileSize = 0
        }
    }

    deinit { channel?.cancel() }

    /// The next frame's timestamp, or `nil` at the end (or on ``error``).
    func next() -> Int64? {
        if let log = sorted {
            guard count < log.entries.count else { return nil }
            defer { count += 1 }
            return log.entries[count].timestampNanoseconds
        }
        if positionInBatch == current.timestamps.count {
            guard !finished, let channel else { return nil }
            current = channel.receive()
            batchNumber += 1
            batches[batchNumber % batches.count] = current
            positionInBatch = 0
            bytesRead = current.bytesRead
            if current.isLast { finished = true }
            if let problem = current.problem { error = problem }
            if current.grew { grew = true }
            guard !current.timestamps.isEmpty else { return nil }
        }
        defer {
            positionInBatch += 1
            count += 1
        }
        return current.timestamps[positionInBatch]
    }

    /// Appends the file name of frame `index` (which must still be undecided) to `buffer`
    /// as a CSV field.
    func appendFilename(_ index: Int, to buffer: inout [UInt8]) {
        if let sorted {
            PairCommand.appendField(Array(sorted.entries[index].filename.utf8), to: &buffer)
            return
        }
        let number = index / Self.batchSize
        precondition(index < count && batchNumber - number < batches.count, "frame \(index) left the batch ring")
        let batch = batches[number % batches.count]
        let i = index - number * Self.batchSize
        let start = i == 0 ? 0 : Int(batch.nameEnds[i - 1])
        PairCommand.appendField(batch.names[start..<Int(batch.nameEnds[i])], to: &buffer)
    }

    // MARK: The background parser

    /// Parses the log into batches until its end (or `limit` frames), a bad line, or
    /// cancellation.
    private static func produce(_ reader: TimestampLogReader, limit: Int, into channel: BatchChannel) {
        var previous = Int64.min
        var produced = 0
        while true {
            var batch = FrameBatch()
            batch.timestamps.reserveCapacity(batchSize)
            batch.nameEnds.reserveCapacity(batchSize)
            batch.names.reserveCapacity(batchSize * 32)
            do {
                while batch.timestamps.count < batchSize {
                    if produced == limit {
                        // Lines appended since the first pass are not paired (and not checked).
                        while let line = try reader.next() {
                            if case .frame = line { batch.grew = true; break }
                        }
                        batch.isLast = true
                        break
                    }
                    guard let line = try reader.next() else {
                        batch.isLast = true
                        break
                    }
                    switch line {
                    case .frame(let timestamp, let number):
                        guard timestamp > previous else {
                            batch.problem = "\(reader.path) changed while it was being paired (line \(number) is out of order now)"
                            batch.isLast = true
                            break
                        }
                        previous = timestamp
                        produced += 1
                        batch.timestamps.append(timestamp)
                        batch.names.append(contentsOf: reader.filenameBytes)
                        batch.nameEnds.append(Int32(batch.names.count))
                    case .problem(let problem):
                        batch.problem = "\(reader.path) changed while it was being paired (line \(problem.line): \(problem.message))"
                        batch.isLast = true
                    }
                    if batch.isLast { break }
                }
            } catch {
                batch.problem = error.description
                batch.isLast = true
            }
            batch.bytesRead = reader.bytesRead
            let last = batch.isLast
            guard channel.send(batch), !last else { return }
        }
    }
}

/// Frames parsed in one go: timestamps, and file names packed end to end.
struct FrameBatch: Sendable {
    var timestamps: [Int64] = []
    var names: [UInt8] = []
    /// Where each name ends in `names` (it starts where the previous one ended).
    var nameEnds: [Int32] = []
    var bytesRead = 0
    var isLast = false
    var problem: String?
    /// The file held frames beyond the first pass's count.
    var grew = false
}

/// A bounded queue of batches from one producer thread to one consumer.
private final class BatchChannel: Sendable {
    private let items = Locked<[FrameBatch]>([])
    private let filled = DispatchSemaphore(value: 0)
    private let free: DispatchSemaphore
    private let cancelled = Atomic<Bool>(false)

    init(capacity: Int) {
        // Created at zero and raised: libdispatch traps when a semaphore is released with a
        // count below its initial value, which a consumer that stops early would leave.
        free = DispatchSemaphore(value: 0)
        for _ in 0..<capacity { free.signal() }
    }

    /// Waits for room; `false` once the consumer went away.
    func send(_ batch: FrameBatch) -> Bool {
        free.wait()
        guard !cancelled.load(ordering: .acquiring) else { return false }
        items.withLock { $0.append(batch) }
        filled.signal()
        return true
    }

    /// Waits for the next batch.
    func receive() -> FrameBatch {
        filled.wait()
        let batch = items.withLock { $0.removeFirst() }
        free.signal()
        return batch
    }

    /// Lets a waiting producer go.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        free.signal()
    }
}

/// Hands a value that is used by one thread at a time to another thread.
private struct UncheckedTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
