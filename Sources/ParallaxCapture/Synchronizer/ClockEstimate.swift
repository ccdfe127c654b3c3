/// The relation between the two cameras' timestamps, estimated from matched pairs.
///
/// Model: `right − left = offset + drift · 10⁻⁶ · (left − referenceLeft)` for the two
/// timestamps of one moment, both moved to mid-exposure. The drift is how much faster the
/// right clock (or, for free-running cameras on one host clock, the right frame timing)
/// runs, in parts per million.
public struct ClockEstimate: Sendable, Hashable, CustomStringConvertible {
    /// Right minus left (nanoseconds) at the most recent matched pair.
    public var offsetNanoseconds: Int64
    /// Drift of right relative to left (parts per million), or `nil` while the matched pairs
    /// span less than 1 s (a slope from a short span
    /// is noise).
    public var driftPartsPerMillion: Double?
    /// One standard error of the drift (ppm), from the scatter of the pairs around the fitted
    /// line; `nil` together with the drift.
    public var driftStandardErrorPartsPerMillion: Double?
    /// Matched pairs in the fit.
    public var sampleCount: Int
    /// Seconds between the first and last pair in the fit.
    public var spanSeconds: Double

    /// Creates an estimate.
    public init(
        offsetNanoseconds: Int64, driftPartsPerMillion: Double?, driftStandardErrorPartsPerMillion: Double?,
        sampleCount: Int, spanSeconds: Double
    ) {
        self.offsetNanoseconds = offsetNanoseconds
        self.driftPartsPerMillion = driftPartsPerMillion
        self.driftStandardErrorPartsPerMillion = driftStandardErrorPartsPerMillion
        self.sampleCount = sampleCount
        self.spanSeconds = spanSeconds
    }

    /// For example `offset 1203456 ns, drift 98.7 ± 2.1 ppm (1612 pairs over 60.0 s)`.
    public var description: String {
        let drift = driftPartsPerMillion.map { d in
            let se = driftStandardErrorPartsPerMillion.map { " ± \(format($0, 1))" } ?? ""
            return "\(format(d, 1))\(se) ppm"
        } ?? "unknown"
        return "offset \(offsetNanoseconds) ns, drift \(drift) (\(sampleCount) pairs over \(format(spanSeconds, 1)) s)"
    }
}

/// Formats `value` with `digits` decimals without Foundation.
func format(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int64(scaled / scale)
    var fraction = String(Int64(scaled - Double(whole) * scale))
    while fraction.count < digits { fraction = "0" + fraction }
    let sign = value < 0 && scaled != 0 ? "-" : ""
    return digits == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
}

/// Online least-squares line through the most recent matched pairs' timestamp differences.
///
/// Why least squares: the differences scatter with the two cameras' timestamp jitter,
/// roughly symmetrically; the slope's standard error falls as `σ / (span · √n)`, so after
/// 60 s of 30 fps pairs with ±2 ms jitter it is about 2.4 ppm. Why a window: the drift of
/// real oscillators wanders with temperature, and a window bounds memory.
///
/// When the frame interval is known, a difference that lies about a whole number of frame
/// intervals away from the current line is unwrapped onto it: free-running cameras on one
/// host clock change partners (a frame is skipped) when their phase drifts past half a
/// frame, and a neighbour pair must not bend the line.
///
/// Samples are kept in a preallocated ring; sums are updated incrementally and recomputed
/// from the ring every `window` samples so rounding does not accumulate.
@usableFromInline
struct ClockEstimator {
    /// Pairs must span this long before a drift is reported or applied.
    static var minimumDriftSpanSeconds: Double { 1.0 }

    private var samples: Ring<(x: Double, y: Double)>
    private let frameInterval: Double?
    private var referenceX: Int64 = 0
    private var referenceY: Int64 = 0
    private var sumX = 0.0, sumY = 0.0, sumXX = 0.0, sumXY = 0.0, sumYY = 0.0
    private var sinceRecompute = 0
    private var latestX = 0.0
    /// An offset (right − left, ns) known before any pair, from phase acquisition; the first
    /// sample is unwrapped onto it and it is the prediction until then.
    private var prior: Int64?

    init(window: Int, frameIntervalNanoseconds: Int64?) {
        samples = Ring(capacity: max(2, window))
        frameInterval = frameIntervalNanoseconds.map(Double.init)
    }

    var count: Int { samples.count }

