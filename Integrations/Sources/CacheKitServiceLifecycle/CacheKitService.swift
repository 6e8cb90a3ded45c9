// CacheKitServiceLifecycle: the background work of CacheKit's caches, started and stopped with a
// server's other services. Each duty is a periodic job (run on the service's task group) and a
// job for the end (run after the periodic jobs stopped, in reverse order of the duties).

import CacheKit
import ServiceLifecycle

/// A swift-service-lifecycle `Service` that owns the background work of CacheKit's caches:
/// expiry sweeps, memory-pressure responses, autosave with a last save at shutdown, and closing a
/// ``TieredCache``'s store.
///
/// ```swift
/// let sessions = Cache<String, Session>(countLimit: 100_000)
/// let persistence = CachePersistence(cache: sessions, fileURL: url)
/// try persistence.load()
/// let articles = TieredCache<String, Article>(
///     countLimit: 1_000, store: try await DiskStore(directory: dir, byteLimit: 500 << 20))
///
/// let cacheService = CacheKitService([
///     .sweeping(sessions, every: .seconds(30)),
///     .respondingToMemoryPressure(sessions, monitor: try .system()),
///     .autosaving(persistence, every: .seconds(60)),
///     .closing(articles),
/// ])
/// let group = ServiceGroup(services: [app, cacheService], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// The service runs until graceful shutdown (or cancellation). Then it stops every periodic
/// job (sweeps, autosaves, flushes, memory-pressure subscriptions), and runs each duty's end in
/// the reverse order of the duties: the last save, the flush and close of a tiered cache's
/// store, stopping a memory-pressure monitor. Every end runs even when an earlier one fails;
/// the first error is rethrown, so the service group logs it.
///
/// Put the service after the services that use the caches in a `ServiceGroup`: the group shuts
/// services down in reverse order, so the server stops taking requests before the caches save
/// and close.
public struct CacheKitService: Service {
    /// The duties the service carries out, in order.
    public let duties: [Duty]

    /// Creates a service that carries out `duties`.
    public init(_ duties: [Duty]) {
        self.duties = duties
    }

    /// Runs the periodic jobs until graceful shutdown or cancellation, then each duty's end, in
    /// reverse order.
    ///
    /// - Throws: The first error of a duty's end (a failed last save, say).
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            for duty in duties {
                guard let periodic = duty.periodic else { continue }
                group.addTask { await periodic() }
            }
            // Returns on graceful shutdown; throws on cancellation: either way the jobs stop.
            try? await gracefulShutdown()
            group.cancelAll()
        }
        var firstError: (any Error)?
        for duty in duties.reversed() {
            do {
                try await duty.end()
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        if let firstError { throw firstError }
    }
}

extension CacheKitService {
    /// One piece of background work: a job repeated while the service runs and a job for the
    /// end.
    public struct Duty: Sendable {
        /// What runs while the service runs; it stops when its task is cancelled.
        let periodic: (@Sendable () async -> Void)?
        /// What runs once the periodic jobs stopped.
        let end: @Sendable () async throws -> Void

        /// Creates a duty from a job that runs while the service runs (until its task is
        /// cancelled) and one that runs at the end.
        ///
        /// - Parameters:
        ///   - periodic: Runs while the service runs; must return when its task is cancelled.
        ///     `nil` for none.
        ///   - end: Runs once at shutdown, after every periodic job stopped.
        public init(
            periodic: (@Sendable () async -> Void)? = nil,
            end: @escaping @Sendable () async throws -> Void = {}
        ) {
            self.periodic = periodic
            self.end = end
        }

        /// Runs `body` every `interval` of `clock` until the task is cancelled; the first time
        /// one interval from the start.
        ///
        /// - Precondition: `interval` is positive.
        public static func every<C: Clock<Duration>>(
            _ interval: Duration,
            clock: C = ContinuousClock(),
            _ body: @escaping @Sendable () async -> Void
        ) -> Duty {
            precondition(interval > .zero, "the interval of a duty must be positive (got \(interval))")
            return Duty(periodic: {
                while true {
                    do {
                        try await clock.sleep(for: interval)
                    } catch {
                        return  // cancelled
                    }
                    await body()
                }
            })
        }

