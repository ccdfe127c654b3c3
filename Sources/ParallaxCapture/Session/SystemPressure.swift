import Foundation

/// How hard a stereo session is pressed, from its own work and the machine's state, in
/// the five levels of AVFoundation's system pressure.
public enum PressureLevel: Int, Hashable, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Everything keeps up with room to spare.
    case nominal = 0
    /// Keeping up, with little room.
    case fair = 1
    /// At the limit: pairs or frames are being lost, or will be soon. A session that may
    /// adapt lowers its frame rate from here.
    case serious = 2
    /// Not keeping up: a large share of the work is lost.
    case critical = 3
    /// The machine is about to protect itself (a thermal zone at its critical trip point):
    /// the session stops and says why.
    case shutdown = 4

    /// Lower levels first.
    public static func < (a: PressureLevel, b: PressureLevel) -> Bool { a.rawValue < b.rawValue }

    /// `nominal`, `fair`, `serious`, `critical`, `shutdown`.
    public var description: String {
        switch self {
        case .nominal: "nominal"
        case .fair: "fair"
        case .serious: "serious"
        case .critical: "critical"
        case .shutdown: "shutdown"
        }
    }
}

/// What a pressure level was computed from, over one measurement window.
public struct PressureFactors: Hashable, Sendable, CustomStringConvertible {
    /// Mean rectification time per pair over the frame interval the device delivers
    /// (1.0: the session spends the whole interval resampling).
    public var processingLoad: Double
    /// Mean time the consumer spent per pair over the frame interval (1.0: the consumer
    /// takes exactly as long as the cameras give it).
    public var consumerLoad: Double
    /// Pairs waiting for the consumer at the end of the window over the queue's capacity.
    public var queueFill: Double
    /// Frames the cameras lost (driver drops, corrupt buffers) and frames in pairs the
    /// session had to drop, over the frames that arrived, in the last
    /// ``PressurePolicy/lossHorizonWindows`` windows (a longer view than one window, so a
    /// single lost frame is not mistaken for a trend).
    public var lossRate: Double
    /// Degrees Celsius left before the hottest thermal zone's critical trip point, when
    /// the machine exposes one (`/sys/class/thermal`).
    public var thermalHeadroomCelsius: Double?
    /// The lowest ratio of a CPU's allowed maximum frequency to its hardware maximum
    /// (`scaling_max_freq / cpuinfo_max_freq`), when the machine exposes them; below 1
    /// means the CPU is being held back.
    public var cpuFrequencyLimit: Double?

    /// All zero: nothing measured yet.
    public init(processingLoad: Double = 0, consumerLoad: Double = 0, queueFill: Double = 0, lossRate: Double = 0,
                thermalHeadroomCelsius: Double? = nil, cpuFrequencyLimit: Double? = nil) {
        self.processingLoad = processingLoad
        self.consumerLoad = consumerLoad
        self.queueFill = queueFill
        self.lossRate = lossRate
        self.thermalHeadroomCelsius = thermalHeadroomCelsius
        self.cpuFrequencyLimit = cpuFrequencyLimit
    }

    /// For example `processing 0.12, consumer 1.40, queue 1.00, loss 31.0 %`.
    public var description: String {
        var text = String(format: "processing %.2f, consumer %.2f, queue %.2f, loss %.1f %%",
                          processingLoad, consumerLoad, queueFill, lossRate * 100)
        if let headroom = thermalHeadroomCelsius { text += String(format: ", thermal headroom %.1f °C", headroom) }
        if let limit = cpuFrequencyLimit, limit < 1 { text += String(format: ", CPU held at %.0f %% of its maximum", limit * 100) }
        return text
    }
}

/// The thresholds that turn ``PressureFactors`` into a ``PressureLevel``, the hysteresis,
/// and whether the session may lower its frame rate.
///
/// A window's level is the highest any factor reaches:
///
/// | factor | fair from | serious from | critical from | shutdown |
/// |---|---|---|---|---|
/// | load (processing or consumer, per frame interval) | 0.6 | 0.85 | 1.0 | – |
/// | loss rate | 1 % | 5 % | 15 % | – |
/// | queue fill (newest-wins only) | 0.5 | – | – | – |
/// | thermal headroom | ≤ 20 °C | ≤ 10 °C | ≤ 5 °C | ≤ 2 °C |
/// | CPU frequency limit | < 0.9 | < 0.6 | – | – |
///
/// The level rises at once; it falls one step at a time, and only after
/// ``coolDownWindows`` consecutive windows whose own level is lower. When adapting, the
/// frame rate is lowered a step each time a window's work (every factor but the loss rate)
/// reaches serious, but not again before a whole window has run at the new rate; it is
/// raised a step after ``raiseAfterSeconds`` of nominal windows.
public struct PressurePolicy: Hashable, Sendable {
    /// Length of one measurement window (seconds).
    public var windowSeconds: Double
    /// Windows the loss rate is counted over.
    public var lossHorizonWindows: Int
    /// Consecutive calmer windows before the level falls a step.
    public var coolDownWindows: Int
    /// Lower the frame-rate cap step by step while the level is serious or worse, and raise
    /// it again after ``raiseAfterSeconds`` at nominal.
    public var adaptsFrameRate: Bool
    /// Each lowering multiplies the frame rate by this (each raising divides by it).
    public var frameRateStep: Double
    /// The frame rate is never lowered below this (frames per second).
    public var minimumFramesPerSecond: Double
    /// Time at nominal before the frame rate is raised a step (seconds).
    public var raiseAfterSeconds: Double
    /// Read thermal zones and CPU frequency limits from sysfs.
    public var readsMachineState: Bool
    /// Stop the session at ``PressureLevel/shutdown``.
    public var stopsAtShutdown: Bool
    /// Where the machine state is read: `/sys`, or (tests) a folder laid out like it.
    package var machineStateRoot = "/sys"

