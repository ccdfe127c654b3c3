/// The USB/IP messages between the kernel's virtual host controller (`vhci-hcd`) and a
/// device (the kernel's Documentation/usb/usbip_protocol.rst): every message starts with
/// a 48-byte header of big-endian 32-bit fields.
enum USBIP {
    static let headerSize = 48
    /// One isochronous packet descriptor: offset, length, actual length, status.
    static let isoDescriptorSize = 16

    static let cmdSubmit: UInt32 = 1, cmdUnlink: UInt32 = 2, retSubmit: UInt32 = 3, retUnlink: UInt32 = 4

    /// Linux errno values the kernel expects in `status` (negative).
    static let stalled: Int32 = -32        // -EPIPE: the endpoint stalled (a request the device refuses)
    static let unlinked: Int32 = -104      // -ECONNRESET: the request was cancelled before it completed

    /// A request from the host.
    enum Command {
        case submit(Submit)
        case unlink(seqnum: UInt32, target: UInt32)
    }

    /// CMD_SUBMIT: one URB.
    struct Submit {
        var seqnum: UInt32
        /// True for device-to-host.
        var isIn: Bool
        /// The endpoint number (without the direction bit).
        var endpoint: UInt32
        var transferBufferLength: Int
        /// Isochronous packets requested (0 when not isochronous).
        var packetCount: Int
        /// The isochronous packets' requested lengths.
        var packetLengths: [Int]
        /// The 8-byte control setup packet (endpoint 0).
        var setup: [UInt8]
        /// The data of an OUT transfer.
        var data: [UInt8]
    }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
    }

    /// Reads one command, pulling bytes with `read(count)` (nil at the end of the stream).
    static func readCommand(_ read: (Int) -> [UInt8]?) -> Command? {
        guard let header = read(headerSize) else { return nil }
        let command = u32(header, 0), seqnum = u32(header, 4)
        if command == cmdUnlink { return .unlink(seqnum: seqnum, target: u32(header, 20)) }
        guard command == cmdSubmit else { return nil }
        let isIn = u32(header, 12) == 1
        let length = Int(Int32(bitPattern: u32(header, 24)))
        let packets = u32(header, 32)
        // Linux sends 0 packets for a transfer that is not isochronous; the protocol text says 0xFFFFFFFF.
        let packetCount = packets == 0xFFFF_FFFF ? 0 : Int(packets)
        var data: [UInt8] = []
        if !isIn && length > 0 {
            guard let out = read(length) else { return nil }
            data = out
        }
        var packetLengths: [Int] = []
        if packetCount > 0 {
            guard let descriptors = read(packetCount * isoDescriptorSize) else { return nil }
            packetLengths = (0..<packetCount).map { Int(u32(descriptors, $0 * isoDescriptorSize + 4)) }
        }
        return .submit(Submit(seqnum: seqnum, isIn: isIn, endpoint: u32(header, 16), transferBufferLength: max(0, length),
                              packetCount: packetCount, packetLengths: packetLengths,
                              setup: Array(header[40..<48]), data: data))
    }

    /// RET_SUBMIT for `submit`: `status`, the data of an IN transfer and, for an isochronous
    /// one, each packet's actual length (the data is the packets' bytes back to back).
    static func retSubmit(_ submit: Submit, status: Int32 = 0, data: [UInt8] = [], packetActualLengths: [Int] = []) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerSize + data.count + packetActualLengths.count * isoDescriptorSize)
        for value: UInt32 in [retSubmit, submit.seqnum, 0, 0, 0] { append(value, to: &bytes) }
        append(UInt32(bitPattern: status), to: &bytes)
        append(UInt32(submit.isIn ? data.count : (status == 0 ? submit.transferBufferLength : 0)), to: &bytes)
        append(0, to: &bytes)                                   // start_frame
        append(UInt32(submit.packetCount), to: &bytes)          // number_of_packets, as asked
        append(0, to: &bytes)                                   // error_count
        bytes.append(contentsOf: [UInt8](repeating: 0, count: 8))
        if submit.isIn { bytes.append(contentsOf: data) }
        if submit.packetCount > 0 {
            var offset = 0
            for (i, requested) in submit.packetLengths.enumerated() {
                append(UInt32(offset), to: &bytes)
                append(UInt32(requested), to: &bytes)
                append(UInt32(i < packetActualLengths.count ? packetActualLengths[i] : 0), to: &bytes)
                append(0, to: &bytes)
                offset += requested
            }
        }
        return bytes
    }

    /// RET_UNLINK for the unlink request `seqnum`.
    static func retUnlink(seqnum: UInt32, status: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        for value: UInt32 in [retUnlink, seqnum, 0, 0, 0, UInt32(bitPattern: status)] { append(value, to: &bytes) }
        bytes.append(contentsOf: [UInt8](repeating: 0, count: 24))
        return bytes
    }
}
