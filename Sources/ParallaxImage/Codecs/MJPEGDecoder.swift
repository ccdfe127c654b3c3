import CImageCodecs
import ParallaxGeometry

/// What an MJPEG frame is decoded to.
public enum MJPEGOutput: String, CaseIterable, Hashable, Sendable {
    /// The JPEG's own YCbCr planes, without colour conversion: ``PixelFormat/i420`` for
    /// 4:2:0 and ``PixelFormat/i422`` for 4:2:2 (what webcams send); a gray JPEG gives
    /// ``PixelFormat/gray8``. The cheapest colour output, and what the rectifier reads.
    case ycbcr
    /// Luma only: the chroma is entropy-decoded (the JPEG stream requires it) but never
    /// transformed or upsampled.
    case gray8
    /// Blue, green, red, converted by libjpeg-turbo (what `cv2.imdecode` gives).
    case bgr8
    /// Red, green, blue, converted by libjpeg-turbo.
    case rgb8
}

/// How far libjpeg-turbo scales an MJPEG frame down while decoding (by leaving out DCT
/// coefficients: a fraction of the work of decoding whole and then resizing).
public enum MJPEGScale: Int, CaseIterable, Hashable, Sendable, Comparable {
    /// The frame's own size.
    case full = 1
    /// Half the width and height.
    case half = 2
    /// A quarter of the width and height.
    case quarter = 4

    /// The size a `size` frame decodes to (rounded up, as libjpeg does).
    public func scaled(_ size: ImageSize) -> ImageSize {
        ImageSize(width: (size.width + rawValue - 1) / rawValue, height: (size.height + rawValue - 1) / rawValue)
    }

    /// The smallest scale at which a `source` frame still covers `target` in both
    /// directions (a rectified output that much smaller needs no more pixels).
    public static func largestReduction(from source: ImageSize, covering target: ImageSize) -> MJPEGScale {
        // Whole divisions to even sizes only: planar 4:2:0 needs both even.
        allCases.last { scale in
            let s = scale.scaled(source)
            return s.width >= target.width && s.height >= target.height
                && source.width % scale.rawValue == 0 && source.height % scale.rawValue == 0
                && s.width % 2 == 0 && s.height % 2 == 0
        } ?? .full
    }

    /// True when `a` reduces less than `b`.
    public static func < (a: MJPEGScale, b: MJPEGScale) -> Bool { a.rawValue < b.rawValue }
}

/// The chroma subsampling a JPEG was encoded with.
public enum JPEGSubsampling: String, Hashable, Sendable {
    /// No subsampling.
    case s444 = "4:4:4"
    /// Half-width chroma (most webcams).
    case s422 = "4:2:2"
    /// Half-width, half-height chroma.
    case s420 = "4:2:0"
    /// One component.
    case gray
    /// Half-height chroma.
    case s440 = "4:4:0"
    /// Quarter-width chroma.
    case s411 = "4:1:1"
    /// Quarter-height chroma.
    case s441 = "4:4:1"
    /// Anything libjpeg-turbo does not name.
    case other
}

/// What a JPEG's header says.
public struct JPEGHeader: Hashable, Sendable {
    /// The image size.
    public var size: ImageSize
    /// The chroma subsampling.
    public var subsampling: JPEGSubsampling
}

/// Why an MJPEG frame could not be decoded. Every case is a frame to drop, never an image
/// to pass on.
public struct MJPEGDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public enum Kind: String, Hashable, Sendable {
        /// No bytes at all.
        case empty
        /// The header could not be read (not a JPEG, zeros, cut before the frame header).
        case badHeader
        /// The data ended early or is damaged (libjpeg-turbo's warnings count here).
        case corrupt
        /// A valid JPEG that this stream cannot take: another size than the stream's, or a
        /// subsampling that has no planar format (4:4:4, 4:1:1, …) when YCbCr is asked for.
        case unexpectedLayout
    }

    /// What kind of failure.
    public let kind: Kind
    /// libjpeg-turbo's message, or what did not match.
    public let reason: String

    /// A failure of `kind` for `reason`.
    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// `corrupt: Premature end of JPEG file`.
    public var description: String { "\(kind.rawValue): \(reason)" }
}

