#if Observability
import CacheKit

/// What a monitor reads from a cache it watches: its size.
protocol CacheSize: AnyObject {
    var count: Int { get }
    var totalCost: Int { get }
}

extension Cache: CacheSize {}
extension SerialCache: CacheSize {}

/// A weak reference to a `Cache` that a `@Sendable` activity observer may capture, whatever the
/// cache's `Key` and `Value`, to read its `count` and `totalCost`. It holds the cache as a
/// ``CacheSize``, so the observer uses none of the key type's conformances and works for keys
/// whose conformances are isolated to an actor too.
///
/// `@unchecked Sendable` is sound for that use: `count` and `totalCost` return integers, never a
/// key or a value (and take `Cache`'s lock). A cache whose keys or values are not `Sendable` is
/// not `Sendable` either, so it stays in one isolation domain, and so does every activity it
/// reports (an observer runs on the thread that caused the activity); this reference is only
/// read there.
final class WeakCacheReference: @unchecked Sendable {
    /// The cache, or `nil` once it is gone.
    private(set) weak var object: (any CacheSize)?

    init(_ object: any CacheSize) { self.object = object }
}
#endif
