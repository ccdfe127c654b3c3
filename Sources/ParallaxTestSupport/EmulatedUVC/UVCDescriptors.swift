import ParallaxCapture

/// The descriptors of an emulated UVC 1.0 webcam (USB 2.0 §9.6; UVC 1.0 §3): a device
/// with an interface association of one Video Control interface (camera terminal →
/// processing unit → streaming output terminal) and one Video Streaming interface whose
/// alternate settings carry the isochronous endpoint, or alternate setting 0 the bulk one.
struct UVCDescriptors {
    /// Entity ids in the Video Control interface.
    static let cameraTerminal: UInt8 = 1, processingUnit: UInt8 = 2, outputTerminal: UInt8 = 3
    /// The streaming endpoint (IN 1).
    static let streamingEndpoint: UInt8 = 0x81
    /// The bulk endpoint's packet size and the payload a bulk transfer carries at most.
    static let bulkPacketSize = 512, bulkPayloadSize = 32 * 512

    /// The camera terminal's controls (bmControls bits): auto-exposure mode (1), exposure
    /// time absolute (3), focus absolute (5), focus auto (17).
    static let cameraControls: UInt32 = 1 << 1 | 1 << 3 | 1 << 5 | 1 << 17
    /// The processing unit's: brightness (0), white balance temperature (6), gain (9),
    /// white balance temperature auto (12).
    static let processingControls: UInt16 = 1 << 0 | 1 << 6 | 1 << 9 | 1 << 12

    let spec: EmulatedWebcamSpec

    /// The 18-byte device descriptor.
    var device: [UInt8] {
        var d: [UInt8] = [18, 0x01]
        d += le16(0x0200)
        d += [0xEF, 0x02, 0x01, 64]                          // miscellaneous class, interface association
        d += le16(spec.vendorID) + le16(spec.productID) + le16(0x0100)
        d += [1, 2, spec.serial == nil ? 0 : 3, 1]           // strings: manufacturer, product, serial; one configuration
        return d
    }

