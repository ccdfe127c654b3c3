import Testing
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry

/// SplitMix64 from the library, so synthetic tests repeat exactly.
typealias SeededRandom = SeededRandomGenerator

/// A rig of known cameras and the corners OpenCV projected for it (`synthetic-rigs.json`, made by
/// `make_synthetic_rigs.py` with `cv2.projectPoints` / `cv2.fisheye.projectPoints`), so the solver
/// is checked against a camera model other than its own `project`.
struct SyntheticRig {
    /// 11 × 8 inner corners, 30 mm squares.
    let target: CalibrationBoard
    let size: ImageSize
    let left: CameraModel
    /// The right camera (equal to `left` for a mono rig, which has no right views).
    let right: CameraModel
    /// Left → right (OpenCV's R, T), millimetres; identity for a mono rig.
    let extrinsics: RigidTransform
    /// Board → left camera per view, as the script drew them.
    let poses: [RigidTransform]
    /// Noise-free corners per view.
    let leftCorners: [[SIMD2<Double>]]
    let rightCorners: [[SIMD2<Double>]]

    var calibration: StereoCalibration { StereoCalibration(left: left, right: right, extrinsics: extrinsics) }

    /// Reads the rig `key` ("brown5_stereo", "fisheye_stereo" or "rational_mono").
    static func load(_ key: String) throws -> SyntheticRig {
        let json = try TestFixtures.json("synthetic-rigs.json")
        let root = try #require(json.object, "synthetic-rigs.json is not a JSON object")
        let boardEntry = try #require(root["board"]?.object)
        let columns = try #require(boardEntry["columns"]?.number), rows = try #require(boardEntry["rows"]?.number)
        let square = try #require(boardEntry["square"]?.number)
        let target = CalibrationBoard(columns: Int(columns), rows: Int(rows), squareSize: square, unit: .millimetre)
        let entry = try #require(root[key]?.object, "no rig '\(key)' in synthetic-rigs.json")

        func numbers(_ value: JSONValue?, _ what: String, count: Int? = nil) throws -> [Double] {
            let array = value?.array?.compactMap { $0.number }
            let values = try #require(array, "\(key): no list of numbers for \(what)")
            if let count { try #require(values.count == count, "\(key): \(what) has \(values.count) values, expected \(count)") }
            return values
        }
        func camera(_ side: String) throws -> CameraModel? {
            guard let c = entry[side]?.object else { return nil }
            let s = try numbers(c["size"], "\(side).size", count: 2)
            let k = try numbers(c["K"], "\(side).K", count: 9)
            let d = try numbers(c["D"], "\(side).D")
            let model = key.hasPrefix("fisheye") ? "fisheye" : "brown"
            return CameraModel(size: ImageSize(width: Int(s[0]), height: Int(s[1])),
                               intrinsics: CameraIntrinsics(matrix: Matrix3x3(rowMajor: k)),
                               distortion: try LensDistortion(modelName: model, coefficients: d))
        }
        let left = try #require(try camera("left"))
        let right = try camera("right")
        var extrinsics = RigidTransform()
        if right != nil {
            let t = try numbers(entry["T"], "T", count: 3)
            extrinsics = RigidTransform(rotation: Matrix3x3(rowMajor: try numbers(entry["R"], "R", count: 9)), translation: SIMD3(t[0], t[1], t[2]))
        }
        let views = try #require(entry["views"]?.array, "\(key): no views")
        var poses: [RigidTransform] = [], leftCorners: [[SIMD2<Double>]] = [], rightCorners: [[SIMD2<Double>]] = []
        for (index, value) in views.enumerated() {
            let view = try #require(value.object)
            let r = try numbers(view["rvec"], "views[\(index)].rvec", count: 3), t = try numbers(view["tvec"], "views[\(index)].tvec", count: 3)
            poses.append(RigidTransform(rodrigues: SIMD3(r[0], r[1], r[2]), translation: SIMD3(t[0], t[1], t[2])))
            func corners(_ side: String) throws -> [SIMD2<Double>] {
                let points = try #require(view[side]?.array, "\(key): views[\(index)] has no \(side) corners")
                try #require(points.count == target.cornerCount, "\(key): views[\(index)].\(side) has \(points.count) corners")
                return try points.map { p in
                    let xy = try numbers(p, "a corner of views[\(index)].\(side)", count: 2)
                    return SIMD2(xy[0], xy[1])
                }
            }
            leftCorners.append(try corners("left"))
            if right != nil { rightCorners.append(try corners("right")) }
        }
        return SyntheticRig(target: target, size: left.size, left: left, right: right ?? left, extrinsics: extrinsics, poses: poses,
                            leftCorners: leftCorners, rightCorners: rightCorners)
    }

    /// Each corner moved by Gaussian noise of `sigma` pixels per coordinate.
    static func noisy(_ corners: [SIMD2<Double>], sigma: Double, random: inout SeededRandom) -> [SIMD2<Double>] {
        corners.map { $0 + SIMD2(random.nextGaussian(), random.nextGaussian()) * sigma }
    }

    /// The first `count` views of one camera (all when `nil`), with noise of `sigma` pixels per coordinate.
    func monoViews(count: Int? = nil, sigma: Double, random: inout SeededRandom) -> [CalibrationView] {
        leftCorners.prefix(count ?? leftCorners.count).enumerated().map { index, corners in
            CalibrationView(name: "view\(index).png", corners: Self.noisy(corners, sigma: sigma, random: &random))
        }
    }

    /// The first `count` stereo pairs (all when `nil`), with noise of `sigma` pixels per coordinate.
    func views(count: Int? = nil, sigma: Double, random: inout SeededRandom) -> [StereoView] {
        let n = min(count ?? leftCorners.count, leftCorners.count, rightCorners.count)
        return (0..<n).map { index in
            StereoView(left: CalibrationView(name: "left\(index).png", corners: Self.noisy(leftCorners[index], sigma: sigma, random: &random)),
                       right: CalibrationView(name: "right\(index).png", corners: Self.noisy(rightCorners[index], sigma: sigma, random: &random)))
        }
    }
}
