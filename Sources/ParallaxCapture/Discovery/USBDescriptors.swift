/// Reads the USB descriptors sysfs exposes (`/sys/bus/usb/devices/<dev>/descriptors`: the
/// device descriptor followed by the configuration descriptors, exactly as the camera sent
/// them; USB 2.0 §9.6, UVC 1.5 §3.9).
enum USBDescriptors {
    /// The isochronous IN packet sizes, in bytes per service interval, of every alternate
    /// setting of the camera's video streaming interfaces (class 0x0E, subclass 0x02),
    /// ascending and without repeats. These are the sizes uvcvideo chooses from at
    /// STREAMON.
    ///
    /// High speed: `wMaxPacketSize` bits 0–10 are the packet size and bits 11–12 the extra
    /// transactions per microframe, so the bytes are size × (1 + extra). SuperSpeed: the
    /// endpoint's companion descriptor (type 0x30) states `wBytesPerInterval` directly.
    /// Malformed input (a zero or overlong length) ends the walk; what was read stands.
    static func videoStreamingPacketSizes(_ bytes: [UInt8]) -> [Int] {
        var sizes: Set<Int> = []
        var offset = 0
        var inVideoStreaming = false
        var lastIsochronousInSize: Int?
        while offset + 2 <= bytes.count {
            let length = Int(bytes[offset]), type = bytes[offset + 1]
            guard length >= 2, offset + length <= bytes.count else { break }
            // Every field read below is inside [offset, offset + length), checked by the length tests.
            switch type {
            case 0x04 where length >= 9:  // interface
                inVideoStreaming = bytes[offset + 5] == 0x0E && bytes[offset + 6] == 0x02
                lastIsochronousInSize = nil
            case 0x05 where length >= 7 && inVideoStreaming:  // endpoint
                let address = bytes[offset + 2], attributes = bytes[offset + 3]
                lastIsochronousInSize = nil
                if attributes & 0x03 == 0x01 && address & 0x80 != 0 {
                    let raw = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8
                    let size = (raw & 0x7FF) * (1 + ((raw >> 11) & 0x3))
                    if size > 0 {
                        sizes.insert(size)
                        lastIsochronousInSize = size
                    }
                }
            case 0x30 where length >= 6 && inVideoStreaming:  // SuperSpeed endpoint companion
                let perInterval = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8
                if let replaced = lastIsochronousInSize, perInterval > 0 {
                    sizes.remove(replaced)
                    sizes.insert(perInterval)
                    lastIsochronousInSize = nil
                }
            default:
                break
            }
            offset += length
        }
        return sizes.sorted()
    }

    /// The device clock frequency of a UVC camera's Video Control interface header
    /// (`dwClockFrequency`, UVC 1.0/1.1 §3.7.2; deprecated in 1.5 but still sent), in hertz;
    /// nil when there is no such header or it says 0.
    static func videoClockFrequency(_ bytes: [UInt8]) -> Int? {
        var offset = 0
        var inVideoControl = false
        while offset + 2 <= bytes.count {
            let length = Int(bytes[offset]), type = bytes[offset + 1]
            guard length >= 2, offset + length <= bytes.count else { break }
            if type == 0x04 && length >= 9 {
                inVideoControl = bytes[offset + 5] == 0x0E && bytes[offset + 6] == 0x01
            } else if type == 0x24 && inVideoControl && length >= 11 && bytes[offset + 2] == 0x01 {
                let hz = Int(bytes[offset + 7]) | Int(bytes[offset + 8]) << 8 | Int(bytes[offset + 9]) << 16 | Int(bytes[offset + 10]) << 24
                return hz > 0 ? hz : nil
            }
            offset += length
        }
        return nil
    }
}
