import Foundation
import ParallaxCapture

/// The simulated rig's clocks, one description for every command that streams it and for the
/// demo: both cameras jitter and drop frames alike, the right one starts late and drifts.
enum SimulatedRigTiming {
    static let jitterNanoseconds: Int64 = 500_000
    static let dropProbability = 0.01
    static let rightOffsetNanoseconds: Int64 = 3_000_000
    static let rightDriftPPM = 40.0

    /// The left camera's timing, with the image noise and corrupt-frame share asked for.
    static func left(noise: Double = 0, corrupt: Double = 0) -> SimulatedCameraTiming {
        SimulatedCameraTiming(jitterNanoseconds: jitterNanoseconds, dropProbability: dropProbability,
                              noiseStandardDeviation: noise, corruptFrameProbability: corrupt)
    }

    /// The right camera's timing: the left one's, late and drifting.
    static func right(noise: Double = 0, corrupt: Double = 0) -> SimulatedCameraTiming {
        SimulatedCameraTiming(offsetNanoseconds: rightOffsetNanoseconds, driftPPM: rightDriftPPM, jitterNanoseconds: jitterNanoseconds,
                              dropProbability: dropProbability, noiseStandardDeviation: noise, corruptFrameProbability: corrupt)
    }

    /// In words, from the values above: "right camera 3 ms late, 40 ppm drift; ±0.5 ms jitter
    /// and 1 % drops on each side".
    static var summary: String {
        String(format: "right camera %g ms late, %g ppm drift; ±%g ms jitter and %g %% drops on each side",
               Double(rightOffsetNanoseconds) / 1e6, rightDriftPPM, Double(jitterNanoseconds) / 1e6, dropProbability * 100)
    }
}
