import Foundation
import Synchronization

/// A memory ``Cache`` in front of a ``CacheStore``, and a loader behind both: values survive
/// restarts and can outgrow memory, while hits stay memory hits.
///
/// ```swift
/// let store = try await DiskStore(directory: cachesURL, byteLimit: 500 << 20)
/// let articles = TieredCache<String, Article>(countLimit: 1_000, store: store, expiresAfter: .seconds(3_600))
/// let article = try await articles.value(forKey: id) { id in try await api.article(id) }
/// ```
///
/// ## Reads
/// A read looks in memory, then in the store (a value found there is promoted to memory with what
/// is left of its lifetime), then runs the loader, whose value goes to both levels. One load per
/// key at a time across all three: callers that miss while a key is being read from the store or
/// loaded wait for that read (the memory cache's single flight, ``Cache/value(forKey:cost:expiresAfter:loader:)``).
/// A read without a loader, when no load of its key runs, first reads the store alone: a miss
/// there is answered at once, without the single flight; a hit is read again inside it, so that
/// what memory keeps comes from a read the single flight guards.
/// A store that fails or holds bytes the codec cannot read is a miss, reported to the problem
/// handler and counted in ``TieredCacheStatistics/storeErrorCount``: a second level that fails
/// never fails a read.
///
/// ## Writes
/// With ``WriteMode/writeThrough`` (the default) a write returns once both levels hold the value.
/// With ``WriteMode/writeBehind(maximumPending:)`` it returns once memory holds it, and the store
/// is written in the background; reads see pending writes at once (a pending value is found even
/// after memory evicted it), at most `maximumPending` writes wait (a write beyond that writes
/// through), and ``flush()`` and ``close()`` wait for them all.
///
/// The writes and removals of one key reach both levels in one order, so after they finish the
/// levels agree. A write or removal that reaches a key while its load runs wins: the load's value
/// is returned to its callers but stored in neither level. A write whose store write fails leaves
/// the key in neither level (write-through throws the error; write-behind reports it).
///
/// ## Lifetimes
/// One deadline per entry for both levels, on one clock: a write's lifetime (its `expiresAfter`,
/// else the cache's ``expiresAfter``) becomes a date on ``clock`` for the store and the same
/// duration on the memory cache's clock (the ``ManualClock`` of ``WallClock/manual(_:origin:)``,
/// else `ContinuousClock`). A promoted value keeps its store deadline.
///
/// ## Over a shared store
/// Over an ``InvalidatingCacheStore`` (a store that several processes share, such as
/// `RedisStore`), the memory level follows the store's invalidations: an entry another process
/// changes leaves memory when its invalidation arrives, and while invalidations may be lost
/// (``isMemoryBypassed``) memory is emptied and bypassed. A process's own writes are visible to it
/// at once. See ``InvalidatingCacheStore`` for the rules.
///
/// ## Removals
/// ``removeValue(forKey:from:)``, ``removeAll(from:)`` and ``expireAll()`` act on both levels (or
/// on the ones you name). The memory cache's own removals (evictions, its expiry, memory pressure)
/// never remove the store's copy: memory holds the hot subset of what the store holds.
public final class TieredCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// When a write reaches the store.
    public enum WriteMode: Sendable, Hashable {
        /// A write returns once the store holds the value.
        case writeThrough
        /// A write returns once memory holds the value; the store is written in the background,
        /// with at most `maximumPending` writes waiting (a write beyond them writes through).
        case writeBehind(maximumPending: Int)
    }

    /// Which levels a removal acts on.
    public typealias Levels = TieredCacheLevels

    /// The memory level. Reading it directly sees only what memory holds; its removals do not
    /// reach the store.
    public let memory: Cache<Key, Value>
    /// The second level.
    public let store: any CacheStore
    /// The lifetime of entries written without an `expiresAfter` of their own; `nil` for none.
    /// A time to live only, where ``Cache`` takes an ``Expiration``: both levels keep one
    /// deadline per entry, fixed when it is written, and a store records no reads that could
    /// move it (no time to idle, no refresh).
    public let expiresAfter: Duration?
    /// When writes reach the store.
    public let writeMode: WriteMode
    /// The clock lifetimes are measured on.
    public let clock: WallClock
    let codec: StoreCodec<Value>
    @usableFromInline let keys: StoreKeyEncoding<Key>
    let cost: (@Sendable (Value) -> Int)?
    let problemHandler: (@Sendable (CacheStoreProblem) -> Void)?
    /// Serializes the writes and removals of each key across both levels.
    let keyLock = KeyedLock<Key>()
    @usableFromInline let state = _Mutex(_TierState<Key, Value>())
    let _triggers = Triggers()
    /// Over an ``InvalidatingCacheStore``: how far memory can be trusted, and the handler's token.
    let coherence: Coherence?
    let invalidationToken: CacheStoreInvalidationToken?

    /// Creates a tiered cache over `store`.
    ///
    /// - Parameters:
    ///   - countLimit: The most entries the memory level holds; `0` for no limit.
    ///   - totalCostLimit: The most total cost the memory level holds (costs come from `cost`);
    ///     `0` for no limit.
    ///   - policy: The memory level's eviction policy.
    ///   - store: The second level. The tiered cache does not own it alone: ``close()`` closes it.
    ///   - codec: Turns values into the store's bytes and back.
    ///   - keys: Turns keys into the store's keys, the same in every run.
    ///   - expiresAfter: The lifetime of entries written without one; `nil` for none.
    ///   - writeMode: When writes reach the store.
    ///   - clock: The clock lifetimes are measured on. Tests pass ``WallClock/manual(_:origin:)``.
    ///   - cost: Each value's cost in the memory level; `nil` for `0`.
    ///   - problemHandler: Hears what failed without failing a call: store reads that failed,
    ///     values the codec could not read, background writes that failed. Called with no lock
    ///     held.
    /// - Precondition: `countLimit` and `totalCostLimit` are not negative, `expiresAfter` is
    ///   positive, and a write-behind `maximumPending` is positive.
    public init(
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        store: any CacheStore,
        codec: StoreCodec<Value>,
        keys: StoreKeyEncoding<Key>,
        expiresAfter: Duration? = nil,
        writeMode: WriteMode = .writeThrough,
        clock: WallClock = .system,
        cost: (@Sendable (Value) -> Int)? = nil,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) {
        if let expiresAfter {
            precondition(expiresAfter > .zero, "expiresAfter must be positive (got \(expiresAfter))")
        }
        if case .writeBehind(let maximumPending) = writeMode {
            precondition(maximumPending > 0, "maximumPending must be positive (got \(maximumPending))")
        }
        if let manual = clock.manualClock {
            memory = Cache(countLimit: countLimit, totalCostLimit: totalCostLimit, policy: policy, clock: manual)
        } else {
            memory = Cache(countLimit: countLimit, totalCostLimit: totalCostLimit, policy: policy)
        }
        self.store = store
        self.codec = codec
        self.keys = keys
        self.expiresAfter = expiresAfter
        self.writeMode = writeMode
        self.clock = clock
        self.cost = cost
        self.problemHandler = problemHandler
        if let shared = store as? any InvalidatingCacheStore {
            let coherence = Coherence()
            let memory = self.memory
            let decode = keys.decode
            self.coherence = coherence
            invalidationToken = shared.addInvalidationHandler { event in
                coherence.apply(event, to: memory, decode: decode)
            }
        } else {
            coherence = nil
            invalidationToken = nil
        }
    }

    deinit {
        _triggers.cancelAll()
        if let invalidationToken, let shared = store as? any InvalidatingCacheStore {
            shared.removeInvalidationHandler(invalidationToken)
        }
    }

    /// What the two levels have counted: the memory cache's statistics and the store's reads
    /// and writes.
    public var statistics: TieredCacheStatistics {
        var counts = state.withLock { $0.counts }
        counts.invalidationCount = coherence?.invalidationCount ?? 0
        counts.suspensionCount = coherence?.suspensionCount ?? 0
        return TieredCacheStatistics(memory: memory.statistics, store: counts)
    }

    /// Reports `problem` to the handler (never with a lock held) and counts it.
    func report(_ problem: CacheStoreProblem) {
        state.withLock { $0.counts.errorCount += 1 }
        problemHandler?(problem)
    }

    /// The store's key for `key`, or `nil` after reporting why there is none.
    func storeKey(_ key: Key) -> String? {
        do {
            return try keys.encode(key)
        } catch {
            report(CacheStoreProblem(key: "\(key)", error: .invalidKey(key: "\(key)", reason: "\(error)")))
            return nil
        }
    }

    /// The date `lifetime` from now on ``clock``.
    func deadline(after lifetime: Duration?) -> Date? {
        lifetime.map { clock.now().addingTimeInterval($0.timeInterval) }
    }
}

