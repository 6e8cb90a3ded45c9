import CacheKit
import Foundation
import Vapor

extension Application.Caches.Provider {
    /// A CacheKit ``CacheKitVaporCache`` of at most `countLimit` entries (and `totalCostLimit`
    /// bytes of JSON), created once for the application.
    ///
    /// ```swift
    /// app.caches.use(.cachekit(countLimit: 10_000, policy: .lru))
    /// ```
    ///
    /// - Parameters:
    ///   - countLimit: The most entries the cache holds; `0` for no limit.
    ///   - totalCostLimit: The most bytes of JSON the cache holds; `0` (the default) for no limit.
    ///   - policy: Which entry leaves first when a limit is reached.
    public static func cachekit(
        countLimit: Int,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .default
    ) -> Self {
        .init { application in
            let cache = CacheKit.Cache<String, Data>(
                countLimit: countLimit,
                totalCostLimit: totalCostLimit,
                policy: policy
            )
            application.caches.use { CacheKitVaporCache(cache, on: $0.eventLoopGroup.any()) }
        }
    }

    /// A ``CacheKitVaporCache`` over `cache`, which you configure (limits, policy, expiration,
    /// clock, handlers) and may keep to read its statistics. Every `app.cache` uses this
    /// instance.
    public static func cachekit(_ cache: CacheKit.Cache<String, Data>) -> Self {
        .init { application in
            application.caches.use { CacheKitVaporCache(cache, on: $0.eventLoopGroup.any()) }
        }
    }

    /// A ``CacheKitVaporCache`` over `tiered`: values live in its memory level and its store,
    /// as JSON bytes, so that they survive restarts and can outgrow memory.
    ///
    /// ```swift
    /// let store = try await DiskStore(directory: cachesURL, byteLimit: 500 << 20)
    /// let tiered = TieredCache<String, Data>(countLimit: 10_000, store: store, codec: .data, keys: .description)
    /// app.caches.use(.cachekit(tiered: tiered))
    /// ```
    ///
    /// Give the tiered cache the codec ``StoreCodec/data``: the values already are JSON bytes.
    ///
    /// - Parameters:
    ///   - tiered: The tiered cache.
    ///   - closesAtShutdown: Whether the application's shutdown closes the tiered cache
    ///     (``TieredCache/close()``: its background writes finish and its store closes).
    public static func cachekit(tiered: TieredCache<String, Data>, closesAtShutdown: Bool = true) -> Self {
        .init { application in
            if closesAtShutdown { application.lifecycle.use(_TieredCacheCloser(cache: tiered)) }
            application.caches.use { CacheKitVaporCache(tiered: tiered, on: $0.eventLoopGroup.any()) }
        }
    }
}

/// Closes a tiered cache when the application shuts down (`asyncShutdown()`).
private struct _TieredCacheCloser: LifecycleHandler {
    let cache: TieredCache<String, Data>

    func shutdownAsync(_ application: Application) async {
        do {
            try await cache.close()
        } catch {
            application.logger.report(error: error)
        }
    }
}
