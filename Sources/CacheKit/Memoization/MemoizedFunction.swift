// Memoization/: caching a function's results (MemoizedFunction, MemoStorage, the switches). Stores
// through a Cache's own store and load paths (_StateHost); adds no eviction or expiry rule.

import Synchronization

#if canImport(Foundation)
import Foundation
#endif

/// The cache memoized functions store their results in: one per function by default, or one
/// shared by several functions (their keys carry the function's identity, so they never collide).
///
/// ```swift
/// let shared = MemoCache(countLimit: 1_000, policy: .lru)
/// let weather = MemoizedFunction<Weather>("weather(for:)", cache: shared)
/// let forecast = MemoizedFunction<Forecast>("forecast(for:days:)", cache: shared)
/// ```
public typealias MemoCache = Cache<MemoKey, MemoValue>

/// A memoized result as a ``MemoCache`` holds it: the value, and how long computing it took
/// (each hit on it saves that much; see ``MemoStatistics/timeSaved``).
public struct MemoValue: Sendable {
    /// The function's result (of the function's result type).
    public let value: any Sendable
    /// How long the call that produced `value` took.
    public let computeTime: Duration
    /// When the call that produced `value` finished, in nanoseconds on the cache's clock (see
    /// `_Timekeeper`), or `-1` when not known (a value made with the public initializer).
    let computedAt: Int64
    /// Tells this stored result from any other, so that removing it when it expires cannot
    /// remove a newer result stored under the same key meanwhile.
    let serial: UInt64
    /// Which clock `computedAt` was read on, for a result in a ``MemoStorage``: a function on a
    /// storage trusts only readings of its own timeline (see `MemoStorageBacking`); `0` for a
    /// result in a ``MemoCache``, whose clock is the cache's.
    let timeline: UInt64

    /// A memoized `value` that took `computeTime` to compute.
    public init(_ value: any Sendable, computeTime: Duration) {
        self.init(value, computeTime: computeTime, computedAt: -1)
    }

    init(_ value: any Sendable, computeTime: Duration, computedAt: Int64, serial: UInt64? = nil, timeline: UInt64 = 0) {
        self.value = value
        self.computeTime = computeTime
        self.computedAt = computedAt
        self.serial = serial ?? MemoValue.serials.add(1, ordering: .relaxed).newValue
        self.timeline = timeline
    }

    private static let serials = Atomic<UInt64>(0)
}

