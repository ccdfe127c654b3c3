import ParallaxGeometry

/// Something that happened in a ``StereoSession``, with when it happened.
public struct SessionEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// Both sides are streaming.
        case started
        /// The session ended; the reason says why (stopped by its owner, end of a recording,
        /// a camera that did not come back, thermal shutdown).
        case stopped(reason: String)
        /// A constituent went away (unplugged); pairs stop, the other side keeps running.
        case disconnected
        /// A constituent came back (the same stable identity) and pairing resumed.
        case reconnected
        /// A constituent was switched off (``StereoSession/setEnabled(_:_:)``).
        case disabled
        /// A constituent was switched on again.
        case enabled
        /// A constituent delivered nothing for a while although it streams.
        case stalled
        /// Frames flow again after a stall.
        case resumed
        /// The pressure level changed; the factors are the window that decided it.
        case pressureChanged(PressureLevel, PressureFactors)
        /// The delivered frame rate changed (frames per second per side).
        case frameRateChanged(Double)
        /// A constituent or the session reported an error; streaming continues.
        case deviceError(String)
        /// Your code held pairs (or views of their images), so the session's pool of
        /// rectification buffers grew to `pairs` pairs' buffers, `held` of them held
        /// (``StereoSessionOptions/heldPairsLimitBytes`` bounds it).
        case poolGrew(pairs: Int, held: Int)
    }

    /// What happened.
    public var kind: Kind
    /// The side it happened to, when it concerns one.
    public var side: StereoSide?
    /// That side's stable identity.
    public var stableID: String?
    /// The node that side's camera has at the event (`/dev/video2`), for cameras with one:
    /// a camera that comes back may have another node than the one it left, the identity
    /// stays.
    public var node: String?
    /// Seconds since the session started (monotonic clock).
    public var atSeconds: Double

    /// An event.
    public init(_ kind: Kind, side: StereoSide? = nil, stableID: String? = nil, node: String? = nil, atSeconds: Double) {
        self.kind = kind
        self.side = side
        self.stableID = stableID
        self.node = node
        self.atSeconds = atSeconds
    }

    /// A stable snake_case name of the kind (`started`, `disconnected`, `pressure_changed`, …).
    public var name: String {
        switch kind {
        case .started: "started"
        case .stopped: "stopped"
        case .disconnected: "disconnected"
        case .reconnected: "reconnected"
        case .disabled: "disabled"
        case .enabled: "enabled"
        case .stalled: "stalled"
        case .resumed: "resumed"
        case .pressureChanged: "pressure_changed"
        case .frameRateChanged: "frame_rate_changed"
        case .deviceError: "device_error"
        case .poolGrew: "pool_grew"
        }
    }

    /// For example `2.350 s: right disconnected (usb-1d6b:0102-VIRTUAL2 at /dev/video2)`.
    public var description: String {
        var text = String(format: "%.3f s: ", atSeconds)
        if let side { text += "\(side) " }
        switch kind {
        case .stopped(let reason): text += "stopped (\(reason))"
        case .pressureChanged(let level, let factors): text += "pressure \(level) (\(factors))"
        case .frameRateChanged(let fps): text += String(format: "frame rate %.2f fps", fps)
        case .deviceError(let message): text += "error: \(message)"
        case .poolGrew(let pairs, let held): text += "pool grew to \(pairs) pairs' buffers (\(held) held by your code)"
        default: text += name
        }
        if let stableID, side != nil { text += " (\(stableID)\(node.map { " at \($0)" } ?? ""))" }
        return text
    }
}

