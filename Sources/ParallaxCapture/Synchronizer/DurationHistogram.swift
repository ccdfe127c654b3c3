/// Percentiles of a distribution of non-negative durations, as reported in statistics.
public struct DurationSummary: Sendable, Hashable, CustomStringConvertible {
    /// How many values were recorded.
    public var count: Int
    /// The median (nanoseconds); 0 when empty. Within 1/64 (1.6 %) of the true value:
    /// values are binned on a log-linear scale.
    public var p50Nanoseconds: Int64
    /// The 99th percentile (nanoseconds); 0 when empty. Within 1/64 of the true value.
    public var p99Nanoseconds: Int64
    /// The largest value (nanoseconds, exact); 0 when empty.
    public var maxNanoseconds: Int64

    /// Creates a summary.
    public init(count: Int, p50Nanoseconds: Int64, p99Nanoseconds: Int64, maxNanoseconds: Int64) {
        self.count = count
        self.p50Nanoseconds = p50Nanoseconds
        self.p99Nanoseconds = p99Nanoseconds
        self.maxNanoseconds = maxNanoseconds
    }

    /// For example `p50 1.20 ms, p99 3.90 ms, max 4.00 ms (1800 values)`.
    public var description: String {
        func ms(_ v: Int64) -> String {
            let hundredths = (v + 5_000) / 10_000
            let fraction = hundredths % 100
            return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) ms"
        }
        return "p50 \(ms(p50Nanoseconds)), p99 \(ms(p99Nanoseconds)), max \(ms(maxNanoseconds)) (\(count) values)"
    }
}

/// A fixed-size log-linear histogram of durations: values below 128 ns are counted
/// exactly, larger ones in 64 bins per power of two, up to 2⁶² ns. Recording never
/// allocates, which is why the synchronizer uses it instead of keeping the values.
@usableFromInline
struct DurationHistogram {
    private static let exactLimit: Int64 = 128
    private static let binsPerOctave = 64
    private static let octaves = 62 - 7
    private var bins: [Int]
    private(set) var count = 0
    private(set) var maximum: Int64 = 0

    init() {
        bins = Array(repeating: 0, count: Int(Self.exactLimit) + Self.octaves * Self.binsPerOctave)
    }

    /// Records `value`; negative values count as their magnitude.
    mutating func record(_ value: Int64) {
        let magnitude = value == .min ? Int64.max : abs(value)
        bins[Self.bin(of: magnitude)] += 1
        count += 1
        if magnitude > maximum { maximum = magnitude }
    }

    mutating func reset() {
        for index in bins.indices { bins[index] = 0 }
        count = 0
        maximum = 0
    }

    private static func bin(of value: Int64) -> Int {
        if value < exactLimit { return Int(value) }
        let octave = min(63 - value.leadingZeroBitCount, 61)  // floor(log2), ≥ 7
        let shift = octave - 6
        let sub = Int(min(value >> Int64(shift), 127)) - binsPerOctave
        return Int(exactLimit) + (octave - 7) * binsPerOctave + sub
    }

    /// The middle of a bin: within half a bin width (1/128 of the value) of anything in it.
    private static func representative(of bin: Int) -> Int64 {
        if bin < Int(exactLimit) { return Int64(bin) }
        let octave = (bin - Int(exactLimit)) / binsPerOctave + 7
        let sub = (bin - Int(exactLimit)) % binsPerOctave
        let shift = Int64(octave - 6)
        let lower = Int64(binsPerOctave + sub) << shift
        return lower + (Int64(1) << shift) / 2
    }

    /// The smallest value with at least `fraction` of all values at or below it.
    func percentile(_ fraction: Double) -> Int64 {
        guard count > 0 else { return 0 }
        let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        for (bin, n) in bins.enumerated() where n > 0 {
            seen += n
            if seen >= rank { return min(Self.representative(of: bin), maximum) }
        }
        return maximum
    }

    var summary: DurationSummary {
        DurationSummary(
            count: count, p50Nanoseconds: percentile(0.5), p99Nanoseconds: percentile(0.99),
            maxNanoseconds: maximum)
    }
}
