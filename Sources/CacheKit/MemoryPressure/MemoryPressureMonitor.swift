// MemoryPressure/: the system's memory pressure and the caches' responses to it. Trims through the
// engine's trim and the cache's veto, unlocked for hooks; orders no entries itself.

/// Watches memory pressure and tells subscribers when it rises: the caches' way to give memory
/// back before the system (or the container) runs out.
///
/// ```swift
/// let monitor = try MemoryPressureMonitor.system()   // PSI and cgroup files on Linux
/// images.respond(to: monitor)                         // empty `images` on pressure
/// thumbnails.respond(to: monitor, at: .warning, with: .trim(toFraction: 0.5))
///
/// for await level in monitor.levels { print("memory pressure:", level) }
/// ```
///
/// The monitor asks its ``MemoryPressureSource`` for the level every `interval` of its clock, on a
/// task of its own, which ends when the monitor is deinitialized or ``stop()`` is called. Tests pass
/// a `ManualClock` and a source of their own, or call ``check()`` to take a reading at once.
///
/// ## When subscribers are called
/// A subscription made `at: .warning` is called each time the level rises to `.warning` or higher
/// (normal → warning, normal → critical, warning → critical); one made `at: .critical`, each time
/// it rises to `.critical`. A level that stays where it is calls nobody again, and a fall calls
/// nobody: ``levels`` reports every change, falls to `.normal` included. A subscription made
/// while the level already meets its threshold is called by the next reading that finds the
/// level still at its threshold or above, whether or not the level changed, as if the level had
/// risen just then: a cache that subscribes during pressure acts within one interval instead of
/// waiting for the pressure to end and come back. Subscribers are called
/// in the order they subscribed, on the task that took the reading, with no lock held, so they
/// may call back into the monitor. A subscription cancelled before its turn (by an earlier
/// handler, say) is skipped; one whose handler is already running finishes that call (and one
/// cancelled on another thread just as its turn comes may still be called once). When a
/// newer reading changes the level, or finds subscriptions made under pressure to call, while
/// the subscribers of an older one are being called (a handler that frees memory and checks
/// again, say), the newer one takes over: a rise calls everyone its level is due to, and
/// otherwise it calls, with the level it read, those not yet called whose threshold that level
/// meets; so every subscriber hears the newest level last, and in subscription order.
///
/// A reading that fails (a file became unreadable or malformed) leaves the level as it was and
/// is kept in ``lastError``.
public final class MemoryPressureMonitor: Sendable {
    private struct Subscriber {
        let id: UInt64
        let threshold: MemoryPressureLevel
        let handler: @Sendable (MemoryPressureLevel) -> Void
    }

    private struct State {
        var level = MemoryPressureLevel.normal
        var lastError: (any Error)?
        var nextID: UInt64 = 0
        var subscribers: [Subscriber] = []
        /// The ids in `subscribers`: whether one is still subscribed, in O(1) while a check
        /// calls the due handlers one by one.
        var subscribed: Set<UInt64> = []
        var streams: [UInt64: AsyncStream<MemoryPressureLevel>.Continuation] = [:]
        var isStopped = false
        /// Counts the readings that called subscribers (a change of level, or subscriptions made
        /// under pressure), so that a check calling its subscribers can tell that a newer one (a
        /// handler's own `check()`, say) took over meanwhile.
        var changes: UInt64 = 0
        /// The subscribers a reading made due that no check has called yet. A newer reading
        /// takes them over: a rise calls everyone due anyway, and a fall still
        /// calls those of them whose threshold the level is at (they were owed the rise).
        var owed: Set<UInt64> = []
        /// The subscribers that subscribed while the level met their threshold, not called yet:
        /// the next reading calls those whose threshold its level still meets.
        var joinedUnderPressure: Set<UInt64> = []
    }

    /// Where the readings come from.
    public let source: any MemoryPressureSource
    private let state = _Locked(State())
    private let poller = _Locked<Task<Void, Never>?>(nil)

    /// Creates a monitor that reads `source` every `interval` of `clock`, the first time one
    /// interval from now.
    ///
    /// - Precondition: `interval` is positive.
    public init(
        source: any MemoryPressureSource,
        interval: Duration = .seconds(1),
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        precondition(interval > .zero, "MemoryPressureMonitor: interval must be positive (got \(interval))")
        self.source = source
        let sleep: @Sendable (Duration) async throws -> Void = { try await clock.sleep(for: $0) }
        let task = _Timekeeper.repeating(every: interval, sleep: sleep) { [weak self] in
            guard let self else { return false }
            _ = try? self.check()
            return true
        }
        poller.withLock { $0 = task }
    }

    deinit {
        poller.withLock { $0 }?.cancel()
        for stream in state.withLock({ $0.streams.values }) { stream.finish() }
    }