/// Decodes Motion-JPEG frames with libjpeg-turbo, into memory the caller owns.
///
/// A decoder keeps one libjpeg-turbo instance; use one per thread (each camera's capture
/// thread has its own). Once it has decoded a frame it allocates nothing for the next ones
/// of that size (libjpeg's per-image memory is an arena reset between frames). Frames
/// without Huffman tables (the MJPEG habit: the standard tables of the JPEG
/// specification's Annex K are implied, as in the AVI1 convention) decode as if the tables
/// were there. Any warning libjpeg-turbo raises (data cut short, extraneous bytes, a
/// corrupt entropy segment) fails the frame: a half-grey image is never passed on as good.
public final class MJPEGDecoder: @unchecked Sendable {
    /// What frames decode to.
    public let output: MJPEGOutput
    /// How much the decoding scales down.
    public let scale: MJPEGScale
    private let decoder: OpaquePointer

    /// Frames larger than this on a side are refused before anything is allocated.
    public static let maximumSide = 1 << 15

    /// A decoder to `output` at `scale`.
    ///
    /// - Throws: ``ImageError/corruptFile(path:reason:)`` naming "MJPEG decoder" when
    ///   libjpeg-turbo cannot start (out of memory).
    public init(output: MJPEGOutput = .ycbcr, scale: MJPEGScale = .full) throws(ImageError) {
        guard let decoder = parallax_mjpeg_decoder_create() else {
            throw .corruptFile(path: "MJPEG decoder", reason: "libjpeg-turbo could not start a decompressor")
        }
        self.decoder = decoder
        self.output = output
        self.scale = scale
    }

    deinit { parallax_mjpeg_decoder_destroy(decoder) }

    /// The header of a JPEG in memory.
    public func header(of jpeg: UnsafeRawBufferPointer) throws(MJPEGDecodingError) -> JPEGHeader {
        guard let base = jpeg.baseAddress, jpeg.count > 0 else { throw MJPEGDecodingError(.empty, "the frame has no bytes") }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0
        let status = parallax_mjpeg_header(decoder, base.assumingMemoryBound(to: UInt8.self), jpeg.count,
                                           &width, &height, &subsampling)
        guard status == 0 else { throw MJPEGDecodingError(.badHeader, message()) }
        guard width > 0, height > 0, width <= Self.maximumSide, height <= Self.maximumSide else {
            throw MJPEGDecodingError(.badHeader, "size \(width)x\(height) is not a frame size")
        }
        let kind: JPEGSubsampling
        switch subsampling {
        case Int32(PARALLAX_MJPEG_444): kind = .s444
        case Int32(PARALLAX_MJPEG_422): kind = .s422
        case Int32(PARALLAX_MJPEG_420): kind = .s420
        case Int32(PARALLAX_MJPEG_GRAY): kind = .gray
        default: kind = .other
        }
        return JPEGHeader(size: ImageSize(width: Int(width), height: Int(height)), subsampling: kind)
    }

    /// The pixel format and size a frame with `header` decodes to.
    ///
    /// - Throws: ``MJPEGDecodingError/Kind/unexpectedLayout`` for YCbCr output of a
    ///   subsampling without a planar format here (4:4:4, 4:4:0, 4:1:1).
    public func layout(for header: JPEGHeader) throws(MJPEGDecodingError) -> (format: PixelFormat, size: ImageSize) {
        let size = scale.scaled(header.size)
        switch output {
        case .gray8: return (.gray8, size)
        case .bgr8: return (.bgr8, size)
        case .rgb8: return (.rgb8, size)
        case .ycbcr:
            switch header.subsampling {
            case .s420 where size.width % 2 == 0 && size.height % 2 == 0: return (.i420, size)
            case .s422 where size.width % 2 == 0: return (.i422, size)
            case .gray: return (.gray8, size)
            default:
                throw MJPEGDecodingError(.unexpectedLayout, "\(header.subsampling.rawValue) chroma at \(size) has no planar "
                                         + "format here (4:2:0 and 4:2:2 at even sizes have); decode to gray8 or bgr8 instead")
            }
        }
    }

