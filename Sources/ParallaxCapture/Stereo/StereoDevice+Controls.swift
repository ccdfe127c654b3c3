import ParallaxGeometry

#if canImport(Glibc)
import Glibc
#endif

/// A capture device whose camera controls can be read and set (V4L2 cameras).
public protocol CameraControlling: AnyObject, Sendable {
    /// The controls Parallax names that the camera has, with ranges and current values.
    func controls() throws(CaptureError) -> [CameraControl]
    /// Sets a control and returns the value the driver kept (it may clamp or round).
    @discardableResult
    func set(_ control: CameraControlID, to value: Int32) throws(CaptureError) -> Int32
}

extension V4L2Camera: CameraControlling {}

/// What ``StereoDevice/matchControls(from:)`` did.
public struct ControlMatchReport: Hashable, Sendable, CustomStringConvertible {
    /// One control copied from the source side.
    public struct Copied: Hashable, Sendable {
        /// Which control.
        public var control: CameraControlID
        /// The source side's value.
        public var value: Int32
        /// What the other side's driver kept.
        public var kept: Int32
    }

    /// The side whose values were copied.
    public var source: StereoSide
    /// The controls copied, auto-mode switches first.
    public var copied: [Copied]
    /// Controls one side has and the other lacks.
    public var missing: PerSide<[CameraControlID]>
    /// Automatic modes left on: each camera then adjusts on its own and the two images
    /// drift apart in brightness or colour; set manual modes for stereo work.
    public var automaticModesOn: [CameraControlID]
    /// Values not copied because an automatic mode governs them: on the source (focus while
    /// autofocus is on: the value means nothing there), or on the other side, whose driver
    /// refused them (EACCES, as uvcvideo refuses a control its auto mode makes inactive).
    public var governedByAutomaticModes: [CameraControlID] = []
    /// Set when nothing could be matched, with the reason (no controls, one camera).
    public var note: String?

    /// True when both sides now have the same value for every control copied, and no value
    /// was refused by the other side.
    public var isComplete: Bool { copied.allSatisfy { $0.value == $0.kept } && refusedByTarget.isEmpty }
    /// The governed values the other side refused (a subset of ``governedByAutomaticModes``).
    public var refusedByTarget: [CameraControlID] = []

    /// A few readable lines.
    public var description: String {
        var lines: [String] = []
        if let note { lines.append(note) }
        for c in copied {
            lines.append("\(c.control.rawValue) = \(c.value)\(c.kept == c.value ? "" : " (the \(source.opposite) camera kept \(c.kept))")")
        }
        for side in StereoSide.allCases where !missing[side].isEmpty {
            lines.append("the \(side) camera lacks: " + missing[side].map(\.rawValue).joined(separator: ", "))
        }
        if !refusedByTarget.isEmpty {
            lines.append("the \(source.opposite) camera refused (its automatic mode is on): " + refusedByTarget.map(\.rawValue).joined(separator: ", "))
        }
        if !automaticModesOn.isEmpty {
            lines.append("automatic modes on (set them to manual for stereo): " + automaticModesOn.map(\.rawValue).joined(separator: ", "))
        }
        return lines.joined(separator: "\n")
    }
}

extension StereoDevice {
    /// Sets every control of the other side to `source`'s value (exposure, gain, white
    /// balance, focus and their auto modes; auto switches first, since a manual value is
    /// only kept once its auto mode is off), and reports controls one side lacks and
    /// automatic modes still on. A value its auto mode governs on the source (focus while
    /// autofocus is on) is not copied: it means nothing there, and uvcvideo refuses to set
    /// a control its auto mode makes inactive (EACCES).
    ///
    /// Devices without controls (simulated, recorded) and a side-by-side camera (one
    /// sensor board, one set of controls) have nothing to match; the report says so.
    ///
    /// - Throws: ``StereoDeviceError/capture(_:side:)`` when a control cannot be read or set.
    public func matchControls(from source: StereoSide) throws(StereoDeviceError) -> ControlMatchReport {
        let target = source.opposite
        var report = ControlMatchReport(source: source, copied: [], missing: PerSide(repeating: []), automaticModesOn: [])
        if kind == .sideBySide {
            report.note = "a side-by-side camera has one set of controls; both halves already match"
            return report
        }
        guard let from = constituents[source] as? any CameraControlling,
              let to = constituents[target] as? any CameraControlling else {
            report.note = "these devices have no camera controls"
            return report
        }
        let sourceControls: [CameraControl], targetControls: [CameraControl]
        do { sourceControls = try from.controls() } catch { throw .capture(error, side: source) }
        do { targetControls = try to.controls() } catch { throw .capture(error, side: target) }
        let targetIDs = Set(targetControls.map(\.id)), sourceIDs = Set(sourceControls.map(\.id))
        report.missing[target] = sourceControls.map(\.id).filter { !targetIDs.contains($0) }
        report.missing[source] = targetControls.map(\.id).filter { !sourceIDs.contains($0) }
        let switches: [CameraControlID] = [.exposureAuto, .autoGain, .autoWhiteBalance, .autoFocus]
        let governedBy: [CameraControlID: CameraControlID] = [.exposureAbsolute: .exposureAuto, .gain: .autoGain,
                                                              .whiteBalanceTemperature: .autoWhiteBalance, .focusAbsolute: .autoFocus]
        func isAutomatic(_ id: CameraControlID, _ value: Int32) -> Bool {
            // V4L2_CID_EXPOSURE_AUTO is a menu: 1 is manual; the others are booleans: 0 is manual.
            id == .exposureAuto ? value != 1 : value != 0
        }
        let automatic = Set(sourceControls.filter { switches.contains($0.id) && isAutomatic($0.id, $0.value) }.map(\.id))
        var keptAutomatic: Set<CameraControlID> = []
        let ordered = sourceControls.filter { switches.contains($0.id) }
            + sourceControls.filter { !switches.contains($0.id) && !automatic.contains(governedBy[$0.id] ?? $0.id) }
        // A mode the target kept automatic (a menu without manual) governs its values there too.
        report.governedByAutomaticModes = sourceControls.filter { automatic.contains(governedBy[$0.id] ?? $0.id) && !switches.contains($0.id) }
            .map(\.id)
        for control in ordered where targetIDs.contains(control.id) {
            if keptAutomatic.contains(governedBy[control.id] ?? control.id) {
                report.governedByAutomaticModes.append(control.id)
                continue
            }
            let kept: Int32
            do { kept = try to.set(control.id, to: control.value) } catch {
                // EACCES: an automatic mode the target has and the source lacks governs it there.
                if case .ioctlFailed(_, _, let code) = error, code == EACCES, governedBy[control.id] != nil {
                    report.governedByAutomaticModes.append(control.id)
                    report.refusedByTarget.append(control.id)
                    continue
                }
                throw .capture(error, side: target)
            }
            report.copied.append(.init(control: control.id, value: control.value, kept: kept))
            if switches.contains(control.id) && isAutomatic(control.id, kept) { keptAutomatic.insert(control.id) }
        }
        report.automaticModesOn = sourceControls.filter { automatic.contains($0.id) }.map(\.id)
        return report
    }
}