    /// A monitor of this system: ``LinuxMemoryPressureSource`` on Linux (PSI and the process's
    /// cgroup), `DispatchMemoryPressureSource` on Apple platforms.
    ///
    /// `thresholds` apply to the Linux source; Apple platforms report their own levels.
    ///
    /// - Throws: ``MemoryPressureSourceError`` if the source cannot read anything (Linux without
    ///   PSI or readable cgroup files) or the platform has no source.
    public static func system(
        interval: Duration = .seconds(1),
        thresholds: MemoryPressureThresholds = .default
    ) throws -> MemoryPressureMonitor {
        #if canImport(Darwin)
        return MemoryPressureMonitor(source: DispatchMemoryPressureSource(), interval: interval)
        #elseif os(Linux)
        return MemoryPressureMonitor(
            source: try LinuxMemoryPressureSource(thresholds: thresholds),
            interval: interval
        )
        #else
        throw MemoryPressureSourceError.unsupportedPlatform
        #endif
    }

    /// The level at the last successful reading (`.normal` before the first).
    public var level: MemoryPressureLevel { state.withLock { $0.level } }

    /// The error of the last reading, or `nil` if it succeeded.
    public var lastError: (any Error)? { state.withLock { $0.lastError } }

    /// The number of subscriptions not cancelled.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Reads the source now and, if the level changed, tells the ``levels`` streams and calls the
    /// subscribers due (see "When subscribers are called"), before returning.
    ///
    /// - Returns: The new level.
    /// - Throws: The source's error; the level then stays as it was.
    @discardableResult
    public func check() throws -> MemoryPressureLevel {
        let reading = Result { try source.currentLevel() }
        let (level, due, change) = state.withLock { state -> (MemoryPressureLevel, [Subscriber], UInt64) in
            let new: MemoryPressureLevel
            switch reading {
            case .failure(let error):
                state.lastError = error
                return (state.level, [], state.changes)
            case .success(let level):
                state.lastError = nil
                new = level
            }
            let old = state.level
            let joined = state.joinedUnderPressure
            state.joinedUnderPressure = []
            if new == old {
                // Those who joined under pressure are due; if any are, this reading takes over
                // from an older one still calling subscribers, so that order is kept.
                guard state.subscribers.contains(where: { joined.contains($0.id) && $0.threshold <= new }) else {
                    return (new, [], state.changes)
                }
            } else {
                state.level = new
                for stream in state.streams.values { stream.yield(new) }
            }
            state.changes &+= 1
            let due =
                new > old
                ? state.subscribers.filter { $0.threshold <= new }
                : state.subscribers.filter {
                    (state.owed.contains($0.id) || joined.contains($0.id)) && $0.threshold <= new
                }
            state.owed = Set(due.map(\.id))
            return (new, due, state.changes)
        }
        for subscriber in due {
            // Once a newer reading has changed the level, this one's level is out of date: that
            // reading called, or will call, whoever is still owed (a handler that checks again
            // must not leave the later subscribers hearing the older level last, nor unheard).
            // A subscription cancelled since the list was taken (by an earlier handler, or
            // another thread) is skipped. (One cancelled on another thread between this decision
            // and the call is still called once: see `MemoryPressureSubscription.cancel()`.)
            let call = state.withLock { state -> Bool? in
                guard state.changes == change else { return nil }
                guard state.owed.remove(subscriber.id) != nil else { return false }
                return state.subscribed.contains(subscriber.id)
            }
            guard let call else { break }
            if call { subscriber.handler(level) }
        }
        return try reading.get()
    }

    /// Every level the monitor reads from now on: the current level first, then each change.
    ///
    /// Each access makes a new stream, so any number of tasks can listen. A stream ends when the
    /// monitor stops or is deinitialized. If a listener falls behind, the oldest unread levels are
    /// dropped (the newest 64 are kept).
    public var levels: AsyncStream<MemoryPressureLevel> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: MemoryPressureLevel.self,
            bufferingPolicy: .bufferingNewest(64)
        )
        let registered = state.withLock { state -> Bool in
            guard !state.isStopped else { return false }
            state.nextID += 1
            state.streams[state.nextID] = continuation
            continuation.yield(state.level)
            let id = state.nextID
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
            }
            return true
        }
        if !registered { continuation.finish() }
        return stream
    }

    /// Calls `handler` with the new level each time the level rises to `level` or higher, and
    /// once at the next reading if the level is already there (see "When subscribers are
    /// called").
    ///
    /// - Precondition: `level` is `.warning` or `.critical`.
    public func subscribe(
        at level: MemoryPressureLevel = .warning,
        _ handler: @escaping @Sendable (MemoryPressureLevel) -> Void
    ) -> MemoryPressureSubscription {
        precondition(level > .normal, "MemoryPressureMonitor.subscribe(at:): level must be .warning or .critical")
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.subscribers.append(Subscriber(id: state.nextID, threshold: level, handler: handler))
            state.subscribed.insert(state.nextID)
            if state.level >= level { state.joinedUnderPressure.insert(state.nextID) }
            return state.nextID
        }
        let token = ExpirationTrigger { [weak self] in
            self?.state.withLock { state in
                if state.subscribed.remove(id) != nil { state.subscribers.removeAll { $0.id == id } }
                state.joinedUnderPressure.remove(id)
                state.owed.remove(id)
            }
        }
        return MemoryPressureSubscription(token: token)
    }

    /// Stops polling and ends the ``levels`` streams. ``check()`` still works. Calling it again does
    /// nothing.
    public func stop() {
        poller.withLock { $0 }?.cancel()
        let streams = state.withLock { state in
            state.isStopped = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }
}
