import Foundation
@testable import ParallaxCapture
import ParallaxGeometry
import ParallaxTestSupport
import Testing

/// What README's "Hot-plug" promises beyond a camera coming back: it must be the same camera
/// (V4L2: the same stable identity, wherever it is plugged in now; another model at its
/// port is refused, saying so), it streams the format it had, the reconnect timeout (and
/// `nil`, no timeout), and a source that cannot come back.
@Suite("Session hot-plug: the same camera, the same format, the timeout")
struct SessionHotPlugTests {
    /// A session that looks for a lost camera every 20 ms and does not read the machine's load.
    static var watchingOptions: StereoSessionOptions {
        var options = StereoSessionOptions()
        options.reconnectIntervalSeconds = 0.02
        options.pressure.readsMachineState = false
        return options
    }

    static let interval = FrameInterval(numerator: 1, denominator: 30)

    /// A GREY virtual webcam at `path` on USB port (and bus) `port`: 320×240 and 160×120, at
    /// 30 and 15 fps, so that the driver's default (the first of each) differs from 160×120 at 15.
    static func webcam(_ path: String, port: String) -> VirtualCameraSpec {
        var spec = VirtualCameraSpec(
            path: path, card: "Virtual \(port)", busInfo: "usb-0000:00:14.0-\(port)",
            formats: [.init(fourCC: .grey, sizes: [ImageSize(width: 320, height: 240), ImageSize(width: 160, height: 120)],
                            intervals: [interval, FrameInterval(numerator: 1, denominator: 15)])],
            seed: UInt64(port) ?? 1)
        spec.usb = USBLocation(bus: Int(port) ?? 1, portPath: port, speedMbps: 480, serial: "SN\(port)")
        return spec
    }

    /// Two such webcams on ports 1 and 2, configured to `format`.
    static func pair(_ format: CaptureFormat) throws -> (VirtualUVCDriver, StereoDevice) {
        let driver = VirtualUVCDriver(cameras: [webcam("/dev/video0", port: "1"), webcam("/dev/video2", port: "2")])
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video2"))
        try device.configure(StereoConfiguration(format: format))
        return (driver, device)
    }

    static func stopReason(_ session: StereoSession) -> String? {
        session.statistics.events.lazy.compactMap { if case .stopped(let reason) = $0.kind { return reason }; return nil }.first
    }

    /// The right camera (serial SN2) is unplugged and another camera (serial SN3, on port 3)
    /// appears at its node: another identity, so it is not taken back. The session keeps
    /// looking until its timeout ends it, with the reason the last attempt gave; the other
    /// camera never streamed.
    @Test("another camera (another serial, on another port) at the node is not taken back; the timeout ends the session naming it")
    func anotherCameraIsNotTakenBack() async throws {
        let (driver, device) = try Self.pair(CaptureFormat(fourCC: .grey, size: ImageSize(width: 160, height: 120), frameInterval: Self.interval))
        var options = StereoSessionOptions()
        options.reconnectIntervalSeconds = 0.02
        options.reconnectTimeoutSeconds = 1
        options.pressure.readsMachineState = false
        let session = try StereoSession(device: device, options: options)
        let log = PairLog()
        try session.start(delivering: log.handler)
        defer { session.stop() }
        let (paired, gone, ended) = try await onOwnThread { () -> (Bool, Bool, Bool) in
            let paired = log.wait(for: 5)
            driver.unplug("/dev/video2")
            let gone = eventually { session.statistics.events.contains { $0.name == "disconnected" } }
            driver.add(Self.webcam("/dev/video2", port: "3"))
            // Hang guard: the 1 s timeout ends the session.
            return (paired, gone, eventually(seconds: 30) { !session.isRunning })
        }
        #expect(paired && gone && ended)
        let reason = Self.stopReason(session) ?? ""
        #expect(reason.contains("did not come back within 1 s") && reason.contains("usb-:-SN2"), "\(reason)")
        #expect(!session.statistics.events.contains { $0.name == "reconnected" })
        #expect(driver.framesProduced("/dev/video2") == 0 && !driver.isStreaming("/dev/video2"))
        let stats = session.statistics
        #expect(stats.accountDiscrepancy == nil, "\(stats.accountDiscrepancy ?? "")")
    }

