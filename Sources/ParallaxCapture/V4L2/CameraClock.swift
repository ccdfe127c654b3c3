/// One entry of uvcvideo's metadata (`V4L2_META_FMT_UVC`): for a payload whose header
/// brought a new source clock reading, when the host received it and what the header said.
///
/// Layout per entry (little-endian, unaligned): `u64` host CLOCK_MONOTONIC nanoseconds,
/// `u16` USB frame number, the header's `bHeaderLength` and `bmHeaderInfo` bytes, then the
/// presentation time (4 bytes, when `bmHeaderInfo` bit 2 is set) and the source clock
/// reference (6 bytes, bit 3: a 32-bit device clock reading and an 11-bit USB frame
/// number). uvcvideo stores only those standard fields, so an entry's size follows from
/// the flags, whatever `bHeaderLength` says.
public struct UVCMetadataEntry: Hashable, Sendable {
    /// When the host processed the payload (CLOCK_MONOTONIC nanoseconds).
    public var hostNanoseconds: Int64
    /// The host's USB frame number then (0 where the host controller gives none).
    public var usbFrame: UInt16
    /// The payload header's flags (`bmHeaderInfo`).
    public var flags: UInt8
    /// The presentation time: the device clock when the frame's exposure began.
    public var presentationTime: UInt32?
    /// The device clock when the payload left the camera (the source clock reference's STC).
    public var sourceClock: UInt32?

    /// Parses a metadata buffer (`bytesused` bytes); stops at the first entry cut short.
    public static func entries(in bytes: UnsafeRawBufferPointer) -> [UVCMetadataEntry] {
        var found: [UVCMetadataEntry] = []
        var offset = 0
        func value<T: FixedWidthInteger>(_ type: T.Type, at position: Int) -> T {
            var result: T = 0
            for i in 0..<MemoryLayout<T>.size { result |= T(bytes[position + i]) << (8 * i) }
            return result
        }
        while offset + 12 <= bytes.count {
            let flags = bytes[offset + 11]
            let hasPTS = flags & 0x04 != 0, hasSCR = flags & 0x08 != 0
            let size = 12 + (hasPTS ? 4 : 0) + (hasSCR ? 6 : 0)
            guard offset + size <= bytes.count else { break }
            var entry = UVCMetadataEntry(hostNanoseconds: Int64(bitPattern: value(UInt64.self, at: offset)),
                                         usbFrame: value(UInt16.self, at: offset + 8), flags: flags)
            var field = offset + 12
            if hasPTS {
                entry.presentationTime = value(UInt32.self, at: field)
                field += 4
            }
            if hasSCR { entry.sourceClock = value(UInt32.self, at: field) }
            found.append(entry)
            offset += size
        }
        return found
    }
}

/// A camera's own clock mapped onto the host's CLOCK_MONOTONIC, fitted from pairs of
/// (device clock reading, host time) — each payload's source clock reference and when
/// the host received it (uvcvideo's metadata).
///
/// A reading reaches the host after a delay that is never negative and varies (the bus,
/// the host controller, interrupt handling). So the host time is a line in the device
/// time *plus* that delay, and the line lies under every point: the fit is the line under
/// all points that passes closest to them on average, which is an edge of their lower
/// convex hull — the one spanning the points' mean device time (Moon, Skelly and Towsley,
/// "Estimation and removal of clock skew from network delay measurements", 1999). It
/// needs no USB frame numbers (some hosts give none) and no header on every payload.
/// Its offset keeps the smallest delay seen, the same for every frame of the camera.
///
/// The 32-bit device clock wraps (every 89 s at 48 MHz); readings are unwrapped against
/// the previous one, and a presentation time against the latest reading (it precedes it
/// by an exposure and a read-out, far less than a wrap).
public struct CameraClockFit: Sendable {
    /// The device clock's nominal frequency (UVC's `dwClockFrequency`).
    public let frequencyHz: Double
    /// How long a history the fit keeps.
    public let windowNanoseconds: Int64
    /// Below this span of readings only the offset is fitted, from the last second's
    /// readings: over a short span the delays' scatter would tilt the line more than any
    /// crystal's drift does, and a drift of d ppm moves a one-second-old offset by d µs.
    public let driftSpanNanoseconds: Int64
    /// Largest drift believed, in parts per million (crystals are within ±100 ppm; a steeper
    /// hull edge comes from too few points, and the offset alone is kept instead).
    public static let greatestDriftPPM = 1000.0

    /// Points kept: device time in ns (unwrapped, at the nominal rate) from `origin`, and
    /// host minus device time.
    private var points: [(device: Double, residual: Double)] = []
    private var origin: Int64?
    private var lastRaw: UInt32?
    private var unwrapped: Int64 = 0
    private var line: (offset: Double, slope: Double)?
    /// Readings set aside as impossible (host time before the fitted line by more than `rejectNanoseconds`).
    public private(set) var rejected = 0
    /// A reading this far under the fitted line is taken to be a corrupt header.
    public var rejectNanoseconds: Double = 5_000_000

    /// An empty fit for a clock of `frequencyHz`.
    public init(frequencyHz: Double, windowNanoseconds: Int64 = 30_000_000_000, driftSpanNanoseconds: Int64 = 2_000_000_000) {
        self.frequencyHz = frequencyHz
        self.windowNanoseconds = windowNanoseconds
        self.driftSpanNanoseconds = driftSpanNanoseconds
    }

