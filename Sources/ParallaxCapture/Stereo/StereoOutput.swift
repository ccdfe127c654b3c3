import ParallaxGeometry

/// Everything a ``StereoDevice`` hands its consumer, in order per side.
public enum StereoOutput: Sendable {
    /// A frame from one side.
    case frame(Frame, StereoSide)
    /// Something that happened to one side (drops, stalls, errors, disconnect, stop).
    case event(CaptureEvent, StereoSide)
    /// The side was switched off (``StereoDevice/setEnabled(_:_:)``); nothing comes from
    /// it until ``enabled(_:)``. This is not a loss: a synchronizer drops the other side's
    /// frames in the gap as `constituent_disabled`.
    case disabled(StereoSide)
    /// The side was switched on again.
    case enabled(StereoSide)
    /// The side's camera came back after ``CaptureEvent/disconnected``
    /// (``StereoDevice/reconnect(_:)``), before its first frame; `isEnabled` false when it
    /// was switched off meanwhile (it then stays off until ``enabled(_:)``).
    case reconnected(StereoSide, isEnabled: Bool)
}

extension OutputSynchronizer where Payload == Frame {
    /// Feeds one output of a ``StereoDevice``: the one route from a device to a
    /// synchronizer, which a ``StereoSession`` takes too.
    ///
    /// Frames are pushed. A side switched off, or unplugged, is disabled: what was waiting,
    /// and the other side's frames until it is back, are dropped as `constituent_disabled`
    /// or `disconnected`. A side switched on, or plugged back, is enabled. Other events
    /// (the cameras' own losses, stalls, errors) are not frames of the account.
    public func push(_ output: StereoOutput) {
        switch output {
        case .frame(let frame, let side): push(frame, from: side)
        case .disabled(let side): setEnabled(false, for: side, dropping: .constituentDisabled)
        case .enabled(let side): setEnabled(true, for: side)
        case .event(.disconnected, let side): setEnabled(false, for: side, dropping: .disconnected)
        case .reconnected(let side, let isEnabled):
            setEnabled(isEnabled, for: side, dropping: .constituentDisabled)
        case .event: break
        }
    }
}
