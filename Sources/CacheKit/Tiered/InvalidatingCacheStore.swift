/// A ``CacheStore`` that several processes share, which tells each reader when entries change
/// elsewhere, so that the copies a ``TieredCache`` keeps in memory stay coherent with it.
///
/// `RedisStore` (product `CacheKitRedis`) is one: a Redis server pushes an invalidation for each
/// key another client writes, and the store passes it on. A ``TieredCache`` over such a store
/// registers a handler when it is created and keeps these rules:
/// - ``CacheStoreInvalidation/entries(_:)``: the named entries leave memory; a read of one of them
///   that is under way when the invalidation arrives returns its value but does not keep it.
/// - ``CacheStoreInvalidation/all``: the whole memory level is dropped.
/// - ``CacheStoreInvalidation/suspended``: invalidations may be lost from now on (the store's
///   connection for them is down). The memory level is dropped and bypassed: reads go to the
///   store (and to the loader when the store fails) and nothing is kept in memory.
/// - ``CacheStoreInvalidation/resumed``: invalidations arrive again. Reads that began before it
///   may have missed one, so only reads that begin after it fill the memory level again.
///
/// A store delivers its invalidations in the order it learns of them, one call at a time, with
/// no lock held, and never from within a call of the handler's cache (a handler may call back
/// into the store).
public protocol InvalidatingCacheStore: CacheStore {
    /// Registers `handler` for this store's invalidations and returns a token for
    /// ``removeInvalidationHandler(_:)``.
    ///
    /// The store's first call of `handler` gives its current state,
    /// ``CacheStoreInvalidation/resumed`` when invalidations arrive, else
    /// ``CacheStoreInvalidation/suspended``; it may come after this returns. Until it does, a
    /// ``TieredCache`` treats invalidations as suspended.
    func addInvalidationHandler(
        _ handler: @escaping @Sendable (CacheStoreInvalidation) -> Void
    ) -> CacheStoreInvalidationToken

    /// Stops calling the handler registered with `token`. Removing it twice is harmless.
    func removeInvalidationHandler(_ token: CacheStoreInvalidationToken)
}

/// What an ``InvalidatingCacheStore`` tells its readers.
public enum CacheStoreInvalidation: Sendable, Hashable {
    /// These entries (store keys) may have changed: drop any copy of them.
    case entries([String])
    /// Any entry may have changed (the store was emptied elsewhere): drop every copy.
    case all
    /// Invalidations may be lost from now until ``resumed``: keep no copies.
    case suspended
    /// Invalidations arrive again.
    case resumed
}

/// Names one handler registered with ``InvalidatingCacheStore/addInvalidationHandler(_:)``.
public struct CacheStoreInvalidationToken: Sendable, Hashable {
    /// The number the store gave the handler.
    public let rawValue: UInt64

    /// Creates a token; stores number their handlers.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
}
