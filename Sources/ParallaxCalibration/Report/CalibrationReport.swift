#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ParallaxGeometry
import ParallaxImage

/// The diagnostic files of `parallax calibrate --report DIR`:
///
/// - `residuals-per-view.svg`: each pair's RMS reprojection error, left and right bars, with the overall RMS;
/// - `residual-scatter.svg`: every corner's residual vector (projected − observed), left and right, with the RMS circle;
/// - `coverage.svg`: where the corners of all used views fall in each image, the board outlines per view;
/// - `rectified-best.png` / `rectified-worst.png`: the pair with the smallest and largest vertical
///   disparity after rectification, side by side with horizontal guide lines: a feature must lie on
///   the same row in both halves;
/// - `projection-uncertainty.svg`: the projection uncertainty over each image (``ProjectionUncertainty``),
///   as a heat map with its colour scale, the largest value marked;
/// - `index.html`: the above on one page with the figures and the parameters' standard deviations.
public enum CalibrationReport {
    /// Colours of the left and right camera in every chart.
    static let leftColour = "#1f77b4", rightColour = "#ff7f0e"

    /// One camera's data in a chart: its colour, name, and one entry per view (residual
    /// vectors, or corners), with the views' names.
    struct Series {
        var colour: String
        var camera: String
        var names: [String]
        var values: [[SIMD2<Double>]]
    }

    /// The left and right series of a stereo result: residuals, or (`corners`) the observed corners.
    static func stereoSeries(_ result: StereoCalibrationResult, corners: Bool) -> [Series] {
        [Series(colour: leftColour, camera: "left", names: result.pairs.map(\.left.name),
                values: corners ? result.pairs.map(\.left.corners) : result.leftResiduals),
         Series(colour: rightColour, camera: "right", names: result.pairs.map(\.right.name),
                values: corners ? result.pairs.map(\.right.corners) : result.rightResiduals)]
    }

    /// The per-pair RMS bar chart.
    public static func residualsPerView(_ result: StereoCalibrationResult) -> String {
        residualBars(stereoSeries(result, corners: false), rms: result.rms, title: "Reprojection RMS per pair (px)",
                     legend: "left camera blue, right orange")
    }

    /// The per-image RMS bar chart of a one-camera calibration.
    public static func residualsPerView(_ result: MonoCalibrationResult) -> String {
        residualBars([Series(colour: leftColour, camera: "camera", names: result.viewNames, values: result.residuals)],
                     rms: result.rms, title: "Reprojection RMS per image (px)", legend: "one bar per image")
    }

    /// The residual scatter plot.
    public static func residualScatter(_ result: StereoCalibrationResult) -> String {
        residualScatter(stereoSeries(result, corners: false), rms: result.rms)
    }

    /// The residual scatter plot of a one-camera calibration.
    public static func residualScatter(_ result: MonoCalibrationResult) -> String {
        residualScatter([Series(colour: leftColour, camera: "camera", names: result.viewNames, values: result.residuals)], rms: result.rms)
    }

    /// The coverage map: corners of every used view over both images.
    public static func coverage(_ result: StereoCalibrationResult, columns: Int, rows: Int) -> String {
        coverage(stereoSeries(result, corners: true), size: result.calibration.left.size, columns: columns, rows: rows,
                 title: "Corner coverage: left (blue) and right (orange) images, \(result.pairs.count) pairs")
    }

    /// The coverage map of a one-camera calibration; `corners` are each used image's, by name.
    public static func coverage(_ result: MonoCalibrationResult, corners: [String: [SIMD2<Double>]], columns: Int, rows: Int) -> String {
        coverage([Series(colour: leftColour, camera: "camera", names: result.viewNames,
                         values: result.viewNames.map { corners[$0] ?? [] })],
                 size: result.camera.size, columns: columns, rows: rows,
                 title: "Corner coverage: \(result.viewNames.count) images")
    }

