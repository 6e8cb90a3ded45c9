/// One thing that happened in a cache, as an activity observer hears it: for logging and metrics
/// (ClearCache's "monitor cache activities"; the `CacheKitObservability` product turns these into
/// swift-log messages and swift-metrics counters).
///
/// An observer runs after the cache's lock is released, on the thread that caused the activity,
/// and may call back into the cache.
public enum CacheActivity<Key> {
    /// A read found the key (`value(forKey:)`, the subscript, or a loading read).
    case hit(key: Key)
    /// A read did not find the key.
    case miss(key: Key)
    /// A value was stored for the key, with this cost (a new entry or a replacement).
    case write(key: Key, cost: Int)
    /// The entry for the key left the cache (the removal handler hears the same, with the value).
    case removal(key: Key, reason: RemovalReason)
    /// A loader or `orInsert` closure ran for the key, taking `duration`; `error` is what it threw,
    /// or `nil` when it returned a value.
    case load(key: Key, duration: Duration, error: (any Error)?)

    /// The key the activity concerns.
    public var key: Key {
        switch self {
        case .hit(let key), .miss(let key), .write(let key, _), .removal(let key, _), .load(let key, _, _): key
        }
    }
}

extension CacheActivity: Sendable where Key: Sendable {}
