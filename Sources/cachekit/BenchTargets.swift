import CacheKit
import Foundation

/// What the benchmark drives: an `Int`-to-`Int` map that reads and writes. Each conformer is a
/// concrete type and the timed loops are generic over it, so every subject runs specialized code.
protocol BenchTarget {
    func get(_ key: Int) -> Int?
    func set(_ value: Int, _ key: Int)
    /// Finishes the work the fill left behind before the timed operations start (a
    /// `SharedCache` applies its queued writes); nothing for the others.
    func settle()
    /// Starts loading what an operation on `key` will read first; `LockedTarget` calls it
    /// before it locks, as `Cache` does. Nothing for most targets.
    func prefetch(_ key: Int)
    /// What thread number `thread` of a multi-thread case drives: the target itself, except
    /// for a target that gives each thread a part of its own.
    func worker(_ thread: Int) -> Self
}

extension BenchTarget {
    func prefetch(_ key: Int) {}
    func worker(_ thread: Int) -> Self { self }
}

extension BenchTarget {
    func settle() {}
}

extension Cache: BenchTarget where Key == Int, Value == Int {
    func get(_ key: Int) -> Int? { self[key] }
    func set(_ value: Int, _ key: Int) { self[key] = value }
}

extension SharedCache: BenchTarget where Key == Int, Value == Int {
    func get(_ key: Int) -> Int? { self[key] }
    func set(_ value: Int, _ key: Int) { self[key] = value }
    func settle() { flush() }
}

extension SerialCache: BenchTarget where Key == Int, Value == Int {
    func get(_ key: Int) -> Int? { self[key] }
    func set(_ value: Int, _ key: Int) { self[key] = value }
}

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

/// The baseline: a plain `Dictionary` doing the same lookups and inserts. It never evicts, except
/// in `set-evict`, where it removes the oldest key it inserted (tracked in a ring) to stay at
/// capacity, as a cache must.
final class DictionaryTarget: BenchTarget {
    // The dictionary lives behind a pointer rather than in a `var` property: a class's stored
    // `var` pays a dynamic exclusivity check (`swift_beginAccess`) on every access, which would
    // handicap the baseline with work a local `Dictionary` never does.
    // The ring of inserted keys too (a review found `var` properties here paying that check on
    // every evicting set).
    private let storage: UnsafeMutablePointer<[Int: Int]>
    private let ring: UnsafeMutablePointer<Int>
    private let ringState: UnsafeMutablePointer<(count: Int, head: Int)>
    private let boundedTo: Int?

    init(boundedTo capacity: Int?) {
        self.boundedTo = capacity
        storage = .allocate(capacity: 1)
        storage.initialize(to: [:])
        ring = .allocate(capacity: Swift.max(capacity ?? 0, 1))
        ringState = .allocate(capacity: 1)
        ringState.initialize(to: (0, 0))
    }

    deinit {
        storage.deinitialize(count: 1).deallocate()
        ring.deallocate()
        ringState.deallocate()
    }

    func get(_ key: Int) -> Int? { storage.pointee[key] }

    func set(_ value: Int, _ key: Int) {
        guard let capacity = boundedTo else {
            storage.pointee[key] = value
            return
        }
        if storage.pointee.updateValue(value, forKey: key) != nil { return }
        if ringState.pointee.count < capacity {
            ring[ringState.pointee.count] = key
            ringState.pointee.count += 1
        } else {
            let head = ringState.pointee.head
            storage.pointee.removeValue(forKey: ring[head])
            ring[head] = key
            ringState.pointee.head = head + 1 == capacity ? 0 : head + 1
        }
    }
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