    static func residualBars(_ series: [Series], rms overall: Double, title: String, legend: String) -> String {
        let n = series.first?.values.count ?? 0
        let barWidth = 10.0, gap = 8.0
        let group = Double(series.count) * barWidth + gap
        let margin = (left: 60.0, right: 20.0, top: 46.0, bottom: 100.0)
        let plotWidth = max(Double(n) * group, 480)
        let plotHeight = 260.0
        var svg = SVGDocument(width: margin.left + plotWidth + margin.right, height: margin.top + plotHeight + margin.bottom)
        func rms(_ r: [SIMD2<Double>]) -> Double { (r.reduce(0) { $0 + dot($1, $1) } / Double(max(r.count, 1))).squareRoot() }
        let viewRMS = series.map { $0.values.map(rms) }
        let top = max(viewRMS.flatMap { $0 }.max() ?? 0, overall) * 1.15 + 1e-9
        func y(_ v: Double) -> Double { margin.top + plotHeight * (1 - v / top) }
        svg.text(margin.left, 18, title, size: 13)
        svg.text(margin.left, 34, "\(legend); dashed line: overall \(formatPixels(overall)) px", size: 11)
        svg.line(margin.left, margin.top, margin.left, margin.top + plotHeight, stroke: "#222")
        svg.line(margin.left, margin.top + plotHeight, margin.left + plotWidth, margin.top + plotHeight, stroke: "#222")
        for k in 0...4 {
            let v = top * Double(k) / 4
            svg.line(margin.left - 4, y(v), margin.left + plotWidth, y(v), stroke: "#ddd")
            svg.text(margin.left - 6, y(v) + 4, "\(formatPixels(v))", size: 10, anchor: "end")
        }
        for i in 0..<n {
            let x = margin.left + Double(i) * group + gap / 2
            for (s, camera) in series.enumerated() {
                let value = viewRMS[s][i]
                svg.rect(x + Double(s) * barWidth, y(value), barWidth, y(0) - y(value), fill: camera.colour,
                         title: "\(camera.names[i]): \(formatPixels(value)) px")
            }
            let label = series[0].names[i].split(separator: "/").last.map(String.init) ?? ""
            svg.text(x + Double(series.count) * barWidth / 2, margin.top + plotHeight + 8, label, size: 9, anchor: "end", rotate: true)
        }
        svg.line(margin.left, y(overall), margin.left + plotWidth, y(overall), stroke: "#c00", dash: true)
        return svg.text
    }

    static func residualScatter(_ series: [Series], rms: Double) -> String {
        let size = 420.0, margin = 40.0
        var svg = SVGDocument(width: size + 2 * margin, height: size + 2 * margin + 20)
        let all = series.flatMap { $0.values.flatMap { $0 } }
        let extent = max(all.map { max(abs($0.x), abs($0.y)) }.max() ?? 1, 3 * rms, 1e-6) * 1.05
        let centre = margin + size / 2
        func p(_ v: SIMD2<Double>) -> SIMD2<Double> { SIMD2(centre + v.x / extent * size / 2, 20 + centre + v.y / extent * size / 2) }
        svg.text(margin, 16, "Residuals (projected − observed), ±\(formatPixels(extent)) px; circle: RMS \(formatPixels(rms)) px", size: 13)
        svg.rect(margin, margin + 20, size, size, fill: "none", stroke: "#222")
        svg.line(centre, margin + 20, centre, margin + 20 + size, stroke: "#ccc")
        svg.line(margin, centre + 20, margin + size, centre + 20, stroke: "#ccc")
        for camera in series {
            for r in camera.values.flatMap({ $0 }) { let q = p(r); svg.circle(q.x, q.y, 1.6, fill: camera.colour, opacity: 0.5) }
        }
        svg.circle(centre, centre + 20, rms / extent * size / 2, fill: "none", stroke: "#c00")
        return svg.text
    }

    static func coverage(_ series: [Series], size: ImageSize, columns: Int, rows: Int, title: String) -> String {
        let scale = 400.0 / Double(max(size.width, 1))
        let w = Double(size.width) * scale, h = Double(size.height) * scale
        let margin = 20.0
        var svg = SVGDocument(width: Double(series.count) * (w + margin) + margin, height: h + 2 * margin + 20)
        svg.text(margin, 16, title, size: 13)
        for (panel, camera) in series.enumerated() {
            let x0 = margin + Double(panel) * (w + margin), y0 = margin + 20
            svg.rect(x0, y0, w, h, fill: "#f6f6f6", stroke: "#222")
            for corners in camera.values {
                guard corners.count == columns * rows else { continue }
                let outline = [0, columns - 1, columns * rows - 1, columns * (rows - 1)].map { corners[$0] * scale + SIMD2(x0, y0) }
                svg.polygon(outline, stroke: camera.colour, fill: camera.colour, opacity: 0.08)
                for c in corners { svg.circle(x0 + c.x * scale, y0 + c.y * scale, 1.2, fill: camera.colour, opacity: 0.7) }
            }
        }
        return svg.text
    }

