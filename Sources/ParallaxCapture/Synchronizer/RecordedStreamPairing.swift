import ParallaxGeometry

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
        var pairs: [Pair] = []
        var drops: [FrameDrop] = []
        var l = 0, r = 0
        statistics = Self.replay(
            configuration: configuration,
            left: {
                guard l < left.entries.count else { return nil }
                defer { l += 1 }
                return left.entries[l].timestampNanoseconds
            },
            right: {
                guard r < right.entries.count else { return nil }
                defer { r += 1 }
                return right.entries[r].timestampNanoseconds
            },
            emit: { (event: SynchronizerEvent<Int>) in
                switch event {
                case .pair(let pair):
                    pairs.append(Pair(left: pair.left.payload, right: pair.right.payload, skewNanoseconds: pair.skewNanoseconds))
                case .drop(let drop, _):
                    drops.append(drop)
                }
            })
        self.pairs = pairs
        self.drops = drops
    }

    /// Pairs two streams of frames pulled one at a time, each in timestamp order, and hands
    /// every pair and drop to `emit` as it is decided: memory stays bounded by the frames
    /// waiting for a partner, however long the streams.
    ///
    /// A frame's payload is its index in its own stream (0, 1, 2, ...); a caller that needs
    /// more (a file name) keeps it by that index. A frame is decided at most
    /// `configuration.queueCapacity` frames of its camera after it was pulled (the queue
    /// drops its oldest frame when full), so a ring of twice that many entries per camera
    /// is enough. Frames are merged in timestamp order (left first on a tie), each
    /// "arriving" at its own timestamp; `configuration`'s maximum latency is ignored.
    ///
    /// - Parameters:
    ///   - configuration: the pairing rules (policy, skew limit, queue capacity, clock
    ///     correction); its maximum latency is replaced by no limit.
    ///   - left: the next left frame's timestamp (nanoseconds), or `nil` at the end. The
    ///     timestamps must increase (a repeat or a decrease is a discontinuity, see
    ///     ``SynchronizerCore/push(_:timestampNanoseconds:sequence:exposureNanoseconds:timestampSource:payload:now:emit:)``).
    ///   - right: the same for the right camera.
    ///   - emit: receives every pair and drop, in order.
    /// - Returns: the synchronizer's statistics after the last frame.
    public static func replay(
        configuration: SynchronizerConfiguration,
        left: () -> Int64?,
        right: () -> Int64?,
        emit: (SynchronizerEvent<Int>) -> Void
    ) -> SynchronizerStatistics {
        var configuration = configuration
        configuration.maximumLatencyNanoseconds = .max
        let core = SynchronizerCore<Int>(configuration: configuration)
        var nextLeft = left(), nextRight = right()
        var counts = (left: 0, right: 0)
        var lastTime: Int64 = 0
        while nextLeft != nil || nextRight != nil {
            let takeLeft: Bool
            if let l = nextLeft, let r = nextRight {
                takeLeft = l <= r
            } else {
                takeLeft = nextLeft != nil
            }
            let side: StereoSide, timestamp: Int64, index: Int
            if takeLeft {
                (side, timestamp, index) = (.left, nextLeft.unsafelyUnwrapped, counts.left)
                counts.left += 1
                nextLeft = left()
            } else {
                (side, timestamp, index) = (.right, nextRight.unsafelyUnwrapped, counts.right)
                counts.right += 1
                nextRight = right()
            }
            lastTime = timestamp
            core.push(side, timestampNanoseconds: timestamp, sequence: UInt64(index), payload: index, now: timestamp, emit: emit)
        }
        core.finish(now: lastTime, emit: emit)
        return core.statistics
    }
}
