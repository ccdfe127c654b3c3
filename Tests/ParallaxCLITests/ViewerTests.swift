import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing
@testable import parallax

/// The browser viewer's logic without a socket or a browser: access, requests, the
/// newest-wins account and the frame-number stamp (`make test-browser` drives the real
/// server in Chromium). None of this needs the BrowserViewer trait, so the sanitizer
/// builds check it too.
@Suite struct ViewerTests {
    /// A viewer over the simulated rig at 160×120, rectifying with the rig's calibration
    /// (metres, baseline 6 cm), its session started and, when `feeding`, its pairs going to
    /// the viewer as `parallax view` sends them.
    static func viewer(token: String = "secret-token-0123", feeding: Bool = true) throws -> (ViewerController, StereoSession) {
        let size = ImageSize(width: 160, height: 120)
        let rig = SimulatedRigDevice(rig: .example(size: size), frameInterval: FrameInterval(numerator: 1, denominator: 30),
                                     pixelFormat: .gray8, pace: .asFastAsPossible, seed: 3)
        let session = try StereoSession(device: StereoDevice(simulated: rig), calibration: rig.rig.calibration,
                                        options: StereoSessionOptions(keepsRawFrames: true))
        try session.start()
        let folder = NSTemporaryDirectory() + "viewer-tests-\(UUID().uuidString)"
        let controller = ViewerController(session: session, hub: ViewerHub(), token: token, saveFolder: folder,
                                          calibrationSource: "the simulated rig", isMismatched: { _ in nil })
        if feeding {
            Task { for try await pair in session.pairs { controller.take(pair) } }
        }
        return (controller, session)
    }

    static func error(of response: ViewerResponse) -> String {
        (try? JSONValue(parsing: String(decoding: response.body, as: UTF8.self)).object?["error"]?.string) ?? ""
    }

    /// README: "forward the port first (`ssh -L 8040:127.0.0.1:8040 robot`)", and the viewer
    /// serves only this machine unless told otherwise.
    @Test("by default the viewer serves on 127.0.0.1, port 8040")
    func defaultAddressAndPort() throws {
        let view = try ViewCommand.parse(["--simulated"])
        #expect(view.port == 8040 && view.listen == "127.0.0.1", "\(view.listen):\(view.port)")
    }

