import CacheKit
import CacheKitSimulator
import Synchronization
import _CacheKitShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Two minimal LRU caches for `Int` keys and values, measured by `cachekit bench` beside
/// CacheKit's caches to show where the time over `Dictionary` goes. They are not CacheKit and
/// not API: no cost, no events, no statistics, no expiry, no policy but exact LRU, no growth
/// past the capacity they are made with.
///
/// - `SlotSketch` has CacheKit's layout, the one issue 2 prescribes: records (key, value, list
///   links) in a slot array, found through an open-addressing index of 4-byte slot numbers.
///   What it costs over `Dictionary` is the least that layout costs; what `SerialCache` costs
///   over it is the engine's generality.
/// - `InlineSketch` keeps each record inside its hash bucket (a 2-byte control word per bucket
///   beside 24-byte records), so a lookup loads the record without first loading a slot number.
///   It is faster, but each bucket takes 26 bytes where `Dictionary`'s takes 16, at the same
///   load of 3/8–3/4: at a million entries 2^21 buckets, about 54.5 bytes per entry, 1.6x
///   `Dictionary`'s 34.3 (CacheKit's layout takes 33.2, 0.97x).
///
/// Both use linear probing with backward-shift deletion and a circular doubly linked list
/// (`head` is the most recent entry, its `prev` the least recent), and hash keys as CacheKit
/// hashes `Int` keys (`sketchHash`; until session 21 they used `hashValue`, SipHash, as the
/// engine did then). Each is checked against a reference model before it is measured
/// (`LRUSketchCheck`). Since session 24 `SlotSketch` prefetches as the engine and `Cache` do
/// (the next victim's bucket and neighbour after an eviction; the key's bucket before
/// `LockedTarget` locks); `InlineSketch` does not.
struct SketchRecord {
    var key: Int
    var value: Int
    var prev: Int32
    var next: Int32
}

/// The circular list both sketches keep over their records, by record number.
struct SketchList {
    var head: Int32 = -1

    @inline(__always)
    mutating func unlink(_ i: Int32, _ records: UnsafeMutablePointer<SketchRecord>) {
        let p = records[Int(i)].prev
        let n = records[Int(i)].next
        records[Int(p)].next = n
        records[Int(n)].prev = p
        if head == i { head = n == i ? -1 : n }
    }

    @inline(__always)
    mutating func pushFront(_ i: Int32, _ records: UnsafeMutablePointer<SketchRecord>) {
        guard head >= 0 else {
            records[Int(i)].prev = i
            records[Int(i)].next = i
            head = i
            return
        }
        let h = head
        let t = records[Int(h)].prev
        records[Int(i)].prev = t
        records[Int(i)].next = h
        records[Int(t)].next = i
        records[Int(h)].prev = i
        head = i
    }

    @inline(__always)
    mutating func touch(_ i: Int32, _ records: UnsafeMutablePointer<SketchRecord>) {
        if head != i {
            unlink(i, records)
            pushFront(i, records)
        }
    }

    /// The least recently used record.
    func last(_ records: UnsafeMutablePointer<SketchRecord>) -> Int32 { records[Int(head)].prev }
}

/// The hash both sketches take of a key: CacheKit's own for `Int` keys, so that they differ from
/// the engine in layout and features only.
/// `seed` is `_KeyHash.processSeed`, which each sketch copies (a global is read through its
/// lazy initializer's check, as the engine's stored copy avoids too).
@inline(__always)
func sketchHash(_ key: Int, _ seed: _KeyHash.Seed) -> Int { _KeyHash.hash(key, seed: seed) }

/// The smallest power of two of buckets that keeps `capacity` entries at a load of 3/4 or less.
func sketchBucketCount(_ capacity: Int) -> Int {
    var count = 1
    while count * 3 < capacity * 4 { count <<= 1 }
    return count
}

/// CacheKit's layout, nothing else: see the file's introduction. Its bucket words keep the
/// displacement in 8 bits, so a probe run of 256 buckets or more traps (the precondition in
/// `set`); with seeded hashing at a load of 3/4 or less that does not happen in practice, but
/// keys made to collide would reach it.
final class SlotSketch: BenchTarget {
    private let records: UnsafeMutablePointer<SketchRecord>
    /// `0` is empty; otherwise the low 24 bits hold `slot + 1`, the high 8 the displacement.
    private let buckets: UnsafeMutablePointer<UInt32>
    private let mask: Int
    private let capacity: Int
    private let seed = _KeyHash.processSeed
    private var list = SketchList()
    private(set) var count = 0

    init(capacity: Int) {
        precondition(capacity > 0 && capacity < 1 << 23, "capacity must be in 1..<2^23 (got \(capacity))")
        self.capacity = capacity
        let bucketCount = sketchBucketCount(capacity)
        mask = bucketCount - 1
        records = .allocate(capacity: capacity)
        buckets = .allocate(capacity: bucketCount)
        buckets.initialize(repeating: 0, count: bucketCount)
    }

    deinit {
        records.deallocate()
        buckets.deallocate()
    }

