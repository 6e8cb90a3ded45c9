// Caches/: Cache and SerialCache, two caches over one engine state, and _StateHost, the rules
// they share. Drives the engine through _CacheState, runs every hook unlocked; orders no entries.

import Synchronization
import _CacheKitShims

/// A thread-safe, bounded key-value cache: `NSCache` done right.
///
/// ```swift
/// let images = Cache<URL, Image>(countLimit: 200, totalCostLimit: 50_000_000)
/// images.setValue(image, forKey: url, cost: image.byteCount)
/// if let hit = images[url] { show(hit) }
/// ```
///
/// `Cache` is an ordered, strict cache. Its default policy, ``EvictionPolicy/default``
/// (W-TinyLFU), keeps the entries most likely to be asked for again; with ``EvictionPolicy/lru``
/// the least recently used entry leaves first. Limits hold before a write returns: add the 201st entry
/// to a cache with `countLimit: 200` and one entry is gone when `setValue` returns (YapCache's
/// "strict"; `NSCache` evicts later, and on Linux evicts the newest entry).
///
/// ## Limits
/// `countLimit` bounds the number of entries and `totalCostLimit` the sum of their costs (the
/// `cost:` you pass with each write, `0` by default); `0` means no limit. Changing a limit evicts at
/// once. An entry whose cost alone exceeds `totalCostLimit` is not stored: the write returns
/// ``WriteResult/Outcome/rejected(_:)`` and removes any previous value for the key.
///
/// ## Events
/// ``removalHandler`` hears every removal with its ``RemovalReason`` (evicted for count or cost,
/// replaced, removed, removed by ``removeAll()``, memory pressure, expired). ``evictionVeto`` is asked before
/// each eviction (not before explicit removals) and may keep the entry: then the next candidate in
/// eviction order is tried; if every candidate is vetoed the cache stays above its limit and the
/// write reports ``WriteResult/isOverLimit``. Both run on the calling thread after the lock is
/// released, so they may call back into this cache. Evicted values are released outside the lock
/// too.
///
/// ## Thread safety
/// Every read and write holds one lock for an O(1) critical section (enumeration
/// and bulk removals for O(n) and O(k)). The lock keeps its throughput when more threads contend
/// for it than there are cores (see <doc:Performance>), but threads do not read in parallel: for
/// many readers, use ``SharedCache``. `Cache` is `Sendable` exactly when `Key` and `Value` are.
///
/// ## Performance
/// Entries live in contiguous slot arrays with a 4-byte-per-bucket hash index, so a million
/// `Int`-to-`Int` entries take about as many bytes as a `Dictionary` holding them (with LRU, FIFO
/// or SIEVE; W-TinyLFU's sketch adds about a third). Reads and writes
/// are O(1) and allocate nothing once the cache is full. See <doc:Performance> for measured figures.
///
/// ## Hashing
/// Keys of the standard integer types (`Int`, `UInt32`, …) are hashed by CacheKit itself, with
/// seeded multiplications a few times cheaper than `Hasher`; the seed is drawn once per process
/// (fixed when `SWIFT_DETERMINISTIC_HASHING` is set). That protects less against keys chosen to
/// collide than `Hasher`'s SipHash. If an adversary picks your integer keys, wrap them in a key
/// type of your own: every other key type is hashed by its `Hashable` conformance.
public final class Cache<Key: Hashable, Value> {
    @usableFromInline let lock = _Lock()
    @usableFromInline let state: UnsafeMutablePointer<_CacheState<Key, Value>>
    /// Where the index's buckets are (their address and `mask`), copied out of the state after
    /// each critical section that moved them, so that a read or write can prefetch its key's
    /// bucket before it takes the lock (see `_prefetchIndex`). Relaxed atomics, read outside
    /// the lock: the two may be a moment out of date or out of step, which costs a wasted
    /// prefetch and nothing else, since a prefetch never faults.
    @usableFromInline let _bucketsAddress = Atomic<UInt>(0)
    @usableFromInline let _bucketsMask = Atomic<Int>(0)
    /// `_KeyHash.processSeed`, copied (reading the global costs a call).
    @usableFromInline let _seed = _KeyHash.processSeed
    /// Public only as `_StateHost` requires it (see there); not API.
    public let _timekeeper: _Timekeeper
    /// Public only as `_StateHost` requires it (see there); not API.
    public let _insertionPolicy: ((Key, Value, Int) -> Bool)?
    /// The background sweep (``Expiration/sweepInterval``), cancelled when the cache goes.
    private var sweeper: Task<Void, Never>?
    /// The expiration triggers, cancelled when the cache goes.
    let _triggers = _Triggers()

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - countLimit: The most entries the cache holds; `0` (the default) means no limit.
    ///   - totalCostLimit: The most total cost the cache holds; `0` (the default) means no limit.
    ///   - policy: Which entry leaves first when a limit is reached. Defaults to
    ///     ``EvictionPolicy/default`` (W-TinyLFU), the smallest mean gap to OPT over CacheKit's
    ///     reference traces.
    ///   - expiration: When entries expire (time to live, time to idle, refresh). Defaults to
    ///     ``Expiration/never``; a write can still give its entry an `expiresAfter`.
    ///   - clock: The clock expiry is measured on. Tests pass a ``ManualClock``. The default
    ///     `ContinuousClock` is read on Linux from a reading that a background thread publishes
    ///     every millisecond (so an entry's life may be up to about 1 ms off its duration), and
    ///     it does not advance while the machine is suspended. Any other clock is read exactly.
    ///   - insertionPolicy: Asked before each value is stored, with its key, value and cost; a
    ///     value it refuses is not stored (see ``WriteResult/Rejection/insertionPolicy``). Runs
    ///     outside the lock. `nil` (the default) stores everything.
    /// - Precondition: `countLimit` and `totalCostLimit` are not negative; every duration in
    ///   `expiration` is positive. A violation traps with a message naming the parameter.
    public init(
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        expiration: Expiration = .never,
        clock: some Clock<Duration> = ContinuousClock(),
        insertionPolicy: (@Sendable (_ key: Key, _ value: Value, _ cost: Int) -> Bool)? = nil
    ) {
        state = _CacheState.allocate(countLimit, totalCostLimit, policy, expiration)
        _timekeeper = _Timekeeper(clock, active: expiration.isActive)
        _insertionPolicy = insertionPolicy
        _publishBuckets()
        if let interval = expiration.sweepInterval { sweeper = _startSweeping(every: interval) }
    }

