import FuzzSupport
import ParallaxCapture

/// The MCAP reader and the ROS 2 messages in it, on any bytes: a file that opens must read
/// to its end or stop with an `MCAPReadError`, every message handed over must start inside
/// the input (in a zstd chunk: the chunk must), and decoding it as its schema's type must succeed or throw a `CDRError`. The
/// first input byte chooses whether a file cut short is read (to its last whole record).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMCAP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    guard let chooser = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    guard let file = try? MCAPFile(bytes: input, name: "input.mcap", allowingTruncation: chooser & 1 == 1) else { return 0 }
    var messages = 0
    do {
        try file.forEachMessage { message in
            messages += 1
            Fuzz.expect(message.fileOffset < input.count, "message \(messages) at \(message.fileOffset), in \(input.count) bytes")
            switch file.schemas[message.channel.schemaID]?.name {
            case "sensor_msgs/msg/Image": _ = try? ROS2.Image(cdr: message.data)
            case "sensor_msgs/msg/CompressedImage": _ = try? ROS2.CompressedImage(cdr: message.data)
            case "sensor_msgs/msg/CameraInfo": _ = try? ROS2.CameraInfo(cdr: message.data)
            default: break
            }
        }
    } catch is MCAPReadError {
        return 0
    } catch {
        Fuzz.fail("not an MCAPReadError: \(error)")
    }
    if let statistics = file.statistics, file.isComplete {
        // A summary may disagree with the data (it is the writer's word), but never crash us.
        _ = statistics.channelMessageCounts.values.reduce(0, &+)
    }
    return 0
}

@_cdecl("mcap_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    Fuzz.run(argc, argv, fuzzMCAP)
}
