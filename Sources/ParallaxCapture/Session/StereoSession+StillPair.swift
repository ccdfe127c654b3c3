import ParallaxGeometry
import ParallaxImage

/// How a still pair trades time for noise (AVFoundation's photo quality prioritization).
public enum StillQuality: String, Hashable, Sendable, CaseIterable {
    /// The next pair, as it is.
    case speed
    /// The average of 4 consecutive pairs of a static scene (noise ÷ 2).
    case balanced
    /// The average of 8 consecutive pairs of a static scene (noise ÷ √8 ≈ 2.8).
    case quality

    /// Pairs averaged when nothing moves.
    public var pairCount: Int {
        switch self {
        case .speed: 1
        case .balanced: 4
        case .quality: 8
        }
    }
}

/// A synchronized pair captured as a still: one pair, or several consecutive pairs of a
/// static scene averaged to lower the noise (for calibration captures).
public struct StillPair: Sendable {
    /// The averaged images (rectified when the session rectifies), owned.
    public var images: PerSide<ImageBuffer>
    /// Pairs averaged.
    public var pairsAveraged: Int
    /// Pairs asked for (``StillQuality/pairCount``).
    public var pairsRequested: Int
    /// True when the scene moved before ``pairsRequested`` pairs were taken: the average
    /// stopped at the last pair before the movement.
    public var motionDetected: Bool
    /// The first pair's frames (without pixels).
    public var first: PerSide<StereoPairSide>
    /// The rectification of the images, when rectified.
    public var rectification: StereoRectification?
    /// Mean absolute difference (pixel levels) from the first pair, in any part of the image
    /// (a tile of a 16 × 16 grid), above which a pair counts as moving: about five times the
    /// noise of an ordinary sensor, and about what a one-pixel shift of a board's edges makes.
    public static let motionThreshold = 6.0
}

/// One pending ``StereoSession/captureStillPair(quality:)``: sums pairs on the session thread.
final class StillRequest: @unchecked Sendable {
    let quality: StillQuality
    private let continuation: CheckedContinuation<Result<StillPair, StereoSessionError>, Never>
    private var sums = PerSide<[UInt32]>(repeating: [])
    private var reference = PerSide<[UInt8]>(repeating: [])
    private var count = 0
    private var first: PerSide<StereoPairSide>?
    private var template: PerSide<ImageBuffer>?
    private var rectification: StereoRectification?
    private var finished = false

    init(quality: StillQuality, continuation: CheckedContinuation<Result<StillPair, StereoSessionError>, Never>) {
        self.quality = quality
        self.continuation = continuation
    }

    /// Adds a pair; true when the still is complete (and the caller has been answered).
    func add(_ pair: StereoPair) -> Bool {
        guard !finished else { return true }
        guard let images = pair.copyImages() else {
            fail(.invalidState("still pairs need uncompressed frames"))
            return true
        }
        let bytes = PerSide(left: images.left.bytes, right: images.right.bytes)
        if count == 0 {
            reference = bytes
            sums = bytes.map { $0.map(UInt32.init) }
            template = images
            rectification = pair.rectification
            first = PerSide(left: Self.withoutPixels(pair.left), right: Self.withoutPixels(pair.right))
            count = 1
        } else {
            let moved = StereoSide.allCases.map { side in
                Self.largestLocalDifference(bytes[side], reference[side], rowBytes: images[side].bytesPerRow,
                                            rows: images[side].size.height)
            }.max() ?? 0
            if moved > StillPair.motionThreshold {
                complete(motion: true)
                return true
            }
            for side in StereoSide.allCases {
                let add = bytes[side]
                sums[side].withUnsafeMutableBufferPointer { sum in
                    for i in 0..<min(sum.count, add.count) { sum[i] &+= UInt32(add[i]) }
                }
            }
            count += 1
        }
        if count >= quality.pairCount {
            complete(motion: false)
            return true
        }
        return false
    }

    func fail(_ error: StereoSessionError) {
        guard !finished else { return }
        finished = true
        continuation.resume(returning: .failure(error))
    }

