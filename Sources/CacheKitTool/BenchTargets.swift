import CacheKit
import CacheKitBenchSupport
import Foundation

/// An `Int` as a key type of a user's own: its hash goes through `Hasher` (SipHash), where
/// CacheKit hashes `Int` keys itself.
struct HasherKey: Hashable {
    let id: Int
}

/// `Cache` keyed by `HasherKey`: what the cache costs with keys it does not hash itself.
final class HasherKeyedCache: BenchTarget {
    let cache: Cache<HasherKey, Int>

    init(countLimit: Int, policy: EvictionPolicy) {
        cache = Cache(countLimit: countLimit, policy: policy)
    }

    func get(_ key: Int) -> Int? { cache[HasherKey(id: key)] }
    func set(_ value: Int, _ key: Int) { cache[HasherKey(id: key)] = value }
}

/// Foundation's `NSCache`, with boxed keys and values made before timing starts.
final class NSCacheTarget: BenchTarget, @unchecked Sendable {
    let cache = NSCache<NSNumber, NSNumber>()
    let numbers: [NSNumber]

    init(countLimit: Int, numbers: [NSNumber]) {
        cache.countLimit = countLimit
        self.numbers = numbers
    }

    func get(_ key: Int) -> Int? { cache.object(forKey: numbers[key])?.intValue }
    func set(_ value: Int, _ key: Int) { cache.setObject(numbers[value % numbers.count], forKey: numbers[key]) }
}
