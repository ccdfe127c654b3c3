import ArgumentParser
import ParallaxCapture
import ParallaxGeometry

/// Where the two planned cameras are plugged in.
enum BusArgument: String, ExpressibleByArgument, CaseIterable {
    case shared, separate
}

/// The USB generation of the planned bus.
enum USBArgument: String, ExpressibleByArgument, CaseIterable {
    case usb2 = "2", usb3 = "3"
    var speed: USBSpeed { self == .usb2 ? .high : .superSpeed(megabitsPerSecond: 5000) }
}

/// `parallax cost`: the hardware cost of two cameras before they are bought or plugged in.
struct CostCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cost",
        abstract: "The USB hardware cost of running two cameras at once (below 1.0 runs).",
        discussion: """
            Each uncompressed stream needs width × height × bytes per pixel × fps ÷ 8000 bytes \
            per 125 µs microframe plus a 12-byte UVC header, rounded up to the camera's next \
            packet size (a typical UVC webcam's sizes: 192 … 3060 bytes on USB 2.0); a \
            compressed stream (MJPG) takes the largest packet, as uvcvideo asks. The streams on \
            one bus share its periodic budget: 6000 bytes per microframe on USB 2.0 (80 % of \
            7500), 56,250 on USB 3 (90 % after 8b/10b). The cost is the busiest bus's share, \
            or more than 1.0 when no packet holds a stream. A cost of 1.0 or more is refused by \
            a stereo device before streaming; the alternatives that fit are listed.

            Exit status: 0 when the pair runs, 1 when it is refused (the report and the \
            alternatives are printed either way), 64 for a usage error.

            Examples:
              parallax cost --left 1280x720@30:YUYV --right 1280x720@30:YUYV
              parallax cost --left 800x600@25:YUYV --right 800x600@25:YUYV --bus separate --json
            """)

    @Option(name: .long, help: "Left camera format WxH@FPS:FOURCC (FOURCC defaults to YUYV).", transform: FormatArgument.parse)
    var left: FormatArgument

    @Option(name: .long, help: "Right camera format WxH@FPS:FOURCC.", transform: FormatArgument.parse)
    var right: FormatArgument

    @Option(name: .customLong("max-fps"), parsing: .unconditional, help: "A frame-rate cap both cameras stream at.")
    var maxFPS: Double?

    @Option(name: .long, help: "shared: both cameras on one USB bus; separate: one bus each.")
    var bus: BusArgument = .shared

    @Option(name: .long, help: "USB generation of the bus: 2 (high speed) or 3 (SuperSpeed).")
    var usb: USBArgument = .usb2

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func validate() throws {
        try FormatArgument.checkFrameRateCap(maxFPS)
    }

    func run() throws {
        let rig = PlannedRig(formats: PerSide(left: left.format, right: right.format), sharedBus: bus == .shared,
                             speed: usb.speed, maximumFramesPerSecond: maxFPS)
        let cost = rig.cost
        let alternatives = cost.runs ? [] : rig.alternatives()
        if json {
            print(Self.json(rig: rig, cost: cost, alternatives: alternatives).serialized(indent: 0))
        } else {
            printReport(rig: rig, cost: cost, alternatives: alternatives)
        }
        // Scripts tell a refused pair by the status; the report is printed either way.
        if !cost.runs { throw ExitCode.failure }
    }

    private func printReport(rig: PlannedRig, cost: HardwareCost, alternatives: [PlannedAlternative]) {
        print("\(rig.description), \(rig.speed)")
        for stream in cost.streams {
            let packet = stream.packetBytes.map { "\($0)-byte packets" } ?? "no packet holds it (largest \(stream.largestPacketBytes))"
            print("  \(stream.side.map(\.description) ?? "camera") \(stream.format): \(stream.bytesPerInterval) bytes per microframe → \(packet), \(stream.bus)")
        }
        print("cost \(String(format: "%.3f", cost.cost)): \(cost.runs ? "runs" : "refused (must stay below 1.0)") — \(cost.explanation)")
        if !alternatives.isEmpty {
            print("alternatives that fit, least given up first:")
            for alternative in alternatives {
                print("  \(alternative.rig.streaming(.left)) + \(alternative.rig.streaming(.right))"
                      + "\(alternative.rig.sharedBus ? "" : " on separate buses")  cost \(String(format: "%.3f", alternative.cost.cost))  (\(alternative.change))")
            }
        } else if !cost.runs {
            print("no alternative fits")
        }
    }

    static func json(rig: PlannedRig, cost: HardwareCost, alternatives: [PlannedAlternative]) -> JSONValue {
        func number(_ value: Double) -> JSONValue { .number((value * 1e6).rounded() / 1e6) }
        let cameras: [JSONValue] = cost.streams.map { stream in
            .object(JSONObject([
                ("side", .string(stream.side?.description ?? "camera")),
                ("format", .string(stream.format.description)),
                ("bytes_per_microframe", .number(Double(stream.bytesPerInterval))),
                ("packet_bytes", stream.packetBytes.map { .number(Double($0)) } ?? .null),
                ("bus", .string(stream.bus)),
            ]))
        }
        let listed: [JSONValue] = alternatives.map { alternative in
            .object(JSONObject([
                ("left", .string(alternative.rig.streaming(.left).description)),
                ("right", .string(alternative.rig.streaming(.right).description)),
                ("bus", .string(alternative.rig.sharedBus ? "shared" : "separate")),
                ("cost", number(alternative.cost.cost)),
                ("change", .string(alternative.change)),
            ]))
        }
        return .object(JSONObject([
            ("cost", number(cost.cost)),
            ("runs", .bool(cost.runs)),
            ("usb", .string(rig.speed.description)),
            ("explanation", .string(cost.explanation)),
            ("cameras", .array(cameras)),
            ("alternatives", .array(listed)),
        ]))
    }
}
