import ParallaxGeometry

extension StereoDevice.State {
    /// A new grid for `side`'s cap (see ``FrameRateCap``), or none when the cameras do not
    /// stream faster than the configuration's cap.
    mutating func restartCap(_ side: StereoSide) {
        caps[side] = nil
        guard let cap = configuration?.minimumFrameInterval, let camera = active?[side].frameInterval,
              camera < cap else { return }
        caps[side] = FrameRateCap(intervalNanoseconds: cap.nanoseconds, cameraIntervalNanoseconds: camera.nanoseconds)
    }
}

extension StereoDevice {
    /// Starts both enabled sides streaming into `handler`.
    ///
    /// The cost is checked again first (a side switched off costs nothing). If the kernel
    /// refuses STREAMON for bandwidth although the estimate was below 1.0, the other side
    /// is stopped, the camera pair and format are remembered (later estimates report it),
    /// and ``StereoDeviceError/refusedAtStreamOn(side:device:format:estimate:)`` is thrown.
    ///
    /// Each frame reaches `handler` as ``StereoOutput/frame(_:_:)`` with its side's camera
    /// model when a calibration is attached; a frame-rate cap the cameras could not be set
    /// to is kept by holding frames back (``DropReason/frameRateCap``).
    ///
    /// - Throws: ``StereoDeviceError/invalidState(_:)`` before ``configure(_:allowingOverBudget:)``
    ///   or while streaming, ``StereoDeviceError/overBudget(_:cost:alternatives:separateBusesCost:)``,
    ///   ``StereoDeviceError/refusedAtStreamOn(side:device:format:estimate:)``,
    ///   ``StereoDeviceError/capture(_:side:)``.
    public func start(_ handler: @escaping @Sendable (StereoOutput) -> Void) throws(StereoDeviceError) {
        let (configuration, active, enabled, allowOver, wasStreaming) = state.withLock { s in
            (s.configuration, s.active, s.enabled, s.allowOverBudget, s.streaming)
        }
        guard let configuration, let active else { throw .invalidState("configure the stereo device before starting it") }
        guard !wasStreaming else { throw .invalidState("the stereo device is already streaming") }
        let estimate = cost(streaming: active.left, enabled: enabled)
        if !estimate.runs && !allowOver {
            throw .overBudget(configuration, cost: estimate, alternatives: alternatives(to: configuration),
                              separateBusesCost: separateBusesCost(active.left))
        }
        // The simulated views render before either side starts, so one side running as
        // fast as possible does not race ahead while the other renders.
        for side in StereoSide.allCases {
            do { try (constituents[side] as? SimulatedCamera)?.prepare() } catch { throw .capture(error, side: side) }
        }
        // MJPEG is decoded on each camera's thread, into a pool per side.
        var decoders: PerSide<MJPEGFrameDecoder?> = PerSide(repeating: nil)
        if active.left.fourCC == .mjpeg {
            let decoding = state.withLock { $0.decoding }
            for side in StereoSide.allCases {
                do {
                    decoders[side] = try MJPEGFrameDecoder(decoding: decoding, device: constituents[side].identity.name,
                                                           frameSize: active[side].size)
                } catch {
                    throw .capture(error, side: side)
                }
            }
        }
        state.withLock { s in
            s.streaming = true
            s.handler = OutputHandler(handler)
            for side in StereoSide.allCases { s.restartCap(side) }
            s.decoders = decoders
        }
        var started: [StereoSide] = []
        for side in StereoSide.allCases where enabled[side] {
            do {
                try startConstituent(side)
                started.append(side)
            } catch {
                for other in started { constituents[other].stop() }
                state.withLock { s in
                    s.streaming = false
                    s.handler = nil
                    s.decoders = PerSide(repeating: nil)
                }
                throw failure(error, side: side, format: active[side], estimate: estimate)
            }
        }
    }

    /// Stops both sides and waits for their threads. Idempotent.
    public func stop() {
        let running = state.withLock { s -> Bool in
            defer { s.streaming = false }
            return s.streaming
        }
        guard running else { return }
        // Both are told first: a simulated camera whose partner stopped would otherwise run
        // free (nothing holds it in step any more) until its own stop.
        requestStop()
        for device in constituents.both { device.stop() }
        state.withLock { s in
            s.handler = nil
            s.decoders = PerSide(repeating: nil)
        }
    }

    /// Asks the constituents that run as fast as they can (simulated cameras, recordings) to
    /// stop, without waiting: a consumer that is done stops the flood at once, and
    /// ``stop()`` then joins them.
    func requestStop() {
        for device in constituents.both { (device as? any StopRequesting)?.requestStop() }
    }

    /// Switches one side off (it stops streaming, freeing its bandwidth) or on again, while
    /// the other keeps streaming undisturbed. Outside streaming it only records the choice
    /// for the next ``start(_:)``.
    ///
    /// The handler sees ``StereoOutput/disabled(_:)`` before the side stops, and
    /// ``StereoOutput/enabled(_:)`` before its first frame after it starts again. A V4L2
    /// side starts again only once every frame it delivered before has been released (the
    /// kernel reallocates its buffers); until then this throws and the side stays off.
    ///
    /// - Throws: ``StereoDeviceError`` when the side cannot start again (it stays off).
    public func setEnabled(_ isEnabled: Bool, _ side: StereoSide) throws(StereoDeviceError) {
        let (streaming, was, handler, active) = state.withLock { s in
            defer { s.enabled[side] = isEnabled }
            return (s.streaming, s.enabled[side], s.handler, s.active)
        }
        guard streaming, was != isEnabled, let handler = handler?.call else { return }
        if !isEnabled {
            handler(.disabled(side))
            constituents[side].stop()
            return
        }
        state.withLock { $0.restartCap(side) }
        handler(.enabled(side))
        do {
            try startConstituent(side)
        } catch {
            state.withLock { $0.enabled[side] = false }
            handler(.disabled(side))
            let format = active?[side] ?? constituents[side].activeFormat
            throw failure(error, side: side, format: format,
                          estimate: format.map { cost(streaming: $0, enabled: PerSide(repeating: true)) })
        }
    }

