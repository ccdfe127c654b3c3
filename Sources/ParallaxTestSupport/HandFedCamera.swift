import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Synchronization

/// A capture device whose frames a test hands over itself, on the caller's thread, as a
/// camera's thread would: what a session sees is exactly what the test made, when it chose.
public final class HandFedCamera: CaptureDevice, @unchecked Sendable {
    public let identity: DeviceIdentity
    /// The one format it offers and streams.
    public let format: CaptureFormat
    /// Held by reference: reading a closure out of a lock re-wraps it (one allocation per
    /// frame, which AllocationTests would count).
    final class Handler: Sendable {
        let call: @Sendable (CaptureOutput) -> Void
        init(_ call: @escaping @Sendable (CaptureOutput) -> Void) { self.call = call }
    }
    private let handler = Mutex<Handler?>(nil)

    /// A camera named `name` offering `format` only.
    public init(name: String, format: CaptureFormat) {
        identity = DeviceIdentity(stableID: name, name: name)
        self.format = format
    }

    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] { [format] }
    public var activeFormat: CaptureFormat? { format }
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat { self.format }
    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        self.handler.withLock { $0 = Handler(handler) }
    }
    public func stop() {
        let handler = self.handler.withLock { h in defer { h = nil }; return h }
        handler?.call(.event(.stopped))
    }

    /// Delivers `frame` on the caller's thread (nothing when the camera is not started).
    public func deliver(_ frame: Frame) { handler.withLock { $0 }?.call(.frame(frame)) }

    /// A frame of this camera showing `pixels` (kept alive until the frame is released),
    /// stamped at mid-exposure.
    public func frame(_ pixels: SharedPixels, timestampNanoseconds: Int64, sequence: UInt64) -> Frame {
        Frame(image: pixels.view, payload: pixels.payload, format: format, timestampNanoseconds: timestampNanoseconds,
              timestampSource: .midExposure, sequence: sequence, source: identity, release: { _ = pixels })
    }
}

/// Deterministic test images: every byte from a xorshift sequence over a ramp, so that each
/// format's planes carry texture (a resampler that reads the wrong tap changes them).
public enum TestPattern {
    /// An image of `format` and `size`; `seed` picks the sequence.
    public static func image(_ format: PixelFormat, size: ImageSize, seed: UInt32) throws -> ImageBuffer {
        var bytes = [UInt8](repeating: 0, count: ImageBuffer.byteCount(format: format, size: size))
        var state: UInt32 = 2_463_534_242 &+ seed
        for i in bytes.indices {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            bytes[i] = UInt8(truncatingIfNeeded: (i &* 3) &+ Int(state & 63))
        }
        return try ImageBuffer(format: format, size: size, bytes: bytes)
    }
}
