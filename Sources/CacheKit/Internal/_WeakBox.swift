/// A weak reference that may cross tasks: background sweeps, expiration triggers, memory-pressure
/// subscriptions and a shared cache's intervals hold their cache this way, so that they never
/// keep it alive.
final class _WeakBox<Object: AnyObject>: @unchecked Sendable {
    // Written once in `init`; reading a weak reference is thread-safe, and the caches it holds
    // take their own locks.
    weak var object: Object?

    init(_ object: Object) { self.object = object }
}