    /// The frame rate each side delivers now: the cameras' rate, or the cap when lower.
    public var deliveredFramesPerSecond: Double? {
        state.withLock { s -> Double? in
            guard let active = s.active else { return nil }
            let camera = active.left.frameInterval.framesPerSecond
            return min(camera, s.configuration?.maximumFramesPerSecond ?? camera)
        }
    }

    /// Brings a constituent back after it disconnected: opens it again (it must be the same
    /// camera, see ``ReconnectableCaptureDevice``), sets the active format, and, while the
    /// device streams, hands ``StereoOutput/reconnected(_:isEnabled:)`` to the handler and,
    /// when the side is switched on, starts it into the same handler.
    ///
    /// - Throws: ``StereoDeviceError/capture(_:side:)`` while the camera is still absent or
    ///   when another camera answers; ``StereoDeviceError/driversDisagree(requested:left:right:)``
    ///   when it comes back with another format; ``StereoDeviceError/invalidState(_:)`` for a
    ///   constituent that cannot reconnect (simulated, recorded, side-by-side halves).
    public func reconnect(_ side: StereoSide) throws(StereoDeviceError) {
        guard let device = constituents[side] as? any ReconnectableCaptureDevice else {
            throw .invalidState("the \(side) camera (\(constituents[side].identity.name)) cannot be reconnected")
        }
        do { try device.reconnect() } catch { throw .capture(error, side: side) }
        let (streaming, active, enabled) = state.withLock { ($0.streaming, $0.active, $0.enabled[side]) }
        if let format = active?[side] {
            let set: CaptureFormat
            do { set = try device.configure(format) } catch { throw .capture(error, side: side) }
            guard set == format else {
                throw .driversDisagree(requested: format, left: side == .left ? set : format, right: side == .right ? set : format)
            }
        }
        guard streaming, let handler = state.withLock({ $0.handler }) else { return }
        handler.call(.reconnected(side, isEnabled: enabled))
        guard enabled else { return }
        state.withLock { $0.restartCap(side) }
        do { try startConstituent(side) } catch {
            // Back, but it cannot stream: to the handler it is gone again.
            handler.call(.event(.disconnected, side))
            throw failure(error, side: side, format: active?[side],
                          estimate: active.map { cost(streaming: $0[side], enabled: PerSide(repeating: true)) })
        }
    }

    private func failure(_ error: CaptureError, side: StereoSide, format: CaptureFormat?,
                         estimate: HardwareCost?) -> StereoDeviceError {
        if case .insufficientBandwidth = error, let format, let estimate {
            BandwidthRefusals.shared.insert(key(format))
            return .refusedAtStreamOn(side: side, device: constituents[side].identity.description, format: format,
                                      estimate: estimate)
        }
        return .capture(error, side: side)
    }

    private func startConstituent(_ side: StereoSide) throws(CaptureError) {
        try constituents[side].start { [weak self] output in self?.deliver(output, from: side) }
    }

    /// Routes one constituent output: the stop of a side being switched off is not passed
    /// on (``StereoOutput/disabled(_:)`` said it), frames get the camera model and the cap.
    private func deliver(_ output: CaptureOutput, from side: StereoSide) {
        switch output {
        case .event(let event):
            let (handler, enabled) = state.withLock { ($0.handler, $0.enabled[side]) }
            if event == .stopped && !enabled { return }
            handler?.call(.event(event, side))
        case .frame(let frame):
            let (handler, model, keep, decoder) = state.withLock { s -> (OutputHandler?, CameraModel?, Bool, MJPEGFrameDecoder?) in
                (s.handler, s.models?[side], s.caps[side]?.admits(frame.timestampNanoseconds) ?? true, s.decoders[side])
            }
            guard let handler else { return }
            guard keep else {
                handler.call(.event(.dropped(count: 1, reason: .frameRateCap), side))
                return
            }
            guard let decoder, frame.image == nil else {
                handler.call(.frame(Self.frame(frame, with: model), side))
                return
            }
            // Here, on this camera's own thread: the two sides decode in parallel.
            switch decoder.decode(frame, model: model) {
            case .decoded(let decoded):
                handler.call(.frame(decoded, side))
            case .dropped(let reason, let report):
                if let report { handler.call(.event(.recoverableError(report), side)) }
                handler.call(.event(.dropped(count: 1, reason: reason), side))
            }
        }
    }

    /// The frame with `model` attached (a view of the same pixels that keeps the original,
    /// and so its driver buffer, alive), or the frame itself when it already has it.
    static func frame(_ frame: Frame, with model: CameraModel?) -> Frame {
        guard let model, frame.camera != model else { return frame }
        let parent = frame
        return Frame(image: frame.image, payload: frame.payload, format: frame.format,
                     timestampNanoseconds: frame.timestampNanoseconds, timestampSource: frame.timestampSource,
                     sequence: frame.sequence, source: frame.source, exposureNanoseconds: frame.exposureNanoseconds,
                     camera: model, release: { _ = parent })
    }
}
