import ParallaxGeometry
import ParallaxImage

/// Renders a ``SimulatedScene`` through a `CameraModel`, anti-aliased.
///
/// How: the exact ray of every pixel *corner* comes from the camera model
/// (`normalizedCoordinates(ofPixel:)` for pinhole and Brown–Conrady lenses,
/// `ray(throughPixel:)` for fisheye), so the lens is honoured exactly at the
/// corners. Inside a pixel the renderer takes `samplesPerAxis²` sub-pixel
/// samples on a regular grid whose rays are interpolated bilinearly between
/// the four corner rays — exact for a pinhole (rays on z = 1 are linear in
/// the pixel), and off by far less than 10⁻³ px for any smooth lens over one
/// pixel. Each sample intersects every surface exactly and takes the nearest.
/// Textures with sharp edges (the chessboard) are then box-filtered over the
/// sample's footprint on the surface, so an edge at any angle or phase gets
/// its true coverage instead of a count of `samplesPerAxis` levels; that is
/// what keeps rendered chessboard corners within a few thousandths of a pixel
/// of `CameraModel.project(_:)`. A pixel whose four corners all see the
/// same surface lies wholly on it and takes one sample box-filtered over the
/// whole pixel (exact for the chessboard); only pixels on a silhouette edge
/// between surfaces are supersampled, which is where samples are needed.
///
/// A pixel's level is the mean over its samples (a box filter over the pixel
/// area, as a sensor integrates), rounded to 8 bits.
public struct SceneRenderer: Sendable {
    /// Sub-pixel samples per axis (the pixel gets this number squared).
    public var samplesPerAxis: Int

    /// - Precondition: `samplesPerAxis ≥ 1` (programmer error otherwise).
    public init(samplesPerAxis: Int = 4) {
        precondition(samplesPerAxis >= 1, "at least one sample per pixel")
        self.samplesPerAxis = samplesPerAxis
    }

    /// The pixel formats ``render(_:camera:cameraFromWorld:format:isCancelled:)`` produces.
    public static let supportedFormats: [PixelFormat] = [.gray8, .rgb8, .bgr8, .yuyv]

    /// Renders `scene` seen by `camera` placed at `cameraFromWorld` (world → camera frame).
    ///
    /// Gray and YUYV use the texture level (YUYV with neutral chroma); RGB and
    /// BGR multiply it by each plane's tint (the chessboard is untinted).
    /// `isCancelled` is asked before each row: a big view can take seconds.
    ///
    /// - Throws: ``SimulationError`` for a format outside ``supportedFormats``
    ///   or a size the format cannot hold, and ``SimulationError/cancelled`` when
    ///   `isCancelled` answered true.
    public func render(_ scene: SimulatedScene, camera: CameraModel, cameraFromWorld: RigidTransform = .identity,
                       format: PixelFormat = .gray8, isCancelled: () -> Bool = { false }) throws(SimulationError) -> ImageBuffer {
        guard Self.supportedFormats.contains(format) else { throw .unsupportedFormat(format) }
        var buffer: ImageBuffer
        do { buffer = try ImageBuffer(format: format, size: camera.size) } catch {
            throw .invalidSize(camera.size, format: format)
        }
        try draw(scene, camera: camera, cameraFromWorld: cameraFromWorld, into: &buffer,
                 columns: 0..<camera.size.width, rows: 0..<camera.size.height, isCancelled: isCancelled)
        return buffer
    }