/// Caching around one function or method (ClearCache's method cache): calls with arguments seen
/// before return the stored result instead of running the function again.
///
/// ```swift
/// let cachedWeather = MemoizedFunction<Weather>(
///     "WeatherService.weather(for:)", countLimit: 5, policy: .lru, expiresAfter: .seconds(5))
///     .wrap(service.weather(for:))
/// let now = try await cachedWeather(paris)   // runs weather(for:)
/// let again = try await cachedWeather(paris) // the stored result
/// ```
///
/// The `@Memoized` macro (product `CacheKitMacros`) writes this for a method in one line; use this
/// type directly for closures and free functions, or to share one cache between functions.
///
/// ## Keys
/// Results are stored under a ``MemoKey``: this function's ``id`` and the arguments chosen for
/// the key: all of them by default (each must be `Hashable` and `Sendable`, checked at compile
/// time), or whatever a key closure returns, for a subset (ClearCache's `parameterIndexes`) or
/// a derived key. A key closure must return equal keys exactly for calls whose results may be
/// interchanged; that is the caller's responsibility, as the cache cannot check it.
///
/// ## Results
/// An `Optional` result is stored as it is: a stored `nil` is a hit, distinct from a miss. A
/// `Void` function is run once per key while its entry is cached (its calls are de-duplicated).
/// A call that throws stores nothing; the next call runs the function again.
///
/// ## Expiration
/// A result leaves when the cache's ``Expiration`` or the function's `expiresAfter` says
/// (ClearCache's "older than"), when ``expireAll()`` or a trigger runs, or when the function's
/// `expiresWhen` rule (ClearCache's custom expiration policy) rejects it when a call finds it:
/// the rule sees the result and its age on the cache's clock, and the call then counts as a
/// miss and runs the function again.
///
/// ## Synchronous and asynchronous functions
/// For a synchronous function, two threads that miss the same key at once both run it, and the
/// first result stored is the one both return and the cache keeps (as
/// ``Cache/value(forKey:cost:expiresAfter:orInsert:)``). An `async` function is single-flight:
/// concurrent calls with the same key run it once and all get its result or its error (as
/// ``Cache/value(forKey:cost:expiresAfter:loader:)``, whose rules apply: the call runs in a task
/// of its own, and cancelling one caller does not cancel it for the others).
///
/// What changes for an `async` function with caching on: its run happens in a task of its own,
/// so cancelling the caller does not cancel the run, the run sees the task-local values of the
/// caller that started it, and a run that calls the function with its own arguments gets
/// ``CacheLoadError/recursiveLoad(key:)`` (a non-throwing function's inner call runs uncached
/// instead). With caching off the function runs in the caller's task, as it is written.
///
/// ``Expiration/refreshAfterWrite`` refreshes the results of `async` functions only; a
/// synchronous call that finds a result due for refresh returns it as it is.
///
/// ## Switching caching off
/// With caching off, each call runs the function directly and the cache is neither read nor
/// written, so the code behaves exactly as without memoization. Off globally
/// (``Memoization/isEnabled``), for this function (``isEnabled``), or for the current task only
/// (``Memoization/withCachingDisabled(_:)-(()->R)``), which parallel tests use without
/// interfering with each other.
///
/// ## Monitoring
/// ``statistics`` counts this function's hits, misses, runs and the time hits saved. The
/// ``cache``'s own statistics, activity observer and removal handler see every entry, keyed by
/// ``MemoKey`` (whose description names the function), so the `CacheKitObservability` product's
/// logging and metrics work on a memoized function's cache as on any other.
public final class MemoizedFunction<Output: Sendable>: Sendable {
    /// The function's identity, part of every key it stores. Two functions sharing a cache must
    /// have different identities.
    public let id: String
    /// The cache the results are stored in; `nil` for a function created with `storage:`.
    public var cache: MemoCache? {
        guard case .cache(let cache, _) = backend else { return nil }
        return cache
    }
    /// The storage of your own the results are stored in (see ``MemoStorage``); `nil` for a
    /// function whose results are in a ``cache``.
    public var storage: (any MemoStorage)? {
        guard case .storage(let backing) = backend else { return nil }
        return backing.storage
    }
    /// Where the results are stored.
    let backend: Backend

    /// Where a memoized function stores its results: a cache (its own, which it may empty, or a
    /// shared one), or a storage of your own with what the function keeps beside it.
    enum Backend: Sendable {
        case cache(MemoCache, owned: Bool)
        case storage(MemoStorageBacking)
    }
    /// How long a result stays after it was computed (ClearCache's "older than" expiration
    /// policy); `nil` keeps it until the cache's own expiration or eviction removes it.
    public let expiresAfter: Duration?
    /// ClearCache's custom expiration policy: asked on every hit whether the stored result has
    /// expired, with the result and its age (see the initializers).
    let expiresWhen: (@Sendable (Output, Duration) -> Bool)?
    let insertionPolicy: (@Sendable (Output) -> Bool)?
    let cost: (@Sendable (Output) -> Int)?
    private let enabled: Atomic<Bool>
    let counters = MemoCounters()
    let triggers = Triggers()
    /// Incremented by ``expireAll()`` before it removes anything: a synchronous call that saw
    /// another value when it started stores nothing.
    let epoch = Atomic<UInt64>(0)

