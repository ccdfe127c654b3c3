import ParallaxCapture
import ParallaxGeometry

/// The library's SplitMix64: the same sequence on every platform for a given seed.
typealias SeededGenerator = SeededRandomGenerator


/// One simulated frame: which moment it shows, how it is stamped, when it arrives.
struct GeneratedFrame: Sendable {
    var side: StereoSide
    /// Index of the moment both cameras captured (the ground truth: equal moments pair).
    var moment: Int
    var timestampNanoseconds: Int64
    var sequence: UInt64
    /// Arrival at the synchronizer on the host clock (nanoseconds).
    var arrivalNanoseconds: Int64
}

/// A deterministic pair of timestamp streams from two cameras that capture the same
/// moments (every `frameInterval` on the left clock), stamped with different clocks.
///
/// The right camera's timestamp of moment k is
/// `T(k) + offset + drift · 10⁻⁶ · (T(k) − start) + jitter`, the left one `T(k) + jitter`,
/// jitter uniform in ±`jitterNanoseconds` and independent per frame. Frames are lost at
/// random (`dropProbability` per frame and camera) and in bursts (a burst of
/// `burstLength` frames starts with `burstProbability`). Frames arrive at
/// `T(k) + deliveryDelay + uniform(0 ... deliveryJitter)`, in arrival order.
struct TimestampStreamGenerator {
    var frameIntervalNanoseconds: Int64
    var durationSeconds: Double
    var startNanoseconds: Int64 = 5_000_000_000
    var offsetNanoseconds: Int64 = 0
    var driftPartsPerMillion: Double = 0
    var jitterNanoseconds: Int64 = 0
    var dropProbability: Double = 0
    var burstProbability: Double = 0
    var burstLength: ClosedRange<Int> = 3...10
    var deliveryDelayNanoseconds: Int64 = 4_000_000
    var deliveryJitterNanoseconds: Int64 = 1_000_000
    var seed: UInt64 = 1

    struct Streams {
        /// Every delivered frame of both cameras, in arrival order.
        var frames: [GeneratedFrame]
        /// Moments whose frames both reached the synchronizer: the pairs to find.
        var matchableMoments: Set<Int>
        var momentCount: Int
    }

    func generate() -> Streams {
        var rng = SeededGenerator(seed: seed)
        let count = Int(durationSeconds * 1e9 / Double(frameIntervalNanoseconds))
        var lost = [[Bool]](repeating: [Bool](repeating: false, count: count), count: 2)
        for side in 0..<2 {
            var k = 0
            while k < count {
                if Double.random(in: 0..<1, using: &rng) < burstProbability {
                    let length = Int.random(in: burstLength, using: &rng)
                    for j in k..<min(count, k + length) { lost[side][j] = true }
                    k += length
                    continue
                }
                if Double.random(in: 0..<1, using: &rng) < dropProbability { lost[side][k] = true }
                k += 1
            }
        }
        var frames: [GeneratedFrame] = []
        var matchable = Set<Int>()
        for k in 0..<count {
            let moment = startNanoseconds + Int64(k) * frameIntervalNanoseconds
            for side in StereoSide.allCases where !lost[side.rawValue][k] {
                var stamp = moment
                if side == .right {
                    stamp += offsetNanoseconds + Int64((driftPartsPerMillion * 1e-6 * Double(moment - startNanoseconds)).rounded())
                }
                if jitterNanoseconds > 0 { stamp += Int64.random(in: -jitterNanoseconds...jitterNanoseconds, using: &rng) }
                let delivery = deliveryDelayNanoseconds
                    + (deliveryJitterNanoseconds > 0 ? Int64.random(in: 0...deliveryJitterNanoseconds, using: &rng) : 0)
                frames.append(
                    GeneratedFrame(
                        side: side, moment: k, timestampNanoseconds: stamp,
                        sequence: UInt64(k) + (side == .left ? 0 : 1_000), arrivalNanoseconds: moment + delivery))
            }
            if !lost[0][k] && !lost[1][k] { matchable.insert(k) }
        }
        // Stable: frames of one camera keep their order even when arrival jitter would swap them.
        var lastArrival: [Int64] = [.min, .min]
        for i in frames.indices {
            let s = frames[i].side.rawValue
            frames[i].arrivalNanoseconds = max(frames[i].arrivalNanoseconds, lastArrival[s] + 1)
            lastArrival[s] = frames[i].arrivalNanoseconds
        }
        frames.sort { ($0.arrivalNanoseconds, $0.side.rawValue) < ($1.arrivalNanoseconds, $1.side.rawValue) }
        return Streams(frames: frames, matchableMoments: matchable, momentCount: count)
    }
}