    /// Renders `scene` on top of `background`, the same camera's rendering of the scene
    /// without its target, redrawing only the pixels the target can reach: the box around
    /// its outline's projection, 2 px wider on every side. The result is identical to
    /// ``render(_:camera:cameraFromWorld:format:isCancelled:)`` (every pixel's level
    /// depends only on what its own rays hit), several times faster for a small board, which
    /// is what a moving board needs. Falls back to the whole image when part of the outline
    /// does not project (behind the camera).
    ///
    /// - Throws: as ``render(_:camera:cameraFromWorld:format:isCancelled:)``; ``SimulationError/invalidSize(_:format:)``
    ///   when `background` is not of the camera's size.
    public func render(_ scene: SimulatedScene, over background: ImageBuffer, camera: CameraModel,
                       cameraFromWorld: RigidTransform = .identity, isCancelled: () -> Bool = { false }) throws(SimulationError) -> ImageBuffer {
        guard Self.supportedFormats.contains(background.format) else { throw .unsupportedFormat(background.format) }
        guard background.size == camera.size else { throw .invalidSize(background.size, format: background.format) }
        guard let target = scene.target else { return background }
        var buffer = background
        let box = Self.pixelsReached(by: target, camera: camera, cameraFromWorld: cameraFromWorld)
            ?? (0..<camera.size.width, 0..<camera.size.height)
        try draw(scene, camera: camera, cameraFromWorld: cameraFromWorld, into: &buffer, columns: box.columns, rows: box.rows,
                 isCancelled: isCancelled)
        return buffer
    }

    /// The columns and rows of pixels `target`'s board can cover: its outline projected at 128
    /// points per edge (a plane's image is bounded by its outline's), 2 px of margin; `nil`
    /// when a point of the outline does not project.
    static func pixelsReached(by target: PlacedTarget, camera: CameraModel,
                              cameraFromWorld: RigidTransform) -> (columns: Range<Int>, rows: Range<Int>)? {
        let e = target.target.boardExtent
        let outline = [SIMD2(e.min.x, e.min.y), SIMD2(e.max.x, e.min.y), SIMD2(e.max.x, e.max.y), SIMD2(e.min.x, e.max.y)]
        var low = SIMD2(Double.infinity, .infinity), high = -low
        for k in 0..<4 {
            let a = outline[k], b = outline[(k + 1) % 4]
            for step in 0..<128 {
                let p = a + (b - a) * (Double(step) / 128)
                guard let pixel = camera.project(cameraFromWorld.apply(target.pose.apply(SIMD3(p.x, p.y, 0)))) else { return nil }
                low = pointwiseMin(low, pixel)
                high = pointwiseMax(high, pixel)
            }
        }
        let w = camera.size.width, h = camera.size.height
        guard low.x.isFinite, low.y.isFinite, high.x.isFinite, high.y.isFinite else { return nil }
        let x0 = max(0, min(w, Int((low.x - 2).rounded(.down)))), x1 = max(x0, min(w, Int((high.x + 3).rounded(.up))))
        let y0 = max(0, min(h, Int((low.y - 2).rounded(.down)))), y1 = max(y0, min(h, Int((high.y + 3).rounded(.up))))
        return (x0..<x1, y0..<y1)
    }

    /// Shades the pixels of `columns` × `rows` into `buffer` (the others are left as they are).
    private func draw(_ scene: SimulatedScene, camera: CameraModel, cameraFromWorld: RigidTransform, into buffer: inout ImageBuffer,
                      columns: Range<Int>, rows: Range<Int>, isCancelled: () -> Bool) throws(SimulationError) {
        guard !columns.isEmpty, !rows.isEmpty else { return }
        let surfaces = Surfaces(scene: scene, cameraFromWorld: cameraFromWorld)
        let n = samplesPerAxis
        let format = buffer.format
        let channels = format == .rgb8 || format == .bgr8 ? 3 : 1
        var levels = [Double](repeating: 0, count: camera.size.width * channels)
        var upper = CornerRow(camera: camera, y: Double(rows.lowerBound) - 0.5, columns: columns)
        var cancelled = false
        buffer.withMutableView { view in
            for y in rows {
                if isCancelled() {
                    cancelled = true
                    return
                }
                let lower = CornerRow(camera: camera, y: Double(y) + 0.5, columns: columns)
                for x in columns {
                    let colour = shade(pixel: x, upper: upper, lower: lower, surfaces: surfaces,
                                       background: scene.backgroundLevel, samples: n)
                    if channels == 3 {
                        levels[3 * x] = colour.x
                        levels[3 * x + 1] = colour.y
                        levels[3 * x + 2] = colour.z
                    } else {
                        levels[x] = colour.w
                    }
                }
                Self.store(levels, row: y, into: view, columns: columns)
                upper = lower
            }
        }
        if cancelled { throw .cancelled }
    }