    /// A policy; see each property for the defaults.
    public init(windowSeconds: Double = 0.5, lossHorizonWindows: Int = 8, coolDownWindows: Int = 4, adaptsFrameRate: Bool = false,
                frameRateStep: Double = 0.75, minimumFramesPerSecond: Double = 1, raiseAfterSeconds: Double = 3,
                readsMachineState: Bool = true, stopsAtShutdown: Bool = true) {
        self.windowSeconds = windowSeconds
        self.lossHorizonWindows = max(1, lossHorizonWindows)
        self.coolDownWindows = max(1, coolDownWindows)
        self.adaptsFrameRate = adaptsFrameRate
        self.frameRateStep = min(max(frameRateStep, 0.1), 0.95)
        self.minimumFramesPerSecond = max(0.1, minimumFramesPerSecond)
        self.raiseAfterSeconds = raiseAfterSeconds
        self.readsMachineState = readsMachineState
        self.stopsAtShutdown = stopsAtShutdown
    }

    /// The level one window's factors reach on their own (no hysteresis).
    public func level(of f: PressureFactors) -> PressureLevel {
        var level = PressureLevel.nominal
        func raise(_ to: PressureLevel) { if to > level { level = to } }
        let load = max(f.processingLoad, f.consumerLoad)
        if load >= 1.0 { raise(.critical) } else if load >= 0.85 { raise(.serious) } else if load >= 0.6 { raise(.fair) }
        if f.lossRate >= 0.15 { raise(.critical) } else if f.lossRate >= 0.05 { raise(.serious) } else if f.lossRate >= 0.01 { raise(.fair) }
        // A full queue at the end of one window is a moment, not a trend: it only says fair.
        if f.queueFill >= 0.5 { raise(.fair) }
        if let headroom = f.thermalHeadroomCelsius {
            if headroom <= 2 { raise(.shutdown) } else if headroom <= 5 { raise(.critical) } else if headroom <= 10 {
                raise(.serious)
            } else if headroom <= 20 { raise(.fair) }
        }
        if let limit = f.cpuFrequencyLimit {
            if limit < 0.6 { raise(.serious) } else if limit < 0.9 { raise(.fair) }
        }
        return level
    }
}

/// The level with hysteresis, window after window: deterministic, so tests drive it with
/// made-up factors.
public struct PressureTracker: Sendable {
    /// The policy.
    public let policy: PressurePolicy
    /// The level now.
    public private(set) var level = PressureLevel.nominal
    private var calmerWindows = 0

    /// A tracker at nominal.
    public init(policy: PressurePolicy) { self.policy = policy }

    /// Takes one window's factors; returns the new level when it changed.
    public mutating func update(_ factors: PressureFactors) -> PressureLevel? {
        let window = policy.level(of: factors)
        if window > level {
            level = window
            calmerWindows = 0
            return level
        }
        guard window < level else {
            calmerWindows = 0
            return nil
        }
        calmerWindows += 1
        guard calmerWindows >= policy.coolDownWindows else { return nil }
        calmerWindows = 0
        level = PressureLevel(rawValue: level.rawValue - 1) ?? .nominal
        return level
    }
}

/// Reads the machine's thermal zones and CPU frequency limits from sysfs.
package struct MachineState {
    /// `/sys` or a test folder laid out like it.
    package var sysRoot = "/sys"

    /// The machine state under `sysRoot`.
    package init(sysRoot: String = "/sys") {
        self.sysRoot = sysRoot
    }

    /// Degrees left before the nearest critical trip point over all thermal zones, or
    /// `nil` when no zone reports both a temperature and a critical trip.
    package func thermalHeadroomCelsius() -> Double? {
        let base = sysRoot + "/class/thermal"
        guard let zones = try? FileManager.default.contentsOfDirectory(atPath: base) else { return nil }
        var headroom: Double?
        for zone in zones where zone.hasPrefix("thermal_zone") {
            let folder = base + "/" + zone
            guard let temperature = Self.number(folder + "/temp") else { continue }
            for trip in 0..<16 {
                guard let kind = Self.text(folder + "/trip_point_\(trip)_type") else { break }
                guard kind == "critical", let limit = Self.number(folder + "/trip_point_\(trip)_temp") else { continue }
                let left = (limit - temperature) / 1000
                headroom = min(headroom ?? left, left)
            }
        }
        return headroom
    }

    /// The lowest `scaling_max_freq / cpuinfo_max_freq` over the CPUs, or `nil`.
    package func cpuFrequencyLimit() -> Double? {
        let base = sysRoot + "/devices/system/cpu"
        guard let cpus = try? FileManager.default.contentsOfDirectory(atPath: base) else { return nil }
        var lowest: Double?
        for cpu in cpus where cpu.hasPrefix("cpu") && cpu.dropFirst(3).allSatisfy(\.isNumber) && cpu.count > 3 {
            let folder = base + "/" + cpu + "/cpufreq"
            guard let allowed = Self.number(folder + "/scaling_max_freq"), let hardware = Self.number(folder + "/cpuinfo_max_freq"),
                  hardware > 0 else { continue }
            lowest = min(lowest ?? 1, allowed / hardware)
        }
        return lowest
    }

    private static func text(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func number(_ path: String) -> Double? { text(path).flatMap(Double.init) }
}
