/// Decimation of a stream to a frame-rate cap, by timestamps: the one rule both a
/// ``StereoDevice`` (a cap the cameras could not be set to) and a ``StereoSession`` (its
/// adaptive cap under pressure) hold frames back with.
///
/// Due times lie on a grid spaced exactly one cap interval. A frame passes when it is at
/// most half a camera interval before the next due time (the tolerance absorbs jitter in
/// the camera's stamps); the due time then advances by one cap interval, so over any run
/// of passed frames the mean spacing is never below the cap. A stream that fell more than
/// one cap interval behind its grid (a gap, a restart) starts a new grid at the frame.
struct FrameRateCap: Sendable {
    /// The cap's interval (nanoseconds). It may change while running (the session lowers
    /// and raises its rate); the grid continues from the next due time.
    var intervalNanoseconds: Int64
    /// How early a frame may be and still pass: half the camera's interval.
    let toleranceNanoseconds: Int64
    /// Where the next frame is due; `nil` before the first frame (which always passes).
    private(set) var nextDueNanoseconds: Int64?

    /// A cap of `intervalNanoseconds` over a camera delivering a frame every
    /// `cameraIntervalNanoseconds`.
    init(intervalNanoseconds: Int64, cameraIntervalNanoseconds: Int64) {
        self.intervalNanoseconds = intervalNanoseconds
        toleranceNanoseconds = cameraIntervalNanoseconds / 2
    }

    /// Whether the frame stamped `timestamp` passes; advances the grid when it does.
    mutating func admits(_ timestamp: Int64) -> Bool {
        guard let due = nextDueNanoseconds else {
            nextDueNanoseconds = timestamp + intervalNanoseconds
            return true
        }
        guard timestamp >= due - toleranceNanoseconds else { return false }
        nextDueNanoseconds = timestamp > due + intervalNanoseconds ? timestamp + intervalNanoseconds : due + intervalNanoseconds
        return true
    }
}
