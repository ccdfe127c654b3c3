import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// A response of the viewer's HTTP API, independent of the server that sends it.
struct ViewerResponse: Sendable {
    var status: Int
    var contentType: String
    var body: [UInt8]

    /// A JSON body.
    static func json(_ value: JSONValue, status: Int = 200) -> ViewerResponse {
        ViewerResponse(status: status, contentType: "application/json; charset=utf-8", body: Array(value.serialized(indent: 0).utf8))
    }

    /// An error: `{"error": message}` with a 4xx or 5xx status.
    static func error(_ status: Int, _ message: String) -> ViewerResponse {
        json(.object(JSONObject([("error", .string(message))])), status: status)
    }
}

/// Everything `parallax view` serves, as plain functions of a request: the page, the JSON
/// API and the access check. The HTTP server (``ViewerServer``) only carries requests
/// here and responses back, so all of it is tested without a socket.
///
/// Every request must carry the token (`?token=`, or `Authorization: Bearer`): none is 401,
/// a wrong one 403, compared in constant time. Requests the viewer cannot take get a 4xx
/// with `{"error": "…"}` saying why, and the server goes on serving.
final class ViewerController: Sendable {
    let session: StereoSession
    let hub: ViewerHub
    /// The token every request must carry.
    let token: String
    /// Where "save this pair" makes its folders.
    let saveFolder: String
    /// What the calibration is called in messages (its file, or "the simulated rig").
    let calibrationSource: String
    /// Whether a pair's two frames were taken at the same moment (the simulated and virtual
    /// sources know; `nil` for real cameras).
    let isMismatched: @Sendable (StereoPair) -> Bool?
    /// Largest request body taken (a convergence request is a few dozen bytes).
    static let maximumBodyBytes = 4096
    private let tally = Locked(Tally())

    private struct Tally {
        var mismatched = 0
        var knowsMismatches = true
        var saves = 0
    }

    init(session: StereoSession, hub: ViewerHub, token: String, saveFolder: String, calibrationSource: String,
         isMismatched: @escaping @Sendable (StereoPair) -> Bool?) {
        self.session = session
        self.hub = hub
        self.token = token
        self.saveFolder = saveFolder
        self.calibrationSource = calibrationSource
        self.isMismatched = isMismatched
    }

    // MARK: The consumer

    /// Takes one pair from the session (the viewer's consumer loop calls it for every pair).
    func take(_ pair: StereoPair) {
        let wrong = isMismatched(pair)
        tally.withLock { t in
            if let wrong { t.mismatched += wrong ? 1 : 0 } else { t.knowsMismatches = false }
        }
        hub.offer(pair)
    }

    // MARK: Access

    /// A new random token: 128 bits from the system's generator, in hex.
    static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The token a request presents: its `?token=`, else its `Authorization: Bearer …`.
    static func presentedToken(query: String?, authorization: String?) -> String? {
        if let query { return query }
        guard let authorization, authorization.hasPrefix("Bearer ") else { return nil }
        return String(authorization.dropFirst("Bearer ".count))
    }

    /// `nil` when `given` is the token; else the refusal (401 without one, 403 for another).
    /// The comparison takes the same time wherever the first difference is.
    func refusal(token given: String?) -> ViewerResponse? {
        guard let given, !given.isEmpty else {
            return .error(401, "this viewer needs its token: open the URL `parallax view` printed (it ends in ?token=…)")
        }
        return Self.sameSecret(given, token) ? nil : .error(403, "wrong token: open the URL `parallax view` printed")
    }

    /// Whether two strings are equal, in time that depends on their lengths only.
    static func sameSecret(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0
    }

    // MARK: Routing