    /// The fitted rate error of the device clock against the host's, parts per million
    /// (positive: the camera's clock runs fast; 0 until the readings span
    /// ``driftSpanNanoseconds``); nil before any reading.
    public var driftPPM: Double? { line.map { (1 / (1 + $0.slope) - 1) * 1e6 } }

    /// True once there is at least one reading.
    public var isReady: Bool { line != nil }

    private var ticksToNanoseconds: Double { 1e9 / frequencyHz }

    /// Device ticks of `raw` unwrapped near the latest reading.
    private func unwrap(_ raw: UInt32) -> Int64? {
        guard let lastRaw else { return nil }
        return unwrapped &+ Int64(Int32(bitPattern: raw &- lastRaw))
    }

    /// Adds a reading: the device clock `raw` was received at `hostNanoseconds`.
    public mutating func add(deviceClock raw: UInt32, hostNanoseconds: Int64) {
        add(readings: [(raw, hostNanoseconds)])
    }

    /// Adds a batch of readings in the order they were taken (one frame's metadata), then
    /// fits once. Of a batch only the reading with the shortest delay is kept: the others lie
    /// above it and the line is fitted under all of them.
    public mutating func add(readings: [(deviceClock: UInt32, hostNanoseconds: Int64)]) {
        guard let newest = readings.last?.hostNanoseconds else { return }
        // Half a wrap without readings (a camera that stopped): the counter cannot be
        // unwrapped across the gap, so the fit starts again.
        if let lastHost, Double(newest - lastHost) * frequencyHz / 1e9 > Double(1 << 30) { reset() }
        var best: (device: Double, residual: Double)?
        for (raw, host) in readings {
            let ticks = unwrap(raw) ?? Int64(raw)
            if origin == nil { origin = ticks }
            let device = Double(ticks - (origin ?? 0)) * ticksToNanoseconds
            let residual = Double(host) - device
            if let line, residual < line.offset + line.slope * device - rejectNanoseconds {
                rejected += 1
                continue
            }
            if let last = points.last, device < last.device { continue }  // behind the history: not fitted
            (lastRaw, unwrapped, lastHost) = (raw, ticks, host)
            if best == nil || residual - (line?.slope ?? 0) * device < best!.residual - (line?.slope ?? 0) * best!.device {
                best = (device, residual)
            }
        }
        guard let best else {
            // A clock that stepped (or a fit anchored on a corrupt first reading) rejects every
            // batch: after a few such batches in a row the fit starts again from the readings.
            refusedBatches += 1
            if refusedBatches >= Self.batchesBeforeRestart {
                reset()
                add(readings: readings)
            }
            return
        }
        refusedBatches = 0
        points.append(best)
        if let first = points.first, best.device - first.device > Double(windowNanoseconds) {
            points.removeFirst(points.firstIndex { best.device - $0.device <= Double(windowNanoseconds) } ?? 0)
        }
        refit()
    }

    /// Batches in a row with no reading fitted after which the fit starts again.
    public static let batchesBeforeRestart = 8
    /// How many times the fit started again (a step in the camera's clock, a long gap).
    public private(set) var restarts = 0
    private var refusedBatches = 0
    private var lastHost: Int64?

    private mutating func reset() {
        points = []
        (origin, lastRaw, unwrapped, line, lastHost, refusedBatches) = (nil, nil, 0, nil, nil, 0)
        restarts += 1
    }

    /// The host time (CLOCK_MONOTONIC nanoseconds) of device clock reading `raw` (a
    /// presentation time), or nil before any reading.
    public func hostNanoseconds(ofDeviceClock raw: UInt32) -> Int64? {
        guard let line, let ticks = unwrap(raw), let origin else { return nil }
        let device = Double(ticks - origin) * ticksToNanoseconds
        return Int64((device + line.offset + line.slope * device).rounded())
    }

    /// The line under every point closest to them on average: the slope of the lower hull's
    /// edge that spans the mean device time, then the lowest offset under that slope (the
    /// offset alone, from the last second's readings, below ``driftSpanNanoseconds``).
    private mutating func refit() {
        guard let first = points.first, let last = points.last else { return }
        if last.device - first.device < Double(driftSpanNanoseconds) || points.count < 3 {
            line = (points.filter { last.device - $0.device <= 1e9 }.map(\.residual).min() ?? last.residual, 0)
            return
        }
        var hull: [(device: Double, residual: Double)] = []
        for p in points {
            while hull.count >= 2 {
                let a = hull[hull.count - 2], b = hull[hull.count - 1]
                // Keep b only if it lies strictly under the segment a → p.
                let cross = (b.device - a.device) * (p.residual - a.residual) - (b.residual - a.residual) * (p.device - a.device)
                if cross <= 0 { hull.removeLast() } else { break }
            }
            hull.append(p)
        }
        let mean = points.reduce(0) { $0 + $1.device } / Double(points.count)
        var slope = 0.0
        for (a, b) in zip(hull, hull.dropFirst()) where a.device <= mean && mean <= b.device && b.device > a.device {
            slope = (b.residual - a.residual) / (b.device - a.device)
            break
        }
        if abs(slope) * 1e6 > Self.greatestDriftPPM {
            // Not believed: the offset alone, from the last second's readings, as over a short span.
            line = (points.filter { last.device - $0.device <= 1e9 }.map(\.residual).min() ?? last.residual, 0)
            return
        }
        // The line under that slope touching the hull: the lowest offset over the points.
        let offset = points.map { $0.residual - slope * $0.device }.min() ?? 0
        line = (offset, slope)
    }
}
