import CacheKit

/// A weak reference to a `Cache` or `SerialCache` that a `@Sendable` activity observer may
/// capture, whatever the cache's `Key` and `Value`, to read its `count` and `totalCost`.
///
/// `@unchecked Sendable` is sound for that use: `count` and `totalCost` return integers, never a
/// key or a value (and take `Cache`'s lock). A cache whose keys or values are not `Sendable` is
/// not `Sendable` either (and a `SerialCache` never is), so it stays in one isolation domain, and
/// so does every activity it reports (an observer runs on the thread that caused the activity);
/// this reference is only read there.
final class _WeakCacheReference<Host: _StateHost>: @unchecked Sendable {
    /// The cache, or `nil` once it is gone.
    private(set) weak var object: Host?

    init(_ object: Host) { self.object = object }
}