    /// Memoizes a function in a cache of its own.
    ///
    /// - Parameters:
    ///   - id: The function's identity (its name, e.g. `"WeatherService.weather(for:)"`).
    ///   - countLimit: The most results kept; `0` (the default) means no limit. Set one for a
    ///     function called with many different arguments.
    ///   - totalCostLimit: The most total cost kept (see `cost`); `0` means no limit.
    ///   - policy: Which result leaves first when a limit is reached: any ``EvictionPolicy``
    ///     (FIFO, LFU and LRU as in ClearCache, and the others).
    ///   - expiration: The cache's expiration: time to live, time to idle, refresh after write.
    ///   - expiresAfter: Each result's own time to live ("older than").
    ///   - clock: The clock expiry is measured on; tests pass a ``ManualClock``.
    ///   - insertionPolicy: Asked with each result before it is stored; a result it refuses is
    ///     returned but not stored (e.g. "do not cache images over 30 KB"). `nil` stores all.
    ///   - cost: Each result's cost, for `totalCostLimit`; `nil` gives every result cost 0.
    ///   - expiresWhen: Your own expiration rule (ClearCache's custom expiration policy). Each
    ///     call that finds a stored result asks it first, with the result and its age: the time
    ///     on the cache's clock since its call finished (for a result made with `MemoValue`'s
    ///     public initializer, stored by hand or restored from a file, since the rule first saw
    ///     it). Returning `true` removes the result (reason ``RemovalReason/expired``), and the
    ///     call is a miss, in this function's statistics and the cache's, and runs the function
    ///     again. The rule runs on the calling thread, outside the cache's lock. A result just
    ///     computed is returned without asking it, as is one that a racing call stored between
    ///     the rule's answer and the lookup. `nil` (the default) keeps every result until another
    ///     rule removes it.
    ///   - isEnabled: Whether caching starts switched on for this function.
    /// - Precondition: The limits are not negative and the durations positive (as for ``Cache``).
    public convenience init(
        _ id: String,
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        expiration: Expiration = .never,
        expiresAfter: Duration? = nil,
        clock: some Clock<Duration> = ContinuousClock(),
        insertionPolicy: (@Sendable (Output) -> Bool)? = nil,
        cost: (@Sendable (Output) -> Int)? = nil,
        expiresWhen: (@Sendable (_ result: Output, _ age: Duration) -> Bool)? = nil,
        isEnabled: Bool = true
    ) {
        let cache = MemoCache(
            countLimit: countLimit,
            totalCostLimit: totalCostLimit,
            policy: policy,
            expiration: expiration,
            clock: clock
        )
        self.init(
            id,
            backend: .cache(cache, owned: true),
            expiresAfter: expiresAfter,
            expiresWhen: expiresWhen,
            insertionPolicy: insertionPolicy,
            cost: cost,
            isEnabled: isEnabled
        )
    }

    /// Memoizes a function in `cache`, which other functions may share.
    ///
    /// The cache's limits, policy, expiration and insertion policy apply to every function in
    /// it; `expiresAfter`, `expiresWhen`, `insertionPolicy` and `cost` apply to this function's
    /// results only (`expiresWhen` measures ages on the cache's clock).
    public convenience init(
        _ id: String,
        cache: MemoCache,
        expiresAfter: Duration? = nil,
        insertionPolicy: (@Sendable (Output) -> Bool)? = nil,
        cost: (@Sendable (Output) -> Int)? = nil,
        expiresWhen: (@Sendable (_ result: Output, _ age: Duration) -> Bool)? = nil,
        isEnabled: Bool = true
    ) {
        self.init(
            id,
            backend: .cache(cache, owned: false),
            expiresAfter: expiresAfter,
            expiresWhen: expiresWhen,
            insertionPolicy: insertionPolicy,
            cost: cost,
            isEnabled: isEnabled
        )
    }