    /// FrameAccount.md: "`parallax stream` and `parallax view` end with it as an error". Both
    /// end through ``StereoSessionStatistics/requireClosedAccount(command:)``: a closed account
    /// passes, one with a pair lost without a reason ends the command naming what is missing.
    @Test("stream and view end with an error when the frame account does not close")
    func anOpenAccountEndsTheCommand() async throws {
        let rig = SimulatedRigDevice(rig: .example(size: ImageSize(width: 64, height: 48)), pace: .asFastAsPossible)
        let session = try StereoSession(device: StereoDevice(simulated: rig))
        try session.start()
        var delivered = 0
        for try await _ in session.pairs {
            delivered += 1
            if delivered == 10 { break }
        }
        session.stop()
        let closed = session.statistics
        try closed.requireClosedAccount(command: "stream")
        var lost = closed
        lost.pairsDelivered -= 1
        for command in ["stream", "view"] {
            do {
                try lost.requireClosedAccount(command: command)
                Issue.record("\(command) ended quietly with a pair lost without a reason")
            } catch {
                #expect(error.description.hasPrefix("\(command): ") && error.description.contains("delivered 9")
                        && error.description.hasSuffix("(a defect in Parallax)"), "\(error)")
            }
        }
    }

    /// README: the URL carries "a random token": 128 bits from the system's generator, in hex.
    @Test("each viewer's token is new: 32 hex digits (128 bits), never the same twice")
    func tokensAreRandom() {
        let tokens = (0..<64).map { _ in ViewerController.makeToken() }
        #expect(Set(tokens).count == tokens.count)
        #expect(tokens.allSatisfy { $0.count == 32 && $0.allSatisfy { "0123456789abcdef".contains($0) } }, "\(tokens[0])")
        // Random bits use every hex digit in each position: across 64 tokens a position misses
        // a given digit with probability (15/16)^64 ≈ 1.6 %, so it misses 0.26 digits on average
        // (Poisson), and seven or more in any of the 32 positions with probability below 1e-6.
        for position in 0..<32 {
            let digits = Set(tokens.map { Array($0)[position] })
            #expect(digits.count >= 10, "position \(position): only \(digits.sorted())")
        }
    }

    @Test func theTokenIsRequiredAndComparedWhole() async throws {
        let (viewer, session) = try Self.viewer()
        defer { session.stop() }
        for path in ["/", "/api/status", "/api/pair.png", "/ws", "/nowhere"] {
            let none = await viewer.respond(method: "GET", path: path, query: [:], bearer: nil, body: [])
            #expect(none.status == 401, "\(path)")
            for wrong in ["secret-token-0124", "secret-token-012", "secret-token-01234", "SECRET-TOKEN-0123", " secret-token-0123"] {
                let refused = await viewer.respond(method: "GET", path: path, query: ["token": wrong], bearer: nil, body: [])
                #expect(refused.status == 403, "\(path) with \(wrong)")
            }
        }
        let byQuery = await viewer.respond(method: "GET", path: "/api/status", query: ["token": "secret-token-0123"], bearer: nil, body: [])
        let byHeader = await viewer.respond(method: "GET", path: "/api/status", query: [:], bearer: "secret-token-0123", body: [])
        #expect(byQuery.status == 200 && byHeader.status == 200)
        #expect(ViewerController.sameSecret("abc", "abc") && !ViewerController.sameSecret("abc", "abd")
                && !ViewerController.sameSecret("abc", "abcd") && !ViewerController.sameSecret("", "a"))
        // 128 random bits, in hex; two tokens differ.
        let a = ViewerController.makeToken(), b = ViewerController.makeToken()
        #expect(a.count == 32 && a.allSatisfy(\.isHexDigit) && a != b)
    }

    @Test func badRequestsGetAFourHundredWithTheReason() async throws {
        let (viewer, session) = try Self.viewer()
        defer { session.stop() }
        let token = ["token": "secret-token-0123"]
        func post(_ body: String) async -> ViewerResponse {
            await viewer.respond(method: "POST", path: "/api/convergence", query: token, bearer: nil, body: Array(body.utf8))
        }
        let cases: [(String, Int, String)] = [
            (#"{"distance": "abc"}"#, 400, "must be a positive distance"),
            (#"{"distance": "-1m"}"#, 400, "must be a positive distance"),
            (#"{"distance": "0"}"#, 400, "must be a positive distance"),
            (#"{"distance": "1e400"}"#, 400, "must be a positive distance"),
            (#"{"distance": "0.03m"}"#, 400, "nearer than the baseline"),
            (#"{"distance": -2}"#, 400, "positive number"),
            (#"{"distance": [1]}"#, 400, "got an array"),
            (#"{"distance": true}"#, 400, "must be a string"),
            (#"{"dist": "1m"}"#, 400, "send {\"distance\""),
            ("{", 400, "not JSON"),
            ("", 400, "not JSON"),
            (String(repeating: " ", count: 5000), 413, "over 4096 bytes"),
        ]
        for (body, status, reason) in cases {
            let response = await post(body)
            #expect(response.status == status && Self.error(of: response).contains(reason),
                    "\(body.prefix(40)): \(response.status) \(Self.error(of: response))")
        }
        let notUTF8 = await viewer.respond(method: "POST", path: "/api/convergence", query: token, bearer: nil, body: [0xFF, 0xFE])
        #expect(notUTF8.status == 400)
        let mode = await viewer.respond(method: "GET", path: "/api/pair.png", query: token.merging(["mode": "3d"]) { $1 }, bearer: nil, body: [])
        #expect(mode.status == 400 && Self.error(of: mode).contains("anaglyph"))
        let raw = await viewer.respond(method: "POST", path: "/api/save", query: token.merging(["raw": "yes"]) { $1 }, bearer: nil, body: [])
        #expect(raw.status == 400)
        for path in ["/../etc/passwd", "/api/%2e%2e/x", "/api/..%2fstatus"] {
            let response = await viewer.respond(method: "GET", path: path, query: token, bearer: nil, body: [])
            #expect(response.status == 400, "\(path)")
        }
        let method = await viewer.respond(method: "DELETE", path: "/api/status", query: token, bearer: nil, body: [])
        #expect(method.status == 405)
        let unknown = await viewer.respond(method: "GET", path: "/api/statuses", query: token, bearer: nil, body: [])
        #expect(unknown.status == 404)
    }

    /// The plane moves to what was asked, within the whole-pixel step: the applied distance
    /// is f·B / (2·shift) for the shift the session rounded to.
    @Test func aConvergenceRequestMovesThePlane() async throws {
        let (viewer, session) = try Self.viewer()
        defer { session.stop() }
        let response = await viewer.respond(method: "POST", path: "/api/convergence", query: ["token": "secret-token-0123"],
                                            bearer: nil, body: Array(#"{"distance": "150cm"}"#.utf8))
        #expect(response.status == 200)
        let answer = try #require(try JSONValue(parsing: String(decoding: response.body, as: UTF8.self)).object)
        let shift = try #require(answer["shift_px"]?.number)
        let rectification = try #require(session.rectification)
        // The answer's distance is the applied one, printed to 4 decimals.
        let applied = try #require(rectification.convergenceDistance)
        #expect(abs(try #require(answer["distance"]?.number) - applied) <= 5e-5)
        #expect(answer["asked"]?.number == 1.5 && answer["unit"]?.string == "m")
        #expect(rectification.convergenceShift == shift && shift == shift.rounded())
        // f·B/d at the applied distance is the whole shift (2·shift), to rounding.
        #expect(abs(rectification.unconverged.disparity(atDistance: applied) - 2 * shift) < 1e-9)
        // And within one step of the asked distance: |f·B/1.5 − 2·shift| ≤ 1 px.
        #expect(abs(rectification.unconverged.disparity(atDistance: 1.5) - 2 * shift) <= 1)
        let back = await viewer.respond(method: "POST", path: "/api/convergence", query: ["token": "secret-token-0123"],
                                        bearer: nil, body: Array(#"{"distance": null}"#.utf8))
        #expect(back.status == 200 && session.rectification?.convergenceDistance == nil)
    }

    /// Newest wins, and the account is exact at every step.
    @Test func theHubKeepsOnlyTheNewestPairAndAccountsForEachOne() async throws {
        let (viewer, session) = try Self.viewer(feeding: false)
        let hub = viewer.hub
        // Each step takes the next pair from the session; the hub, not the test, holds pairs
        // (the session's pool has few buffers: a test keeping six pairs would starve it).
        var iterator = session.pairs.makeAsyncIterator()
        func nextPair() async throws -> StereoPair { try #require(try await iterator.next()) }
        hub.offer(try await nextPair())  // no page: let go at once
        #expect(hub.account == ViewerHub.Account(received: 1, unwatched: 1) && hub.latestPair == nil)
        let page = hub.openPage()
        hub.offer(try await nextPair())
        let third = try await nextPair()
        hub.offer(third)  // replaces the second before any page took it
        #expect(hub.account == ViewerHub.Account(received: 3, replaced: 1, unwatched: 1, holding: 1))
        let sent = try #require(try hub.encodedPair(raw: false, after: nil))
        #expect(sent.number == third.number && !sent.raw)
        // Nothing newer for this page until another pair comes.
        #expect(try hub.encodedPair(raw: false, after: (sent.number, false)) == nil)
        // The raw frames of the same pair are news (another choice).
        let raw = try #require(try hub.encodedPair(raw: true, after: (sent.number, false)))
        #expect(raw.raw && raw.number == sent.number)
        hub.offer(try await nextPair())  // the third was sent
        #expect(hub.account == ViewerHub.Account(received: 4, sent: 1, replaced: 1, unwatched: 1, holding: 1))
        hub.close(page: page.id)  // the last page closes: the fourth goes, unsent
        #expect(hub.latestPair == nil && hub.account.isExact && hub.account.replaced == 2)
        hub.offer(try await nextPair())
        session.stop()
        hub.finish()
        #expect(hub.account == ViewerHub.Account(received: 5, sent: 1, replaced: 2, unwatched: 2, holding: 0) && hub.account.isExact)
        // The message: a 4-byte header length, the JSON header, then both JPEGs.
        let message = sent.message
        let headerLength = Int(message[0]) | Int(message[1]) << 8 | Int(message[2]) << 16 | Int(message[3]) << 24
        let header = try #require(try JSONValue(parsing: String(decoding: message[4..<(4 + headerLength)], as: UTF8.self)).object)
        #expect(header["number"]?.number == Double(sent.number) && header["left_bytes"]?.number == Double(sent.left.count))
        #expect(message.count == 4 + headerLength + sent.left.count + sent.right.count)
        #expect(Array(message[(4 + headerLength)..<(4 + headerLength + 2)]) == [0xFF, 0xD8])  // a JPEG's SOI
    }

    /// The stamp survives JPEG at the viewer's quality and reads back as drawn, for numbers
    /// across its 20 bits (and wraps past them).
    @Test func theFrameNumberStampReadsBackThroughJPEG() throws {
        var pixels = [UInt8](repeating: 0, count: 640 * 480)
        for i in pixels.indices { pixels[i] = UInt8(truncatingIfNeeded: i &* 2654435761 >> 13) }
        let image = try ImageBuffer(format: .gray8, size: ImageSize(width: 640, height: 480), bytes: pixels)
        for number in [0, 1, 2, 1000, 65_535, 524_287, 1_048_575, 1_048_576 + 7] {
            let stamped = try FrameNumberStamp.stamped(image, number: number)
            let decoded = try ImageBuffer(decoding: try stamped.encoded(as: .jpeg, quality: 80))
            #expect(try FrameNumberStamp.read(decoded) == number % (1 << 20), "\(number)")
        }
        #expect(try FrameNumberStamp.read(image) == nil)
        #expect(throws: ViewerError.self) { try FrameNumberStamp.stamped(try ImageBuffer(format: .gray8, size: ImageSize(width: 80, height: 60), bytes: [UInt8](repeating: 0, count: 4800)), number: 1) }
    }

    /// Saving twice makes two new folders; an existing folder of the same name is left alone.
    @Test func savingMakesANewFolderEachTime() async throws {
        let (viewer, session) = try Self.viewer()
        defer { session.stop() }
        let parent = viewer.saveFolder
        defer { try? FileManager.default.removeItem(atPath: parent) }
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        var folders: [String] = []
        for _ in 0..<2 {
            let response = await viewer.respond(method: "POST", path: "/api/save", query: ["token": "secret-token-0123"],
                                                bearer: nil, body: [])
            #expect(response.status == 200, "\(Self.error(of: response))")
            let answer = try #require(try JSONValue(parsing: String(decoding: response.body, as: UTF8.self)).object)
            folders.append(try #require(answer["folder"]?.string))
        }
        #expect(Set(folders).count == 2)
        for folder in folders {
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
                    == ["calibration.json", "left.png", "rectification.json", "right.png"])
            #expect(try ImageBuffer(contentsOfFile: folder + "/left.png").size == ImageSize(width: 160, height: 120))
            // The files' contents: the session's calibration, and for it `parallax rectification
            // --json`'s object, run on the saved calibration, with the shift the pair was
            // resampled with (none: no convergence plane was asked for).
            let calibration = try StereoCalibration(contentsOfFile: folder + "/calibration.json")
            #expect(calibration == session.activeCalibration)
            let printed = try ParallaxCLI.run(["rectification", "--calibration", folder + "/calibration.json", "--json"])
            #expect(printed.status == 0, "\(printed.stderr)")
            var saved = try #require(try JSONValue(parsing: String(contentsOfFile: folder + "/rectification.json", encoding: .utf8)).object)
            #expect(saved["convergence_shift_px"] == .number(0))
            saved["convergence_shift_px"] = nil
            #expect(JSONValue.object(saved) == (try JSONValue(parsing: printed.stdout)), "rectification.json is not parallax rectification's")
        }
        // A name that is taken is never reused: the next free one is made.
        let taken = try ViewerController.newFolder(in: parent, named: "pair-x")
        try "mine".write(toFile: taken + "/note.txt", atomically: true, encoding: .utf8)
        let next = try ViewerController.newFolder(in: parent, named: "pair-x")
        let note = try String(contentsOfFile: taken + "/note.txt", encoding: .utf8)
        #expect(next == taken + "-2" && note == "mine")
    }
}
