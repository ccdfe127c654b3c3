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
}

extension OutputSynchronizer where Payload == Frame {
    /// Feeds one output of a ``StereoDevice``: frames are pushed, a side switched off or on
    /// is disabled or enabled, a damaged-buffer drop is counted, and a disconnect flushes
    /// what was waiting as `device_error`.
    public func push(_ output: StereoOutput) {
        switch output {
        case .frame(let frame, let side): push(frame, from: side)
        case .disabled(let side): setEnabled(false, for: side)
        case .enabled(let side): setEnabled(true, for: side)
        case .event(.disconnected, _): flush(reason: .deviceError)
        case .event: break
        }
    }
}