    /// The projection-uncertainty heat maps of both cameras on one colour scale (0 to the
    /// larger camera's maximum), each cell titled with its σ.
    public static func projectionUncertainty(_ u: StereoUncertainty) -> String {
        projectionUncertainty([("left", u.leftProjection), ("right", u.rightProjection)])
    }

    /// The projection-uncertainty heat maps of one or more cameras (named) on one colour scale.
    public static func projectionUncertainty(_ cameras: [(name: String, projection: ProjectionUncertainty)]) -> String {
        heatMaps(cameras, title: "Projection uncertainty (px, worst direction): where a pixel's ray lands as the fitted "
                 + "intrinsics vary; ", centreLabel: "centre")
    }

    /// The cross-validation heat maps: how far apart two calibrations put each pixel.
    public static func crossValidation(_ cameras: [(name: String, difference: ProjectionDifference)], between: String) -> String {
        heatMaps(cameras.map { ($0.name, $0.difference.grid) },
                 title: "Projection difference (px) between \(between); ", centreLabel: "median")
    }

    /// Heat maps of per-pixel values in pixels, one panel per camera, on one logarithmic scale.
    static func heatMaps(_ cameras: [(name: String, projection: ProjectionUncertainty)], title: String,
                         centreLabel: String) -> String {
        guard let first = cameras.first else { return SVGDocument(width: 1, height: 1).text }
        let size = first.projection.imageSize
        let w = 400.0, h = w * Double(size.height) / Double(max(size.width, 1))
        let margin = 20.0, scaleHeight = 46.0
        let panels = Double(cameras.count)
        var svg = SVGDocument(width: panels * w + (panels + 1) * margin, height: h + 2 * margin + 20 + scaleHeight + 10)
        // A logarithmic colour scale from the smallest to the largest σ of both cameras: σ
        // spans orders of magnitude between the well-seen middle and extrapolated corners.
        let finite = cameras.flatMap(\.projection.sigma).filter { $0.isFinite && $0 > 0 }
        let top = max(finite.max() ?? 1, 1e-12), bottom = min(finite.min() ?? top, top)
        let span = max(log(top / bottom), 1e-12)
        func scaled(_ v: Double) -> Double { log(max(v, bottom) / bottom) / span }
        svg.text(margin, 16, title + cameras.map(\.name).joined(separator: ", "), size: 13)
        for (panel, (_, p)) in cameras.enumerated() {
            let x0 = margin + Double(panel) * (w + margin), y0 = margin + 20
            let cw = w / Double(p.columns), ch = h / Double(p.rows)
            for j in 0..<p.rows {
                for i in 0..<p.columns {
                    let value = p.sigma[j * p.columns + i]
                    let pixel = p.pixel(column: i, row: j)
                    svg.rect(x0 + Double(i) * cw, y0 + Double(j) * ch, cw + 0.3, ch + 0.3,
                             fill: value.isFinite ? heatColour(scaled(value)) : "#ccc",
                             title: "(\(Int(pixel.x.rounded())), \(Int(pixel.y.rounded()))): "
                                 + (value.isFinite ? String(format: "%.3g px", value) : "no ray"))
                }
            }
            svg.rect(x0, y0, w, h, fill: "none", stroke: "#222")
            svg.text(x0 + w / 2, y0 + h / 2, centreLabel + String(format: " %.3g px", p.center), size: 11, anchor: "middle", fill: "#fff")
            svg.text(x0 + 4, y0 + h - 6, String(format: "max %.3g px", p.maximum), size: 11, fill: "#fff")
        }
        // The colour scale.
        let sy = margin + 20 + h + 14
        let steps = 40, scaleWidth = panels * w + (panels - 1) * margin
        for k in 0..<steps {
            let x = margin + Double(k) * scaleWidth / Double(steps)
            svg.rect(x, sy, scaleWidth / Double(steps) + 0.3, 12, fill: heatColour(Double(k) / Double(steps - 1)))
        }
        for k in 0...4 {
            let x = margin + Double(k) / 4 * scaleWidth
            let value = bottom * exp(span * Double(k) / 4)
            svg.text(x, sy + 26, String(format: "%.3g px", value), size: 10, anchor: k == 0 ? "start" : (k == 4 ? "end" : "middle"))
        }
        svg.text(margin + scaleWidth / 2, sy + 40, "logarithmic scale; grey: no ray reaches that pixel", size: 10, anchor: "middle")
        return svg.text
    }

