import Foundation
import ParallaxCapture
import ParallaxGeometry

/// Pairs two simulated cameras' timestamp streams and prints what the synchronizer did.
///
/// The two streams are generated here (the simulated rig will provide them later): both
/// cameras capture the same moments at 30 fps; the right camera stamps them with its own
/// clock, 4.2 ms ahead and running 35 ppm fast; every timestamp jitters by up to ±1 ms;
/// 3 % of frames are lost at random per camera, plus occasional bursts.
struct PairingDemoStep: DemoStep {
    let title = "frame pairing"

    /// The simulated truth.
    static let framesPerSecond = 30.0
    static let seconds = 30.0
    static let offsetNanoseconds: Int64 = 4_200_000
    static let driftPartsPerMillion = 35.0
    static let jitterNanoseconds: Int64 = 1_000_000

    func run(_ context: DemoContext) async throws {
        let interval = Int64((1e9 / Self.framesPerSecond).rounded())
        let configuration = SynchronizerConfiguration(
            policy: .approximate, frameIntervalNanoseconds: interval, timestampJitterNanoseconds: Self.jitterNanoseconds,
            clockCorrection: .apply)
        let core = SynchronizerCore<Int>(configuration: configuration)
        var wrongPairs = 0
        var pairs = 0
        let emit: SynchronizerCore<Int>.Emit = { event in
            if case .pair(let pair) = event {
                pairs += 1
                if pair.left.payload != pair.right.payload { wrongPairs += 1 }
            }
        }
        var random = SeededRandomGenerator(seed: 2024)
        var lostUntil = PerSide(repeating: -1)
        let start: Int64 = 10_000_000_000
        let moments = Int(Self.seconds * Self.framesPerSecond)
        var matchable = 0
        for k in 0..<moments {
            let moment = start + Int64(k) * interval
            var delivered = PerSide(repeating: false)
            // Deliver in order of the stamps; the right camera is ahead, so left goes first.
            for side in StereoSide.allCases {
                if k <= lostUntil[side] { continue }
                if random.nextUnit() < 0.001 { lostUntil[side] = k + 2 + Int(random.nextUnit() * 8); continue }
                if random.nextUnit() < 0.03 { continue }
                var stamp = moment + Int64((random.nextUnit() * 2 - 1) * Double(Self.jitterNanoseconds))
                if side == .right {
                    stamp += Self.offsetNanoseconds + Int64(Self.driftPartsPerMillion * 1e-6 * Double(moment - start))
                }
                let arrival = moment + 5_000_000 + Int64(random.nextUnit() * 1e6)
                core.push(side, timestampNanoseconds: stamp, sequence: UInt64(k), payload: k, now: arrival, emit: emit)
                delivered[side] = true
            }
            if delivered.left && delivered.right { matchable += 1 }
        }
        core.finish(now: start + Int64(moments + 1) * interval, emit: emit)
        let statistics = core.statistics
        print("   \(moments) moments at \(Int(Self.framesPerSecond)) fps over \(Int(Self.seconds)) s; truth: right clock +\(Double(Self.offsetNanoseconds) / 1e6) ms, \(Self.driftPartsPerMillion) ppm fast, ±\(Double(Self.jitterNanoseconds) / 1e6) ms jitter, 3 % random drops + bursts")
        print("   pairs: \(pairs) of \(matchable) matchable, \(wrongPairs) wrong")
        for line in statistics.description.split(separator: "\n") { print("   \(line)") }
        print("   (the latency maximum is the first pairs: they wait 8 frames while the clock phase is measured)")
        if let clock = statistics.clock {
            let trueOffset = Double(Self.offsetNanoseconds) + Self.driftPartsPerMillion * Self.seconds * 1e3
            print("   clock truth at the end: offset \(Int64(trueOffset)) ns, drift \(Self.driftPartsPerMillion) ppm; estimate off by \(clock.offsetNanoseconds - Int64(trueOffset)) ns, \(clock.driftPartsPerMillion.map { String(format: "%.2f", $0 - Self.driftPartsPerMillion) } ?? "?") ppm")
        }
    }
}