    /// As `Cache` does before it locks (`Cache._prefetchIndex`); `buckets` never moves here.
    func prefetch(_ key: Int) { _cachekit_prefetch(buckets + (sketchHash(key, seed) & mask)) }

    /// The bucket holding `key`, or the complement of the first empty bucket of its probe run.
    @inline(__always)
    private func find(_ key: Int, hash: Int) -> Int {
        var i = hash & mask
        while true {
            let word = buckets[i]
            if word == 0 { return ~i }
            if records[Int(word & 0xFF_FFFF) - 1].key == key { return i }
            i = (i &+ 1) & mask
        }
    }

    func get(_ key: Int) -> Int? {
        let bucket = find(key, hash: sketchHash(key, seed))
        guard bucket >= 0 else { return nil }
        let slot = Int32(buckets[bucket] & 0xFF_FFFF) - 1
        list.touch(slot, records)
        return records[Int(slot)].value
    }

    /// Empties `start` and shifts back each later entry of the run that may move there.
    private func removeBucket(_ start: Int) {
        var hole = start
        var j = (start + 1) & mask
        while buckets[j] != 0 {
            let word = buckets[j]
            let distance = (j - hole) & mask
            if Int(word >> 24) >= distance {
                buckets[hole] = word - UInt32(distance) << 24
                hole = j
            }
            j = (j + 1) & mask
        }
        buckets[hole] = 0
    }

    func set(_ value: Int, _ key: Int) {
        let hash = sketchHash(key, seed)
        var bucket = find(key, hash: hash)
        if bucket >= 0 {
            let slot = Int32(buckets[bucket] & 0xFF_FFFF) - 1
            records[Int(slot)].value = value
            list.touch(slot, records)
            return
        }
        let slot: Int32
        if count == capacity {
            slot = list.last(records)
            let victim = records[Int(slot)].key
            removeBucket(find(victim, hash: sketchHash(victim, seed)))
            list.unlink(slot, records)
            bucket = find(key, hash: hash)
            // As the engine does (`_CacheCore.warmNextEviction`): the next victim's bucket and
            // the record its unlinking rewrites.
            let next = list.last(records)
            _cachekit_prefetch(buckets + (sketchHash(records[Int(next)].key, seed) & mask))
            _cachekit_prefetch(records + Int(records[Int(next)].prev))
        } else {
            slot = Int32(count)
            count += 1
        }
        bucket = ~bucket
        let displacement = (bucket - hash & mask) & mask
        precondition(displacement < 256, "probe run too long for the sketch")
        buckets[bucket] = UInt32(displacement) << 24 | UInt32(slot + 1)
        records[Int(slot)] = SketchRecord(key: key, value: value, prev: 0, next: 0)
        list.pushFront(slot, records)
    }
}

/// Records inside their buckets: see the file's introduction.
final class InlineSketch: BenchTarget {
    private let records: UnsafeMutablePointer<SketchRecord>
    /// `0` is empty; otherwise the high 12 bits hold a tag of the hash, the low 4 the
    /// displacement plus one (15: 14 or more, found by hashing the key again).
    private let control: UnsafeMutablePointer<UInt16>
    private let mask: Int
    private let capacity: Int
    private let seed = _KeyHash.processSeed
    private var list = SketchList()
    private(set) var count = 0

    init(capacity: Int) {
        precondition(capacity > 0 && capacity < 1 << 30, "capacity must be in 1..<2^30 (got \(capacity))")
        self.capacity = capacity
        let bucketCount = sketchBucketCount(capacity)
        mask = bucketCount - 1
        records = .allocate(capacity: bucketCount)
        control = .allocate(capacity: bucketCount)
        control.initialize(repeating: 0, count: bucketCount)
    }

    deinit {
        records.deallocate()
        control.deallocate()
    }

    @inline(__always)
    private func tag(_ hash: Int) -> UInt16 {
        UInt16(truncatingIfNeeded: UInt(bitPattern: hash) >> 52) << 4
    }

    @inline(__always)
    private func find(_ key: Int, hash: Int) -> Int {
        let tag = tag(hash)
        var i = hash & mask
        while true {
            let word = control[i]
            if word == 0 { return ~i }
            if word & 0xFFF0 == tag && records[i].key == key { return i }
            i = (i &+ 1) & mask
        }
    }

    func get(_ key: Int) -> Int? {
        let bucket = find(key, hash: sketchHash(key, seed))
        guard bucket >= 0 else { return nil }
        list.touch(Int32(bucket), records)
        return records[bucket].value
    }

    /// Unlinks and empties `start`, then shifts back each later entry of the run that may move
    /// there, telling its list neighbours where it went.
    private func remove(at start: Int) {
        list.unlink(Int32(start), records)
        count -= 1
        var hole = start
        var j = (start + 1) & mask
        while control[j] != 0 {
            let word = control[j]
            var displacement = Int(word & 15) - 1
            if displacement == 14 { displacement = (j - sketchHash(records[j].key, seed) & mask) & mask }
            let distance = (j - hole) & mask
            if displacement >= distance {
                records[hole] = records[j]
                control[hole] = word & 0xFFF0 | UInt16(Swift.min(displacement - distance + 1, 15))
                let moved = Int32(hole)
                let old = Int32(j)
                let p = records[hole].prev
                let n = records[hole].next
                if p == old {
                    records[hole].prev = moved
                    records[hole].next = moved
                } else {
                    records[Int(p)].next = moved
                    records[Int(n)].prev = moved
                }
                if list.head == old { list.head = moved }
                hole = j
            }
            j = (j + 1) & mask
        }
        control[hole] = 0
    }

