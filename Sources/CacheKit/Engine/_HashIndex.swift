/// An open-addressing hash table of slot numbers over the engine's key array.
///
/// Each bucket is one `UInt32` word (`0` is empty). Its low bits hold `slot + 1`; above them a
/// few bits hold the entry's displacement (how many buckets past its ideal bucket it sits, with
/// the largest value meaning "that many or more"); the bits above those hold the same bits of
/// the key's hash as a tag. So the index costs 4 bytes a bucket and never stores a key twice:
/// - a probe reads a slot's record (to compare keys) only when the tag matches, so a lookup
///   walking past other keys' buckets, or one that misses, touches the bucket array alone;
/// - a deletion (backward shift) learns where each entry of the probe run belongs from its
///   displacement, without its key's hash; only an entry displaced that far or more needs it.
/// How many bits the slots take (`slotMask`) depends on the slot and bucket counts; with 50,000
/// slots the tag has 10 bits (one false match in 1,024), with a million 6. Linear probing with
/// backward-shift deletion keeps the table free of tombstones. The load factor stays at or below
/// 3/4. An unowned view: `_CacheCore` owns the memory.
@usableFromInline
struct _HashIndex {
    @usableFromInline var buckets: UnsafeMutablePointer<UInt32>
    /// `bucketCount - 1`; the bucket count is a power of two.
    @usableFromInline var mask: Int
    /// The bits of a bucket word that hold `slot + 1`.
    @usableFromInline var slotMask: UInt32
    /// The bits that hold the tag: those above the slot and displacement bits.
    @usableFromInline var tagMask: UInt32
    /// Where the displacement starts (the slot bits' width), and its largest value, which
    /// stands for itself and every larger displacement (`0` where the slots leave no bits).
    @usableFromInline var displacementShift: UInt32
    @usableFromInline var displacementLimit: UInt32

    /// Bits for the displacement: 15 buckets or fewer is almost every entry at a load of 3/4,
    /// and each bit more would come out of the tag.
    @inlinable
    static var displacementBits: Int { 4 }

    /// An empty index of `bucketCount` buckets whose words can name `slotCapacity` slots.
    @inlinable
    init(bucketCount: Int, slotCapacity: Int) {
        precondition(bucketCount > 0 && bucketCount & (bucketCount - 1) == 0)
        buckets = _SlotMemory.allocate(UInt32.self, capacity: bucketCount)
        buckets.initialize(repeating: 0, count: bucketCount)
        mask = bucketCount - 1
        slotMask = Self.slotMask(bucketCount: bucketCount, slotCapacity: slotCapacity)
        let slotBits = slotMask.nonzeroBitCount
        let bits = Swift.min(Self.displacementBits, UInt32.bitWidth - slotBits)
        displacementShift = bits > 0 ? UInt32(slotBits) : 0
        displacementLimit = bits > 0 ? (1 << UInt32(bits)) - 1 : 0
        tagMask = ~(slotMask | displacementLimit &<< displacementShift)
    }

    /// Enough low bits for `slot + 1` of every slot below `slotCapacity` and below twice
    /// `bucketCount`: slot storage doubles only when every slot holds an entry, at most 3/4 of
    /// the buckets, so it never outgrows the words before the index grows (`growSlots` checks).
    @inlinable
    static func slotMask(bucketCount: Int, slotCapacity: Int) -> UInt32 {
        let largest = UInt64(Swift.max(bucketCount, slotCapacity))
        let bits = UInt64.bitWidth - largest.leadingZeroBitCount
        return bits >= 32 ? .max : UInt32((1 << bits) - 1)
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

    /// The bucket word for `slot`, with a key of hash `hash`, in `bucket`.
    @inlinable
    @inline(__always)
    func word(slot: Int32, hash: Int, bucket: Int) -> UInt32 {
        let displacement = Swift.min(UInt32(truncatingIfNeeded: (bucket &- hash) & mask), displacementLimit)
        return UInt32(truncatingIfNeeded: hash) & tagMask | displacement &<< displacementShift
            | UInt32(truncatingIfNeeded: slot) &+ 1
    }

    /// The displacement `word` records (`displacementLimit`: that many or more).
    @inlinable
    @inline(__always)
    func displacement(of word: UInt32) -> UInt32 { word &>> displacementShift & displacementLimit }

    /// The slot a non-empty bucket word names.
    @inlinable
    @inline(__always)
    func slot(of word: UInt32) -> Int32 { Int32(truncatingIfNeeded: word & slotMask) &- 1 }

    /// The slot in `bucket`, or -1 when it is empty.
    @inlinable
    func slot(at bucket: Int) -> Int32 {
        let word = buckets[bucket]
        return word == 0 ? -1 : slot(of: word)
    }

    /// Finds `key`: its slot, or `-1` and the empty bucket where it would go.
    @inlinable
    @inline(__always)
    func find<Key: Hashable, Value>(
        _ key: Key,
        hash: Int,
        entries: UnsafeMutablePointer<_Entry<Key, Value>>
    ) -> (bucket: Int, slot: Int32) {
        let tagMask = self.tagMask
        let tag = UInt32(truncatingIfNeeded: hash) & tagMask
        var b = hash & mask
        while true {
            let word = buckets[b]
            if word == 0 { return (b, -1) }
            if word & tagMask == tag {
                let slot = slot(of: word)
                if entries[Int(slot)].key == key { return (b, slot) }
            }
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
        let named = UInt32(truncatingIfNeeded: slot) &+ 1
        var b = hash & mask
        while buckets[b] & slotMask != named { b = (b &+ 1) & mask }
        return b
    }

    /// Stores `slot`, whose key hashes to `hash`, in the empty `bucket`.
    @inlinable
    func insert(slot: Int32, hash: Int, at bucket: Int) {
        buckets[bucket] = word(slot: slot, hash: hash, bucket: bucket)
    }

    /// Empties `bucket`, shifting later members of its probe run back so lookups stay correct.
    /// Each member's ideal bucket comes from its displacement; `hash(slot)` is asked only for a
    /// member displaced `displacementLimit` buckets or more.
    @inlinable
    func remove(at bucket: Int, hash: (Int32) -> Int) {
        var hole = bucket
        var j = bucket
        while true {
            j = (j &+ 1) & mask
            let entry = buckets[j]
            if entry == 0 { break }
            let displacement = displacement(of: entry)
            let ideal =
                displacement < displacementLimit
                ? (j &- Int(displacement)) & mask : hash(slot(of: entry)) & mask
            // Move the entry back into the hole unless its ideal bucket lies cyclically in (hole, j].
            let stays = hole <= j ? (hole < ideal && ideal <= j) : (hole < ideal || ideal <= j)
            if !stays {
                // Nearer its ideal bucket now: the same tag and slot, a smaller displacement.
                let moved = Swift.min(UInt32(truncatingIfNeeded: (hole &- ideal) & mask), displacementLimit)
                buckets[hole] = entry & ~(displacementLimit &<< displacementShift) | moved &<< displacementShift
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