    /// Whether a prediction exists (a sample or a prior).
    var hasReference: Bool { !samples.isEmpty || prior != nil }

    /// Sets the offset to predict before the first pair.
    mutating func seed(offsetNanoseconds: Int64) { prior = offsetNanoseconds }

    mutating func reset() {
        prior = nil
        samples.removeAll()
        sumX = 0; sumY = 0; sumXX = 0; sumXY = 0; sumYY = 0
        sinceRecompute = 0
    }

    /// Adds one matched pair (mid-exposure timestamps, nanoseconds).
    mutating func add(left: Int64, right: Int64) {
        if samples.isEmpty {
            referenceX = left
            referenceY = right &- left
            if let prior, let frameInterval {
                let turns = (Double(prior &- referenceY) / frameInterval).rounded()
                referenceY &+= Int64(turns * frameInterval)
            }
        }
        let x = Double(left &- referenceX) * 1e-9  // seconds
        var y = Double((right &- left) &- referenceY)  // nanoseconds
        if let frameInterval, samples.count >= 2 {
            let predicted = predictedY(atX: x)
            let turns = ((predicted - y) / frameInterval).rounded()
            y += turns * frameInterval
        }
        if samples.isFull, let old = samples.popFirst() {
            sumX -= old.x; sumY -= old.y; sumXX -= old.x * old.x; sumXY -= old.x * old.y; sumYY -= old.y * old.y
        }
        samples.append((x, y))
        sumX += x; sumY += y; sumXX += x * x; sumXY += x * y; sumYY += y * y
        latestX = x
        sinceRecompute += 1
        if sinceRecompute >= samples.capacity { recomputeSums() }
    }

    private mutating func recomputeSums() {
        sumX = 0; sumY = 0; sumXX = 0; sumXY = 0; sumYY = 0
        for i in 0..<samples.count {
            let s = samples[i]
            sumX += s.x; sumY += s.y; sumXX += s.x * s.x; sumXY += s.x * s.y; sumYY += s.y * s.y
        }
        sinceRecompute = 0
    }

    private var span: Double {
        guard let first = samples.first, let last = samples.last else { return 0 }
        return last.x - first.x
    }

    /// Slope (ns per s) and intercept (ns at x = 0) of the fit; slope 0 while the span is short.
    private var line: (slope: Double, intercept: Double)? {
        let n = Double(samples.count)
        guard n > 0 else { return nil }
        let meanX = sumX / n, meanY = sumY / n
        let sxx = sumXX - n * meanX * meanX
        guard samples.count >= 3, span >= Self.minimumDriftSpanSeconds, sxx > 0 else { return (0, meanY) }
        let slope = (sumXY - n * meanX * meanY) / sxx
        return (slope, meanY - slope * meanX)
    }

    private func predictedY(atX x: Double) -> Double {
        guard let line else { return 0 }
        return line.intercept + line.slope * x
    }

    /// The expected right-minus-left difference (nanoseconds) for a frame at `left`
    /// nanoseconds on the left clock, or `nil` before the first pair.
    func predictedOffset(atLeft left: Int64) -> Int64? {
        guard !samples.isEmpty else { return prior }
        let x = Double(left &- referenceX) * 1e-9
        let y = predictedY(atX: x)
        guard y.isFinite, abs(y) < 9e18 else { return nil }
        return referenceY &+ Int64(y.rounded())
    }

    var estimate: ClockEstimate? {
        guard let line, let offset = predictedOffset(atLeft: referenceX &+ Int64((latestX * 1e9).rounded())) else {
            return nil
        }
        let n = Double(samples.count)
        var drift: Double?
        var standardError: Double?
        if samples.count >= 3, span >= Self.minimumDriftSpanSeconds {
            drift = line.slope * 1e-3  // ns per s → ppm
            let meanX = sumX / n, meanY = sumY / n
            let sxx = sumXX - n * meanX * meanX
            let syy = sumYY - n * meanY * meanY
            let sxy = sumXY - n * meanX * meanY
            let residual = max(0, syy - sxy * sxy / sxx)
            standardError = (residual / (n - 2) / sxx).squareRoot() * 1e-3
        }
        return ClockEstimate(
            offsetNanoseconds: offset, driftPartsPerMillion: drift, driftStandardErrorPartsPerMillion: standardError,
            sampleCount: samples.count, spanSeconds: span)
    }
}