    /// The ground truth: where each inner corner of the scene's target lands
    /// in `camera` (OpenCV order), `nil` for corners the camera cannot see
    /// (behind it, or outside the image). Occlusion by other planes is not considered.
    public static func projectedCorners(of target: PlacedTarget, camera: CameraModel,
                                        cameraFromWorld: RigidTransform = .identity) -> [SIMD2<Double>?] {
        target.worldCorners.map { world in
            guard let pixel = camera.project(cameraFromWorld.apply(world)) else { return nil }
            let inside = pixel.x >= -0.5 && pixel.y >= -0.5
                && pixel.x <= Double(camera.size.width) - 0.5 && pixel.y <= Double(camera.size.height) - 0.5
            return inside ? pixel : nil
        }
    }

    // MARK: Inner loop

    /// Mean colour (r, g, b, gray) over one pixel's samples.
    private func shade(pixel x: Int, upper: CornerRow, lower: CornerRow, surfaces: Surfaces,
                       background: Double, samples n: Int) -> SIMD4<Double> {
        guard let r00 = upper.ray(x), let r10 = upper.ray(x + 1), let r01 = lower.ray(x), let r11 = lower.ray(x + 1)
        else { return SIMD4(background, background, background, background) }
        // A pixel whose four corners see the same surface lies on it entirely
        // (surfaces are planes; a silhouette edge would separate the corners).
        // If no texture edge crosses it either (inside one chessboard square,
        // or a smooth texture), one sample at its centre is its mean. Pixels on
        // silhouettes and texture edges are supersampled.
        let h00 = surfaces.nearest(r00)?.index, h10 = surfaces.nearest(r10)?.index
        let h01 = surfaces.nearest(r01)?.index, h11 = surfaces.nearest(r11)?.index
        if let k = h00, h10 == k, h01 == k, h11 == k {
            let centre = (r00 + r10 + r01 + r11) * 0.25
            let whole = surfaces.footprint(k, r00, r10, r01, r11, samples: 1)
            if let hit = surfaces.nearest(centre), hit.index == k, !surfaces.hasEdge(hit, within: whole) {
                let level = surfaces.level(hit, footprint: whole)
                let tint = surfaces.tint(k)
                return SIMD4(level * tint.x, level * tint.y, level * tint.z, level)
            }
        }
        // Per surface: sample footprint half-sizes in plane units, from the
        // pixel's corners on that plane (zero when a corner misses it).
        var footprints = [SIMD2<Double>](repeating: .zero, count: surfaces.count)
        for k in 0..<surfaces.count {
            footprints[k] = surfaces.footprint(k, r00, r10, r01, r11, samples: n)
        }
        var sum = SIMD4<Double>.zero
        let step = 1 / Double(n)
        for b in 0..<n {
            let fy = (Double(b) + 0.5) * step
            let left = r00 + (r01 - r00) * fy, right = r10 + (r11 - r10) * fy
            for a in 0..<n {
                let fx = (Double(a) + 0.5) * step
                let ray = left + (right - left) * fx
                if let hit = surfaces.nearest(ray) {
                    let level = surfaces.level(hit, footprint: footprints[hit.index])
                    let tint = surfaces.tint(hit.index)
                    sum += SIMD4(level * tint.x, level * tint.y, level * tint.z, level)
                } else {
                    sum += SIMD4(background, background, background, background)
                }
            }
        }
        return sum / Double(n * n)
    }

