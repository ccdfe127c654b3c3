import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// The viewer's one seat in the session: the consumer that takes every pair the session
/// hands out and keeps only the newest, for the pages that are open.
///
/// Newest wins. A pair replaces the one before it; a page is sent the newest pair when it
/// has drawn the last one it got (it says so), so a slow or backgrounded tab never holds a
/// queue, neither here nor in the socket. With no page open a pair is let go at once: the
/// viewer then costs the session nothing but the hand-over. Each pair is encoded as JPEG
/// (both images, raw or rectified) once, by the first page that asks, and the bytes are
/// shared by the others.
///
/// Its account is exact, as the session's is: every pair handed over is sent to a page,
/// replaced by a newer one before any page took it, or passed while no page was open
/// (``Account/isExact``).
final class ViewerHub: Sendable {
    /// What became of the pairs the session handed to the viewer.
    struct Account: Sendable, Equatable {
        /// Pairs the session handed over.
        var received = 0
        /// Pairs sent to at least one page.
        var sent = 0
        /// Pairs replaced by a newer one before any page took them (newest wins).
        var replaced = 0
        /// Pairs that arrived while no page was open (let go at once).
        var unwatched = 0
        /// The newest pair, still waiting for a page (0 or 1).
        var holding = 0

        /// Every pair received is sent, replaced, unwatched or the one held.
        var isExact: Bool { received == sent + replaced + unwatched + holding }
    }

    /// A pair encoded for the pages: both images as JPEG, with what a page shows beside them.
    struct EncodedPair: Sendable {
        /// The pair's number in the session.
        var number: Int
        /// Raw (as captured) or rectified images.
        var raw: Bool
        var left: [UInt8]
        var right: [UInt8]
        var size: ImageSize
        /// The left frame's mid-exposure time on the wall clock (ms since 1970), for the page's
        /// latency figure: the capture clock (CLOCK_MONOTONIC) moved by the two clocks' offset.
        var exposureWallMilliseconds: Double
        /// When the session handed the pair to the viewer, on the same wall clock: from here
        /// to the page's draw is what the viewer adds.
        var deliveredWallMilliseconds: Double
        var skewNanoseconds: Int64
        /// Each image carries the pair number as a bar code in its top rows (``FrameNumberStamp``).
        var stamped: Bool

        /// The WebSocket message a page receives: the header's length (4 bytes, little
        /// endian), the header (JSON: `number`, `raw`, `width`, `height`, `exposure_ms`, `delivered_ms`,
        /// `skew_ms`, `stamped`, `left_bytes`, `right_bytes`), then the two JPEGs.
        var message: [UInt8] {
            let header = Array(JSONValue.object(JSONObject([
                ("number", .number(Double(number))), ("raw", .bool(raw)),
                ("width", .number(Double(size.width))), ("height", .number(Double(size.height))),
                ("exposure_ms", .number(exposureWallMilliseconds)),
                ("delivered_ms", .number(deliveredWallMilliseconds)), ("skew_ms", .number(Double(skewNanoseconds) / 1e6)),
                ("stamped", .bool(stamped)),
                ("left_bytes", .number(Double(left.count))), ("right_bytes", .number(Double(right.count))),
            ])).serialized(indent: 0).utf8)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(4 + header.count + left.count + right.count)
            withUnsafeBytes(of: UInt32(header.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes += header
            bytes += left
            bytes += right
            return bytes
        }
    }

    /// Wakes one page (it said it is ready for the next pair, or changed what it shows).
    func wake(page id: Int) {
        let continuation = state.withLock { $0.pages[id] }
        continuation?.yield()
    }

    private struct Slot {
        var pair: StereoPair
        /// When the session handed it over (CLOCK_MONOTONIC, ns).
        var deliveredAt: Int64
        /// Pages it was sent to.
        var sentTo = 0
        var encoded: [Bool: EncodedPair] = [:]
    }

    private struct State {
        var latest: Slot?
        var account = Account()
        var pages: [Int: AsyncStream<Void>.Continuation] = [:]
        var nextPage = 0

        /// Lets the held pair go, counting it as sent or replaced.
        mutating func releaseLatest() {
            guard let old = latest else { return }
            if old.sentTo > 0 { account.sent += 1 } else { account.replaced += 1 }
            latest = nil
            account.holding = 0
        }
    }

    private let state = Locked(State())
    /// JPEG quality of the images sent to pages.
    let quality: Int
    /// Whether images carry their pair number (``FrameNumberStamp``), for latency measurements.
    let stampsFrameNumbers: Bool

    init(quality: Int = 80, stampsFrameNumbers: Bool = false) {
        self.quality = quality
        self.stampsFrameNumbers = stampsFrameNumbers
    }

    /// The account so far.
    var account: Account { state.withLock { $0.account } }

    /// Pages open now.
    var pageCount: Int { state.withLock { $0.pages.count } }

    /// Takes a pair from the session (the consumer's whole work: no copy, no encoding).
    func offer(_ pair: StereoPair) {
        let wake: [AsyncStream<Void>.Continuation] = state.withLock { s in
            s.account.received += 1
            s.releaseLatest()
            guard !s.pages.isEmpty else {
                s.account.unwatched += 1
                return []
            }
            s.latest = Slot(pair: pair, deliveredAt: monotonicNanoseconds())
            s.account.holding = 1
            return Array(s.pages.values)
        }
        for page in wake { page.yield() }
    }

    /// Lets the newest pair go (the session ended): the account closes.
    func finish() {
        let pages: [AsyncStream<Void>.Continuation] = state.withLock { s in
            s.releaseLatest()
            defer { s.pages.removeAll() }
            return Array(s.pages.values)
        }
        for page in pages { page.finish() }
    }

    /// Opens a page: a stream that wakes it whenever a newer pair is there (newest wins, at
    /// most one wake-up waiting). Close it with ``close(page:)``.
    func openPage() -> (id: Int, wakeUps: AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s in
            s.nextPage += 1
            s.pages[s.nextPage] = continuation
            return s.nextPage
        }
        // A pair already there is news to a new page.
        if state.withLock({ $0.latest != nil }) { continuation.yield() }
        return (id, stream)
    }