    /// Decodes one frame into `destination`, whose format and size must be the frame's
    /// ``layout(for:)``.
    ///
    /// - Throws: ``MJPEGDecodingError``; `destination` may then hold part of an image and
    ///   must not be used.
    public func decode(_ jpeg: UnsafeRawBufferPointer, into destination: MutableImageView) throws(MJPEGDecodingError) {
        let header = try header(of: jpeg)
        let (format, size) = try layout(for: header)
        guard format == destination.format, size == destination.size else {
            throw MJPEGDecodingError(.unexpectedLayout, "a \(header.size) \(header.subsampling.rawValue) frame decodes to "
                                     + "\(size) \(format.rawValue), not the stream's \(destination.size) "
                                     + "\(destination.format.rawValue)")
        }
        // Every plane the format has, each with room for its rows (the C side trusts them).
        for index in 0..<format.planeCount {
            guard let plane = destination.plane(index),
                  plane.bytesPerRow >= format.minimumBytesPerRow(width: size.width, plane: index) else {
                throw MJPEGDecodingError(.unexpectedLayout, "the destination's plane \(index) is missing or its rows are "
                                         + "narrower than \(format.minimumBytesPerRow(width: size.width, plane: index)) bytes")
            }
        }
        let kind: Int32
        switch (output, format) {
        case (.ycbcr, _): kind = Int32(PARALLAX_MJPEG_PLANES)
        case (.gray8, _): kind = Int32(PARALLAX_MJPEG_TO_GRAY)
        case (.rgb8, _): kind = Int32(PARALLAX_MJPEG_TO_RGB)
        case (.bgr8, _): kind = Int32(PARALLAX_MJPEG_TO_BGR)
        }
        func bytes(_ plane: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<UInt8>? { plane?.assumingMemoryBound(to: UInt8.self) }
        var planes = (bytes(destination.plane0), bytes(destination.plane1), bytes(destination.plane2))
        var strides = (destination.bytesPerRow0, destination.bytesPerRow1, destination.bytesPerRow2)
        let source = jpeg.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let status = withUnsafePointer(to: &planes) { planes in
            withUnsafePointer(to: &strides) { strides in
                planes.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 3) { p in
                    strides.withMemoryRebound(to: Int.self, capacity: 3) { s in
                        parallax_mjpeg_decode(decoder, source, jpeg.count, kind, Int32(scale.rawValue), p, s,
                                              Int32(size.width), Int32(size.height))
                    }
                }
            }
        }
        switch status {
        case 0: return
        case Int32(PARALLAX_MJPEG_BAD_HEADER): throw MJPEGDecodingError(.badHeader, message())
        case Int32(PARALLAX_MJPEG_WRONG_LAYOUT): throw MJPEGDecodingError(.unexpectedLayout, message())
        default: throw MJPEGDecodingError(.corrupt, message())
        }
    }

    /// Decodes one frame into a new image (convenient; allocates it).
    public func decode(_ jpeg: UnsafeRawBufferPointer) throws(MJPEGDecodingError) -> ImageBuffer {
        let (format, size) = try layout(for: header(of: jpeg))
        // The layout's sizes suit its format (checked above), so the buffer can be made.
        guard var image = try? ImageBuffer(format: format, size: size) else {
            throw MJPEGDecodingError(.unexpectedLayout, "\(size) does not suit \(format.rawValue)")
        }
        let failure: MJPEGDecodingError? = image.withMutableView { view in
            do throws(MJPEGDecodingError) { try decode(jpeg, into: view) } catch { return error }
            return nil
        }
        if let failure { throw failure }
        return image
    }

    private func message() -> String { String(cString: parallax_mjpeg_message(decoder)) }
}

