/// Pairs two recorded timestamp logs offline, exactly as a live synchronizer would have
/// paired the same streams.
///
/// Frames are replayed in timestamp order, each "arriving" at its own timestamp, through a
/// ``SynchronizerCore`` with no latency deadline: the approximate policy's decisions depend
/// only on the timestamps, so the result is the pairing its guarantees define.
public struct RecordedStreamPairing: Sendable {
    /// One pair: indices into the two logs' entries.
    public struct Pair: Sendable, Hashable {
        /// Index into the left log's ``RecordedTimestampLog/entries``.
        public var left: Int
        /// Index into the right log's entries.
        public var right: Int
        /// Right minus left pairing timestamp (nanoseconds).
        public var skewNanoseconds: Int64
    }

    /// The pairs, in time order.
    public var pairs: [Pair]
    /// Every frame that was not paired.
    public var drops: [FrameDrop]
    /// Counters, skew distribution and clock estimate.
    public var statistics: SynchronizerStatistics

    /// Pairs `left` with `right` under `configuration` (its maximum latency is ignored).
    public init(left: RecordedTimestampLog, right: RecordedTimestampLog, configuration: SynchronizerConfiguration) {
        var configuration = configuration
        configuration.maximumLatencyNanoseconds = .max
        let core = SynchronizerCore<Int>(configuration: configuration)
        var pairs: [Pair] = []
        var drops: [FrameDrop] = []
        let emit: SynchronizerCore<Int>.Emit = { event in
            switch event {
            case .pair(let pair):
                pairs.append(Pair(left: pair.left.payload, right: pair.right.payload, skewNanoseconds: pair.skewNanoseconds))
            case .drop(let drop, _):
                drops.append(drop)
            }
        }
        var l = 0, r = 0
        var lastTime: Int64 = 0
        while l < left.entries.count || r < right.entries.count {
            let takeLeft = r >= right.entries.count
                || (l < left.entries.count && left.entries[l].timestampNanoseconds <= right.entries[r].timestampNanoseconds)
            let (side, entry, index): (StereoSide, RecordedTimestampLog.Entry, Int) =
                takeLeft ? (.left, left.entries[l], l) : (.right, right.entries[r], r)
            if takeLeft { l += 1 } else { r += 1 }
            lastTime = entry.timestampNanoseconds
            core.push(
                side, timestampNanoseconds: entry.timestampNanoseconds, sequence: UInt64(index), payload: index,
                now: entry.timestampNanoseconds, emit: emit)
        }
        core.finish(now: lastTime, emit: emit)
        self.pairs = pairs
        self.drops = drops
        self.statistics = core.statistics
    }
}
