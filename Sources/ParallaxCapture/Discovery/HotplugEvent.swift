import ParallaxGeometry

/// A camera arriving or departing, with the node it has (or had) and its identity.
public enum HotplugEvent: Hashable, Sendable {
    /// A camera appeared: its capture node can be opened.
    case arrived(DiscoveredCamera)
    /// A camera went away (unplugged, or its driver unbound).
    case departed(DiscoveredCamera)

    /// The camera the event is about.
    public var camera: DiscoveredCamera {
        switch self {
        case .arrived(let camera), .departed(let camera): camera
        }
    }
}

/// A subscription to hot-plug events: they stop when it is cancelled or freed.
public final class HotplugWatch: Sendable {
    private let stopAction: Locked<(@Sendable () -> Void)?>

    /// A watch that runs `stop` once, at ``cancel()`` or when freed.
    public init(stop: @escaping @Sendable () -> Void) {
        stopAction = Locked(stop)
    }

    deinit { cancel() }

    /// Stops the events (waits for a monitor's thread where there is one; with a virtual
    /// driver, an announcement already on its way may still arrive). Idempotent.
    public func cancel() {
        let stop = stopAction.withLock { action in
            defer { action = nil }
            return action
        }
        stop?()
    }
}
