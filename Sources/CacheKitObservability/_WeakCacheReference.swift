import CacheKit

/// A weak reference to a `Cache` that a `@Sendable` activity observer may capture, whatever the
/// cache's `Key` and `Value`, to read its `count` and `totalCost`.
///
/// `@unchecked Sendable` is sound for that use: `count` and `totalCost` take the cache's lock and
/// return integers, never a key or a value. A `Cache` whose keys or values are not `Sendable` is
/// not `Sendable` either, so it stays in one isolation domain, and so does every activity it
/// reports (an observer runs on the thread that caused the activity); this reference is only
/// read there.
final class _WeakCacheReference<Key: Hashable, Value>: @unchecked Sendable {
    /// The cache, or `nil` once it is gone.
    private(set) weak var cache: Cache<Key, Value>?

    init(_ cache: Cache<Key, Value>) { self.cache = cache }
}
