import Foundation
@testable import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
@testable import ParallaxTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The emulated webcam without a kernel: the test plays vhci's side of USB/IP over a
/// socket pair (requests as Linux's vhci-hcd sends them), so what uvcvideo will read —
/// descriptors, negotiation, payloads — is checked on any machine. `make test-kernel`
/// then runs the same camera under the real driver (KernelUVCTests).
@Suite("Emulated UVC webcam, USB/IP requests answered")
struct EmulatedWebcamTests {
    /// A minimal USB/IP host: sends commands, reads replies.
    final class Host {
        let fd: Int32
        var seqnum: UInt32 = 0
        init(_ fd: Int32) { self.fd = fd }
        deinit { close(fd) }

        func read(_ count: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, count - got) }
                guard n > 0 else { return Array(bytes.prefix(got)) }
                got += n
            }
            return bytes
        }

        func write(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }

        /// Sends CMD_SUBMIT; returns its seqnum.
        @discardableResult
        func submit(isIn: Bool, endpoint: UInt32, length: Int, setup: [UInt8] = [UInt8](repeating: 0, count: 8),
                    data: [UInt8] = [], packets: [Int] = []) -> UInt32 {
            seqnum += 1
            var bytes: [UInt8] = []
            for value: UInt32 in [USBIP.cmdSubmit, seqnum, 0x10002, isIn ? 1 : 0, endpoint, 0, UInt32(length), 0,
                                  UInt32(packets.count), 1] {
                USBIP.append(value, to: &bytes)
            }
            bytes += setup + data
            var offset = 0
            for packet in packets {
                for value: UInt32 in [UInt32(offset), UInt32(packet), 0, 0] { USBIP.append(value, to: &bytes) }
                offset += packet
            }
            write(bytes)
            return seqnum
        }

        /// Reads one reply: (command, seqnum, status, data, iso actual lengths).
        /// (An OUT transfer's reply states its length but carries no data, as vhci reads it.)
        func reply(packets: Int = 0, isIn: Bool = true) -> (UInt32, UInt32, Int32, [UInt8], [Int]) {
            let header = read(USBIP.headerSize)
            let command = USBIP.u32(header, 0), seq = USBIP.u32(header, 4)
            let status = Int32(bitPattern: USBIP.u32(header, 20))
            guard command == USBIP.retSubmit else { return (command, seq, status, [], []) }
            let length = isIn ? Int(USBIP.u32(header, 24)) : 0
            let data = read(length)
            let descriptors = read(packets * USBIP.isoDescriptorSize)
            let lengths = (0..<packets).map { Int(USBIP.u32(descriptors, $0 * 16 + 8)) }
            return (command, seq, status, data, lengths)
        }

        /// A control transfer on endpoint 0; the reply's status and data.
        func control(_ type: UInt8, _ request: UInt8, value: UInt16, index: UInt16, length: Int, data: [UInt8] = []) -> (Int32, [UInt8]) {
            let setup = [type, request] + le16(value) + le16(index) + le16(UInt16(length))
            submit(isIn: type & 0x80 != 0, endpoint: 0, length: length, setup: setup, data: data)
            let (_, _, status, bytes, _) = reply(isIn: type & 0x80 != 0)
            return (status, bytes)
        }
    }

    static func connected(_ spec: EmulatedWebcamSpec) -> (EmulatedWebcam, Host) {
        var pair: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair)
        let webcam = EmulatedWebcam(spec)
        webcam.serve(socket: pair[1], port: 0)
        return (webcam, Host(pair[0]))
    }

    static let smallSpec: EmulatedWebcamSpec = {
        var spec = EmulatedWebcamSpec(serial: "TEST-1", formats: [
            .init(fourCC: .mjpeg, sizes: [ImageSize(width: 320, height: 240)], intervals: EmulatedWebcamSpec.webcamIntervals),
            .init(fourCC: .yuyv, sizes: [ImageSize(width: 320, height: 240)], intervals: EmulatedWebcamSpec.webcamIntervals),
        ])
        spec.readoutNanoseconds = 0
        return spec
    }()

    @Test("descriptors: the device, its strings, and the streaming packet sizes discovery reads from sysfs")
    func descriptors() {
        let (_, host) = Self.connected(Self.smallSpec)
        let (status, device) = host.control(0x80, 0x06, value: 0x0100, index: 0, length: 64)
        #expect(status == 0 && device.count == 18)
        #expect(device[8] == 0x09 && device[9] == 0x12)      // vendor 0x1209, little-endian
        let (_, head) = host.control(0x80, 0x06, value: 0x0200, index: 0, length: 9)
        let total = Int(head[2]) | Int(head[3]) << 8
        let (_, configuration) = host.control(0x80, 0x06, value: 0x0200, index: 0, length: total)
        #expect(configuration.count == total)
        // What Parallax's cost model reads from sysfs's copy of these bytes.
        #expect(USBDescriptors.videoStreamingPacketSizes(device + configuration) == [128, 512, 1024, 2048, 3072])
        // And the clock the camera's payload headers count in.
        #expect(USBDescriptors.videoClockFrequency(device + configuration) == 48_000_000)
        let (_, serial) = host.control(0x80, 0x06, value: 0x0303, index: 0x0409, length: 255)
        #expect(String(decoding: stride(from: 2, to: serial.count, by: 2).map { serial[$0] }, as: UTF8.self) == "TEST-1")
        // A descriptor the camera does not have stalls, as a real one does.
        #expect(host.control(0x80, 0x06, value: 0x0600, index: 0, length: 10).0 == USBIP.stalled)
    }

    @Test("controls: range, default, and a value set is read back; out of range stalls")
    func controls() {
        let (webcam, host) = Self.connected(Self.smallSpec)
        // Gain: processing unit 2, selector 4, two bytes.
        #expect(host.control(0xA1, 0x83, value: 0x0400, index: 0x0200, length: 2).1 == [255, 0])
        #expect(host.control(0xA1, 0x87, value: 0x0400, index: 0x0200, length: 2).1 == [32, 0])
        #expect(host.control(0x21, 0x01, value: 0x0400, index: 0x0200, length: 2, data: [77, 0]).0 == 0)
        #expect(host.control(0xA1, 0x81, value: 0x0400, index: 0x0200, length: 2).1 == [77, 0])
        #expect(webcam.controlValue(.gain) == 77)
        #expect(host.control(0x21, 0x01, value: 0x0400, index: 0x0200, length: 2, data: [0, 1]).0 == USBIP.stalled)
    }

    /// Negotiates `formatIndex` at 30 fps; returns dwMaxPayloadTransferSize.
    static func negotiate(_ host: Host, formatIndex: UInt8) -> Int {
        let probe: [UInt8] = [1, 0, formatIndex, 1] + le32(333_333) + [UInt8](repeating: 0, count: 18)
        _ = host.control(0x21, 0x01, value: 0x0100, index: 0x0001, length: 26, data: probe)
        let (_, current) = host.control(0xA1, 0x81, value: 0x0100, index: 0x0001, length: 26)
        _ = host.control(0x21, 0x01, value: 0x0200, index: 0x0001, length: 26, data: current)
        return Int(current[22]) | Int(current[23]) << 8 | Int(current[24]) << 16 | Int(current[25]) << 24
    }

    /// Reads `count` frames from isochronous requests of 32 packets of `packetSize`:
    /// each frame's bytes and whether its headers carried the error bit.
    static func frames(_ count: Int, from host: Host, packetSize: Int) -> [([UInt8], Bool)] {
        var frames: [([UInt8], Bool)] = []
        var current: [UInt8] = [], error = false
        for _ in 0..<2 { host.submit(isIn: true, endpoint: 1, length: 32 * packetSize, packets: Array(repeating: packetSize, count: 32)) }
        while frames.count < count {
            let (_, _, status, data, lengths) = host.reply(packets: 32)
            #expect(status == 0)
            var offset = 0
            for length in lengths where length > 0 {
                let packet = Array(data[offset..<(offset + length)])
                offset += length
                #expect(packet[0] == 12 && packet[1] & 0x0C == 0x0C)   // PTS and SCR in every header
                current += packet[12...]
                error = error || packet[1] & 0x40 != 0
                if packet[1] & 0x02 != 0 {
                    frames.append((current, error))
                    (current, error) = ([], false)
                }
            }
            host.submit(isIn: true, endpoint: 1, length: 32 * packetSize, packets: Array(repeating: packetSize, count: 32))
        }
        return frames
    }

    @Test("YUYV streams isochronously: the payload size picks the 1024-byte setting, frames carry their numbers, the error bit is passed on")
    func isochronousYUYV() {
        let (webcam, host) = Self.connected(Self.smallSpec)
        // 320×240×2 bytes over the 266.7 microframes of 1/30 s, plus the 12-byte header: 588 → 1024.
        #expect(Self.negotiate(host, formatIndex: 2) == 1024)
        webcam.inject(.errorBit)                                       // for the first frame
        _ = host.control(0x01, 0x0B, value: 3, index: 1, length: 0)   // alternate setting 3: 1024 bytes
        let frames = Self.frames(3, from: host, packetSize: 1024)
        #expect(frames.map(\.0.count) == [153_600, 153_600, 153_600])
        #expect(frames.map(\.1) == [true, false, false])
        #expect(frames.map { frame in FrameMark.read { x, y in frame.0[(y * 320 + x) * 2] } } == [0, 1, 2])
        let truth = webcam.truth
        #expect(truth.prefix(3).map(\.number) == [0, 1, 2])
        // 1/30 s apart on the device clock, which here is the host's.
        if truth.count >= 2 { #expect(abs(truth[1].exposureStartNanoseconds - truth[0].exposureStartNanoseconds - 33_333_300) < 1_000) }
    }

    @Test("MJPEG: the largest packet is asked for; each frame is a JPEG that decodes and shows its number; a short one does not decode")
    func isochronousMJPEG() throws {
        let (webcam, host) = Self.connected(Self.smallSpec)
        #expect(Self.negotiate(host, formatIndex: 1) == 3072)
        _ = host.control(0x01, 0x0B, value: 5, index: 1, length: 0)
        let frames = Self.frames(2, from: host, packetSize: 3072)
        for (n, frame) in frames.enumerated() {
            let image = try frame.0.withUnsafeBytes { try MJPEGDecoder().decode($0) }
            let luma = try image.converted(to: .gray8)
            #expect(FrameMark.read { x, y in luma.bytes[y * 320 + x] } == n)
        }
        webcam.inject(.shortFrame(fraction: 0.5))
        // The fault goes to the next frame the camera starts, which may be a frame or two
        // after the next one read: the camera runs ahead into the requests still open while
        // the frames above were decoded (slowly, under a sanitizer). Every frame is delivered
        // whole and in order, so the n-th frame read is the truth's number n: read on until
        // the one that carries the fault (the camera is at most the open requests ahead).
        var number = frames.count
        var faulted: EmulatedWebcam.FrameTruth?
        while number < frames.count + 6 {
            let frame = try #require(Self.frames(1, from: host, packetSize: 3072).first)
            faulted = webcam.truth.first { $0.fault != nil }
            if let faulted, faulted.number == number {
                #expect(faulted.fault == .shortFrame(fraction: 0.5) && faulted.byteCount == frame.0.count)
                #expect(throws: MJPEGDecodingError.self) { try frame.0.withUnsafeBytes { try MJPEGDecoder().decode($0) } }
                break
            }
            // A frame before the faulted one is whole and decodes.
            #expect(throws: Never.self) { try frame.0.withUnsafeBytes { try MJPEGDecoder().decode($0) } }
            number += 1
        }
        #expect(faulted?.number == number, "the short frame was never read: the fault went to frame \(faulted.map { String($0.number) } ?? "none")")
    }

    @Test("a cancelled request is answered as cancelled, and never completed afterwards")
    func unlink() {
        let (_, host) = Self.connected(Self.smallSpec)
        let request = host.submit(isIn: true, endpoint: 1, length: 1024, packets: [1024])
        // Not streaming: the request stays open until the host cancels it.
        var bytes: [UInt8] = []
        for value: UInt32 in [USBIP.cmdUnlink, 99, 0x10002, 0, 1, request, 0, 0, 0, 0, 0, 0] { USBIP.append(value, to: &bytes) }
        host.write(bytes)
        let (command, seq, status, _, _) = host.reply()
        #expect(command == USBIP.retUnlink && seq == 99 && status == USBIP.unlinked)
        // Streaming now answers the requests still open, never the cancelled one.
        #expect(Self.negotiate(host, formatIndex: 2) == 1024)
        _ = host.control(0x01, 0x0B, value: 3, index: 1, length: 0)
        let next = host.submit(isIn: true, endpoint: 1, length: 32 * 1024, packets: Array(repeating: 1024, count: 32))
        let (_, answered, _, _, _) = host.reply(packets: 32)
        #expect(answered == next && answered != request)
    }
}
