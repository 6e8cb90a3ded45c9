/// Where a ``MemoryPressureMonitor`` gets its readings: something that can say, when asked, how
/// hard the system is pressed for memory.
///
/// CacheKit provides ``LinuxMemoryPressureSource`` (PSI and cgroup files) and, on Apple platforms,
/// `DispatchMemoryPressureSource`. Tests and other environments supply their own.
public protocol MemoryPressureSource: Sendable {
    /// The level now. Called by the monitor once per polling interval, never concurrently with
    /// itself from the monitor's poller (a manual ``MemoryPressureMonitor/check()`` may overlap it).
    ///
    /// - Throws: If the readings cannot be taken; the monitor keeps its previous level and records
    ///   the error in ``MemoryPressureMonitor/lastError``.
    func currentLevel() throws -> MemoryPressureLevel
}

/// Why a memory-pressure source could not give a reading.
public enum MemoryPressureSourceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// None of the files the source watches could be read (`tried` lists them), so it has
    /// nothing to judge the pressure by.
    case nothingReadable(tried: [String])
    /// A file did not have the expected format. `line` counts from 1.
    case malformed(file: String, line: Int, reason: String)
    /// This platform has no memory-pressure source built in; supply your own ``MemoryPressureSource``.
    case unsupportedPlatform

    public var description: String {
        switch self {
        case .nothingReadable(let tried):
            "no memory-pressure file is readable (tried \(tried.joined(separator: ", ")))"
        case .malformed(let file, let line, let reason):
            "\(file):\(line): \(reason)"
        case .unsupportedPlatform:
            "no built-in memory-pressure source on this platform"
        }
    }
}

/// A standing order to act when a ``MemoryPressureMonitor`` reports pressure, returned by
/// ``MemoryPressureMonitor/subscribe(at:_:)`` and `Cache.respond(to:at:with:)`.
///
/// It lasts until ``cancel()`` is called or, for a cache's subscription, the cache is
/// deinitialized (which cancels it; the subscription never keeps its cache alive). If the monitor
/// goes away first, the subscription stays uncancelled but is never called again.
public final class MemoryPressureSubscription: Sendable {
    /// The cancellation token; the same type a cache keeps for its expiration triggers, so the
    /// cache's `deinit` cancels it along with them.
    let _token: ExpirationTrigger

    init(token: ExpirationTrigger) { _token = token }

    /// Stops the subscription: no reading calls it after this returns, except that a reading on
    /// another thread that was already calling the subscribers may still call it once, if its
    /// turn was decided before the cancel (a handler already running finishes too). Cancelled
    /// from a handler of the same reading, or with no reading under way, it is exact. Calling
    /// it again does nothing.
    ///
    /// (Waiting for such a call to finish would deadlock a handler that cancels its own
    /// subscription, so the handler should tolerate one late call, as a cache's does.)
    public func cancel() { _token.cancel() }

    /// Whether ``cancel()`` was called or the subscribing cache went away.
    public var isCancelled: Bool { _token.isCancelled }
}
