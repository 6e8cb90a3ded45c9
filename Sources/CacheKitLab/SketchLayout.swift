import CacheKit
import CacheKitBenchSupport

/// Two minimal LRU caches for `Int` keys and values, measured by `CacheKitLab sketches` beside
/// CacheKit's caches to show where the time over `Dictionary` goes. They are not CacheKit and
/// not API: no cost, no events, no statistics, no expiry, no policy but exact LRU, no growth
/// past the capacity they are made with.
///
/// - `SlotSketch` has CacheKit's layout: records (key, value, list links) in a slot array, found
///   through an open-addressing index of 4-byte slot numbers. What it costs over `Dictionary` is
///   the least that layout costs; what `SerialCache` costs over it is the engine's generality.
/// - `InlineSketch` keeps each record inside its hash bucket (a 2-byte control word per bucket
///   beside 24-byte records), so a lookup loads the record without first loading a slot number.
///   It is faster, but each bucket takes 26 bytes where `Dictionary`'s takes 16, at the same
///   load of 3/8–3/4: at a million entries 2^21 buckets, about 54.5 bytes per entry, 1.6x
///   `Dictionary`'s 34.3 (CacheKit's layout takes 33.2, 0.97x).
///
/// Both use linear probing with backward-shift deletion and a circular doubly linked list
/// (`head` is the most recent entry, its `prev` the least recent), and hash keys as CacheKit
/// hashes `Int` keys (`sketchHash`), so that they differ from the engine in layout and features
/// only. Each is checked against a reference model before it is measured (`LRUSketchCheck`).
/// `SlotSketch` prefetches as the engine and `Cache` do (the next victim's bucket and neighbour
/// after an eviction; the key's bucket before `LockedTarget` locks); `InlineSketch` does not.
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