    /// The response to one request. `path` is the request's path as sent (percent-encoded),
    /// `query` its decoded parameters, `bearer` the `Authorization: Bearer` token if any.
    func respond(method: String, path: String, query: [String: String], bearer: String?, body: [UInt8]) async -> ViewerResponse {
        let decoded = path.removingPercentEncoding ?? path
        if path.contains("..") || decoded.contains("..") || decoded.contains("\0") {
            return .error(400, "paths with '..' are refused")
        }
        if let refused = refusal(token: query["token"] ?? bearer) { return refused }
        switch (method, decoded) {
        case ("GET", "/"), ("GET", "/index.html"):
            return ViewerResponse(status: 200, contentType: "text/html; charset=utf-8", body: Array(ViewerPage.html.utf8))
        case ("GET", "/api/status"):
            return .json(status())
        case ("POST", "/api/convergence"):
            return setConvergence(body: body)
        case ("GET", "/api/pair.png"):
            return await pairPicture(mode: query["mode"], raw: query["raw"])
        case ("POST", "/api/save"):
            return await savePair(raw: query["raw"])
        case ("GET", "/ws"):
            return .error(400, "/ws is the page's WebSocket: connect with a WebSocket upgrade")
        case (_, "/"), (_, "/index.html"), (_, "/api/status"), (_, "/api/pair.png"), (_, "/ws"):
            return .error(405, "\(decoded) takes GET")
        case (_, "/api/convergence"), (_, "/api/save"):
            return .error(405, "\(decoded) takes POST")
        default:
            return .error(404, "no such page: \(decoded) (the viewer serves /, /ws, /api/status, /api/convergence, /api/pair.png, /api/save)")
        }
    }

    // MARK: Status

    /// `GET /api/status`: the fields of `stream --json`, and the viewer's own.
    func status() -> JSONValue {
        let stats = session.statistics
        let counts = tally.withLock { $0 }
        let account = hub.account
        let latest = hub.latestPair
        var images: String?
        if let image = latest?.left.image { images = "\(image.format.rawValue) \(image.size)" }
        let report = StreamCommand.report(stats, pairs: account.received, mismatched: counts.knowsMismatches ? counts.mismatched : nil,
                                          format: session.format, images: images)
        var fields = report.object?.pairs.map { ($0.key, $0.value) } ?? []
        let rectification = session.rectification
        let unit = session.activeCalibration?.translationUnit
        var convergence: [(String, JSONValue)] = [
            ("distance", rectification?.convergenceDistance.map(jsonNumber) ?? .null),
            ("unit", unit.map { .string($0.suffix) } ?? .null),
        ]
        if let range = convergenceRange() {
            convergence += [("nearest", jsonNumber(range.nearest)), ("farthest", jsonNumber(range.farthest))]
        }
        fields += [
            ("rectified", .bool(rectification != nil)),
            ("convergence", .object(JSONObject(convergence))),
            ("shift_px", rectification.map { jsonNumber($0.convergenceShift) } ?? .null),
            ("pairs_per_second", jsonNumber(stats.pairsPerSecond)),
            ("frames_per_second", stats.framesPerSecond.map(jsonNumber) ?? .null),
            ("pressure", .string(stats.pressure.description)),
            ("hardware_cost", session.device.hardwareCost.map {
                .object(JSONObject([("cost", jsonNumber($0.cost)), ("explanation", .string($0.explanation))]))
            } ?? .null),
            ("clock", stats.synchronizer.clock.map { clock in
                .object(JSONObject([("offset_ms", jsonNumber(Double(clock.offsetNanoseconds) / 1e6)),
                                    ("drift_ppm", clock.driftPartsPerMillion.map(jsonNumber) ?? .null)]))
            } ?? .null),
            ("sides_enabled", .object(JSONObject(StereoSide.allCases.map { ($0.description, .bool(session.device.enabledSides[$0])) }))),
            ("viewer", .object(JSONObject([
                ("pages", .number(Double(hub.pageCount))), ("received", .number(Double(account.received))),
                ("sent", .number(Double(account.sent))), ("replaced", .number(Double(account.replaced))),
                ("unwatched", .number(Double(account.unwatched))), ("holding", .number(Double(account.holding))),
                ("exact", .bool(account.isExact)), ("saved", .number(Double(counts.saves))),
                ("latest", hub.latestNumber.map { .number(Double($0)) } ?? .null),
            ]))),
        ]
        return .object(JSONObject(fields))
    }

