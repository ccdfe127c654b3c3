import ParallaxGeometry

extension StereoDevice {
    /// The hardware cost of streaming `configuration` on both sides, computed before
    /// anything streams (see ``HardwareCost``).
    public func cost(of configuration: StereoConfiguration) -> HardwareCost {
        cost(streaming: streamingFormat(for: configuration), enabled: PerSide(repeating: true))
    }

    /// The cost of each enabled side streaming `format`: each USB camera is one stream on
    /// its bus; a side-by-side camera is one stream of twice the width; devices without a
    /// USB location cost nothing.
    func cost(streaming format: CaptureFormat, enabled: PerSide<Bool>, separateBuses: Bool = false) -> HardwareCost {
        var streams: [CostedStream] = []
        if let source = sideBySideSource {
            if enabled.left || enabled.right, let stream = Self.stream(of: source.identity, format: SideBySideView.fullFormat(of: format), side: nil) {
                streams.append(stream)
            }
        } else {
            for side in StereoSide.allCases where enabled[side] {
                guard var stream = Self.stream(of: constituents[side].identity, format: format, side: side) else { continue }
                if separateBuses { stream.bus += " (\(side))" }
                streams.append(stream)
            }
        }
        var cost = HardwareCost(streams: streams)
        cost.refusedAtStreamOnBefore = BandwidthRefusals.shared.contains(key(format))
        return cost
    }

    /// The cost if each camera had a bus of its own; `nil` when that changes nothing
    /// (a side-by-side camera, or cameras already on separate buses).
    func separateBusesCost(_ format: CaptureFormat) -> HardwareCost? {
        guard sideBySideSource == nil else { return nil }
        let buses = identities.both.compactMap { $0.usb?.bus }
        guard buses.count == 2, buses[0] == buses[1] else { return nil }
        return cost(streaming: format, enabled: PerSide(repeating: true), separateBuses: true)
    }

    static func stream(of identity: DeviceIdentity, format: CaptureFormat, side: StereoSide?) -> CostedStream? {
        guard let usb = identity.usb else { return nil }
        let speed = usb.speedMbps.flatMap(USBSpeed.init(megabitsPerSecond:)) ?? .high
        return CostedStream(format: format, bus: "usb bus \(usb.bus)", speed: speed,
                            offeredPacketSizes: usb.isochronousPacketSizes, side: side)
    }

    /// Shared configurations below cost 1.0 that give up as little of `configuration` as
    /// possible (never a larger size or a higher rate), least given up first: other pixel
    /// formats (MJPEG), smaller sizes, lower rates and frame-rate caps.
    public func alternatives(to configuration: StereoConfiguration, preferring preference: CostPreference? = nil,
                             limit: Int = 8) -> [CostAlternative] {
        let wanted = configuration.format
        let wantedRate = min(wanted.frameInterval.framesPerSecond, configuration.maximumFramesPerSecond ?? .infinity)
        var candidates: [StereoConfiguration] = []
        for shared in (try? sharedFormats()) ?? [] where shared.cost.runs {
            candidates.append(StereoConfiguration(format: shared.format))
        }
        // Caps on the requested format itself.
        for interval in V4L2CommonValues.intervals where interval.framesPerSecond < wantedRate {
            candidates.append(StereoConfiguration(format: wanted, maximumFramesPerSecond: interval.framesPerSecond))
        }
        let requested = streamingFormat(for: configuration)
        var seen = Set<CaptureFormat>()
        var result: [CostAlternative] = []
        for candidate in candidates {
            let streaming = streamingFormat(for: candidate)
            let rate = min(streaming.frameInterval.framesPerSecond, candidate.maximumFramesPerSecond ?? .infinity)
            guard streaming.size.pixelCount <= wanted.size.pixelCount,
                  rate <= wantedRate + 1e-9, streaming != requested else { continue }
            let cost = self.cost(streaming: streaming, enabled: PerSide(repeating: true))
            // What the user gets: the streamed format at the delivered rate. A cap the cameras
            // can be set to is the same alternative as that lower-rate format.
            var delivered = streaming
            delivered.frameInterval = FrameInterval(framesPerSecond: rate)
            guard cost.runs, seen.insert(delivered).inserted else { continue }
            let (penalty, change) = Self.penalty(of: streaming, rate: rate, against: wanted, rate: wantedRate,
                                                 capped: candidate.maximumFramesPerSecond != nil, preference: preference)
            result.append(CostAlternative(configuration: candidate, cost: cost, change: change, penalty: penalty))
        }
        return Array(result.sorted { ($0.penalty, $0.cost.cost) < ($1.penalty, $1.cost.cost) }.prefix(limit))
    }

    /// The configuration nearest to `configuration` whose cost is below 1.0, keeping what
    /// `preference` says; `configuration` itself when it already fits, `nil` when nothing does.
    public func reducingCost(of configuration: StereoConfiguration, preferring preference: CostPreference) -> StereoConfiguration? {
        if cost(of: configuration).runs { return configuration }
        return alternatives(to: configuration, preferring: preference, limit: 1).first?.configuration
    }

    /// How much a candidate gives up, and the change in words. Resolution and rate losses
    /// are fractions of what was asked; a preference weighs the other loss four times; a
    /// different pixel format costs 0.3 (a compressed stream must be decoded).
    static func penalty(of format: CaptureFormat, rate: Double, against wanted: CaptureFormat, rate wantedRate: Double,
                        capped: Bool, preference: CostPreference?) -> (Double, String) {
        let pixels = format.size.pixelCount
        let wantedPixels = wanted.size.pixelCount
        let resolutionLoss = 1 - pixels / wantedPixels
        let rateLoss = 1 - rate / wantedRate
        let (wr, wf): (Double, Double) = switch preference {
        case .resolution?: (4, 1)
        case .frameRate?: (1, 4)
        case nil: (1, 1)
        }
        var changes: [String] = []
        if format.fourCC != wanted.fourCC { changes.append("\(format.fourCC) instead of \(wanted.fourCC)") }
        if format.size != wanted.size { changes.append("\(format.size) instead of \(wanted.size)") }
        if rate < wantedRate - 1e-9 {
            changes.append(capped ? "capped at \(rate.formatted3) fps" : "\(rate.formatted3) fps instead of \(wantedRate.formatted3)")
        }
        let penalty = wr * resolutionLoss + wf * rateLoss + (format.fourCC != wanted.fourCC ? 0.3 : 0)
        return (penalty, changes.joined(separator: ", "))
    }

    /// The key under which a refusal at STREAMON is remembered: both cameras, the buses
    /// they are on (the same cameras on other buses share other bandwidth), and the format.
    func key(_ format: CaptureFormat) -> String {
        let cameras = sideBySideSource.map { [$0.identity] } ?? identities.both
        let ids = cameras.map { camera in camera.stableID + (camera.usb.map { "@bus\($0.bus)" } ?? "") }
        return ids.joined(separator: "+") + " " + format.description
    }
}

/// Camera pairs and formats the kernel refused at STREAMON (ENOSPC) although the estimate
/// said they fit, for the life of the process: the next estimate for them reports it.
final class BandwidthRefusals: Sendable {
    static let shared = BandwidthRefusals()
    private let keys = Locked<Set<String>>([])

    func insert(_ key: String) { _ = keys.withLock { $0.insert(key) } }
    func contains(_ key: String) -> Bool { keys.withLock { $0.contains(key) } }
}