    /// The configuration descriptor with every interface, endpoint and class descriptor.
    var configuration: [UInt8] {
        var body: [UInt8] = []
        // Interface association: interfaces 0 and 1 are one video function.
        body += [8, 0x0B, 0, 2, 0x0E, 0x03, 0x00, 2]
        // Video Control interface, no interrupt endpoint.
        body += [9, 0x04, 0, 0, 0, 0x0E, 0x01, 0x00, 0]
        var control: [UInt8] = []
        control += [18, 0x24, 0x02, Self.cameraTerminal] + le16(0x0201) + [0, 0] + le16(0) + le16(0) + le16(0) + [3]
            + [UInt8(Self.cameraControls & 0xFF), UInt8(Self.cameraControls >> 8 & 0xFF), UInt8(Self.cameraControls >> 16 & 0xFF)]
        control += [11, 0x24, 0x05, Self.processingUnit, Self.cameraTerminal] + le16(0) + [2]
            + le16(Self.processingControls) + [0]
        control += [9, 0x24, 0x03, Self.outputTerminal] + le16(0x0101) + [0, Self.processingUnit, 0]
        let headerLength = 13
        body += [UInt8(headerLength), 0x24, 0x01] + le16(0x0100) + le16(UInt16(headerLength + control.count))
            + le32(spec.clockFrequencyHz) + [1, 1]
        body += control
        // Video Streaming interface, alternate setting 0 (bulk: its endpoint is here).
        let isBulk = spec.transfer == .bulk
        body += [9, 0x04, 1, 0, isBulk ? 1 : 0, 0x0E, 0x02, 0x00, 0]
        var formats: [UInt8] = []
        for (index, format) in spec.formats.enumerated() {
            let formatIndex = UInt8(index + 1)
            if format.isCompressed {
                formats += [11, 0x24, 0x06, formatIndex, UInt8(format.sizes.count), 0x01, 1, 0, 0, 0, 0]
            } else {
                formats += [27, 0x24, 0x04, formatIndex, UInt8(format.sizes.count)] + Self.guid(format.fourCC)
                    + [UInt8(format.bitsPerPixel), 1, 0, 0, 0, 0]
            }
            for (sizeIndex, size) in format.sizes.enumerated() {
                let intervals = format.intervals.map { UInt32(UInt64($0.numerator) * 10_000_000 / UInt64($0.denominator)) }
                let frameBytes = UInt32(EmulatedWebcam.maximumFrameSize(format, size))
                let fastest = Double(format.intervals.first.map { $0.denominator / max(1, $0.numerator) } ?? 30)
                let slowest = Double(format.intervals.last.map { $0.denominator / max(1, $0.numerator) } ?? 30)
                formats += [UInt8(26 + 4 * intervals.count), 0x24, format.isCompressed ? 0x07 : 0x05, UInt8(sizeIndex + 1), 0]
                    + le16(UInt16(size.width)) + le16(UInt16(size.height))
                    + le32(UInt32(min(Double(UInt32.max), Double(frameBytes) * 8 * slowest)))
                    + le32(UInt32(min(Double(UInt32.max), Double(frameBytes) * 8 * fastest)))
                    + le32(frameBytes) + le32(intervals.first ?? 333_333) + [UInt8(intervals.count)]
                for interval in intervals { formats += le32(interval) }
            }
        }
        let inputHeaderLength = 13 + spec.formats.count
        body += [UInt8(inputHeaderLength), 0x24, 0x01, UInt8(spec.formats.count)]
            + le16(UInt16(inputHeaderLength + formats.count)) + [Self.streamingEndpoint, 0, Self.outputTerminal, 0, 0, 0, 1]
            + [UInt8](repeating: 0, count: spec.formats.count)
        body += formats
        switch spec.transfer {
        case .bulk:
            body += [7, 0x05, Self.streamingEndpoint, 0x02] + le16(UInt16(Self.bulkPacketSize)) + [0]
        case .isochronous(let sizes):
            for (i, size) in sizes.enumerated() {
                let (transactions, each) = Self.transactions(size)
                let encoded = UInt16(each) | UInt16(transactions - 1) << 11
                body += [9, 0x04, 1, UInt8(i + 1), 1, 0x0E, 0x02, 0x00, 0]
                body += [7, 0x05, Self.streamingEndpoint, 0x05] + le16(encoded) + [1]
            }
        }
        return [9, 0x02] + le16(UInt16(9 + body.count)) + [2, 1, 0, 0x80, 250] + body
    }

    /// A packet size as an isochronous endpoint states it: up to 1024 bytes per
    /// transaction, up to 3 transactions a microframe (USB 2.0 §5.9), so a size over 1024
    /// is carried as 2 or 3 equal transactions, rounded up.
    static func transactions(_ size: Int) -> (count: Int, bytes: Int) {
        let count = min(3, max(1, (size + 1023) / 1024))
        return (count, min(1024, (size + count - 1) / count))
    }

    /// The bytes a microframe an alternate setting of `size` really carries.
    static func carried(_ size: Int) -> Int { let t = transactions(size); return t.count * t.bytes }

    /// String descriptor `index` (0: the language list, US English).
    func string(_ index: UInt8) -> [UInt8]? {
        let text: String
        switch index {
        case 0: return [4, 0x03, 0x09, 0x04]
        case 1: text = spec.manufacturer
        case 2: text = spec.product
        case 3: guard let serial = spec.serial else { return nil }; text = serial
        default: return nil
        }
        let units = Array(text.utf16.prefix(126))
        return [UInt8(2 + 2 * units.count), 0x03] + units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    /// The format GUID of an uncompressed format (its four characters, then the Microsoft media subtype tail).
    static func guid(_ fourCC: FourCC) -> [UInt8] {
        let name: [UInt8] = fourCC == .grey ? Array("Y800".utf8) : Array("YUY2".utf8)
        return name + [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    }
}

func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
func le32(_ value: UInt32) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)] }