extension TieredCache where Value: Codable, Key: LosslessStringConvertible {
    /// Creates a tiered cache whose values cross to the store as JSON (``StoreCodec/json``) and
    /// whose keys are their `description` (``StoreKeyEncoding/description``); see
    /// ``init(countLimit:totalCostLimit:policy:store:codec:keys:expiresAfter:writeMode:clock:cost:problemHandler:)``.
    public convenience init(
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        store: any CacheStore,
        expiresAfter: Duration? = nil,
        writeMode: WriteMode = .writeThrough,
        clock: WallClock = .system,
        cost: (@Sendable (Value) -> Int)? = nil,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) {
        self.init(
            countLimit: countLimit,
            totalCostLimit: totalCostLimit,
            policy: policy,
            store: store,
            codec: .json,
            keys: .description,
            expiresAfter: expiresAfter,
            writeMode: writeMode,
            clock: clock,
            cost: cost,
            problemHandler: problemHandler
        )
    }
}

extension TieredCache where Value: Codable, Key: Codable {
    /// Creates a tiered cache whose values and keys cross to the store as JSON (``StoreCodec/json``,
    /// ``StoreKeyEncoding/json``): any `Codable` key works, a struct's fields in sorted order so
    /// that equal keys give equal strings; see
    /// ``init(countLimit:totalCostLimit:policy:store:codec:keys:expiresAfter:writeMode:clock:cost:problemHandler:)``.
    public convenience init(
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        store: any CacheStore,
        expiresAfter: Duration? = nil,
        writeMode: WriteMode = .writeThrough,
        clock: WallClock = .system,
        cost: (@Sendable (Value) -> Int)? = nil,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) {
        self.init(
            countLimit: countLimit,
            totalCostLimit: totalCostLimit,
            policy: policy,
            store: store,
            codec: .json,
            keys: .json,
            expiresAfter: expiresAfter,
            writeMode: writeMode,
            clock: clock,
            cost: cost,
            problemHandler: problemHandler
        )
    }
}