    func set(_ value: Int, _ key: Int) {
        let hash = sketchHash(key, seed)
        var bucket = find(key, hash: hash)
        if bucket >= 0 {
            records[bucket].value = value
            list.touch(Int32(bucket), records)
            return
        }
        if count == capacity {
            remove(at: Int(list.last(records)))
            bucket = find(key, hash: hash)
        }
        bucket = ~bucket
        let displacement = (bucket - hash & mask) & mask
        control[bucket] = tag(hash) | UInt16(Swift.min(displacement + 1, 15))
        records[bucket] = SketchRecord(key: key, value: value, prev: 0, next: 0)
        list.pushFront(Int32(bucket), records)
        count += 1
    }
}

/// Checks a sketch against a reference LRU (an array in recency order) over random gets and
/// sets, so that a sketch measured by the benchmark is known to do a cache's work.
enum LRUSketchCheck {
    struct Mismatch: Error, CustomStringConvertible {
        let subject: String
        let capacity: Int
        let step: Int
        var description: String {
            "\(subject) disagrees with the reference LRU at capacity \(capacity), step \(step)"
        }
    }

    /// Checks at capacities where the list holds one, two or three entries, and at 96 and 100,
    /// whose tables are 3/4 and 2/5 full (long probe runs, and runs that wrap around the end).
    static func verify<T: BenchTarget>(_ subject: String, make: (Int) -> T) throws {
        for capacity in [1, 2, 3, 96, 100] {
            try verify(subject, capacity: capacity, make: make)
        }
    }

    static func verify<T: BenchTarget>(_ subject: String, capacity: Int, make: (Int) -> T) throws {
        let sketch = make(capacity)
        var order: [Int] = []  // least recent first
        var values: [Int: Int] = [:]
        var rng = SplitMix64(seed: 7)
        for step in 0..<100_000 {
            let key = Int(rng.next() % UInt64(3 * capacity))
            if rng.next() & 1 == 0 {
                let expected = order.firstIndex(of: key).map { values[order.remove(at: $0)]! }
                if expected != nil { order.append(key) }
                guard sketch.get(key) == expected else {
                    throw Mismatch(subject: subject, capacity: capacity, step: step)
                }
            } else {
                sketch.set(step, key)
                if let i = order.firstIndex(of: key) {
                    order.remove(at: i)
                } else if order.count == capacity {
                    values[order.removeFirst()] = nil
                }
                order.append(key)
                values[key] = step
            }
        }
        // Every key the model holds is still there, with its value.
        for key in order where sketch.get(key) != values[key] {
            throw Mismatch(subject: subject, capacity: capacity, step: 100_000)
        }
    }
}

/// A target behind a `Synchronization.Mutex`, taken for each operation as `Cache` takes its
/// own: what the lock alone adds to a sketch or to `Dictionary`.
final class LockedTarget<Target: BenchTarget>: BenchTarget, @unchecked Sendable {
    // Unchecked: every access to `target` is inside `lock`.
    private let target: Target
    private let lock = Mutex<Void>(())

    init(_ target: Target) { self.target = target }

    func get(_ key: Int) -> Int? {
        target.prefetch(key)
        return lock.withLock { _ in target.get(key) }
    }

    func set(_ value: Int, _ key: Int) {
        target.prefetch(key)
        lock.withLock { _ in target.set(value, key) }
    }
}

/// A target behind a test-and-test-and-set spin lock whose unlock is a releasing store, which
/// on x86 is a plain `mov`: what `LockedTarget` would cost with a lock that, unlike
/// `Synchronization.Mutex` (whose unlock is a locked compare-and-exchange, so that it can tell
/// whether a waiter sleeps in the kernel), does not wait out the critical section's cache misses
/// on the way out. A measurement, not a recommendation: a lock that never sleeps burns a core
/// while it waits and lets a descheduled holder stall every waiter, which a general-purpose
/// cache must not do.
final class SpinLockedTarget<Target: BenchTarget>: BenchTarget, @unchecked Sendable {
    // Unchecked: every access to `target` is between `lock()` and `unlock()`.
    private let target: Target
    private let held = Atomic<Bool>(false)

    init(_ target: Target) { self.target = target }

    @inline(__always)
    private func lock() {
        while held.exchange(true, ordering: .acquiring) {
            while held.load(ordering: .relaxed) { sched_yield() }
        }
    }

    @inline(__always)
    private func unlock() { held.store(false, ordering: .releasing) }

    func get(_ key: Int) -> Int? {
        target.prefetch(key)
        lock()
        defer { unlock() }
        return target.get(key)
    }

    func set(_ value: Int, _ key: Int) {
        target.prefetch(key)
        lock()
        defer { unlock() }
        target.set(value, key)
    }
}
