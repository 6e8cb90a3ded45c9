/// Least frequently used, in O(1) per operation with frequency buckets.
///
/// Entries with the same use count share a bucket; buckets form a list ordered by count, so the
/// victim is the head of the lowest bucket. A new entry counts 1; each read or value update adds 1.
/// Ties break by recency: within a bucket, the entry that reached that count longest ago leaves
/// first (LRU among equals). Counts never age (classic LFU); W-TinyLFU is the aging alternative.
@usableFromInline
struct _LFUPolicy: _EvictionPolicy {
    @usableFromInline
    struct Bucket {
        @usableFromInline var frequency: Int
        @usableFromInline var members: _ListHead
        @usableFromInline var prev: Int32
        @usableFromInline var next: Int32

        @inlinable
        init(frequency: Int, members: _ListHead, prev: Int32, next: Int32) {
            self.frequency = frequency
            self.members = members
            self.prev = prev
            self.next = next
        }
    }

    /// The bucket of each slot in use.
    @usableFromInline var slotBucket: UnsafeMutablePointer<Int32>
    /// The bucket pool: one bucket per distinct use count among the entries, plus one while an
    /// entry moves up; grows on demand.
    @usableFromInline var buckets: UnsafeMutablePointer<Bucket>
    @usableFromInline var bucketCapacity: Int
    @usableFromInline var bucketsUsed: Int32 = 0
    @usableFromInline var freeBucket: Int32 = -1
    /// The bucket with the lowest frequency, or -1.
    @usableFromInline var lowest: Int32 = -1

    @inlinable
    init(slotCapacity: Int) {
        slotBucket = _SlotMemory.allocate(Int32.self, capacity: slotCapacity)
        bucketCapacity = 8
        buckets = .allocate(capacity: bucketCapacity)
    }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        slotBucket = _SlotMemory.resized(slotBucket, used: used, to: slotCapacity).unsafelyUnwrapped
    }

    /// Doubles the bucket pool. Buckets are few (one per distinct use count), so the pool grows
    /// on demand rather than with the slots.
    @usableFromInline
    mutating func growBuckets() {
        let newCapacity = bucketCapacity * 2
        let newBuckets = UnsafeMutablePointer<Bucket>.allocate(capacity: newCapacity)
        newBuckets.moveInitialize(from: buckets, count: Int(bucketsUsed))
        buckets.deallocate()
        buckets = newBuckets
        bucketCapacity = newCapacity
    }

    @inlinable
    func deallocate() {
        _SlotMemory.deallocate(slotBucket)
        buckets.deallocate()
    }

    /// A new, empty bucket for `frequency`, linked in after `after` (or first when `after` is -1).
    @inlinable
    mutating func makeBucket(frequency: Int, after: Int32) -> Int32 {
        let b: Int32
        if freeBucket != -1 {
            b = freeBucket
            freeBucket = buckets[Int(b)].next
        } else {
            if Int(bucketsUsed) == bucketCapacity { growBuckets() }
            b = bucketsUsed
            bucketsUsed += 1
        }
        let next = after == -1 ? lowest : buckets[Int(after)].next
        buckets[Int(b)] = Bucket(frequency: frequency, members: _ListHead(), prev: after, next: next)
        if after == -1 { lowest = b } else { buckets[Int(after)].next = b }
        if next != -1 { buckets[Int(next)].prev = b }
        return b
    }

    @inlinable
    mutating func releaseBucketIfEmpty(_ b: Int32) {
        guard buckets[Int(b)].members.isEmpty else { return }
        let prev = buckets[Int(b)].prev
        let next = buckets[Int(b)].next
        if prev == -1 { lowest = next } else { buckets[Int(prev)].next = next }
        if next != -1 { buckets[Int(next)].prev = prev }
        buckets[Int(b)].next = freeBucket
        freeBucket = b
    }

    @inlinable
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) {
        var b = lowest
        if b == -1 || buckets[Int(b)].frequency != 1 {
            b = makeBucket(frequency: 1, after: -1)
        }
        links.pushBack(slot, &buckets[Int(b)].members)
        slotBucket[Int(slot)] = b
    }

    @inlinable
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {
        let b = slotBucket[Int(slot)]
        let frequency = buckets[Int(b)].frequency &+ 1
        var target = buckets[Int(b)].next
        if target == -1 || buckets[Int(target)].frequency != frequency {
            target = makeBucket(frequency: frequency, after: b)
        }
        links.unlink(slot, &buckets[Int(b)].members)
        links.pushBack(slot, &buckets[Int(target)].members)
        slotBucket[Int(slot)] = target
        releaseBucketIfEmpty(b)
    }

    @inlinable
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) { didAccess(slot, links: links) }

    @inlinable
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        let b = slotBucket[Int(slot)]
        links.unlink(slot, &buckets[Int(b)].members)
        releaseBucketIfEmpty(b)
    }

    @inlinable
    mutating func removeAll() {
        bucketsUsed = 0
        freeBucket = -1
        lowest = -1
    }

    @inlinable
    @inline(__always)
    mutating func nextVictim(links: _SlotLinks) -> Int32 { firstVictim(links: links) }

    @inlinable
    func firstVictim(links: _SlotLinks) -> Int32 {
        lowest == -1 ? -1 : buckets[Int(lowest)].members.head
    }

    @inlinable
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 {
        let n = links.next(slot)
        if n != -1 { return n }
        let nextBucket = buckets[Int(slotBucket[Int(slot)])].next
        return nextBucket == -1 ? -1 : buckets[Int(nextBucket)].members.head
    }

    /// The use count of the entry in `slot` (for tests and invariant checks).
    @inlinable
    func frequency(of slot: Int32) -> Int { buckets[Int(slotBucket[Int(slot)])].frequency }
}
