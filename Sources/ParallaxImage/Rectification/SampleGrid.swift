import ParallaxGeometry

/// Which sample grid of an image a map addresses: full-resolution samples
/// (gray, RGB, luma) or the chroma of 4:2:2 or 4:2:0 images.
enum SampleGrid: Hashable, Sendable {
    case full
    /// Half width, full height; chroma co-sited with even luma columns (BT.601 / V4L2 YUYV).
    case chroma422
    /// Half width, half height; co-sited horizontally, centred between luma rows vertically (MPEG-2 / V4L2 NV12).
    case chroma420
}

/// A float map over one sample grid: for each output sample, the source
/// sample position (NaN for none).
struct FloatGrid: Sendable {
    var width: Int
    var height: Int
    var sourceWidth: Int
    var sourceHeight: Int
    var xs: [Float]
    var ys: [Float]

    init(_ map: RectificationMap) {
        width = map.outputSize.width
        height = map.outputSize.height
        sourceWidth = map.sourceSize.width
        sourceHeight = map.sourceSize.height
        xs = map.sourceX
        ys = map.sourceY
    }

    /// The chroma grid of a luma map: each output chroma sample reads the
    /// source at the luma position where that chroma sample sits, converted
    /// to chroma coordinates.
    init(chromaOf luma: FloatGrid, grid: SampleGrid) {
        width = luma.width / 2
        sourceWidth = luma.sourceWidth / 2
        switch grid {
        case .full:
            self = luma
            return
        case .chroma422:
            height = luma.height
            sourceHeight = luma.sourceHeight
            xs = [Float](repeating: .nan, count: width * height)
            ys = xs
            for v in 0..<height {
                for j in 0..<width {
                    let i = v * luma.width + 2 * j
                    xs[v * width + j] = luma.xs[i] * 0.5
                    ys[v * width + j] = luma.ys[i]
                }
            }
        case .chroma420:
            height = luma.height / 2
            sourceHeight = luma.sourceHeight / 2
            xs = [Float](repeating: .nan, count: width * height)
            ys = xs
            for k in 0..<height {
                for j in 0..<width {
                    // Output chroma (j, k) sits at output luma (2j, 2k + ½): the mean of two map rows.
                    let a = 2 * k * luma.width + 2 * j, b = a + luma.width
                    let x = (luma.xs[a] + luma.xs[b]) * 0.5, y = (luma.ys[a] + luma.ys[b]) * 0.5
                    xs[k * width + j] = x * 0.5
                    ys[k * width + j] = (y - 0.5) * 0.5
                }
            }
        }
    }
}

extension PixelFormat {
    /// The sample grids a rectifier resamples for this format: which plane,
    /// which grid, and where the channels sit.
    var remapPlanes: [(plane: Int, grid: SampleGrid, layout: SampleLayout)] {
        switch self {
        case .gray8: return [(0, .full, .interleaved(1))]
        case .rgb8, .bgr8: return [(0, .full, .interleaved(3))]
        case .rgba8, .bgra8: return [(0, .full, .interleaved(4))]
        case .yuyv:
            return [(0, .full, SampleLayout(pixelStride: 2, channels: 1, offsets: SIMD4(0, 0, 0, 0), border: 0)),
                    (0, .chroma422, SampleLayout(pixelStride: 4, channels: 2, offsets: SIMD4(1, 3, 0, 0), border: 128))]
        case .uyvy:
            return [(0, .full, SampleLayout(pixelStride: 2, channels: 1, offsets: SIMD4(1, 0, 0, 0), border: 0)),
                    (0, .chroma422, SampleLayout(pixelStride: 4, channels: 2, offsets: SIMD4(0, 2, 0, 0), border: 128))]
        case .nv12:
            return [(0, .full, .interleaved(1)),
                    (1, .chroma420, SampleLayout(pixelStride: 2, channels: 2, offsets: SIMD4(0, 1, 0, 0), border: 128))]
        }
    }
}
