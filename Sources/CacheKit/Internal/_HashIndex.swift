/// An open-addressing hash table of slot numbers over the engine's key array.
///
/// Each bucket holds `slot + 1` as a `UInt32` (`0` is empty), so the index costs 4 bytes a bucket
/// and never stores a key twice: a probe compares the key in the slot array. Linear probing with
/// backward-shift deletion keeps it free of tombstones. The load factor stays at or below 3/4.
/// An unowned view: `_CacheCore` owns the memory.
@usableFromInline
struct _HashIndex {
    @usableFromInline var buckets: UnsafeMutablePointer<UInt32>
    /// `bucketCount - 1`; the bucket count is a power of two.
    @usableFromInline var mask: Int

    @inlinable
    init(bucketCount: Int) {
        precondition(bucketCount > 0 && bucketCount & (bucketCount - 1) == 0)
        buckets = _SlotMemory.allocate(UInt32.self, capacity: bucketCount)
        buckets.initialize(repeating: 0, count: bucketCount)
        mask = bucketCount - 1
    }

    @inlinable
    var bucketCount: Int { mask &+ 1 }

    /// The most entries this index holds before it must grow.
    @inlinable
    var maxLoad: Int { bucketCount / 4 * 3 }

    /// The smallest power-of-two bucket count that holds `count` entries.
    @inlinable
    static func bucketCount(for count: Int) -> Int {
        var n = 8
        while n / 4 * 3 < count { n &*= 2 }
        return n
    }

    @inlinable
    func deallocate() { _SlotMemory.deallocate(buckets) }

    /// Finds `key`: its slot, or `-1` and the empty bucket where it would go.
    @inlinable
    func find<Key: Hashable, Value>(
        _ key: Key,
        hash: Int,
        entries: UnsafeMutablePointer<_Entry<Key, Value>>
    ) -> (bucket: Int, slot: Int32) {
        var b = hash & mask
        while true {
            let entry = buckets[b]
            if entry == 0 { return (b, -1) }
            let slot = Int32(truncatingIfNeeded: entry &- 1)
            if entries[Int(slot)].key == key { return (b, slot) }
            b = (b &+ 1) & mask
        }
    }

    /// The first empty bucket for `hash`.
    @inlinable
    func emptyBucket(hash: Int) -> Int {
        var b = hash & mask
        while buckets[b] != 0 { b = (b &+ 1) & mask }
        return b
    }

    /// The bucket that holds `slot`, whose key hashes to `hash`.
    @inlinable
    func bucket(ofSlot slot: Int32, hash: Int) -> Int {
        let entry = UInt32(truncatingIfNeeded: slot) &+ 1
        var b = hash & mask
        while buckets[b] != entry { b = (b &+ 1) & mask }
        return b
    }

    @inlinable
    func insert(slot: Int32, at bucket: Int) {
        buckets[bucket] = UInt32(truncatingIfNeeded: slot) &+ 1
    }

    /// Empties `bucket`, shifting later members of its probe run back so lookups stay correct.
    /// `hashes` holds the (truncated) hash of each slot's key, so no key is hashed again.
    @inlinable
    func remove(at bucket: Int, hashes: UnsafeMutablePointer<UInt32>) {
        var hole = bucket
        var j = bucket
        while true {
            j = (j &+ 1) & mask
            let entry = buckets[j]
            if entry == 0 { break }
            let ideal = Int(hashes[Int(entry &- 1)]) & mask
            // Move the entry back into the hole unless its ideal bucket lies cyclically in (hole, j].
            let stays = hole <= j ? (hole < ideal && ideal <= j) : (hole < ideal || ideal <= j)
            if !stays {
                buckets[hole] = entry
                hole = j
            }
        }
        buckets[hole] = 0
    }

    /// Empties every bucket.
    @inlinable
    func removeAll() {
        buckets.update(repeating: 0, count: bucketCount)
    }
}
