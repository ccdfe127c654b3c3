import CRemapKernels
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

/// Where a side's full-resolution float positions come from: a stored map (a rectifier
/// made from maps) or the camera model itself, row by row (a rectifier made from a
/// calibration, which then never has to hold float maps).
enum LumaPositions: @unchecked Sendable {
    /// Row-major arrays of a stored map; the pointers must outlive the compilation.
    case stored(xs: UnsafePointer<Float>, ys: UnsafePointer<Float>)
    /// Computed per row, exactly as ``RectificationMap/Builder`` fills a map.
    case model(RectificationMap.Builder)
}

/// The source positions of one sample grid, produced one grid row at a time: luma rows as
/// stored or computed, chroma rows derived from the luma rows where each chroma sample sits
/// (see ``SampleGrid``). Computed full-grid rows are what a compiled map needs: positions
/// quantised to the model's 1/32 pixel (``RowPositions/quantised(qx:qy:)``), most of them
/// without evaluating the lens.
struct PositionRows: @unchecked Sendable {
    /// Where the luma positions come from, taken apart once: `row(_:scratch:)` runs once per
    /// grid row, and binding an enum's payload there copied the builder every time.
    private let stored: (xs: UnsafePointer<Float>, ys: UnsafePointer<Float>)?
    private let builder: RectificationMap.Builder?
    /// The full-resolution map's size and its source's.
    let lumaWidth: Int
    let lumaHeight: Int
    let lumaSourceWidth: Int
    let lumaSourceHeight: Int
    let grid: SampleGrid
    /// The vector level of the C kernels that compute these rows and compile them (every
    /// level gives the same rows and entries).
    let level: parallax_simd_level

    init(luma: LumaPositions, lumaWidth: Int, lumaHeight: Int, lumaSourceWidth: Int, lumaSourceHeight: Int,
         grid: SampleGrid, level: parallax_simd_level = SIMDLevel.supported.kernelLevel) {
        switch luma {
        case .stored(let xs, let ys): (stored, builder) = ((xs, ys), nil)
        case .model(let builder): (stored, self.builder) = (nil, builder)
        }
        self.lumaWidth = lumaWidth
        self.lumaHeight = lumaHeight
        self.lumaSourceWidth = lumaSourceWidth
        self.lumaSourceHeight = lumaSourceHeight
        self.grid = grid
        self.level = level
    }

    /// Samples per grid row and grid rows.
    var width: Int { grid == .full ? lumaWidth : lumaWidth / 2 }
    var height: Int { grid == .chroma420 ? lumaHeight / 2 : lumaHeight }
    /// The source grid's size.
    var sourceWidth: Int { grid == .full ? lumaSourceWidth : lumaSourceWidth / 2 }
    var sourceHeight: Int { grid == .chroma420 ? lumaSourceHeight / 2 : lumaSourceHeight }

    /// Whether rows come quantised: full-grid rows of a pinhole or Brown–Conrady model.
    private var quantisedRows: Bool { grid == .full && builder?.fillsQuantisedRows == true }

    /// The positions of one grid row (``width`` of each).
    enum RowPositions {
        /// Source sample coordinates, NaN for none.
        case floats(xs: UnsafePointer<Float>, ys: UnsafePointer<Float>)
        /// The same quantised: `round(32 x)`, ties to even, or `PARALLAX_UNDEFINED_POSITION`.
        case quantised(qx: UnsafePointer<Int32>, qy: UnsafePointer<Int32>)
    }

    /// Memory one thread needs for ``row(_:scratch:)`` (``deallocate()`` frees it): two luma
    /// rows and a grid row of floats (x, y each), or a quantised row and the quantised row
    /// kernel's own scratch.
    struct Scratch {
        fileprivate let floats: UnsafeMutablePointer<Float>
        fileprivate let quantised: UnsafeMutablePointer<Int32>
        fileprivate let kernel: UnsafeMutableRawPointer

        init(for rows: PositionRows) {
            let w = max(1, rows.lumaWidth)
            floats = .allocate(capacity: rows.quantisedRows ? 1 : 6 * w)
            quantised = .allocate(capacity: rows.quantisedRows ? 2 * w : 1)
            kernel = .allocate(byteCount: rows.quantisedRows ? max(1, rows.builder?.quantisedRowScratchBytes ?? 0) : 1,
                               alignment: 64)
        }

        func deallocate() {
            floats.deallocate()
            quantised.deallocate()
            kernel.deallocate()
        }
    }

    /// The positions of grid row `k`, in `scratch` or in the stored map.
    func row(_ k: Int, scratch: Scratch) -> RowPositions {
        let w = lumaWidth
        if quantisedRows, let builder {
            // Only the rounding to 1/32 pixel reaches a compiled map: the quantised kernel
            // gives the same entries for much less work.
            let qx = scratch.quantised, qy = qx + w
            builder.fillQuantisedRow(k, qx: qx, qy: qy, scratch: scratch.kernel, level: level)
            return .quantised(qx: UnsafePointer(qx), qy: UnsafePointer(qy))
        }
        // Luma row `v`, every `columnStep`-th column, as pointers and the step between entries.
        // Scratch holds two such rows (x, y each), then the grid row (x, y).
        func lumaRow(_ v: Int, _ slot: Int, columnStep: Int) -> (UnsafePointer<Float>, UnsafePointer<Float>, Int) {
            if let stored { return (stored.xs + v * w, stored.ys + v * w, columnStep) }
            // Only the columns used are computed (the same bits as in a full row).
            let x = scratch.floats + 2 * slot * w, y = x + w
            builder?.fillRow(v, xs: x, ys: y, columnStep: columnStep, level: level)
            return (UnsafePointer(x), UnsafePointer(y), 1)
        }
        let outX = scratch.floats + 4 * w, outY = outX + w
        switch grid {
        case .full:
            let (x, y, _) = lumaRow(k, 0, columnStep: 1)
            return .floats(xs: x, ys: y)
        case .chroma422:
            // Chroma sample j sits on luma column 2j, at half the horizontal scale.
            let (lx, ly, step) = lumaRow(k, 0, columnStep: 2)
            for j in 0..<width {
                outX[j] = lx[step * j] * 0.5
                outY[j] = ly[step * j]
            }
        case .chroma420:
            // Chroma (j, k) sits at luma (2j, 2k + ½): the mean of two map rows.
            let (ax, ay, step) = lumaRow(2 * k, 0, columnStep: 2), (bx, by, _) = lumaRow(2 * k + 1, 1, columnStep: 2)
            for j in 0..<width {
                let x = (ax[step * j] + bx[step * j]) * 0.5, y = (ay[step * j] + by[step * j]) * 0.5
                outX[j] = x * 0.5
                outY[j] = (y - 0.5) * 0.5
            }
        }
        return .floats(xs: UnsafePointer(outX), ys: UnsafePointer(outY))
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
        case .i420, .i422:
            // Each chroma plane is a gray plane on the chroma grid, neutral outside the source.
            let chroma = SampleLayout(pixelStride: 1, channels: 1, offsets: .zero, border: 128)
            let grid: SampleGrid = self == .i420 ? .chroma420 : .chroma422
            return [(0, .full, .interleaved(1)), (1, grid, chroma), (2, grid, chroma)]
        }
    }
}
