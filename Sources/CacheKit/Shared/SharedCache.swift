// Shared/: SharedCache, its write queue, drain and change log, over the striped lock. Asks
// the engine for every rule of storing, expiring and evicting; Caches/ never depends on it.

import Dispatch
import Synchronization

/// A thread-safe cache with reader-writer semantics (the YMCache role): reads run synchronously
/// and concurrently, writes are asynchronous, and a read always sees every write issued before it.
///
/// ```swift
/// let cache = SharedCache<String, Story>(name: "stories")
/// cache["top"] = story                       // returns at once; applied later
/// let top = cache["top"]                     // sees the write above
/// cache.addEntries(from: ["a": a, "b": b])   // one operation: no reader sees half of it
/// let all = cache.allItems()
/// cache.removeAll()
/// ```
///
/// ## Parallel access (YMCache's rules)
/// 1. Reads run on the calling thread, concurrently with other reads: readers hold a striped
///    lock whose stripes live on separate cache lines, so two threads reading do not contend.
/// 2. Writes are asynchronous: a write is queued and the call returns; a drain applies queued
///    writes in the order they were issued. The drain runs in the background, half a
///    millisecond after a write, or on the thread of a writer that finds 128 writes queued,
///    which applies them before it queues its own (so a write's call occasionally takes as
///    long as applying 128 writes, and never waits for a drain another thread is running).
/// 3. A read that starts after a write was issued sees it. The applied state and the queue
///    together are the cache's contents, and no write moves from one to the other while a reader
///    holds the lock. A read of one key (``value(forKey:)``, ``peekValue(forKey:)``,
///    ``contains(_:)``) that finds a queued write to its key answers from the latest one (a
///    counting filter of key hashes says when to look, and an index of the queue by key finds
///    it), without applying the queue; only a queued bulk operation or limit change (which may
///    touch every key, or decide whether a queued write is stored) makes it apply the queue
///    first. Any other read applies any queued write first. So a thread reads its own writes,
///    and a reader that saw write *N* never later sees a state before *N*. What a queued write
///    evicts leaves when the write is applied: until then a read may still find the entry (one
///    the cache holds, or one an earlier queued write stores), as if that read had come just
///    before the write.
/// Bulk operations (`addEntries(from:)`, ``removeValues(forKeys:)``, ``removeAll()``,
/// ``values(forKeys:)``, ``allItems()``) are single operations: no reader sees half of one.
/// ``flush()`` applies every queued write before it returns.
///
/// ## Limits and policies
/// Unbounded by default (YMCache's behaviour). With a `countLimit` or `totalCostLimit` it evicts
/// by any ``EvictionPolicy``. (FIFO ignores reads, so a FIFO cache's readers record nothing.)
/// Readers cannot reorder the policy's lists while they share the lock,
/// so each stripe buffers the slots its readers used (up to 64), and the next drain replays them
/// before it applies writes, as Caffeine does. A reader whose stripe holds 16 reads replays the
/// buffers itself under a policy lock of its own while other readers go on (a replay relinks
/// only the lists, which readers never read); while a replay runs, readers keep recording until
/// their buffer is full, and a read that finds it full goes unrecorded. So recency is
/// approximate: under contention some reads are dropped, and a read may reach the policy before
/// a write to another key issued just before it. A read answered by a queued write of its key is
/// queued behind that write, so the policy hears of it in order (repeated reads of the key with
/// nothing queued between them count once). Eviction happens only in writes, and every write
/// first replays the buffered reads.
///
/// ## Expiration
/// ``Expiration/afterWrite`` and per-entry `expiresAfter` cost readers nothing extra: an expired
/// entry is never returned, counted or listed, and drains remove it. A time to idle
/// (``Expiration/afterAccess``) makes every read of one key (``value(forKey:)`` and the
/// subscript) move its deadline, so a cache with one takes its lock exclusively for those reads
/// (as ``Cache`` does). Peeks, `contains`, and the
/// bulk reads ``values(forKeys:)`` and ``allItems()`` count as no access and move no deadline.
///
/// ## Events
/// The removal handler hears every removal with its reason (``RemovalReason/purged`` for the
/// eviction decider). Handlers run after the lock is released, in the order the removals
/// happened, on whichever thread applied the write (a background thread, a writer that found
/// many writes queued, or a reader that applied queued writes); a handler may use the cache.
/// So a write or a read may run the handler before it returns: do not write to the cache while
/// holding a lock that the handler takes. Change batches: see ``notificationInterval``.
///
/// - Note: `SharedCache` has no eviction veto and no loader; ``Cache`` has both.
public final class SharedCache<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    // Stored properties are laid out in declaration order (by today's compiler; the language does
    // not promise it, and another order would cost speed, not correctness): first what every
    // read loads and no read or write changes, then, 128 bytes further on, the atomics that
    // writes and replays change, so that a write on one core does not take the line every read
    // needs from the other cores.

    // The state lives behind `_lock`: shared for reads (read-only access), exclusive for drains.
    @usableFromInline let _state: UnsafeMutablePointer<_CacheState<Key, Value>>
    @usableFromInline let _lock = _StripedLock()
    /// The keys the queued writes may touch: a point read of another key need not drain.
    @usableFromInline let _pendingKeys: _PendingFilter
    /// `_KeyHash.processSeed`, copied for the hashes a read or write takes before any lock.
    @usableFromInline let _hashSeed = _KeyHash.processSeed
    @usableFromInline let _timekeeper: _Timekeeper
    /// Reads must take the lock exclusively (a time to idle is set).
    @usableFromInline let _exclusiveReads: Bool
    /// Reads are buffered for the policy (a limit is set, and the policy orders by reads).
    @usableFromInline let _tracksReads = Atomic<Bool>(false)
    /// The policy orders entries by reads (every policy but FIFO, whose order is insertion's).
    let _policyHearsReads: Bool
    @usableFromInline let _recordsStatistics = Atomic<Bool>(true)
    /// Whether a writer that finds `_writerDrainThreshold` writes queued applies them: always,
    /// but in the package's tests that hold writes in the queue (`_applyWritesOnlyWhenAsked()`).
    /// Read only by a writer that crossed the threshold, never on a write's common path.
    @usableFromInline let _writersDrain = Atomic<Bool>(true)

    /// Keeps the atomics below off the cache lines of the properties above.
    private let _padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
    /// Writes issued and not yet applied; reads that are not of one key check it to decide
    /// whether to drain first (a read of one key asks `_pendingKeys`). It also counts the
    /// `.access` records that reads answered from the queue leave behind (added under the
    /// queue's lock with the record, subtracted with the writes a drain takes), so a read of
    /// several keys may drain only such records: wasted work, never a wrong answer.
    @usableFromInline let _pendingCount = Atomic<Int>(0)
    /// Held to replay buffered reads into the policy (alone: readers go on) and by every drain
    /// (inside the exclusive lock); see `_maintain()`.
    @usableFromInline let _policyLock = Atomic<Bool>(false)
    /// Counts the drains that applied writes: the background drain waits while it moves.
    @usableFromInline let _drainEpoch = Atomic<Int>(0)
    /// Where warming (`_CacheCore.warm`) leaves what it read, so that its loads are kept.
    @usableFromInline let _warmed = Atomic<Int>(0)

    @usableFromInline let pending = _Locked(_PendingWrites<Key, Value>())
    @usableFromInline let outbox = _Locked(_Outbox<Key, Value>())
    /// Guarded by `_lock` (exclusive): the changes since the last batch, while batches are on.
    /// Unchecked by the runtime's exclusivity enforcement, which would cost every write of a
    /// drain two calls: the exclusive lock is what makes access to it exclusive.
    @exclusivity(unchecked) @usableFromInline var changeLog: _ChangeLog<Key, Value>?
    @usableFromInline let drainQueue: DispatchQueue
    let background = _Locked(BackgroundTasks())
    let subscribers = _Locked(Subscribers<Key, Value>())
    /// Memory-pressure subscriptions, cancelled when the cache goes.
    let _triggers = Triggers()

    /// The name given at creation (YMCache names its caches); used in notifications and logs.
    public let name: String

    /// Decides which entries ``purgeEvictableItems(context:)`` removes: called with each entry's
    /// key and value and the context passed to the purge; `true` removes the entry.
    public typealias EvictionDecider = @Sendable (_ key: Key, _ value: Value, _ context: (any Sendable)?) -> Bool

    /// The decider given at creation, or `nil`.
    public let evictionDecider: EvictionDecider?

    let clockSleep: @Sendable (Duration) async throws -> Void

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - name: A name for the cache (in notifications and logs).
    ///   - countLimit: The most entries the cache holds; `0` (the default) means no limit.
    ///   - totalCostLimit: The most total cost it holds; `0` (the default) means no limit.
    ///   - policy: Which entry leaves first when a limit is reached.
    ///   - expiration: When entries expire. ``Expiration/afterAccess`` makes reads exclusive.
    ///   - clock: The clock of expiry, ``evictionInterval`` and ``notificationInterval``.
    ///   - evictionDecider: Chooses the entries ``purgeEvictableItems(context:)`` removes.
    /// - Precondition: limits are not negative; every duration is positive.
    public init(
        name: String = "SharedCache",
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        expiration: Expiration = .never,
        clock: some Clock<Duration> = ContinuousClock(),
        evictionDecider: EvictionDecider? = nil
    ) {
        self.name = name
        _state = .allocate(capacity: 1)
        _state.initialize(
            to: _CacheState(
                countLimit: countLimit,
                totalCostLimit: totalCostLimit,
                policy: policy,
                expiration: expiration
            )
        )
        // Versions identify an entry across the lock's release: buffered reads and purges use them.
        _state.pointee.core.trackGenerations()
        _timekeeper = _Timekeeper(clock, active: expiration.isActive)
        _pendingKeys = _PendingFilter(capacity: countLimit)
        _exclusiveReads = expiration.afterAccess != nil
        _policyHearsReads = policy.kind != .fifo
        _tracksReads.store(_policyHearsReads && (countLimit > 0 || totalCostLimit > 0), ordering: .relaxed)
        self.evictionDecider = evictionDecider
        clockSleep = { try await clock.sleep(for: $0) }
        drainQueue = DispatchQueue(label: "CacheKit.SharedCache.\(name)")
        if let interval = expiration.sweepInterval {
            background.withLock { $0.sweep = self.repeating(every: interval) { $0.removeExpired() } }
        }
    }

    deinit {
        background.withLock { $0.cancelAll() }
        _triggers.cancelAll()
        deliverFinalChanges()
        subscribers.withLock { $0.finishAll() }
        _state.deinitialize(count: 1)
        _state.deallocate()
    }

    // MARK: Reading

    /// The value for `key`, or `nil`; assigning queues a write (`nil` removes the entry).
    ///
    /// - Complexity: O(1).
    @inlinable
    public subscript(key: Key) -> Value? {
        get { value(forKey: key) }
        set {
            if let newValue { setValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// The value for `key`, or `nil`. Runs on the calling thread, concurrently with other reads,
    /// after every write issued before it.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func value(forKey key: Key) -> Value? {
        if _exclusiveReads { return _exclusive { state, now in state.core.value(forKey: key, now: now) } }
        let (value, wantsReplay) = _reading(key: key, recordingRead: true) {
            state,
            stripe,
            now,
            hash,
            queued -> ((Value?, Bool), _StripedLock.Tally) in
            let counts = _recordsStatistics.load(ordering: .relaxed)
            if let queued {
                // Written and not yet applied: the policy hears of the read right after the write
                // lands (see `_latestQueuedWrite`).
                let value = _value(of: queued, in: state, now: now)
                return ((value, false), !counts ? .none : value == nil ? .miss : .hit)
            }
            let slot = state.pointee.core.slot(of: key, hash: hash)
            guard slot >= 0, !state.pointee.core._isExpired(slot, now: now) else {
                return ((nil, false), counts ? .miss : .none)
            }
            let replay =
                _tracksReads.load(ordering: .relaxed)
                && !stripe.record(slot, generation: state.pointee.core.generations.unsafelyUnwrapped[Int(slot)])
            return ((state.pointee.core.entries[Int(slot)].value, replay), counts ? .hit : .none)
        }
        // A buffer at the threshold: replay it now if the lock is free (else a later reader or
        // the next writer does).
        if wantsReplay { _maintain() }
        return value
    }

    /// The value for `key` without counting a request or telling the policy.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func peekValue(forKey key: Key) -> Value? {
        _reading(key: key) { state, _, now, hash, queued -> (Value?, _StripedLock.Tally) in
            if let queued { return (_value(of: queued, in: state, now: now), .none) }
            let slot = state.pointee.core.slot(of: key, hash: hash)
            let found = slot >= 0 && !state.pointee.core._isExpired(slot, now: now)
            return (found ? state.pointee.core.entries[Int(slot)].value : nil, .none)
        }
    }

    /// Whether the cache holds a value for `key`.
    ///
    /// - Complexity: O(1).
    @inlinable
    public func contains(_ key: Key) -> Bool {
        _reading(key: key) { state, _, now, hash, queued -> (Bool, _StripedLock.Tally) in
            if let queued { return (_value(of: queued, in: state, now: now) != nil, .none) }
            let slot = state.pointee.core.slot(of: key, hash: hash)
            return (slot >= 0 && !state.pointee.core._isExpired(slot, now: now), .none)
        }
    }

    /// The values for those of `keys` the cache holds, read in one operation (no write lands
    /// between two of them). Not counted as requests.
    ///
    /// - Complexity: O(*k*) for *k* keys.
    public func values<S: Sequence>(forKeys keys: S) -> [Key: Value] where S.Element == Key {
        // Collected first: iterating the caller's sequence (a lazy one may run any code, this
        // cache's methods included) must not happen under the lock.
        let keys = Array(keys)
        return _reading { state, now in
            var result: [Key: Value] = [:]
            for key in keys {
                let slot = state.core.slot(of: key)
                if slot >= 0 && !state.core._isExpired(slot, now: now) {
                    result[key] = state.core.entries[Int(slot)].value
                }
            }
            return result
        }
    }

    /// Every entry, read in one operation, as a dictionary (YMCache's `allItems`; ``entries``
    /// gives them in eviction order, as ``Cache/entries`` does).
    ///
    /// - Complexity: O(*n*).
    public func allItems() -> [Key: Value] {
        _readingInEvictionOrder { state, now in
            var result: [Key: Value] = Dictionary(minimumCapacity: state.core.count)
            state.core.forEachSlotInEvictionOrder { slot in
                if !state.core._isExpired(slot, now: now) {
                    result[state.core.entries[Int(slot)].key] = state.core.entries[Int(slot)].value
                }
                return true
            }
            return result
        }
    }

    /// The entries in eviction order, next victim first. Takes the lock exclusively, so that the
    /// reads the stripes buffered are in the order first.
    ///
    /// - Complexity: O(*n*).
    public var entries: [(key: Key, value: Value)] {
        _exclusive { state, _ in
            var result: [(key: Key, value: Value)] = []
            result.reserveCapacity(state.core.count)
            state.core.forEachSlotInEvictionOrder { slot in
                result.append((state.core.entries[Int(slot)].key, state.core.entries[Int(slot)].value))
                return true
            }
            return result
        }
    }

    /// The number of entries (expired ones are removed first).
    ///
    /// - Complexity: O(*w* + *r*) to apply the *w* queued writes and replay the *r* buffered
    ///   reads first (under the exclusive lock), counting a queued write of one key as O(1) (a
    ///   bulk write costs what it touches, a limit change what it evicts), plus the removal of
    ///   expired entries (O(1) each, O(log *n*) for one written with its own `expiresAfter`).
    public var count: Int { _exclusive { state, _ in state.core.count } }

    /// The total cost of the entries.
    ///
    /// - Complexity: the same as ``count``.
    public var totalCost: Int { _exclusive { state, _ in state.core.totalCost } }

    /// The most entries the cache holds (`0`: no limit). Setting it queues a write that evicts
    /// down to the new limit.
    ///
    /// - Complexity: Reading applies any queued writes first, as ``count`` does, else O(1).
    ///   Setting queues a write in O(1) amortized; the drain that applies it evicts in O(*k*) for
    ///   the *k* entries it removes.
    public var countLimit: Int {
        get { _reading { state, _ in state.core.countLimit } }
        set {
            precondition(newValue >= 0, "countLimit must not be negative (got \(newValue))")
            _enqueue(.setCountLimit(newValue))
        }
    }

    /// The most total cost the cache holds (`0`: no limit). Setting it queues a write.
    ///
    /// - Complexity: as ``countLimit``.
    public var totalCostLimit: Int {
        get { _reading { state, _ in state.core.totalCostLimit } }
        set {
            precondition(newValue >= 0, "totalCostLimit must not be negative (got \(newValue))")
            _enqueue(.setTotalCostLimit(newValue))
        }
    }

    // MARK: Events

    /// Hears every removal, after the lock is released, in order. See "Events" above.
    public var removalHandler: (@Sendable (CacheRemoval<Key, Value>) -> Void)? {
        get { outbox.withLock { $0.handler } }
        set {
            // The old closure is released after the lock: its captures' deinits may call back.
            let old = outbox.withLock { outbox in
                defer { outbox.handler = newValue }
                return outbox.handler
            }
            _ = old
        }
    }

    // MARK: Statistics

    /// Requests, removals by reason. Loads are not counted (a shared cache has no loader).
    ///
    /// - Complexity: as ``count``: it takes the exclusive lock, so it first applies queued writes
    ///   and replays buffered reads.
    public var statistics: CacheStatistics {
        _exclusive { state, _ in _lock.statistics(adding: state.core.stats) }
    }

    /// Whether ``statistics`` are counted (`true` by default).
    public var isRecordingStatistics: Bool {
        get { _recordsStatistics.load(ordering: .relaxed) }
        set {
            _recordsStatistics.store(newValue, ordering: .relaxed)
            _exclusive { state, _ in state.core.stats.isRecording = newValue }
        }
    }

    /// Sets every count in ``statistics`` to zero.
    ///
    /// - Complexity: as ``count``.
    public func resetStatistics() {
        _exclusive { state, _ in _lock.resetStatistics(&state.core.stats) }
    }

    /// Leaves queued writes queued until a read, `flush()` or bulk operation applies them: no
    /// background drain and no writer drains. For the package's tests; call it before writing.
    package func _applyWritesOnlyWhenAsked() {
        _stopBackgroundDrains()
        _writersDrain.store(false, ordering: .relaxed)
    }

    /// Queues no background drain from now on: writes are applied by writers that find many
    /// queued, and by reads, `flush()` and bulk operations. For the package's tests; call it
    /// before writing.
    package func _stopBackgroundDrains() {
        pending.withLock { $0.drainScheduler.stop() }
    }

    /// Checks the engine's internal consistency, trapping on the first disagreement (for the
    /// package's tests; not API).
    package func _checkInvariants() { _exclusive { state, _ in state.core._checkInvariants() } }
}

extension _CacheCore {
    /// Whether `slot` has expired by `now`; read-only, for readers holding a shared lock.
    @inlinable
    func _isExpired(_ slot: Int32, now: Int64) -> Bool {
        guard let expiry else { return false }
        return expiry.pointee.isExpired(slot, now: now)
    }
}
