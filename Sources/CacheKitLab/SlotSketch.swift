import CacheKit
import CacheKitBenchSupport
import _CacheKitShims

/// CacheKit's layout, nothing else: see `SketchRecord`'s notes (SketchLayout.swift). Its bucket words keep the
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