extension TieredCache where Value: Codable, Key: Codable & LosslessStringConvertible {
    /// Creates a tiered cache whose values cross to the store as JSON (``StoreCodec/json``) and
    /// whose keys are their `description` (``StoreKeyEncoding/description``), for keys that are
    /// both `Codable` and `LosslessStringConvertible` (strings, integers); see
    /// ``init(countLimit:totalCostLimit:policy:store:codec:keys:expiresAfter:writeMode:clock:cost:problemHandler:)``.
    public convenience init(
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        store: any CacheStore,
        expiresAfter: Duration? = nil,
        writeMode: WriteMode = .writeThrough,
        clock: WallClock = .system,
        cost: (@Sendable (Value) -> Int)? = nil,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) {
        self.init(
            countLimit: countLimit,
            totalCostLimit: totalCostLimit,
            policy: policy,
            store: store,
            codec: .json,
            keys: .description,
            expiresAfter: expiresAfter,
            writeMode: writeMode,
            clock: clock,
            cost: cost,
            problemHandler: problemHandler
        )
    }
}

extension TieredCache where Value: Codable, Key == UUID {
    /// Creates a tiered cache whose values cross to the store as JSON (``StoreCodec/json``) and
    /// whose `UUID` keys are their `uuidString` (``StoreKeyEncoding/uuid``); see
    /// ``init(countLimit:totalCostLimit:policy:store:codec:keys:expiresAfter:writeMode:clock:cost:problemHandler:)``.
    public convenience init(
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default,
        store: any CacheStore,
        expiresAfter: Duration? = nil,
        writeMode: WriteMode = .writeThrough,
        clock: WallClock = .system,
        cost: (@Sendable (Value) -> Int)? = nil,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) {
        self.init(
            countLimit: countLimit,
            totalCostLimit: totalCostLimit,
            policy: policy,
            store: store,
            codec: .json,
            keys: .uuid,
            expiresAfter: expiresAfter,
            writeMode: writeMode,
            clock: clock,
            cost: cost,
            problemHandler: problemHandler
        )
    }
}

