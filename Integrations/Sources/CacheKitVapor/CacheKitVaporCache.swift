// CacheKitVapor: Vapor's `Cache` protocol over a CacheKit cache. Values cross as JSON bytes (the
// protocol hands over `Encodable` values, which need not be `Sendable`), so the same adapter
// serves a memory cache and a tiered cache whose store keeps the bytes.

import CacheKit
import Foundation
import NIOCore
import Vapor

/// A Vapor `Cache` backed by a CacheKit ``CacheKit/Cache`` or ``CacheKit/TieredCache``: bounded,
/// with an eviction policy, and with real expiry for `set(_:to:expiresIn:)`.
///
/// Install it with one line; `app.cache` and `req.cache` then use it:
///
/// ```swift
/// app.caches.use(.cachekit(countLimit: 10_000, policy: .lru))
/// try await req.cache.set("greeting", to: "hello", expiresIn: .minutes(5))
/// let greeting = try await req.cache.get("greeting", as: String.self)
/// ```
///
/// Values are stored as their JSON encoding (`JSONEncoder`'s defaults), with their size in bytes
/// as their cost, so a `totalCostLimit` bounds the bytes the cache holds. A value reads back as
/// any type that decodes from that JSON; one that does not fails the read with the decoding
/// error. Setting `nil`, or a lifetime of zero or less, removes the key.
///
/// Every application gets one cache: the provider creates it when `app.caches.use(_:)` runs and
/// each `app.cache` or `req.cache` is a light value over that instance, bound to an event loop.
public struct CacheKitVaporCache: Vapor.Cache, Sendable {
    /// The memory cache the values live in (the memory level of ``tiered``, if there is one).
    public let memory: CacheKit.Cache<String, Data>
    /// The tiered cache reads and writes go through, or `nil` when they go to ``memory`` only.
    public let tiered: TieredCache<String, Data>?
    /// The event loop the returned futures complete on.
    public private(set) var eventLoop: any EventLoop

    /// Creates a Vapor cache over `cache`, completing its futures on `eventLoop`.
    public init(_ cache: CacheKit.Cache<String, Data>, on eventLoop: any EventLoop) {
        self.memory = cache
        self.tiered = nil
        self.eventLoop = eventLoop
    }

    /// Creates a Vapor cache over `tiered`: reads look in memory, then in the store; writes
    /// reach both levels as the tiered cache's write mode says.
    public init(tiered: TieredCache<String, Data>, on eventLoop: any EventLoop) {
        self.memory = tiered.memory
        self.tiered = tiered
        self.eventLoop = eventLoop
    }

    /// The value for `key` decoded as `T`, or `nil` when the cache holds none (or it expired).
    ///
    /// The future fails with the decoding error when the stored JSON does not decode as `T`.
    public func get<T>(_ key: String, as type: T.Type) -> EventLoopFuture<T?> where T: Decodable & Sendable {
        guard let tiered else {
            return eventLoop.makeCompletedFuture { try Self.decode(T.self, from: memory.value(forKey: key)) }
        }
        return eventLoop.makeFutureWithTask { await tiered.value(forKey: key) }
            .flatMapThrowing { try Self.decode(T.self, from: $0) }
    }

    /// Stores `value` for `key` without a lifetime of its own; `nil` removes the key.
    public func set<T>(_ key: String, to value: T?) -> EventLoopFuture<Void> where T: Encodable {
        set(key, to: value, expiresIn: nil)
    }

    /// Stores `value` for `key`, to expire `expirationTime` from now (`nil` for never); `nil`
    /// removes the key, and so does a lifetime of zero seconds or less.
    public func set<T>(
        _ key: String,
        to value: T?,
        expiresIn expirationTime: CacheExpirationTime?
    ) -> EventLoopFuture<Void> where T: Encodable {
        let bytes: Data?
        do {
            bytes = try value.map { try JSONEncoder().encode($0) }
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let lifetime = expirationTime.map { Duration.seconds($0.seconds) }
        guard let bytes, lifetime.map({ $0 > .zero }) ?? true else { return remove(key) }
        guard let tiered else {
            memory.setValue(bytes, forKey: key, cost: bytes.count, expiresAfter: lifetime)
            return eventLoop.makeSucceededVoidFuture()
        }
        return eventLoop.makeFutureWithTask { try await tiered.setValue(bytes, forKey: key, expiresAfter: lifetime) }
    }

    /// The same cache, completing its futures on `request`'s event loop.
    public func `for`(_ request: Request) -> CacheKitVaporCache {
        var copy = self
        copy.eventLoop = request.eventLoop
        return copy
    }

    /// Removes `key` from every level.
    private func remove(_ key: String) -> EventLoopFuture<Void> {
        guard let tiered else {
            memory.removeValue(forKey: key)
            return eventLoop.makeSucceededVoidFuture()
        }
        return eventLoop.makeFutureWithTask { try await tiered.removeValue(forKey: key) }
    }

    private static func decode<T: Decodable>(_ type: T.Type, from bytes: Data?) throws -> T? {
        guard let bytes else { return nil }
        return try JSONDecoder().decode(T.self, from: bytes)
    }
}