    /// A camera known by its serial is the same camera on any port: SN2 unplugged from port 2
    /// and plugged into port 3 (another node) is taken back, and pairs again.
    @Test("a camera known by its serial comes back on another USB port and is taken back")
    func theSameSerialOnAnotherPortIsTakenBack() async throws {
        let (driver, device) = try Self.pair(CaptureFormat(fourCC: .grey, size: ImageSize(width: 160, height: 120), frameInterval: Self.interval))
        #expect(device.identities.right.stableID == "usb-:-SN2")
        let options = Self.watchingOptions
        let session = try StereoSession(device: device, options: options)
        let log = PairLog()
        try session.start(delivering: log.handler)
        defer { session.stop() }
        let (paired, back, pairedAgain) = try await onOwnThread { () -> (Bool, Bool, Bool) in
            guard log.wait(for: 5) else { return (false, false, false) }
            driver.unplug("/dev/video2")
            _ = eventually { session.statistics.events.contains { $0.name == "disconnected" } }
            var moved = Self.webcam("/dev/video4", port: "3")
            moved.usb?.serial = "SN2"
            driver.add(moved)
            let back = eventually { session.statistics.events.contains { $0.name == "reconnected" } }
            return (true, back, log.wait(for: log.count + 5))
        }
        #expect(paired && back && pairedAgain)
        let reconnected = session.statistics.events.filter { $0.name == "reconnected" }
        #expect(reconnected.map(\.node) == ["/dev/video4"] && reconnected.map(\.stableID) == ["usb-:-SN2"], "\(reconnected)")
        #expect(driver.framesProduced("/dev/video4") > 0)
    }