    /// Memoizes a function in `storage`, a storage of your own (ClearCache's `INNCache`), which
    /// other functions may share. See ``MemoStorage`` for what this function does and what the
    /// storage must do.
    ///
    /// - Parameters:
    ///   - id: The function's identity, part of every key it stores.
    ///   - storage: Where the results are stored.
    ///   - expiresAfter: Each result's time to live ("older than"), measured on `clock` from when
    ///     its call finished (for a result of unknown age, see ``MemoStorage``, from when a call
    ///     first found it). A call that finds an older result removes it from `storage` and runs
    ///     the function again.
    ///   - clock: The clock ages are measured on; tests pass a ``ManualClock``.
    ///   - insertionPolicy: Asked with each result before it is stored; a result it refuses is
    ///     returned but not stored. `nil` stores all.
    ///   - cost: Each result's cost, handed to `storage`; `nil` gives every result cost 0.
    ///   - expiresWhen: Your own expiration rule, asked as for a function on a ``MemoCache``.
    ///     A result it or `expiresAfter` rejects is removed with
    ///     ``MemoStorage/removeMemoizedValue(forKey:)``, so a storage that reports removals
    ///     reports its own reason (a ``SharedCache``: ``RemovalReason/removed``).
    ///   - isEnabled: Whether caching starts switched on for this function.
    /// - Precondition: `expiresAfter` is positive.
    public convenience init(
        _ id: String,
        storage: any MemoStorage,
        expiresAfter: Duration? = nil,
        clock: some Clock<Duration> = ContinuousClock(),
        insertionPolicy: (@Sendable (Output) -> Bool)? = nil,
        cost: (@Sendable (Output) -> Int)? = nil,
        expiresWhen: (@Sendable (_ result: Output, _ age: Duration) -> Bool)? = nil,
        isEnabled: Bool = true
    ) {
        self.init(
            id,
            backend: .storage(MemoStorageBacking(storage: storage, clock: clock)),
            expiresAfter: expiresAfter,
            expiresWhen: expiresWhen,
            insertionPolicy: insertionPolicy,
            cost: cost,
            isEnabled: isEnabled
        )
    }

    private init(
        _ id: String,
        backend: Backend,
        expiresAfter: Duration?,
        expiresWhen: (@Sendable (Output, Duration) -> Bool)?,
        insertionPolicy: (@Sendable (Output) -> Bool)?,
        cost: (@Sendable (Output) -> Int)?,
        isEnabled: Bool
    ) {
        if let expiresAfter {
            precondition(expiresAfter > .zero, "expiresAfter must be positive (got \(expiresAfter))")
        }
        self.id = id
        self.backend = backend
        self.expiresAfter = expiresAfter
        self.expiresWhen = expiresWhen
        self.insertionPolicy = insertionPolicy
        self.cost = cost
        self.enabled = Atomic(isEnabled)
    }

    deinit { triggers.cancelAll() }

