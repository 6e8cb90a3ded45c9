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
/// Every operation starts on one lock, which costs a cache used by one thread least. When
/// threads keep contending for it (64 contended turns within 10 milliseconds), the cache moves,
/// for good, to parallel reads: ``value(forKey:)``, the subscript's getter, ``peekValue(forKey:)``
/// and ``contains(_:)`` then hold a reader-writer lock shared, in one of several stripes on
/// separate cache lines, each thread in turn taking the next stripe, so that readers on
/// different cores seldom write the same memory. The policy cannot hear of a read while others
/// read: the read leaves its slot in its stripe's buffer, and the next write, or a reader whose
/// stripe holds 16 reads, tells the policy (see <doc:SharingACache> for the same design in
/// ``SharedCache``).
/// Writes take turns: each holds the lock exclusively, after the writers' own lock, which keeps
/// its throughput when more threads contend for it than there are cores, and first replays the
/// buffered reads (at most 64 per stripe). A critical section is O(1) besides that replay
/// (enumeration and bulk removals O(n) and O(k)). A cache with a time to idle
/// (``Expiration/afterAccess``) never moves: each of its reads moves a deadline.
///
/// What holds on both paths:
/// - A read sees every write that returned before it began, and never half of one.
/// - Limits hold when a write returns; evictions happen only in writes.
/// - Statistics count every request (readers count theirs in their stripe).
/// - An expired entry is never returned: a read that finds anything expired (its own entry or
///   another) takes the exclusive path, which removes and reports what expired.
/// - Eviction order: on one thread the policy hears every read, in order, before the next write
///   or enumeration. Under contention reads can reach the policy late, out of order between
///   threads, or not at all (as Caffeine drops reads): when a buffer is full and another
///   thread is replaying, when two threads of one stripe record at the same instant, or when
///   the entry changed before the replay. Replaying traces on four threads, that costs no
///   policy's hit ratio anything in the median (see "On several threads" in <doc:Performance>).
///
/// The move costs a buffer of 640 bytes per stripe (twice the processors, 4 to 64 stripes) and
/// 4 bytes per slot for entries' versions. A reader that finds writers holding the lock for
/// long joins them on the writers' lock rather than spin. `Cache` is `Sendable` exactly when
/// `Key` and `Value` are.
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
    // Stored properties are laid out in declaration order (by today's compiler): first what
    // every read loads and nothing changes, then, 128 bytes further on, what writers and
    // replays change, so that they do not take the line every reader needs.

    /// Readers hold it shared, one stripe each; writers exclusively, after `writers`. Its
    /// stripes are made when reads become shared (`_noteContention`).
    @usableFromInline let readers = _StripedLock(stripes: _StripedLock.stripesForThisMachine, allocated: false)
    @usableFromInline let state: UnsafeMutablePointer<_CacheState<Key, Value>>
    /// Reads take the exclusive path (a time to idle is set: every read moves a deadline).
    @usableFromInline let _exclusiveReads: Bool
    /// The policy orders entries by reads (every policy but FIFO): reads are buffered for it.
    @usableFromInline let _policyHearsReads: Bool
    /// Whether reads take the shared lock: set, once and for good, by a writer that finds
    /// threads contending (see `_contentions`). Until then every operation takes `writers`
    /// alone, as a lock with one user costs least that way.
    @usableFromInline let _readsShared = Atomic<Bool>(false)
    /// Whether readers count their hits and misses (the engine's flag, copied for readers).
    /// Changed only by `isRecordingStatistics`, so it sits with what readers load.
    @usableFromInline let _recordsStatistics = Atomic<Bool>(true)
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
    let _triggers = Triggers()

    /// Keeps the properties below off the cache lines of those above.
    private let _padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
    /// Writers take turns on it, then hold `readers` exclusively: a writer that waits sleeps.
    @usableFromInline let writers = _Lock()
    /// Held by a reader replaying the buffered reads (readers go on); see `_replayBufferedReadsIfFree`.
    @usableFromInline let _policyLock = Atomic<Bool>(false)
    /// What warming the replayed slots read, kept so that the loads are not optimized away.
    @usableFromInline let _warmed = Atomic<Int>(0)
    /// How many times a thread found `writers` held since `_contentionWindow` began; both
    /// guarded by `writers`.
    @usableFromInline var _contentions = 0
    @usableFromInline var _contentionWindow: ContinuousClock.Instant?
    /// The slot storage's epoch when the current writer's turn began (shared reads); guarded by
    /// `writers`.
    @usableFromInline var _turnEpoch: UInt32 = 0

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
        _exclusiveReads = expiration.afterAccess != nil
        _policyHearsReads = policy.kind != .fifo
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
        let cache = WeakBox<AnyObject>(self)
        return _Timekeeper.repeating(every: interval, sleep: _timekeeper.sleep) {
            guard let strong = cache.object as? any Sweepable else { return false }
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
    // state. The state therefore lives beside bare locks, and this is the one place that locks
    // it exclusively, scoped exactly like `withLock`.
    /// See `_StateHost`: public only for the inlinable operations both caches share. Holds the
    /// lock exclusively and tells the policy about the buffered reads first, so that `body`
    /// sees the eviction order every read so far made.
    @inlinable
    @inline(__always)
    public func _withState<R: ~Copyable>(_ body: (inout _CacheState<Key, Value>) throws -> R) rethrows -> R {
        let turn = _beginWriting()
        do {
            let result = try body(&state.pointee)
            _endWriting(turn)
            return result
        } catch {
            _endWriting(turn)
            throw error
        }
    }

    /// What `_beginWriting` found, for `_endWriting`: one byte, so that the common turn keeps
    /// it in a register.
    @frozen
    @usableFromInline
    enum _WritingTurn {
        /// One thread's turn: reads are not shared and no thread held `writers`.
        case plain
        /// Another thread held `writers` when this one came (reads not shared).
        case contended
        /// Reads are shared: readers were held off.
        case readersHeldOff
    }

    /// Takes `writers`; when reads are shared, also holds readers off and tells the policy of
    /// their buffered reads. (The check and the rest are apart so that the common turn, one
    /// thread and reads not shared, stays small enough to inline into every operation.)
    @inlinable
    @inline(__always)
    func _beginWriting() -> _WritingTurn {
        let contended = writers.lockNotingContention()
        // Stable while `writers` is held: only a holder of it changes it.
        guard contended || _readsShared.load(ordering: .relaxed) else { return .plain }
        return _beginSharedWriting(contended: contended)
    }

    @inlinable
    @inline(never)
    func _beginSharedWriting(contended: Bool) -> _WritingTurn {
        guard _readsShared.load(ordering: .relaxed) else { return .contended }
        readers.lockExclusiveAlone()
        if _policyHearsReads && readers.hasBufferedReads { _replayBufferedReads() }
        _turnEpoch = state.pointee.core.epoch
        return .readersHeldOff
    }

    /// Ends what `_beginWriting` began: publishes the index, lets readers in, releases `writers`.
    @inlinable
    @inline(__always)
    func _endWriting(_ turn: _WritingTurn) {
        if case .plain = turn {
            _publishBuckets()
        } else {
            _endSharedWriting(turn)
        }
        writers.unlock()
    }

    @inlinable
    @inline(never)
    func _endSharedWriting(_ turn: _WritingTurn) {
        _publishBuckets()
        switch turn {
        case .readersHeldOff:
            // Fresh slot storage (`removeAll`) restarts the versions: a read left behind in a
            // buffer (see `_StripedLock.replayReads`) must not reach the new entries.
            if state.pointee.core.epoch != _turnEpoch { readers.discardReads() }
            readers.unlockExclusive()
        case .contended:
            _noteContention()
        case .plain:
            break
        }
    }

    /// Tells the policy about the reads the stripes buffered: out of line, as most writes find
    /// none. Under the exclusive lock, or a reader's policy lock.
    @inlinable
    @inline(never)
    func _replayBufferedReads() {
        let warmed = readers.replayReads(into: state)
        if warmed != 0 { _warmed.store(warmed, ordering: .relaxed) }
    }

    /// Counts a contended acquisition of `writers` (held), and after `contentionsBeforeSharing`
    /// of them within `contentionWindow` lets reads take the shared lock from now on (never for
    /// a cache whose reads must stay exclusive). The switch is the last thing the holder does
    /// before releasing `writers`: a reader that sees it (acquiring) sees the stripes and the
    /// state complete, and every later writer, holding `writers`, holds readers off first.
    @inlinable
    @inline(never)
    func _noteContention() {
        guard !_exclusiveReads else { return }
        let now = ContinuousClock.now
        if let start = _contentionWindow, now - start <= Self.contentionWindow {
            _contentions += 1
        } else {
            _contentionWindow = now
            _contentions = 1
        }
        guard _contentions >= Self.contentionsBeforeSharing else { return }
        _startSharingReads()
    }

    /// Makes the stripes and the entries' versions, then lets reads take the shared lock.
    /// Holding `writers`.
    @usableFromInline
    func _startSharingReads() {
        readers.allocate()
        // Versions identify an entry across the lock's release: buffered reads carry them.
        state.pointee.core.trackGenerations()
        _readsShared.store(true, ordering: .releasing)
    }

    /// How many contended turns, and within how long, make a cache share its reads: a second
    /// thread that touches a cache now and then leaves it on the cheaper path; threads that
    /// keep contending get parallel reads within microseconds.
    @usableFromInline static var contentionsBeforeSharing: Int { 64 }
    @usableFromInline static var contentionWindow: Duration { .milliseconds(10) }

    /// Whether reads take the shared lock (for the package's tests).
    package var _readsAreShared: Bool { _readsShared.load(ordering: .acquiring) }

    /// Lets reads take the shared lock now (for the package's tests and benchmarks, which
    /// exercise the shared path without first contending).
    package func _shareReads() {
        writers.lock()
        if !_readsShared.load(ordering: .relaxed) && !_exclusiveReads { _startSharingReads() }
        writers.unlock()
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

// `Cache` guards its state with its locks and runs handlers outside them; its handlers are
// `@Sendable`. It is safe to share exactly when what it stores is.
extension Cache: @unchecked Sendable where Key: Sendable, Value: Sendable {}

/// What a cache's background sweep calls: erasing `Cache`'s generic parameters keeps the sweep's
/// task free of its (possibly non-`Sendable`) key and value types.
protocol Sweepable: AnyObject {
    func removeExpired()
}

extension Cache: Sweepable {}
