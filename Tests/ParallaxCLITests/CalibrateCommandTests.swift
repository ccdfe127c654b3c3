import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage
import Testing
@testable import parallax

/// `parallax calibrate` and `parallax target` as a user runs them: real images in, files and JSON out.
@Suite("parallax calibrate")
struct CalibrateCommandTests {
    static let data = "/usr/share/doc/opencv-doc/examples/data"

    /// A drawn, axis-aligned 9×6 board as a binary PGM (`width` × `height`), for a pair of another size.
    static func drawnBoardPGM(width: Int, height: Int, square: Int) -> Data {
        var bytes = [UInt8](repeating: 255, count: width * height)
        let x0 = (width - 10 * square) / 2, y0 = (height - 7 * square) / 2
        for y in 0..<height {
            for x in 0..<width {
                let i = (x - x0), j = (y - y0)
                guard i >= 0, j >= 0, i < 10 * square, j < 7 * square else { continue }
                if (i / square + j / square) % 2 == 0 { bytes[y * width + x] = 20 }
            }
        }
        return Data("P5\n\(width) \(height)\n255\n".utf8) + Data(bytes)
    }

    /// Four good pairs, plus: an unreadable left image, a pair whose right image has no board,
    /// and a pair at another resolution. The command uses the four and names every other file.
    @Test func setsAsideBadPairsAndNamesTheirFiles() throws {
        // The sample is a dependency `make test` installs (opencv-doc): missing, it is a failure.
        try #require(FileManager.default.fileExists(atPath: Self.data + "/left01.jpg"),
                     "OpenCV's sample images are missing from \(Self.data): `make test` installs Debian's opencv-doc")
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fm = FileManager.default
        for n in ["01", "02", "03", "04"] {
            try fm.copyItem(atPath: "\(Self.data)/left\(n).jpg", toPath: dir.appendingPathComponent("left\(n).jpg").path)
            try fm.copyItem(atPath: "\(Self.data)/right\(n).jpg", toPath: dir.appendingPathComponent("right\(n).jpg").path)
        }
        try Data("not a jpeg".utf8).write(to: dir.appendingPathComponent("left05.jpg"))
        try fm.copyItem(atPath: "\(Self.data)/right05.jpg", toPath: dir.appendingPathComponent("right05.jpg").path)
        try fm.copyItem(atPath: "\(Self.data)/left06.jpg", toPath: dir.appendingPathComponent("left06.jpg").path)
        try Self.drawnBoardPGM(width: 640, height: 480, square: 1).write(to: dir.appendingPathComponent("right06.pgm"))
        try Self.drawnBoardPGM(width: 320, height: 240, square: 20).write(to: dir.appendingPathComponent("left07.pgm"))
        try Self.drawnBoardPGM(width: 320, height: 240, square: 20).write(to: dir.appendingPathComponent("right07.pgm"))

        let result = try ParallaxCLI.run([
            "calibrate", "--left", dir.path + "/left*", "--right", dir.path + "/right*", "--board", "9x6", "--square", "1",
            "--json", "--output", dir.appendingPathComponent("out/calib.json").path,
            "--opencv-yaml", dir.appendingPathComponent("out/calib.yml").path,
            "--ros-dir", dir.appendingPathComponent("out/ros").path,
            "--report", dir.appendingPathComponent("out/report").path, "--corners-out", dir.appendingPathComponent("out/corners.json").path,
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["pairs_total"] as? Int == 7)
        #expect(json["pairs_used"] as? Int == 4)
        let rejected = try #require(json["rejected"] as? [[String: Any]])
        #expect(rejected.count == 3)
        let reasons = rejected.map { "\($0["left"] as? String ?? "") \($0["right"] as? String ?? "") \($0["reason"] as? String ?? "")" }
        #expect(reasons.contains { $0.contains("left05.jpg") && $0.contains("unreadable") })
        #expect(reasons.contains { $0.contains("right06.pgm") && $0.contains("no chessboard") })
        #expect(reasons.contains { $0.contains("left07.pgm") && $0.contains("320x240") })
        for key in ["rms_left", "rms_right", "rms_stereo", "baseline", "epipolar_error_mean", "rectified_vertical_rms", "seconds"] {
            #expect(json[key] is Double, "\(key)")
        }
        #expect((json["rms_stereo"] as? Double ?? 9) < 0.4)
        // The time split: detection per image (12 detected: pairs 01–04, 06 and 07; left05 is not
        // readable, so its right image is not looked at) and the solve, both within the whole run.
        let seconds = json["seconds"] as? Double ?? 0
        let detection = json["detection_seconds_per_image"] as? Double ?? -1, solve = json["solve_seconds"] as? Double ?? -1
        #expect(detection > 0 && solve > 0 && 12 * detection + solve <= seconds, "detection \(detection) s per image, solve \(solve) s of \(seconds) s")
        #expect((json["focal_left"] as? [Double])?.count == 2 && (json["focal_right"] as? [Double])?.count == 2)
        // Every parameter's standard deviation, and the projection uncertainty at the centre and corners.
        let uncertainty = try #require(json["uncertainty"] as? [String: Any])
        var unreached = 0
        for side in ["left", "right"] {
            let camera = try #require(uncertainty[side] as? [String: Any], "uncertainty.\(side)")
            for key in ["fx", "fy", "cx", "cy"] {
                let sigma = camera[key] as? Double ?? -1
                #expect(sigma > 0 && sigma < 20, "uncertainty.\(side).\(key) = \(sigma)")
            }
            #expect((camera["distortion"] as? [Double])?.count == 5)
            let projection = try #require((json["projection_uncertainty_px"] as? [String: Any])?[side] as? [String: Any])
            // With four pairs of OpenCV's sample the fitted lens folds before some image corners: no ray
            // reaches them, and their σ is null (the 13-pair fit reaches all four: OpenCVSampleCalibrationTests).
            let center = projection["center"] as? Double ?? -1, corners = projection["corners"] as? [Any] ?? []
            #expect(center > 0 && center < 2 && corners.count == 4, "projection_uncertainty_px.\(side): \(projection)")
            #expect(corners.allSatisfy { ($0 as? Double).map { $0 > center } ?? ($0 is NSNull) }, "\(corners)")
            unreached += corners.filter { $0 is NSNull }.count
        }
        // The guide's `null` for a corner no ray reaches: this fit has such corners.
        #expect(unreached > 0, "no image corner's σ was null")
        #expect((uncertainty["rotation_degrees"] as? [Double])?.count == 3 && (uncertainty["translation"] as? [Double])?.count == 3)
        #expect((uncertainty["baseline"] as? Double ?? 0) > 0, "uncertainty.baseline")
        // Progress went to stderr, one line per pair.
        #expect(result.stderr.contains("[4/7]"))
        for file in ["out/calib.json", "out/calib.yml", "out/ros/left.yaml", "out/ros/right.yaml", "out/report/coverage.svg",
                     "out/report/residuals-per-view.svg", "out/report/residual-scatter.svg", "out/report/rectified-best.png",
                     "out/report/rectified-worst.png", "out/report/projection-uncertainty.svg", "out/report/index.html"] {
            #expect(fm.fileExists(atPath: dir.appendingPathComponent(file).path), "\(file)")
        }
        // No temporary files left next to the outputs.
        let leftovers = try fm.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty)
        // A bare --square: the translations are in board units, and the file says so.
        let written = try StereoCalibration(contentsOfFile: dir.appendingPathComponent("out/calib.json").path)
        #expect(written.translationUnit == .unitless && result.stderr.contains("\"unit\": \"unitless\""))
        // The file carries the same standard deviations as --json, to the bit. Both are read with
        // JSONValue (Swift's correctly rounded Double(String)): Foundation's JSONSerialization on
        // Linux returns some numbers as NSDecimalNumber, whose doubleValue can be ulps off
        // (0.6561144552416703 came back as ...701), which made one figure look like two.
        let fileSigma = try #require(written.extra["uncertainty"]?.object?["left"]?.object?["fx"]?.number)
        let printed = try JSONValue(parsing: result.stdout)
        let printedSigma = try #require(printed.object?["uncertainty"]?.object?["left"]?.object?["fx"]?.number)
        #expect(fileSigma.bitPattern == printedSigma.bitPattern, "σ of the left fx: \(fileSigma) in the file, \(printedSigma) printed")

