// CacheKitHummingbird: Hummingbird's `PersistDriver` over a CacheKit cache. Values are kept as
// they are (no encoding), each with its deadline on the driver's clock, which the cache's own
// per-entry expiry enforces and `getWithTTL` reads.

import CacheKit
import Hummingbird
import ServiceLifecycle

/// A Hummingbird `PersistDriver` backed by a CacheKit ``CacheKit/Cache``: bounded, with an
/// eviction policy, and expiry enforced by the cache itself.
///
/// ```swift
/// let persist = CacheKitPersistDriver(countLimit: 100_000)
/// let router = Router(context: BasicSessionRequestContext<UUID, User>.self)
/// router.add(middleware: SessionMiddleware(storage: persist))
/// let app = Application(router: router, services: [persist])
/// ```
///
/// `MemoryPersistDriver` keeps every value until a tidy pass every ten minutes; this driver
/// holds at most `countLimit` entries (evicting by `policy`). An expired entry is gone at once:
/// each operation of the cache removes the entries whose time has passed (in deadline order,
/// without a scan), and ``run()`` does so every `sweepInterval` for a driver left idle.
///
/// Values are kept as the `Codable & Sendable` values they are: reading one as another type
/// throws `PersistError.invalidConversion`, as `MemoryPersistDriver` does.
public final class CacheKitPersistDriver<C: Clock<Duration>>: PersistDriver {
    /// One stored value with its deadline. A class, so that `create` can tell its own entry
    /// from one another writer stored first.
    final class Entry: Sendable {
        let value: any Codable & Sendable
        let expiresAt: C.Instant?

        init(value: any Codable & Sendable, expiresAt: C.Instant?) {
            self.value = value
            self.expiresAt = expiresAt
        }
    }

    /// The cache the entries live in.
    let cache: CacheKit.Cache<String, Entry>
    /// The clock lifetimes are measured on.
    public let clock: C
    /// How often ``run()`` removes expired entries.
    public let sweepInterval: Duration

    /// How many entries the driver holds (expired ones not yet removed included).
    public var count: Int { cache.count }

    /// What the driver's cache has counted: hits, misses, evictions.
    public var statistics: CacheStatistics { cache.statistics }

    /// Creates a driver holding at most `countLimit` entries, measuring lifetimes on `clock`.
    ///
    /// - Parameters:
    ///   - countLimit: The most entries the driver holds; `0` for no limit.
    ///   - policy: Which entry leaves first when the limit is reached.
    ///   - clock: The clock lifetimes are measured on; tests pass a ``ManualClock``.
    ///   - sweepInterval: How often ``run()`` removes expired entries.
    /// - Precondition: `countLimit` is not negative; `sweepInterval` is positive.
    public init(
        countLimit: Int,
        policy: EvictionPolicy = .default,
        clock: C,
        sweepInterval: Duration = .seconds(60)
    ) {
        precondition(sweepInterval > .zero, "sweepInterval must be positive (got \(sweepInterval))")
        self.cache = CacheKit.Cache(countLimit: countLimit, policy: policy, clock: clock)
        self.clock = clock
        self.sweepInterval = sweepInterval
    }

    /// Stores `value` for `key` unless the key holds a live value.
    ///
    /// - Throws: `PersistError.duplicate` when `key` holds a value that has not expired.
    public func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let lifetime = Self.lifetime(expires)
        let entry = Entry(value: value, expiresAt: lifetime.map { clock.now.advanced(by: $0) })
        // Two creates that miss at once may both make an entry: the first stored wins, and the
        // other learns so because the entry returned is not its own.
        let stored = cache.value(forKey: key, expiresAfter: lifetime) { entry }
        guard stored === entry else { throw PersistError.duplicate }
    }

    /// Stores `value` for `key`, replacing any value. With `expires` `nil`, a value that
    /// replaces one with a deadline keeps that deadline (as it is when this call reads it: of
    /// two concurrent writes to one key, the last stored wins with the deadline it read).
    public func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let deadline: C.Instant?
        if let lifetime = Self.lifetime(expires) {
            deadline = clock.now.advanced(by: lifetime)
        } else {
            deadline = cache.peekValue(forKey: key)?.expiresAt
        }
        guard let deadline else {
            cache.setValue(Entry(value: value, expiresAt: nil), forKey: key)
            return
        }
        let left = clock.now.duration(to: deadline)
        guard left > .zero else {
            cache.removeValue(forKey: key)
            return
        }
        cache.setValue(Entry(value: value, expiresAt: deadline), forKey: key, expiresAfter: left)
    }

    /// The value for `key`, or `nil` when there is none or it expired.
    ///
    /// - Throws: `PersistError.invalidConversion` when the value is not an `Object`.
    public func get<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> Object? {
        try lookUp(key, as: type)?.object
    }

    /// The value for `key` and the time it has left (`nil` for no deadline), or `nil` when there
    /// is no value or it expired.
    ///
    /// - Throws: `PersistError.invalidConversion` when the value is not an `Object`.
    public func getWithTTL<Object: Codable & Sendable>(
        key: String,
        as type: Object.Type
    ) async throws -> (object: Object, ttl: Duration?)? {
        try lookUp(key, as: type)
    }

    /// The value for `key` as an `Object` and the time it has left.
    private func lookUp<Object: Codable & Sendable>(
        _ key: String,
        as type: Object.Type
    ) throws -> (object: Object, ttl: Duration?)? {
        guard let entry = cache.value(forKey: key) else { return nil }
        let ttl = entry.expiresAt.map { clock.now.duration(to: $0) }
        if let ttl, ttl <= .zero { return nil }
        guard let object = entry.value as? Object else { throw PersistError.invalidConversion }
        return (object, ttl)
    }

    /// Removes the value for `key`, if there is one.
    public func remove(key: String) async throws {
        cache.removeValue(forKey: key)
    }

    /// Removes every value.
    public func shutdown() async throws {
        cache.removeAll()
    }

    /// Removes expired entries every ``sweepInterval`` until graceful shutdown, then calls
    /// ``shutdown()``.
    public func run() async throws {
        let clock = self.clock
        let interval = sweepInterval
        await cancelWhenGracefulShutdown {
            while (try? await clock.sleep(for: interval)) != nil {
                self.cache.removeExpired()
            }
        }
        try await shutdown()
    }

    /// `expires` as a lifetime for the cache (which takes positive ones only): `nil` for none,
    /// and a lifetime of zero or less as the shortest, which ends at the next tick of the clock.
    private static func lifetime(_ expires: Duration?) -> Duration? {
        guard let expires else { return nil }
        return max(expires, .nanoseconds(1))
    }
}

extension CacheKitPersistDriver where C == ContinuousClock {
    /// Creates a driver holding at most `countLimit` entries, measuring lifetimes on the
    /// continuous clock.
    ///
    /// - Parameters:
    ///   - countLimit: The most entries the driver holds; `0` for no limit.
    ///   - policy: Which entry leaves first when the limit is reached.
    ///   - sweepInterval: How often ``run()`` removes expired entries.
    public convenience init(
        countLimit: Int,
        policy: EvictionPolicy = .default,
        sweepInterval: Duration = .seconds(60)
    ) {
        self.init(countLimit: countLimit, policy: policy, clock: ContinuousClock(), sweepInterval: sweepInterval)
    }
}