/// Encodes images as baseline JPEG with libjpeg-turbo (the test sources' MJPEG frames).
public enum JPEGEncoder {
    /// Encodes gray8 (one component) or any colour format (converted to RGB first) at
    /// `quality` (1…100) with `subsampling` (4:2:0 or 4:2:2 for colour).
    ///
    /// - Throws: ``ImageError`` when libjpeg-turbo fails.
    public static func encode(_ image: ImageBuffer, quality: Int, subsampling: JPEGSubsampling = .s420) throws(ImageError) -> [UInt8] {
        let source = image.format == .gray8 || image.format == .rgb8 ? image : try image.converted(to: .rgb8)
        guard let handle = tjInitCompress() else {
            throw .fileAccess(path: "JPEG encoder", reason: "libjpeg-turbo could not start a compressor")
        }
        defer { tjDestroy(handle) }
        let isGray = source.format == .gray8
        let sampling: TJSAMP = isGray ? TJSAMP_GRAY : subsampling == .s422 ? TJSAMP_422 : subsampling == .s444 ? TJSAMP_444 : TJSAMP_420
        var jpeg: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = source.withView { view in
            tjCompress2(handle, view.plane0.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(source.size.width),
                        Int32(view.plane0.bytesPerRow), Int32(source.size.height),
                        Int32((isGray ? TJPF_GRAY : TJPF_RGB).rawValue), &jpeg, &size, Int32(sampling.rawValue),
                        Int32(min(max(quality, 1), 100)), 0)
        }
        defer { if let jpeg { tjFree(jpeg) } }
        guard status == 0, let jpeg else {
            let reason = tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error"
            throw .fileAccess(path: "JPEG encoder", reason: "encoding failed: \(reason)")
        }
        return Array(UnsafeBufferPointer(start: jpeg, count: Int(size)))
    }
}

/// Decodes the two JPEGs of a stereo pair at once, on the worker threads that rectifiers
/// with the same thread count share (so decoding and rectifying a pair keep the same,
/// already running threads).
public final class MJPEGPairDecoder: @unchecked Sendable {
    private let decoders: PerSide<MJPEGDecoder>
    private let pool: WorkerPool

    /// A pair decoder to `output` at `scale`, on `threads` threads (`nil`: every processor;
    /// 1 decodes the two one after the other on the caller's thread).
    public init(output: MJPEGOutput = .ycbcr, scale: MJPEGScale = .full, threads: Int? = nil) throws(ImageError) {
        decoders = PerSide(left: try MJPEGDecoder(output: output, scale: scale),
                           right: try MJPEGDecoder(output: output, scale: scale))
        pool = WorkerPool.shared(threadCount: threads ?? WorkerPool.processorCount)
    }

    /// The decoder of each side (for ``MJPEGDecoder/header(of:)`` and ``MJPEGDecoder/layout(for:)``).
    public var left: MJPEGDecoder { decoders.left }

    /// Decodes `left` into `leftOutput` and `right` into `rightOutput` (see
    /// ``MJPEGDecoder/decode(_:into:)``).
    ///
    /// - Throws: the first side's ``MJPEGDecodingError`` (left first when both fail).
    public func decode(left: UnsafeRawBufferPointer, right: UnsafeRawBufferPointer,
                       into leftOutput: MutableImageView, _ rightOutput: MutableImageView) throws(MJPEGDecodingError) {
        struct Job {
            let decoders: PerSide<MJPEGDecoder>
            let inputs: PerSide<UnsafeRawBufferPointer>
            let outputs: PerSide<MutableImageView>
            var failures = PerSide<MJPEGDecodingError?>(repeating: nil)
        }
        var job = Job(decoders: decoders, inputs: PerSide(left: left, right: right),
                      outputs: PerSide(left: leftOutput, right: rightOutput))
        withUnsafeMutablePointer(to: &job) { pointer in
            pool.run(tasks: 2, context: UnsafeRawPointer(pointer)) { context, task in
                // Each task writes only its own side's failure.
                let job = UnsafeMutableRawPointer(mutating: context).assumingMemoryBound(to: Job.self)
                let side: StereoSide = task == 0 ? .left : .right
                do throws(MJPEGDecodingError) {
                    try job.pointee.decoders[side].decode(job.pointee.inputs[side], into: job.pointee.outputs[side])
                } catch {
                    job.pointee.failures[side] = error
                }
            }
        }
        if let failure = job.failures.left ?? job.failures.right { throw failure }
    }
}