    /// Closes a page.
    func close(page id: Int) {
        let continuation = state.withLock { s in
            defer { if s.pages.isEmpty { s.releaseLatest() } }
            return s.pages.removeValue(forKey: id)
        }
        continuation?.finish()
    }

    /// The newest pair, when it is newer than `number` (`nil`: none yet, or no newer one).
    var latestPair: StereoPair? { state.withLock { $0.latest?.pair } }

    /// The newest pair's number, or `nil`.
    var latestNumber: Int? { state.withLock { $0.latest?.pair.number } }

    /// The newest pair encoded for a page, when it is not `after` (the last one this page
    /// drew, with the same `raw` choice); counts it as sent. `nil` when there is nothing new.
    ///
    /// - Throws: the encoder's error, or a description when the pair has no pixels for the
    ///   choice (raw frames of a compressed format that were not decoded).
    func encodedPair(raw: Bool, after last: (number: Int, raw: Bool)?) throws -> EncodedPair? {
        guard let (pair, deliveredAt, cached) = state.withLock({ s -> (StereoPair, Int64, EncodedPair?)? in
            guard let slot = s.latest else { return nil }
            if let last, last.number == slot.pair.number, last.raw == raw { return nil }
            return (slot.pair, slot.deliveredAt, slot.encoded[raw])
        }) else { return nil }
        let encoded = try cached ?? encode(pair, raw: raw, deliveredAt: deliveredAt)
        state.withLock { s in
            guard s.latest?.pair.number == pair.number else { return }
            s.latest?.encoded[raw] = encoded
            s.latest?.sentTo += 1
        }
        return encoded
    }

    /// Both images of `pair` as JPEG.
    private func encode(_ pair: StereoPair, raw: Bool, deliveredAt: Int64) throws -> EncodedPair {
        let images = try Self.images(of: pair, raw: raw)
        var left = images.left, right = images.right
        if stampsFrameNumbers {
            left = try FrameNumberStamp.stamped(left, number: pair.number)
            right = try FrameNumberStamp.stamped(right, number: pair.number)
        }
        let offset = Self.wallClockOffsetNanoseconds()
        return EncodedPair(number: pair.number, raw: raw,
                           left: try left.encoded(as: .jpeg, quality: quality),
                           right: try right.encoded(as: .jpeg, quality: quality),
                           size: left.size,
                           exposureWallMilliseconds: Double(pair.left.timestampNanoseconds + offset) / 1e6,
                           deliveredWallMilliseconds: Double(deliveredAt + offset) / 1e6,
                           skewNanoseconds: pair.skewNanoseconds, stamped: stampsFrameNumbers)
    }

    /// Copies of a pair's images: rectified (the session's) or raw (the frames as captured).
    ///
    /// - Throws: ``ViewerError`` when the pair has no such pixels.
    static func images(of pair: StereoPair, raw: Bool) throws -> PerSide<ImageBuffer> {
        func view(_ side: StereoPairSide) -> ImageView? { raw ? side.frame?.image : side.image }
        guard let left = view(pair.left), let right = view(pair.right) else {
            throw ViewerError(raw ? "the raw frames of this pair are not kept (the session rectifies and drops them)"
                                  : "this pair has no decoded images")
        }
        return PerSide(left: ImageBuffer(copying: left), right: ImageBuffer(copying: right))
    }

    /// CLOCK_REALTIME − CLOCK_MONOTONIC now (ns): what turns a capture time into wall time.
    static func wallClockOffsetNanoseconds() -> Int64 {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let monotonic = monotonicNanoseconds()
        return Int64(wall.tv_sec) * 1_000_000_000 + Int64(wall.tv_nsec) - monotonic
    }
}

/// A request the viewer cannot serve, said in words.
struct ViewerError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}
