import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

/// The session as a user's program calls it: views kept past their pair or frame read the
/// pixels they were given, a loop over a session nobody started starts it, and a second
/// loop at the same time is an error, not a trap.
@Suite("Library use: views that outlive their pair, loops that start the session, one reader")
struct LibraryUseTests {
    /// What a test kept: the view itself and a copy of its pixels taken when it was handed over.
    struct Kept {
        var view: ImageView
        var copy: ImageBuffer
        init(_ view: ImageView) {
            self.view = view
            copy = ImageBuffer(copying: view)
        }
        /// The view's pixels now are the ones it was given.
        var isIntact: Bool { ImageBuffer(copying: view) == copy }
    }

    /// Reads `count` pairs from `session` (without calling `start()`), keeping pair 2's left
    /// image; returns it and copies of the left images that came after it.
    static func keepAView(of session: StereoSession, pairs count: Int) async throws -> (Kept, later: [ImageBuffer]) {
        var kept: Kept?
        var later: [ImageBuffer] = []
        for try await pair in session.pairs {
            let image = try #require(pair.left.image)
            if kept == nil { kept = Kept(image) } else { later.append(ImageBuffer(copying: image)) }
            if later.count >= count { break }
        }
        session.stop()
        return (try #require(kept), later)
    }

    /// A rectified pair's pixels live in a pool of queued pairs + 3 buffers (5 here) reused
    /// pair after pair. A view kept past its pair holds its buffer out of the pool, so 60
    /// pairs later it still reads its own pixels; the later pairs' pixels differ (the rig
    /// cycles through 16 noisy renderings, so at most ⌈60 / 16⌉ = 4 of the 60 repeat the
    /// kept one), so a buffer reused under the view would have shown. (Mutation: a pooled
    /// view that does not hold its storage, `owner: nil` in `PairStorage.view`, fails it.)
    @Test func aRectifiedViewKeptPastItsPairReadsItsOwnPixels() async throws {
        let (rig, device) = SessionFixtures.simulated(drops: 0, noise: 4)
        let session = try StereoSession(device: device, calibration: rig.rig.calibration)
        let (kept, later) = try await Self.keepAView(of: session, pairs: 60)
        let repeats = later.filter { $0 == kept.copy }.count, intact = kept.isIntact
        #expect(later.count == 60 && repeats <= 4, "the later pairs show other pixels")
        #expect(intact, "the kept view reads other pixels than it was given")
        // The pool kept going without the held buffer: no pair was lost for want of one.
        #expect(session.statistics.sessionDrops[.noFreeBuffer, default: 0] == 0)
    }

    /// An uncalibrated session over the virtual UVC driver hands over views of the driver's
    /// mapped buffers. A view kept past its frame holds the frame, so the driver does not
    /// get that buffer back and refill it; 40 pairs later the view reads what it was given
    /// (the driver fills each buffer with its frame's sequence number, so a refilled one
    /// would differ). The frame's payload kept alone likewise. (Mutation: `Frame.image`
    /// returning the delivered view without `keepingAlive(self)` fails it.)
    @Test func aDriverBufferViewKeptPastItsFrameIsNotRefilled() async throws {
        let (_, device) = try SessionFixtures.virtualPair()
        let session = try StereoSession(device: device)
        var kept: Kept?
        var payload: (view: FramePayload, copy: [UInt8])?
        var later = 0
        for try await pair in session.pairs {
            if kept == nil {
                kept = Kept(try #require(pair.left.image))
                let bytes = try #require(pair.right.frame?.payload)
                payload = (bytes, Array(bytes.bytes))
            } else {
                later += 1
                let differs = ImageBuffer(copying: try #require(pair.left.image)) != kept?.copy
                #expect(differs, "pair \(pair.number) shows the kept pixels")
            }
            if later >= 40 { break }
        }
        session.stop()
        let intact = try #require(kept).isIntact
        #expect(intact, "the driver refilled the buffer under a kept view")
        let (view, copy) = try #require(payload)
        let payloadIntact = Array(view.bytes) == copy
        #expect(payloadIntact, "the driver refilled the buffer under a kept payload")
    }

    /// MJPEG frames decode into a pool of buffers given back when their frame is freed; a
    /// view of a decoded image holds its frame, so its buffer is not handed to a later frame.
    @Test func aDecodedViewKeptPastItsFrameKeepsItsBuffer() async throws {
        let size = ImageSize(width: 160, height: 120)
        let rig = SimulatedRigDevice(rig: .example(size: size), pixelFormat: .gray8,
                                     leftTiming: SimulatedCameraTiming(noiseStandardDeviation: 4),
                                     rightTiming: SimulatedCameraTiming(noiseStandardDeviation: 4), pace: .asFastAsPossible)
        let device = StereoDevice(simulated: rig)
        try device.setMJPEGDecoding(MJPEGDecoding(output: .gray8))
        try device.configure(StereoConfiguration(format: CaptureFormat(fourCC: .mjpeg, size: size,
                                                                      frameInterval: SessionFixtures.interval)))
        let session = try StereoSession(device: device)
        let (kept, later) = try await Self.keepAView(of: session, pairs: 40)
        // 16 noisy renderings in turn: at most ⌈40 / 16⌉ = 3 of the later 40 repeat the kept one.
        let repeats = later.filter { $0 == kept.copy }.count, intact = kept.isIntact
        #expect(later.count == 40 && repeats <= 3, "the later frames decode to other pixels")
        #expect(intact, "a decoded buffer was reused under a kept view")
    }

    /// A loop over the pairs of a session nobody started starts it (it used to wait forever).
    @Test func readingThePairsOfASessionNobodyStartedStartsIt() async throws {
        let (_, device) = SessionFixtures.simulated(drops: 0)
        let session = try StereoSession(device: device)
        #expect(!session.isRunning)
        var count = 0
        for try await _ in session.pairs {
            count += 1
            if count == 5 { break }
        }
        #expect(count == 5)
        // start() after the loop started the session does nothing; a second loop reads on.
        try session.start()
        for try await _ in session.pairs { count += 1; break }
        #expect(count == 6)
        session.stop()
        // A stopped session runs once: start() says so, and its pairs end at once.
        #expect(throws: StereoSessionError.self) { try session.start() }
        for try await _ in session.pairs { Issue.record("a stopped session delivered a pair") }
    }

    /// Two loops over one session's pairs at the same time: the second throws (it used to
    /// trap the process), naming the problem; the first reads on.
    @Test func aSecondConcurrentLoopThrows() async throws {
        let (_, device) = SessionFixtures.simulated(drops: 0)
        let session = try StereoSession(device: device)
        var first = session.pairs.makeAsyncIterator()
        #expect(try await first.next() != nil)
        var second = session.pairs.makeAsyncIterator()
        do {
            _ = try await second.next()
            Issue.record("a second concurrent loop read a pair")
        } catch {
            #expect("\(error)".contains("already being read by another loop"), "\(error)")
        }
        #expect(try await first.next() != nil)
        var events = session.events.makeAsyncIterator()
        var otherEvents = session.events.makeAsyncIterator()
        #expect(try await events.next()?.kind == .started)
        await #expect(throws: StereoSessionError.self) { _ = try await otherEvents.next() }
        session.stop()
    }

    /// Pairs go to one place: a session delivering to a callback says so when its pairs are
    /// read, instead of yielding nothing forever.
    @Test func readingThePairsOfACallbackSessionThrows() async throws {
        let (_, device) = SessionFixtures.simulated(drops: 0)
        let session = try StereoSession(device: device)
        try session.start(delivering: { _ in })
        var iterator = session.pairs.makeAsyncIterator()
        do {
            _ = try await iterator.next()
            Issue.record("the pairs of a callback session were readable")
        } catch {
            #expect("\(error)".contains("start(delivering:)"), "\(error)")
        }
        session.stop()
    }

    /// One calibration in one place: attached to the device, it is what a session over the
    /// device rectifies with (it used to give camera models on the frames and unrectified
    /// pairs); a calibration given to the session wins over it.
    @Test func aCalibrationAttachedToTheDeviceRectifiesTheSession() async throws {
        let (rig, device) = SessionFixtures.simulated(drops: 0)
        try device.attach(rig.rig.calibration)
        let session = try StereoSession(device: device)
        #expect(session.calibration == rig.rig.calibration && session.rectification != nil)
        var rectified = 0
        for try await pair in session.pairs {
            if pair.isRectified && pair.rectification != nil { rectified += 1 }
            if pair.number >= 4 { break }
        }
        session.stop()
        #expect(rectified == 5)
        var other = rig.rig.calibration
        other.extrinsics.translation.x *= 2
        let given = try StereoSession(device: device, calibration: other)
        #expect(given.calibration == other)
        try device.attach(nil)
        #expect(try StereoSession(device: device).calibration == nil)
    }

    /// One account, one spelling: the synchronizer, the session and `stream --json` use the
    /// same words and types. `lost(side, reason:)` counts frames the camera lost before the
    /// session, `dropped(side, reason:)` frames that reached it and were not delivered (an
    /// `Int`, by the synchronizer's or the session's reason), `droppedByName` and `lostByName`
    /// the JSON's snake_case keys; and the totals balance.
    @Test func theAccountReadsTheSameEverywhere() async throws {
        // Live: the rig in real time (30 fps), one pair queued, newest wins; 10 % lost on the way.
        let (_, device) = SessionFixtures.simulated(pace: .realTime, drops: 0.1)
        let session = try StereoSession(device: device, options: {
            var options = StereoSessionOptions()
            options.backPressure = .newestWins(queuedPairs: 1)
            options.pressure.readsMachineState = false
            return options
        }())
        var read = 0
        for try await _ in session.pairs {
            read += 1
            // Fall behind now and then: 150 ms is four or five frame intervals.
            if read % 10 == 0 { try await Task.sleep(for: .milliseconds(150)) }
            if read == 40 { break }
        }
        session.stop()
        let stats = session.statistics
        for side in StereoSide.allCases {
            let lost: Int = stats.lost(side)
            let dropped: Int = stats.dropped(side)
            #expect(lost == stats.lost(side, reason: .simulated) && lost > 0, "10 % of the frames are lost on the way")
            #expect(dropped == DropReason.allCases.map { stats.dropped(side, reason: $0) }.reduce(0, +))
            #expect(DropReason.reasons(of: .camera).allSatisfy { stats.dropped(side, reason: $0) == 0 },
                    "a camera's reason is a loss, never among the frames dropped")
            #expect(stats.dropped(side, reason: .superseded) == stats.synchronizer.dropped(side, reason: .superseded))
            #expect(stats.droppedByName(side).values.reduce(0, +) == dropped)
            #expect(stats.lostByName(side)["simulated"] == lost)
            #expect(stats.frames(side) == stats.pairsDelivered + dropped, "every frame a delivered pair's or a drop")
        }
        #expect(stats.dropped(.left, reason: .consumerBehind) > 0, "the consumer fell behind")
        #expect(stats.pairsDelivered == read && stats.pairsMade == stats.synchronizer.pairsMade)
    }

    /// Events may be read before the session starts (nothing is missed: `.started` comes
    /// first); a reader of a session that is never started is told so after
    /// `SessionEvents.startWaitSeconds`, instead of waiting forever.
    @Test func eventsWaitForAStartAndSayWhenNoneComes() async throws {
        let (_, device) = SessionFixtures.simulated(drops: 0)
        let session = try StereoSession(device: device)
        let first = Task { () -> SessionEvent.Kind? in
            var events = session.events.makeAsyncIterator()
            return try await events.next()?.kind
        }
        try await Task.sleep(for: .milliseconds(200))  // the reader is waiting before the start
        try session.start()
        #expect(try await first.value == .started)
        session.stop()

        let (_, idleDevice) = SessionFixtures.simulated(drops: 0)
        let neverStarted = try StereoSession(device: idleDevice)
        let started = ContinuousClock.now
        var events = neverStarted.events.makeAsyncIterator()
        do {
            _ = try await events.next()
            Issue.record("events of a session never started yielded")
        } catch {
            let waited = ContinuousClock.now - started
            #expect("\(error)".contains("never started: call start()"), "\(error)")
            #expect(waited >= .seconds(SessionEvents.startWaitSeconds) && waited < .seconds(SessionEvents.startWaitSeconds + 30),
                    "waited \(waited)")
        }
    }

    /// A session stopped before it ever started ends its sequences: its pairs end at once,
    /// its events say `.stopped`, and reading either never waits (both used to wait forever).
    @Test(.timeLimit(.minutes(1))) func aSessionStoppedBeforeItStartedEndsItsSequences() async throws {
        let (_, device) = SessionFixtures.simulated(drops: 0)
        let session = try StereoSession(device: device)
        session.stop()
        var pairs = 0
        for try await _ in session.pairs { pairs += 1 }
        var events: [String] = []
        for try await event in session.events { events.append(event.name) }
        #expect(pairs == 0 && events == ["stopped"], "\(pairs) pairs, events \(events)")
        #expect(throws: StereoSessionError.self) { try session.start() }
    }

    /// Raw pairs from a device whose frames carry camera models: the attached calibration
    /// is not used when the options say so.
    @Test func anAttachedCalibrationCanBeLeftUnused() async throws {
        let (rig, device) = SessionFixtures.simulated(drops: 0)
        try device.attach(rig.rig.calibration)
        var options = StereoSessionOptions()
        options.usesAttachedCalibration = false
        let session = try StereoSession(device: device, options: options)
        #expect(session.calibration == nil)
        for try await pair in session.pairs {
            #expect(!pair.isRectified && pair.left.camera != nil && pair.left.frame != nil)
            break
        }
        session.stop()
    }
}
