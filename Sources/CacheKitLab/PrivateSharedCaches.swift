import CacheKit
import CacheKitBenchSupport

/// One unbounded `SharedCache` per thread, each filled alike (the subject
/// "SharedCache-private"): the threads share no memory at all, so its scaling from 1 thread to
/// 2 is the most that any way of splitting one cache into parts could reach on the machine.
struct PrivateSharedCaches: BenchTarget {
    let caches: [SharedCache<Int, Int>]
    /// The cache of the thread this copy was made for (`worker(_:)`).
    let own: SharedCache<Int, Int>
    /// Whether this is the copy the fill writes through, which writes every cache.
    let fills: Bool

    init(threads: Int) {
        caches = (0..<threads).map { _ in SharedCache<Int, Int>() }
        own = caches[0]
        fills = true
    }

    private init(caches: [SharedCache<Int, Int>], own: SharedCache<Int, Int>) {
        self.caches = caches
        self.own = own
        fills = false
    }

    func worker(_ thread: Int) -> Self { Self(caches: caches, own: caches[thread]) }
    func get(_ key: Int) -> Int? { own[key] }
    func set(_ value: Int, _ key: Int) {
        guard fills else {
            own[key] = value
            return
        }
        for cache in caches { cache[key] = value }
    }
    func settle() { for cache in caches { cache.flush() } }
}
