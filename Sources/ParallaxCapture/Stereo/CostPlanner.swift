import ParallaxGeometry

/// The hardware cost of two cameras before anyone buys or plugs them in: formats on a
/// USB bus of a given speed, shared or one bus each, with the typical packet sizes of
/// that speed (``USBSpeed/typicalPacketSizes``). `parallax cost` prints it.
public struct PlannedRig: Hashable, Sendable, CustomStringConvertible {
    /// The formats of the two cameras.
    public var formats: PerSide<CaptureFormat>
    /// True when both cameras are on one bus.
    public var sharedBus: Bool
    /// The bus speed.
    public var speed: USBSpeed
    /// A frame-rate cap both cameras stream at (the cameras are assumed to offer it).
    public var maximumFramesPerSecond: Double?

    /// A planned rig.
    public init(formats: PerSide<CaptureFormat>, sharedBus: Bool, speed: USBSpeed, maximumFramesPerSecond: Double? = nil) {
        self.formats = formats
        self.sharedBus = sharedBus
        self.speed = speed
        self.maximumFramesPerSecond = maximumFramesPerSecond
    }

    /// The format a camera streams: its own, at the cap's rate when the cap is lower.
    public func streaming(_ side: StereoSide) -> CaptureFormat {
        var format = formats[side]
        if let cap = maximumFramesPerSecond, cap < format.frameInterval.framesPerSecond {
            format.frameInterval = FrameInterval(framesPerSecond: cap)
        }
        return format
    }

    /// The streams as the cost model sees them (bus `usb bus 1`, and `usb bus 2` when separate).
    public var streams: [CostedStream] {
        StereoSide.allCases.map { side in
            CostedStream(format: streaming(side), bus: sharedBus || side == .left ? "usb bus 1" : "usb bus 2",
                         speed: speed, side: side)
        }
    }

    /// The cost of the rig.
    public var cost: HardwareCost { HardwareCost(streams: streams) }

    /// `left 1280x720@30:YUYV, right 1280x720@30:YUYV on one USB 2.0 bus`.
    public var description: String {
        "left \(streaming(.left)), right \(streaming(.right)) on \(sharedBus ? "one bus" : "separate buses")"
    }

    /// Rigs under cost 1.0 that give up as little as possible, least first: MJPEG, smaller
    /// common sizes, lower common rates (and both), applied to both cameras alike, and
    /// separate buses.
    public func alternatives(limit: Int = 8) -> [PlannedAlternative] {
        var candidates: [(rig: PlannedRig, change: String)] = []
        func variant(_ change: (CaptureFormat) -> CaptureFormat?, _ words: String, separate: Bool = false) {
            var rig = self
            rig.maximumFramesPerSecond = nil
            for side in StereoSide.allCases {
                guard let changed = change(streaming(side)) else { return }
                rig.formats[side] = changed
            }
            if separate { rig.sharedBus = false }
            candidates.append((rig, words))
        }
        if sharedBus { variant({ $0 }, "separate buses", separate: true) }
        variant({ f in f.fourCC == .mjpeg ? nil : CaptureFormat(fourCC: .mjpeg, size: f.size, frameInterval: f.frameInterval) },
                "MJPG")
        // Pixel counts in Double: a format parsed from text may be far larger than any camera's,
        // and its width × height must not overflow (the values fuzz target found 1280x7.3e16).
        let largest = StereoSide.allCases.map { streaming($0).size.pixelCount }.max() ?? 0
        let fastest = StereoSide.allCases.map { streaming($0).frameInterval.framesPerSecond }.max() ?? 0
        let sizes = V4L2CommonValues.sizes.filter { $0.pixelCount < largest }
        let rates = V4L2CommonValues.intervals.filter { $0.framesPerSecond < fastest - 1e-9 }
        for size in sizes {
            variant({ CaptureFormat(fourCC: $0.fourCC, size: size, frameInterval: $0.frameInterval) }, "\(size)")
            for rate in rates {
                variant({ CaptureFormat(fourCC: $0.fourCC, size: size, frameInterval: rate) },
                        "\(size) at \(rate.framesPerSecond.formatted3) fps")
            }
        }
        for rate in rates {
            variant({ CaptureFormat(fourCC: $0.fourCC, size: $0.size, frameInterval: rate) }, "\(rate.framesPerSecond.formatted3) fps")
        }
        var seen = Set<PlannedRig>()
        var result: [PlannedAlternative] = []
        for (rig, change) in candidates where rig.cost.runs && seen.insert(rig).inserted {
            var penalty = 0.0
            for side in StereoSide.allCases {
                penalty += StereoDevice.penalty(of: rig.streaming(side), rate: rig.streaming(side).frameInterval.framesPerSecond,
                                                against: streaming(side), rate: streaming(side).frameInterval.framesPerSecond,
                                                capped: false, preference: nil).0
            }
            // Moving a camera to another controller is a change of hardware, not of format.
            if !rig.sharedBus && sharedBus { penalty += 0.5 }
            result.append(PlannedAlternative(rig: rig, cost: rig.cost, change: change, penalty: penalty / 2))
        }
        return Array(result.sorted { ($0.penalty, $0.cost.cost) < ($1.penalty, $1.cost.cost) }.prefix(limit))
    }
}

/// A planned rig that fits, and what it gives up.
public struct PlannedAlternative: Hashable, Sendable {
    /// The rig.
    public var rig: PlannedRig
    /// Its cost (below 1.0).
    public var cost: HardwareCost
    /// The change in words (`MJPG`, `640x480`, `separate buses`).
    public var change: String
    /// How much it gives up, averaged over the two cameras (0 is nothing).
    public var penalty: Double
}
