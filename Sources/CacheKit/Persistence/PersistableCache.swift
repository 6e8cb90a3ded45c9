import Foundation

/// A cache that hands out its entries, with their costs and in eviction order, and takes them
/// back: what ``CachePersistence`` saves and loads, whatever the keys and values are.
///
/// ``Cache`` and ``SharedCache`` adopt it whatever their keys and values. ``CachePersistence``
/// also needs the cache, its keys and its values to be `Sendable`, and a ``CacheSerializer``
/// for them: JSON or a property list when they are `Codable` (see ``PersistableCache``), your
/// own closures otherwise (YMCache's "arbitrary model transformations"). (Swift does not let a
/// conditional conformance depend on `Sendable`, so the protocol cannot ask for it.)
public protocol SnapshotCache<Key, Value>: AnyObject {
    /// The type of the cache's keys.
    associatedtype Key: Hashable
    /// The type of the cache's values.
    associatedtype Value

    /// A snapshot of the live (unexpired) entries in eviction order, next victim first, with
    /// their costs and deadlines.
    func persistableEntries() -> [PersistedEntry<Key, Value>]

    /// Inserts `entries` in the given order, so the first becomes the next victim (for policies
    /// that order by insertion or recency). A key that already has an entry keeps its current
    /// value: what is in memory is newer than the file. CacheKit's caches skip an entry whose
    /// cost would take their total cost past `Int.max` (possible only without a cost limit,
    /// beside entries the cache already holds) rather than trap, and one whose
    /// ``PersistedEntry/expiresAt`` has passed.
    func restore(_ entries: [PersistedEntry<Key, Value>])
}

/// A ``SnapshotCache`` whose keys and values are `Codable`, so that ``CachePersistence`` can save
/// it as JSON (the default) or a property list without a serializer of your own. ``Cache`` and
/// ``SharedCache`` adopt it when their keys and values are `Codable`. A generic type of yours
/// that adopts it conditionally must declare ``SnapshotCache`` too, as Swift requires of
/// conditional conformances: `extension MyCache: SnapshotCache { … }` with the two methods,
/// and `extension MyCache: PersistableCache where Key: Codable, Value: Codable {}`.
///
/// ```swift
/// let cache = Cache<String, Int>(countLimit: 100, policy: .lru)
/// let persistence = CachePersistence(cache: cache, fileURL: url)
/// try persistence.load()
/// ```
public protocol PersistableCache<Key, Value>: SnapshotCache where Key: Codable, Value: Codable {}

/// One entry as it is saved: key, value, cost, and when it expires.
public struct PersistedEntry<Key: Hashable, Value> {
    /// The entry's key.
    public var key: Key
    /// The entry's value.
    public var value: Value
    /// The entry's cost (see ``Cache/setValue(_:forKey:cost:expiresAfter:)``).
    public var cost: Int
    /// When the entry expires, on the wall clock, or `nil` when it has no deadline.
    ///
    /// A snapshot (``SnapshotCache/persistableEntries()``) sets it to the wall-clock time of the
    /// snapshot plus what is left of the entry's life on its cache's clock (its time to live,
    /// its time to idle, or its own `expiresAfter`, whichever ends first). A restore
    /// (``SnapshotCache/restore(_:)``) gives the entry what is left until then, as an
    /// `expiresAfter` of its own, so the time between a save and a load counts, and leaves out
    /// an entry whose time has passed. An entry without it gets its cache's expiration,
    /// counted from the restore. (The wall clock can be set back or forward; an entry's life
    /// moves with it.)
    public var expiresAt: Date?

    /// Creates an entry.
    public init(key: Key, value: Value, cost: Int = 0, expiresAt: Date? = nil) {
        self.key = key
        self.value = value
        self.cost = cost
        self.expiresAt = expiresAt
    }
}

extension PersistedEntry: Sendable where Key: Sendable, Value: Sendable {}

extension PersistedEntry: Equatable where Value: Equatable {}

extension PersistedEntry: Codable where Key: Codable, Value: Codable {}

extension Cache: SnapshotCache {
    /// A snapshot of the live entries in eviction order, next victim first, with their costs.
    /// Expired entries are not part of it.
    ///
    /// - Complexity: O(*n*).
    public func persistableEntries() -> [PersistedEntry<Key, Value>] { _persistableEntries() }

    /// Writes `entries` in order, as `setValue(_:forKey:cost:)` would (limits, eviction policy,
    /// insertion policy and events all apply), except that a key already in the cache keeps its
    /// value. Restored entries get the cache's ``expiration`` counted from now.
    ///
    /// With ``EvictionPolicy/lru`` or ``EvictionPolicy/fifo`` this reproduces the saved eviction
    /// order; the other policies rebuild their own state (frequencies are not saved).
    ///
    /// - Complexity: O(*n*).
    public func restore(_ entries: [PersistedEntry<Key, Value>]) { _restore(entries) }
}

extension Cache: PersistableCache where Key: Codable, Value: Codable {}

extension SharedCache: SnapshotCache {
    /// A snapshot of the live entries in eviction order, next victim first, with their costs,
    /// read in one operation after every write issued before it (and with every read so far in
    /// the order). Expired entries are not part of it.
    ///
    /// - Complexity: O(*n*).
    public func persistableEntries() -> [PersistedEntry<Key, Value>] {
        let wallNow = Date()
        // Exclusive: the buffered reads are replayed first, so the order is exact.
        return _exclusive { state, now in state.core.persistableEntries(now: now, wallNow: wallNow) }
    }

    /// Queues the writes of `entries`, in order, as one operation; a key that already has an
    /// entry when it is applied keeps its value (what is in memory is newer than the file).
    /// Each restored entry gets what is left of its life (``PersistedEntry/expiresAt``), and one
    /// whose time has passed is left out; an entry with no deadline gets the cache's expiration
    /// counted from now. With ``EvictionPolicy/lru`` or ``EvictionPolicy/fifo`` this reproduces
    /// the saved eviction order.
    ///
    /// - Complexity: O(*n*).
    public func restore(_ entries: [PersistedEntry<Key, Value>]) {
        let restored = _CacheCore<Key, Value>.restorable(entries, at: Date()).map { entry, timeToLive in
            (key: entry.key, value: entry.value, cost: entry.cost, timeToLive: timeToLive)
        }
        // An entry with a time of its own needs the clock read (as `setValue(expiresAfter:)`).
        let now = restored.contains { $0.timeToLive != nil } ? _timekeeper.activate() : _timekeeper.now()
        _enqueue(.restore(restored, now: now))
    }
}

extension SharedCache: PersistableCache where Key: Codable, Value: Codable {}
