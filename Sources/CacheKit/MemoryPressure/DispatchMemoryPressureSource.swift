#if canImport(Darwin)
import Dispatch

/// Memory pressure as the system reports it on Apple platforms, through
/// `DispatchSource.makeMemoryPressureSource`.
///
/// The dispatch source tells it of each change; ``currentLevel()`` returns the latest (`.normal`
/// until the first event). It stops listening when deinitialized.
public final class DispatchMemoryPressureSource: MemoryPressureSource {
    /// The dispatch source, which is thread-safe; boxed because it is not marked `Sendable`.
    private struct Box: @unchecked Sendable {
        let source: any DispatchSourceMemoryPressure
    }

    private let box: Box
    private let level: _Locked<MemoryPressureLevel>

    /// Starts listening for the system's memory-pressure events, handled on `queue`.
    public init(queue: DispatchQueue = .global(qos: .utility)) {
        let source = DispatchSource.makeMemoryPressureSource(eventMask: [.normal, .warning, .critical], queue: queue)
        let box = Box(source: source)
        let level = _Locked(MemoryPressureLevel.normal)
        source.setEventHandler {
            let event = box.source.data
            let new: MemoryPressureLevel =
                event.contains(.critical) ? .critical : event.contains(.warning) ? .warning : .normal
            level.withLock { $0 = new }
        }
        self.box = box
        self.level = level
        source.activate()
    }

    deinit { box.source.cancel() }

    /// The level of the latest event.
    public func currentLevel() -> MemoryPressureLevel { level.withLock { $0 } }
}
#endif