    /// The slider's range in the calibration's unit: from where the two images shift by
    /// half their width in all, out to where they shift by half a pixel.
    func convergenceRange() -> (nearest: Double, farthest: Double)? {
        guard let rectification = session.rectification?.unconverged, let calibration = session.activeCalibration else { return nil }
        let span = Double(rectification.layout == .horizontal ? rectification.size.width : rectification.size.height)
        // |disparity| = f·B / d for the classic rectification.
        let fB = abs(rectification.disparity(atDistance: 1))
        guard fB > 0, fB.isFinite else { return nil }
        return (max(fB / (span / 2), calibration.baseline * 1.01), fB / 0.5)
    }

    // MARK: Convergence

    /// `POST /api/convergence` with `{"distance": "1.2m"}` (a length as `--convergence`
    /// takes it, a bare number in the calibration's unit, or `null`/`"infinity"`).
    func setConvergence(body: [UInt8]) -> ViewerResponse {
        guard let calibration = session.activeCalibration, let rectification = session.rectification else {
            return .error(409, "the viewer shows raw images (no calibration): there is no convergence plane to move; "
                          + "start it with --calibration")
        }
        guard body.count <= Self.maximumBodyBytes else { return .error(413, "the body is over \(Self.maximumBodyBytes) bytes") }
        guard let text = String(validating: body, as: UTF8.self) else { return .error(400, "the body is not UTF-8") }
        let value: JSONValue
        do { value = try JSONValue(parsing: text) } catch {
            return .error(400, "the body is not JSON (\(error)); send {\"distance\": \"1.2m\"}")
        }
        guard let object = value.object, let distance = object["distance"] else {
            return .error(400, "send {\"distance\": \"1.2m\"} (or a bare number in the calibration's unit, or null for infinity)")
        }
        // The distance as `--convergence` takes it (a bare number is in the calibration's unit);
        // nil for infinity.
        let typed: String?
        switch distance {
        case .null:
            typed = nil
        case .string(let s) where ["inf", "infinity", "∞"].contains(s.lowercased()):
            typed = nil
        case .string(let s):
            typed = s
        case .number(let n):
            guard n.isFinite, n > 0 else { return .error(400, "distance must be a positive number, got \(n)") }
            typed = String(n)
        default:
            return .error(400, "distance must be a string such as \"1.2m\", a number or null, got \(distance.kindName)")
        }
        let wanted: Double?
        do {
            wanted = try typed.map {
                try RectificationArguments.convergenceDistance($0, option: "distance", calibration: calibration,
                                                               source: calibrationSource, rectification: rectification.unconverged)
            }
        } catch {
            return .error(400, "\(error)")
        }
        let applied: StereoRectification
        do { applied = try session.setConvergence(atDistance: wanted) } catch { return .error(409, "\(error)") }
        return .json(.object(JSONObject([
            ("distance", applied.convergenceDistance.map(jsonNumber) ?? .null),
            ("asked", wanted.map(jsonNumber) ?? .null),
            ("unit", .string(calibration.translationUnit.suffix)),
            ("shift_px", jsonNumber(applied.convergenceShift)),
        ])))
    }

    // MARK: Pictures