/// What a ``TieredCache`` has counted.
public struct TieredCacheStatistics: Hashable, Sendable {
    /// The memory level's statistics (its hits are the tiered cache's memory hits).
    public var memory: CacheStatistics
    /// Reads that found a value in the store (after missing memory).
    public var storeHitCount: Int
    /// Reads that found nothing in the store.
    public var storeMissCount: Int
    /// Values written to the store.
    public var storeWriteCount: Int
    /// Store operations that failed, and values the codec could not read.
    public var storeErrorCount: Int
    /// Entries an ``InvalidatingCacheStore`` said changed elsewhere (each was dropped from memory
    /// if it was there).
    public var invalidationCount: Int
    /// How many times an ``InvalidatingCacheStore`` suspended its invalidations (each time the
    /// memory level was emptied).
    public var suspensionCount: Int

    init(memory: CacheStatistics, store counts: _TierCounts) {
        self.memory = memory
        storeHitCount = counts.hitCount
        storeMissCount = counts.missCount
        storeWriteCount = counts.writeCount
        storeErrorCount = counts.errorCount
        invalidationCount = counts.invalidationCount
        suspensionCount = counts.suspensionCount
    }
}

/// The store's counters, kept under the tiered cache's state lock.
@usableFromInline
struct _TierCounts: Hashable, Sendable {
    var hitCount = 0
    @usableFromInline var missCount = 0
    var writeCount = 0
    var errorCount = 0
    var invalidationCount = 0
    var suspensionCount = 0
}

/// What a ``TieredCache`` tracks beside its two levels.
@usableFromInline
struct _TierState<Key: Hashable & Sendable, Value: Sendable>: ~Copyable {
    /// A write or removal not yet in the store; reads see it before the store.
    @usableFromInline
    enum Pending: Sendable {
        case write(Value, Data, expiresAt: Date?, generation: UInt64)
        case removal(generation: UInt64)

        var generation: UInt64 {
            switch self {
            case .write(_, _, _, let generation), .removal(let generation): generation
            }
        }
    }

    @usableFromInline var pending: [Key: Pending] = [:]
    /// Numbers writes and removals, so that a load can tell whether one reached its key.
    var generation: UInt64 = 0
    /// Loads running; while there are any, `lastWrite` remembers each written key's generation.
    var loadsInFlight = 0
    var lastWrite: [Key: UInt64] = [:]
    /// The generation of the last `removeAll` or `expireAll`.
    var lastRemoveAll: UInt64 = 0
    /// The background store writes of write-behind, by generation.
    var backgroundWrites: [UInt64: Task<Void, Never>] = [:]
    @usableFromInline var counts = _TierCounts()

    /// Numbers a write or removal of `key`.
    mutating func nextGeneration(for key: Key) -> UInt64 {
        generation &+= 1
        if loadsInFlight > 0 { lastWrite[key] = generation }
        return generation
    }
}

/// Which levels of a ``TieredCache`` a removal acts on.
public struct TieredCacheLevels: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    /// Creates a set of levels from its raw value.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The memory cache.
    public static let memory = TieredCacheLevels(rawValue: 1)
    /// The store.
    public static let store = TieredCacheLevels(rawValue: 2)
    /// Both levels.
    public static let all: TieredCacheLevels = [.memory, .store]
}