    deinit {
        sweeper?.cancel()
        _triggers.cancelAll()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Removes expired entries every `interval` of the cache's clock, until the cache goes.
    private func _startSweeping(every interval: Duration) -> Task<Void, Never> {
        // Held weakly and type-erased: the task must neither keep the cache alive nor capture
        // its generic parameters, which need not be Sendable.
        let cache = _WeakBox<AnyObject>(self)
        return _Timekeeper.repeating(every: interval, sleep: _timekeeper.sleep) {
            guard let strong = cache.object as? any _Sweepable else { return false }
            strong.removeExpired()
            return true
        }
    }

    /// Decides which values are stored: asked with the key, value and cost before each write
    /// (including loads). Set when the cache is created, and fixed then (ClearCache lets you
    /// assign it later): a write reads it before taking the lock, so it needs no synchronization
    /// of its own. For a rule that changes, have the closure consult state you change.
    public var insertionPolicy: (@Sendable (_ key: Key, _ value: Value, _ cost: Int) -> Bool)? {
        unsafeBitCast(_insertionPolicy, to: (@Sendable (Key, Value, Int) -> Bool)?.self)
    }

    /// Called with every entry that leaves the cache and why, after the lock is released, on the
    /// thread that caused the removal. It may call back into this cache.
    public var removalHandler: (@Sendable (CacheRemoval<Key, Value>) -> Void)? {
        // Only `@Sendable` closures are ever stored through this API, so the cast restores the type.
        get {
            unsafeBitCast(
                _withState { $0.userRemovalHandler },
                to: (@Sendable (CacheRemoval<Key, Value>) -> Void)?.self
            )
        }
        set { _ = _exchangeRemovalHandler(newValue) }
    }

    /// Hears every hit, miss, write, removal and load (see ``CacheActivity``), after the lock is
    /// released, on the thread that caused it; it may call back into this cache. For logging and
    /// metrics: `CacheKitObservability` installs one. `nil` (the default) costs one branch per
    /// operation.
    public var activityObserver: (@Sendable (CacheActivity<Key>) -> Void)? {
        get {
            unsafeBitCast(_withState { $0.activityObserver }, to: (@Sendable (CacheActivity<Key>) -> Void)?.self)
        }
        set { _ = _exchangeActivityObserver(newValue) }
    }

    /// Asked before each eviction (for count, cost or memory pressure, never for explicit removals);
    /// return `false` to keep the entry. Runs outside the lock and may call back into the cache.
    ///
    /// An entry that changes while the veto is being asked is not evicted on that answer.
    public var evictionVeto: (@Sendable (Key, Value, RemovalReason) -> Bool)? {
        get { unsafeBitCast(_withState { $0.evictionVeto }, to: (@Sendable (Key, Value, RemovalReason) -> Bool)?.self) }
        set { _ = _exchangeEvictionVeto(newValue) }
    }

    /// Checks the engine's internal consistency, trapping on the first disagreement (for the
    /// package's tests; not API).
    package func _checkInvariants() { _withState { $0.core._checkInvariants() } }
}

extension Cache: _StateHost {
    // A `_Mutex` hands out its value as `inout sending` and wants a `sending` result, which
    // region checking cannot prove for a generic, possibly non-Sendable `Value` copied out of the
    // state. The state therefore lives beside a bare `_Lock`, and this is the one place that
    // locks it, scoped exactly like `withLock`.
    /// See `_StateHost`: public only for the inlinable operations both caches share.
    @inlinable
    public func _withState<R: ~Copyable>(_ body: (inout _CacheState<Key, Value>) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        let result = try body(&state.pointee)
        _publishBuckets()
        return result
    }

    /// Copies the index's address and mask out for `_prefetchIndex` if they changed (the index
    /// grew or was replaced). Under the lock.
    @inlinable
    @inline(__always)
    func _publishBuckets() {
        let address = UInt(bitPattern: state.pointee.core.index.buckets)
        guard _bucketsAddress.load(ordering: .relaxed) != address else { return }
        _bucketsAddress.store(address, ordering: .relaxed)
        _bucketsMask.store(state.pointee.core.index.mask, ordering: .relaxed)
    }

    /// Prefetches `key`'s index bucket, so that loading it overlaps with taking the lock, which
    /// waits for the memory operations before it. Only for keys CacheKit hashes itself: hashing
    /// costs a few instructions there, but a whole `Hasher` run for other keys. Public only as
    /// `_StateHost` requires it; not API.
    @inlinable
    @inline(__always)
    public func _prefetchIndex(for key: Key) -> Int? {
        guard _KeyHash.hashesItself(Key.self) else { return nil }
        let hash = _KeyHash.hash(key, seed: _seed)
        let bucket = hash & _bucketsMask.load(ordering: .relaxed)
        let address = _bucketsAddress.load(ordering: .relaxed) &+ UInt(bitPattern: bucket) &* 4
        _cachekit_prefetch(UnsafeRawPointer(bitPattern: address))
        return hash
    }
}
