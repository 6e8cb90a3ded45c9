import CacheKit

/// What a benchmark drives: an `Int`-to-`Int` map that reads and writes. Each conformer is a
/// concrete type and the timed loops are generic over it, so every subject runs specialized code.
package protocol BenchTarget {
    func get(_ key: Int) -> Int?
    func set(_ value: Int, _ key: Int)
    /// Finishes the work the fill left behind before the timed operations start (a
    /// `SharedCache` applies its queued writes); nothing for the others.
    func settle()
    /// Starts loading what an operation on `key` will read first; a locking wrapper calls it
    /// before it locks, as `Cache` does. Nothing for most targets.
    func prefetch(_ key: Int)
    /// What thread number `thread` of a multi-thread case drives: the target itself, except
    /// for a target that gives each thread a part of its own.
    func worker(_ thread: Int) -> Self
}

extension BenchTarget {
    package func prefetch(_ key: Int) {}
    package func worker(_ thread: Int) -> Self { self }
    package func settle() {}
}

extension Cache: BenchTarget where Key == Int, Value == Int {
    package func get(_ key: Int) -> Int? { self[key] }
    package func set(_ value: Int, _ key: Int) { self[key] = value }
}

extension SharedCache: BenchTarget where Key == Int, Value == Int {
    package func get(_ key: Int) -> Int? { self[key] }
    package func set(_ value: Int, _ key: Int) { self[key] = value }
    package func settle() { flush() }
}

extension SerialCache: BenchTarget where Key == Int, Value == Int {
    package func get(_ key: Int) -> Int? { self[key] }
    package func set(_ value: Int, _ key: Int) { self[key] = value }
}

/// The baseline: a plain `Dictionary` doing the same lookups and inserts. It never evicts, except
/// in `set-evict`, where it removes the oldest key it inserted (tracked in a ring) to stay at
/// capacity, as a cache must.
package final class DictionaryTarget: BenchTarget {
    // The dictionary and the ring of inserted keys live behind pointers rather than in `var`
    // properties: a class's stored `var` pays a dynamic exclusivity check (`swift_beginAccess`)
    // on every access, which would handicap the baseline with work a local `Dictionary` never
    // does.
    private let storage: UnsafeMutablePointer<[Int: Int]>
    private let ring: UnsafeMutablePointer<Int>
    private let ringState: UnsafeMutablePointer<(count: Int, head: Int)>
    private let boundedTo: Int?

    package init(boundedTo capacity: Int?) {
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

    package func get(_ key: Int) -> Int? { storage.pointee[key] }

    package func set(_ value: Int, _ key: Int) {
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

/// Lets a benchmark hand a thread-safe target (`Cache`, `NSCache`) to several threads.
package struct UncheckedSendable<T>: @unchecked Sendable {
    package let value: T
    package init(_ value: T) { self.value = value }
}

/// Keeps a result alive so the optimizer cannot drop the loop that made it.
@inline(never)
package func blackHole(_ value: Int) {
    if value == .min { print("") }
}