    /// `GET /api/pair.png?mode=…`: the newest pair, composed (`raw=1`: as captured).
    func pairPicture(mode name: String?, raw: String?) async -> ViewerResponse {
        guard let mode = ViewerMode(rawValue: name ?? ViewerMode.sideBySide.rawValue) else {
            return .error(400, "unknown mode '\(name ?? "")': use one of \(ViewerMode.names)")
        }
        guard let raw = Self.flag(raw) else { return .error(400, "raw must be 0 or 1, got '\(raw ?? "")'") }
        guard let pair = await latestOrWaited() else {
            return .error(503, "no pair yet: the session has not delivered one (see /api/status)")
        }
        do {
            let images = try ViewerHub.images(of: pair, raw: raw || !pair.isRectified)
            let picture = try mode.picture(of: images, layout: pair.rectification?.layout ?? .horizontal)
            return ViewerResponse(status: 200, contentType: "image/png", body: try picture.encoded(as: .png))
        } catch {
            return .error(409, "\(error)")
        }
    }

    /// The newest pair; with no page open the hub lets pairs go, so a script asking for a
    /// picture briefly counts as a page until the next pair arrives (at most 2 s).
    private func latestOrWaited() async -> StereoPair? {
        if let pair = hub.latestPair { return pair }
        guard session.isRunning else { return nil }
        let page = hub.openPage()
        defer { hub.close(page: page.id) }
        for _ in 0..<200 where session.isRunning {
            if let pair = hub.latestPair { return pair }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return hub.latestPair
    }

    /// `0`/`1`/`true`/`false` (absent: false); `nil` for anything else.
    static func flag(_ text: String?) -> Bool? {
        switch text?.lowercased() {
        case nil, "", "0", "false": false
        case "1", "true": true
        default: nil
        }
    }

    // MARK: Saving

    /// `POST /api/save`: both images of the newest pair (PNG) and the calibration, in a new
    /// folder under the save folder each time; never over an existing file.
    func savePair(raw: String?) async -> ViewerResponse {
        guard let raw = Self.flag(raw) else { return .error(400, "raw must be 0 or 1, got '\(raw ?? "")'") }
        guard let pair = await latestOrWaited() else {
            return .error(503, "no pair yet: nothing to save")
        }
        do {
            let folder = try Self.newFolder(in: saveFolder, named: String(format: "pair-%06d", pair.number))
            do {
                let images = try ViewerHub.images(of: pair, raw: raw || !pair.isRectified)
                try images.left.write(toFile: folder + "/left.png")
                try images.right.write(toFile: folder + "/right.png")
                var files = ["left.png", "right.png"]
                if let calibration = session.activeCalibration {
                    try calibration.write(toFile: folder + "/calibration.json")
                    files.append("calibration.json")
                }
                if let rectification = pair.rectification, pair.isRectified, !raw {
                    // `parallax rectification --json`'s object, with the shift the pair was resampled with.
                    var json = RectificationCommand.jsonObject(rectification).object ?? JSONObject()
                    json["convergence_shift_px"] = .number(rectification.convergenceShift)
                    try FileAccess.writeAtomically(JSONValue.object(json).serialized() + "\n",
                                                   toPath: folder + "/rectification.json")
                    files.append("rectification.json")
                }
                tally.withLock { $0.saves += 1 }
                return .json(.object(JSONObject([("folder", .string(folder)), ("pair", .number(Double(pair.number))),
                                                 ("files", .array(files.map { .string($0) }))])))
            } catch {
                // Only what this request made goes: the folder was new and empty.
                try? FileManager.default.removeItem(atPath: folder)
                throw error
            }
        } catch {
            return .error(500, "could not save the pair: \(error)")
        }
    }

    /// Makes a new folder `name` (or `name-2`, `name-3`, … when taken) inside `parent`
    /// (made when missing): `mkdir` fails on anything that exists, so nothing is reused.
    static func newFolder(in parent: String, named name: String) throws -> String {
        try FileAccess.createDirectories(atPath: parent)
        for attempt in 1...1000 {
            let path = parent + "/" + (attempt == 1 ? name : "\(name)-\(attempt)")
            if mkdir(path, 0o755) == 0 { return path }
            guard errno == EEXIST else { throw ViewerError("cannot make \(path): \(String(cString: strerror(errno)))") }
        }
        throw ViewerError("\(parent) already holds 1000 folders named \(name)")
    }
}