    private func complete(motion: Bool) {
        guard !finished, let template, let first else { return }
        finished = true
        let n = UInt32(count)
        var images = template
        do {
            for side in StereoSide.allCases {
                let averaged = sums[side].map { UInt8(truncatingIfNeeded: ($0 + n / 2) / n) }
                images[side] = try ImageBuffer(format: template[side].format, size: template[side].size, bytes: averaged)
            }
        } catch {
            continuation.resume(returning: .failure(.invalidState("the still pair could not be assembled: \(error)")))
            return
        }
        continuation.resume(returning: .success(StillPair(
            images: images, pairsAveraged: count, pairsRequested: quality.pairCount, motionDetected: motion,
            first: first, rectification: rectification)))
    }

    private static func withoutPixels(_ side: StereoPairSide) -> StereoPairSide {
        var copy = side
        copy.image = nil
        copy.frame = nil
        return copy
    }

    /// The largest mean |a − b| over the tiles of a grid of up to 16 × 16 tiles (every byte,
    /// so no edge falls between samples): a board that moves in a small part of the view is seen as surely as
    /// a scene that changes everywhere. A shift of one pixel of a high-contrast edge through a
    /// 40 × 30 tile of a 640 × 480 image changes that tile's mean by about 200 levels × 40 px /
    /// 1200 px ≈ 7, past ``StillPair/motionThreshold``; over the whole image the same shift
    /// is lost (a board's edges cover a few percent of it). Planar formats: the first plane.
    static func largestLocalDifference(_ a: [UInt8], _ b: [UInt8], rowBytes: Int, rows: Int) -> Double {
        let rowBytes = max(1, rowBytes)
        let rows = min(rows, min(a.count, b.count) / rowBytes)
        guard rows > 0 else { return 0 }
        let tileColumns = max(1, min(16, rowBytes / 16)), tileRows = max(1, min(16, rows / 16))
        var totals = [Int](repeating: 0, count: tileColumns * tileRows)
        var samples = [Int](repeating: 0, count: tileColumns * tileRows)
        for y in 0..<rows {
            let tileRow = y * tileRows / rows, start = y * rowBytes
            for column in 0..<tileColumns {
                var x = start + column * rowBytes / tileColumns
                let end = start + (column + 1) * rowBytes / tileColumns
                var total = 0, count = 0
                while x < end {
                    total += abs(Int(a[x]) - Int(b[x]))
                    count += 1
                    x += 1
                }
                totals[tileRow * tileColumns + column] += total
                samples[tileRow * tileColumns + column] += count
            }
        }
        return zip(totals, samples).map { $1 == 0 ? 0 : Double($0) / Double($1) }.max() ?? 0
    }
}

extension StereoSession {
    /// Captures one synchronized pair as a still while streaming continues (the consumer
    /// of ``pairs`` still gets every pair).
    ///
    /// `.speed` returns the next pair; `.balanced` and `.quality` average 4 and 8
    /// consecutive pairs when the scene is static. Each pair is compared with the first:
    /// when the mean absolute difference over any tile of a 16 × 16 grid exceeds
    /// ``StillPair/motionThreshold`` the scene moved, the average stops before that pair, and ``StillPair/motionDetected`` says so.
    ///
    /// - Throws: ``StereoSessionError/invalidState(_:)`` when the session is not running or
    ///   its frames are compressed, ``StereoSessionError/ended(_:)`` when it ends first.
    public func captureStillPair(quality: StillQuality = .balanced) async throws(StereoSessionError) -> StillPair {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<StillPair, StereoSessionError>, Never>) in
            let request = StillRequest(quality: quality, continuation: continuation)
            let accepted = state.withLock { s -> Bool in
                guard s.phase == .running else { return false }
                s.stills.append(request)
                return true
            }
            if !accepted { request.fail(.invalidState("the session is not running")) }
        }
        return try result.get()
    }

    /// Still pairs asked for and not yet complete (tests wait on it instead of sleeping).
    package var pendingStillPairs: Int { state.withLock { $0.stills.count } }

    /// Gives a processed pair to every pending still (session thread).
    func feedStills(_ pair: StereoPair) {
        let requests = state.withLock { $0.stills }
        guard !requests.isEmpty else { return }
        let done = requests.filter { $0.add(pair) }
        guard !done.isEmpty else { return }
        state.withLock { s in s.stills.removeAll { request in done.contains { $0 === request } } }
    }
}