/// The approximate policy's guarantees, enumerated by brute force over complete streams
/// (no proof rule, no lemma about the later head): after each pair, every candidate
/// contiguous to it — (i, j) with i the next left frame or j the next right frame — is
/// considered and the smallest spread wins (ties: the smaller later timestamp, then the
/// smaller earlier one). A next frame farther than `maximumSkew` from the other camera's
/// next frame is farther from all its contiguous candidates, cannot pair, and is skipped
/// first (it then does not count for contiguity).
func bruteForceApproximatePairs(left: [Int64], right: [Int64], maximumSkew: Int64) -> [(left: Int, right: Int)] {
    var pairs: [(Int, Int)] = []
    var a = 0, b = 0
    while a < left.count && b < right.count {
        if abs(left[a] - right[b]) > maximumSkew {
            if left[a] <= right[b] { a += 1 } else { b += 1 }
            continue
        }
        var best: (i: Int, j: Int, spread: Int64, later: Int64, earlier: Int64)?
        func consider(_ i: Int, _ j: Int) {
            let spread = abs(left[i] - right[j])
            let later = max(left[i], right[j]), earlier = min(left[i], right[j])
            if let b = best, (spread, later, earlier) >= (b.spread, b.later, b.earlier) { return }
            best = (i, j, spread, later, earlier)
        }
        for j in b..<right.count { consider(a, j) }
        for i in a..<left.count { consider(i, b) }
        guard let chosen = best else { break }
        precondition(chosen.spread <= maximumSkew, "the heads themselves are within the skew")
        pairs.append((chosen.i, chosen.j))
        a = chosen.i + 1
        b = chosen.j + 1
    }
    return pairs
}

/// Runs frames through a core and records everything it says, with the time it said it.
struct ScenarioRun {
    struct PairRecord: Equatable, CustomStringConvertible {
        var left: Int64, right: Int64, releasedAt: Int64, onDeadline: Bool
        var description: String { "(\(left), \(right)) at \(releasedAt)\(onDeadline ? " deadline" : "")" }
    }
    var pairs: [PairRecord] = []
    var drops: [FrameDrop] = []
    var statistics: SynchronizerStatistics?

    /// Frames given as (side, timestamp, arrival); `finishAt` calls ``SynchronizerCore/finish(now:emit:)``.
    static func run(
        _ configuration: SynchronizerConfiguration, frames: [(StereoSide, Int64, Int64)], finishAt: Int64?
    ) -> ScenarioRun {
        let core = SynchronizerCore<Int>(configuration: configuration)
        var run = ScenarioRun()
        var sequences = [UInt64](repeating: 0, count: 2)
        for (side, timestamp, arrival) in frames {
            sequences[side.rawValue] += 1
            core.push(
                side, timestampNanoseconds: timestamp, sequence: sequences[side.rawValue], payload: 0, now: arrival
            ) { run.record($0) }
        }
        if let finishAt { core.finish(now: finishAt) { run.record($0) } }
        run.statistics = core.statistics
        return run
    }

    mutating func record(_ event: SynchronizerEvent<Int>) {
        switch event {
        case .pair(let pair):
            pairs.append(
                PairRecord(
                    left: pair.left.timestampNanoseconds, right: pair.right.timestampNanoseconds,
                    releasedAt: pair.releaseNanoseconds, onDeadline: pair.releasedOnDeadline))
        case .drop(let drop, _):
            drops.append(drop)
        }
    }

    func dropReasons(_ side: StereoSide) -> [Int64: DropReason] {
        Dictionary(uniqueKeysWithValues: drops.filter { $0.side == side }.map { ($0.timestampNanoseconds, $0.reason) })
    }
}

/// Milliseconds as nanoseconds, so scenarios read like their timelines.
func ms(_ value: Double) -> Int64 { Int64((value * 1_000_000).rounded()) }

/// Frames that arrive at their own timestamp, merged in time order (left first on ties).
func arrivingOnTime(left: [Double], right: [Double]) -> [(StereoSide, Int64, Int64)] {
    let all = left.map { (StereoSide.left, ms($0), ms($0)) } + right.map { (StereoSide.right, ms($0), ms($0)) }
    return all.sorted { ($0.2, $0.0.rawValue) < ($1.2, $1.0.rawValue) }
}