    /// Whether this function caches (`true` unless created or set otherwise). While `false`, every
    /// call runs the function; results stored before stay and are used again when it is set back.
    public var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }

    /// Whether a call now would use the cache: this function, the global switch and the current
    /// task all leave caching on.
    public var isCaching: Bool {
        isEnabled && Memoization.isEnabled && Memoization.isEnabledForCurrentTask
    }

    /// What this function has counted since it was created or ``resetStatistics()``.
    ///
    /// - Complexity: O(1).
    public var statistics: MemoStatistics { counters.snapshot }

    /// Sets every count in ``statistics`` to zero.
    public func resetStatistics() { counters.reset() }

    // MARK: Calls

    /// The result of the call whose key arguments are `arguments`: the stored one, or else what
    /// `compute` returns, stored. See the type's documentation for concurrency and errors.
    ///
    /// - Complexity: O(1) on a hit (one lookup under the cache's lock; with `expiresWhen`, a
    ///   peek and the rule first); on a miss, O(1) plus `compute`.
    public func call<Arguments: Hashable & Sendable, Failure: Error>(
        arguments: Arguments,
        _ compute: () throws(Failure) -> Output
    ) throws(Failure) -> Output {
        guard isCaching else {
            counters.recordBypass()
            return try compute()
        }
        let key = MemoKey(function: id, arguments: arguments)
        let cache: MemoCache
        switch backend {
        case .storage(let backing): return try storedCall(forKey: key, in: backing, compute)
        case .cache(let memoCache, _): cache = memoCache
        }
        if expiresWhen != nil { removeRejected(forKey: key, in: cache) }
        if let hit = cache.value(forKey: key) {
            counters.recordHit(saving: hit.computeTime)
            return output(of: hit)
        }
        counters.recordMiss()
        let startEpoch = epoch.load(ordering: .sequentiallyConsistent)
        // An explicit removal from the cache meanwhile (its `expireAll`, a trigger, `removeAll`)
        // drops this result, as it detaches an asynchronous call's load.
        let invalidations = cache._invalidations
        let start = ContinuousClock.now
        let result: Output
        do {
            result = try compute()
        } catch {
            let elapsed = ContinuousClock.now - start
            counters.recordRun(time: elapsed, failed: true)
            cache._recordLoad(forKey: key, time: elapsed, error: error)
            throw error
        }
        let elapsed = ContinuousClock.now - start
        counters.recordRun(time: elapsed, failed: false)
        cache._recordLoad(forKey: key, time: elapsed, error: nil)
        let stored = cache._store(
            MemoValue(result, computeTime: elapsed, computedAt: expiresWhen == nil ? -1 : cache._timekeeper.reading()),
            forKey: key,
            cost: cost?(result) ?? 0,
            expiresAfter: expiresAfter,
            when: .ifAbsentAndCurrent(since: invalidations) {
                self.epoch.load(ordering: .sequentiallyConsistent) == startEpoch
            },
            admitted: insertionPolicy?(result) ?? true
        ).stored
        return output(of: stored)
    }

    /// The result of the call whose key arguments are `arguments`: the stored one, or else what
    /// `compute` returns, stored. Concurrent calls with equal keys run `compute` once and share
    /// its result or error (single-flight).
    ///
    /// - Throws: What `compute` throws, or ``CacheLoadError/recursiveLoad(key:)`` when `compute`
    ///   calls this function with the same key (directly or through other memoized loads).
    /// - Complexity: O(1) on a hit; on a miss, O(1) plus `compute`.
    // Disfavored: a closure that awaits nothing then picks the synchronous overload, instead of
    // being ambiguous in an async context.
    @_disfavoredOverload
    public func call<Arguments: Hashable & Sendable>(
        arguments: Arguments,
        _ compute: @escaping @Sendable () async throws -> Output
    ) async throws -> Output {
        try await call(arguments: arguments, compute, recursionIsAMiss: true)
    }

    /// The throwing `call(arguments:_:)`. `recursionIsAMiss`: whether a recursive call (which
    /// throws `recursiveLoad` before any run) counts as a miss; the non-throwing `call` counts
    /// it as the bypass it then runs instead, and once is enough.
    func call<Arguments: Hashable & Sendable>(
        arguments: Arguments,
        _ compute: @escaping @Sendable () async throws -> Output,
        recursionIsAMiss: Bool
    ) async throws -> Output {
        guard isCaching else {
            counters.recordBypass()
            return try await compute()
        }
        let key = MemoKey(function: id, arguments: arguments)
        let cache: MemoCache
        switch backend {
        case .storage(let backing): return try await storedCall(forKey: key, in: backing, compute)
        case .cache(let memoCache, _): cache = memoCache
        }
        let counters = self.counters
        let cost = self.cost
        let costOfValue: @Sendable (MemoValue) -> Int = { value in
            guard let cost, let output = value.value as? Output else { return 0 }
            return cost(output)
        }
        var admit: (@Sendable (MemoValue) -> Bool)?
        if let insertionPolicy {
            admit = { value in (value.value as? Output).map(insertionPolicy) ?? true }
        }
        // The clock is read for `expiresWhen` only.
        let timekeeper = expiresWhen == nil ? nil : cache._timekeeper
        let loader: @Sendable (MemoKey) async throws -> MemoValue = { _ in
            let start = ContinuousClock.now
            do {
                let result = try await compute()
                let elapsed = ContinuousClock.now - start
                counters.recordRun(time: elapsed, failed: false)
                return MemoValue(result, computeTime: elapsed, computedAt: timekeeper?.reading() ?? -1)
            } catch {
                counters.recordRun(time: ContinuousClock.now - start, failed: true)
                throw error
            }
        }
        if expiresWhen != nil { removeRejected(forKey: key, in: cache) }
        let value: MemoValue
        let wasHit: Bool
        do {
            (value, wasHit) = try await cache._value(
                forKey: key,
                cost: costOfValue,
                admit: admit
            ) { [expiresAfter] key in (try await loader(key), expiresAfter) }
        } catch CacheLoadError.recursiveLoad(let key) {
            if recursionIsAMiss { counters.recordMiss() }
            throw CacheLoadError.recursiveLoad(key: key)
        } catch {
            // A failed run, shared or not, is a miss for every caller that waited for it.
            counters.recordMiss()
            throw error
        }
        if wasHit { counters.recordHit(saving: value.computeTime) } else { counters.recordMiss() }
        return output(of: value)
    }

    /// The throwing `call(arguments:_:)` for a function that cannot throw: the result, shared
    /// by concurrent calls with equal keys. If `compute` calls this function with its own key
    /// (which would wait for itself), that inner call runs `compute` uncached instead, as it would
    /// without memoization.
    ///
    /// - Complexity: O(1) on a hit; on a miss, O(1) plus `compute`.
    // Disfavored: a closure that awaits nothing then picks the synchronous overload, instead of
    // being ambiguous in an async context.
    @_disfavoredOverload
    public func call<Arguments: Hashable & Sendable>(
        arguments: Arguments,
        _ compute: @escaping @Sendable () async -> Output
    ) async -> Output {
        let throwing: @Sendable () async throws -> Output = compute
        do {
            return try await call(arguments: arguments, throwing, recursionIsAMiss: false)
        } catch {
            // `compute` throws nothing: the error is the recursive load's. Run it as if caching
            // were off for this call.
            counters.recordBypass()
            return await compute()
        }
    }

    /// Asks `expiresWhen` about the result stored for `key`, looked at without counting a read
    /// or moving it in eviction order, and removes it (reason ``RemovalReason/expired``) if the
    /// rule rejects it, unless another result has replaced it meanwhile. The lookup that follows
    /// then counts a hit or a miss in the cache as for any other call.
    ///
    /// A result whose time of computation is unknown (made with `MemoValue`'s public
    /// initializer: stored by hand, or restored from a file) is stamped the first time it is
    /// looked at here, and ages from then.
    private func removeRejected(forKey key: MemoKey, in cache: MemoCache) {
        guard let expiresWhen, let stored = cache.peekValue(forKey: key) else { return }
        let now = cache._timekeeper.reading()
        let serial = stored.serial
        let age: Duration
        if stored.computedAt < 0 {
            age = .zero
            let stamped = MemoValue(stored.value, computeTime: stored.computeTime, computedAt: now, serial: serial)
            // Only if still unstamped: a caller that stamped it first set the time it ages from.
            cache._replaceValue(forKey: key, if: { $0.serial == serial && $0.computedAt < 0 }, with: stamped)
        } else {
            age = .nanoseconds(max(0, now - stored.computedAt))
        }
        guard expiresWhen(output(of: stored), age) else { return }
        cache._removeValue(forKey: key, reason: .expired, if: { $0.serial == serial })
    }

    func output(of value: MemoValue) -> Output {
        guard let output = value.value as? Output else {
            preconditionFailure(
                "the cache holds a \(type(of: value.value)) for \(id), which returns \(Output.self): "
                    + "two memoized functions sharing a cache have the same id"
            )
        }
        return output
    }
}