        /// Removes `cache`'s expired entries every `interval` of `clock`, so that they free
        /// their memory without waiting to be read or evicted. A cache created with an
        /// ``Expiration/sweepInterval`` sweeps itself and needs no such duty.
        ///
        /// - Precondition: `interval` is positive.
        public static func sweeping<Key: Sendable, Value: Sendable, C: Clock<Duration>>(
            _ cache: Cache<Key, Value>,
            every interval: Duration,
            clock: C = ContinuousClock()
        ) -> Duty {
            every(interval, clock: clock) { cache.removeExpired() }
        }

        /// Frees `cache`'s memory each time `monitor` reports pressure rising to `level` or
        /// higher (see ``Cache/respond(to:at:with:)``), from when the service starts until it
        /// stops. At the end the subscription is cancelled, and the monitor stopped when
        /// `stopsMonitor` is `true`.
        ///
        /// - Parameters:
        ///   - cache: The cache to trim or empty.
        ///   - monitor: The monitor to listen to, for example `try MemoryPressureMonitor.system()`.
        ///   - level: The level from which to act.
        ///   - action: What to do; `nil` for the cache's ``Cache/memoryPressureAction``.
        ///   - stopsMonitor: Whether the end stops `monitor` (when nothing else listens to it).
        public static func respondingToMemoryPressure<Key: Sendable, Value: Sendable>(
            _ cache: Cache<Key, Value>,
            monitor: MemoryPressureMonitor,
            at level: MemoryPressureLevel = .warning,
            with action: MemoryPressureAction? = nil,
            stopsMonitor: Bool = true
        ) -> Duty {
            Duty(
                periodic: {
                    let subscription = cache.respond(to: monitor, at: level, with: action)
                    await Self.waitForCancellation()
                    subscription.cancel()
                },
                end: { if stopsMonitor { monitor.stop() } }
            )
        }

        /// Saves `persistence`'s cache every `interval` of `clock` while the service runs, and
        /// once more at the end (``CachePersistence/close()``).
        ///
        /// Load the file (``CachePersistence/load()``) before the service group runs: a
        /// persistence that has not loaded an existing file refuses to replace it, and the
        /// cache should hold the saved entries before the first request.
        ///
        /// Errors of the periodic saves go to ``CachePersistence/onError``; an error of the last
        /// save is thrown by ``CacheKitService/run()``.
        ///
        /// - Precondition: `interval` is positive.
        public static func autosaving<C: SnapshotCache & Sendable, Clk: Clock<Duration>>(
            _ persistence: CachePersistence<C>,
            every interval: Duration,
            clock: Clk = ContinuousClock()
        ) -> Duty {
            precondition(interval > .zero, "the autosave interval must be positive (got \(interval))")
            return Duty(
                periodic: {
                    // The autosave runs on a task of the persistence's own, from the start of
                    // the service to its end.
                    persistence.startAutosave(every: interval, clock: clock)
                    await Self.waitForCancellation()
                    persistence.stopAutosave()
                },
                end: { try persistence.close() }
            )
        }

        /// Closes `cache`'s store at the end (``TieredCache/close()``), after its background
        /// writes reach it. With `flushEvery`, also waits for the pending background writes of
        /// a write-behind cache every `flushEvery` of `clock`, so that none waits long.
        ///
        /// - Precondition: `flushEvery`, if given, is positive.
        public static func closing<Key: Hashable & Sendable, Value: Sendable, C: Clock<Duration>>(
            _ cache: TieredCache<Key, Value>,
            flushEvery: Duration? = nil,
            clock: C = ContinuousClock()
        ) -> Duty {
            let periodic = flushEvery.map { interval in every(interval, clock: clock) { await cache.flush() } }
            return Duty(periodic: periodic?.periodic, end: { try await cache.close() })
        }

        /// Suspends until the task is cancelled.
        private static func waitForCancellation() async {
            let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
            await withTaskCancellationHandler {
                for await _ in stream {}
            } onCancel: {
                continuation.finish()
            }
        }
    }
}