    private static func store(_ levels: [Double], row y: Int, into view: MutableImageView, columns: Range<Int>) {
        let base = view.plane0 + y * view.bytesPerRow0
        func byte(_ level: Double) -> UInt8 { UInt8(max(0, min(255, level.rounded()))) }
        switch view.format {
        case .gray8:
            for x in columns { base.storeBytes(of: byte(levels[x]), toByteOffset: x, as: UInt8.self) }
        case .rgb8, .bgr8:
            let swap = view.format == .bgr8
            for x in columns {
                let r = byte(levels[3 * x]), g = byte(levels[3 * x + 1]), b = byte(levels[3 * x + 2])
                base.storeBytes(of: swap ? b : r, toByteOffset: 3 * x, as: UInt8.self)
                base.storeBytes(of: g, toByteOffset: 3 * x + 1, as: UInt8.self)
                base.storeBytes(of: swap ? r : b, toByteOffset: 3 * x + 2, as: UInt8.self)
            }
        default:  // yuyv: luma from the level, neutral chroma; the width is even (validated by ImageBuffer).
            for x in columns {
                base.storeBytes(of: byte(levels[x]), toByteOffset: 2 * x, as: UInt8.self)
                base.storeBytes(of: UInt8(128), toByteOffset: 2 * x + 1, as: UInt8.self)
            }
        }
    }
}

/// The camera-frame rays through one row of pixel corners: those of the pixels in
/// `columns` (`columns.count + 1` of them).
///
/// Pinhole and Brown–Conrady rays are kept un-normalized on z = 1, where
/// bilinear interpolation between corners is exact for a pinhole; fisheye
/// rays are unit vectors (they may point sideways or backwards).
private struct CornerRow {
    var rays: [SIMD3<Double>?]
    /// The pixel column of `rays[0]`'s corner.
    var first: Int

    init(camera: CameraModel, y: Double, columns: Range<Int>) {
        first = columns.lowerBound
        rays = (columns.lowerBound...columns.upperBound).map { i in
            let pixel = SIMD2(Double(i) - 0.5, y)
            if camera.distortion.isFisheye { return try? camera.ray(throughPixel: pixel) }
            return (try? camera.normalizedCoordinates(ofPixel: pixel))?.homogeneous
        }
    }

    func ray(_ i: Int) -> SIMD3<Double>? { rays[i - first] }
}

/// The scene's surfaces prepared for one camera pose: each as a plane z = 0
/// in its own frame, with the camera centre and a camera-frame → plane-frame
/// rotation, so a ray intersects in a handful of multiplications.
private struct Surfaces {
    struct Entry {
        /// Rotation camera frame → plane frame (rows).
        var row0, row1, row2: SIMD3<Double>
        /// The camera centre in the plane frame.
        var origin: SIMD3<Double>
        var min: SIMD2<Double>, max: SIMD2<Double>
        var kind: Kind
        var tint: SIMD3<Double>
    }
    enum Kind {
        case texture(SceneTexture)
        case board(ChessboardTarget)
    }
    struct Hit {
        var index: Int
        var u: Double, v: Double
    }

    var entries: [Entry] = []
    var count: Int { entries.count }

    init(scene: SimulatedScene, cameraFromWorld: RigidTransform) {
        let worldFromCamera = cameraFromWorld.inverse
        func add(pose: RigidTransform, min: SIMD2<Double>, max: SIMD2<Double>, kind: Kind, tint: SIMD3<Double>) {
            let planeFromWorld = pose.inverse
            let rotation = planeFromWorld.rotation * worldFromCamera.rotation
            entries.append(Entry(row0: rotation.row0, row1: rotation.row1, row2: rotation.row2,
                                 origin: planeFromWorld.apply(worldFromCamera.translation),
                                 min: min, max: max, kind: kind, tint: tint))
        }
        for plane in scene.planes {
            let h = plane.halfExtent ?? SIMD2(Double.infinity, Double.infinity)
            add(pose: plane.pose, min: -h, max: h, kind: .texture(plane.texture), tint: plane.tint)
        }
        if let placed = scene.target {
            let e = placed.target.boardExtent
            add(pose: placed.pose, min: e.min, max: e.max, kind: .board(placed.target), tint: SIMD3(1, 1, 1))
        }
    }