    /// A perceptually ordered dark-blue → green → yellow ramp for `t` in 0…1.
    static func heatColour(_ t: Double) -> String {
        let stops: [SIMD3<Double>] = [SIMD3(0.27, 0.00, 0.33), SIMD3(0.23, 0.32, 0.55), SIMD3(0.13, 0.57, 0.55),
                                      SIMD3(0.37, 0.79, 0.38), SIMD3(0.99, 0.91, 0.14)]
        let x = min(max(t.isFinite ? t : 0, 0), 1) * Double(stops.count - 1)
        let i = min(Int(x), stops.count - 2), f = x - Double(i)
        let c = stops[i] * (1 - f) + stops[i + 1] * f
        func byte(_ v: Double) -> String {
            let b = Int((v * 255).rounded())
            return String(b, radix: 16).count == 1 ? "0" + String(b, radix: 16) : String(b, radix: 16)
        }
        return "#" + byte(c.x) + byte(c.y) + byte(c.z)
    }

    /// A side-by-side rectified gray image of one pair with guide lines every `spacing` rows.
    public static func rectifiedPreview(left: GrayImage, right: GrayImage, calibration: StereoCalibration,
                                        rectification: StereoRectification, spacing: Int = 32) throws(ImageError) -> ImageBuffer {
        let maps = calibration.rectificationMaps(for: rectification)
        let l = ReferenceRemap.bilinear(left.pixels.map { UInt8(min(max($0.rounded(), 0), 255)) }, channels: 1, map: maps.left)
        let r = ReferenceRemap.bilinear(right.pixels.map { UInt8(min(max($0.rounded(), 0), 255)) }, channels: 1, map: maps.right)
        let w = maps.left.outputSize.width, h = maps.left.outputSize.height
        var rgb = [UInt8](repeating: 0, count: 2 * w * h * 3)
        for y in 0..<h {
            let guide = y % spacing == spacing / 2
            for x in 0..<(2 * w) {
                let v = x < w ? l[y * w + x] : r[y * w + x - w]
                let o = (y * 2 * w + x) * 3
                if guide {
                    (rgb[o], rgb[o + 1], rgb[o + 2]) = (0, 220, 0)
                } else {
                    (rgb[o], rgb[o + 1], rgb[o + 2]) = (v, v, v)
                }
            }
        }
        return try ImageBuffer(format: .rgb8, size: ImageSize(width: 2 * w, height: h), bytes: rgb)
    }

    /// The HTML page of a one-camera calibration: the figures, every parameter with its
    /// standard deviation, the images set aside, the residual and coverage charts and the
    /// projection-uncertainty map.
    public static func cameraPage(_ result: MonoCalibrationResult,
                                  uncertainty: (parameters: CameraUncertainty, projection: ProjectionUncertainty)?) -> String {
        func row(_ k: String, _ v: String) -> String { "<tr><td>\(SVGDocument.escape(k))</td><td>\(SVGDocument.escape(v))</td></tr>" }
        var html = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Parallax camera calibration report</title></head>"
            + "<body style=\"font-family:sans-serif\"><h1>Camera calibration report</h1><table>"
        html += row("images used", "\(result.viewNames.count)")
        html += row("rms", "\(formatPixels(result.rms)) px")
        let values = result.model.parameters(of: result.camera)
        let sigmas = uncertainty.map { u in [u.parameters.fx, u.parameters.fy, u.parameters.cx, u.parameters.cy] + u.parameters.distortion }
        for (k, name) in result.model.parameterNames.enumerated() {
            html += row(name, String(format: "%.6g", values[k]) + (sigmas.map { String(format: " ± %.2g", $0[k]) } ?? ""))
        }
        html += "</table>"
        if !result.rejected.isEmpty {
            html += "<h2>Rejected</h2><ul>" + result.rejected.map { "<li>\(SVGDocument.escape($0.description))</li>" }.joined() + "</ul>"
        }
        html += "<h2>Residuals</h2><img src=\"residuals-per-view.svg\"><img src=\"residual-scatter.svg\">"
        html += "<h2>Coverage</h2><img src=\"coverage.svg\">"
        if uncertainty != nil { html += "<h2>Projection uncertainty</h2><img src=\"projection-uncertainty.svg\">" }
        return html + "</body></html>\n"
    }

