import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// `parallax view`: the rig live in a browser.
struct ViewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view",
        abstract: "See the rig live in a browser: both images, an anaglyph, a convergence slider, figures and events.",
        discussion: """
            Runs a stereo session over any source `stream` takes and serves one page for it, on \
            127.0.0.1 by default. The URL it prints carries a random token that every request \
            needs; open it in a browser (over SSH: ssh -L PORT:127.0.0.1:PORT HOST, then the same \
            URL on your machine). Stop with Ctrl-C.

            The page shows the pair side by side with guide lines, as a red–cyan anaglyph, as a \
            blend, or one side alone, raw or rectified; a slider and a field move the convergence \
            plane live (in the calibration's unit), with the shift in pixels; the figures of \
            `stream --json` as they change; events (a camera unplugged or back, a side off or \
            on) as they happen; and "save this pair", which writes both images and the \
            calibration into a new folder under --save-to each time.

            Frames go to the page as JPEG over a WebSocket, the newest pair only, when the page \
            has drawn the one before: a slow or hidden tab never backs the session up, and with \
            no page open the viewer costs nothing.

            A JSON API beside the page (each request with ?token=TOKEN or the header \
            "Authorization: Bearer TOKEN"):
              GET  /api/status                     the fields of `stream --json`, and format, convergence, shift_px, the viewer's account
              POST /api/convergence                {"distance": "1.2m"} (or a bare number in the calibration's unit, or null for infinity)
              GET  /api/pair.png?mode=MODE&raw=0|1 the newest pair: side-by-side, anaglyph, blend, left or right
              POST /api/save?raw=0|1               save the newest pair; answers the folder

            Examples:
              parallax view --simulated
              parallax view --left /dev/video0 --right /dev/video2 --calibration rig.json --format 1280x720@30:MJPG
              parallax view --recording rec.mcap --port 8090
            """)

    @OptionGroup var source: StereoSourceArguments

    @OptionGroup var rectification: SessionRectificationOptions

    @Option(name: .long, parsing: .unconditional, help: "Port to serve on (0: any free port, printed).")
    var port = 8040

    @Option(name: .long, help: "Address to listen on (default 127.0.0.1; another address serves everyone who can reach it, with a warning).")
    var listen = "127.0.0.1"

    @Option(name: .customLong("save-to"), help: "Folder for \"save this pair\" (a new folder inside it each time).")
    var saveTo = "parallax-view-pairs"

    @Option(name: .long, parsing: .unconditional, help: "JPEG quality of the images sent to the page (10-100).")
    var quality = 80

    @Flag(name: .customLong("stamp-frame-numbers"), help: "Draw each pair's number as a bar code into the top rows of its images (for latency measurements: the page reads it back).")
    var stampFrameNumbers = false

    @Flag(name: .customLong("time-compressed"), help: "Simulated rig or recording: deliver frames as fast as they are made instead of at their real times (soak tests: an hour of pairs in minutes).")
    var timeCompressed = false

    @Option(name: .long, parsing: .unconditional, help: "Stop after this long (e.g. 10min); default: until Ctrl-C or the source ends.",
            transform: DurationArgument.parse)
    var duration: DurationArgument?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535, got \(port)") }
        guard (10...100).contains(quality) else { throw ValidationError("--quality must be from 10 to 100, got \(quality)") }
        guard !listen.isEmpty, listen.allSatisfy({ $0.isASCII && ($0.isHexDigit || ".:".contains($0)) }) else {
            throw ValidationError("--listen takes an IP address (127.0.0.1, 0.0.0.0, ::1), got '\(listen)'")
        }
        if timeCompressed && !source.simulated && source.recording == nil {
            throw ValidationError("--time-compressed is for the simulated rig and recordings: cameras deliver at their own rate")
        }
        try duration?.check("--duration", atMost: DurationArgument(nanoseconds: 86_400_000_000_000 * 365))
    }

    func run() async throws {
        #if BrowserViewer
        try await serve()
        #else
        throw CLIError("this parallax was built without the browser viewer (the package trait BrowserViewer was off, "
                       + "as in the sanitizer builds); build it with `swift build` (the trait is on by default)")
        #endif
    }

    #if BrowserViewer
    private func serve() async throws {
        var source = self.source
        // A viewer of a rig running as fast as it renders shows nothing useful but to a soak test.
        source.realTime = !timeCompressed
        let opened = try source.open(quiet: true)
        let session = try rectification.session(over: opened, options: StereoSessionOptions(keepsRawFrames: true))
        let hub = ViewerHub(quality: quality, stampsFrameNumbers: stampFrameNumbers)
        let controller = ViewerController(session: session, hub: hub, token: ViewerController.makeToken(),
                                          saveFolder: saveTo, calibrationSource: rectification.calibrationSource,
                                          isMismatched: { opened.isMismatched($0) })
        let interruption = Interruption { session.stop() }
        defer { interruption.cancel() }
        if !Self.isLoopback(listen) {
            FileHandle.standardError.write(Data(("view: serving on \(listen): anyone who can reach this machine and has the URL "
                + "(with its token) sees the cameras, over plain HTTP; 127.0.0.1 and an SSH tunnel keep it to you\n").utf8))
        }
        try session.start()
        let token = controller.token, host = listen
        let serverFailure = Locked<(any Error)?>(nil)
        let server = Task {
            do {
                try await ViewerServer.run(controller: controller, host: host, port: port) { bound in
                    let shown = host.contains(":") ? "[\(host)]" : host
                    // Unbuffered: a script waiting for the URL gets it at once.
                    FileHandle.standardOutput.write(Data("parallax view: http://\(shown):\(bound)/?token=\(token)\n".utf8))
                }
            } catch {
                // A port taken or an address not here: nothing to serve, so the session ends.
                if !(error is CancellationError) { serverFailure.withLock { $0 = error } }
                session.stop()
            }
        }
        let limit = duration.map { limit in
            Task {
                try? await Task.sleep(nanoseconds: UInt64(limit.nanoseconds))
                session.stop()
            }
        }
        let status = SessionStatus(session: session)
        var failure: (any Error)?
        do {
            for try await pair in session.pairs { controller.take(pair) }
        } catch {
            failure = error
        }
        status.finish()
        limit?.cancel()
        hub.finish()
        server.cancel()
        // The server's graceful end waits for every connection to close: pages get a second
        // to go, and then the program ends anyway (an idle keep-alive, a half-sent request or
        // a client that never reads cannot hold it up).
        await Self.wait(for: server, atMostSeconds: 1)
        if let error = serverFailure.withLock({ $0 }) {
            throw CLIError("view: cannot serve on \(listen) port \(port): \(error)")
        }
        let stats = session.statistics
        let account = hub.account
        FileHandle.standardError.write(Data(("view: \(account.received) pairs; sent to pages \(account.sent), replaced by newer "
            + "\(account.replaced), with no page open \(account.unwatched); viewer account exact: \(account.isExact); "
            + "every frame accounted for: \(stats.accountsForEveryFrame(.left) && stats.accountsForEveryFrame(.right))\n").utf8))
        if let failure { throw CLIError("view: the session ended: \(failure)") }
        try stats.requireClosedAccount(command: "view")
    }
    #endif

    #if BrowserViewer
    /// Waits until `task` ends or `seconds` pass, whichever comes first.
    static func wait(for task: Task<Void, Never>, atMostSeconds seconds: Double) async {
        let waiting = Locked<CheckedContinuation<Void, Never>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiting.withLock { $0 = continuation }
            let resume: @Sendable () -> Void = { waiting.withLock { $0.take() }?.resume() }
            Task { await task.value; resume() }
            Task { try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9)); resume() }
        }
    }
    #endif

    /// Whether an address is this machine's loopback.
    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.")
    }
}