/// The events of a session as an `AsyncSequence` (one consumer at a time). It ends after
/// the session's ``SessionEvent/Kind/stopped(reason:)`` event. At most 1024 events wait;
/// beyond that the oldest are dropped (the full list is in ``StereoSessionStatistics/events``).
///
/// Reading events does not start the session: they are kept from its start, so a reader
/// may begin before or after ``StereoSession/start()`` and misses nothing; the sequence
/// ends when the session stops or is released. A reader waiting on a session that is still
/// not started after ``startWaitSeconds`` gets ``StereoSessionError/invalidState(_:)`` saying
/// to call `start()`, rather than waiting forever; so does a second loop reading at the
/// same time.
public struct SessionEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = SessionEvent
    /// Thrown for a second concurrent reader, or a session never started.
    public typealias Failure = StereoSessionError
    let queue: AsyncQueue<SessionEvent>
    /// Whether the session is still waiting to be started.
    let isIdle: @Sendable () -> Bool

    /// How long a reader waits for a session that was never started before it is told to
    /// start it (seconds).
    public static let startWaitSeconds = 10.0

    /// Reads events as they happen.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// Thrown for a second concurrent reader, or a session never started.
        public typealias Failure = StereoSessionError
        let queue: AsyncQueue<SessionEvent>
        let isIdle: @Sendable () -> Bool
        /// This iterator's right to read; `nil` when another iterator was reading.
        let reader: AsyncQueue<SessionEvent>.Reader?
        /// The next event, or `nil` after the session stopped.
        ///
        /// - Throws: ``StereoSessionError/invalidState(_:)`` when another loop is reading, or
        ///   when the session is still not started after ``SessionEvents/startWaitSeconds``.
        public mutating func next() async throws(StereoSessionError) -> SessionEvent? {
            guard reader != nil else {
                throw .invalidState("session.events is already being read by another loop; read it from one loop at a time")
            }
            var waited = 0.0
            while isIdle() && queue.count == 0 {
                if Task.isCancelled { return nil }
                guard waited < SessionEvents.startWaitSeconds else {
                    throw .invalidState("session.events waited \(Int(SessionEvents.startWaitSeconds)) s for a session that was "
                                        + "never started: call start(), or read session.pairs, which starts it")
                }
                try? await Task.sleep(nanoseconds: 50_000_000)
                waited += 0.05
            }
            do throws(AsyncQueueBusy) {
                return try await queue.next()
            } catch {
                throw .invalidState("session.events is already being read by another loop; read it from one loop at a time")
            }
        }
    }

    /// The iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(queue: queue, isIdle: isIdle, reader: queue.claimReader())
    }
}

/// A second reader waited on an ``AsyncQueue`` while another was waiting.
struct AsyncQueueBusy: Error {}

/// A bounded queue with one waiting reader, ended by ``finish()``: the reader gets what is
/// queued, then `nil`. When full, ``push(_:)`` drops the oldest element and returns it.
final class AsyncQueue<Element: Sendable>: Sendable {
    /// A reader's continuation: resumed with `.some(element or nil at the end)`, or with
    /// `nil` when the reader found another one waiting.
    private typealias Waiter = UnsafeContinuation<Element??, Never>
    private struct State {
        var items: Ring<Element>
        var waiter: Waiter?
        var finished = false
        var hasReader = false
    }
    private let state: Locked<State>

    init(capacity: Int) { state = Locked(State(items: Ring(capacity: max(1, capacity)))) }

    /// The right to read, held by one iterator (and its copies) until it is released.
    final class Reader: Sendable {
        let queue: AsyncQueue<Element>
        fileprivate init(queue: AsyncQueue<Element>) { self.queue = queue }
        deinit { queue.state.withLock { $0.hasReader = false } }
    }

    /// The right to read, or `nil` while another iterator holds it (one loop at a time; a
    /// loop that ended, by `break` or at the end, has let it go).
    func claimReader() -> Reader? {
        let free = state.withLock { s -> Bool in
            if s.hasReader { return false }
            s.hasReader = true
            return true
        }
        return free ? Reader(queue: self) : nil
    }

    /// Hands `element` to the waiting reader or queues it; returns the element dropped to
    /// make room, if any. Ignored (and returned) after ``finish()``.
    @discardableResult
    func push(_ element: Element) -> Element? {
        let (waiter, dropped) = state.withLock { s -> (Waiter?, Element?) in
            if s.finished { return (nil, element) }
            if let waiter = s.waiter {
                s.waiter = nil
                return (waiter, nil)
            }
            var dropped: Element?
            if s.items.isFull { dropped = s.items.popFirst() }
            s.items.append(element)
            return (nil, dropped)
        }
        waiter?.resume(returning: .some(element))
        return dropped
    }

    /// Elements waiting.
    var count: Int { state.withLock { $0.items.count } }
    /// True when the next push would drop one.
    var isFull: Bool { state.withLock { $0.items.isFull } }

    /// Removes and returns every waiting element (for accounting at the end).
    func drain() -> [Element] {
        state.withLock { s in
            var all: [Element] = []
            while let item = s.items.popFirst() { all.append(item) }
            return all
        }
    }

    /// Ends the queue: the reader gets what is waiting, then `nil`.
    func finish() {
        let waiter = state.withLock { s -> Waiter? in
            s.finished = true
            guard s.items.isEmpty else { return nil }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: .some(nil))
    }

    /// The next element, waiting for one; `nil` once finished and empty, or when the task is cancelled.
    ///
    /// - Throws: ``AsyncQueueBusy`` when another reader is waiting (one reader at a time).
    func next() async throws(AsyncQueueBusy) -> Element? {
        let result: Element?? = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: Waiter) in
                let immediate = state.withLock { s -> Element??? in
                    if let item = s.items.popFirst() { return .some(.some(item)) }
                    if s.finished || Task.isCancelled { return .some(.some(nil)) }
                    if s.waiter != nil { return .some(nil) }
                    s.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: .some(nil))
        }
        guard let result else { throw AsyncQueueBusy() }
        return result
    }
}