    /// Plane coordinates and ray parameter where `ray` meets surface `k`, if in front of the camera.
    func intersect(_ k: Int, _ ray: SIMD3<Double>) -> (u: Double, v: Double, t: Double)? {
        let e = entries[k]
        let dz = (e.row2 * ray).sum()
        guard dz != 0 else { return nil }
        let t = -e.origin.z / dz
        guard t > 0, t.isFinite else { return nil }
        return (e.origin.x + t * (e.row0 * ray).sum(), e.origin.y + t * (e.row1 * ray).sum(), t)
    }

    func nearest(_ ray: SIMD3<Double>) -> Hit? {
        var best: Hit?
        var bestT = Double.infinity
        for k in 0..<entries.count {
            guard let (u, v, t) = intersect(k, ray), t < bestT else { continue }
            let e = entries[k]
            guard u >= e.min.x, u <= e.max.x, v >= e.min.y, v <= e.max.y else { continue }
            best = Hit(index: k, u: u, v: v)
            bestT = t
        }
        return best
    }

    /// Half-sizes of one sample's footprint on surface `k`, as the axis-aligned
    /// box around the parallelogram that a 1/n × 1/n cell of the pixel covers.
    func footprint(_ k: Int, _ r00: SIMD3<Double>, _ r10: SIMD3<Double>, _ r01: SIMD3<Double>, _ r11: SIMD3<Double>,
                   samples n: Int) -> SIMD2<Double> {
        guard let p00 = intersect(k, r00), let p10 = intersect(k, r10),
              let p01 = intersect(k, r01), let p11 = intersect(k, r11) else { return .zero }
        let du = SIMD2((p10.u - p00.u + p11.u - p01.u) / 2, (p01.u - p00.u + p11.u - p10.u) / 2)
        let dv = SIMD2((p10.v - p00.v + p11.v - p01.v) / 2, (p01.v - p00.v + p11.v - p10.v) / 2)
        let half = 0.5 / Double(n)
        let footprint = SIMD2((abs(du.x) + abs(du.y)) * half, (abs(dv.x) + abs(dv.y)) * half)
        return footprint.x.isFinite && footprint.y.isFinite ? footprint : .zero
    }

    func level(_ hit: Hit, footprint: SIMD2<Double>) -> Double {
        switch entries[hit.index].kind {
        case .texture(let texture):
            return texture.level(u: hit.u, v: hit.v, halfU: footprint.x, halfV: footprint.y)
        case .board(let board):
            return board.level(x: hit.u, y: hit.v, halfX: footprint.x, halfY: footprint.y)
        }
    }

    func tint(_ k: Int) -> SIMD3<Double> { entries[k].tint }

    /// True when a sharp texture edge may cross the box `footprint` around the hit.
    func hasEdge(_ hit: Hit, within footprint: SIMD2<Double>) -> Bool {
        func crosses(_ period: Double, _ lo: Double, _ hi: Double) -> Bool {
            (lo / period).rounded(.down) != (hi / period).rounded(.down)
        }
        let u0 = hit.u - footprint.x, u1 = hit.u + footprint.x, v0 = hit.v - footprint.y, v1 = hit.v + footprint.y
        switch entries[hit.index].kind {
        case .texture(.checkerboard(let period, _, _)):
            return crosses(period, u0, u1) || crosses(period, v0, v1)
        case .texture:
            return false
        case .board(let board) where board.pattern != .chessboard:
            return board.circleEdgeCrosses(x: hit.u, y: hit.v, halfX: footprint.x, halfY: footprint.y)
        case .board(let board):
            let e = board.squaresExtent
            let inside = u0 >= e.min.x && u1 <= e.max.x && v0 >= e.min.y && v1 <= e.max.y
            let outside = u1 < e.min.x || u0 > e.max.x || v1 < e.min.y || v0 > e.max.y
            if outside { return false }
            if !inside { return true }
            return crosses(board.squareSize, u0, u1) || crosses(board.squareSize, v0, v1)
        }
    }
}