    /// The HTML page that shows the figures with the summary numbers.
    public static func indexPage(_ result: StereoCalibrationResult, best: String?, worst: String?,
                                 uncertainty: StereoUncertainty? = nil) -> String {
        func row(_ k: String, _ v: String) -> String { "<tr><td>\(SVGDocument.escape(k))</td><td>\(SVGDocument.escape(v))</td></tr>" }
        var html = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Parallax calibration report</title></head><body style=\"font-family:sans-serif\">"
        html += "<h1>Stereo calibration report</h1><table>"
        html += row("pairs used", "\(result.pairs.count)")
        html += row("rms stereo", "\(formatPixels(result.rms)) px")
        html += row("rms left / right", "\(formatPixels(result.rmsLeft)) / \(formatPixels(result.rmsRight)) px")
        html += row("epipolar error (mean)", "\(formatPixels(result.epipolarErrorMean)) px")
        html += row("rectified vertical rms", "\(formatPixels(result.rectifiedVerticalRMS)) px")
        let unit = result.calibration.translationUnit
        html += row("baseline", formatPixels(result.calibration.baseline) + (unit == .unitless ? " (board units: the square size had no unit)" : " \(unit.rawValue)"))
        html += "</table>"
        if let u = uncertainty {
            // Parameters with their standard deviations from the fit.
            let names = result.model.parameterNames
            func cell(_ v: Double, _ s: Double) -> String { "<td>\(String(format: "%.6g", v)) ± \(String(format: "%.2g", s))</td>" }
            html += "<h2>Parameters and their standard deviations</h2><table><tr><th></th><th>left</th><th>right</th></tr>"
            let values = (result.model.parameters(of: result.calibration.left), result.model.parameters(of: result.calibration.right))
            let sigmas = ([u.left.fx, u.left.fy, u.left.cx, u.left.cy] + u.left.distortion,
                          [u.right.fx, u.right.fy, u.right.cx, u.right.cy] + u.right.distortion)
            for (k, name) in names.enumerated() {
                html += "<tr><td>\(name)</td>" + cell(values.0[k], sigmas.0[k]) + cell(values.1[k], sigmas.1[k]) + "</tr>"
            }
            html += "</table><p>rotation σ (degrees, x y z): "
                + [u.rotationDegrees.x, u.rotationDegrees.y, u.rotationDegrees.z].map { String(format: "%.2g", $0) }.joined(separator: " ")
                + "; translation σ: " + [u.translation.x, u.translation.y, u.translation.z].map { String(format: "%.2g", $0) }.joined(separator: " ")
                + String(format: "; baseline σ %.2g", u.baseline) + (unit == .unitless ? "" : " \(unit.rawValue)") + "</p>"
            html += "<h2>Projection uncertainty</h2><img src=\"projection-uncertainty.svg\">"
        }
        if !result.rejected.isEmpty {
            html += "<h2>Rejected</h2><ul>" + result.rejected.map { "<li>\(SVGDocument.escape($0.description))</li>" }.joined() + "</ul>"
        }
        if !result.rejectedCorners.isEmpty {
            html += "<h2>Corners left out of the fit</h2><p>Each residual was more than 8 times its camera's noise level "
                + "(and above 0.5 px): a misdetected or occluded corner.</p><ul>"
                + result.rejectedCorners.map { "<li>\(SVGDocument.escape($0.description))</li>" }.joined() + "</ul>"
        }
        html += "<h2>Per pair</h2><img src=\"residuals-per-view.svg\"><h2>Residuals</h2><img src=\"residual-scatter.svg\">"
        html += "<h2>Coverage</h2><img src=\"coverage.svg\">"
        if let best { html += "<h2>Best rectified pair: \(SVGDocument.escape(best))</h2><img src=\"rectified-best.png\" style=\"max-width:100%\">" }
        if let worst { html += "<h2>Worst rectified pair: \(SVGDocument.escape(worst))</h2><img src=\"rectified-worst.png\" style=\"max-width:100%\">" }
        return html + "</body></html>\n"
    }
}
