#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// SplitMix64: a small, fast generator whose sequence for a given seed is the
/// same on every platform and every run, so simulated rigs, the demo and
/// tests repeat exactly. Statistically good for simulation; not for
/// anything security-related.
public struct SeededRandomGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose whole sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1), from the top 53 bits of ``next()``.
    public mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// A standard normal sample (Box–Muller, one of the pair).
    public mutating func nextGaussian() -> Double {
        let u1 = Double.random(in: Double.ulpOfOne..<1, using: &self)
        let u2 = Double.random(in: 0..<1, using: &self)
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}