    /// Cameras without serial numbers are known by their USB port. The right one is unplugged
    /// and another model (with a serial, so discovery lists it by that) is plugged into its
    /// port: found at the port, but not the same camera. It is refused with an event naming
    /// both models, never streams, and the right camera plugged back in after it is taken back.
    @Test("another model at a serial-less camera's port is refused with an event naming both; the camera itself is taken back")
    func anotherModelAtThePortIsRefused() async throws {
        @Sendable func serialless(_ path: String, port: String, product: String) -> VirtualCameraSpec {
            var spec = Self.webcam(path, port: port)
            spec.usb?.serial = nil
            spec.usb?.vendorID = "046d"
            spec.usb?.productID = product
            return spec
        }
        let driver = VirtualUVCDriver(cameras: [serialless("/dev/video0", port: "1", product: "0825"),
                                                serialless("/dev/video2", port: "2", product: "0825")])
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video2"))
        #expect(device.identities.map(\.stableID) == PerSide(left: "usb-1-1", right: "usb-2-2"))
        try device.configure(StereoConfiguration(format: CaptureFormat(fourCC: .grey, size: ImageSize(width: 160, height: 120),
                                                                         frameInterval: Self.interval)))
        let options = Self.watchingOptions
        let session = try StereoSession(device: device, options: options)
        let log = PairLog()
        try session.start(delivering: log.handler)
        defer { session.stop() }
        let (refused, back) = try await onOwnThread { () -> (Bool, Bool) in
            guard log.wait(for: 5) else { return (false, false) }
            driver.unplug("/dev/video2")
            _ = eventually { session.statistics.events.contains { $0.name == "disconnected" } }
            // A camera with a serial of its own is listed by it, not by the port: it is found at
            // the port all the same, and refused.
            var other = serialless("/dev/video4", port: "2", product: "0990")
            other.usb?.serial = "NEWSN"
            driver.add(other)
            let refused = eventually { session.statistics.events.contains { $0.name == "device_error" } }
            driver.unplug("/dev/video4")
            driver.replug("/dev/video2")
            return (refused, eventually { session.statistics.events.contains { $0.name == "reconnected" } })
        }
        #expect(refused && back)
        let errors = session.statistics.events.compactMap { event -> String? in
            if case .deviceError(let message) = event.kind { return message }
            return nil
        }
        #expect(errors.count == 1, "said once: \(errors)")
        #expect(errors.first?.contains("another camera is at usb-2-2: 046d:0990") == true
                && errors.first?.contains("instead of 046d:0825") == true, "\(errors)")
        #expect(driver.framesProduced("/dev/video4") == 0)
        #expect(log.wait(for: log.count + 5))
    }

    /// The right camera is unplugged while the session holds its descriptor and plugged back:
    /// it comes back under another node, its arrival is announced (polling is set to once a
    /// minute, so only the announcement can bring it back in time), and the session pairs
    /// the first or second frame the camera makes once streaming again (by the driver's own
    /// counter, which restarts at 0). The time from the node appearing to that first pair is
    /// printed (wall clock: reported, not asserted).
    @Test("a camera plugged back under another node is announced, found by identity, and its first or second frame is paired")
    func anAnnouncedCameraPairsAtOnce() async throws {
        let (driver, device) = try Self.pair(CaptureFormat(fourCC: .grey, size: ImageSize(width: 160, height: 120),
                                                           frameInterval: Self.interval))
        var options = StereoSessionOptions()
        options.reconnectIntervalSeconds = 60
        options.watchedReconnectIntervalSeconds = 60
        options.pressure.readsMachineState = false
        let session = try StereoSession(device: device, options: options)
        let firsts = Locked<[(deliveredAt: Int64, rightStamp: Int64, source: String, sequence: UInt64)]>([])
        let replugAt = Locked<Int64>(.max)
        try session.start { pair in
            let now = monotonicNanoseconds()
            // The virtual cameras stamp the end of the frame; the capture code moved it to mid-exposure.
            let stamp = pair.right.timestampNanoseconds + (pair.right.exposureNanoseconds ?? 0) / 2
            if stamp > replugAt.withLock({ $0 }) {
                firsts.withLock { $0.append((now, stamp, pair.right.source.description, pair.right.sequence)) }
            }
        }
        defer { session.stop() }
        // Everything the driver knows is read on this thread, at once: the test's own task may
        // resume much later on a busy machine, when the camera's first frames have long left
        // the driver's 1024-frame record.
        struct Seen: Sendable {
            var nodes: (before: String?, after: String?)
            var stamps: [(sequence: UInt64, nanoseconds: Int64)]
            var frameZeroDue: Int64?
            var produced: Int
        }
        let seen = try await onOwnThread { () -> Seen in
            _ = eventually { session.statistics.pairsDelivered >= 5 }
            driver.unplug("/dev/video2")
            _ = eventually { session.statistics.events.contains { $0.name == "disconnected" } }
            let before = driver.node(of: "/dev/video2")
            replugAt.withLock { $0 = monotonicNanoseconds() }
            driver.replug("/dev/video2")
            _ = eventually { !firsts.withLock { $0.isEmpty } }
            let stamps = (0..<UInt64(16)).compactMap { k in driver.driverTimestamp("/dev/video2", sequence: k).map { (k, $0) } }
            return Seen(nodes: (before, driver.node(of: "/dev/video2")), stamps: stamps,
                        frameZeroDue: driver.dueTime("/dev/video2", sequence: 0), produced: driver.framesProduced("/dev/video2"))
        }
        #expect(seen.nodes.before == nil && seen.nodes.after == "/dev/video1", "\(seen.nodes)")
        let first = try #require(firsts.withLock { $0.first })
        // The camera's own frame in that pair: the one of its first frames whose driver stamp
        // is nearest (the pair's stamp is the driver's to the microsecond the buffer carries).
        let nearest = seen.stamps.min { abs($0.1 - first.rightStamp) < abs($1.1 - first.rightStamp) }
        let latency = Double(first.deliveredAt - replugAt.withLock { $0 }) / 1e6
        print(String(format: "node ready to first pair: %.1f ms (%.2f frame intervals at 30 fps); the camera's frame %d",
                     latency, latency / (1000.0 / 30), Int(nearest?.0 ?? 99)))
        let diagnosis = "right frame \(first.sequence) from \(first.source) stamped \(first.rightStamp), replug at "
            + "\(replugAt.withLock { $0 }); the driver had made \(seen.produced) frames, its first stamps \(seen.stamps)"
        // The announcement, not a poll, brought it back: the driver had the camera's frame 0
        // due before the first poll could have run (a minute after the camera went). How soon
        // is printed above, not asserted (wall clock; about a millisecond to reopen here).
        let frameZeroDue = try #require(seen.frameZeroDue, "\(diagnosis)")
        #expect(frameZeroDue - replugAt.withLock { $0 } < Int64(options.watchedReconnectIntervalSeconds * 1e9),
                "frame 0 due \(Double(frameZeroDue - replugAt.withLock { $0 }) / 1e6) ms after the node appeared")
        #expect(nearest.map { $0.0 <= 1 && abs($0.1 - first.rightStamp) < 1_000 } == true,
                "the first pair after the replug: \(diagnosis)")
        let reconnected = session.statistics.events.filter { $0.name == "reconnected" }
        #expect(reconnected.map(\.node) == ["/dev/video1"] && reconnected.map(\.stableID) == [device.identities.right.stableID])
    }

    /// README: the session "reopens it with the same format and pairs again". The cameras run
    /// 160×120 at 15 fps; the camera plugged back starts at the driver's default, 320×240 at
    /// 30 fps. After the reconnect the device's active formats are the earlier ones, and the
    /// driver itself schedules the right camera's frames one 15 fps interval apart (its due
    /// times: consecutive frames exactly 66 666 666 ns apart, not 33 333 333).
    @Test("a camera plugged back streams the format it had: the active formats, and the driver's own frame interval")
    func aReconnectedCameraHasItsFormatBack() async throws {
        let format = CaptureFormat(fourCC: .grey, size: ImageSize(width: 160, height: 120),
                                   frameInterval: FrameInterval(numerator: 1, denominator: 15))
        let (driver, device) = try Self.pair(format)
        let before = try #require(device.activeFormats)
        #expect(before.left == format && before.right == format)
        let options = Self.watchingOptions
        let session = try StereoSession(device: device, options: options)
        let log = PairLog()
        // The right frames of every pair, as delivered: their sequence numbers and stamps.
        let rightFrames = Locked<[(sequence: UInt64, nanoseconds: Int64)]>([])
        let logPair = log.handler
        try session.start(delivering: { pair in
            rightFrames.withLock { $0.append((pair.right.sequence, pair.right.timestampNanoseconds)) }
            logPair(pair)
        })
        defer { session.stop() }
        let (paired, back, reconnectedAt, pairedAgain) = try await onOwnThread { () -> (Bool, Bool, Int, Bool) in
            let paired = log.wait(for: 5)
            driver.unplug("/dev/video2")
            _ = eventually { session.statistics.events.contains { $0.name == "disconnected" } }
            driver.replug("/dev/video2")
            let back = eventually { session.statistics.events.contains { $0.name == "reconnected" } }
            let count = log.count
            return (paired, back, count, log.wait(for: count + 5))
        }
        #expect(paired && back && pairedAgain)
        let after = try #require(device.activeFormats)
        #expect(after.left == before.left && after.right == before.right, "after the reconnect: \(after)")
        // The plugged-back camera streams one 15 fps interval per frame, not the 30 fps it starts
        // at: between the right frames of the pairs delivered after the reconnect, each step in
        // time divided by the sequence numbers it spans (frames the driver had no free buffer
        // for, on a loaded machine, leave holes) is 66 666 666 ns, within the stamps' error:
        // the driver's ±50 µs jitter on each of two stamps plus their 1 µs resolution.
        let frames = rightFrames.withLock { Array($0.dropFirst(reconnectedAt)) }
        let steps = zip(frames, frames.dropFirst()).filter { $1.sequence > $0.sequence }
            .map { (sequences: Int64($1.sequence - $0.sequence), nanoseconds: $1.nanoseconds - $0.nanoseconds) }
        let bound: Int64 = 2 * 50_000 + 1_000
        #expect(steps.count >= 3 && steps.allSatisfy { abs($0.nanoseconds - $0.sequences * format.frameInterval.nanoseconds) <= bound },
                "\(steps)")
    }

    /// README: "A camera that does not come back within 60 s (`reconnectTimeoutSeconds`; `nil`
    /// waits as long as the session runs) … ends the session". An hour is not waited for: once
    /// the right camera is gone, the session's record of when it vanished is moved an hour back,
    /// and the session tries again. With the default 60 s that ends the session, naming the
    /// camera; with `nil` the session runs on after two more attempts, and takes the camera
    /// back when it returns.
    @Test("a camera gone an hour ends the session under the default 60 s timeout; with nil the session waits and takes it back")
    func noTimeoutWaitsAsLongAsTheSessionRuns() async throws {
        #expect(StereoSessionOptions().reconnectTimeoutSeconds == 60)
        for timeout in [60, nil] as [Double?] {
            let (driver, device) = try SessionFixtures.virtualPair()
            var options = StereoSessionOptions()
            options.reconnectIntervalSeconds = 0.02
            options.reconnectTimeoutSeconds = timeout
            options.pressure.readsMachineState = false
            let session = try StereoSession(device: device, options: options)
            let log = PairLog()
            try session.start(delivering: log.handler)
            defer { session.stop() }
            let outcome = try await onOwnThread { () -> (moved: Bool, runningAfter: Bool, ended: Bool, pairedAgain: Bool) in
                guard log.wait(for: 5) else { return (false, false, false, false) }
                driver.unplug("/dev/video2")
                guard eventually(seconds: 10, { session.statistics.events.contains { $0.name == "disconnected" } }) else {
                    return (false, false, false, false)
                }
                let moved = Self.moveDisconnectionBack(of: session, .right, by: 3_600_000_000_000)
                let runningAfter = session.isRunning && Self.stopReason(session) == nil
                if timeout != nil { return (moved, runningAfter, eventually(seconds: 30) { !session.isRunning }, false) }
                driver.replug("/dev/video2")
                let back = eventually { session.statistics.events.contains { $0.name == "reconnected" } }
                return (moved, runningAfter, !session.isRunning, back && log.wait(for: log.count + 5))
            }
            #expect(outcome.moved, "timeout \(String(describing: timeout)): the session made no attempt after the move")
            if timeout != nil {
                #expect(outcome.ended)
                let reason = Self.stopReason(session) ?? ""
                #expect(reason.contains("the right camera") && reason.contains("did not come back within 60 s"), "\(reason)")
            } else {
                #expect(outcome.runningAfter && !outcome.ended && outcome.pairedAgain, "\(outcome)")
            }
        }
    }

    /// README: "… or a source that cannot come back, ends the session with the reason". A
    /// side-by-side camera's halves cannot be reconnected on their own (StereoDevice.reconnect
    /// refuses them); unplugging the one camera ends the session at once, naming the half that
    /// reported it, without waiting for the reconnect timeout.
    @Test("a source that cannot come back (a side-by-side camera unplugged) ends the session with the reason")
    func aSourceThatCannotComeBackEndsTheSession() async throws {
        var spec = VirtualCameraSpec(path: "/dev/video0", card: "Virtual side-by-side", busInfo: "usb-0000:00:14.0-1",
                                     formats: [.init(fourCC: .grey, sizes: [ImageSize(width: 320, height: 120)], intervals: [Self.interval])])
        spec.usb = USBLocation(bus: 1, portPath: "1", speedMbps: 480, serial: "SBS1")
        let driver = VirtualUVCDriver(cameras: [spec])
        let device = StereoDevice(sideBySide: try driver.camera(at: "/dev/video0"))
        try device.configure(StereoConfiguration(format: CaptureFormat(fourCC: .grey, size: ImageSize(width: 160, height: 120),
                                                                       frameInterval: Self.interval)))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        #expect(options.reconnects && options.reconnectTimeoutSeconds == 60)
        let session = try StereoSession(device: device, options: options)
        let log = PairLog()
        try session.start(delivering: log.handler)
        defer { session.stop() }
        let (paired, ended) = try await onOwnThread { () -> (Bool, Bool) in
            let paired = log.wait(for: 5)
            driver.unplug("/dev/video0")
            // Hang guard; the end comes at once, not after the 60 s timeout.
            return (paired, eventually(seconds: 30) { !session.isRunning })
        }
        #expect(paired && ended)
        let reason = Self.stopReason(session) ?? ""
        #expect(reason.hasSuffix("disconnected") && reason.contains("camera (Virtual side-by-side"), "\(reason)")
        #expect(!session.statistics.events.contains { $0.name == "reconnected" })
        let stats = session.statistics
        #expect(stats.accountDiscrepancy == nil, "\(stats.accountDiscrepancy ?? "")")
    }

    /// Moves the session's record of when `side` vanished back by `nanoseconds`, and waits until
    /// the session has decided at least one reconnection attempt that saw the moved record (or
    /// has ended). The session thread makes its attempts one after another, each first
    /// rewriting the record with the moment it read and the attempt's own time: once three
    /// attempts are seen after the move, the second read the moved record (the first may have
    /// read it just before the move) and the third began only when the second had decided. An
    /// attempt under way during the move may put the old moment back; the move is then repeated.
    static func moveDisconnectionBack(of session: StereoSession, _ side: StereoSide, by nanoseconds: Int64) -> Bool {
        var movedAt = Int64.max
        var attempts: Set<Int64> = []
        return eventually(seconds: 20) {
            guard session.isRunning else { return true }
            let now = monotonicNanoseconds()
            let record = session.state.withLock { s -> (moved: Bool, lastAttempt: Int64)? in
                guard case .disconnected(let since, let last) = s.sides[side] else { return nil }
                if since > now - nanoseconds / 2 {
                    s.sides[side] = .disconnected(since: since - nanoseconds, lastAttempt: last)
                    return (false, last)
                }
                return (true, last)
            }
            guard let record else { return false }
            guard record.moved else {
                movedAt = now
                attempts = []
                return false
            }
            if record.lastAttempt > movedAt { attempts.insert(record.lastAttempt) }
            return attempts.count >= 3
        }
    }
}
