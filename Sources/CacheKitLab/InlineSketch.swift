import CacheKit
import CacheKitBenchSupport

/// Records inside their buckets: see `SketchRecord`'s notes (SketchLayout.swift).
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