        // ROS: a bare --square leaves the right camera's baseline in squares (P2[0][3] = −f′·B, B as in
        // the calibration file; 1e-3 as squareUnitIsRecorded holds the metres), and the command says ROS reads it as metres.
        let ros = try ROSCameraInfo(contentsOfFile: dir.appendingPathComponent("out/ros/right.yaml").path)
        let rosBaseline = -ros.projection[0, 3] / ros.projection[0, 0]
        #expect(abs(rosBaseline - written.baseline) < 1e-3 * written.baseline, "ROS \(rosBaseline), file \(written.baseline) squares")
        #expect(result.stderr.contains("which ROS reads as metres"), "\(result.stderr)")
        // --corners-out leaves out the image where no board was found (right06.pgm) and keeps its
        // partner, whose board was.
        let cornerFile = try #require(try JSONValue(parsing: String(contentsOfFile: dir.appendingPathComponent("out/corners.json").path,
                                                                   encoding: .utf8)).object)
        let listed = (cornerFile["images"]?.object?.pairs.map(\.key) ?? []).map { ($0 as NSString).lastPathComponent }
        #expect(listed.contains("left06.jpg") && !listed.contains("right06.pgm"), "\(listed.sorted())")
        try Self.expectTheReportShowsTheFit(report: dir.appendingPathComponent("out/report"), calibration: written,
                                            corners: dir.appendingPathComponent("out/corners.json").path, pairs: 4)
    }

    /// Calibration/GUIDE.md's report: "residual-scatter.svg — every corner's error vector",
    /// "rectified-best.png, rectified-worst.png — the pairs with the smallest and largest vertical
    /// disparity after rectification, side by side with green guide lines", "projection-uncertainty.svg
    /// — … a heat map on one colour scale", "index.html — … every parameter and its standard deviation".
    static func expectTheReportShowsTheFit(report: URL, calibration: StereoCalibration, corners: String, pairs: Int) throws {
        func text(_ name: String) throws -> String { try String(contentsOf: report.appendingPathComponent(name), encoding: .utf8) }
        // One point per corner residual, both cameras (54 corners a view), and the RMS circle.
        let scatter = try text("residual-scatter.svg")
        #expect(scatter.components(separatedBy: "<circle ").count - 1 == 2 * 54 * pairs + 1)
        // "residuals-per-view.svg — RMS per pair, left and right": one left (blue) and one right
        // (orange) bar per pair, each titled with its image.
        let bars = try text("residuals-per-view.svg")
        #expect(bars.components(separatedBy: "fill=\"#1f77b4\" stroke=\"none\"><title>").count - 1 == pairs, "\(bars)")
        #expect(bars.components(separatedBy: "fill=\"#ff7f0e\" stroke=\"none\"><title>").count - 1 == pairs, "\(bars)")
        try Self.expectOneLogarithmicScale(try text("projection-uncertainty.svg"), panels: ["left", "right"], "projection-uncertainty.svg")
        // brown5 has 9 parameters per camera, each with its σ; then the extrinsics' σ and the baseline's.
        let page = try text("index.html")
        #expect(page.components(separatedBy: " ± ").count - 1 == 2 * 9, "index.html: \(page)")
        #expect(page.contains("rotation σ (degrees, x y z)") && page.contains("translation σ") && page.contains("baseline σ"))

        // The previews: both rectified images side by side, a green guide row every 32 rows (rows 16, 48, …).
        let size = calibration.left.size
        for name in ["rectified-best.png", "rectified-worst.png"] {
            let image = try ImageBuffer(contentsOfFile: report.appendingPathComponent(name).path)
            #expect(image.format == .rgb8 && image.size == ImageSize(width: 2 * size.width, height: size.height), "\(name): \(image.size)")
            func row(_ y: Int) -> [UInt8] { Array(image.bytes[(y * image.bytesPerRow)..<(y * image.bytesPerRow + 3 * image.size.width)]) }
            let green: [UInt8] = Array((0..<image.size.width).map { _ in [0, 220, 0] }.joined())
            #expect(row(16) == green && row(48) == green && row(17) != green, "\(name): guide rows")
        }
        // Best and worst are the pairs of smallest and largest vertical disparity: recomputed here
        // from the written calibration and the corners --corners-out wrote (kept to 1e-4 px, which
        // moves a pair's figure by about that much; the page prints 3 decimals).
        let list = try CornerList(contentsOfFile: corners)
        let shown = try Regex(#"<h2>(Best|Worst) rectified pair: (\S+) \+ (\S+) \(vertical rms ([0-9.]+) px\)</h2>"#)
        var named: [String: (left: String, right: String, rms: Double)] = [:]
        for match in page.matches(of: shown) {
            guard let kind = match.output[1].substring, let l = match.output[2].substring, let r = match.output[3].substring,
                  let v = match.output[4].substring.flatMap({ Double($0) }) else { continue }
            named[String(kind)] = (String(l), String(r), v)
        }
        let best = try #require(named["Best"], "index.html names no best pair"), worst = try #require(named["Worst"])
        let used = list.entries.keys.filter { $0.contains("/left") }.sorted().compactMap { left -> StereoView? in
            let right = left.replacingOccurrences(of: "/left", with: "/right")
            guard let l = list.entries[left]?.corners, let r = list.entries[right]?.corners, l.count == 54, r.count == 54,
                  list.entries[left]?.size == size else { return nil }
            return StereoView(left: CalibrationView(name: left, corners: l), right: CalibrationView(name: right, corners: r))
        }
        #expect(used.count == pairs, "\(used.map(\.name))")
        let figures = StereoErrorFigures(calibration: calibration, rectification: try calibration.rectification(), pairs: used)
        let ranked = zip(used, figures.pairRectifiedVerticalRMS).sorted { $0.1 < $1.1 }
        let smallest = try #require(ranked.first), largest = try #require(ranked.last)
        #expect(best.left == smallest.0.left.name && best.right == smallest.0.right.name && abs(best.rms - smallest.1) < 1e-3,
                "best \(best), recomputed \(ranked.map { ($0.0.left.name, $0.1) })")
        #expect(worst.left == largest.0.left.name && worst.right == largest.0.right.name && abs(worst.rms - largest.1) < 1e-3,
                "worst \(worst), recomputed \(ranked.map { ($0.0.left.name, $0.1) })")
    }

    /// Calibration/GUIDE.md: the heat maps of both cameras are "on one logarithmic colour scale": one
    /// scale under all `panels`, whose five ticks are a geometric progression (each printed to 3
    /// significant digits, 0.5 % at most: successive ratios agree within 2 %) spanning at least 2×,
    /// enough that a linear scale's ratios would differ by more (9 % at 2×).
    static func expectOneLogarithmicScale(_ svg: String, panels: [String], _ label: String) throws {
        #expect(svg.components(separatedBy: "logarithmic scale").count - 1 == 1, "\(label): one scale")
        #expect(svg.contains("; " + panels.joined(separator: ", ") + "</text>"), "\(label): panels \(panels)")
        let ticks = svg.matches(of: try Regex(#">([0-9.e+-]+) px</text>"#)).compactMap { $0.output[1].substring.flatMap { Double($0) } }
        try #require(ticks.count == 5, "\(label): ticks \(ticks)")
        let ratios = zip(ticks.dropFirst(), ticks).map { $0 / $1 }
        #expect(ticks[4] / ticks[0] >= 2 && (ratios.max() ?? 0) / (ratios.min() ?? 1) <= 1.02, "\(label): ticks \(ticks)")
    }

    /// Calibration/GUIDE.md's options: `--model brown4` (k1, k2, p1, p2), `--intrinsics` with
    /// Without `--output` the calibration goes to ./calib.json, as before, but no longer
    /// silently: the note names the whole path before any work, and the summary says "wrote".
    @Test("calibrate without --output says where the calibration is written")
    func theDefaultOutputIsNamed() throws {
        try #require(FileManager.default.fileExists(atPath: Self.data + "/left01.jpg"))
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try ParallaxCLI.run(["calibrate", "--left", Self.data + "/left0[1-4].jpg", "--right", Self.data + "/right0[1-4].jpg",
                                          "--board", "9x6", "--square", "1", "--model", "brown4"], timeout: 300, workingDirectory: dir)
        let written = dir.appendingPathComponent("calib.json").path
        #expect(result.status == 0 && result.stderr.contains("note: no --output given: the calibration will be written to ")
                && result.stderr.contains("/calib.json"), "\(result.stderr)")
        #expect(result.stdout.contains("wrote calib.json") && FileManager.default.fileExists(atPath: written), "\(result.stdout)")
    }

    /// `--fix right|both` (the held cameras come out exactly as given, the free one is refined),
    /// `--against` (how far two calibrations put each pixel apart, per side, also drawn in the
    /// report) and `--corners-out` read back by `--corners-in`.
    @Test("--model brown4, --intrinsics with --fix right and both, and --against do what the guide says")
    func heldIntrinsicsAndComparison() throws {
        try #require(FileManager.default.fileExists(atPath: Self.data + "/left01.jpg"))
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        func calibrate(_ extra: [String]) throws -> JSONObject {
            let result = try ParallaxCLI.run(["calibrate", "--left", Self.data + "/left0[1-4].jpg", "--right", Self.data + "/right0[1-4].jpg",
                                              "--board", "9x6", "--square", "1", "--model", "brown4", "--json"] + extra, timeout: 300)
            #expect(result.status == 0, "\(extra): \(result.stderr)")
            return try #require(try JSONValue(parsing: result.stdout).object)
        }
        _ = try calibrate(["--output", path("free.json"), "--corners-out", path("corners.json"), "--opencv-yaml", path("free.yml")])
        let free = try StereoCalibration(contentsOfFile: path("free.json"))
        // --corners-out writes "the corners found in every image, with each image's size".
        let written = try #require(try JSONValue(parsing: String(contentsOfFile: path("corners.json"), encoding: .utf8)).object)
        let images = written["images"]?.object?.keys.sorted() ?? [], sizes = try #require(written["image_sizes"]?.object)
        #expect(images.count == 8 && sizes.keys.sorted() == images, "image_sizes for \(sizes.keys.sorted())")
        #expect(sizes.keys.allSatisfy { sizes[$0]?.array?.compactMap(\.number) == [640, 480] })
        #expect(free.left.distortion.coefficients.count == 4 && free.right.distortion.coefficients.count == 4,
                "brown4: \(free.left.distortion.coefficients)")

        // The right camera held at a changed value: it stays exactly that, the left is refined.
        var held = free
        held.right.intrinsics.fx *= 1.01
        try FileAccess.writeAtomically(held.jsonText(), toPath: path("held.json"))
        let right = try calibrate(["--intrinsics", path("held.json"), "--fix", "right", "--output", path("right.json"), "--against", path("free.json")])
        let fixedRight = try StereoCalibration(contentsOfFile: path("right.json"))
        #expect(fixedRight.right.intrinsics == held.right.intrinsics && fixedRight.right.distortion == held.right.distortion)
        #expect(fixedRight.left.intrinsics != held.left.intrinsics, "the left camera was free and is refined")
        // --against free.json: the right camera's 1 % focal length moves its image corners by
        // about 1 % of their distance from the centre (~4 px at 640×480); no rotation undoes a
        // change of scale. The window, 1 to 10 px, is that figure within a factor of 2.5 either
        // way for what the free left camera and the distortion absorb; not a derived bound.
        let comparison = try #require(right["cross_validation"]?.object)
        #expect(comparison["between"]?.string?.contains("free.json") == true)
        let rightCorners = comparison["right"]?.object?["corners"]?.array?.compactMap { $0.number } ?? []
        #expect(rightCorners.count == 4 && rightCorners.allSatisfy { $0 > 1 && $0 < 10 }, "right corners \(rightCorners) px")

        // Both held: both exactly as given.
        _ = try calibrate(["--intrinsics", path("held.json"), "--fix", "both", "--output", path("both.json")])
        let fixedBoth = try StereoCalibration(contentsOfFile: path("both.json"))
        #expect(fixedBoth.left.intrinsics == held.left.intrinsics && fixedBoth.right.intrinsics == held.right.intrinsics)
        #expect(fixedBoth.left.distortion == held.left.distortion && fixedBoth.right.distortion == held.right.distortion)

        // The corners --corners-out wrote, solved again through --corners-in: the same calibration
        // but for the list's rounding, and the comparison drawn in the report too; compared with the
        // first calibration as --opencv-yaml wrote it (--against reads any format). The list keeps 4
        // decimals (each coordinate within 5e-5 px). Every residual here is below Huber's 2 px and
        // no corner is set aside, so the fit is plain least squares, which projects its
        // observations: the fitted points move by at most the rounding's norm over all 864
        // coordinates (4 pairs, 54 corners, x and y, 2 cameras), 5e-5 · √864 ≈ 1.5e-3 px. The
        // median pixel lies among them; the image's far corners, extrapolated, could move more.
        let same = try calibrate(["--output", path("again.json"), "--corners-in", path("corners.json"),
                                  "--against", path("free.yml"), "--report", path("report")])
        for side in ["left", "right"] {
            let median = same["cross_validation"]?.object?[side]?.object?["median"]?.number ?? .nan
            #expect(median <= 5e-5 * Double(864).squareRoot(), "\(side): \(median) px from the same corners, rounded")
        }
        #expect(FileManager.default.fileExists(atPath: path("report/cross-validation.svg")), "--against draws cross-validation.svg")
        #expect(same["cross_validation"]?.object?["between"]?.string?.contains("free.yml") == true)
    }

    @Test("--cross-validate calibrates alternate halves of OpenCV's sample and reports their projection difference")
    func crossValidatesOnHalves() throws {
        try #require(FileManager.default.fileExists(atPath: Self.data + "/left01.jpg"))
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try ParallaxCLI.run([
            "calibrate", "--left", Self.data + "/left[01]*.jpg", "--right", Self.data + "/right[01]*.jpg", "--board", "9x6",
            "--square", "1", "--cross-validate", "--json", "--output", dir.appendingPathComponent("rig.json").path,
            "--report", dir.appendingPathComponent("report").path,
        ], timeout: 300)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let cross = try #require(figures["cross_validation"] as? [String: Any])
        #expect((cross["between"] as? String)?.contains("7 and 6") == true)
        for side in ["left", "right"] {
            let entry = try #require(cross[side] as? [String: Any])
            let median = entry["median"] as? Double ?? -1
            // Calibration/GUIDE.md: "agree to 0.15 px (left) and 0.16 px (right) in the median".
            #expect(abs(median - (side == "left" ? 0.15 : 0.16)) <= 0.0051, "\(side) median \(median)")
            #expect((entry["corners"] as? [Any])?.count == 4 && (entry["rotation_degrees"] as? Double) != nil)
        }
        // "… and differ by several pixels in the left image's corners, which no board covered": each of
        // the four by 3 px or more (measured 3.3 to 9.7 px; the medians are 0.15 px).
        let leftCorners = ((cross["left"] as? [String: Any])?["corners"] as? [Any] ?? []).compactMap { $0 as? Double }
        print("cross-validation, image corners: left \(leftCorners) px, right \((cross["right"] as? [String: Any])?["corners"] ?? "") px")
        #expect(leftCorners.count == 4 && leftCorners.allSatisfy { $0 >= 3 }, "left corners \(leftCorners)")
        let svg = try String(contentsOf: dir.appendingPathComponent("report/cross-validation.svg"), encoding: .utf8)
        try Self.expectOneLogarithmicScale(svg, panels: ["left", "right"], "cross-validation.svg")

        // Too few pairs for two halves of three: refused with the count, nothing written.
        let few = try ParallaxCLI.run([
            "calibrate", "--left", Self.data + "/left0[1-4].jpg", "--right", Self.data + "/right0[1-4].jpg", "--board", "9x6",
            "--square", "1", "--cross-validate", "--output", dir.appendingPathComponent("few.json").path,
        ], timeout: 300)
        #expect(few.status != 0 && few.stderr.contains("at least 6 usable pairs"), "\(few.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("few.json").path))
    }

    /// Copies OpenCV's sample images `left<k>.jpg` (and `right<k>.jpg`) into `dir` under their own names.
    static func copySamplePairs(_ numbers: [String], into dir: URL, sides: [String] = ["left", "right"]) throws {
        for k in numbers {
            for side in sides {
                try FileManager.default.copyItem(atPath: "\(data)/\(side)\(k).jpg", toPath: dir.appendingPathComponent("\(side)\(k).jpg").path)
            }
        }
    }

    @Test("a failed output leaves an earlier calibration byte for byte as it was (the reproduction: --kalibr /proc/k.yaml)")
    func aFailedOutputKeepsTheEarlierCalibration() throws {
        let fm = FileManager.default
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? fm.removeItem(at: dir) }
        try Self.copySamplePairs(["01", "02", "03", "04"], into: dir)
        let previous = dir.appendingPathComponent("prev.json").path
        let earlier = Data("{\"an earlier calibration\": true}\n".utf8)
        try earlier.write(to: URL(fileURLWithPath: previous))
        let result = try ParallaxCLI.run(["calibrate", "--left", dir.path + "/left*", "--right", dir.path + "/right*",
                                          "--board", "9x6", "--square", "25mm", "--output", previous, "--kalibr", "/proc/k.yaml"])
        #expect(result.status != 0 && result.stderr.contains("/proc/k.yaml"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: previous)) == earlier)
        #expect(try fm.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }.isEmpty)
        // An output naming an input image is refused before any work.
        let clobber = try ParallaxCLI.run(["calibrate", "--left", dir.path + "/left*", "--right", dir.path + "/right*",
                                           "--board", "9x6", "--square", "25mm", "--output", dir.path + "/left01.jpg"])
        #expect(clobber.status != 0 && clobber.stderr.contains("is also the input --left"), "\(clobber.stderr)")
        #expect(try Data(contentsOf: dir.appendingPathComponent("left01.jpg")) == Data(contentsOf: URL(fileURLWithPath: "\(Self.data)/left01.jpg")))
    }

    @Test("a plainly wrong calibration is refused with its figures and the reason, and nothing is written")
    func qualityGate() throws {
        let fm = FileManager.default
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? fm.removeItem(at: dir) }
        // The same images on both sides: a baseline of zero.
        try Self.copySamplePairs(["01", "02", "03", "04"], into: dir, sides: ["left"])
        let same = dir.appendingPathComponent("same.json").path
        let twice = try ParallaxCLI.run(["calibrate", "--left", dir.path + "/left*", "--right", dir.path + "/left*",
                                         "--board", "9x6", "--square", "25mm", "--output", same])
        #expect(twice.status == 1 && twice.stderr.contains("baseline") && twice.stderr.contains("same images"), "\(twice.stderr)")
        #expect(!fm.fileExists(atPath: same))
        // Pairs that do not show the same moments (names without numbers, paired in sorted order): a large RMS.
        let mixed = dir.appendingPathComponent("mixed")
        try fm.createDirectory(at: mixed, withIntermediateDirectories: true)
        for (name, source) in [("a", "left01"), ("b", "left02"), ("c", "left03"), ("d", "left04")] {
            try fm.copyItem(atPath: "\(Self.data)/\(source).jpg", toPath: mixed.appendingPathComponent("L-\(name).jpg").path)
        }
        for (name, source) in [("a", "right06"), ("b", "right07"), ("c", "right08"), ("d", "right09")] {
            try fm.copyItem(atPath: "\(Self.data)/\(source).jpg", toPath: mixed.appendingPathComponent("R-\(name).jpg").path)
        }
        let wrong = dir.appendingPathComponent("wrong.json").path
        let result = try ParallaxCLI.run(["calibrate", "--left", mixed.path + "/L-*", "--right", mixed.path + "/R-*",
                                          "--pair-by", "order", "--board", "9x6", "--square", "25mm", "--output", wrong])
        #expect(result.status == 1 && result.stderr.contains("--max-rms") && result.stderr.contains("rms stereo"), "\(result.stderr)")
        #expect(!fm.fileExists(atPath: wrong))
    }

    /// The gate's threshold at its edge: a limit just below the stereo RMS refuses the
    /// calibration (status 1, nothing written), one just above writes it; the default is 1 px.
    @Test("--max-rms refuses just below the stereo RMS and writes just above it; its default is 1 px")
    func qualityGateAtItsEdge() throws {
        try #require(FileManager.default.fileExists(atPath: Self.data + "/left01.jpg"))
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func calibrate(_ output: String, _ extra: [String]) throws -> ParallaxCLI.Result {
            try ParallaxCLI.run(["calibrate", "--left", Self.data + "/left0[1-4].jpg", "--right", Self.data + "/right0[1-4].jpg",
                                 "--board", "9x6", "--square", "1", "--json", "--output", dir.appendingPathComponent(output).path] + extra,
                                timeout: 300)
        }
        let free = try calibrate("free.json", [])
        let rms = try #require(try JSONValue(parsing: free.stdout).object?["rms_stereo"]?.number)
        let below = try calibrate("below.json", ["--max-rms", "\(rms * (1 - 1e-6))"])
        #expect(below.status == 1 && below.stderr.contains("--max-rms"), "\(below.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("below.json").path))
        let above = try calibrate("above.json", ["--max-rms", "\(rms * (1 + 1e-6))"])
        #expect(above.status == 0 && FileManager.default.fileExists(atPath: dir.appendingPathComponent("above.json").path), "\(above.stderr)")
        let defaults = try CalibratePairsCommand.parse(["--left", "l*.png", "--right", "r*.png", "--board", "9x6", "--square", "1"])
        #expect(defaults.fit.maxRMS == 1)
        #expect(try CalibrateCameraCommand.parse(["--images", "c*.png", "--board", "9x6", "--square", "1"]).fit.maxRMS == 1)
    }

    @Test("--model takes each lens model the guide names: brown4, brown5 (the default), brown8 and fisheye")
    func lensModelsByName() throws {
        let files = ["--left", "l*.png", "--right", "r*.png", "--board", "9x6", "--square", "1"]
        #expect(try CalibratePairsCommand.parse(files).fit.model == .brown5)
        for (name, model) in [("brown4", LensModelKind.brown4), ("brown5", .brown5), ("brown8", .brown8), ("fisheye", .fisheye)] {
            #expect(try CalibratePairsCommand.parse(files + ["--model", name]).fit.model == model, "--model \(name)")
        }
        #expect(throws: (any Error).self) { try CalibratePairsCommand.parse(files + ["--model", "brown6"]) }
    }

    @Test("files that cannot be paired stop the run with the list (the reproduction: left0*.jpg with right*.jpg)")
    func unpairedFilesAreListed() throws {
        let fm = FileManager.default
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? fm.removeItem(at: dir) }
        for name in try fm.contentsOfDirectory(atPath: Self.data)
        where (name.hasPrefix("left") || name.hasPrefix("right")) && name.hasSuffix(".jpg") {
            try fm.copyItem(atPath: "\(Self.data)/\(name)", toPath: dir.appendingPathComponent(name).path)
        }
        let output = dir.appendingPathComponent("calib.json").path
        let arguments = ["calibrate", "--left", dir.path + "/left0*.jpg", "--right", dir.path + "/right*.jpg",
                         "--board", "9x6", "--square", "25mm", "--output", output]
        let refused = try ParallaxCLI.run(arguments)
        #expect(refused.status != 0, "\(refused.stderr)")
        #expect(refused.stderr.contains("right.jpg: its name has no number to pair by"), "\(refused.stderr)")
        // README: "refused naming `right.jpg` and `right11.jpg`…`right14.jpg`".
        for k in 11...14 {
            #expect(refused.stderr.contains("right\(k).jpg: no left image with number \(k)"), "\(refused.stderr)")
        }
        #expect(refused.stderr.contains("5 of 23 files cannot be paired (9 pairs line up by number)"), "\(refused.stderr)")
        // "… stops the run before any detection": detection prints a [k/n] line per pair; none came.
        #expect(refused.stderr.range(of: #"\[[0-9]+/[0-9]+\]"#, options: .regularExpression) == nil, "\(refused.stderr)")
        #expect(!fm.fileExists(atPath: output))
        // Asked to go on, the nine pairs that line up make a good calibration.
        let skipped = try ParallaxCLI.run(arguments + ["--skip-unpaired", "--json"])
        #expect(skipped.status == 0, "\(skipped.stderr)")
        // "… go on without the files that cannot be paired (they are listed)".
        for line in ["skipped \(dir.path)/right.jpg: its name has no number to pair by", "skipped \(dir.path)/right11.jpg: no left image with number 11"] {
            #expect(skipped.stderr.contains(line), "\(line)")
        }
        let figures = try #require(try JSONValue(parsing: skipped.stdout).object)
        #expect((figures["rms_stereo"]?.number ?? 99) < 1)
        #expect(figures["unit"]?.string == "mm")
        #expect(figures["pairs_used"]?.number == 9)
    }

    /// README: "`rectify` and `calibrate` never cost you a file you had. An output that is also an
    /// input, or two outputs with one path, are refused before any work" (rectify's side:
    /// RectifyCommandTests). The same file named by --output and, through `./`, by --opencv-yaml;
    /// and a --kalibr file that is one of the two --ros-dir writes.
    @Test("calibrate refuses two outputs with one path before any detection, and an earlier file there stays as it was")
    func twoOutputsWithOnePathAreRefusedBeforeAnyWork() throws {
        let fm = FileManager.default
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? fm.removeItem(at: dir) }
        let earlier = dir.appendingPathComponent("x.yml").path
        try FileAccess.writeAtomically("an earlier calibration", toPath: earlier)
        let images = ["calibrate", "--left", Self.data + "/left0[1-4].jpg", "--right", Self.data + "/right0[1-4].jpg",
                      "--board", "9x6", "--square", "1"]
        let cases: [(extra: [String], message: String)] = [
            (["--output", earlier, "--opencv-yaml", dir.path + "/./x.yml"], "--output and --opencv-yaml both name"),
            (["--output", dir.appendingPathComponent("rig.json").path, "--ros-dir", dir.appendingPathComponent("ros").path,
              "--kalibr", dir.appendingPathComponent("ros/left.yaml").path], "--kalibr and --ros-dir both name"),
        ]
        for (extra, message) in cases {
            let refused = try ParallaxCLI.run(images + extra)
            #expect(refused.status != 0 && refused.stderr.contains(message), "\(extra): \(refused.stderr)")
            // Detection prints a [k/n] line per pair: refused before it started.
            #expect(refused.stderr.range(of: #"\[[0-9]+/[0-9]+\]"#, options: .regularExpression) == nil, "\(refused.stderr)")
        }
        #expect(try String(contentsOfFile: earlier, encoding: .utf8) == "an earlier calibration")
        #expect(try fm.contentsOfDirectory(atPath: dir.path) == ["x.yml"], "nothing else was written")
    }

    /// Calibration/GUIDE.md: "Every `--calibration` (and `calibrate --intrinsics`) reads what the CLI writes":
    /// `--intrinsics` given an OpenCV YAML file. With `--fix both` both cameras come out exactly as
    /// the file gives them (the right camera's fx moved 1 %, so the fit could not arrive there on
    /// its own). The sample calibration has eight distortion coefficients, hence brown8.
    @Test("calibrate --intrinsics reads an OpenCV YAML file: with --fix both, the cameras come out as the file gives them")
    func intrinsicsFromAnOpenCVYAMLFile() throws {
        try #require(FileManager.default.fileExists(atPath: Self.data + "/left01.jpg"))
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var held = try StereoCalibration(contentsOfFile: CalibrationFormatsTests.sample)
        held.right.intrinsics.fx *= 1.01
        let yaml = dir.appendingPathComponent("held.yml").path
        try FileAccess.writeAtomically(OpenCVStereoFile.text(for: held, rectification: try held.rectification()), toPath: yaml)
        let (given, format) = try CalibrationFile.load(yaml)
        #expect(format == .openCVYAML && given.right.intrinsics == held.right.intrinsics)
        let output = dir.appendingPathComponent("both.json").path
        let result = try ParallaxCLI.run(["calibrate", "--left", Self.data + "/left0[1-4].jpg", "--right", Self.data + "/right0[1-4].jpg",
                                          "--board", "9x6", "--square", "1", "--model", "brown8", "--intrinsics", yaml,
                                          "--fix", "both", "--output", output])
        #expect(result.status == 0, "\(result.stderr)")
        let fixed = try StereoCalibration(contentsOfFile: output)
        #expect(fixed.left.intrinsics == given.left.intrinsics && fixed.right.intrinsics == given.right.intrinsics)
        #expect(fixed.left.distortion == given.left.distortion && fixed.right.distortion == given.right.distortion)
        // The sample's lenses have 8 coefficients (k6 −0.936): held under the default brown5
        // they would lose three, so that is refused, naming the model that holds them.
        let narrow = try ParallaxCLI.run(["calibrate", "--left", Self.data + "/left0[1-4].jpg", "--right", Self.data + "/right0[1-4].jpg",
                                          "--board", "9x6", "--square", "1", "--intrinsics", yaml, "--fix", "left",
                                          "--output", dir.appendingPathComponent("narrow.json").path])
        #expect(narrow.status != 0)
        #expect(narrow.stderr.contains("the left camera has 8 distortion coefficients (brown5 holds 5)"), "\(narrow.stderr)")
        #expect(narrow.stderr.contains("use --model brown8"), "\(narrow.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("narrow.json").path))
    }

    @Test("a square with a unit is recorded as the calibration's unit, and distances convert against it")
    func squareUnitIsRecorded() throws {
        let fm = FileManager.default
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? fm.removeItem(at: dir) }
        try Self.copySamplePairs(["01", "02", "03", "04"], into: dir)
        let output = dir.appendingPathComponent("calib.json").path
        let result = try ParallaxCLI.run(["calibrate", "--left", dir.path + "/left*", "--right", dir.path + "/right*",
                                          "--board", "9x6", "--square", "2.5cm", "--output", output,
                                          "--ros-dir", dir.path + "/ros", "--kalibr", dir.path + "/camchain.yaml"])
        #expect(result.status == 0, "\(result.stderr)")
        let written = try StereoCalibration(contentsOfFile: output)
        #expect(written.translationUnit == .centimetre)
        // The printed figures: "± σ after each intrinsic and the baseline".
        let number = #"-?[0-9.]+(e[+-]?[0-9]+)?"#
        for camera in ["left ", "right"] {
            let line = try Regex("\(camera) fx \(number) ± \(number) fy \(number) ± \(number) cx \(number) ± \(number) cy \(number) ± \(number)\n")
            #expect(result.stdout.contains(line), "\(camera): \(result.stdout)")
        }
        #expect(result.stdout.contains(try Regex("baseline \(number) ± \(number) cm\n")), "\(result.stdout)")
        // Kalibr's camchain: the translation in metres, the file's centimetres / 100 (T_cn_cnm1's
        // rows end with T's components; the text is each double's shortest exact form).
        let camchain = try String(contentsOfFile: dir.path + "/camchain.yaml", encoding: .utf8)
        let rows = camchain.components(separatedBy: "T_cn_cnm1:\n").dropFirst().first?.split(separator: "\n").prefix(3) ?? []
        let kalibrT = rows.compactMap { $0.split(separator: ",").last?.split(separator: " ").first.flatMap { Double($0) } }
        let t = written.extrinsics.translation
        #expect(kalibrT.count == 3 && zip(kalibrT, [t.x, t.y, t.z]).allSatisfy { abs($0 - $1 / 100) <= 1e-12 * length(t) / 100 },
                "Kalibr T \(kalibrT) m for \(t) cm")
        // The same pairs with the square in millimetres: the baseline and its σ (`uncertainty.baseline`,
        // "in the file's unit") come out 10 times the centimetre figures. The two solves are the same
        // problem scaled, but for the solver's stopping point and its finite-difference Jacobian, whose
        // steps (1e-6 · max(1, |x|)) do not scale with the unit: measured 5e-11 apart in the baseline and
        // 5e-9 in its σ, held at 1e-9 and 1e-6.
        let millimetres = try ParallaxCLI.run(["calibrate", "--left", dir.path + "/left*", "--right", dir.path + "/right*",
                                               "--board", "9x6", "--square", "25mm", "--json", "--output", dir.path + "/mm.json"])
        let figures = try #require(try JSONValue(parsing: millimetres.stdout).object, "\(millimetres.stderr)")
        let sigmaCentimetres = try #require(written.extra["uncertainty"]?.object?["baseline"]?.number)
        let sigmaMillimetres = try #require(figures["uncertainty"]?.object?["baseline"]?.number)
        print("baseline \(written.baseline) ± \(sigmaCentimetres) cm; \(figures["baseline"]?.number ?? .nan) ± \(sigmaMillimetres) mm")
        #expect(figures["unit"]?.string == "mm" && abs((figures["baseline"]?.number ?? .nan) / (10 * written.baseline) - 1) < 1e-9)
        #expect(abs(sigmaMillimetres / (10 * sigmaCentimetres) - 1) < 1e-6, "σ \(sigmaMillimetres) mm, \(sigmaCentimetres) cm")
        // OpenCV's sample squares are about 2.5 cm: the baseline comes out near 8 cm, in cm.
        #expect(written.baseline > 5 && written.baseline < 12)
        // ROS camera_info is in metres (REP 103): P2[0][3] = −f'·B with B in metres, not cm.
        let right = try ROSCameraInfo(contentsOfFile: dir.path + "/ros/right.yaml")
        let baselineMetres = -right.projection[0, 3] / right.projection[0, 0]
        #expect(abs(baselineMetres - written.baseline / 100) < 1e-3 * written.baseline / 100,
                "ROS baseline \(baselineMetres) m for a \(written.baseline) cm calibration")
        // 1.5 m is 150 in this file's unit (before, a suffix assumed millimetres: 1500 cm, 15 m).
        let converged = try ParallaxCLI.run(["rectification", "--calibration", output, "--json", "--convergence", "1.5m"])
        #expect(try JSONValue(parsing: converged.stdout).object?["convergence_distance"]?.number == 150)
    }

    @Test func anEmptyGlobIsAnErrorNamingThePattern() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("calib.json").path
        let result = try ParallaxCLI.run(["calibrate", "--left", dir.path + "/nothing*.png", "--right", dir.path + "/none*.png",
                                          "--board", "9x6", "--square", "25mm", "--output", output])
        #expect(result.status != 0)
        #expect(result.stderr.contains("nothing*.png"))
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// When nothing usable is left the command fails, lists every file with its reason, and writes nothing.
    @Test func failsWithoutOutputsWhenTooFewPairsRemain() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for n in 1...3 {
            try Data("garbage".utf8).write(to: dir.appendingPathComponent("left\(n).png"))
            try Self.drawnBoardPGM(width: 200, height: 150, square: 1).write(to: dir.appendingPathComponent("right\(n).pgm"))
        }
        let output = dir.appendingPathComponent("calib.json").path
        let report = dir.appendingPathComponent("report").path
        let result = try ParallaxCLI.run(["calibrate", "--left", dir.path + "/left*", "--right", dir.path + "/right*",
                                          "--board", "9x6", "--square", "25mm", "--output", output, "--report", report])
        #expect(result.status != 0)
        for n in 1...3 { #expect(result.stderr.contains("left\(n).png")) }
        #expect(result.stderr.contains("only 0 usable"))
        #expect(!FileManager.default.fileExists(atPath: output))
        #expect(!FileManager.default.fileExists(atPath: report))
    }

    @Test func targetDrawsATrueSizeBoard() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("board.svg").path
        let result = try ParallaxCLI.run(["target", "--board", "9x6", "--square", "25mm", "--output", output])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let svg = try String(contentsOfFile: output, encoding: .utf8)
        // 10 × 7 squares of 25 mm is wider than tall: landscape A4.
        #expect(svg.contains("width=\"297.0mm\" height=\"210.0mm\""))
        // Half of the 70 squares are dark.
        #expect(svg.components(separatedBy: "fill=\"black\"").count - 1 == 35)
        // The 50 mm check bar (the page's units are millimetres) and the square at the top left dark.
        #expect(svg.contains("viewBox=\"0 0 297.0 210.0\"") && svg.contains("width=\"50\" height=\"1.5\""))
        let firstSquare = svg.components(separatedBy: "<rect ").dropFirst().first { $0.contains("width=\"25.0\"") }
        #expect(firstSquare?.contains("fill=\"black\"") == true, "the top-left square: \(firstSquare ?? "none")")
        // Calibration/GUIDE.md: the sheets in Calibration/ are this command's output, ready to print.
        let shipped = ParallaxCLI.packageRoot.appendingPathComponent("Calibration/board-9x6-25mm-a4.svg").path
        #expect(svg == (try String(contentsOfFile: shipped, encoding: .utf8)), "Calibration/board-9x6-25mm-a4.svg")
        let tooBig = try ParallaxCLI.run(["target", "--board", "9x6", "--square", "40mm", "--output", output + ".big.svg"])
        #expect(tooBig.status != 0)
        #expect(tooBig.stderr.contains("does not fit"))
        #expect(!FileManager.default.fileExists(atPath: output + ".big.svg"))
        // An output whose extension says something else than what is written is refused.
        let png = dir.appendingPathComponent("board.png").path
        let wrongKind = try ParallaxCLI.run(["target", "--board", "9x6", "--square", "25mm", "--output", png])
        #expect(wrongKind.status != 0 && wrongKind.stderr.contains(".svg") && !FileManager.default.fileExists(atPath: png))
        let letter = try ParallaxCLI.run(["target", "--board", "9x6", "--square", "20mm", "--paper", "Letter", "--output", output])
        #expect(letter.status == 0, "\(letter.stderr)")
        let shippedLetter = ParallaxCLI.packageRoot.appendingPathComponent("Calibration/board-9x6-20mm-letter.svg").path
        #expect(try String(contentsOfFile: output, encoding: .utf8) == String(contentsOfFile: shippedLetter, encoding: .utf8),
                "Calibration/board-9x6-20mm-letter.svg")
        let badPaper = try ParallaxCLI.run(["target", "--board", "9x6", "--square", "20mm", "--paper", "a3", "--output", output])
        #expect(badPaper.status != 0 && badPaper.stderr.contains("--paper"))
    }
}
